"""lineage.teach.real_size: a stage at real size — summaries segment by segment, the first steps exactly, sizes and
errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lineage import plots
from lineage.inputs import layer_inputs
from lineage.measure.timing import timed
from lineage.mechanisms import linear_mechanisms, mechanism
from lineage.ops.recurrence import chunk_memory
from lineage.teach import real_size

LINEAR = [m.key for m in linear_mechanisms()]
RTOL = 1e-5  # fp32: a state or norm built in a different order of the same fp32 sums


def scale_inputs(key: str, T: int, H: int, K: int, seed: int) -> tuple:
    """The inputs run_at_scale draws on a CPU: q, k, v, g, beta."""
    x = layer_inputs(mechanism(key), H, T, K, torch.Generator().manual_seed(seed))
    return x["q"], x["k"], x["v"], x["g"], x["beta"]


def scale_gates(key: str, T: int, H: int, K: int, seed: int) -> dict:
    """The unit gates run_at_scale draws beside them (Gated DeltaNet-2's erase and write), by name."""
    x = layer_inputs(mechanism(key), H, T, K, torch.Generator().manual_seed(seed))
    return {u.name: x[u.name] for u in mechanism(key).unit_gates}


def rel(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


@pytest.fixture(scope="module")
def runs():
    """Every linear stage at a small real-size run: T = 200 (not a multiple of the chunk), 3 heads of 8, 16 points
    at most, chunk 8, so the segments hold 2 chunks each and the last one is short."""
    return {key: real_size.run_at_scale(key, 200, 8, 3, seed=5, chunk_size=8, max_points=16) for key in LINEAR}


# ---- segments: how a long run is cut into at most max_points pieces ---------------------------------------------


@pytest.mark.parametrize("T", [1, 7, 8, 9, 64, 200, 1000, 8192, 65_536, 65_537])
@pytest.mark.parametrize("C", [1, 8, 32, 64])
@pytest.mark.parametrize("max_points", [1, 3, 16, 256])
def test_segments_cover_the_run_in_whole_chunks_and_stay_within_max_points(T, C, max_points):
    ends = real_size.segment_ends(T, C, max_points)
    assert 1 <= ends.size <= max_points and ends[-1] == T
    lengths = np.diff(np.concatenate([[0], ends]))
    assert (lengths > 0).all()
    assert (lengths[:-1] == lengths[0]).all() and lengths[0] % C == 0 or ends.size == 1
    assert lengths[-1] <= lengths[0]
    chunks = -(-T // C)
    if chunks <= max_points:  # enough points for every chunk: one chunk per segment
        assert ends.size == chunks
    elif ends.size > 1:  # the fewest chunks per segment that fit: one chunk less would need too many points
        per = lengths[0] // C
        assert per == 1 or -(-chunks // (per - 1)) > max_points


@pytest.mark.parametrize(
    ("K", "state_V", "T", "first"),
    [(8, 8, 200, 32), (64, 64, 8192, 32), (64, 65, 8192, 31), (128, 128, 65_536, 8), (8, 8, 5, 5), (1024, 1024, 9, 1)],
)
def test_the_first_steps_drawn_exactly_stay_within_the_cell_budget(K, state_V, T, first):
    n = real_size.first_step_count(T, K, state_V)
    assert n == first
    assert n == 1 or n * K * state_V <= real_size.FIRST_STEP_CELLS


# ---- the run: summaries, exact first steps, the final state -------------------------------------------------------


@pytest.mark.parametrize("key", LINEAR)
def test_summaries_have_the_stated_sizes(runs, key):
    r = runs[key]
    n = real_size.segment_ends(200, 8, 16).size
    assert n == 13 and r.segment == 16 and r.segment_ends[-1] == 200  # 25 chunks of 8, two per segment
    assert r.state_norm.shape == (3, n) and r.row_norms.shape == (n, 8)
    assert r.output_mean.shape == r.output_max.shape == (n,)
    state_V = 9 if next(m for m in linear_mechanisms() if m.key == key).layer.normalize else 8
    assert r.state_V == state_V and r.first_states.shape == (r.n_first, 8, state_V)
    assert r.n_first == real_size.first_step_count(200, 8, state_V) == 32
    assert (r.first_decay is None) == (r.stage in [m.key for m in linear_mechanisms() if m.gate == "none"])
    if r.first_decay is not None:
        assert r.first_decay.shape == (r.n_first, 8) and ((r.first_decay > 0) & (r.first_decay <= 1)).all()
    assert (r.output_max >= r.output_mean).all() and (r.state_norm >= 0).all()
    assert r.state_bytes == 3 * 8 * state_V * 4 and r.kv_cache_bytes == 3 * 200 * 16 * 4
    assert r.seconds > 0 and r.tokens_per_s == pytest.approx(200 / r.seconds)


@pytest.mark.parametrize("key", LINEAR)
def test_the_summaries_are_those_of_one_call_over_the_whole_sequence(runs, key):
    """Recomputed independently: one call of the stage's op over all 200 tokens gives the outputs whose segment means
    and maxima the run reports, and prefixes of the sequence give the states it reports after each segment."""
    r, m = runs[key], next(m for m in linear_mechanisms() if m.key == key)
    q, k, v, g, beta = scale_inputs(key, 200, 3, 8, 5)
    own = scale_gates(key, 200, 3, 8, 5)
    o, _ = m.call(q, k, v, g, beta, chunk_size=8, **own)
    norms = o[0, 0].norm(dim=-1).numpy()
    starts = np.concatenate([[0], r.segment_ends[:-1]])
    mean = [norms[a:b].mean() for a, b in zip(starts, r.segment_ends, strict=True)]
    largest = [norms[a:b].max() for a, b in zip(starts, r.segment_ends, strict=True)]
    assert rel(r.output_mean, mean) < RTOL and rel(r.output_max, largest) < RTOL
    for i in (0, 5, len(r.segment_ends) - 1):
        end = int(r.segment_ends[i])
        cut = (None if x is None else x[:, :, :end] for x in (q, k, v, g, beta))
        _, S = m.call(*cut, chunk_size=8, output_final_state=True, **{n: x[:, :, :end] for n, x in own.items()})
        assert rel(r.state_norm[:, i], S[0].flatten(1).norm(dim=-1)) < RTOL
        assert rel(r.row_norms[i], S[0, 0].norm(dim=-1)) < RTOL


@pytest.mark.parametrize("key", LINEAR)
def test_the_first_steps_are_the_states_of_the_op_step_by_step(runs, key):
    r, m = runs[key], next(m for m in linear_mechanisms() if m.key == key)
    assert r.err_first < RTOL and r.err_segments < RTOL
    q, k, v, g, beta = scale_inputs(key, 200, 3, 8, 5)
    own = scale_gates(key, 200, 3, 8, 5)
    for t in (0, 6, r.n_first - 1):
        cut = (None if x is None else x[:1, :1, : t + 1] for x in (q, k, v, g, beta))
        mine = {n: x[:1, :1, : t + 1] for n, x in own.items()}
        _, S = m.call(*cut, mode="recurrent", output_final_state=True, **mine)
        assert rel(r.first_states[t], S[0, 0]) < RTOL, t


@pytest.mark.parametrize("split", [8, 96, 192])
def test_segment_by_segment_from_the_returned_state_is_one_chunk_memory_call(split):
    """The public contract the summaries rest on: any cut, the state carried over, gives one call's final state."""
    q, k, v, g, beta = (None if x is None else x.double() for x in scale_inputs("kda", 200, 2, 8, 1))
    _, whole = chunk_memory(q, k, v, g, beta, rule="delta", output_final_state=True, chunk_size=8)
    state = None
    for a, b in ((0, split), (split, 200)):
        part = (x[:, :, a:b] for x in (q, k, v, g, beta))
        _, state = chunk_memory(*part, rule="delta", initial_state=state, output_final_state=True, chunk_size=8)
    torch.testing.assert_close(state, whole, rtol=1e-12, atol=1e-12)


def test_the_inputs_follow_the_seed_and_the_stages_gate():
    for m in linear_mechanisms():
        a = scale_inputs(m.key, 40, 2, 4, 3)
        b = scale_inputs(m.key, 40, 2, 4, 3)
        c = scale_inputs(m.key, 40, 2, 4, 4)
        assert all(torch.equal(x, y) for x, y in zip(a[:3], b[:3], strict=True))
        assert not torch.equal(a[0], c[0])
        q, k, v, g, beta = a
        assert q.shape == k.shape == v.shape == (1, 2, 40, 4)
        if m.gate == "none":
            assert g is None
        else:
            assert g.shape == ((1, 2, 40, 4) if m.gate == "channel" else (1, 2, 40)) and (g < 0).all()
            assert g.mean() > -0.1  # logsigmoid(N(0, 1)) / 16: α near 1, as in a trained layer
        assert (beta is None) == (not m.takes("beta"))
        assert set(scale_gates(m.key, 40, 2, 4, 3)) == {u.name for u in m.unit_gates}
        if beta is not None:
            assert ((beta > 0) & (beta < 1)).all()
        if m.layer.l2norm:
            torch.testing.assert_close(k.norm(dim=-1), torch.ones(1, 2, 40))
        assert real_size.inputs_text(m.key).startswith("q, k, v ~ N(0, 1)")


def test_the_timing_is_of_one_call_of_the_op():
    """The run's wall time is the same order as timing the op directly (a loose check: a shared machine drifts)."""
    r = real_size.run_at_scale("kda", 2048, 16, 2, chunk_size=32, repeats=3)
    q, k, v, g, beta = scale_inputs("kda", 2048, 2, 16, 0)
    m = next(m for m in linear_mechanisms() if m.key == "kda")
    direct = min(timed(lambda: m.call(q, k, v, g, beta, chunk_size=32), torch.device("cpu"))[1] for _ in range(3))
    assert r.repeats == 3 and direct / 5 < r.seconds < direct * 5


# ---- bad input ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"T": 0}, "T must be >= 1"),
        ({"K": -2}, "K must be >= 1"),
        ({"heads": 0}, "heads must be >= 1"),
        ({"max_points": 0}, "max_points must be >= 1"),
        ({"first_steps": 0}, "first_steps must be >= 1"),
        ({"chunk_size": 0}, "chunk_size must be >= 1"),
        ({"repeats": 0}, "repeats must be >= 1"),
        ({"mechanism": "softmax"}, "mechanism must be a linear-memory mechanism, got 'softmax'"),
        ({"mechanism": "lstm"}, "mechanism must be one of .* got 'lstm'"),
    ],
)
def test_bad_sizes_raise_a_value_error_naming_the_argument(kwargs, match):
    args = {"mechanism": "kda", "T": 64, "K": 8, "heads": 2} | kwargs
    with pytest.raises(ValueError, match=match):
        real_size.run_at_scale(**args)


def test_a_size_that_is_not_an_int_is_a_type_error():
    with pytest.raises(TypeError, match="T must be an int"):
        real_size.run_at_scale("kda", 64.0, 8, 2)
    with pytest.raises(ValueError, match="T must be >= 1"):
        real_size.segment_ends(0, 8)


# ---- figures ------------------------------------------------------------------------------------------------------


def test_the_figures_draw_every_summary_point(runs):
    r = runs["kda"]
    fig = plots.run_summary(r.segment_ends, {f"head {h}": r.state_norm[h] for h in range(r.H)}, title="t", y_title="y")
    assert len(fig.data) == r.H and all(len(t.x) == len(r.segment_ends) for t in fig.data)
    heat = plots.state_rows_over_run(r.segment_ends, r.row_norms, title="t")
    assert np.asarray(heat.data[0].z).shape == (r.K, len(r.segment_ends))


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: plots.run_summary([3, 2], {"a": [1, 2]}, title="t", y_title="y"), "increasing"),
        (lambda: plots.run_summary([1, 2], {}, title="t", y_title="y"), "at least one line"),
        (lambda: plots.run_summary([1, 2], {"a": [1, 2, 3]}, title="t", y_title="y"), r"series\['a'\]"),
        (lambda: plots.state_rows_over_run([1, 2], np.ones((3, 4)), title="t"), "row_norms must be"),
    ],
)
def test_the_figures_refuse_mismatched_arrays(build, match):
    with pytest.raises(ValueError, match=match):
        build()
