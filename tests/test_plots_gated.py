"""Figures of the gated stages (lineage.plots.gated): frames follow T (at most MAX_FRAMES), one colour range for all
frames, diverging scales centred on zero for signed data, [0, 1] for gates."""

from __future__ import annotations

import numpy as np
import pytest

from lineage import plots
from lineage.plots.core import MAX_FRAMES
from lineage.teach import stage_runs
from tests.util import heat, states

RNG = np.random.default_rng(0)


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
