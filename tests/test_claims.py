"""The story and each stage's claim on it: the claim number is computed from the run and flips when the mechanism
is swapped (a mutation test per stage); the ledger's rows are computed from their inputs and quoted rows cite."""

from __future__ import annotations

import numpy as np
import pytest

from lineage.plots.story import attention_story, story_memory
from lineage.teach import claims
from lineage.teach.story import KEYS, MIN_T, QUERIES, make_story, token_vectors

DEFAULT = claims.Knobs()  # β = 1, gates open on ordinary tokens, closed (α = 0) at the switch


@pytest.fixture(scope="module")
def story():
    return make_story(32, 8, 8)  # the stage pages' defaults: T = 32, K = V = 8


@pytest.fixture(scope="module")
def traces(story):
    keys = ("linear_attention", "deltanet", "mamba2", "gla", "gated_deltanet", "kda")
    return {m: claims.trace_story(m, story, DEFAULT) for m in keys}


def test_story_is_data_with_expected_answers(story):
    assert story.T == 32 and story.labels[0] == "name→Kim"
    assert story.labels[story.switch_step] == "‖" and story.switch_step < story.overwrite_step
    for q in QUERIES:  # every expected answer is the last value written for its key
        last = [f.value for f in story.facts if f.key == q.key][-1]
        assert q.expected == last
    assert story.row_labels[: len(KEYS)] == list(KEYS) and story.keys_fit


def test_story_errors_name_the_problem():
    with pytest.raises(ValueError, match=f"T ≥ {MIN_T}"):
        make_story(MIN_T - 1)
    with pytest.raises(ValueError, match="alpha_switch"):
        make_story().gates("scalar", 1.0, 1.5)


def test_over_capacity_keys_overlap_and_rows_lose_names():
    s = make_story(16, 4, 8)
    assert not s.keys_fit and s.row_labels == ["ch 0", "ch 1", "ch 2", "ch 3"]
    gram = s.key_emb @ s.key_emb.T
    assert np.allclose(np.diag(gram), 1.0) and np.abs(gram - np.eye(len(KEYS))).max() > 0.1


def test_deltanet_overwrites_where_linear_attention_blends(story, traces):
    # the mutation: the same claim function on the same story, mechanism swapped
    assert claims.overwrite_error(traces["deltanet"], story) < 1e-3
    assert claims.overwrite_error(traces["linear_attention"], story) > 0.3
    assert claims.overwrite_error(traces["gla"], story) > 0.3  # additive with per-channel gates: still a blend


def test_deltanet_claim_fails_at_small_beta_and_says_why(story):
    weak = claims.trace_story("deltanet", story, claims.Knobs(beta=0.5))
    la = claims.trace_story("linear_attention", story)
    c = claims.deltanet_claim(weak, story, la, 0.5)
    assert not c.holds and "β = 0.5" in c.verdict and c.value > 1e-3


def test_gated_deltanet_forgets_topic_a_and_deltanet_does_not(story, traces):
    for gated in ("gated_deltanet", "mamba2"):
        assert claims.topic_a_held(traces[gated], story, after_switch=False) > 0.95
        assert claims.topic_a_held(traces[gated], story) < 0.05
    assert claims.topic_a_held(traces["deltanet"], story) > 0.95
    c = claims.forget_claim("gated_deltanet", traces["gated_deltanet"], story, traces["deltanet"])
    assert c.holds and c.value < 0.05
    open_gate = claims.trace_story("gated_deltanet", story, claims.Knobs(alpha_switch=1.0))
    assert not claims.forget_claim("gated_deltanet", open_gate, story, traces["deltanet"]).holds


def test_per_channel_gates_keep_the_long_fact_and_one_gate_does_not(story, traces):
    assert claims.long_fact_held(traces["kda"], story) > 0.95
    assert claims.long_fact_held(traces["gla"], story) > 0.95
    assert claims.long_fact_held(traces["gated_deltanet"], story) < 0.05
    assert claims.long_fact_held(traces["mamba2"], story) < 0.05
    assert claims.channel_claim("kda", traces["kda"], story, traces["gated_deltanet"]).holds
    assert not claims.channel_claim("kda", traces["gated_deltanet"], story, traces["gated_deltanet"]).holds


def test_hybrid_softmax_finds_the_needle_kda_blurs():
    s = make_story(32, claims.HYBRID_STATE_K, 8)
    kda = claims.trace_story("kda", s, claims.Knobs(alpha_switch=1.0))
    needle = claims.hybrid_needle(s, kda)
    assert needle["softmax"] < 0.05 < 0.3 < needle["kda"]
    roomy = make_story(32, 8, 8)  # with room for every key the state finds it too: the claim is about capacity
    assert claims.hybrid_needle(roomy, claims.trace_story("kda", roomy, claims.Knobs(alpha_switch=1.0)))["kda"] < 1e-3


def test_softmax_story_rows_and_cache_growth():
    s = make_story(20)
    run = claims.run_softmax_story(s, n_heads=2, head_dim=8)
    c = claims.gpt2_claim(run, s)
    assert run.rows_recompute == 20 * 21 // 2 and run.rows_cached == 20 and c.holds
    assert claims.growth(run.trace.cache_bytes) == pytest.approx(20)
    la = claims.trace_story("linear_attention", s)
    assert claims.growth([la.states[t].size for t in range(s.T)]) == 1.0  # a fixed state does not grow
    assert token_vectors(s, 16).shape == (20, 16)


def test_full_run_matches_trace(story):
    run = claims.run_story("kda", story, DEFAULT)
    assert run.err_chunk < 1e-5 and run.err_parallel < 1e-5
    assert claims.long_fact_held(run, story) == pytest.approx(
        claims.long_fact_held(claims.trace_story("kda", story), story), abs=1e-6
    )


def test_story_figures_put_every_step_dependent_thing_in_the_frames(story, traces):
    fig = story_memory(
        traces["deltanet"].states,
        row_labels=story.row_labels,
        column_labels=story.column_labels,
        step_labels=story.labels,
        sentences=[f"Step {t}" for t in range(story.T)],
        held=claims.held_over_time(traces["deltanet"], story),
        start=5,
    )
    marker = next(s for s in fig.layout.shapes if s.name == "step_marker")
    assert (marker.x0, marker.x1) == (5, 5) and fig.layout.sliders[0].active == 5
    for frame in fig.frames:
        t = int(frame.name)
        assert [(s.x0, s.x1) for s in frame.layout.shapes if s.name == "step_marker"] == [(t, t)]
        assert frame.traces == (0,)  # heatmap only: a line trace in a frame would blank the heatmap while it plays
        assert any(a.text == f"Step {t}" for a in frame.layout.annotations)
    rows = {"no cache": np.arange(1, 13), "cache": np.ones(12)}
    att = attention_story(
        np.tril(np.ones((12, 12))) / np.arange(1, 13)[:, None],
        step_labels=make_story().labels,
        sentences=[f"Step {t}" for t in range(12)],
        series=rows,
        series_title="rows",
        y_title="rows",
        start=3,
    )
    marker = next(s for s in att.layout.shapes if s.name == "step_marker")
    assert att.layout.sliders[0].active == 3 and (marker.x0, marker.x1) == (3, 3) and len(att.frames) == 12
    assert all([s.x0 for s in f.layout.shapes] == [int(f.name)] for f in att.frames)
    assert all(any(a.text == f"Step {f.name}" for a in f.layout.annotations) for f in att.frames)
