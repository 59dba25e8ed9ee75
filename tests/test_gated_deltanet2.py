"""Gated DeltaNet-2 (lineage.ops.gated_deltanet2): every form against a reference written from the paper's equation,
the reductions to KDA, Gated DeltaNet and GLA, state splitting, gradients, causality, trace and errors.

The reference below builds the paper's update matrices literally (arXiv 2605.22791, the Gated Delta Rule-2):
S_t = (I − k_t (b_t ⊙ k_t)ᵀ) Diag(e^{g_t}) S_{t−1} + k_t (w_t ⊙ v_t)ᵀ, o_t = S_tᵀ (scale q_t). It shares no code with
the op: the op's loop reads and corrects (u_t = w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t)), its chunked form solves a triangular
system.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lineage.ops import recurrence
from lineage.ops.gated_deltanet import gated_deltanet
from lineage.ops.gated_deltanet2 import (
    chunk_gated_deltanet2,
    gated_deltanet2,
    recurrent_gated_deltanet2,
)
from lineage.ops.gla import gla
from lineage.ops.kda import kda
from tests.util import TOL, assert_close

MODES = ("recurrent", "chunk", "parallel")


def paper_reference(q, k, v, g, b, w, scale=None, initial_state=None):
    """The Gated Delta Rule-2 as the paper writes it, one K×K update matrix per step, fp64. Returns (o, S_T)."""
    q, k, v, g, b, w = (x.double() for x in (q, k, v, g, b, w))
    B, H, T, K = q.shape
    V = v.shape[-1]
    g = g[..., None].expand(B, H, T, K) if g.dim() == 3 else g
    scale = K**-0.5 if scale is None else scale
    S = q.new_zeros(B, H, K, V) if initial_state is None else initial_state.double()
    eye = torch.eye(K, dtype=torch.float64)
    o = q.new_zeros(B, H, T, V)
    for t in range(T):
        k_t = k[:, :, t]
        erase_matrix = eye - k_t[..., :, None] * (b[:, :, t] * k_t)[..., None, :]  # I − k_t (b_t ⊙ k_t)ᵀ
        decay = torch.diag_embed(torch.exp(g[:, :, t]))  # Diag(α_t)
        S = erase_matrix @ decay @ S + k_t[..., :, None] * (w[:, :, t] * v[:, :, t])[..., None, :]
        o[:, :, t] = (S.mT @ (scale * q[:, :, t])[..., None])[..., 0]
    return o, S


def inputs(B=2, H=2, T=45, K=8, V=6, *, gate="random", gates="random", scalar=False, dtype=torch.float64, seed=0):
    """Seeded inputs: q ~ N(0, 1), unit keys, v ~ N(0, 1), a state ~ N(0, 1); the log-gate by ``gate`` (random
    log σ(x + 2), "strong" −8 every step, "mixed" −30 on every other channel, "wipe" random with one step −inf), one
    per head if ``scalar``; erase and write gates by ``gates`` ("random" uniform in [0, 1], "hard" each 0 or 1)."""
    gen = torch.Generator().manual_seed(seed)
    x = {
        "q": torch.randn(B, H, T, K, generator=gen, dtype=torch.float64),
        "k": F.normalize(torch.randn(B, H, T, K, generator=gen, dtype=torch.float64), dim=-1),
        "v": torch.randn(B, H, T, V, generator=gen, dtype=torch.float64),
    }
    g_shape = (B, H, T) if scalar else (B, H, T, K)
    if gate == "strong":
        g = torch.full(g_shape, -8.0, dtype=torch.float64)
    elif gate == "mixed":
        g = -torch.rand(g_shape, generator=gen, dtype=torch.float64) * 0.1
        g[..., ::2] = -30.0
    else:
        g = F.logsigmoid(torch.randn(g_shape, generator=gen, dtype=torch.float64) + 2.0)
        if gate == "wipe":
            g[:, :, T // 2] = -float("inf")
    x["g"] = g
    b = torch.rand(B, H, T, K, generator=gen, dtype=torch.float64)
    w = torch.rand(B, H, T, V, generator=gen, dtype=torch.float64)
    x["erase"], x["write"] = (b.round(), w.round()) if gates == "hard" else (b, w)
    x["initial_state"] = torch.randn(B, H, K, V, generator=gen, dtype=torch.float64)
    return {n: t.to(dtype) for n, t in x.items()}


def call(x, **kw):
    return gated_deltanet2(
        x["q"], x["k"], x["v"], x["g"], x["erase"], x["write"], initial_state=x["initial_state"], **kw
    )


def reference(x):
    return paper_reference(x["q"], x["k"], x["v"], x["g"], x["erase"], x["write"], initial_state=x["initial_state"])


CASES = [
    pytest.param({"gate": "random"}, id="random"),
    pytest.param({"gate": "strong"}, id="strong-g-8"),
    pytest.param({"gate": "mixed"}, id="mixed-channels-g-30"),
    pytest.param({"gate": "wipe"}, id="wipe-g-inf"),
    pytest.param({"gate": "random", "gates": "hard"}, id="hard-erase-write-0-1"),
    pytest.param({"gate": "random", "scalar": True}, id="scalar-decay"),
    pytest.param({"gate": "wipe", "scalar": True}, id="scalar-decay-wipe"),
]
FORMS = [
    pytest.param("recurrent", None, id="recurrent"),
    pytest.param("chunk", 16, id="chunk-C16"),  # T = 45: the last chunk is padded
    pytest.param("chunk", 7, id="chunk-C7"),  # no power of two: decayed_products pads the chunk
    pytest.param("chunk", 1, id="chunk-C1"),
    pytest.param("parallel", None, id="parallel"),
]


# ---- 1. every form against the paper's equation, fp64 -------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("mode, C", FORMS)
def test_every_form_equals_the_papers_equation(case, mode, C):
    x = inputs(**case)
    o_ref, S_ref = reference(x)
    o, S = call(x, output_final_state=True, mode=mode, chunk_size=C)
    assert torch.isfinite(o).all() and torch.isfinite(S).all()
    assert_close(o, o_ref, what=f"{mode} o")
    assert_close(S, S_ref, what=f"{mode} S_T")


def test_long_strong_decay_is_finite_and_equals_the_loop():
    """g = −8 per step over T = 512 (every product of 64 steps underflows): the chunked form stays finite and exact."""
    x = inputs(B=1, H=1, T=512, K=8, V=4, gate="strong")
    o_ref, S_ref = call(x, output_final_state=True, mode="recurrent")
    o, S = call(x, output_final_state=True, mode="chunk", chunk_size=64)
    assert torch.isfinite(o).all()
    assert_close(o, o_ref)
    assert_close(S, S_ref)


@pytest.mark.parametrize("mode, C", FORMS[:3])
def test_fp32_inputs_give_the_fp64_answer_to_fp32_rounding(mode, C):
    x64 = inputs()
    o, S = call(inputs(dtype=torch.float32), output_final_state=True, mode=mode, chunk_size=C)
    o_ref, S_ref = reference(x64)
    assert o.dtype == torch.float32 and S.dtype == torch.float32
    assert_close(o.double(), o_ref, tol=TOL[torch.float32])
    assert_close(S.double(), S_ref, tol=TOL[torch.float32])


# ---- 2. reductions: the corners the paper names, and the additive one ------------------------------------------


@pytest.mark.parametrize("case", [pytest.param({}, id="random"), pytest.param({"gate": "wipe"}, id="wipe")])
@pytest.mark.parametrize("mode", MODES)
def test_erase_and_write_both_beta_is_kda(case, mode):
    """b_t = w_t = β_t·1 (β broadcast over K and over V) is KDA, to rounding."""
    x = inputs(**case)
    beta = x["erase"][..., 0]  # [B, H, T] in [0, 1]
    B, H, T, K = x["q"].shape
    V = x["v"].shape[-1]
    tied = dict(x, erase=beta[..., None].expand(B, H, T, K), write=beta[..., None].expand(B, H, T, V))
    o, S = call(tied, output_final_state=True, mode=mode, chunk_size=16)
    o_kda, S_kda = kda(
        x["q"], x["k"], x["v"], x["g"], beta, initial_state=x["initial_state"], output_final_state=True, mode=mode,
        chunk_size=16,
    )  # fmt: skip
    assert (o - o_kda).abs().max() < 1e-12 and (S - S_kda).abs().max() < 1e-12
    o_untied, _ = call(x, mode=mode, chunk_size=16)
    assert (o_untied - o_kda).abs().max() > 1e-3  # untied gates are not KDA: the check can fail


@pytest.mark.parametrize("mode", MODES)
def test_a_bounded_gate_with_tied_gates_is_bounded_kda(mode):
    """gate_lower_bound = −5 (Kimi K3's) on both ops, erase = write = β: the same bounded recurrence."""
    x = inputs(gate="strong")
    beta = x["erase"][..., 0]
    B, H, T, K = x["q"].shape
    V = x["v"].shape[-1]
    tied = dict(x, erase=beta[..., None].expand(B, H, T, K), write=beta[..., None].expand(B, H, T, V))
    o, S = call(tied, output_final_state=True, mode=mode, chunk_size=16, gate_lower_bound=-5.0)
    o_kda, S_kda = kda(
        x["q"], x["k"], x["v"], x["g"], beta, initial_state=x["initial_state"], output_final_state=True, mode=mode,
        chunk_size=16, gate_lower_bound=-5.0,
    )  # fmt: skip
    assert (o - o_kda).abs().max() < 1e-12 and (S - S_kda).abs().max() < 1e-12
    o_free, _ = call(tied, mode=mode, chunk_size=16)
    assert (o_free - o).abs().max() > 1e-3  # the bound changes a g = −8 gate: the check can fail
    with pytest.raises(ValueError, match="gate_lower_bound must be a finite number < 0"):
        call(tied, mode=mode, gate_lower_bound=0.0)


@pytest.mark.parametrize("mode", MODES)
def test_tied_gates_and_a_scalar_decay_are_gated_deltanet(mode):
    x = inputs(scalar=True)
    beta = x["write"][..., 0]
    B, H, T, K = x["q"].shape
    V = x["v"].shape[-1]
    tied = dict(x, erase=beta[..., None].expand(B, H, T, K), write=beta[..., None].expand(B, H, T, V))
    o, S = call(tied, output_final_state=True, mode=mode, chunk_size=16)
    o_gdn, S_gdn = gated_deltanet(
        x["q"], x["k"], x["v"], x["g"], beta, initial_state=x["initial_state"], output_final_state=True, mode=mode,
        chunk_size=16,
    )  # fmt: skip
    assert (o - o_gdn).abs().max() < 1e-12 and (S - S_gdn).abs().max() < 1e-12


@pytest.mark.parametrize("mode", MODES)
def test_no_erase_and_full_write_is_gla(mode):
    """b = 0, w = 1: the erase term vanishes and the write is additive, which is GLA's per-channel gated state."""
    x = inputs()
    plain = dict(x, erase=torch.zeros_like(x["erase"]), write=torch.ones_like(x["write"]))
    o, S = call(plain, output_final_state=True, mode=mode, chunk_size=16)
    o_gla, S_gla = gla(
        x["q"], x["k"], x["v"], x["g"], initial_state=x["initial_state"], output_final_state=True, mode=mode,
        chunk_size=16,
    )  # fmt: skip
    assert_close(o, o_gla)
    assert_close(S, S_gla)


def test_closed_gates_leave_only_the_decay():
    """b = w = 0: nothing is erased or written; S_T is the initial state decayed by Π α_t, channel by channel."""
    x = inputs()
    shut = dict(x, erase=torch.zeros_like(x["erase"]), write=torch.zeros_like(x["write"]))
    _, S = call(shut, output_final_state=True, chunk_size=16)
    expected = torch.exp(x["g"].sum(2))[..., None] * x["initial_state"]
    assert_close(S, expected)


def test_a_write_gate_shut_on_a_value_channel_keeps_that_column_erased_only():
    """w = 0 on value channel 0 and b = 0: column 0 of the state only decays while the others take writes; KDA cannot
    do this (β = 0 would stop every column's write)."""
    x = inputs()
    write = x["write"].clone()
    write[..., 0] = 0.0
    gated = dict(x, erase=torch.zeros_like(x["erase"]), write=write)
    _, S = call(gated, output_final_state=True, chunk_size=16)
    decayed = torch.exp(x["g"].sum(2))[..., None] * x["initial_state"]
    assert_close(S[..., 0], decayed[..., 0])
    assert (S[..., 1:] - decayed[..., 1:]).abs().max() > 1e-2


def test_one_step_reads_back_the_unerased_old_value_plus_the_written_new_one():
    """The docstring's read-back, with a unit key: S_tᵀ k_t = S'ᵀ ((1 − b_t) ⊙ k_t) + w_t ⊙ v_t; b = 1, w = 0 erases
    the association outright (the read is 0), which KDA reaches at no β unless v_t is 0."""
    x = inputs(T=1)
    k_t = x["k"][:, :, 0]
    S_dec = torch.exp(x["g"][:, :, 0])[..., None] * x["initial_state"]  # S' = Diag(α) S_0
    _, S = call(x, output_final_state=True, mode="recurrent")
    expected = (
        torch.einsum("bhkv,bhk->bhv", S_dec, (1 - x["erase"][:, :, 0]) * k_t) + x["write"][:, :, 0] * x["v"][:, :, 0]
    )
    assert_close(torch.einsum("bhkv,bhk->bhv", S, k_t), expected)
    erase_only = dict(x, erase=torch.ones_like(x["erase"]), write=torch.zeros_like(x["write"]))
    _, S = call(erase_only, output_final_state=True, mode="recurrent")
    assert torch.einsum("bhkv,bhk->bhv", S, k_t).abs().max() < 1e-12
    for beta in (0.25, 0.5, 1.0):  # KDA at any β leaves (1 − β) of the old read and adds β v_t
        _, S_kda = kda(
            x["q"], x["k"], x["v"], x["g"], torch.full((2, 2, 1), beta, dtype=torch.float64),
            initial_state=x["initial_state"], output_final_state=True, mode="recurrent",
        )  # fmt: skip
        assert torch.einsum("bhkv,bhk->bhv", S_kda, k_t).abs().max() > 1e-2


# ---- 3. state, gradients, causality -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("split", [1, 20, 44])
def test_two_calls_through_the_returned_state_equal_one_pass(mode, split):
    x = inputs()
    o, S = call(x, output_final_state=True, mode=mode, chunk_size=16)
    first = {n: t if n == "initial_state" else t[:, :, :split] for n, t in x.items()}
    o_1, S_1 = call(first, output_final_state=True, mode=mode, chunk_size=16)
    second = {n: S_1 if n == "initial_state" else t[:, :, split:] for n, t in x.items()}
    o_2, S_2 = call(second, output_final_state=True, mode=mode, chunk_size=16)
    assert_close(torch.cat([o_1, o_2], dim=2), o)
    assert_close(S_2, S)


def test_no_initial_state_is_a_zero_state():
    x = inputs()
    o, S = call(dict(x, initial_state=None), output_final_state=True, chunk_size=16)
    o_0, S_0 = call(dict(x, initial_state=torch.zeros_like(x["initial_state"])), output_final_state=True, chunk_size=7)
    assert_close(o, o_0)
    assert_close(S, S_0)
    assert call(x, chunk_size=16)[1] is None  # the final state only on request


@pytest.mark.parametrize("case", [pytest.param({}, id="random"), pytest.param({"gate": "wipe"}, id="wipe")])
def test_gradients_of_the_chunked_form_equal_the_loops(case):
    """d(o·r + S_T·s)/d(every input), chunked at C = 7 against the loop, fp64."""
    x = inputs(B=1, H=2, T=19, K=4, V=3, **case)
    gen = torch.Generator().manual_seed(1)
    r = torch.randn(1, 2, 19, 3, generator=gen, dtype=torch.float64)
    s = torch.randn(1, 2, 4, 3, generator=gen, dtype=torch.float64)
    names = ("q", "k", "v", "g", "erase", "write", "initial_state")
    grads = {}
    for mode in ("recurrent", "chunk"):
        leaves = {n: x[n].clone().requires_grad_(n != "g" or case.get("gate") != "wipe") for n in names}
        o, S = call(leaves, output_final_state=True, mode=mode, chunk_size=7)
        loss = (o * r).sum() + (S * s).sum()
        wanted = [n for n in names if leaves[n].requires_grad]
        grads[mode] = dict(zip(wanted, torch.autograd.grad(loss, [leaves[n] for n in wanted]), strict=True))
    for n, grad in grads["recurrent"].items():
        assert torch.isfinite(grads["chunk"][n]).all(), n
        assert_close(grads["chunk"][n], grad, what=f"d/d{n}")
        assert grad.abs().max() > 0, n  # every input reaches the loss


@pytest.mark.parametrize("slab", [1, 12, 1000])
def test_spans_of_chunks_change_nothing_but_speed(slab, monkeypatch):
    """On a CPU the chunked form runs spans of recurrence.span_chunks chunks, the state carried between them: spans of
    one chunk, of a few, and of every chunk give the paper's outputs, final state and the loop's gradients."""
    monkeypatch.setattr(recurrence, "CPU_SLAB", slab)
    x = inputs(B=1, H=2, T=45, K=4, V=3, gate="wipe")
    assert recurrence.span_chunks(torch.device("cpu"), 7, 2) == max(1, slab * torch.get_num_threads() // 2)
    o_ref, S_ref = paper_reference(
        x["q"], x["k"], x["v"], x["g"], x["erase"], x["write"], initial_state=x["initial_state"]
    )
    leaves = {n: t.clone().requires_grad_(n in ("q", "k", "v", "erase", "write")) for n, t in x.items()}
    o, S = call(leaves, output_final_state=True, mode="chunk", chunk_size=7)  # 7 chunks
    assert_close(o, o_ref, what="output")
    assert_close(S, S_ref, what="final state")
    wanted = [n for n in leaves if leaves[n].requires_grad]
    grads = torch.autograd.grad(o.sum() + S.sum(), [leaves[n] for n in wanted])
    o_loop, S_loop = call(leaves, output_final_state=True, mode="recurrent")
    for n, grad, loop in zip(
        wanted, grads, torch.autograd.grad(o_loop.sum() + S_loop.sum(), [leaves[n] for n in wanted]), strict=True
    ):
        assert_close(grad, loop, what=f"d/d{n}")


@pytest.mark.parametrize("mode, C", FORMS[:3])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
def test_outputs_do_not_depend_on_later_inputs(mode, C, dtype):
    """Bitwise: changing every input from step 23 on leaves outputs 0..22 unchanged (the anchored products let no
    later gate reach an earlier output, even through rounding)."""
    x = inputs(dtype=dtype)
    later = inputs(dtype=dtype, seed=5)
    y = {n: t if n == "initial_state" else torch.cat([t[:, :, :23], later[n][:, :, 23:]], dim=2) for n, t in x.items()}
    o_x, _ = call(x, mode=mode, chunk_size=C)
    o_y, _ = call(y, mode=mode, chunk_size=C)
    assert torch.equal(o_x[:, :, :23], o_y[:, :, :23])
    assert not torch.equal(o_x[:, :, 23:], o_y[:, :, 23:])


def test_the_trace_records_the_loop():
    x = inputs(T=9)
    o, S, tr = recurrent_gated_deltanet2(
        x["q"], x["k"], x["v"], x["g"], x["erase"], x["write"], initial_state=x["initial_state"],
        output_final_state=True, trace=True,
    )  # fmt: skip
    assert tr.states.shape == (2, 2, 9, 8, 6) and tr.read.shape == (2, 2, 9, 6) and tr.decay.shape == (2, 2, 9, 8)
    assert torch.allclose(torch.from_numpy(tr.states[:, :, -1]), S)
    assert torch.allclose(torch.from_numpy(tr.output), o)
    # the written vector is the gated value minus the erased read, step by step
    written = x["write"].numpy() * x["v"].numpy() - tr.read
    assert abs(tr.delta - written).max() < 1e-12


# ---- 4. the cost the module states: the erase is not a contraction ----------------------------------------------


def test_an_uneven_erase_gate_can_stretch_the_state_a_uniform_one_cannot():
    """The docstring's cost, computed: with a unit key, I − β k kᵀ has singular values ≤ 1; I − k (b ⊙ k)ᵀ with b
    open on one channel of k = (1, 1)/√2 keeps eigenvalues in [0, 1] but a singular value above 1."""
    k = torch.tensor([1.0, 1.0], dtype=torch.float64) / 2**0.5
    eye = torch.eye(2, dtype=torch.float64)
    uneven = eye - torch.outer(k, torch.tensor([1.0, 0.0], dtype=torch.float64) * k)
    assert torch.linalg.svdvals(uneven).max() > 1.1
    eig = torch.linalg.eigvals(uneven).real
    assert eig.min() >= 0 and eig.max() <= 1 + 1e-12
    gen = torch.Generator().manual_seed(0)
    for beta in torch.rand(8, generator=gen, dtype=torch.float64):
        assert torch.linalg.svdvals(eye - beta * torch.outer(k, k)).max() <= 1 + 1e-12


# ---- 5. errors name the argument ---------------------------------------------------------------------------------


def bad(**changes):
    x = inputs(B=1, H=1, T=5, K=4, V=3)
    x.update(changes)
    return x


def full(*shape, value):
    return torch.full(shape, value, dtype=torch.float64)


@pytest.mark.parametrize(
    "changes, match",
    [
        pytest.param({"erase": full(1, 1, 5, 4, value=1.5)}, r"erase must lie in \[0, 1\]", id="erase>1"),
        pytest.param({"write": full(1, 1, 5, 3, value=-1.0)}, r"write must lie in \[0, 1\]", id="write<0"),
        pytest.param({"write": full(1, 1, 5, 4, value=1.0)}, r"write must have shape \[B, H, T, V\]", id="write-K"),
        pytest.param({"erase": full(1, 1, 5, value=1.0)}, r"erase must have rank 4", id="erase-scalar"),
        pytest.param({"erase": full(1, 1, 5, 4, value=float("nan"))}, r"erase contains NaN", id="erase-nan"),
        pytest.param({"g": full(1, 1, 5, 4, value=1.0)}, r"g is a log-space gate", id="g>0"),
        pytest.param({"g": full(1, 1, 5, 3, value=0.0)}, r"g \(log-space gate\) must have shape", id="g-V"),
        pytest.param({"initial_state": full(1, 1, 3, 4, value=0.0)}, r"initial_state must have shape", id="state"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_bad_inputs_raise_errors_that_name_the_argument(changes, match, mode):
    with pytest.raises(ValueError, match=match):
        call(bad(**changes), mode=mode)


def test_bad_mode_and_chunk_size_are_named():
    x = bad()
    with pytest.raises(ValueError, match="mode must be one of"):
        call(x, mode="quadratic")
    with pytest.raises(ValueError, match="chunk_size must be >= 1"):
        call(x, mode="recurrent", chunk_size=0)
    with pytest.raises(ValueError, match="chunk_size must be >= 1"):
        chunk_gated_deltanet2(x["q"], x["k"], x["v"], x["g"], x["erase"], x["write"], chunk_size=0)
    with pytest.raises(TypeError, match="write must be a torch.Tensor"):
        gated_deltanet2(x["q"], x["k"], x["v"], x["g"], x["erase"], None)
