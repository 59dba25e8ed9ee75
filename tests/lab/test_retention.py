"""Memory lab, per-channel retention: KDA's slow channels keep the long-lived facts that one gate lets fade."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lineage import lab
from tests.lab.util import EXACT, ORTHO, kda_with_mean_gate


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
