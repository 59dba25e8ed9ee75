"""lineage.inputs: the recipes for each purpose draw what they say from the generator they are given, and
run_mechanism, the one display path, is the table's Mechanism.call (or its reference loop, traced)."""

from __future__ import annotations

import pytest
import torch

from lineage.inputs import (
    RANDOM_GATE,
    GateDraw,
    GateRule,
    as_recurrence,
    layer_inputs,
    random_inputs,
    rule_inputs,
    run_mechanism,
)
from lineage.mechanisms import linear_mechanisms, softmax_mechanisms
from lineage.ops.recurrence import MemoryTrace
from tests.util import assert_close

LINEAR = linear_mechanisms()


def test_random_inputs_are_seeded_shaped_and_ranged():
    x = random_inputs(2, 3, 7, 4, 5, torch.Generator().manual_seed(0))
    again = random_inputs(2, 3, 7, 4, 5, torch.Generator().manual_seed(0))
    assert all(torch.equal(x[name], again[name]) for name in x)
    assert [tuple(t.shape) for t in x.values()] == [(2, 3, 7, 4), (2, 3, 7, 4), (2, 3, 7, 5), (2, 3, 7), (2, 3, 4, 5)]
    assert all(t.dtype == torch.float64 for t in x.values())
    torch.testing.assert_close(x["k"].norm(dim=-1), torch.ones(2, 3, 7, dtype=torch.float64))
    assert ((x["beta"] >= 0) & (x["beta"] < 1)).all()
    fp32 = random_inputs(1, 1, 3, 2, 2, torch.Generator().manual_seed(0), dtype=torch.float32)
    assert all(t.dtype == torch.float32 for t in fp32.values())


def test_the_gate_draw_names_its_strength_and_the_random_gate_is_mild():
    assert GateDraw(4).label == "logσ(x)/4"
    assert GateDraw(1, 0.05).label == "logσ(x)/1 + 5% wipes"
    assert RANDOM_GATE.label == "logσ(x+2)/1"
    g = RANDOM_GATE.draw((2, 2, 500), torch.Generator().manual_seed(0), dtype=torch.float64)
    assert g.dtype == torch.float64 and (g < 0).all()
    assert 0.7 < float(torch.exp(g).median()) < 0.99


@pytest.mark.parametrize("m", LINEAR, ids=lambda m: m.key)
def test_layer_inputs_take_the_layers_gate_and_rule_and_a_state_on_request(m):
    x = layer_inputs(m, 2, 5, 4, torch.Generator().manual_seed(1), state=True)
    assert (x["g"] is None) == (m.gate == "none") and (x["beta"] is None) == (not m.takes("beta"))
    assert (x["beta"] is None) == (m.rule != "delta" or bool(m.unit_gates))  # Gated DeltaNet-2: erase, write
    for u in m.unit_gates:  # σ(N(0, 1)), as its layer's σ(W x)
        gate = x[u.name]
        assert gate.shape == m.input_shape(u.name, {"B": 1, "H": 2, "T": 5, "K": 4, "V": 4})
        assert gate.min() > 0 and gate.max() < 1
    assert x["initial_state"].shape == (1, 2, 4, 4)
    assert "initial_state" not in layer_inputs(m, 2, 5, 4, torch.Generator().manual_seed(1))
    with pytest.raises(ValueError, match="heads must be >= 1"):
        layer_inputs(m, 0, 5, 4, torch.Generator())


def test_rule_inputs_draw_the_same_q_k_v_whatever_the_rule():
    additive = [m for m in LINEAR if m.rule == "additive"]
    runs = [
        rule_inputs(m, 6, 3, 2, 4, GateRule(alpha=a, alpha_jitter=j)) for m in additive for a, j in ((0.5, 0), (1, 2))
    ]
    for q, k, v, _, _ in runs[1:]:
        assert torch.equal(q, runs[0][0]) and torch.equal(k, runs[0][1]) and torch.equal(v, runs[0][2])
    gated = next(m for m in LINEAR if m.gate != "none")
    assert not rule_inputs(gated, 6, 3, 2, 4, GateRule(alpha=1.0, alpha_min=1.0))[3].any()  # the gate off: g = 0
    with pytest.raises(ValueError, match="alpha must lie in"):
        rule_inputs(gated, 6, 3, 2, 4, GateRule(alpha=1.5))


@pytest.mark.parametrize("m", LINEAR, ids=lambda m: m.key)
def test_as_recurrence_maps_only_what_the_layer_maps(m):
    q, k, v = (torch.randn(1, 1, 4, 3, generator=torch.Generator().manual_seed(i)) for i in range(3))
    rq, rk, rv = as_recurrence(m, q, k, v, "relu")
    if m.layer.feature_map is None and not m.layer.normalize:
        assert rq is q and rk is k and rv is v
    else:
        assert rv.shape[-1] == v.shape[-1] + int(m.layer.normalize)
        assert torch.equal(rq, q.relu())  # the page's φ replaces the layer's


@pytest.mark.parametrize("m", LINEAR, ids=lambda m: m.key)
def test_run_mechanism_is_the_tables_call_and_its_traced_loop(m):
    x = random_inputs(1, 2, 9, 4, 3, torch.Generator().manual_seed(2))
    g = RANDOM_GATE.draw((1, 2, 9, 4) if m.gate == "channel" else (1, 2, 9), torch.Generator().manual_seed(3))
    q, k, v, beta = x["q"], x["k"], x["v"], x["beta"]
    o, _ = run_mechanism(m, q, k, v, g.double(), beta, mode="chunk", chunk_size=4)
    expected, _ = m.call(q, k, v, g.double(), beta, mode="chunk", chunk_size=4)
    assert torch.equal(o, expected)
    rq, rk, rv = as_recurrence(m, q, k, v)
    ref, _, trace = run_mechanism(m, rq, rk, rv, g.double(), beta, trace=True)
    assert isinstance(trace, MemoryTrace) and trace.states.shape == (1, 2, 9, 4, rv.shape[-1])
    bare, _ = run_mechanism(m, rq, rk, rv, g.double(), beta, bare=True, mode="parallel")
    assert_close(bare, ref, what=m.key)
    with pytest.raises(ValueError, match="not a linear-memory mechanism"):
        run_mechanism(softmax_mechanisms()[0], q, k, v)


def test_the_bare_form_on_raw_inputs_is_the_labs_memory():
    """The lab's runs: the bare form on raw q, k, v at scale 1 holds S = Σ k vᵀ and reads o_t = S_tᵀ q_t."""
    m = next(m for m in LINEAR if m.rule == "additive" and m.gate == "none")
    x = random_inputs(1, 1, 5, 3, 2, torch.Generator().manual_seed(4))
    q, k, v = x["q"][0, 0], x["k"][0, 0], x["v"][0, 0]
    o, S = run_mechanism(m, *(x[n] for n in "qkv"), bare=True, scale=1.0, mode="recurrent", output_final_state=True)
    torch.testing.assert_close(S[0, 0], k.T @ v)
    torch.testing.assert_close(o[0, 0, -1], S[0, 0].T @ q[-1])
