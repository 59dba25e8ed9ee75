"""Values are checked once, at the public boundary: inside ``values_checked`` the checks keep to types and shapes."""

from __future__ import annotations

import threading

import pytest
import torch

from lineage import checks
from lineage.models.hybrid import HybridConfig, HybridStack
from lineage.models.layers import LinearMemoryMixer, MixerConfig
from lineage.ops.kda import kda
from lineage.ops.linear_attention import linear_attention
from lineage.ops.mamba2 import mamba2_ssd


def kda_inputs(T=5, K=4, V=3):
    q, k = torch.randn(1, 2, T, K), torch.nn.functional.normalize(torch.randn(1, 2, T, K), dim=-1)
    return q, k, torch.randn(1, 2, T, V), -torch.rand(1, 2, T, K), torch.rand(1, 2, T)


def test_the_public_op_scans_values():
    q, k, v, g, beta = kda_inputs()
    for name, bad in (("q", q.clone().fill_(float("nan"))), ("g", g.abs() + 1), ("beta", beta + 2)):
        args = dict(q=q, k=k, v=v, g=g, beta=beta) | {name: bad}
        with pytest.raises(ValueError, match=rf"^{name}"):
            kda(**args)


def test_inside_values_checked_only_types_and_shapes_are_checked():
    q, k, v, g, beta = kda_inputs()
    with checks.values_checked():
        o, _ = kda(q, k, v, g.abs() + 1, beta + 2)  # a positive gate and β > 1 pass: the caller vouched for them
        assert o.shape == v.shape
        with pytest.raises(ValueError, match="beta must have shape"):
            kda(q, k, v, g, beta[..., :-1])
        with pytest.raises(TypeError, match="q must be a floating-point tensor"):
            kda(q.long(), k, v, g, beta)
    assert checks.scanning()
    with pytest.raises(ValueError, match="^g is a log-space gate"):
        kda(q, k, v, g.abs() + 1, beta)


def test_values_checked_holds_for_its_own_thread_only():
    seen = {}

    def other():
        seen["scanning"] = checks.scanning()

    with checks.values_checked():
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert not checks.scanning()
    assert seen["scanning"], "another session's thread must keep scanning its inputs"


def test_ops_that_call_ops_still_check_their_own_inputs_and_state():
    q, k, v = torch.randn(1, 1, 4, 3), torch.randn(1, 1, 4, 3), torch.randn(1, 1, 4, 2)
    with pytest.raises(ValueError, match="^v contains NaN"):
        linear_attention(q, k, v.clone().fill_(float("nan")))
    with pytest.raises(ValueError, match="^initial_state contains NaN"):
        linear_attention(q, k, v, initial_state=torch.full((1, 1, 3, 3), float("nan")))
    x, dt, A = torch.randn(1, 2, 4, 3), torch.rand(1, 2, 4) + 0.1, -torch.rand(2) - 0.1
    with pytest.raises(ValueError, match="^dt"):
        mamba2_ssd(x, -dt, A, q, q)
    with pytest.raises(ValueError, match="^initial_state contains NaN"):
        mamba2_ssd(x, dt, A, q, q, initial_state=torch.full((1, 2, 3, 3), float("nan")))


def test_layers_and_stacks_check_their_input_once_at_the_top():
    mixer = LinearMemoryMixer("kda", MixerConfig(d_model=8, n_heads=2, head_k=4, head_v=4, gate_rank=2))
    stack = HybridStack(HybridConfig(schedule=("kda", "mla", "mha"), d_model=8, n_heads=2, head_dim=4))
    for module in (mixer, stack):
        with pytest.raises(ValueError, match="^x contains NaN"):
            module(torch.full((1, 3, 8), float("nan")))
        y, _ = module(torch.randn(1, 3, 8))
        assert torch.isfinite(y).all()
