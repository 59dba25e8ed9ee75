"""One stage, one unit (lineage.teach.units): a stage's page, equation, claim and prose are found in one place, and
the navigation and the tour are built from the table of stages."""

from __future__ import annotations

import dataclasses

import pytest

from lineage import mechanisms, stages
from lineage.mechanisms import linear_mechanisms, mechanism
from lineage.teach import claims, units
from lineage.teach.story import make_story
from tests.test_mechanisms import TOY
from ui import nav

LINEAR = [m.key for m in linear_mechanisms() if not m.after_article]  # the article's: claims on the story's knobs
AFTER = [m.key for m in linear_mechanisms() if m.after_article]
STORY = make_story(K=8, V=8)


@pytest.mark.parametrize("stage_key", [s.key for s in stages.all_stages()])
def test_every_stage_has_one_unit_with_its_page_and_equation(stage_key):
    u = units.unit(stage_key)
    assert u.page == f"app_pages/{stage_key}.py" and nav.has_page(stage_key)
    assert u.equation.text  # the equation the page shows beside its code


@pytest.mark.parametrize("stage_key", ["gpt2", "kv_cache"])
def test_a_softmax_stage_unit_holds_its_prose_and_the_decode_code_it_shows(stage_key):
    u = units.unit(stage_key)
    assert len(u.prose.split()) > 50 and u.code and u.code_title == units.SOFTMAX_CODE_TITLE
    assert all(obj.__module__.startswith("lineage.ops.") for obj in u.code), "the code shown is the ops' own"
    assert u.claim is None


@pytest.mark.parametrize("stage_key", LINEAR)
def test_a_linear_stage_unit_holds_its_prose_code_and_claim(stage_key):
    u = units.unit(stage_key)
    assert len(u.prose.split()) > 50, "the page's narrative lives in the unit"
    assert u.code[0] is mechanism(stage_key).op, "the page shows its mechanism's own op"
    assert u.claim is not None and u.claim.against in {s.key for s in stages.all_stages()}


@pytest.mark.parametrize("stage_key", LINEAR)
def test_a_stage_claim_moves_when_the_run_it_reads_is_another_mechanism(stage_key):
    run = claims.trace_story(stage_key, STORY)
    mine = units.stage_claim(stage_key, run, STORY)
    assert mine.stage == stage_key and mine.testable
    against = units.unit(stage_key).claim.against
    swapped = units.stage_claim(stage_key, claims.trace_story(against, STORY), STORY)
    if against != stage_key:  # the same claim read from the run it answers gives another number
        assert swapped.value != pytest.approx(mine.value, abs=1e-6)


@pytest.mark.parametrize("stage_key", AFTER)
def test_a_stage_after_the_article_holds_its_prose_and_code_and_its_page_its_claim(stage_key):
    """Gated DeltaNet-2's claim needs an erase and a write gate, which the story's knobs (one β) do not set: its unit
    holds the prose and code its page shows, its page proves the claim (lineage.teach.after_article)."""
    u = units.unit(stage_key)
    assert len(u.prose.split()) > 50 and u.code[0] is mechanism(stage_key).op and u.claim is None
    assert stages.stage(stage_key).after_article and "after the article" in stages.stage(stage_key).heading
    with pytest.raises(ValueError, match=f"'{stage_key}' has no claim recipe"):
        units.stage_claim(stage_key, claims.trace_story(stage_key, STORY), STORY)


def test_a_stage_without_a_recipe_says_its_page_computes_its_claim():
    with pytest.raises(ValueError, match="'gpt2' has no claim recipe"):
        units.stage_claim("gpt2", None, STORY)
    with pytest.raises(ValueError, match="stage must be one of"):
        units.unit("nonesuch")


def test_the_navigation_lists_every_stage_with_a_page_in_lineage_order_numbered_from_it():
    entries = [p for p in nav.PAGES if p.stage]
    assert [p.stage for p in entries] == [s.key for s in stages.all_stages() if nav.has_page(s.key)]
    assert [p.icon for p in entries] == [nav.stage_icon(i) for i in range(1, len(entries) + 1)]
    assert [p.icon for p in entries[:9]] == [f":material/counter_{i}:" for i in range(1, 10)]
    assert [p.title for p in entries] == [stages.stage(p.stage).heading for p in entries]
    assert entries[-1].title == "Gated DeltaNet-2 (after the article)", "after the hybrid, and marked"
    assert stages.stage("kda").label == mechanism("kda").label == "KDA"
    assert [p.url_path for p in nav.tour()][1 : len(entries) + 1] == [p.stage for p in entries]


def test_a_stage_past_the_ninth_gets_an_icon_without_a_number():
    assert nav.stage_icon(9) == ":material/counter_9:"
    assert nav.stage_icon(10) == nav.UNNUMBERED_ICON


def test_a_new_stage_joins_the_navigation_when_its_page_exists(tmp_path, monkeypatch):
    with mechanisms.registered(TOY):
        assert TOY.key not in [p.stage for p in nav.stage_pages()], "no page yet: home lists it, the nav does not"
        monkeypatch.setattr(nav, "APP_ROOT", tmp_path)
        for s in stages.all_stages():
            (tmp_path / units.unit(s.key).page).parent.mkdir(exist_ok=True)
            (tmp_path / units.unit(s.key).page).touch()
        entries = nav.stage_pages()
        assert [p.stage for p in entries][-3:] == [TOY.key, "hybrid", "gated_deltanet2"]
        assert entries[-1].icon == nav.UNNUMBERED_ICON, "the eleventh stage page: past the numbered icons"
        assert dataclasses.astuple(entries[-3])[:3] == ("The lineage", f"app_pages/{TOY.key}.py", TOY.title)
