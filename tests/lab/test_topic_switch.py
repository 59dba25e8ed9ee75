"""Memory lab, topic switch: the gated mechanisms forget topic A at a reset, the ungated ones let it interfere."""

from __future__ import annotations

import pytest

from lineage import lab, mechanisms
from tests.lab.util import EXACT, ORTHO, RANDOM, gdn_without_gate

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
    assert with_reset.startswith(
        "After the switch Mamba-2, GLA, Gated DeltaNet, KDA and Gated DeltaNet-2 forgot topic A"
    )
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
