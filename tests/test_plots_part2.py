"""Figures of the gated stages and the hybrid, and the lineage helpers behind them.

Builders: frames follow T (at most MAX_FRAMES), one colour range for all frames, diverging scales centred on zero
for signed data, [0, 1] for gates. Helpers: the decay mask is the parallel form's, the gate switches off exactly,
the Kimi Linear spec follows any schedule.
"""

from __future__ import annotations

import numpy as np
import pytest

from lineage import plots
from lineage.measure import footprints
from lineage.models import hybrid
from lineage.plots.core import MAX_FRAMES
from lineage.teach import stage_runs

RNG = np.random.default_rng(0)


def states(T: int, K: int = 3, V: int = 4, scale: float = 1.0) -> np.ndarray:
    return scale * RNG.normal(size=(T, K, V))


def heat(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


# ---- state_animation ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 7, 64])
def test_state_animation_has_one_frame_per_step(T):
    fig = plots.state_animation({"S": states(T)}, title="t")
    assert len(fig.frames) == T
    assert [f.name for f in fig.frames] == [str(t) for t in range(T)]
    assert len(fig.layout.sliders[0].steps) == T


def test_state_animation_caps_frames_and_keeps_the_last_step():
    fig = plots.state_animation({"S": states(100)}, title="t")
    assert len(fig.frames) == MAX_FRAMES
    assert fig.frames[-1].name == "99"


def test_state_panels_share_one_signed_range_across_frames_and_panels():
    small, big = states(9), states(9, scale=5.0)
    gate = RNG.uniform(0.2, 1.0, size=(9, 3))
    fig = plots.state_animation({"a": small, "b": big}, gate=gate, title="t")
    m = float(np.abs(big).max())
    for frame in fig.frames:
        g, a, b = frame.data
        assert (g.zmin, g.zmax) == (0.0, 1.0) and g.zmid is None
        for panel in (a, b):
            assert (panel.zmin, panel.zmax, panel.zmid) == (-m, m, 0.0)
            assert panel.colorscale == fig.data[1].colorscale  # the same diverging scale everywhere
            assert panel.showscale
    np.testing.assert_array_equal(heat(fig.frames[4].data[0]), gate[4][:, None])
    np.testing.assert_array_equal(heat(fig.frames[4].data[2]), big[4])


def test_state_animation_starts_at_the_chosen_step():
    s = states(10)
    fig = plots.state_animation({"S": s}, title="t", start=3)
    assert fig.layout.sliders[0].active == 3
    np.testing.assert_array_equal(heat(fig.data[0]), s[3])
    assert plots.state_animation({"S": s}, title="t").layout.sliders[0].active == 9  # default: the last step


def test_state_animation_prints_values_only_in_small_states():
    assert plots.state_animation({"S": states(3, 8, 8)}, title="t").data[0].text is not None
    assert plots.state_animation({"S": states(3, 16, 16)}, title="t").data[0].text is None


def test_state_animation_rejects_mismatched_runs():
    with pytest.raises(ValueError, match=r"states\['b'\] must be \[T=5, K=3, V\]"):
        plots.state_animation({"a": states(5), "b": states(6)}, title="t")
    with pytest.raises(ValueError, match=r"gate must be \[T=5, K=3\]"):
        plots.state_animation({"a": states(5)}, gate=np.ones((5, 4)), title="t")


# ---- still figures --------------------------------------------------------------------------------------------


def test_heatmaps_are_still_figures():
    fig = plots.heatmaps([plots.Panel("p", RNG.normal(size=(1, 3, 3)))])
    assert not fig.frames and not fig.layout.sliders and not fig.layout.updatemenus
    with pytest.raises(ValueError, match="a still heatmap needs frames"):
        plots.heatmaps([plots.Panel("p", RNG.normal(size=(2, 3, 3)))])


def test_gates_by_channel_is_channels_by_time_on_the_unit_range():
    alpha = RNG.uniform(0.5, 1.0, size=(12, 4))
    fig = plots.gates_by_channel(alpha, title="t", step=5)
    (tr,) = fig.data
    np.testing.assert_array_equal(heat(tr), alpha.T)
    assert (tr.zmin, tr.zmax, tr.zmid) == (0.0, 1.0, None)
    assert tr.colorscale != plots.state_animation({"S": states(2)}, title="t").data[0].colorscale
    (band,) = fig.layout.shapes
    assert (band.x0, band.x1) == (4.5, 5.5)


def test_retention_map_keeps_blanks_past_the_end():
    r = stage_runs.retention(np.log(np.full((6, 1), 0.5)))[:, :, 0]
    (tr,) = plots.retention_map(r, title="t").data
    z = heat(tr)
    np.testing.assert_array_equal(np.isnan(z), np.isnan(r))
    np.testing.assert_allclose(z[0], 0.5 ** np.arange(6))
    assert (tr.zmin, tr.zmax) == (0.0, 1.0)


def test_channel_retention_puts_channels_on_rows():
    a, b = RNG.uniform(size=(10, 3)), RNG.uniform(size=(10, 3))
    fig = plots.channel_retention({"a": a, "b": b}, title="t")
    np.testing.assert_array_equal(heat(fig.data[0]), a.T)
    np.testing.assert_array_equal(heat(fig.data[1]), b.T)
    assert all((tr.zmin, tr.zmax) == (0.0, 1.0) for tr in fig.data)


def test_decay_mask_and_attention_scales():
    mask, attn = np.tril(RNG.uniform(size=(5, 5))), np.tril(RNG.normal(size=(5, 5)))
    fig = plots.decay_mask_and_attention(mask, attn, title="t", step=2)
    m, a = fig.data
    assert (m.zmin, m.zmax, m.zmid) == (0.0, 1.0, None)
    assert a.zmid == 0.0 and a.zmin == -a.zmax == -float(np.abs(attn).max())
    assert a.colorscale == plots.state_animation({"S": states(2)}, title="t").data[0].colorscale
    assert len(fig.layout.shapes) == 2  # the step's row, outlined in both panels
    with pytest.raises(ValueError, match=r"must both be \[T, T\]"):
        plots.decay_mask_and_attention(mask, attn[:, :4], title="t")


def test_over_time_draws_each_series_and_the_step():
    a, b = RNG.uniform(size=8), RNG.uniform(size=8)
    fig = plots.over_time({"a": a, "b": b}, title="t", y_title="y", step=3, y_range=(0, 1))
    assert [tr.name for tr in fig.data] == ["a", "b"]
    np.testing.assert_array_equal(fig.data[0].x, np.arange(8))
    np.testing.assert_array_equal(fig.data[1].y, b)
    assert fig.layout.shapes[0].x0 == 3
    with pytest.raises(ValueError, match=r"series\['b'\] must have 8 points"):
        plots.over_time({"a": a, "b": b[:5]}, title="t", y_title="y")


def test_step_marker_rejects_an_unknown_axis():
    with pytest.raises(ValueError, match="axis must be 'x' or 'y'"):
        plots.step_marker(plots.over_time({"a": np.ones(3)}, title="t", y_title="y"), 1, axis="z")


# ---- hybrid figures -------------------------------------------------------------------------------------------

SCHEDULE = ("kda", "kda", "mla")
BYTES = np.array([[100, 100, 10 * (t + 1)] for t in range(20)])  # two fixed states, one growing cache


def test_decode_animation_has_a_frame_per_token_and_a_fixed_axis():
    fig = plots.decode_bytes_animation(SCHEDULE, BYTES, title="t", start=4)
    assert [f.name for f in fig.frames] == [str(t + 1) for t in range(20)]
    assert tuple(fig.layout.yaxis.range) == (0, 1.05 * 200)
    assert fig.layout.sliders[0].active == 4
    cache, state = fig.frames[9].data
    assert list(cache.x) == [3] and list(cache.y) == [100]
    assert list(state.x) == [1, 2] and list(state.y) == [100, 100]
    assert list(fig.data[0].y) == [50]  # shown first: after 5 tokens


def test_decode_animation_caps_frames():
    long = np.tile(BYTES[:1], (100, 1))
    assert len(plots.decode_bytes_animation(SCHEDULE, long, title="t").frames) == MAX_FRAMES


def test_bytes_heatmap_is_layers_by_tokens():
    fig = plots.bytes_by_layer_and_time(SCHEDULE, BYTES, title="t", step=0)
    (tr,) = fig.data
    np.testing.assert_array_equal(heat(tr), BYTES.T)
    assert list(tr.y) == ["1 KDA", "2 KDA", "3 MLA"] and list(tr.x) == list(range(1, 21))
    assert (tr.zmin, tr.zmax) == (0.0, 200.0)
    with pytest.raises(ValueError, match=r"one kind per layer \(3\)"):
        plots.bytes_by_layer_and_time(SCHEDULE[:2], BYTES, title="t")


# ---- lineage helpers behind the pages ---------------------------------------------------------------------------


def test_decay_mask_is_retention_reindexed_and_the_parallel_forms_mask():
    run = stage_runs.run_stage("mamba2", 12, 4, 3, 1, stage_runs.GateRule(alpha=0.8, alpha_jitter=1.0), repeats=1)
    mask = stage_runs.decay_mask(run.g)[:, :, 0]
    ret = stage_runs.retention(run.g)[:, :, 0]
    for x in range(12):
        np.testing.assert_allclose(mask[x:, x], ret[x, : 12 - x], rtol=1e-12)
    assert np.all(np.triu(mask, 1) == 0)
    # state space duality: the parallel form's matrix is the mask times scale·QKᵀ
    np.testing.assert_allclose(stage_runs.mixing_matrix(run), mask * run.scale * (run.q @ run.k.T), atol=1e-6)


def test_decay_mask_of_a_wipe_keeps_only_the_diagonal():
    run = stage_runs.run_stage("mamba2", 6, 3, 3, 0, stage_runs.GateRule(alpha=0.0), repeats=1)
    np.testing.assert_array_equal(stage_runs.decay_mask(run.g)[:, :, 0], np.eye(6))
    with pytest.raises(ValueError, match=r"g must be a non-empty \[T\] or \[T, K\] array"):
        stage_runs.decay_mask(np.zeros((2, 2, 2)))


def test_gate_off_gives_exactly_zero_log_gates():
    rule = stage_runs.gate_off(stage_runs.GateRule(alpha=0.3, alpha_min=0.1, alpha_jitter=2.0))
    assert not stage_runs.run_stage("kda", 5, 3, 3, 0, rule, repeats=1).g.any()


def test_matched_scalar_rule_takes_the_channels_mean():
    rule = stage_runs.matched_scalar_rule(stage_runs.GateRule(alpha=0.9, alpha_min=0.5, beta=0.3), 5)
    assert rule.alpha == rule.alpha_min == pytest.approx(0.7) and rule.beta == 0.3


def test_state_norms():
    s = states(4)
    np.testing.assert_allclose(stage_runs.state_norms(s), [np.linalg.norm(m) for m in s])
    with pytest.raises(ValueError, match=r"states must be \[T, K, V\]"):
        stage_runs.state_norms(s[0])


def test_kimi_linear_spec_follows_the_schedule():
    assert hybrid.kimi_linear_spec(footprints.KIMI_LINEAR_SCHEDULE) is footprints.MODELS["kimi-linear-48b"]
    schedule = footprints.periodic_schedule(6, 3)
    spec = hybrid.kimi_linear_spec(schedule)
    layers = footprints.footprint(spec, 1000).per_layer
    assert tuple(layer.kind for layer in layers) == schedule
    assert layers[2].kv_cache_bytes == 1000 * (512 + 64) * 2  # bf16
    assert layers[0].state_bytes == 2 * (32 * 128 * 128 + 3 * 32 * 3 * 128)
    assert spec.params_nominal is None
