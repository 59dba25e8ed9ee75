"""The one recurrence behind six mechanisms: a fixed-size memory S that decays, is written, and is read.

Every linear-memory stage of the lineage keeps, per head, a state ``S ∈ R^{K×V}`` and runs

    decay:   S'  = Diag(α_t) · S_{t-1}                       α_t = exp(g_t),  g_t ≤ 0 (log space)
    write:   additive   S_t = S' + k_t v_tᵀ
             delta      S_t = S' + β_t k_t (v_t − S'ᵀ k_t)ᵀ   = (I − β_t k_t k_tᵀ) S' + β_t k_t v_tᵀ
    read:    o_t = S_tᵀ (scale · q_t)

| write rule \\ gate | none (α = 1)            | scalar per head         | per channel (vector) |
|-------------------|-------------------------|-------------------------|----------------------|
| additive          | linear attention (2020) | Mamba-2 / SSD (2024)    | GLA (2024)           |
| delta             | DeltaNet (2024)         | Gated DeltaNet (2025)   | KDA, Kimi Linear (2025) |

This module holds the three ways to compute it, with identical signatures, and a readable twin of the second:

* :func:`recurrent_memory` — the reference: a loop over t, one line per term of the equations above. It can
  record a :class:`MemoryTrace` (state, decay, value read, delta written, output per step) for the app.
* :func:`chunk_memory` — the chunkwise-parallel form of Yang et al. 2024 ("Parallelizing Linear
  Transformers with the Delta Rule over Sequence Length", arXiv 2406.06484), extended with the scalar gate
  of Gated DeltaNet (arXiv 2412.06464) and the per-channel gate of Kimi Linear (arXiv 2510.26692). Inside a
  chunk of C steps everything is matrix products; only the state hand-off between chunks is sequential. Its
  decays inside a chunk never exponentiate a positive number (:func:`decayed_products`): a scalar gate's are one
  C×C matrix from segment sums (:func:`segment_sum_products`); a per-channel gate's are factored through a step
  between each pair, flash-linear-attention's sub-chunk anchor (``fla/ops/kda/chunk_intra.py``)
  applied recursively, down to single steps (:func:`anchored_products`).
* :func:`chunk_memory_minimal` — the same chunked form on one screen, in fp64, with the same numbered steps: what
  :func:`chunk_memory` computes, minus the anchors and the speed knobs. The readable one to hold beside the fast one.
* :func:`scan_memory` — the reference loop as one scan, every head side by side (the layout [T, ·, B·H]), with its
  backward written out: the chunked form with chunks of one step (``chunk_memory(chunk_size=1)`` runs it), and the form
  a CPU trains small states fastest in (:func:`layer_chunk_size` picks it for the layers).
* :func:`parallel_memory` — the T×T "attention" form: one chunk as long as the sequence, with decays taken
  from segment sums so that a long sequence loses no precision.

The stages (``linear_attention``, ``deltanet``, ``mamba2``, ``gla``, ``gated_deltanet``, ``kda``) are thin
presets over these functions; each lives in its own module with its paper and its layer.

Comment lines ``# [panel:NAME] start`` … ``# [panel:NAME] end`` are code-panel markers: :mod:`lineage.teach.equations`
shows the lines between them in the app (the markers themselves are left out). They change nothing that runs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from lineage import checks
from lineage.ops import native

Rule = Literal["additive", "delta"]

# Speed knobs of the chunked form (each changes nothing but speed, and each is tested for equal results):
INVERSE_BLOCK = 16  # unit_lower_inverse inverts blocks of up to this many rows by a triangular solve
CPU_SLAB = 64  # on a CPU, the chunked forms run spans of ~this many chunks (all heads) per thread (span_chunks)
# The strong-gate knob: decays inside a chunk below ∛tiny (tiny: the dtype's smallest normal number) are set to 0 (see
# flush_decays). Fast-forgetting gates make such decays common, and left alone they sink into the subnormal range, where
# many CPUs run every product that touches them 10-100x slower: the chunked form fell off a cliff at strong gates. The
# delta rule's inverse (unit_lower_inverse) multiplies kept decays along chains of keys, so its small entries go the
# same way: below the cut, they are 0 too.
FLUSH_DECAYS = True
# Steps 2-5 of the chunked form on a CPU, where nothing records gradients, run as one compiled C++ loop over each head's
# chunks (lineage.ops.native.chunk_steps): the same steps, without the Python loop over chunks and the dozens of small
# tensor operations a span costs to start (2.4-3.5x faster at K = V = 64). Off, without a C++ compiler, or with
# FLUSH_DECAYS off (the compiled loop always flushes), the Python steps of chunk_memory run.
NATIVE_CHUNKS = True
# Where those Python steps run without autograd, the per-channel gate's products (step 2) are compiled C++ too: the
# same levels as anchored_products, without its sixty small tensor operations a span. Off: the Python form.
NATIVE_ANCHORS = True


def flush_decays(decay: torch.Tensor) -> torch.Tensor:
    """Decay factors below ∛tiny set to exactly 0 (the strong-gate knob, :data:`FLUSH_DECAYS`; a no-op when it is off).

    tiny is the dtype's smallest normal number, so the cut is 2.3e-13 in fp32 (1.3e-103 in fp64): a term scaled by
    less than that sits below the rounding of any output it joins (fp32's ε is 1.2e-7), so outputs agree with the
    unflushed form to rounding, and a product of two kept factors and two unit-sized numbers (≥ tiny^⅔) stays clear
    of the subnormal range. Zero is what a wipe gives anyway. (A gradient made only of such terms, the initial
    state's behind a near-wipe, comes out 0 instead of below 1e-13 of the others.)
    """
    if not FLUSH_DECAYS:
        return decay
    return torch.nn.functional.threshold(decay, flush_cut(decay.dtype), 0.0)  # one pass: decay where > the cut, else 0


def flush_cut(dtype: torch.dtype) -> float:
    """The strong-gate knob's cut, ∛tiny of ``dtype`` (:func:`flush_decays`)."""
    return torch.finfo(dtype).tiny ** (1 / 3)


def _log_floor(dtype: torch.dtype) -> float:
    """A log-decay just below log ∛tiny: e^floor = ∛tiny / e, under the strong-gate knob's cut."""
    return math.log(flush_cut(dtype)) - 1.0


@functools.cache
def _lower_ones(n: int, dtype: torch.dtype, device: torch.device, diagonal: int = 0) -> torch.Tensor:
    """:func:`_lower` as 0/1 numbers of ``dtype`` (speed: a CPU multiplies by it ~10x faster than it masks by a bool).

    Kept once per size, dtype, device and diagonal, made outside any ``torch.inference_mode`` (a mask first asked for by
    a page's inference run must still serve a training step's autograd)."""
    with torch.inference_mode(False):
        return _lower(n, device, diagonal).to(dtype)


def decay_factors(log_decay: torch.Tensor) -> torch.Tensor:
    """e^g for log-decays g ≤ 0 with the strong-gate knob: :func:`flush_decays` of the exponential, computed from g
    raised to just below log ∛tiny first. That changes no result (a factor under the cut is 0 either way) and keeps the
    exponential off its slow path: on a CPU, exp of numbers whose results underflow, or of −∞, runs several times
    slower than of ordinary ones (torch 2.13, 1 thread of a 2-core AMD EPYC, 65,536 fp32 values: 108 µs in (−5, 0),
    224 µs with half of them −∞, 1,068 µs uniform in (−200, 0)). Strong gates and a chunk's masked triangle are
    full of such numbers."""
    if not FLUSH_DECAYS:
        return torch.exp(log_decay)
    return flush_decays(torch.exp(log_decay.clamp_min(_log_floor(log_decay.dtype))))


def _flush_(decay: torch.Tensor) -> torch.Tensor:
    """:func:`flush_decays` in place (on the part of a tensor that changed)."""
    if not FLUSH_DECAYS:
        return decay
    return torch.nn.functional.threshold_(decay, flush_cut(decay.dtype), 0.0)


def _flush_small(x: torch.Tensor) -> torch.Tensor:
    """x with every entry of magnitude at most ∛tiny set to 0 (the strong-gate knob, :data:`FLUSH_DECAYS`), for the
    inverse's blocks (:func:`unit_lower_inverse`): an entry that small moves U = T_ut V by less than fp32's rounding
    of it, as a flushed decay does, and left in, its products with decays and keys sink into the subnormal range."""
    if not FLUSH_DECAYS:
        return x
    return torch.nn.functional.hardshrink(x, flush_cut(x.dtype))  # one pass: x where |x| > the cut, else 0


def records_gradients(*tensors: torch.Tensor | None) -> bool:
    """Whether autograd records an operation on any of ``tensors`` here (None is skipped): where it does, the chunked
    forms keep to the Python steps and keep every factor the backward needs."""
    return torch.is_grad_enabled() and any(x is not None and x.requires_grad for x in tensors)


def span_chunks(device: torch.device, N: int, BH: int, recording: bool = False) -> int:
    """How many consecutive chunks of every head the chunked forms' steps 2–5 take at once (speed only, no maths):
    all N on a GPU; on a CPU, :data:`CPU_SLAB` chunks a thread over the B·H heads, so a span's temporaries stay in
    the cache and no step allocates a whole-sequence temporary (measured best at 1 and 2 threads, T = 4096, H = 4).
    Where one chunk of every head is already past the slab (B·H above it: a training batch), a span keeps nothing in
    the cache, and while autograd records (``recording``) it bounds no memory either, since every span's temporaries
    are kept for the backward: then all N at once, one span instead of a split and a concatenation of every input
    (a training step of linear attention at the capacity record's width: 71.5 against 67.7 ms with the in-place
    causal mask and feature map, interleaved, 1 thread of a 2-core Intel Xeon)."""
    if device.type != "cpu":
        return N
    per_span = CPU_SLAB * torch.get_num_threads() // BH
    return per_span if per_span >= 1 else N if recording else 1


def chunk_spans(chunks: Sequence[torch.Tensor | None]) -> Iterator[tuple[int, list[torch.Tensor | None]]]:
    """The chunked forms' loop over spans (speed only): ``chunks``, each [B·H, N, C, …] on one device (None passes
    through), a span of :func:`span_chunks` consecutive chunks at a time, as (n, each span's chunks batched as
    [B·H·n, C, …])."""
    given = [x for x in chunks if x is not None]
    BH, N = given[0].shape[:2]
    span = span_chunks(given[0].device, N, BH, records_gradients(*given))
    if span >= N:  # one span: the chunks themselves
        yield N, [None if x is None else x.reshape(-1, *x.shape[2:]) for x in chunks]
        return
    # split, not sliced: a split's backward is one concatenation of the spans' gradients, where each slice's would be
    # a zero tensor of the whole input with its span copied in, summed over the spans
    parts = [[None] * -(-N // span) if x is None else x.split(span, dim=1) for x in chunks]
    for part in zip(*parts, strict=True):
        n = next(x for x in part if x is not None).shape[1]
        yield n, [None if x is None else x.reshape(-1, *x.shape[2:]) for x in part]


def default_chunk_size(device: torch.device | str) -> int:
    """The chunk length C of the chunked form when the caller gives none: 64 on a GPU, 32 on a CPU.

    Per step the chunked form costs ≈ 2·K·V to hand the state on plus ≈ 2·C·(K + V) per product inside the chunk
    (five for the delta rule, see ``lineage.measure.bench.chunk_flop_model``): a shorter chunk does less work inside and
    hands the state on more often. A GPU runs a chunk of 64 as a few tensor-core tiles (fla's kernels use 64); a CPU
    pays for every flop, and at head size 64 a chunk of 32 is the faster for every gated op (measured with
    ``python -m lineage bench``; the timings and the machine are in ``data/chunk_size_cpu.json``). Results do not
    depend on C beyond rounding.
    """
    return 32 if torch.device(device).type == "cpu" else 64


# Where the scan (scan_memory: chunks of one step) is a CPU's fastest form, from its forward and backward against
# chunks of 32 (delta rule, per-channel gates, T = 64 … 1,024, one thread): 2–8× faster with B·H ≥ 64 heads side by side
# and K, V ≤ 16; even at K = V = 32; 1.2–3× slower with B·H = 8, where each step's vectors are too short to pay for
# the overhead of its operations. Linear attention (an additive write and no gate) is the exception: its chunked form
# is two products a chunk, with no decays and no UT transform, and it overtakes the scan at smaller states. A training
# step of the capacity record's model (T = 64, B·H = 512, interleaved rounds, 1 thread of a 2-core Intel Xeon), scan
# against chunks of 32: 75.4 against 72.1 ms at K = V = 8, 35.7 against 38.6 ms at K = V = 4, 219 against 161 ms at
# K = V = 16.
SCAN_MIN_HEADS = 64  # B·H: fewer heads side by side, and the chunked form is the faster
SCAN_MAX_STATE = 256  # K·V numbers in one head's state: more, and the chunked form's matrix products win
SCAN_MAX_STATE_UNGATED_ADDITIVE = 32  # the same for linear attention, whose chunked form is products only


def layer_chunk_size(device: torch.device | str, heads: int, K: int, V: int, *, products_only: bool = False) -> int:
    """The chunk length a layer runs when its config gives none: 1 (:func:`scan_memory`) on a CPU with at least
    ``SCAN_MIN_HEADS`` heads side by side (``heads`` = B·H) and states of at most ``SCAN_MAX_STATE`` numbers (K·V),
    where each step of the scan is a few operations over K·V·B·H contiguous numbers and every product of the chunked
    form a batch of tiny matrices; else :func:`default_chunk_size`. ``products_only``: the op's chunked form is matrix
    products only (an additive write with no gate, linear attention), and the scan is kept to states of at most
    ``SCAN_MAX_STATE_UNGATED_ADDITIVE`` numbers. The results do not depend on it beyond rounding.
    """
    state, cap = K * V, SCAN_MAX_STATE_UNGATED_ADDITIVE if products_only else SCAN_MAX_STATE
    if torch.device(device).type == "cpu" and heads >= SCAN_MIN_HEADS and state <= cap:
        return 1
    return default_chunk_size(device)


@dataclass
class MemoryTrace:
    """What the recurrence did at every step, as numpy, for animation. Shapes per batch×head: [B, H, T, ...].

    Attributes:
        states:  [B, H, T, K, V]  S_t, the state after step t
        decay:   [B, H, T, K]     α_t applied to each row of S before the write (1 where there is no gate)
        read:    [B, H, T, V]     S'ᵀ k_t, what the memory held at key k_t before writing (the delta rule's v_old)
        delta:   [B, H, T, V]     u_t, the vector written along k_t: v_t (additive) or β_t (v_t − S'ᵀ k_t) (delta)
        output:  [B, H, T, V]     o_t = S_tᵀ (scale · q_t)
    """

    states: np.ndarray
    decay: np.ndarray
    read: np.ndarray
    delta: np.ndarray
    output: np.ndarray


def _validate(q, k, v, g, beta, rule, scale, initial_state, per_channel=None):
    if rule not in ("additive", "delta"):
        raise ValueError(f"rule must be 'additive' or 'delta', got {rule!r}")
    B, H, T, K, V = checks.qkv(q, k, v)
    if g is not None or per_channel is not None:  # a gated op must be given its gate
        checks.log_gate(g, B, H, T, K, per_channel=per_channel)
    if rule == "delta":
        if beta is None:
            raise ValueError("beta is required for the delta rule: a [B, H, T] tensor in [0, 1]")
        checks.beta(beta, B, H, T)
    elif beta is not None:
        raise ValueError("beta only applies to the delta rule; pass beta=None for an additive write")
    checks.state(initial_state, B, H, K, V)
    return B, H, T, K, V, checks.scale(scale, K)


def _prepare(q, k, v, g, beta, initial_state, K):
    """Cast to the compute dtype (fp32, or fp64 if any input is fp64) and expand the gate to a common form.

    Returns the gate as log-decay with a trailing channel axis: [B, H, T, 1] (scalar) or [B, H, T, K].
    """
    dtype = checks.compute_dtype(q, k, v, g, beta, initial_state)
    q, k, v = (x.to(dtype) for x in (q, k, v))
    if g is None:
        g = torch.zeros(q.shape[:3] + (1,), dtype=dtype, device=q.device)
    else:
        g = g.to(dtype)
        g = g.unsqueeze(-1) if g.dim() == 3 else g
    beta = None if beta is None else beta.to(dtype)
    S0 = None if initial_state is None else initial_state.to(dtype)
    return q, k, v, g, beta, S0


def recurrent_memory(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    *,
    rule: Rule = "additive",
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    trace: bool = False,
    per_channel: bool | None = None,
):
    """Reference recurrence: a plain loop over time with one vectorised update per step.

    Args:
        q, k: [B, H, T, K]; v: [B, H, T, V]
        g: log-decay, [B, H, T] (scalar per head) or [B, H, T, K] (per channel), ≤ 0; None means α = 1
        beta: [B, H, T] in [0, 1], required for ``rule="delta"``
        scale: read scale (default K ** -0.5)
        initial_state: [B, H, K, V] or None (zeros)
        output_final_state: also return S_T
        trace: also return a :class:`MemoryTrace` (third element)
        per_channel: demand a per-channel gate (True) or a scalar one (False); None accepts either

    Returns:
        o: [B, H, T, V] in v's dtype; S_T: [B, H, K, V] in the compute dtype, or None; (trace)
    """
    B, H, T, K, V, scale = _validate(q, k, v, g, beta, rule, scale, initial_state, per_channel)
    out_dtype, gated = v.dtype, g is not None
    q, k, v, g, beta, S = _prepare(q, k, v, g, beta, initial_state, K)
    if S is None:
        S = q.new_zeros(B, H, K, V)
    alpha = torch.exp(g)  # [B, H, T, 1 or K]
    o = q.new_empty(B, H, T, V)
    rec = {name: [] for name in ("states", "decay", "read", "delta")} if trace else None
    for t in range(T):
        q_t, k_t, v_t = q[:, :, t], k[:, :, t], v[:, :, t]  # (B, H, K), (B, H, K), (B, H, V)
        # [panel:loop-decay] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # S' = Diag(α_t) S_{t-1} (no gate: α = 1, nothing to do)
        if gated:
            S = alpha[:, :, t, :, None] * S
        # [panel:loop-decay] end
        # [panel:loop-read] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # S'ᵀ k_t: what the memory returns for k_t right now (the delta rule needs it; an additive write only
        # records it for the trace)
        read_t = torch.einsum("bhkv,bhk->bhv", S, k_t) if rule == "delta" or rec is not None else None
        # [panel:loop-read] end
        # [panel:loop-write] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # u_t = v_t (additive) or β_t (v_t − S'ᵀ k_t) (delta: write only the correction)
        u_t = v_t if rule == "additive" else beta[:, :, t, None] * (v_t - read_t)
        # S_t = S' + k_t u_tᵀ
        S = S + k_t[..., :, None] * u_t[..., None, :]
        # [panel:loop-write] end
        # [panel:loop-output] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # o_t = S_tᵀ (scale q_t)
        o[:, :, t] = torch.einsum("bhkv,bhk->bhv", S, scale * q_t)
        # [panel:loop-output] end
        if rec is not None:
            rec["states"].append(S)
            rec["decay"].append(alpha[:, :, t].expand(B, H, K))
            rec["read"].append(read_t)
            rec["delta"].append(u_t)
    result = (o.to(out_dtype), S if output_final_state else None)
    if rec is None:
        return result
    stacked = {name: torch.stack(xs, dim=2).detach().cpu().numpy() for name, xs in rec.items()}
    return result + (MemoryTrace(output=o.detach().cpu().numpy(), **stacked),)


def _heads_inner(x: torch.Tensor) -> torch.Tensor:
    """[B, H, T, D] → [T, D, B·H], contiguous: every head side by side, innermost (the scan's layout)."""
    B, H, T, D = x.shape
    return x.permute(2, 3, 0, 1).reshape(T, D, B * H).contiguous()


def _heads_outer(x: torch.Tensor, B: int, H: int) -> torch.Tensor:
    """[T, D, B·H] → [B, H, T, D], contiguous: the scan's layout back to the package's (a strided view would put every
    elementwise operation after it on its slow path)."""
    return x.view(*x.shape[:2], B, H).permute(2, 3, 0, 1).contiguous()


class _Scan(torch.autograd.Function):
    """The recurrence of :func:`recurrent_memory`, step by step, on the layout [T, ·, B·H] with its backward written
    out (the reverse-time recurrence of the gradients), so autograd sees one node instead of a dozen per step.

    Inputs are prepared (:func:`_prepare`, compute dtype): q, k [B, H, T, K]; v [B, H, T, V]; g [B, H, T, 1|K] or
    None (no gate); beta [B, H, T] or None (additive write); S0 [B, H, K, V] or None (zeros). Returns (o, S_T).
    Each step's slices are taken once, before the loop (``unbind``): at small states a step's few operations cost about
    as much as the Python that indexes them.
    """

    @staticmethod
    def forward(ctx, q, k, v, g, beta, S0, scale: float):
        B, H, T, K = q.shape
        V, Z = v.shape[-1], B * H
        q, k, v = _heads_inner(q), _heads_inner(k), _heads_inner(v)  # (T, K|V, Z)
        alpha = None if g is None else decay_factors(_heads_inner(g))  # (T, 1|K, Z)
        states = q.new_empty(T + 1, K, V, Z)  # S_0 … S_T; the backward reads each S_{t−1} back
        if S0 is None:
            states[0].zero_()
        else:
            states[0].copy_(S0.permute(2, 3, 0, 1).reshape(K, V, Z))
        o = q.new_empty(T, V, Z)
        if beta is None:
            u, errors = v, None  # additive: the write is v_t itself
        else:
            beta = beta.permute(2, 0, 1).reshape(T, 1, Z).contiguous()  # (T, 1, Z)
            u, errors = q.new_empty(T, V, Z), q.new_empty(T, V, Z)  # β_t (v_t − S'ᵀ k_t), and v_t − S'ᵀ k_t
        S_steps, o_steps, u_steps = states.unbind(0), o.unbind(0), u.unbind(0)
        k_steps, q_steps = k.unsqueeze(2).unbind(0), q.unsqueeze(2).unbind(0)  # (K, 1, Z) each
        for t in range(T):
            k_t = k_steps[t]
            # S' = Diag(α_t) S_{t−1}
            S = S_steps[t] if alpha is None else S_steps[t] * alpha[t, :, None]
            # delta: u_t = β_t (v_t − S'ᵀ k_t)
            if beta is not None:
                torch.mul(torch.sub(v[t], (S * k_t).sum(0), out=errors[t]), beta[t], out=u_steps[t])
            # S_t = S' + k_t u_tᵀ
            S = torch.addcmul(S, k_t, u_steps[t], out=S_steps[t + 1])
            # o_t = S_tᵀ (scale q_t), the scale applied to all of o below
            torch.sum(S * q_steps[t], 0, out=o_steps[t])
        ctx.save_for_backward(q, k, u, alpha, beta, states, errors)
        ctx.scale, ctx.heads, ctx.with_S0 = scale, (B, H), S0 is not None
        ctx.set_materialize_grads(False)  # an output whose gradient is not needed gets None, not a tensor of zeros
        S_T = states[T].view(K, V, B, H).permute(2, 3, 0, 1).contiguous()  # a copy: a kept state pins no buffer
        return _heads_outer(o.mul_(scale), B, H), S_T

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_o, grad_S):
        q, k, u, alpha, beta, states, errors = ctx.saved_tensors
        (B, H), scale = ctx.heads, ctx.scale
        T, K, Z = q.shape
        V = u.shape[1]
        do = q.new_zeros(T, V, Z) if grad_o is None else _heads_inner(grad_o)
        dS = q.new_zeros(K, V, Z)  # ∂L/∂S_t, carried from t = T down to 0
        if grad_S is not None:
            dS.copy_(grad_S.permute(2, 3, 0, 1).reshape(K, V, Z))
        dq, dk, du = q.new_empty(T, K, Z), q.new_empty(T, K, Z), q.new_empty(T, V, Z)
        dalpha = None if alpha is None else torch.empty_like(alpha)
        minus_beta = None if beta is None else -beta
        S_steps, do_steps, u_steps = states.unbind(0), do.unsqueeze(0).unbind(1), u.unsqueeze(0).unbind(1)
        k_steps, q_steps = k.unsqueeze(2).unbind(0), (q * scale).unsqueeze(2).unbind(0)  # (K, 1, Z) each
        for t in range(T - 1, -1, -1):
            k_t, do_t = k_steps[t], do_steps[t]  # (K, 1, Z), (1, V, Z)
            # o_t = S_tᵀ (scale q_t): ∂q_t = scale S_t ∂o_t, and ∂S_t += scale q_t ∂o_tᵀ
            torch.sum(S_steps[t + 1] * do_t, 1, out=dq[t])
            dS.addcmul_(q_steps[t], do_t)
            # S_t = S' + k_t u_tᵀ: ∂u_t = ∂S_tᵀ k_t, ∂k_t = ∂S_t u_t, and ∂S' = ∂S_t
            du_t = torch.sum(dS * k_t, 0, out=du[t])
            dk_t = torch.sum(dS * u_steps[t], 1, out=dk[t])
            if beta is not None:
                # u_t = β_t (v_t − S'ᵀ k_t): the read r = S'ᵀ k_t gets ∂r = −β_t ∂u_t, so ∂k_t += S' ∂r, ∂S' += k_t ∂rᵀ
                S = S_steps[t] if alpha is None else S_steps[t] * alpha[t, :, None]
                dr = (du_t * minus_beta[t]).unsqueeze(0)  # (1, V, Z)
                dk_t.add_((S * dr).sum(1))
                dS.addcmul_(k_t, dr)
            if alpha is not None:
                # S' = Diag(α_t) S_{t−1}: ∂α_t = Σ_v ∂S' ⊙ S_{t−1} (and over the channels too for one gate per head)
                decayed = dS * S_steps[t]
                if alpha.shape[1] > 1:
                    torch.sum(decayed, 1, out=dalpha[t])
                else:
                    torch.sum(decayed, (0, 1), out=dalpha[t, 0])
                dS.mul_(alpha[t, :, None])  # ∂S_{t−1} = Diag(α_t) ∂S'
        grads = [_heads_outer(dq.mul_(scale), B, H), _heads_outer(dk, B, H)]
        grads.append(_heads_outer(du if beta is None else du * beta, B, H))  # ∂v_t = ∂u_t (· β_t)
        grads.append(None if alpha is None else _heads_outer(dalpha * alpha, B, H))  # α = e^g: ∂g = α ∂α
        grads.append(None if beta is None else (du * errors).sum(1).view(T, B, H).permute(1, 2, 0))  # ∂β_t
        grads.append(dS.view(K, V, B, H).permute(2, 3, 0, 1) if ctx.with_S0 else None)
        return (*grads, None)


def scan_memory(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    *,
    rule: Rule = "additive",
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    per_channel: bool | None = None,
):
    """The recurrence as one scan over t with every head side by side: :func:`recurrent_memory`'s loop, run on the
    layout [T, ·, B·H] (heads innermost) with its backward written out (:class:`_Scan`). It is the chunked form with
    chunks of one step, which :func:`chunk_memory` runs at ``chunk_size=1``.

    Why it exists: at small head dims every product of the chunked form is a batch of tiny matrices, and a CPU spends
    its time on the overhead of each one, not the arithmetic. Here each step is a few elementwise operations over
    K·V·B·H contiguous numbers, and the backward is the gradients' own recurrence, run from t = T down to 1:

        ∂S_t += scale q_t ∂o_tᵀ;   ∂u_t = ∂S_tᵀ k_t;   ∂k_t = ∂S_t u_t
        delta:  ∂r = −β_t ∂u_t;   ∂k_t += S' ∂r;   ∂S' = ∂S_t + k_t ∂rᵀ;   ∂β_t = ∂u_tᵀ (v_t − S'ᵀ k_t)
        gate:   ∂α_t = Σ_v ∂S' ⊙ S_{t−1};   ∂S_{t−1} = Diag(α_t) ∂S'

    It stores every state, (T + 1)·K·V·B·H numbers; :func:`layer_chunk_size` says where it is the fastest form. Decays
    below ∛tiny are 0, as in the chunked form (:func:`flush_decays`). Args and returns are those of
    :func:`recurrent_memory` (without ``trace``); gradients once (no double backward).
    """
    B, H, T, K, V, scale = _validate(q, k, v, g, beta, rule, scale, initial_state, per_channel)
    out_dtype, gated = v.dtype, g is not None
    q, k, v, g, beta, S0 = _prepare(q, k, v, g, beta, initial_state, K)
    o, S = _Scan.apply(q, k, v, g if gated else None, beta, S0, scale)
    return o.to(out_dtype), (S if output_final_state else None)


def _lower(n: int, device, diagonal: int = 0) -> torch.Tensor:
    """Boolean lower-triangular mask [n, n] (i − j ≥ −diagonal), built by comparison: cheaper than torch.tril."""
    i = torch.arange(n, device=device)
    return i[:, None] - i[None, :] >= -diagonal


def segsum(g: torch.Tensor) -> torch.Tensor:
    """Segment sums over the time axis (dim -2): out[..., i, j, c] = Σ_{j < s ≤ i} g[..., s, c] for i ≥ j, −inf above.

    exp(segsum(g)) is the decay matrix L_ij = Π_{j<s≤i} α_s of Mamba-2's ``ssd_minimal`` (0 above the diagonal).
    Summing each segment directly (a masked cumsum over a T×T grid) avoids the cancellation of G_i − G_j when both
    cumulative sums are large, and a wipe (g = −inf) gives −inf, never −inf − (−inf) = NaN.
    """
    T = g.shape[-2]
    inside = _lower(T, g.device, diagonal=-1)[..., None]  # [s, j, 1]: step s is inside segment (j, i] for i ≥ s
    seg = torch.where(inside, g.unsqueeze(-2), 0.0).cumsum(-3)  # [..., i, j, c] = Σ_{j < s ≤ i} g[s]
    return seg.masked_fill(~_lower(T, g.device)[..., None], float("-inf"))


@dataclass
class ChunkDecay:
    """How much each step of a chunk has decayed, relative to the chunk's start and end (every value in [0, 1]).

    G is the cumulative log-decay inside the chunk, G_i = Σ_{s ≤ i} g_s over its steps 1 … C. Shapes [Z, C, 1] for a
    scalar gate, [Z, C, K] per channel; ``chunk`` is [Z, 1|K].

    Attributes:
        from_start: e^{G_i} = Π_{s ≤ i} α_s, how the incoming state has decayed when query i reads it
        to_end:     e^{G_C − G_j} = Π_{j < s ≤ C} α_s, how much of key j's write is left when the chunk ends
        chunk:      e^{G_C} = Π_{s ≤ C} α_s, the incoming state's decay over the whole chunk
    """

    from_start: torch.Tensor
    to_end: torch.Tensor
    chunk: torch.Tensor


def _write_lower_left(A: torch.Tensor, block: torch.Tensor, h: int) -> None:
    """Write block [Z, m, h, h] into the lower-left quadrant of each of A's m diagonal blocks of 2h rows (in place)."""
    Z, m = block.shape[:2]
    A.view(Z, m, 2 * h, m, 2 * h).diagonal(dim1=1, dim2=3)[:, h:, :h] = block.permute(0, 2, 3, 1)


def decayed_products(k: torch.Tensor, g: torch.Tensor, *rows: torch.Tensor) -> tuple[ChunkDecay, list[torch.Tensor]]:
    """The decays of a chunk and its decayed products:

        A_qk[i, j] = Σ_c q_ic k_jc Π_{j<s≤i} α_sc      i ≥ j
        A_kk[i, j] = Σ_c k_ic k_jc Π_{j<s≤i} α_sc      i > j (the strict lower triangle, all the WY/UT transform reads)

    Each gate kind has its own scheme, the one its decays allow (``lineage.mechanisms.CHUNK_DECAYS`` says which
    mechanism uses which): a scalar gate factors out of the channel sum, so its decays are one C×C matrix, taken
    exactly from segment sums (:func:`segment_sum_products`); a per-channel gate cannot leave the sum, and its
    products are built level by level through anchors (:func:`anchored_products`). Neither ever exponentiates a
    positive number, and both give the loop's answer where a wipe (α = 0) falls inside the chunk.

    Args: k [Z, C, K]; g [Z, C, 1] (scalar gate) or [Z, C, K] (per channel), log-decay ≤ 0 (−inf wipes); rows: the
    left factors (q, and k for the delta rule), each [Z, C, K].
    Returns the :class:`ChunkDecay` and one product per row, each [Z, C, C] and 0 above the diagonal.
    """
    scheme = segment_sum_products if g.shape[-1] == 1 else anchored_products
    return scheme(k, g, *rows)


def segment_sum_products(
    k: torch.Tensor, g: torch.Tensor, *rows: torch.Tensor
) -> tuple[ChunkDecay, list[torch.Tensor]]:
    """:func:`decayed_products` for a scalar gate (Mamba-2, Gated DeltaNet): A = (X Kᵀ) ⊙ L with the decay matrix

        L_ij = Π_{j<s≤i} α_s = exp(Σ_{j<s≤i} g_s)      i ≥ j, 0 above the diagonal

    (Mamba-2's "1-semiseparable" mask, SSD arXiv 2405.21060, as its ``ssd_minimal`` builds it). Each segment is
    summed directly, not as a difference G_i − G_j of cumulative sums, so strong gates lose no precision and a wipe
    (g = −∞) gives a decay of 0, never −∞ − (−∞). Every exponent is ≤ 0: L cannot overflow however strong the gate,
    and it is C×C, not C×C×K. Args and returns: :func:`decayed_products`, g [Z, C, 1].
    """
    C = k.shape[1]
    up_to = _lower_ones(C, g.dtype, g.device)  # [i, s]: 1 where s ≤ i
    after = _lower_ones(C, g.dtype, g.device, diagonal=-1)  # [s, j]: 1 where s > j
    # the segment sums as one matrix product, Σ_s 1[s ≤ i] g_s 1[s > j] (speed: no bool masks and no cumsum over a
    # [C, C] grid; this function took 238 µs against 396, Z = 64, C = 32, K = 64, 1 thread of a 2-core Xeon); g raised
    # to just below log ∛tiny first, so a wipe's −∞ never meets a 0 (its segments decay below the cut either way, to 0)
    segments = (up_to * g.mT.clamp_min(_log_floor(g.dtype))) @ after  # [Z, i, j], 0 above the diagonal
    L = decay_factors(segments) * up_to  # [Z, i, j]: 0 above the diagonal, no future key
    from_start = decay_factors(torch.cumsum(g, dim=1))  # Π_{s≤i} α_s, [Z, C, 1]
    to_end = L[:, C - 1, :, None]  # Π_{j<s≤C} α_s: L's last row, [Z, C, 1]
    decay = ChunkDecay(from_start=from_start, to_end=to_end, chunk=from_start[:, C - 1])
    return decay, [(x @ k.mT) * L for x in rows]


def anchored_products(k: torch.Tensor, g: torch.Tensor, *rows: torch.Tensor) -> tuple[ChunkDecay, list[torch.Tensor]]:
    """:func:`decayed_products` for per-channel gates (GLA, KDA, Gated DeltaNet-2), whose decay cannot leave the
    channel sum. Every pair's decay Π_{j<s≤i} α_s is split at a *causal anchor*: take the smallest aligned block of
    2h steps (h = 1, 2, 4, …) holding both steps; j lies in its left half, i in its right half, and the anchor a is the
    left half's last step, so j ≤ a < i and

        Π_{j<s≤i} α_s  =  Π_{a<s≤i} α_s   ·   Π_{j<s≤a} α_s
                          (right half, decayed by i) (left half, decaying after j)

    Both factors are ≤ 1, and neither uses a gate after step i, so no future gate can reach a past output, even
    through rounding. Each level's blocks are batched matrix products of the rows and keys times their factors. The
    factors are built from α = e^g by products, doubling h level by level: nothing but g ≤ 0 is ever exponentiated,
    and a wipe is just α = 0. (Factoring through the chunk start instead, (q ⊙ e^{G_i}) (k ⊙ e^{−G_j})ᵀ,
    exponentiates −G > 0 and overflows under strong decay.) After the last level the blocks are the whole chunk, and
    the factors are the decays from the chunk's start and to its end.

    The anchor is fla's sub-chunk anchor: flash-linear-attention's KDA kernels (``fla/ops/kda/chunk_intra.py``) split a
    chunk into sub-chunks and factor the decay of a pair in two different sub-chunks through the boundary between
    them (inside one sub-chunk they take e^{G_i − G_j} directly). Here it is applied recursively, down to single
    steps, so that no pair is left to a direct e^{G_i − G_j} (:func:`chunk_memory_minimal` takes that direct route).
    Speed knob (:data:`NATIVE_ANCHORS`): on a CPU, where no input records gradients, these levels run as one compiled
    C++ loop per chunk (:mod:`lineage.ops.native`), the same steps in the same order of levels; sums agree to rounding.

    Args and returns: :func:`decayed_products`, g [Z, C, K].
    """
    Z, C, K = k.shape
    recorded = records_gradients(k, g, *rows)  # autograd keeps the factors
    if NATIVE_ANCHORS and not recorded and native.usable(k, rows):
        cut = flush_cut(k.dtype) if FLUSH_DECAYS else 0.0
        products, from_start, to_end = native.anchored(k, decay_factors(g), rows, cut)
        return ChunkDecay(from_start=from_start, to_end=to_end, chunk=from_start[:, C - 1]), products
    P = 1 << (C - 1).bit_length()  # the blocks halve evenly down to single steps: pad the chunk to a power of two
    if P != C:  # padded steps come last and are cut off below: q = k = 0 and α = 1 change no earlier pair
        k, g, *rows = (torch.nn.functional.pad(x, (0, 0, 0, P - C)) for x in (k, g, *rows))
    products = [x.new_zeros(Z, P, P) for x in rows]
    for A, x in zip(products, rows, strict=True):
        A.diagonal(dim1=-2, dim2=-1).copy_((x * k).sum(-1))  # i = j: no decay
    into_block = decay_factors(g)  # Π_{start(i) ≤ s ≤ i} α_s for blocks of h = 1 step: α_i
    after_in_block = torch.ones_like(into_block)  # Π_{j < s ≤ end(j)} α_s for blocks of 1 step: nothing left
    h = 1
    while h < P:
        m = P // (2 * h)  # blocks of 2h steps per chunk
        into, after = into_block.view(Z, m, 2, h, K), after_in_block.view(Z, m, 2, h, K)
        # left half (columns j) decayed up to the anchor, right half (rows i) decayed from it
        left_keys = (k.view(Z, m, 2, h, K)[:, :, 0] * after[:, :, 0]).mT  # (Z, m, K, h)
        for A, x in zip(products, rows, strict=True):
            _write_lower_left(A, (x.view(Z, m, 2, h, K)[:, :, 1] * into[:, :, 1]) @ left_keys, h)
        # the next level's blocks join two halves: the right half decays by the left half's total as well, the left
        # half by the right half's total (speed: in place, only the half that changes; on copies when autograd has
        # kept this level's factors for the backward)
        left_total, right_total = into[:, :, 0, -1:], into[:, :, 1, -1:]  # (Z, m, 1, K): each half's whole decay
        if recorded:
            into_block, after_in_block = into_block.clone(), after_in_block.clone()
        _flush_(after_in_block.view(Z, m, 2, h, K)[:, :, 0].mul_(right_total))  # before `into`'s right half changes
        _flush_(into_block.view(Z, m, 2, h, K)[:, :, 1].mul_(left_total))
        h *= 2
    decay = ChunkDecay(from_start=into_block[:, :C], to_end=after_in_block[:, :C], chunk=into_block[:, C - 1])
    return decay, [A[:, :C, :C] for A in products]


def unit_lower_inverse(M: torch.Tensor) -> torch.Tensor:
    """(I + StrictTril(M))⁻¹ for a batch of square matrices; only M's strict lower triangle is read.

    By 2×2 blocks, [[M₁₁, 0], [M₂₁, M₂₂]]⁻¹ = [[M₁₁⁻¹, 0], [−M₂₂⁻¹ M₂₁ M₁₁⁻¹, M₂₂⁻¹]], halving down to blocks of at most
    ``INVERSE_BLOCK`` rows, which a unit-triangular solve inverts. The result is the same as one solve of the whole
    matrix against I; on a CPU the blocks are faster (for C = 64, 2.4× measured) because most of the work becomes
    matrix products instead of LAPACK's row-by-row substitution. With the strong-gate knob (:data:`FLUSH_DECAYS`) every
    block's entries of magnitude at most ∛tiny are 0 (:func:`_flush_small`).

    Args: M [..., n, n]. Returns [..., n, n], unit lower triangular.
    """
    n = M.shape[-1]
    if n <= INVERSE_BLOCK:
        eye = torch.eye(n, dtype=M.dtype, device=M.device).expand_as(M)
        return _flush_small(torch.linalg.solve_triangular(M, eye, upper=False, unitriangular=True))
    h = n // 2
    inv_11, inv_22 = unit_lower_inverse(M[..., :h, :h]), unit_lower_inverse(M[..., h:, h:])
    inverse = M.new_zeros(M.shape)
    inverse[..., :h, :h], inverse[..., h:, h:] = inv_11, inv_22
    inverse[..., h:, :h] = _flush_small(-(inv_22 @ (M[..., h:, :h] @ inv_11)))
    return inverse


def ut_transform(
    A_kk: torch.Tensor, beta: torch.Tensor, v: torch.Tensor, k_decayed: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The WY/UT representation of a chunk of delta-rule writes (DeltaNet, arXiv 2406.06484, §3; with gates:
    Gated DeltaNet, arXiv 2412.06464, and Kimi Linear, arXiv 2510.26692):

        T_ut = (I + StrictTril(diag(β) A_kk))⁻¹ diag(β)     the papers' T (here T is the sequence length)
        U    = T_ut V              the values the chunk writes, corrected for one another
        W    = T_ut (K ⊙ e^G)      how much of the incoming state each corrected value must subtract

    Args: A_kk [Z, C, C] (only the strict lower triangle is read); beta [Z, C]; v [Z, C, V]; k_decayed = K ⊙ e^G
    [Z, C, K]. Returns U [Z, C, V], W [Z, C, K].
    """
    T_ut = unit_lower_inverse(beta[..., None] * A_kk) * beta[..., None, :]  # (Z, C, C)
    return T_ut @ v, T_ut @ k_decayed


def compiled_steps(q, k, v, g, beta, S, scale: float, erase=None, write=None):
    """Steps 2–5 of the chunked form compiled, the same steps chunk by chunk in C++ (:func:`lineage.ops.native.
    chunk_steps`, the speed knob :data:`NATIVE_CHUNKS`), where they can run: on a CPU, in fp32 or fp64, with the
    strong-gate knob on (the loop always flushes) and no gradient to record; else None, and the caller runs its steps.
    The gates are made decay factors in the loop as :func:`decay_factors` makes them.

    Args: the chunks as step 1 cuts them, q, k [B·H, N, C, K], v [B·H, N, C, V], g [B·H, N, C, 1|K] or None, beta
    [B·H, N, C] or None; S [B·H, K, V]; erase and write, Gated DeltaNet-2's gates in place of beta. Returns o
    [B·H, N, C, V] and the final state, or None.
    """
    runs = NATIVE_CHUNKS and FLUSH_DECAYS and not records_gradients(q, k, v, g, beta, S, erase, write)
    if not (runs and native.steps_usable(q)):
        return None
    return native.chunk_steps(q, k, v, g, beta, S, scale, _log_floor(q.dtype), flush_cut(q.dtype), erase, write)


def unchunked(o: torch.Tensor, S: torch.Tensor, B: int, H: int, T: int, out_dtype: torch.dtype, final: bool):
    """The chunked forms' results as their callers take them: the outputs [B·H, N, C, V] as [B, H, T, V] (the padded
    tail cut off) in ``out_dtype``, the final state [B·H, K, V] as [B, H, K, V] if ``final``, else None."""
    o = o.view(B, H, -1, o.shape[-1])[:, :, :T]
    return o.to(out_dtype), (S.reshape(B, H, *S.shape[-2:]) if final else None)


def _by_chunk(x: torch.Tensor, BH: int, N: int) -> tuple[torch.Tensor, ...]:
    """The N chunk slices of [B·H·N, ...] (head-major chunks): slice n is chunk n of every head, (B·H, ...)."""
    return x.view(BH, N, *x.shape[1:]).unbind(1)


def chunk_memory(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    *,
    rule: Rule = "additive",
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    chunk_size: int | None = None,
    per_channel: bool | None = None,
):
    """Chunkwise-parallel form: matrix products inside chunks of C steps, a state hand-off between chunks.

    The code runs these steps in order, top to bottom. Per chunk, with S the state entering it and G the cumulative
    log-decay inside it (G_i = Σ_{s ≤ i} g_s over its steps 1 … C):

        1. cut the sequence into chunks of C steps
        2. A_qk = Σ_c q_ic k_jc e^{G_ic − G_jc} (i ≥ j),  A_kk likewise (i > j)
        3. T_ut = (I + StrictTril(diag(β) A_kk))⁻¹ diag(β),  U = T_ut V,  W = T_ut (K ⊙ e^G)   (delta rule only)
        4. u = U − W S (additive: u = V), then the hand-off  S ← e^{G_C} S + (K ⊙ e^{G_C − G})ᵀ u
        5. O = (Q ⊙ e^G) S + A_qk u, with the S that entered the chunk

    :func:`chunk_memory_minimal` runs the same steps, numbered alike: it is what this function computes, minus the
    anchors and the speed knobs. The anchors: step 2 never forms e^{G_i − G_j} from two cumulative sums;
    :func:`decayed_products` sums a scalar gate's segments directly (:func:`segment_sum_products`) and factors a
    per-channel gate's decay through a step between each pair (:func:`anchored_products`, fla's sub-chunk anchor from
    ``fla/ops/kda/chunk_intra.py`` applied recursively), so every factor is in [0, 1] and a wipe (α = 0) inside a
    chunk gives the loop's answer, not NaN; and a decay below ∛tiny is 0 (the strong-gate knob, :data:`FLUSH_DECAYS`),
    so that fast-forgetting gates (α ≈ 0.04 a step) leave no subnormal factor to put the CPU on its slow path. The speed
    knobs, which change nothing but speed (each is tested for equal results), are labelled in the code: on a CPU where
    nothing records gradients, steps 2–5 run compiled, chunk by chunk in C++ (:data:`NATIVE_CHUNKS`,
    :func:`lineage.ops.native.chunk_steps`, the same steps in ``chunk_steps.cpp``); in Python, steps 2–5 run
    on spans of consecutive chunks of every head at once (all chunks on a GPU, ``CPU_SLAB`` per thread on a CPU);
    inside a span only step 4's hand-off is a loop over chunks (two small products each), and step 5 computes every
    chunk's outputs at once from the states step 4 kept; step 3 inverts by blocks (:func:`unit_lower_inverse`,
    ``INVERSE_BLOCK``). Per chunk the state costs ≈ 2·C·K·V per product and the
    work inside the chunk ≈ 2·C²·K or 2·C²·V per product (term by term: ``lineage.measure.bench.chunk_flop_model``).

    Args and returns are those of :func:`recurrent_memory` (without ``trace``), plus ``chunk_size`` ≥ 1 (None:
    :func:`default_chunk_size` of q's device; 1: :func:`scan_memory`, the steps above with chunks of one step). T need
    not be a multiple of the chunk size: the tail is padded with steps that neither decay nor write.
    """
    B, H, T, K, V, scale = _validate(q, k, v, g, beta, rule, scale, initial_state, per_channel)
    C = default_chunk_size(q.device) if chunk_size is None else checks.chunk_size(chunk_size)
    out_dtype, gated = v.dtype, g is not None
    q, k, v, g, beta, S = _prepare(q, k, v, g, beta, initial_state, K)
    if C == 1:  # a chunk of one step is one step of the recurrence: the scan runs it, without 1×1 products
        o, S = _Scan.apply(q, k, v, g if gated else None, beta, S, scale)
        return o.to(out_dtype), (S if output_final_state else None)

    # [panel:chunk-step-1] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
    # 1. cut every head's sequence into N chunks of C steps, [B·H, N, C, ·]; the last chunk is filled up with steps
    #    that neither decay nor write (k = 0 and β = 0 write nothing, g = 0 decays nothing)
    # [panel:chunk-step-1] end
    C = min(C, T)
    N = -(-T // C)
    BH = B * H
    pad = N * C - T
    if pad:
        q, k, v, g = (torch.nn.functional.pad(x, (0, 0, 0, pad)) for x in (q, k, v, g))
        beta = None if beta is None else torch.nn.functional.pad(beta, (0, pad))
    q, k, v, g = (x.reshape(BH, N, C, x.shape[-1]) for x in (q, k, v, g))
    g = g if gated else None
    beta = None if beta is None else beta.reshape(BH, N, C)
    S = q.new_zeros(BH, K, V) if S is None else S.reshape(BH, K, V)
    # Speed knob, no maths (NATIVE_CHUNKS): on a CPU with no gradient to record, steps 2–5 below run compiled
    if (compiled := compiled_steps(q, k, v, g, beta, S, scale)) is not None:
        return unchunked(*compiled, B, H, T, out_dtype, output_final_state)

    # Speed knob, no maths: steps 2–5 run on a span of n consecutive chunks of every head at once, batched as
    # Z = B·H·n chunks [Z, C, ·], and S is carried from span to span (span_chunks: every chunk, except on a CPU).
    # In the loop, q, k, v, g and beta are the span's chunks.
    whole = (q, k, v, g, beta)
    outputs = []
    for n, (q, k, v, g, beta) in chunk_spans(whole):
        q = scale * q  # the read scale goes on the queries

        # [panel:chunk-step-2] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # 2. the decays inside each chunk (restarted at every chunk, so every factor is in [0, 1]) and the decayed
        #    products A_qk and A_kk, 0 above the diagonal: no future key, no past query
        rows = (q, k) if rule == "delta" else (q,)  # A_kk only feeds the delta rule's WY/UT transform (step 3)
        if g is None:  # α = 1: the decay is the causal mask (A_kk needs none: step 3 reads its strict lower part)
            A_qk, *A_kk = (q @ k.mT).mul_(_lower_ones(C, q.dtype, q.device)), *(x @ k.mT for x in rows[1:])
            q_dec, k_dec, chunk_decay = q, k, None
        else:
            decay, (A_qk, *A_kk) = decayed_products(k, g, *rows)  # no positive exponent, see decayed_products
            q_dec = q * decay.from_start  # Q ⊙ e^G: how each query sees the incoming state
            k_dec = k * decay.to_end  # K ⊙ e^{G_C − G}: how much of each write is left at the chunk's end
            chunk_decay = decay.chunk  # e^{G_C}: the incoming state's decay over the whole chunk
        # [panel:chunk-step-2] end

        # [panel:chunk-step-3] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # 3. the values each chunk writes: V itself (additive), or the delta rule's U and W, its values corrected for
        #    one another and what each must subtract from the incoming state (the WY/UT transform; step 4 takes u)
        if rule == "delta":
            k_from_start = k if g is None else k * decay.from_start  # K ⊙ e^G
            U, W = ut_transform(A_kk[0], beta, v, k_from_start)
        # [panel:chunk-step-3] end

        # [panel:chunk-step-4] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # 4. the hand-off from chunk to chunk: the one loop over chunks. Chunk i of every head is one (B·H, ·) slice;
        #    each chunk's incoming state is kept for step 5 (speed: the results are stacked once, after the loop, with
        #    plain out-of-place ops, so autograd differentiates through them)
        chunk = functools.partial(_by_chunk, BH=BH, N=n)
        decays = [None] * n if chunk_decay is None else chunk(chunk_decay[..., None])  # n × (BH, 1|K, 1)
        states = [S]
        if rule == "delta":
            #    the corrected values u = U − W S need the incoming state, so each chunk computes its own here
            corrected = []
            for U_i, W_i, k_dec_i, decay_i in zip(chunk(U), chunk(W), chunk(k_dec), decays, strict=True):
                u_i = torch.baddbmm(U_i, W_i, S, alpha=-1)  # U − W S                                  (BH, C, V)
                S = torch.baddbmm(S if decay_i is None else decay_i * S, k_dec_i.mT, u_i)  # e^{G_C} S + K_decᵀ u
                states.append(S)
                corrected.append(u_i)
            u = torch.stack(corrected, dim=1).view(BH * n, C, V)
        # [panel:chunk-step-4] end
        else:
            #    additive: u = V, and S ← e^{G_C} S + K_decᵀ V, whose second term needs no state (speed: all chunks'
            #    at once, before the loop)
            u = v
            for written_i, decay_i in zip(chunk(k_dec.mT @ v), decays, strict=True):
                S = written_i + S if decay_i is None else torch.addcmul(written_i, decay_i, S)
                states.append(S)

        # [panel:chunk-step-5] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # 5. the outputs, O = (Q ⊙ e^G) S + A_qk u with the state S that entered each chunk (speed: all of the span's
        #    chunks at once, from the states step 4 kept)
        starts = torch.stack(states[:-1], dim=1).view(BH * n, K, V)
        o = torch.baddbmm(A_qk @ u, q_dec, starts)
        # [panel:chunk-step-5] end
        outputs.append(o.view(BH, n, C, V))

    o = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=1)
    return unchunked(o, S, B, H, T, out_dtype, output_final_state)


def chunk_memory_minimal(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    *,
    rule: Rule = "additive",
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    chunk_size: int = 16,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The chunked form on one screen, in fp64 and in :func:`chunk_memory`'s numbered steps: what chunk_memory
    computes, minus the anchors and the speed knobs (spans of chunks, the block inverse, the batched hand-off and
    outputs). Read it beside the papers (Yang et al. 2024, §3; Kimi Linear, §3) as Mamba's ``ssd_minimal.py`` is read
    beside SSD.

    e^{G_i − G_j} is taken on the causal triangle only, so no positive exponent is ever formed, but it is a
    [C, C, K] tensor per chunk, and a wipe (α = 0, g = −∞) makes G_i − G_j undefined (−∞ + ∞) once the wipe is
    inside the chunk: :func:`chunk_memory` handles both (segment sums or anchored products, see
    :func:`decayed_products`). Args as :func:`recurrent_memory`, with ``chunk_size``; returns (o, S_T) in fp64.
    """
    B, H, T, K, V, scale = _validate(q, k, v, g, beta, rule, scale, initial_state, None)
    q, k, v = (x.double() for x in (q, k, v))
    g = q.new_zeros(B, H, T, 1) if g is None else g.double().unsqueeze(-1) if g.dim() == 3 else g.double()
    S = q.new_zeros(B, H, K, V) if initial_state is None else initial_state.double()
    o = q.new_empty(B, H, T, V)
    for start in range(0, T, chunk_size):
        # 1. the chunk: its C steps of every head (the last chunk may be shorter)
        q_n, k_n, v_n, g_n = (x[:, :, start : start + chunk_size] for x in (q, k, v, g))  # (B, H, C, ·)
        C = q_n.shape[2]
        # 2. the decays inside the chunk and the decayed products. G_i = Σ_{s ≤ i} g_s, so e^{G_i} ≤ 1 is the decay
        #    from the chunk's start, and L = e^{G_i − G_j} the decay from step j to step i, on the causal triangle
        G = g_n.cumsum(2)  # (B, H, C, 1 or K)
        causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
        L = (G[:, :, :, None] - G[:, :, None]).masked_fill(~causal[..., None], -float("inf")).exp()  # (B,H,C,C,·)
        A_qk = torch.einsum("bhic,bhijc,bhjc->bhij", q_n, L, k_n)  # i ≥ j: query i reads key j
        A_kk = torch.einsum("bhic,bhijc,bhjc->bhij", k_n, L, k_n).tril(-1)  # i > j: key i sees key j's write
        # 3. what each step writes, u: v itself (additive), or the delta rule's correction, solved for the whole
        #    chunk at once (the WY/UT transform): (I + diag(β) A_kk) u = diag(β) (V − (K ⊙ e^G) S)
        if rule == "additive":
            u = v_n
        else:
            b = beta[:, :, start : start + chunk_size, None].double()  # (B, H, C, 1)
            M = torch.eye(C, dtype=q.dtype, device=q.device) + b * A_kk
            u = torch.linalg.solve_triangular(M, b * (v_n - (k_n * G.exp()) @ S), upper=False, unitriangular=True)
        # 4. the hand-off: the state at the chunk's end, S ← Diag(e^{G_C}) S + Σ_j Diag(e^{G_C − G_j}) k_j u_jᵀ
        S_in, S = S, G[:, :, -1, :, None].exp() * S + (k_n * (G[:, :, -1:] - G).exp()).transpose(-1, -2) @ u
        # 5. outputs: the incoming state decayed to each step, plus this chunk's own writes
        o[:, :, start : start + C] = scale * ((q_n * G.exp()) @ S_in + A_qk @ u)
    return o, S


def parallel_memory(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    *,
    rule: Rule = "additive",
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    per_channel: bool | None = None,
):
    """The T×T form: the whole sequence as one chunk, decays from exact segment sums.

    Additive: O = (scale Q Kᵀ ⊙ L) V + (scale Q ⊙ exp G) S_0 with the decay mask L_ij = Π_{j<s≤i} α_s
    (for linear attention D is the causal mask of ones — "attention without the softmax").
    Delta: the same with V replaced by the WY-corrected values U − W S_0 over the whole sequence.

    Memory is O(T²) (O(T²K) with per-channel gates): this form is for teaching and checking, at modest T.
    """
    B, H, T, K, V, scale = _validate(q, k, v, g, beta, rule, scale, initial_state, per_channel)
    out_dtype = v.dtype
    q, k, v, g, beta, S = _prepare(q, k, v, g, beta, initial_state, K)
    if S is None:
        S = q.new_zeros(B, H, K, V)
    seg = segsum(g)  # [B, H, T, T, 1|K]: log Π_{j<s≤i} α_s
    G = torch.cumsum(g, dim=-2)  # only ever exponentiated alone (≤ 0), never differenced

    def products(a, b, diagonal):
        decay = torch.exp(
            seg if diagonal else seg.masked_fill(torch.eye(T, dtype=torch.bool, device=q.device)[..., None], -torch.inf)
        )
        if g.shape[-1] == 1:
            return (a @ b.transpose(-2, -1)) * decay[..., 0]
        return torch.einsum("bhik,bhjk,bhijk->bhij", a, b, decay)

    qs = scale * q
    A_qk = products(qs, k, True)
    corrected = v
    if rule == "delta":
        # M = I + diag(β) A_kk, with A_kk (strictly lower) the decayed key products
        M = torch.eye(T, dtype=q.dtype, device=q.device) + beta[..., :, None] * products(k, k, False)
        rhs = beta[..., None] * torch.cat([v, k * torch.exp(G)], dim=-1)
        sol = torch.linalg.solve_triangular(M, rhs, upper=False, unitriangular=True)
        corrected = sol[..., :V] - sol[..., V:] @ S
    o = (qs * torch.exp(G)) @ S + A_qk @ corrected
    if output_final_state:
        k_dec = k * torch.exp(seg[:, :, -1])  # exp(G_T − G_j) = exp(segsum[T−1, j])
        S = torch.exp(G[:, :, -1])[..., None] * S + k_dec.transpose(-2, -1) @ corrected
    return o.to(out_dtype), (S if output_final_state else None)


def run_memory(q, k, v, g=None, beta=None, *, rule: Rule, mode: str = "chunk", chunk_size: int | None = None, **kw):
    """Dispatch on ``mode`` ("recurrent" | "chunk" | "parallel") with the shared contract (``chunk_size`` None: the
    device's default, :func:`default_chunk_size`)."""
    checks.mode(mode)
    if chunk_size is not None:
        checks.chunk_size(chunk_size)
    if mode == "recurrent":
        return recurrent_memory(q, k, v, g, beta, rule=rule, **kw)
    if mode == "parallel":
        return parallel_memory(q, k, v, g, beta, rule=rule, **kw)
    return chunk_memory(q, k, v, g, beta, rule=rule, chunk_size=chunk_size, **kw)
