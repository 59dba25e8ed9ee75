"""One visual vocabulary and one number per quantity, checked without the app: the checks of
lineage.plots.vocabulary catch what they are for, the story's figures pass them, the additive stages' story charts
show their facts, "held" reports a blend as a blend, and the ledger's story rows are the pages' default runs."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from lineage import mechanisms
from lineage.plots import palette
from lineage.plots.core import COLORSCALES, DIVERGING, SEQUENTIAL
from lineage.plots.story import attention_story, story_memory
from lineage.plots.story_chart import fact_cells
from lineage.plots.vocabulary import figure_problems, name_coinciding, spread_coinciding
from lineage.stages import all_stages
from lineage.teach import claims, ledger
from lineage.teach.equations import equation
from lineage.teach.story import DEFAULT_K, DEFAULT_T, DEFAULT_V, FILLER, OVERWRITE, OVERWRITTEN_VALUE, default_story

STAGES = ("linear_attention", "deltanet", "mamba2", "gla", "gated_deltanet", "kda")


@pytest.fixture(scope="module")
def story():
    return default_story()


@pytest.fixture(scope="module")
def traces(story):
    return {m: claims.trace_story(m, story) for m in STAGES}


def _line(name, y, colour, x=None, **kw):
    x = list(range(len(y))) if x is None else list(x)
    return dict(type="scatter", mode="lines", x=x, y=list(y), name=name, line=dict(color=colour), **kw)


@pytest.mark.parametrize("colour", [palette.GROWS, palette.FIXED, *{c for c, _, _ in palette.SERIES_STYLES}])
def test_colours_that_are_not_mechanisms_keep_off_the_mechanisms(colour):
    distances = palette.cvd_distances({**mechanisms.colours(), "other": colour})
    nearest = min(d for pair, d in distances.items() if "other" in pair)
    assert nearest >= palette.MIN_OTHER_DELTA_E, (colour, nearest)


def test_grows_and_fixed_stay_apart_for_colour_blind_viewers():
    for kind in (None, *palette.CVD_DEFICIENCIES):
        d = palette.cvd_distances({"grows": palette.GROWS, "fixed": palette.FIXED}, kind)[("grows", "fixed")]
        assert d >= palette.MIN_CVD_DELTA_E, (kind, d)


def test_the_colour_check_fails_a_fact_in_a_mechanism_colour_and_passes_the_mechanism():
    kda = mechanisms.mechanism("kda").colour
    assert figure_problems(dict(data=[_line("name → Kim", [0, 1, 1], kda)]))
    assert not figure_problems(dict(data=[_line("KDA", [0, 1, 1], kda)]))
    assert not figure_problems(dict(data=[_line("name → Kim", [0, 1, 1], palette.SERIES_STYLES[0][0])]))


def test_the_scale_check_fails_a_state_on_another_scale():
    z = [[0.0, 1.0], [1.0, 0.0]]
    state = dict(type="heatmap", z=z, name="S_t", zmid=0.0, colorscale=COLORSCALES[DIVERGING])
    assert not figure_problems(dict(data=[state]))
    assert figure_problems(dict(data=[state | dict(colorscale=COLORSCALES[SEQUENTIAL])]))
    assert figure_problems(dict(data=[state | dict(zmid=None, zmin=0.0, zmax=1.0)]))  # not centred at 0
    frames = [dict(name="0", data=[dict(type="heatmap", colorscale=SEQUENTIAL)], traces=[0])]
    assert figure_problems(dict(data=[state], frames=frames))


def test_the_hidden_line_check_fails_coinciding_lines_until_they_say_so():
    a, b = np.array([0.0, 1.0, 1.0, 1.0, 1.0]), np.array([0.0, 1.0, 1.0, 1.0, 0.5])
    grey = palette.SERIES_STYLES[0][0]
    data = [_line("first", a, grey), _line("second", b, grey)]
    assert figure_problems(dict(data=data))
    assert not figure_problems(dict(data=name_coinciding(data)))
    drawn, notes = spread_coinciding({"first": a, "second": b}, offset=0.04)
    assert not np.allclose(drawn["first"], drawn["second"]) and "same line as second" in notes["first"]
    assert not figure_problems(dict(data=[_line("other", [0, 2, 3, 4, 5], grey), data[0]]))  # apart: fine


def test_lines_that_share_most_points_but_part_say_where_they_part():
    """Gated DeltaNet-2's reads: the same as KDA's for 25 of 32 steps, apart on the last 7, where the page makes its
    point; the names say "except at 25–31", and a line the same at every point just "same line as"."""
    x = np.arange(32)
    kda = np.r_[np.zeros(17), np.ones(8), np.full(7, 0.5)]
    gdn2 = np.r_[np.zeros(17), np.ones(8), np.zeros(7)]
    grey = palette.SERIES_STYLES[0][0]
    named = name_coinciding(
        [_line("kda", kda, grey, x=x), _line("gdn2", gdn2, grey, x=x), _line("twin", kda, grey, x=x)]
    )
    assert [t["name"] for t in named] == [
        "kda (same line as gdn2 except at 25–31, twin)",
        "gdn2 (same line as kda except at 25–31, twin except at 25–31)",
        "twin (same line as kda, gdn2 except at 25–31)",
    ]
    assert not figure_problems(dict(data=named))
    _, notes = spread_coinciding({"kda": kda, "gdn2": gdn2}, offset=0.04)
    assert notes["kda"] == "same line as gdn2 except at 25–31; drawn apart"
    labels = np.array([f"t{i}" for i in range(32)])  # an axis of words: the points are counted
    assert name_coinciding([_line("a", kda, grey, x=labels), _line("b", gdn2, grey, x=labels)])[0]["name"] == (
        "a (same line as b except at 7 of 32 points)"
    )


def _story_figure(run, story, columns=None):
    columns = columns or story.column_labels
    rows, cols = fact_cells(story, columns)
    return story_memory(
        run.states,
        row_labels=story.row_labels,
        column_labels=columns,
        step_labels=story.labels,
        sentences=claims.step_sentences(run, story),
        held=claims.held_over_time(run, story),
        scale_rows=rows,
        scale_cols=cols,
    )


@pytest.mark.parametrize("stage", STAGES)
def test_every_story_chart_keeps_the_vocabulary(stage, story, traces):
    columns = story.column_labels + (["z"] if stage == "linear_attention" else [])
    problems = figure_problems(_story_figure(traces[stage], story, columns))
    assert not problems, problems


def test_the_softmax_story_charts_keep_the_vocabulary(story):
    run = claims.run_softmax_story(story)
    held = np.asarray(run.trace.cache_bytes, dtype=float)
    fig = attention_story(
        run.trace.attn,
        step_labels=story.labels,
        sentences=claims.softmax_step_sentences(run, story, "kv_cache"),
        series={"bytes held": held, "bytes read so far": held.cumsum()},
        series_title="cache",
        y_title="bytes",
        colours={"bytes held": palette.MEMORY_COLOURS["cache"]},
    )
    assert not figure_problems(fig)
    assert fig.data[1].line.color == palette.GROWS


@pytest.mark.parametrize("stage", ["linear_attention", "mamba2", "gla"])
def test_additive_story_charts_take_their_colour_range_from_the_facts(stage, story, traces):
    """The filler row and the normaliser grow far past any fact; the fact cells still span the colour range, so the
    overwritten fact's two values show as two coloured cells, not as the dark of everything else."""
    run = traces[stage]
    columns = story.column_labels + (["z"] if stage == "linear_attention" else [])
    heat = _story_figure(run, story, columns).data[0]
    last = run.states[-1]
    dee = story.row_labels.index(OVERWRITE.key)
    old, new = columns.index(OVERWRITTEN_VALUE), columns.index(OVERWRITE.expected)
    assert np.abs(last).max() > heat.zmax  # the filler (and z) go past the range: clipped, not setting it
    for col in (old, new):
        assert abs(last[dee, col]) >= 0.25 * heat.zmax, (stage, columns[col], last[dee, col], heat.zmax)


def test_linear_attention_story_shows_the_blend_with_relu_and_says_which_runs(story, traces):
    assert claims.Knobs().feature_map == claims.STORY_FEATURE_MAP == "relu"
    mix = claims.blend(claims.run_answer(traces["linear_attention"], story), story)
    assert mix[OVERWRITTEN_VALUE] == pytest.approx(0.5, abs=0.05) and mix[OVERWRITE.expected] == pytest.approx(0.5, 0.1)
    claim = claims.linear_claim(traces["linear_attention"], story, traces["deltanet"])
    assert "φ = relu" in claim.verdict
    elu = claims.trace_story("linear_attention", story, claims.Knobs(feature_map="elu1"))
    assert "elu + 1" in claims.linear_claim(elu, story, traces["deltanet"], "elu1").verdict


def test_held_reports_a_blend_as_a_blend(story, traces):
    """Mamba-2 and GLA read Dee back as tea + coffee: that is not coffee held. DeltaNet's edit is."""
    for stage in ("mamba2", "gla", "linear_attention"):
        answer = claims.run_answer(traces[stage], story)
        assert claims.is_blend(answer, story, OVERWRITE.expected), stage
        assert claims.held(answer, story, OVERWRITE.expected) < 0.05, stage
    answer = claims.run_answer(traces["deltanet"], story)
    assert not claims.is_blend(answer, story, OVERWRITE.expected)
    assert claims.held(answer, story, OVERWRITE.expected) == pytest.approx(1.0, abs=1e-3)
    sentences = claims.step_sentences(traces["mamba2"], story)
    assert "(blend)" in sentences[-1] and "(filler, no fact)" in sentences[-1]


def test_gated_deltanet_states_its_own_claim_with_both_numbers(story, traces):
    gdn = claims.forget_claim("gated_deltanet", traces["gated_deltanet"], story, traces["deltanet"])
    mamba = claims.forget_claim("mamba2", traces["mamba2"], story, traces["linear_attention"])
    assert gdn.claim != mamba.claim and "edits" in gdn.claim and gdn.holds
    a_held, err = gdn.shown.split(" · ")
    assert a_held == f"{claims.topic_a_held(traces['gated_deltanet'], story):.0%}"
    assert err == f"{claims.overwrite_error(traces['gated_deltanet'], story):.3f}"


def test_a_gate_that_fades_everything_is_not_blamed_on_the_switch(story, traces):
    """At α = 0.9 on every token and 0.5 at the switch, topic A has faded before the switch: the verdict says so."""
    run = claims.trace_story("gated_deltanet", story, claims.Knobs(alpha_keep=0.9, alpha_switch=0.5))
    c = claims.forget_claim("gated_deltanet", run, story, traces["deltanet"])
    assert not c.holds and "already faded" in c.verdict and "not small enough" not in c.verdict


def test_the_ledger_story_rows_are_the_pages_default_runs(story, traces):
    """One number per quantity: the pages' size sliders start at the default story, and the ledger's story rows
    show the numbers the pages open with, in the pages' formats."""
    from ui import controls

    defaults = inspect.signature(controls.size_controls).parameters
    assert (defaults["T"].default, defaults["K"].default, defaults["V"].default) == (DEFAULT_T, DEFAULT_K, DEFAULT_V)
    rows = {r.number: r for r in ledger.ledger()}
    la, dn = (claims.overwrite_error(traces[k], story) for k in ("linear_attention", "deltanet"))
    assert f"{la:.2f} → {dn:.3f}" in rows["Stage 3 — DeltaNet"].app
    sm = claims.run_softmax_story(story)
    assert f"{sm.rows_recompute:,} → {sm.rows_cached:,}" in rows["Stage 1 — GPT-2 + KV cache"].app
    assert claims.gpt2_claim(sm, story).shown == f"{sm.rows_recompute:,} vs {sm.rows_cached:,}"
    K, V1 = traces["linear_attention"].states[0].shape
    assert f"{K} × {V1} fp32 = {K * V1 * 4:,} B" in rows["Stage 2 — Linear attention"].app
    for name in ("Stage 1 — GPT-2 + KV cache", "Stage 2 — Linear attention", "Stage 3 — DeltaNet"):
        assert f"T = {story.T}, K = {story.K}, V = {story.V}" in rows[name].why, name


def test_the_two_hybrid_savings_carry_their_words():
    s = ledger.hybrid_saving("kimi-linear-48b", ledger.ONE_M)
    assert s.cache != s.total and ledger.SAVING_CACHE in s.text() and ledger.SAVING_TOTAL in s.text()
    assert s.text().startswith(f"−{s.cache:.1%} {ledger.SAVING_CACHE}")
    assert ledger.RATIO_NOMINAL != ledger.RATIO_CONFIG


def _marked_spans(text: str) -> list[str]:
    """The inside of every :orange[…] span, closed at its matching bracket (brackets nest, as in Markdown)."""
    spans = []
    for start in (m.end() for m in re.finditer(re.escape(":orange["), text)):
        depth, i = 1, start
        while depth and i < len(text):
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            i += 1
        spans.append(text[start : i - 1])
    return spans


@pytest.mark.parametrize("stage", [s.key for s in all_stages()])
def test_equations_close_every_marked_span(stage):
    """A lone `]` inside a marked span ends it early and leaves raw `**` on the page (GLA's "(0, 1]ᴷ" did)."""
    spans = _marked_spans(equation(stage).text)
    assert spans and all(s.startswith("**") and s.endswith("**") and len(s) > 4 for s in spans), spans


def test_the_span_check_catches_the_old_gla_text():
    assert not all(s.endswith("**") for s in _marked_spans("Sₜ = kₜ vₜᵀ, with :orange[**αₜ in (0, 1]ᴷ**]"))


def test_the_story_key_names_every_mark_on_the_chart(story):
    line = story.key_line(normaliser=True)
    for mark in ("‖", FILLER, "z", "ch i"):
        assert mark in line, mark
    assert "z:" in line and "z:" not in story.key_line()
    assert "blue" not in story.column_labels and "red" not in story.column_labels  # values are not colour names


def test_answers_that_read_back_alike_are_drawn_apart_and_labelled_at_their_end(story, traces):
    """DeltaNet holds all four answers at 100%: four lines on one. They are drawn apart, and one end label names
    every key they stand for; the hover keeps the true value."""
    fig = _story_figure(traces["deltanet"], story)
    lines = [t for t in fig.data if t.type == "scatter" and t.customdata is not None]
    assert len(lines) == 4
    ends = [float(t.y[-1]) for t in lines]
    assert len(set(ends)) == 4 and max(ends) - min(ends) < 0.2  # apart, but only just
    assert all(float(t.customdata[-1]) == pytest.approx(1.0, abs=1e-6) for t in lines)
    labels = [x for t in lines for x in t.text if x]
    assert labels == [", ".join(q.key for q in story.queries)], labels
    # the label sits outside the band the four lines are drawn in, not on a line the others strike through
    (labelled,) = [t for t in lines if any(t.text)]
    side = "top" if labelled.textposition.startswith("top") else "bottom"
    assert float(labelled.y[-1]) == (max(ends) if side == "top" else min(ends)), (side, float(labelled.y[-1]), ends)
