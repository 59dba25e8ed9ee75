"""Figures of the hybrid (lineage.plots.hybrid): one frame per decoded token (at most MAX_FRAMES) on a fixed axis,
bytes by layer and token."""

from __future__ import annotations

import numpy as np
import pytest

from lineage import plots
from lineage.plots.core import MAX_FRAMES
from tests.util import heat

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


def test_schedule_strip_draws_each_layer_where_it_sits():
    from lineage.schedules import KIMI_K3_CONFIG, KIMI_K3_SCHEDULE

    fig = plots.layer_schedule_strip(KIMI_K3_SCHEDULE, title="t")
    cache, state = fig.data
    assert list(cache.x) == list(KIMI_K3_CONFIG["full_attn_layers"])  # 4, 8, …, 92, 93: the last two adjacent
    assert list(cache.text) == [str(p) for p in KIMI_K3_CONFIG["full_attn_layers"]]
    assert len(state.x) == KIMI_K3_CONFIG["num_hidden_layers"] - len(KIMI_K3_CONFIG["full_attn_layers"])
    assert sorted([*cache.x, *state.x]) == list(range(1, KIMI_K3_CONFIG["num_hidden_layers"] + 1))
    assert set(cache.customdata) == {"MLA"} and set(state.customdata) == {"KDA"}
    with pytest.raises(ValueError, match="at least one"):
        plots.layer_schedule_strip((), title="t")
