"""Kimi K3's gate lower bound (``gate_lower_bound``, lineage.ops.kda): the bounded gate is fla's
lower_bound · sigmoid(x) written on a log-space gate, every form of the bounded op equals the loop on it, and the
bound keeps the chunked form's decay ratios inside fp32's range where an unbounded wipe leaves its range."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from lineage.ops.kda import bounded_gate, kda
from lineage.ops.recurrence import recurrent_memory
from lineage.schedules import KIMI_K3_CONFIG
from tests.util import assert_close

BOUND = KIMI_K3_CONFIG["gate_lower_bound"]  # −5.0, from K3's config
FP32_MAX_EXPONENT = math.log(torch.finfo(torch.float32).max)  # 88.72: e^x overflows fp32 past this


def raw_gate(shape, gen, scale=3.0, wipes=True) -> torch.Tensor:
    """Raw pre-activations x (fla's gate input) of a given spread; every 7th step x = +inf, a wipe asked for."""
    x = scale * torch.randn(*shape, generator=gen, dtype=torch.float64)
    if wipes:
        x[:, :, ::7] = float("inf")
    return x


def qkvb(B, H, T, K, V, gen):
    q = F.normalize(torch.randn(B, H, T, K, generator=gen, dtype=torch.float64), dim=-1)
    k = F.normalize(torch.randn(B, H, T, K, generator=gen, dtype=torch.float64), dim=-1)
    v = torch.randn(B, H, T, V, generator=gen, dtype=torch.float64)
    beta = torch.rand(B, H, T, generator=gen, dtype=torch.float64)
    return q, k, v, beta


def test_bounded_gate_is_flas_lower_bound_sigmoid():
    """fla/ops/kda/gate.py naive_kda_lowerbound_gate (A_log None, no bias): g = lower_bound · sigmoid(x)."""
    x = torch.linspace(-40, 40, 2001, dtype=torch.float64)
    fla = BOUND * torch.sigmoid(x)
    assert_close(bounded_gate(BOUND * F.softplus(x), BOUND), fla, torch.float64)


def test_bounded_gate_properties():
    g = torch.tensor([0.0, -1e-6, -0.1, -1.0, -5.0, -50.0, -1e4, -math.inf], dtype=torch.float64)
    b = bounded_gate(g, BOUND)
    assert b[0] == 0  # no forgetting stays no forgetting
    assert torch.all(b >= g) and torch.all(b > BOUND - 1e-12) and torch.all(b <= 0)  # never forgets more than asked
    assert b[-1] == BOUND  # a wipe becomes the bound: α = e^-5, the smallest α it allows
    assert b[1] == pytest.approx(-1e-6, rel=1e-6)  # a mild gate is almost unchanged (slope 1 at 0)
    assert torch.all(b[1:] <= b[:-1]) and torch.all(b[1:5] < b[:4])  # monotone (saturating at the bound)
    assert math.exp(b.min()) == pytest.approx(math.exp(BOUND)) and math.exp(BOUND) == pytest.approx(0.006738, 1e-4)


@pytest.mark.parametrize("bound", [0.0, 1.0, -math.inf, math.nan, True, "-5"])
def test_bad_bounds_are_refused(bound):
    q, k, v, beta = qkvb(1, 1, 4, 3, 2, torch.Generator().manual_seed(0))
    g = -torch.rand(1, 1, 4, 3, dtype=torch.float64)
    with pytest.raises((ValueError, TypeError), match="gate_lower_bound must be"):
        kda(q, k, v, g, beta, gate_lower_bound=bound)


def test_a_positive_gate_is_refused_before_bounding():
    q, k, v, beta = qkvb(1, 1, 4, 3, 2, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="g is a log-space gate"):
        kda(q, k, v, torch.full((1, 1, 4, 3), 0.5, dtype=torch.float64), beta, gate_lower_bound=BOUND)


@pytest.mark.parametrize("T, C", [(1, 16), (37, 7), (64, 16), (130, 64)], ids=lambda x: str(x))
@pytest.mark.parametrize("mode", ["recurrent", "chunk", "parallel"])
def test_every_form_of_the_bounded_op_is_the_loop_on_the_bounded_gate(mode, T, C):
    gen = torch.Generator().manual_seed(T)
    B, H, K, V = 2, 2, 8, 5
    q, k, v, beta = qkvb(B, H, T, K, V, gen)
    x = raw_gate((B, H, T, K), gen)
    S0 = torch.randn(B, H, K, V, generator=gen, dtype=torch.float64)
    ref_o, ref_S = recurrent_memory(
        q, k, v, BOUND * torch.sigmoid(x), beta, rule="delta", initial_state=S0, output_final_state=True
    )
    o, S = kda(q, k, v, BOUND * F.softplus(x), beta, initial_state=S0, output_final_state=True, mode=mode,
               chunk_size=C, gate_lower_bound=BOUND)  # fmt: skip
    assert_close(o, ref_o, torch.float64)
    assert_close(S, ref_S, torch.float64)


def test_the_bound_changes_the_result():
    """Not a no-op: with a wipe in the sequence the bounded and unbounded ops differ, and only the bounded one keeps
    e^-5 of what came before the wipe."""
    gen = torch.Generator().manual_seed(1)
    q, k, v, beta = qkvb(1, 1, 20, 4, 3, gen)
    g = torch.full((1, 1, 20, 4), -0.01, dtype=torch.float64)
    g[:, :, 10] = -math.inf
    o_free, _ = kda(q, k, v, g, beta, mode="recurrent")
    o_bound, _ = kda(q, k, v, g, beta, mode="recurrent", gate_lower_bound=BOUND)
    assert (o_free - o_bound).abs().max() > 1e-6
    assert_close(o_free[..., :10, :], o_bound[..., :10, :], torch.float64, tol=1e-3)  # mild gates barely move


@pytest.mark.parametrize("C", [16, 64])
@pytest.mark.parametrize("scale", [3.0, 30.0])
def test_chunked_fp32_with_a_bounded_gate_is_finite_and_matches_fp64(C, scale):
    """The chunked form in fp32 at bounded gates as strong as the bound allows (x up to +inf): finite, and equal to
    the fp64 loop within fp32's tolerance, over a long sequence (every chunk a run of near-maximal decay)."""
    gen = torch.Generator().manual_seed(2)
    B, H, T, K, V = 1, 2, 1024, 16, 8
    q, k, v, beta = qkvb(B, H, T, K, V, gen)
    x = raw_gate((B, H, T, K), gen, scale=scale)
    ref_o, ref_S = recurrent_memory(q, k, v, BOUND * torch.sigmoid(x), beta, rule="delta", output_final_state=True)
    g32 = (BOUND * F.softplus(x)).float()
    o, S = kda(q.float(), k.float(), v.float(), g32, beta.float(), output_final_state=True, mode="chunk",
               chunk_size=C, gate_lower_bound=BOUND)  # fmt: skip
    assert torch.isfinite(o).all() and torch.isfinite(S).all()
    assert_close(o, ref_o, torch.float32)
    assert_close(S, ref_S, torch.float32)


def test_the_bound_keeps_sixteen_step_decay_ratios_inside_fp32():
    """Why K3 bounds the gate: a ratio exp(G_i − G_j) over n steps is at most e^{−n·lower_bound}; with the bound a
    16-step tile (fla's sub-chunk) stays below fp32's largest number, without it one wipe leaves fp32's range."""
    steps = 16
    worst = bounded_gate(torch.full((steps,), -math.inf), BOUND).sum()  # every step as strong as allowed
    assert -worst == pytest.approx(-steps * BOUND) and -worst < FP32_MAX_EXPONENT
    assert math.isfinite(torch.exp(-worst.float()))
    assert math.floor(FP32_MAX_EXPONENT / -BOUND) == 17  # the longest tile the bound keeps in range
    unbounded = torch.full((steps,), -math.inf).sum()
    assert not math.isfinite(torch.exp(-unbounded.float()))
