"""The public ops of the linear mechanisms (lineage.mechanisms): each against its reference, reductions between
neighbours in the grid, state splitting, causality, dtypes."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from lineage.mechanisms import mechanism
from lineage.numerics import rel_rms
from lineage.ops.deltanet import deltanet
from lineage.ops.gated_deltanet import gated_deltanet
from lineage.ops.linear_attention import NORMALIZER_EPS, linear_attention
from lineage.ops.mamba2 import mamba2, mamba2_ssd
from lineage.ops.recurrence import recurrent_memory
from tests.util import (
    DTYPE_NAME,
    MODES,
    STAGE_CELL,
    STAGES,
    assert_close,
    call_stage,
    stage_inputs,
)


def time_slice(x, start, stop=None):
    """The steps [start:stop] of every per-step input (the initial state is kept as is)."""
    return {n: t if t is None or n == "initial_state" else t[:, :, start:stop] for n, t in x.items()}


def linear_attention_reference(q, k, v, initial_state, scale):
    """Normalised causal linear attention as a quadratic form:
    o_t = scale φ(q_t)ᵀ (S_0 + Σ_{s≤t} φ(k_s) v_sᵀ) / (scale φ(q_t)ᵀ (z_0 + Σ_{s≤t} φ(k_s)) + ε)."""
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    S0, z0 = initial_state[..., :-1], initial_state[..., -1]
    A = scale * torch.tril(phi_q @ phi_k.transpose(-2, -1))  # (B, H, T, T): causal, no softmax
    numerator = A @ v + scale * phi_q @ S0
    denominator = A.sum(-1) + scale * (phi_q @ z0[..., None])[..., 0] + NORMALIZER_EPS
    S = torch.cat([S0 + phi_k.transpose(-2, -1) @ v, z0[..., None] + phi_k.sum(-2)[..., None]], dim=-1)
    return numerator / denominator[..., None], S


STAGE_MODES = [pytest.param(s, m, id=f"{s}-{m}") for s, m in itertools.product(STAGES, MODES)]


# ---- 1. each stage op against its reference ---------------------------------------------------------------


@pytest.mark.parametrize("stage, mode", STAGE_MODES)
def test_stage_equals_reference(stage, mode):
    x = stage_inputs(stage)
    o, S = call_stage(stage, x, mode=mode, chunk_size=16)
    m = mechanism(stage)
    if stage == "linear_attention":
        o_ref, S_ref = linear_attention_reference(x["q"], x["k"], x["v"], x["initial_state"], scale=8**-0.5)
    elif m.reference is not None:  # an op whose tensors the shared recurrence does not take: its entry's own loop
        o_ref, S_ref = m.reference(*m.op_args(x), initial_state=x["initial_state"], output_final_state=True)
    else:
        rule, _ = STAGE_CELL[stage]
        o_ref, S_ref = recurrent_memory(
            x["q"],
            x["k"],
            x["v"],
            x["g"],
            x["beta"],
            rule=rule,
            initial_state=x["initial_state"],
            output_final_state=True,
        )
    assert_close(o, o_ref, what=f"{stage} output")
    assert_close(S, S_ref, what=f"{stage} final state")


# ---- 2. reductions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_gated_deltanet_with_zero_gate_is_deltanet(mode):
    x = stage_inputs("gated_deltanet")
    kw = dict(initial_state=x["initial_state"], output_final_state=True, mode=mode, chunk_size=16)
    o, S = gated_deltanet(x["q"], x["k"], x["v"], torch.zeros_like(x["g"]), x["beta"], **kw)
    o_ref, S_ref = deltanet(x["q"], x["k"], x["v"], x["beta"], **kw)
    assert_close(o, o_ref, what="output")
    assert_close(S, S_ref, what="final state")


@pytest.mark.parametrize("mode", MODES)
def test_mamba2_with_zero_gate_is_unnormalised_linear_attention(mode):
    x = stage_inputs("mamba2")
    kw = dict(initial_state=x["initial_state"], output_final_state=True, mode=mode, chunk_size=16)
    o, S = mamba2(x["q"], x["k"], x["v"], torch.zeros_like(x["g"]), **kw)
    o_ref, S_ref = linear_attention(x["q"], x["k"], x["v"], feature_map="identity", normalize=False, **kw)
    assert_close(o, o_ref, what="output")
    assert_close(S, S_ref, what="final state")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("channel_stage, scalar_stage", [("kda", "gated_deltanet"), ("gla", "mamba2")])
def test_per_channel_gate_equal_across_channels_is_the_scalar_gate(channel_stage, scalar_stage, mode):
    x = stage_inputs(scalar_stage)
    o_ref, S_ref = call_stage(scalar_stage, x, mode=mode, chunk_size=16)
    x["g"] = x["g"][..., None].expand(*x["g"].shape, x["q"].shape[-1])  # (B, H, T, K), equal along K
    o, S = call_stage(channel_stage, x, mode=mode, chunk_size=16)
    assert_close(o, o_ref, what="output")
    assert_close(S, S_ref, what="final state")


DELTA_MODES = [
    pytest.param(s, m, id=f"{s}-{m}") for s, m in itertools.product(("deltanet", "gated_deltanet", "kda"), MODES)
]


@pytest.mark.parametrize("stage, mode", DELTA_MODES)
def test_zero_beta_leaves_the_state_unchanged(stage, mode):
    x = stage_inputs(stage)
    x["beta"] = torch.zeros_like(x["beta"])
    if x["g"] is not None:
        x["g"] = torch.zeros_like(x["g"])
    o, S = call_stage(stage, x, mode=mode, chunk_size=16, scale=0.5)
    assert_close(S, x["initial_state"], what="final state")
    assert_close(o, torch.einsum("bhtk,bhkv->bhtv", 0.5 * x["q"], x["initial_state"]), what="reads of S_0")


@pytest.mark.parametrize("stage, mode", DELTA_MODES)
def test_delta_write_with_unit_key_and_full_beta_is_read_back_exactly(stage, mode):
    # The last step writes (k*, v*) with ‖k*‖ = 1, β = 1 and reads at k*; step 2 wrote another value at k*,
    # and S_0 is random, so the memory held something else there. Decay happens before the write, so any gate
    # works: S_tᵀ k* = S'ᵀk* + (v* − S'ᵀk*)(k*ᵀk*) = v*.
    x = stage_inputs(stage, 1, 2, 6)
    k_star = x["k"][:, :, 0]
    x["k"][:, :, 2] = x["k"][:, :, -1] = x["q"][:, :, -1] = k_star
    x["beta"][:, :, -1] = 1.0
    _, S_before = call_stage(stage, time_slice(x, 0, -1), mode=mode, chunk_size=4, scale=1.0)
    v_star = x["v"][:, :, -1]
    assert rel_rms(torch.einsum("bhkv,bhk->bhv", S_before, k_star), v_star) > 0.1, "k* was already holding v*"
    o, _ = call_stage(stage, x, mode=mode, chunk_size=4, scale=1.0)
    assert_close(o[:, :, -1], v_star, tol=1e-12, what="read at k* after writing v*")


@pytest.mark.parametrize("mode", MODES)
def test_mamba2_ssd_is_mamba2_with_the_mapping_done_by_hand(mode):
    batch, H, G, T, N, P = 2, 4, 2, 21, 5, 3
    gen = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    x, dt, A = randn(batch, H, T, P), F.softplus(randn(batch, H, T)), -torch.exp(randn(H))
    B, C, S0 = randn(batch, G, T, N), randn(batch, G, T, N), randn(batch, H, N, P)
    kw = dict(initial_state=S0, output_final_state=True, mode=mode, chunk_size=8)
    y, S = mamba2_ssd(x, dt, A, B, C, **kw)
    group = torch.arange(H) // (H // G)  # heads h·G/H .. share one B, C group
    q, k = C[:, group], B[:, group]  # C plays q, B plays k
    v, g = x * dt[..., None], A[None, :, None] * dt  # Δ·x plays v, Δ·A the log-gate
    y_ref, S_ref = mamba2(q, k, v, g, scale=1.0, **kw)
    assert_close(y, y_ref, what="output")
    assert_close(S, S_ref, what="final state")


# ---- 3. splitting -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("stage, mode", STAGE_MODES)
def test_two_calls_through_the_returned_state_equal_one_pass(stage, mode):
    x = stage_inputs(stage, 2, 2, 37)
    t = 13  # the split falls inside a chunk of 8
    o, S = call_stage(stage, x, mode=mode, chunk_size=8)
    o_first, S_mid = call_stage(stage, time_slice(x, 0, t), mode=mode, chunk_size=8)
    second = time_slice(x, t) | {"initial_state": S_mid}
    o_second, S_end = call_stage(stage, second, mode=mode, chunk_size=8)
    assert_close(torch.cat([o_first, o_second], dim=2), o, what="outputs")
    assert_close(S_end, S, what="final state")


# ---- 4. causality -----------------------------------------------------------------------------------------

CAUSAL_CASES = [pytest.param(s, m, id=f"{s}-{m}") for s, m in itertools.product(STAGES, ("chunk", "parallel"))]


@pytest.mark.parametrize("stage, mode", CAUSAL_CASES)
def test_outputs_do_not_depend_on_later_inputs(stage, mode):
    t = 10  # last unchanged step, inside the chunk [8, 16)
    x = stage_inputs(stage, 1, 2, 24)
    other = stage_inputs(stage, 1, 2, 24, seed=1)
    changed = {
        n: a if n == "initial_state" or a is None else torch.cat([a[:, :, : t + 1], other[n][:, :, t + 1 :]], dim=2)
        for n, a in x.items()
    }
    o, _ = call_stage(stage, x, mode=mode, chunk_size=8)
    o_changed, _ = call_stage(stage, changed, mode=mode, chunk_size=8)
    assert_close(o_changed[:, :, : t + 1], o[:, :, : t + 1], what="outputs up to t")
    assert rel_rms(o_changed[:, :, t + 1 :], o[:, :, t + 1 :]) > 0.1, "the change did not reach later outputs"


# ---- 6. dtypes --------------------------------------------------------------------------------------------

LOW_PRECISION = [
    pytest.param(s, d, id=f"{s}-{DTYPE_NAME[d]}") for s, d in itertools.product(STAGES, (torch.bfloat16, torch.float16))
]


@pytest.mark.parametrize("stage, dtype", LOW_PRECISION)
def test_low_precision_inputs_give_the_fp32_result(stage, dtype):
    x32 = stage_inputs(stage, dtype=torch.float32)
    o_ref, S_ref = call_stage(stage, x32)
    x = {n: None if a is None else a.to(dtype) for n, a in x32.items()}
    o, S = call_stage(stage, x)
    assert o.dtype == dtype and S.dtype == torch.float32  # computed in fp32, returned in v's dtype
    assert torch.isfinite(o).all()
    assert_close(o, o_ref, dtype=dtype, what="output")
    assert_close(S, S_ref, dtype=dtype, what="final state")


@pytest.mark.parametrize("stage", STAGES)
def test_fp64_stays_fp64_and_output_dtype_follows_v(stage):
    x = stage_inputs(stage)
    o, S = call_stage(stage, x)
    assert o.dtype == S.dtype == torch.float64
    for v_dtype, other_dtype in ((torch.bfloat16, torch.float32), (torch.float32, torch.bfloat16)):
        mixed = {n: None if a is None else a.to(v_dtype if n == "v" else other_dtype) for n, a in x.items()}
        o, _ = call_stage(stage, mixed)
        assert o.dtype == v_dtype


def test_fp16_linear_attention_normaliser_does_not_overflow():
    # fp16 holds at most 65504. The normaliser scale·φ(q_t)ᵀ Σ_{s≤t} φ(k_s) grows ~ t (≈ 4.5 per step here), so
    # it passes 65504 after ≈ 12000 steps although the output itself stays O(1): normalising must happen in fp32
    # (done so, the fp16 output is within 3.3e-4 of the fp32 one here).
    x32 = stage_inputs("linear_attention", 1, 1, 16384, 16, 16, dtype=torch.float32, state=False)
    o_ref, _ = call_stage("linear_attention", x32)
    x = {n: None if a is None else a.half() for n, a in x32.items()}
    o, _ = call_stage("linear_attention", x)
    assert_close(o, o_ref, dtype=torch.float16, what="fp16 output")
