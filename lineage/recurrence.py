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

This module holds the three ways to compute it, with identical signatures:

* :func:`recurrent_memory` — the reference: a loop over t, one line per term of the equations above. It can
  record a :class:`MemoryTrace` (state, decay, value read, delta written, output per step) for the app.
* :func:`chunk_memory` — the chunkwise-parallel form of Yang et al. 2024 ("Parallelizing Linear
  Transformers with the Delta Rule over Sequence Length", arXiv 2406.06484), extended with the scalar gate
  of Gated DeltaNet (arXiv 2412.06464) and the per-channel gate of Kimi Linear (arXiv 2510.26692). Inside a
  chunk of C steps everything is matrix products; only the state hand-off between chunks is sequential.
* :func:`parallel_memory` — the T×T "attention" form: one chunk as long as the sequence, with decays taken
  from segment sums so that a long sequence loses no precision.

The stages (``linear_attention``, ``deltanet``, ``mamba2``, ``gla``, ``gated_deltanet``, ``kda``) are thin
presets over these functions; each lives in its own module with its paper and its layer.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from lineage import _checks as checks

Rule = Literal["additive", "delta"]

# In the chunked form, log-gates below this are treated as a full wipe. exp(-GATE_FLOOR) underflows to 0 in fp32
# and is ~1e-87 in fp64, so the result is a wipe either way, while cumulative sums of clamped gates stay finite:
# -inf would make G_i - G_j = -inf - (-inf) = NaN inside a chunk. The recurrent and parallel forms take -inf as is.
GATE_FLOOR = 200.0

# Sub-chunk length for per-channel gates (see _exact_products): short enough that the C×c×K decay tensor of
# the diagonal blocks stays small, long enough that the off-diagonal blocks are real matrix products.
SUBCHUNK = 16


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
        # S' = Diag(α_t) S_{t-1} (no gate: α = 1, nothing to do)
        if gated:
            S = alpha[:, :, t, :, None] * S
        # S'ᵀ k_t: what the memory returns for k_t right now (the delta rule needs it; an additive write only
        # records it for the trace)
        read_t = torch.einsum("bhkv,bhk->bhv", S, k_t) if rule == "delta" or rec is not None else None
        # u_t = v_t (additive) or β_t (v_t − S'ᵀ k_t) (delta: write only the correction)
        u_t = v_t if rule == "additive" else beta[:, :, t, None] * (v_t - read_t)
        # S_t = S' + k_t u_tᵀ
        S = S + k_t[..., :, None] * u_t[..., None, :]
        # o_t = S_tᵀ (scale q_t)
        o[:, :, t] = torch.einsum("bhkv,bhk->bhv", S, scale * q_t)
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


def _lower(n: int, device, diagonal: int = 0) -> torch.Tensor:
    """Boolean lower-triangular mask [n, n] (i − j ≥ −diagonal), built by comparison: cheaper than torch.tril."""
    i = torch.arange(n, device=device)
    return i[:, None] - i[None, :] >= -diagonal


def _segsum(g: torch.Tensor) -> torch.Tensor:
    """Segment sums over the time axis (dim -2): out[..., i, j, c] = Σ_{j < s ≤ i} g[..., s, c] for i ≥ j, −inf above.

    Summing each segment directly (a masked cumsum over a T×T grid, as in Mamba-2's ssd_minimal) avoids the
    cancellation of G_i − G_j when both cumulative sums are large: exact for any sequence length.
    """
    T = g.shape[-2]
    x = g.unsqueeze(-3).expand(*g.shape[:-2], T, T, g.shape[-1])  # [..., i, s, c] = g[s]
    strict = _lower(T, g.device, diagonal=-1)
    x = x.masked_fill(~strict.T[..., None], 0.0).transpose(-3, -2)  # keep s > j: [..., s, j, c]
    seg = torch.cumsum(x, dim=-3)  # [..., i, j, c] = Σ_{j < s ≤ i} g[s]
    incl = _lower(T, g.device)
    return seg.masked_fill(~incl[..., None], float("-inf"))


def _factor_bound(dtype: torch.dtype) -> float:
    """Largest within-chunk log-decay span for which exp(G) and exp(−G) are both safely normal numbers."""
    return 0.7 * -math.log(torch.finfo(dtype).tiny)  # fp32: ~61, fp64: ~496


def _exact_products(q, k, G):
    """P and M of :func:`_chunk_products` for per-channel gates of any strength, by sub-chunks.

    The chunk is cut into sub-chunks of length c. Blocks on the diagonal form the c×c×K decay tensor
    directly (masked before exp, so nothing positive is exponentiated). A block (row sub-chunk r > column
    sub-chunk s) splits the decay at the end e of sub-chunk s, exp(G_i − G_j) = exp(G_i − G_e)·exp(G_e − G_j),
    two factors ≤ 1, so a matrix product computes it without ever forming exp(−G).
    """
    C, K = q.shape[-2], q.shape[-1]
    c = min(SUBCHUNK, C)
    n = -(-C // c)
    pad = n * c - C
    if pad:  # zero rows write and read nothing; g = 0 keeps G flat through the padding
        q, k = (torch.nn.functional.pad(x, (0, 0, 0, pad)) for x in (q, k))
        G = torch.cat([G, G[..., -1:, :].expand(*G.shape[:-2], pad, K)], dim=-2)
    lead = q.shape[:-2]
    q, k, G = (x.reshape(*lead, n, c, K) for x in (q, k, G))  # (..., n, c, K)

    # 1. diagonal blocks: the full decay tensor, incl. the diagonal (P needs it; the WY solve never reads M's)
    sub_mask = _lower(c, q.device)
    diff = G[..., :, None, :] - G[..., None, :, :]  # (..., n, c_i, c_j, K): G_i − G_j
    k_decay = k[..., None, :, :] * torch.exp(diff.masked_fill(~sub_mask[..., None], float("-inf")))
    diag_P = torch.einsum("...nik,...nijk->...nij", q, k_decay)  # (..., n, c, c)
    diag_M = torch.einsum("...nik,...nijk->...nij", k, k_decay)

    # 2. off-diagonal blocks (r > s): factor the decay at the end of column sub-chunk s
    G_end = G[..., -1, :]  # (..., n, K)
    k_tilde = k * torch.exp(G_end[..., None, :] - G)  # (..., s, c, K), factor ≤ 1
    lower = _lower(n, q.device, diagonal=-1)  # r > s
    row_diff = G[..., :, None, :, :] - G_end[..., None, :, None, :]  # (..., r, s, c, K): G_i − G_e(s)
    row_decay = torch.exp(row_diff.masked_fill(~lower[..., None, None], float("-inf")))
    eye = torch.eye(n, dtype=torch.bool, device=q.device)[..., None, None]

    def assemble(a, diag_blocks):
        off = torch.einsum("...rsik,...sjk->...rsij", a[..., :, None, :, :] * row_decay, k_tilde)  # (..., r, s, c, c)
        blocks = off + diag_blocks[..., :, None, :, :] * eye
        return blocks.transpose(-3, -2).reshape(*lead, n * c, n * c)[..., :C, :C]

    return assemble(q, diag_P), assemble(k, diag_M)


def _chunk_products(q, k, G, scale, beta, *, q_exp, neg_kb_exp, k_inv, hard):
    """The two decayed products of a chunk:

        P_ij = scale · Σ_c q_ic k_jc exp(G_ic − G_jc)     i ≥ j   (the read mask includes the diagonal; 0 above)
        M_ij = β_i   · Σ_c k_ic k_jc exp(G_ic − G_jc)     i > j   (only this strict lower triangle is meaningful:
                                                                   the unit-triangular solve reads nothing else)

    Args: q, k [Z, C, K] for Z chunks; G [Z, C, 1] (scalar gate), [Z, C, K] (per channel) or None (no gate),
    the inclusive within-chunk cumulative log-decay; beta [Z, C, 1] or None. The factors come from the caller:
    q_exp = q ⊙ exp G, neg_kb_exp = −β k ⊙ exp G (None without beta; negative for the caller's solve) and
    k_inv = k ⊙ exp(−G) — q, −β k and k themselves
    without a gate — and ``hard``, the chunks to recompute exactly (see :func:`_decay_factors`; None without a
    gate or when none is hard). Returns (P, M), each [Z, C, C]; M is None without beta (additive writes need no
    WY correction). The read scale rides on the matrix product (its alpha) and β on the left factor, costing no
    extra pass.

    Where a chunk's decay span is moderate, exp(G) and exp(−G) are both representable and the decay factors
    out of the channel sum: P = (q ⊙ exp G)(k ⊙ exp(−G))ᵀ is one matrix product, for a scalar gate and a
    per-channel gate alike. Chunks that decay harder are recomputed exactly: a scalar gate as
    (q kᵀ) ⊙ exp(G_i − G_j), the difference taken on the masked lower triangle so nothing overflows; a
    per-channel gate by the sub-chunk route of :func:`_exact_products`.
    """
    C = q.shape[-2]
    above = ~_lower(C, q.device)
    k_inv_t = k_inv.transpose(-2, -1)
    P = torch.baddbmm(q.new_zeros(()), q_exp, k_inv_t, beta=0, alpha=scale).masked_fill_(above, 0.0)
    # only M's strict lower triangle is ever read (by the unit-triangular solve), so nothing masks the rest
    M = None if neg_kb_exp is None else torch.baddbmm(q.new_zeros(()), neg_kb_exp, k_inv_t, beta=0, alpha=-1)
    if hard is not None:
        qh, kh, Gh = scale * q[hard], k[hard], G[hard]
        if G.shape[-1] == 1:
            decay = torch.exp((Gh - Gh.transpose(-2, -1)).masked_fill_(above, float("-inf")))
            exact_P, exact_M = (qh @ kh.transpose(-2, -1)) * decay, (kh @ kh.transpose(-2, -1)) * decay
        else:
            exact_P, exact_M = _exact_products(qh, kh, Gh)
        P[hard] = exact_P
        if M is not None:
            M[hard] = exact_M * beta[hard]
    return P, M


def _decay_factors(k, G):
    """k ⊙ exp(−G) for the factorised products, and which chunks are too hard for it.

    A chunk is hard when its strongest channel decays by more than :func:`_factor_bound` over the chunk: there
    exp(−G) would overflow, so it is clamped (only then) and every product that used it is recomputed exactly.
    Returns (k_inv [Z, C, K], hard): ``hard`` is a [Z] bool mask, or None when no chunk is hard (the common case,
    so that callers test it once, here).
    """
    bound = _factor_bound(G.dtype)
    hard = -G[..., -1, :].amin(dim=-1) > bound  # (Z,): the strongest channel's decay over each chunk
    if not hard.any():
        return k * torch.exp(-G), None
    # exp(−G) rather than 1 / exp(G): the same where it matters, and its derivative stays finite where clamped
    return k * torch.exp(-G.clamp(min=-bound)), hard


def _intra_chunk(q, k, v, G, beta, rule, scale):
    """Everything inside chunks that does not depend on the incoming state, for all Z chunks at once.

    Shapes: q, k [Z, C, K]; v [Z, C, V]; G [Z, C, 1|K] (inclusive cumsum of g inside the chunk) or None (no
    gate); beta [Z, C] or None. Returns
        q_dec = q ⊙ exp G (unscaled),
        P, the scaled read products (mask incl. diagonal),
        the values to write: V (additive) or [U | −W] = A [V | −K ⊙ exp G] in one tensor (delta; W negated so
        that the products with it come out with the sign the state hand-off needs),
        k_dec = k ⊙ exp(G_last − G), each key's decay to the chunk end.
    """
    b = None if rule == "additive" else beta[..., None]  # (Z, C, 1)
    if G is None:  # no gate: nothing decays, nothing to exponentiate
        q_dec, k_inv, k_dec, hard = q, k, k, None
        neg_kb_exp = None if b is None else k * -b
    else:  # the exponentials are shared by P, M and k_dec
        eG = torch.exp(G)
        q_dec = q * eG  # how each query sees the chunk's incoming state
        neg_kb_exp = None if b is None else k * (eG * -b)  # … and each key, weighted by −(its write strength)
        k_inv, hard = _decay_factors(k, G)
        k_dec = k_inv * eG[..., -1:, :]  # exp(G_last)·exp(−G): one product instead of another exponential
        if hard is not None:  # … except where exp(−G) was clamped
            k_dec[hard] = k[hard] * torch.exp(G[hard][..., -1:, :] - G[hard])
    P, M = _chunk_products(q, k, G, scale, b, q_exp=q_dec, neg_kb_exp=neg_kb_exp, k_inv=k_inv, hard=hard)
    if rule == "additive":
        return q_dec, P, v, k_dec
    # WY / UT representation: A = (I + StrictTril(diag(β) M))⁻¹ diag(β). W = A (K ⊙ exp G) carries the incoming
    # state's part of each corrected value. Both right-hand sides go through one triangular solve.
    rhs = torch.cat([(v * b).mT, neg_kb_exp.mT], dim=-2).mT  # diag(β) [V | −K ⊙ exp G], column-major for LAPACK
    # I + StrictTril(diag(β) M): the solve takes the unit diagonal as given and reads only the strict triangle
    values = torch.linalg.solve_triangular(M, rhs, upper=False, unitriangular=True)  # [U | −W]
    return q_dec, P, values, k_dec


def _chunks(x: torch.Tensor, BH: int, N: int) -> tuple[torch.Tensor, ...]:
    """The N chunk slices of [B·H·N, ...] (batch-major chunks): slice n is chunk n of every head, (B·H, ...)."""
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
    chunk_size: int = 64,
    per_channel: bool | None = None,
):
    """Chunkwise-parallel form: matrix products inside chunks of C steps, a state hand-off between chunks.

    Per chunk n with incoming state S (K×V) and inclusive within-chunk cumulative log-decay G:

        U − W S                                   corrected values (delta rule; additive: V)
        O_n = (Q ⊙ exp G) S + P (U − W S)         P_ij = Σ_c q_ic k_jc exp(G_ic − G_jc), i ≥ j
        S  ← Diag(exp G_last) S + (K ⊙ exp(G_last − G))ᵀ (U − W S)

    Everything that does not need S is computed for all chunks at once, and so are the outputs once every S is
    known; the loop over chunks does two small matrix products each (delta rule: W S and the state update; additive
    writes: a multiply-add).
    Cost per chunk: ≈ 2·C·K·V for the state upkeep and ≈ 2·C²·(K + V) inside the chunk, i.e. 2LD² + 2LCD
    over a sequence of length L = T with D = K = V.

    Args and returns are those of :func:`recurrent_memory` (without ``trace``), plus ``chunk_size`` ≥ 1.
    T need not be a multiple of ``chunk_size``: the tail is padded with steps that neither decay nor write.
    """
    B, H, T, K, V, scale = _validate(q, k, v, g, beta, rule, scale, initial_state, per_channel)
    C = checks.chunk_size(chunk_size)
    out_dtype, gated = v.dtype, g is not None
    q, k, v, g, beta, S = _prepare(q, k, v, g, beta, initial_state, K)
    C = min(C, T)
    N = -(-T // C)
    BH, Z = B * H, B * H * N
    pad = N * C - T
    if pad:  # padded steps: k = 0 and β = 0 write nothing, g = 0 decays nothing
        q, k, v, g = (torch.nn.functional.pad(x, (0, 0, 0, pad)) for x in (q, k, v, g))
        beta = None if beta is None else torch.nn.functional.pad(beta, (0, pad))
    # 1. split into Z = B·H·N chunks                                             # (Z, C, ·)
    q, k, v = (x.reshape(Z, C, x.shape[-1]) for x in (q, k, v))
    beta = None if beta is None else beta.reshape(Z, C)
    # 2. cumulative log-decay, restarted in every chunk (never across chunks: keeps G small and finite);
    #    a wipe (−inf) is clamped to −GATE_FLOOR so that differences G_i − G_j never meet −inf − (−inf)
    G = torch.cumsum(g.reshape(Z, C, g.shape[-1]), dim=-2) if gated else None
    if gated and G[:, -1].amin() < -GATE_FLOOR:  # g ≤ 0, so a chunk's total is below each of its steps
        G = torch.cumsum(g.clamp(min=-GATE_FLOOR).reshape(Z, C, g.shape[-1]), dim=-2)
    # 3. intra-chunk work for all chunks at once
    q_dec, P, values, k_dec = _intra_chunk(q, k, v, G, beta, rule, scale)
    # 4. the sequential hand-off between chunks runs chunk-major: chunk n of every head is one (BH, ·) slice.
    #    Each chunk's incoming state S_n is kept for the outputs in step 5. The loops collect their results in lists
    #    and stack them once (plain out-of-place ops: autograd differentiates through them).
    chunk_decay = torch.exp(G[:, -1, :]) if gated else None  # (Z, 1|K): α accumulated over each whole chunk
    chunks = functools.partial(_chunks, BH=BH, N=N)
    decay = None if chunk_decay is None else chunks(chunk_decay[..., None])  # N × (BH, 1|K, 1)
    k_dec_t = k_dec.transpose(-2, -1)  # (Z, K, C)
    S = q.new_zeros(BH, K, V) if S is None else S.reshape(BH, K, V)
    if rule == "additive":
        #    S_{n+1} = Diag(exp G_last) S_n + K_decᵀ V: everything but the decay is known up front
        written = values
        state_in = k_dec_t @ values  # (Z, K, V)
        if decay is None:  # linear attention: the state is a running sum (taken chunk-major, as the loops run)
            after = S + torch.cumsum(state_in.view(BH, N, K, V).transpose(0, 1), dim=0)  # (N, BH, K, V)
            starts = q.new_empty(BH, N, K, V)
            starts[:, 0], starts[:, 1:], S = S, after[:-1].transpose(0, 1), after[-1]
        else:
            states = [S]
            for state_in_n, decay_n in zip(chunks(state_in), decay, strict=True):  # a multiply-add per chunk
                states.append(torch.addcmul(state_in_n, decay_n, states[-1]))
            starts, S = torch.stack(states[:-1], dim=1), states[-1]
    else:
        #    delta rule, values = [U | −W]: the corrected values U − W S_n need the incoming state, so each chunk
        #    computes them, then S_{n+1} = Diag(exp G_last) S_n + K_decᵀ (U − W S_n): two small products per chunk
        states, corrected = [S], []
        U, neg_W, K_t = chunks(values[..., :V]), chunks(values[..., V:]), chunks(k_dec_t)
        for n in range(N):
            u = torch.baddbmm(U[n], neg_W[n], S)  # (BH, C, V)
            S = torch.baddbmm(S if decay is None else decay[n] * S, K_t[n], u)
            states.append(S)
            corrected.append(u)
        starts, written = torch.stack(states[:-1], dim=1), torch.stack(corrected, dim=1).view(Z, C, V)
    S = S.reshape(B, H, K, V)
    # 5. outputs of all chunks at once: O_n = P (U − W S_n) + scale (Q ⊙ exp G) S_n   (additive: P V + …)
    o = torch.baddbmm(P @ written, q_dec, starts.view(Z, K, V), alpha=scale)
    o = o.view(B, H, N * C, V)[:, :, :T]
    return o.to(out_dtype), (S if output_final_state else None)


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

    Additive: O = (scale Q Kᵀ ⊙ D) V + (scale Q ⊙ exp G) S_0 with the decay mask D_ij = Π_{j<s≤i} α_s
    (for linear attention D is the causal mask of ones — "attention without the softmax").
    Delta: the same with V replaced by the WY-corrected values U − W S_0 over the whole sequence.

    Memory is O(T²) (O(T²K) with per-channel gates): this form is for teaching and checking, at modest T.
    """
    B, H, T, K, V, scale = _validate(q, k, v, g, beta, rule, scale, initial_state, per_channel)
    out_dtype = v.dtype
    q, k, v, g, beta, S = _prepare(q, k, v, g, beta, initial_state, K)
    if S is None:
        S = q.new_zeros(B, H, K, V)
    seg = _segsum(g)  # [B, H, T, T, 1|K]: log Π_{j<s≤i} α_s
    G = torch.cumsum(g, dim=-2)  # only ever exponentiated alone (≤ 0), never differenced

    def products(a, b, diagonal):
        decay = torch.exp(
            seg if diagonal else seg.masked_fill(torch.eye(T, dtype=torch.bool, device=q.device)[..., None], -torch.inf)
        )
        if g.shape[-1] == 1:
            return (a @ b.transpose(-2, -1)) * decay[..., 0]
        return torch.einsum("bhik,bhjk,bhijk->bhij", a, b, decay)

    qs = scale * q
    P = products(qs, k, True)
    corrected = v
    if rule == "delta":
        M = beta[..., :, None] * products(k, k, False)
        eye = torch.eye(T, dtype=M.dtype, device=M.device)
        rhs = beta[..., None] * torch.cat([v, k * torch.exp(G)], dim=-1)
        sol = torch.linalg.solve_triangular(eye + M, rhs, upper=False, unitriangular=True)
        corrected = sol[..., :V] - sol[..., V:] @ S
    o = (qs * torch.exp(G)) @ S + P @ corrected
    if output_final_state:
        k_dec = k * torch.exp(seg[:, :, -1])  # exp(G_T − G_j) = exp(segsum[T−1, j])
        S = torch.exp(G[:, :, -1])[..., None] * S + k_dec.transpose(-2, -1) @ corrected
    return o.to(out_dtype), (S if output_final_state else None)


def run_memory(q, k, v, g=None, beta=None, *, rule: Rule, mode: str = "chunk", chunk_size: int = 64, **kw):
    """Dispatch on ``mode`` ("recurrent" | "chunk" | "parallel") with the shared contract."""
    checks.mode(mode)
    checks.chunk_size(chunk_size)
    if mode == "recurrent":
        return recurrent_memory(q, k, v, g, beta, rule=rule, **kw)
    if mode == "parallel":
        return parallel_memory(q, k, v, g, beta, rule=rule, **kw)
    return chunk_memory(q, k, v, g, beta, rule=rule, chunk_size=chunk_size, **kw)
