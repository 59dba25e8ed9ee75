"""Figures of linear attention and DeltaNet (lineage.plots.linear).

Every animation keeps the house rules (tests.util.assert_animation_rules), and shows what it claims: the write and
the state so far, the delta rule's read, target and correction, the chunks done.
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
