"""The live runs behind the stage pages (lineage.teach.stage_runs): GPT-2 and the KV cache, linear attention and
DeltaNet, and the lineage helpers behind the gated pages (the decay mask is the parallel form's, the gate switches off
exactly)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lineage.ops.kv_cache import KVCache
from lineage.teach import stage_runs
from tests.util import states


def test_softmax_run_counts_rows_and_bytes_from_the_loops():
    T, H, hd = 10, 3, 4
    run = stage_runs.run_softmax(T, H, hd, seed=1, block_size=4)
    assert run.rows_recompute == T * (T + 1) // 2 == run.cost.rows_recompute.sum()
    assert run.rows_cached == T
    assert run.err_recompute < 1e-5 and run.err_tiled < 1e-5
    np.testing.assert_array_equal(run.trace.cache_bytes, np.arange(1, T + 1) * 2 * hd * 4)  # fp32 k and v
    cache = KVCache(1, H, hd, hd)
    cache.append(torch.zeros(1, H, T, hd), torch.zeros(1, H, T, hd))
    assert run.layer_cache_bytes == cache.nbytes == H * run.trace.cache_bytes[-1]
    np.testing.assert_allclose(run.trace.attn.sum(axis=1), 1.0)
    assert np.isneginf(run.scores[np.triu_indices(T, 1)]).all()
    assert run.seconds["recompute"] > 0 and run.seconds["cached"] > 0
    assert (run.io_tiled < run.io_standard).all()


def test_softmax_run_is_deterministic_per_seed():
    a, b, c = (
        stage_runs.run_softmax(6, 2, 4, seed=3),
        stage_runs.run_softmax(6, 2, 4, seed=3),
        stage_runs.run_softmax(6, 2, 4, seed=4),
    )
    np.testing.assert_array_equal(a.trace.attn, b.trace.attn)
    assert not np.array_equal(a.trace.attn, c.trace.attn)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(T=stage_runs.DEMO_LIMITS["T"] + 1), "T must be <="),
        (dict(n_heads=stage_runs.SOFTMAX_MAX_HEADS + 1), "n_heads must be <="),
        (dict(head_dim=0), "head_dim must be >= 1"),
        (dict(T=4, block_size=8), "block_size must be <= 4"),
    ],
)
def test_softmax_run_rejects_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        stage_runs.run_softmax(**kwargs)


def test_recall_is_exact_for_the_first_pair_and_blurs_as_linear_attention_adds():
    run = stage_runs.run_stage("linear_attention", T=24, K=6, V=5)
    r = stage_runs.recall(run)
    assert r.error.shape == (24, 24) and np.isnan(r.error[np.triu_indices(24, 1)]).all()
    assert r.by_step[0] < 1e-5  # one pair stored: the normalised read returns it exactly
    assert r.by_step[-1] > 0.5  # many overlapping positive keys: reads are blends
    assert r.state_norm[-1] > 2 * r.state_norm[0]  # the state only grows


def test_delta_rule_stores_the_newest_pair_exactly_at_beta_one():
    run = stage_runs.run_stage("deltanet", T=16, K=8, V=8, rule=stage_runs.GateRule(beta=1.0))
    r = stage_runs.recall(run)
    assert r.by_age[0] < 1e-5
    assert r.by_age[8] > r.by_age[0]
    assert r.state_norm.max() < 2 * np.linalg.norm(run.v, axis=1).max() * np.sqrt(8)  # bounded, not growing


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
def test_write_gaps_close_a_fraction_beta(beta):
    run = stage_runs.run_stage("deltanet", T=12, K=4, V=4, rule=stage_runs.GateRule(beta=beta))
    before, after = stage_runs.write_gaps(run)
    np.testing.assert_allclose(after, (1 - beta) * before, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("stage", ["linear_attention", "deltanet", "gated_deltanet", "kda"])
def test_mixing_matrix_reproduces_the_outputs(stage):
    run = stage_runs.run_stage(stage, T=9, K=4, V=3)
    A = stage_runs.mixing_matrix(run)
    assert A.shape == (9, 9) and (A[np.triu_indices(9, 1)] == 0).all()  # causal
    np.testing.assert_allclose(A @ run.v, run.trace.output[0, 0], rtol=1e-4, atol=1e-6)


def test_chunk_size_sweep_times_every_power_of_two():
    sweep = stage_runs.chunk_size_sweep(T=12, D=4, repeats=1)
    assert sweep.chunk_sizes.tolist() == [1, 2, 4, 8]
    assert (sweep.seconds > 0).all()
    assert sweep.model_flops.tolist() == [stage_runs.chunk_flops(12, 4, C) for C in (1, 2, 4, 8)]
    assert stage_runs.chunk_flops(12, 4, 8) == 2 * 12 * 16 + 2 * 12 * 8 * 4
    with pytest.raises(ValueError, match="chunk_size must be >= 1"):
        stage_runs.chunk_size_sweep(T=8, D=4, chunk_sizes=[0], repeats=1)


# ---- the gated stages ------------------------------------------------------------------------------------------


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
