"""Memory lab, capacity: softmax stays flat, additive writes blur, the delta rule keeps the recent; each check fails
when its mechanism is broken."""

from __future__ import annotations

import numpy as np
import pytest

from lineage import lab
from lineage.plots import capacity_curves
from tests.lab.util import EXACT, ORTHO, RANDOM, additive_instead_of_delta


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


def test_the_d_k_label_sits_where_no_curve_runs():
    """The capacity figure labels its N = d_k line where, up to d_k, no curve runs: left of the line, at the edge of
    the panel away from the curves (error 0 at the bottom: label at the top; accuracy 1 at the top: at the bottom)."""
    r = lab.capacity(ORTHO)
    fig = capacity_curves(r)
    marks = [a for a in fig.layout.annotations if a.text == f"d_k = {r.settings.d_k}"]
    assert len(marks) == 2
    for mark in marks:
        assert mark.xanchor == "right" and mark.x == r.settings.d_k  # left of the line
        axis = "y" if mark.yref == "y domain" else "y2"
        values = np.concatenate(
            [np.asarray(t.y, float)[np.asarray(t.x) <= r.settings.d_k] for t in fig.data if t.yaxis == axis]
        )
        lo, hi = fig.layout[f"yaxis{axis[1:]}"].range or (0.0, max(float(np.nanmax(t.y)) for t in fig.data))
        middle = (lo + hi) / 2
        assert (values < middle).all() if mark.yanchor == "top" else (values > middle).all(), (mark.yanchor, axis)
