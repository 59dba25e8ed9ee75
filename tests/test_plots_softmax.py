"""Figures of the softmax stages, GPT-2 and the KV cache (lineage.plots.softmax).

Every animation keeps the house rules (tests.util.assert_animation_rules), and shows what it claims: the rows filled
so far, the columns appended so far, the tiles visited so far.
"""

from __future__ import annotations

import numpy as np
import pytest

from lineage import plots
from lineage.plots.core import MAX_FRAMES
from lineage.teach import stage_runs
from tests.util import assert_animation_rules
from tests.util import heat as z

RNG = np.random.default_rng(0)


def attn_matrix(T: int) -> np.ndarray:
    scores = np.tril(RNG.normal(size=(T, T))) + np.triu(np.full((T, T), -np.inf), 1)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("T", [1, 5, 64])
def test_attention_growth_adds_one_query_row_per_frame(T):
    attn = attn_matrix(T)
    fig = plots.attention_growth(attn)
    assert_animation_rules(fig, T)
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0)  # weights: the unit range, not the data's
    causal = np.tri(T, dtype=bool)
    for t, frame in enumerate(fig.frames):
        shown = z(frame.data[0])
        visible = causal & (np.arange(T)[:, None] <= t)  # rows so far, keys up to each row's own position
        np.testing.assert_allclose(shown[visible], attn[visible], rtol=1e-6)
        assert np.isnan(shown[~visible]).all()


def test_attention_growth_caps_frames_keeps_the_last_and_starts_where_asked():
    fig = plots.attention_growth(attn_matrix(100), start=50)
    assert_animation_rules(fig, MAX_FRAMES)
    assert fig.frames[-1].name == "99"
    active = fig.layout.sliders[0].active
    assert abs(int(fig.frames[active].name) - 50) <= 1  # the kept frame nearest to step 50
    np.testing.assert_array_equal(z(fig.data[0]), z(fig.frames[active].data[0]))


def test_kv_cache_growth_appends_one_column_per_frame():
    T, K, V = 6, 3, 4
    keys, values, attn = RNG.normal(size=(T, K)), RNG.normal(size=(T, V)), attn_matrix(T)
    fig = plots.kv_cache_growth(keys, values, attn, start=2)
    assert_animation_rules(fig, T)
    assert fig.layout.sliders[0].active == 2
    for t, frame in enumerate(fig.frames):
        k_panel, v_panel, rows = (z(d) for d in frame.data)
        np.testing.assert_allclose(k_panel[:, : t + 1], keys[: t + 1].T, rtol=1e-6)
        np.testing.assert_allclose(v_panel[:, : t + 1], values[: t + 1].T, rtol=1e-6)
        assert np.isnan(k_panel[:, t + 1 :]).all() and np.isnan(v_panel[:, t + 1 :]).all()
        visible = np.tri(T, dtype=bool) & (np.arange(T)[:, None] <= t)
        np.testing.assert_allclose(rows[visible], attn[visible], rtol=1e-6)
        assert np.isnan(rows[~visible]).all()


def test_online_softmax_ends_with_the_softmax_max_and_normaliser():
    run = stage_runs.run_softmax(T=20, n_heads=2, head_dim=4, block_size=8)
    tr = run.tiled
    fig = plots.online_softmax(run.scores, tr.q_block, tr.k_block, tr.m_steps, tr.l_steps, tr.block_size)
    assert_animation_rules(fig, len(tr.q_block))  # one frame per (query block, key block) pair: 1 + 2 + 3 = 6
    assert len(fig.frames) == 6
    assert fig.layout.sliders[0].currentvalue.prefix == "tile "
    tiles, m, l = (z(d) for d in fig.frames[-1].data)
    np.testing.assert_allclose(m[:, 0], tr.m_final, rtol=1e-6)
    np.testing.assert_allclose(l[:, 0], tr.l_final, rtol=1e-6)
    visible = np.isfinite(run.scores)
    np.testing.assert_allclose(tiles[visible], run.scores[visible], rtol=1e-6)  # every causal score was visited
    first_tiles = z(fig.frames[0].data[0])
    assert np.isfinite(first_tiles).sum() == np.isfinite(run.scores[:8, :8]).sum()  # one tile after one step


def test_static_cost_and_traffic_charts_mark_the_step():
    cost = stage_runs.run_softmax(T=12, n_heads=1, head_dim=4, block_size=4).cost
    fig = plots.recompute_cost(
        cost.position, (cost.rows_recompute, cost.rows_cached), (cost.flops_recompute, cost.flops_cached), step=3
    )
    assert len(fig.data) == 4 and not fig.frames
    np.testing.assert_array_equal(fig.data[0].y, np.arange(1, 13))  # N rows without a cache
    np.testing.assert_array_equal(fig.data[1].y, np.ones(12))
    assert fig.layout.yaxis2.type == "log"
    assert {shape.x0 for shape in fig.layout.shapes} == {4}  # the marker sits at N = step + 1
    held = np.arange(1, 9) * 64
    fig = plots.cache_traffic(held, step=2)
    np.testing.assert_array_equal(fig.data[0].y, held)
    np.testing.assert_array_equal(fig.data[1].y, np.cumsum(held))
    assert "512 bytes" in fig.data[0].text[-1]


def test_io_bytes_is_log_log_with_one_line_per_algorithm():
    fig = plots.io_bytes(np.array([16, 32]), np.array([100, 400]), np.array([50, 200]))
    assert [len(d.y) for d in fig.data] == [2, 2]
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"


def test_builders_reject_bad_shapes():
    with pytest.raises(ValueError, match="square"):
        plots.attention_growth(np.ones((3, 4)))
    with pytest.raises(ValueError, match="must share T"):
        plots.kv_cache_growth(np.ones((3, 2)), np.ones((4, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="chunk_size"):
        plots.chunk_schedule(np.eye(4), 0)
    with pytest.raises(ValueError, match="written"):
        plots.write_and_state(np.ones((3, 2)), np.ones((3, 5)), np.ones((3, 2, 4)))
