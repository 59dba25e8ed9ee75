"""Figures of the first four stages (GPT-2, KV cache, linear attention, DeltaNet).

Every animation: frames follow the number of steps (at most MAX_FRAMES, the last step kept), one colour range per
panel fixed across frames, signed panels centred on zero, a colour bar on every panel, values printed in small
cells. Each builder also shows what it claims: the rows filled so far, the tiles visited so far, the chunks done.
"""

from __future__ import annotations

import numpy as np
import pytest

from lineage import plots
from lineage.plots.core import MAX_FRAMES, TEXT_MAX_CELLS, TEXT_MAX_SIDE
from lineage.teach import stage_runs

RNG = np.random.default_rng(0)


def z(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


def assert_animation_rules(fig, n_frames: int) -> None:
    """The house rules every animation must keep."""
    assert len(fig.frames) == n_frames
    assert len(fig.layout.sliders[0].steps) == n_frames
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["▶ Play", "❚❚ Pause"]
    for i, first in enumerate(fig.data):
        ranges = {(f.data[i].zmin, f.data[i].zmax, f.data[i].zmid) for f in fig.frames}
        assert ranges == {(first.zmin, first.zmax, first.zmid)}, f"panel {i}: colour range changes across frames"
        assert first.zmin < first.zmax
        signed = first.zmin < 0
        assert (first.zmid == 0.0) if signed else first.zmid is None
        assert first.zmin == -first.zmax if signed else True
        for frame in fig.frames:
            assert frame.data[i].showscale, f"panel {i}: colour bar hidden"
            shape = z(frame.data[i]).shape
            small = np.prod(shape) <= TEXT_MAX_CELLS and max(shape) <= TEXT_MAX_SIDE
            assert (frame.data[i].text is not None) == small


def attn_matrix(T: int) -> np.ndarray:
    scores = np.tril(RNG.normal(size=(T, T))) + np.triu(np.full((T, T), -np.inf), 1)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ---- softmax family -----------------------------------------------------------------------------------------------


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


# ---- linear attention and DeltaNet ----------------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 9, 70])
def test_write_and_state_follows_the_steps(T):
    K, V = 3, 4
    k, u, S = RNG.normal(size=(T, K)), RNG.normal(size=(T, V)), RNG.normal(size=(T, K, V))
    fig = plots.write_and_state(k, u, S, value_labels=["a", "b", "c", "z"])
    assert_animation_rules(fig, min(T, MAX_FRAMES))
    assert list(fig.data[0].x) == ["a", "b", "c", "z"]
    last = fig.frames[-1]
    np.testing.assert_allclose(z(last.data[0]), np.outer(k[-1], u[-1]), rtol=1e-6)
    np.testing.assert_allclose(z(last.data[1]), S[-1], rtol=1e-6)


def test_big_panels_print_no_values():
    T, K, V = 4, 16, 16  # 256 cells per panel
    fig = plots.write_and_state(RNG.normal(size=(T, K)), RNG.normal(size=(T, V)), RNG.normal(size=(T, K, V)))
    assert_animation_rules(fig, T)
    assert fig.frames[0].data[1].text is None


def test_delta_rule_steps_stacks_read_target_and_correction():
    run = stage_runs.run_stage("deltanet", T=10, K=4, V=5, rule=stage_runs.GateRule(beta=0.5))
    read, delta = run.trace.read[0, 0], run.trace.delta[0, 0]
    fig = plots.delta_rule_steps(run.k, read, run.v, delta, run.states, start=3)
    assert_animation_rules(fig, 10)
    assert fig.layout.sliders[0].active == 3
    vectors, key, state = (z(d) for d in fig.frames[3].data)
    np.testing.assert_allclose(vectors, np.stack([read[3], run.v[3], delta[3]]), rtol=1e-5)
    np.testing.assert_allclose(delta[3], 0.5 * (run.v[3] - read[3]), rtol=1e-5, atol=1e-6)  # β (v − read)
    np.testing.assert_allclose(key[:, 0], run.k[3], rtol=1e-6)
    np.testing.assert_allclose(state - run.states[2], np.outer(run.k[3], delta[3]), rtol=1e-4, atol=1e-6)  # the write
    np.testing.assert_allclose(state, run.states[3], rtol=1e-6)


@pytest.mark.parametrize(("T", "C", "n_chunks"), [(16, 4, 4), (10, 4, 3), (8, 8, 1), (5, 1, 5)])
def test_chunk_schedule_splits_outputs_into_intra_chunk_and_state_parts(T, C, n_chunks):
    run = stage_runs.run_stage("deltanet", T=T, K=4, V=4)
    A = stage_runs.mixing_matrix(run)
    fig = plots.chunk_schedule(A, C)
    assert_animation_rules(fig, n_chunks)
    intra, inter = (z(d) for d in fig.frames[-1].data)
    both = np.where(np.isnan(intra), 0, intra) + np.where(np.isnan(inter), 0, inter)
    np.testing.assert_allclose(both, A, rtol=1e-5, atol=1e-7)  # together: the whole matrix
    assert not (np.isfinite(intra) & np.isfinite(inter)).any()  # and no entry twice
    assert (fig.data[0].zmin, fig.data[0].zmax) == (fig.data[1].zmin, fig.data[1].zmax)  # one scale for both
    first_intra, first_inter = (z(d) for d in fig.frames[0].data)
    assert np.isfinite(first_intra[:C]).any() and np.isnan(first_intra[C:]).all()
    assert np.isnan(first_inter).all()  # the first chunk starts from an empty state


def test_line_charts():
    fig = plots.recall_and_norm(np.linspace(0, 1, 6), np.arange(6.0), step=2)
    assert len(fig.data) == 2 and {s.x0 for s in fig.layout.shapes} == {2}
    fig = plots.recall_by_age({"a": np.ones(5), "b": np.zeros(5)}, emphasis="b")
    assert fig.data[1].line.width > fig.data[0].line.width
    fig = plots.chunk_timing(np.array([1, 2, 4]), np.array([3e-3, 2e-3, 1e-3]), np.array([10, 20, 40]), chosen=2)
    assert list(fig.data[0].y) == pytest.approx([3.0, 2.0, 1.0])  # milliseconds
    assert fig.data[0].marker.color[1] != fig.data[0].marker.color[0]  # the chosen C stands out
    with pytest.raises(ValueError, match="one entry per size"):
        plots.chunk_timing(np.array([1, 2]), np.array([1.0]), np.array([1, 2]))


def test_mixing_is_a_still_blank_above_the_diagonal():
    A = np.tril(RNG.normal(size=(6, 6)))
    fig = plots.mixing(A)
    assert not fig.frames and fig.data[0].zmid == 0.0  # signed weights: centred on zero
    shown = z(fig.data[0])
    np.testing.assert_allclose(shown[np.tri(6, dtype=bool)], A[np.tri(6, dtype=bool)], rtol=1e-6)
    assert np.isnan(shown[np.triu_indices(6, 1)]).all()
    assert plots.mixing(np.abs(A)).data[0].zmid is None  # non-negative weights: a sequential scale


def test_builders_reject_bad_shapes():
    with pytest.raises(ValueError, match="square"):
        plots.attention_growth(np.ones((3, 4)))
    with pytest.raises(ValueError, match="must share T"):
        plots.kv_cache_growth(np.ones((3, 2)), np.ones((4, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="chunk_size"):
        plots.chunk_schedule(np.eye(4), 0)
    with pytest.raises(ValueError, match="written"):
        plots.write_and_state(np.ones((3, 2)), np.ones((3, 5)), np.ones((3, 2, 4)))
