"""Memory lab, the needle: the hybrid recovers what pure KDA lost past capacity."""

from __future__ import annotations

import pytest

from lineage import lab
from tests.lab.util import EXACT, ORTHO, RANDOM


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
