"""Memory lab: the qualitative outcomes hold on fixed seeds, and each check fails when its mechanism is broken.

Every outcome is asserted by a ``check_*`` helper. The mutation tests swap one mechanism for a wrong one (the delta
rule for an additive write, a gate for no gate, KDA's per-channel gate for its mean, a blurry softmax, a hybrid
that never trusts its cache) and require the same helper to fail — so no check passes by construction.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lineage import lab, mechanisms
from lineage.deltanet import deltanet
from lineage.kda import kda
from lineage.linear_attention import linear_attention

EXACT = 1e-6  # "exact" in fp64 (measured: ≤ 1e-7 for the softmax cache, ~1e-15 for the states)
ORTHO = lab.LabSettings(d_k=16, keys="orthogonal", noise=0.0, seed=0)
RANDOM = lab.LabSettings(d_k=16, keys="random", noise=0.0, seed=0)
DELTA = ("deltanet", "gated_deltanet", "kda", "hybrid")


# ---- mutations: a mechanism swapped for a wrong one ---------------------------------------------------------------


def additive_instead_of_delta(q, k, v, beta, **kw):
    """DeltaNet with its delta rule replaced by an additive write (β ignored)."""
    return linear_attention(q, k, v, feature_map="identity", normalize=False, **kw)


def gdn_without_gate(q, k, v, g, beta, **kw):
    return deltanet(q, k, v, beta, **kw)


def kda_with_mean_gate(q, k, v, g, beta, **kw):
    """KDA whose per-channel gate is replaced by its mean over channels: one gate per head, Gated DeltaNet."""
    return kda(q, k, v, g.mean(dim=-1, keepdim=True).expand_as(g), beta, **kw)


@pytest.fixture
def mutate():
    """mutate(name, op): the mechanism ``name`` of the table runs ``op`` until the test ends."""
    with contextlib.ExitStack() as stack:

        def swap(name: str, op) -> None:
            wrong = dataclasses.replace(mechanisms.mechanism(name), op=op)
            stack.enter_context(mechanisms.registered(wrong, replace=True))

        yield swap


# ---- 1. overwrite ------------------------------------------------------------------------------------------------


def check_delta_overwrites(r: lab.OverwriteResult) -> None:
    for m in DELTA:
        assert r.error_v2[m] < EXACT, f"{m} should return v2 exactly, error {r.error_v2[m]:.3g}"


def check_additive_blends(r: lab.OverwriteResult) -> None:
    # the additive memory returns v1 + v2: its error against v2 is exactly ‖v1‖ = 1 (orthonormal keys)
    assert r.coef_v1["linear_attention"] == pytest.approx(1.0, abs=1e-9)
    assert r.coef_v2["linear_attention"] == pytest.approx(1.0, abs=1e-9)
    assert r.error_v2["linear_attention"] == pytest.approx(np.linalg.norm(r.v1), abs=1e-9)
    assert r.residual["linear_attention"] < 1e-9


def test_overwrite_delta_rule_returns_v2():
    check_delta_overwrites(lab.overwrite(ORTHO, lab.Gates(alpha=0.95, beta=1.0)))


def test_overwrite_delta_rule_returns_v2_with_random_keys():
    # β = 1 and a unit key: the last write sets S'ᵀk* to v2 exactly, whatever the other keys are
    check_delta_overwrites(lab.overwrite(RANDOM, lab.Gates(alpha=0.95, beta=1.0), n_between=20))


def test_overwrite_linear_attention_returns_the_blend():
    r = lab.overwrite(ORTHO)
    check_additive_blends(r)
    assert "linear_attention" in r.blended and "linear_attention" not in r.recovered


def test_overwrite_mamba2_blend_weighs_v1_by_the_decay():
    alpha, n = 0.9, 5
    r = lab.overwrite(ORTHO, lab.Gates(alpha=alpha), n_between=n)
    assert r.coef_v1["mamba2"] == pytest.approx(alpha ** (n + 1), abs=1e-9)  # decayed at each of the n + 1 writes
    assert r.coef_v2["mamba2"] == pytest.approx(1.0, abs=1e-9)


def test_overwrite_delta_rule_with_half_beta_blends():
    # S = β v1 after the first write; then + β (v2 − β v1): (1 − β) β v1 + β v2 = 0.25 v1 + 0.5 v2
    r = lab.overwrite(ORTHO, lab.Gates(alpha=1.0, beta=0.5))
    assert (r.coef_v1["deltanet"], r.coef_v2["deltanet"]) == pytest.approx((0.25, 0.5), abs=1e-9)
    assert "deltanet" not in r.recovered


def test_overwrite_softmax_averages_and_the_hybrid_falls_back_to_kda():
    r = lab.overwrite(ORTHO)
    assert (r.coef_v1["softmax"], r.coef_v2["softmax"]) == pytest.approx((0.5, 0.5), abs=EXACT)
    assert r.softmax_confidence == pytest.approx(0.5, abs=EXACT)
    assert not r.hybrid_used_softmax
    np.testing.assert_array_equal(r.retrieved["hybrid"], r.retrieved["kda"])


def test_overwrite_summary_follows_the_outcome():
    good = lab.summary(lab.overwrite(ORTHO, lab.Gates(alpha=0.95, beta=1.0)))
    assert good.startswith("DeltaNet, Gated DeltaNet, KDA and Hybrid (KDA + softmax) recovered v2")
    assert "Linear attention (1.00·v1 + 1.00·v2)" in good
    half = lab.summary(lab.overwrite(ORTHO, lab.Gates(alpha=1.0, beta=0.5)))
    assert half.startswith("No mechanism recovered v2")
    assert "DeltaNet (0.25·v1 + 0.50·v2)" in half


def test_mutation_additive_deltanet_fails_the_overwrite_check(mutate):
    mutate("deltanet", additive_instead_of_delta)
    r = lab.overwrite(ORTHO)
    with pytest.raises(AssertionError, match="deltanet should return v2"):
        check_delta_overwrites(r)
    assert lab.summary(r).startswith("Gated DeltaNet, KDA and Hybrid (KDA + softmax) recovered v2")


def test_mutation_delta_linear_attention_fails_the_blend_check(mutate):
    mutate("linear_attention", lambda q, k, v, **kw: deltanet(q, k, v, torch.ones_like(q[..., 0]), scale=1.0))
    with pytest.raises(AssertionError):
        check_additive_blends(lab.overwrite(ORTHO))


# ---- 2. capacity -------------------------------------------------------------------------------------------------


def check_softmax_flat(r: lab.CapacityResult, tol: float = EXACT) -> None:
    worst = float(r.error["softmax"].max())
    assert worst < tol, f"softmax recall error should stay ~0 for every N, max {worst:.3g}"
    assert r.capacity["softmax"] == int(r.n[-1])


def check_write_rules_past_capacity(r: lab.CapacityResult) -> None:
    d = r.settings.d_k
    for m in ("linear_attention", "deltanet"):
        assert r.error[m][:d].max() < 1e-9, f"{m} should be exact up to N = d_k with orthonormal keys"
        assert r.capacity[m] == d
    # additive: everything blurs alike; delta: the last d_k pairs exact, the older ones lost
    la, dn = "linear_attention", "deltanet"
    assert r.recent_error[la] > lab.LOST and r.old_error[la] > lab.LOST
    assert abs(r.recent_error[la] - r.old_error[la]) < lab.RECENT_VS_OLD
    assert r.recent_error[dn] < 1e-9, f"the delta rule should keep its last d_k pairs, error {r.recent_error[dn]:.3g}"
    assert r.old_error[dn] > lab.LOST


@pytest.mark.parametrize(
    "settings, tol",
    [(ORTHO, EXACT), (RANDOM, EXACT), (lab.LabSettings(noise=0.2), 1e-4)],  # noisy cues: measured 3.5e-6
    ids=["ortho", "random", "noisy"],
)
def test_capacity_softmax_stays_flat(settings, tol):
    check_softmax_flat(lab.capacity(settings), tol)


def test_capacity_additive_blurs_delta_keeps_the_recent():
    r = lab.capacity(ORTHO)
    check_write_rules_past_capacity(r)
    text = lab.summary(r)
    assert "Linear attention blurs old and recent items alike" in text
    assert "DeltaNet keeps its most recent 16 items" in text
    assert "Softmax attention's error stays flat" in text


def test_capacity_random_keys_degrade_from_the_start():
    r = lab.capacity(RANDOM)
    la = r.error["linear_attention"]
    assert la[0] < 1e-12 and la[1] > 0.1  # one pair is exact; the second already crosstalks
    assert la[-1] > la[15] > la[3]
    assert r.accuracy["softmax"].min() == 1.0


def test_capacity_gated_at_alpha_one_equals_the_ungated_parent():
    r = lab.capacity(ORTHO, lab.Gates(alpha=1.0))
    np.testing.assert_allclose(r.error["mamba2"], r.error["linear_attention"], atol=1e-12)
    np.testing.assert_allclose(r.error["gated_deltanet"], r.error["deltanet"], atol=1e-12)


def test_mutation_additive_deltanet_fails_the_capacity_check(mutate):
    mutate("deltanet", additive_instead_of_delta)
    with pytest.raises(AssertionError, match="delta rule should keep"):
        check_write_rules_past_capacity(lab.capacity(ORTHO))


def test_mutation_blurry_softmax_fails_the_flatness_check(monkeypatch):
    monkeypatch.setattr(lab.common, "SHARP_SCALE", 1.0)  # softmax at scale 1 averages instead of matching
    with pytest.raises(AssertionError, match="softmax recall error"):
        check_softmax_flat(lab.capacity(ORTHO))


# ---- 3. topic switch ---------------------------------------------------------------------------------------------


GATED = tuple(m.key for m in mechanisms.linear_mechanisms() if m.gate != "none")  # mamba2, gla, gated_deltanet, kda


def check_gates_forget_a(r: lab.TopicSwitchResult) -> None:
    for m in GATED:
        assert abs(r.a_kept[m]) < lab.FORGOTTEN, f"{m} should have forgotten topic A, kept {r.a_kept[m]:.3f}"
        assert r.b_error[m] == pytest.approx(r.b_error_alone[m], abs=1e-9)  # as if A had never been written
    assert r.a_kept["linear_attention"] > 0.9
    assert r.b_error["linear_attention"] - r.b_error_alone["linear_attention"] > lab.LOST  # A interferes


def test_topic_switch_gates_forget_a():
    r = lab.topic_switch(ORTHO, lab.Gates(alpha_reset=0.0))
    check_gates_forget_a(r)
    assert set(r.forgot_a) == set(GATED)
    assert r.interfered == ("linear_attention",)
    assert r.a_kept["softmax"] == pytest.approx(1.0, abs=EXACT)
    # the delta rule overwrote A only along B's n_b = d_k / 2 directions: about half of A is left
    assert 0.25 < r.a_kept["deltanet"] < 0.75


def test_topic_switch_sentence_flips_without_the_reset():
    with_reset = lab.summary(lab.topic_switch(ORTHO, lab.Gates(alpha_reset=0.0)))
    assert with_reset.startswith("After the switch Mamba-2, GLA, Gated DeltaNet and KDA forgot topic A")
    r = lab.topic_switch(ORTHO, lab.Gates(alpha_reset=1.0))
    assert r.forgot_a == ()
    assert lab.summary(r).startswith("No mechanism forgot topic A")
    assert r.a_kept["gated_deltanet"] == pytest.approx(r.a_kept["deltanet"], abs=1e-12)


def test_topic_switch_random_keys_interfere_with_the_ungated():
    r = lab.topic_switch(RANDOM, lab.Gates(alpha_reset=0.0))
    assert "linear_attention" in r.interfered
    assert r.b_error["gated_deltanet"] == pytest.approx(r.b_error_alone["gated_deltanet"], abs=1e-9)


def test_mutation_ungated_gdn_fails_the_forgetting_check(mutate):
    mutate("gated_deltanet", gdn_without_gate)
    with pytest.raises(AssertionError, match="gated_deltanet should have forgotten"):
        check_gates_forget_a(lab.topic_switch(ORTHO, lab.Gates(alpha_reset=0.0)))


# ---- 4. per-channel retention ------------------------------------------------------------------------------------


def check_kda_keeps_long_facts(r: lab.RetentionResult) -> None:
    assert r.long_error["kda"] < EXACT, f"KDA's slow channels should keep the long facts, error {r.long_error['kda']}"
    assert r.long_error["gated_deltanet"] > 0.9
    # the price: its fast channels forget the recent facts faster than the single gate
    assert r.recent_error["kda"] > r.recent_error["gated_deltanet"] + lab.MARGIN


def test_kda_gates_have_the_same_average_decay():
    for gates in (lab.RETENTION_GATES, lab.Gates(alpha=0.7, alpha_slow=0.95, slow_fraction=0.25)):
        for d_k in (2, 5, 16):
            alphas = gates.channel_alpha(d_k)
            assert np.log(alphas).mean() == pytest.approx(math.log(gates.alpha), abs=1e-12)
            assert 1 <= gates.n_slow(d_k) <= d_k - 1
            assert (alphas[: gates.n_slow(d_k)] == gates.alpha_slow).all()


def test_retention_kda_keeps_the_long_facts_gdn_loses_them():
    r = lab.retention(ORTHO)
    check_kda_keeps_long_facts(r)
    assert lab.summary(r).startswith("At the same average decay")
    assert "KDA kept the long-lived facts (error 0.00) that Gated DeltaNet's single gate let fade" in lab.summary(r)
    assert r.retention["KDA slow channels"][-1] == 1.0
    np.testing.assert_allclose(r.long_error_curve["kda"], 0.0, atol=EXACT)


def test_retention_kda_with_equal_channels_is_gdn():
    r = lab.retention(ORTHO, lab.Gates(alpha=0.9, alpha_slow=0.9))
    assert r.long_error["kda"] == pytest.approx(r.long_error["gated_deltanet"], abs=1e-12)
    assert r.recent_error["kda"] == pytest.approx(r.recent_error["gated_deltanet"], abs=1e-12)
    assert "KDA and Gated DeltaNet kept the long-lived facts equally well" in lab.summary(r)


def test_mutation_kda_with_a_single_gate_fails_the_retention_check(mutate):
    mutate("kda", kda_with_mean_gate)
    with pytest.raises(AssertionError, match="slow channels should keep"):
        check_kda_keeps_long_facts(lab.retention(ORTHO))


# ---- 5. hybrid retrieval -----------------------------------------------------------------------------------------


def check_hybrid_recovers_the_needle(r: lab.NeedleResult) -> None:
    assert r.final_error["kda"] > lab.LOST, "past capacity, pure KDA should have lost the needle"
    assert r.final_error["hybrid"] < EXACT, f"the hybrid should recover the needle, error {r.final_error['hybrid']}"
    assert r.hybrid_used_softmax[-1] and r.correct["hybrid"].all()


@pytest.mark.parametrize("settings", [ORTHO, RANDOM, lab.LabSettings(noise=0.3)], ids=["ortho", "random", "noisy"])
def test_needle_hybrid_recovers_what_kda_lost(settings):
    r = lab.needle(settings)
    check_hybrid_recovers_the_needle(r)
    assert lab.summary(r).startswith("After 48 fillers (3.0× d_k), pure KDA has lost the needle")


def test_needle_below_capacity_kda_still_holds_it():
    # no decay and fewer than d_k orthonormal fillers: nothing overlaps the needle
    r = lab.needle(ORTHO, lab.Gates(), n_fill=ORTHO.d_k - 1)
    assert r.final_error["kda"] < 1e-9
    assert "pure KDA still holds the needle" in lab.summary(r)
    assert r.error["kda"][ORTHO.d_k - 1] < 1e-9 and r.error["kda"][0] < 1e-12


def test_mutation_hybrid_that_never_trusts_its_cache_fails(monkeypatch):
    monkeypatch.setattr(lab.common, "HYBRID_CONFIDENCE", 1.1)  # no attention weight can reach it: always KDA's read
    r = lab.needle(ORTHO)
    with pytest.raises(AssertionError, match="hybrid should recover"):
        check_hybrid_recovers_the_needle(r)
    assert "fell back to KDA" in lab.summary(r)


# ---- the machinery -----------------------------------------------------------------------------------------------


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
    S = {m: np.zeros((K, K)) for m in ("linear_attention", "deltanet", "mamba2", "gated_deltanet", "kda")}
    for t in range(T):
        decay = {"linear_attention": 1.0, "deltanet": 1.0, "mamba2": alpha[t], "gated_deltanet": alpha[t]}
        for m in S:
            Sp = (a_kda[t][:, None] if m == "kda" else decay[m]) * S[m]
            u = v[t] if m in ("linear_attention", "mamba2") else gates.beta * (v[t] - Sp.T @ k[t])
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


@pytest.mark.parametrize("experiment", [lab.overwrite, lab.capacity, lab.topic_switch, lab.retention, lab.needle])
def test_each_experiment_is_fast_at_its_defaults(experiment):
    # budget 0.3 s on 2 idle cores (measured 10–150 ms); the bound leaves room for a loaded CI machine
    experiment()
    best = min(_seconds(experiment) for _ in range(3))
    assert best < 1.5, f"{experiment.__name__} took {best:.2f} s"


def _seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
