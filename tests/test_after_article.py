"""The stage after the article (lineage.teach.after_article): Gated DeltaNet-2 on the story beside KDA, and its claim.

The claim is evidence only if it can fail and if swapping the mechanism moves its number: KDA on the same story is
the swap, a half-open erase gate the failure."""

from __future__ import annotations

import numpy as np
import pytest

from lineage.mechanisms import colours
from lineage.plots import palette
from lineage.teach import after_article as aa
from lineage.teach.story_text import parse_story, story_link


def test_a_full_erase_leaves_nothing_of_the_old_value_and_kda_at_the_same_write_keeps_half():
    run = aa.run_on_story(32, 8, 8, erase=1.0, write=0.5)
    claim = aa.erase_write_claim(run)
    assert claim.holds and claim.testable
    assert claim.value < 1e-6 and claim.shown == "0%"
    assert claim.compare == "KDA at β = 0.5 on the same story: 50% of tea left"  # the swap moves the number
    assert "0.50·coffee" in claim.verdict


def test_a_half_open_erase_fails_the_claim_and_says_why():
    claim = aa.erase_write_claim(aa.run_on_story(32, 8, 8, erase=0.5, write=0.5))
    assert not claim.holds
    assert claim.shown == "50%"
    assert "1 − b = 0.5" in claim.verdict


def test_erase_without_writing_empties_the_key_which_kda_cannot():
    run = aa.run_on_story(32, 8, 8, erase=1.0, write=0.0)
    claim = aa.erase_write_claim(run)
    assert claim.holds and "wrote nothing of coffee" in claim.verdict
    end = run.story.T - 1
    assert np.abs(aa.answer(run.states, run.k, run.story, "Dee", end)).max() < 1e-6
    assert "100% of tea left" in claim.compare  # KDA at β = 0 never touches Dee


def test_open_gates_at_the_overwrite_are_kda_at_beta_one():
    run = aa.run_on_story(32, 8, 8, erase=1.0, write=1.0)
    assert np.abs(run.states - run.kda_states).max() < 1e-6
    assert run.err_chunk < 1e-5  # fp32: the chunked form against the loop on the story


def test_the_lines_follow_the_old_and_the_new_value_through_the_overwrite():
    run = aa.run_on_story(32, 8, 8, erase=1.0, write=0.5)
    lines = aa.old_and_new_over_time(run)
    assert set(lines) == {
        "Gated DeltaNet-2: tea",
        "Gated DeltaNet-2: coffee",
        "KDA (β = 0.5): tea",
        "KDA (β = 0.5): coffee",
    }
    t = run.story.overwrite_step
    assert lines["Gated DeltaNet-2: tea"][t - 1] == pytest.approx(1.0, abs=1e-5)  # tea held before the overwrite
    assert lines["Gated DeltaNet-2: tea"][t] == pytest.approx(0.0, abs=1e-5)
    assert lines["KDA (β = 0.5): tea"][t] == pytest.approx(0.5, abs=1e-5)
    assert all(y.shape == (run.story.T,) for y in lines.values())


def test_a_story_without_an_overwrite_cannot_test_the_claim():
    parsed, problems = parse_story("*name = Kim\nAda = Paris\n|\nDee = tea", max_tokens=50)
    assert not problems
    run = aa.run_on_story(32, 8, 8, erase=1.0, write=0.5, written=story_link(parsed))
    claim = aa.erase_write_claim(run)
    assert not claim.testable and "second value for one key" in claim.missing
    assert aa.old_and_new_over_time(run) == {}


def test_an_old_value_cleared_before_the_overwrite_leaves_nothing_to_test():
    """Ada = Paris, then the switch wipes topic A, then Ada = Oslo: both memories have lost Paris before the
    overwrite, so the story cannot tell erase from write apart, and the claim says so instead of holding."""
    parsed, _ = parse_story("*name = Kim\nAda = Paris\nBo = Rome\n|\nAda = Oslo\nDee = tea", max_tokens=50)
    claim = aa.erase_write_claim(aa.run_on_story(32, 8, 8, erase=1.0, write=0.5, written=story_link(parsed)))
    assert not claim.testable and "Nothing of Ada → Paris is left" in claim.missing


@pytest.mark.parametrize("name, value", [("erase", 1.5), ("write", -0.1), ("erase", True)])
def test_gates_outside_the_unit_interval_are_named(name, value):
    kw = {"erase": 1.0, "write": 0.5, name: value}
    with pytest.raises(ValueError, match=f"{name} must be a number in \\[0, 1\\]"):
        aa.run_on_story(32, 8, 8, **kw)


@pytest.mark.parametrize("deficiency", (None, *palette.CVD_DEFICIENCIES))
def test_its_colour_stays_apart_from_every_mechanism_colour(deficiency):
    distances = palette.cvd_distances({**colours(), "gated_deltanet2": aa.COLOUR}, deficiency)
    nearest = min(d for pair, d in distances.items() if "gated_deltanet2" in pair)
    assert nearest >= palette.MIN_CVD_DELTA_E, f"{nearest:.1f} seen as {deficiency or 'normal'}"


def test_each_memory_is_drawn_in_its_mechanisms_colour_and_the_old_value_faded():
    from lineage import plots
    from lineage.mechanisms import mechanism
    from lineage.plots.gated import FADED

    run = aa.run_on_story(32, 8, 8, erase=1.0, write=0.5)
    who = aa.old_and_new_lines(run)
    assert who == {
        "Gated DeltaNet-2: tea": ("gated_deltanet2", True),
        "Gated DeltaNet-2: coffee": ("gated_deltanet2", False),
        "KDA (β = 0.5): tea": ("kda", True),
        "KDA (β = 0.5): coffee": ("kda", False),
    }
    fig = plots.over_time(aa.old_and_new_over_time(run), title="t", y_title="y", styles=plots.mechanism_styles(who))
    assert len(fig.data) == len(who)
    for trace in fig.data:
        name = next(n for n in who if trace.name == n or trace.name.startswith(n + " ("))  # "(same line as …)" added
        key, old = who[name]
        assert trace.line.color == mechanism(key).colour and trace.marker.color == mechanism(key).colour
        assert trace.opacity == (FADED if old else 1.0)
    assert mechanism("gated_deltanet2").colour != mechanism("kda").colour
    assert aa.old_and_new_lines(aa.run_on_story(32, 8, 8, erase=1.0, write=0.5, written="")) == who
