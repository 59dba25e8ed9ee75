"""Memory lab, the machinery: one head per cue against a hand recurrence, the stream's keys, seeds, modes, the
comparison over all experiments, and the errors for bad settings."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lineage import lab
from tests.lab.util import EXACT, ORTHO, RANDOM


def test_reads_after_every_write_match_a_hand_recurrence():
    """run_mechanisms' "one head per cue" layout against the equations, written out with numpy."""
    gen = torch.Generator().manual_seed(3)
    T, K, R = 7, 4, 3
    keys = F.normalize(torch.randn(1, T, K, generator=gen, dtype=torch.float64), dim=-1)
    values = torch.randn(1, T, K, generator=gen, dtype=torch.float64)
    cues = F.normalize(torch.randn(1, R, K, generator=gen, dtype=torch.float64), dim=-1)
    keys[:, 5], cues[:, 0] = keys[:, 0], keys[:, 0]  # a key written twice: the softmax cache splits, KDA answers
    gates = lab.Gates(alpha=0.8, beta=0.7, alpha_slow=0.9, alpha_reset=0.3)
    reads = lab.run_mechanisms(keys, values, cues, gates, lab.DEFAULT_MECHANISMS, reset=4)
    k, v, c = keys[0].numpy(), values[0].numpy(), cues[0].numpy()
    alpha = np.full(T, 0.8)
    alpha[4] = gates.alpha_reset
    a_kda = np.tile(gates.channel_alpha(K), (T, 1))
    a_kda[4] = gates.alpha_reset
    S = {m: np.zeros((K, K)) for m in ("linear_attention", "deltanet", "mamba2", "gla", "gated_deltanet", "kda")}
    for t in range(T):
        decay = {"linear_attention": 1.0, "deltanet": 1.0, "mamba2": alpha[t], "gated_deltanet": alpha[t]}
        for m in S:
            Sp = (a_kda[t][:, None] if m in ("gla", "kda") else decay[m]) * S[m]  # per-channel gates: one α per row
            u = v[t] if m in ("linear_attention", "mamba2", "gla") else gates.beta * (v[t] - Sp.T @ k[t])
            S[m] = Sp + np.outer(k[t], u)
            np.testing.assert_allclose(reads.out[m][0, :, t], c @ S[m], atol=1e-12, err_msg=f"{m} at t={t}")
        w = np.exp(lab.SHARP_SCALE * c @ k[: t + 1].T)
        w /= w.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(reads.out["softmax"][0, :, t], w @ v[: t + 1], atol=1e-12)
        np.testing.assert_allclose(reads.confidence[0, :, t], w.max(axis=1), atol=1e-12)
        use = w.max(axis=1) >= lab.HYBRID_CONFIDENCE
        np.testing.assert_array_equal(reads.hybrid_used_softmax[0, :, t], use)
        expect = np.where(use[:, None], reads.out["softmax"][0, :, t], reads.out["kda"][0, :, t])
        np.testing.assert_array_equal(reads.out["hybrid"][0, :, t], expect)
    assert reads.hybrid_used_softmax.any() and not reads.hybrid_used_softmax.all()  # both branches exercised


def test_elu1_linear_attention_returns_a_weighted_average():
    r = lab.overwrite(ORTHO, mechanisms=("linear_attention_elu1", "deltanet"))
    gen = torch.Generator().manual_seed(ORTHO.seed)  # rebuild the stream exactly as overwrite() draws it
    keys = lab.make_keys(5, 16, "orthogonal", gen)
    values = lab.make_values(6, 16, gen).numpy()
    stream = torch.cat([keys, keys[:1]]).numpy()
    phi = lambda x: np.where(x > 0, x + 1.0, np.exp(x))  # noqa: E731  elu(x) + 1
    w = phi(stream) @ phi(keys[0].numpy())
    np.testing.assert_allclose(r.retrieved["linear_attention_elu1"], w @ values / w.sum(), atol=1e-6)


def test_chunk_and_recurrent_modes_agree(monkeypatch):
    chunk = lab.capacity(RANDOM, lab.Gates(alpha=0.9, beta=0.8), n_max=40)
    monkeypatch.setattr(lab.common, "MODE", "recurrent")
    rec = lab.capacity(RANDOM, lab.Gates(alpha=0.9, beta=0.8), n_max=40)
    for m in lab.DEFAULT_MECHANISMS:
        np.testing.assert_allclose(chunk.error[m], rec.error[m], atol=1e-10)


def test_same_seed_same_result_other_seed_other_result():
    a, b = lab.needle(RANDOM), lab.needle(RANDOM)
    c = lab.needle(lab.LabSettings(keys="random", seed=1))
    np.testing.assert_array_equal(a.error["kda"], b.error["kda"])
    assert not np.allclose(a.error["kda"], c.error["kda"])


def test_orthogonal_keys_are_orthonormal_in_blocks():
    keys = lab.make_keys(40, 16, "orthogonal", torch.Generator().manual_seed(0))
    for start in (0, 16, 32):
        block = keys[start : start + 16]
        np.testing.assert_allclose(block @ block.T, np.eye(len(block)), atol=1e-12)
    assert abs(float(keys[0] @ keys[16])) > 1e-3  # different blocks are not orthogonal
    sub = lab.make_keys(5, 16, "random", torch.Generator().manual_seed(0), channels=slice(8, 16))
    assert (sub[:, :8] == 0).all() and torch.allclose(sub.norm(dim=-1), torch.ones(5, dtype=torch.float64))


def test_run_all_and_the_comparison_table():
    report = lab.run_all(ORTHO)
    table = lab.comparison_table(report)
    assert list(table.index) == [lab.label(m) for m in lab.DEFAULT_MECHANISMS]
    numeric = table.drop(columns=["write", "gate"])
    assert np.isfinite(numeric.to_numpy(dtype=float)).all()
    assert table.loc["DeltaNet", "overwrite: error vs v2"] < EXACT
    assert table.loc["Softmax (full cache)", "needle: error at the end"] < EXACT
    for result in (report.overwrite, report.capacity, report.topic_switch, report.retention, report.needle):
        assert len(lab.table(result)) == len(lab.DEFAULT_MECHANISMS)
        assert lab.summary(result)


def test_summary_and_table_reject_other_objects():
    with pytest.raises(TypeError, match="result must be one of the lab's results"):
        lab.summary("not a result")
    with pytest.raises(TypeError, match="result must be one of the lab's results"):
        lab.table(42)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: lab.LabSettings(d_k=lab.MAX_D_K + 1), r"d_k must lie in \[2, 32\], got 33"),
        (lambda: lab.LabSettings(d_k=1), "d_k must lie in"),
        (lambda: lab.LabSettings(keys="sparse"), "keys must be one of 'orthogonal', 'random', got 'sparse'"),
        (lambda: lab.LabSettings(noise=1.5), "noise must lie in"),
        (lambda: lab.Gates(alpha=0.0), r"alpha must lie in \(0.0, 1.0\], got 0.0"),
        (lambda: lab.Gates(alpha=float("nan")), "alpha must lie in"),
        (lambda: lab.Gates(beta=1.2), "beta must lie in"),
        (lambda: lab.Gates(slow_fraction=1.0), "slow_fraction must lie in"),
        (lambda: lab.Gates(alpha=0.9, alpha_slow=0.8), "alpha_slow must be >= alpha"),
        (lambda: lab.Gates(alpha_reset=-0.1), "alpha_reset must lie in"),
        (lambda: lab.overwrite(n_between=lab.MAX_BETWEEN + 1), "n_between must lie in"),
        (lambda: lab.capacity(n_max=lab.MAX_PAIRS + 1), "n_max must lie in"),
        (lambda: lab.capacity(trials=lab.MAX_TRIALS + 1), "trials must lie in"),
        (lambda: lab.topic_switch(n_a=0), "n_a must lie in"),
        (lambda: lab.retention(n_short=lab.RECENT_READS - 1), "n_short must lie in"),
        (lambda: lab.needle(n_fill=lab.MAX_PAIRS + 1), "n_fill must lie in"),
        (lambda: lab.needle(mechanisms=("kda", "transformer")), "mechanisms must be among"),
    ],
)
def test_bad_arguments_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_wrong_types_are_named():
    with pytest.raises(TypeError, match="d_k must be an int"):
        lab.LabSettings(d_k=16.0)
    with pytest.raises(TypeError, match="beta must be a number"):
        lab.Gates(beta="1")
