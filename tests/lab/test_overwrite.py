"""Memory lab, overwrite: the delta rule returns v2, additive writes blend, softmax averages; each check fails when
its mechanism is broken."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lineage import lab
from lineage.ops.deltanet import deltanet
from tests.lab.util import DELTA, EXACT, ORTHO, RANDOM, additive_instead_of_delta


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
    assert good.startswith("DeltaNet, Gated DeltaNet, KDA, Gated DeltaNet-2 and Hybrid (KDA + softmax) recovered v2")
    assert "Linear attention (1.00·v1 + 1.00·v2)" in good
    half = lab.summary(lab.overwrite(ORTHO, lab.Gates(alpha=1.0, beta=0.5)))
    assert half.startswith("No mechanism recovered v2")
    assert "DeltaNet (0.25·v1 + 0.50·v2)" in half


def test_mutation_additive_deltanet_fails_the_overwrite_check(mutate):
    mutate("deltanet", additive_instead_of_delta)
    r = lab.overwrite(ORTHO)
    with pytest.raises(AssertionError, match="deltanet should return v2"):
        check_delta_overwrites(r)
    assert lab.summary(r).startswith("Gated DeltaNet, KDA, Gated DeltaNet-2 and Hybrid (KDA + softmax) recovered v2")


def test_mutation_delta_linear_attention_fails_the_blend_check(mutate):
    mutate("linear_attention", lambda q, k, v, **kw: deltanet(q, k, v, torch.ones_like(q[..., 0]), scale=1.0))
    with pytest.raises(AssertionError):
        check_additive_blends(lab.overwrite(ORTHO))


def test_gated_deltanet2_reads_as_kda_where_the_lab_sets_one_write_strength():
    """The lab's knobs set one β per write, which Gated DeltaNet-2 takes as its erase and its write gate on every
    channel (OpInput.unit): then it is KDA, term by term, so its reads are KDA's to rounding in every experiment."""
    for gates in (lab.Gates(alpha=0.95, beta=1.0), lab.Gates(alpha=1.0, beta=0.5)):
        r = lab.overwrite(ORTHO, gates, mechanisms=("kda", "gated_deltanet2"))
        assert r.coef_v2["gated_deltanet2"] == pytest.approx(r.coef_v2["kda"], abs=1e-12)
        assert r.coef_v1["gated_deltanet2"] == pytest.approx(r.coef_v1["kda"], abs=1e-12)
