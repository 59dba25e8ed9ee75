"""Gated DeltaNet-2 — separate erase and write gates (Hatamizadeh, Choi & Kautz, NVIDIA, arXiv 2605.22791, May 2026).

https://arxiv.org/abs/2605.22791 · code: https://github.com/NVlabs/GatedDeltaNet-2 · also in flash-linear-attention
as ``fla.ops.gdn2``. The stage after the article: the lineage's story ends at KDA and the Kimi hybrid.

KDA edits its memory with one scalar per token, β, which sets both how much of the old value at k_t is erased and
how much of the new value is written. Gated DeltaNet-2 ("Gated Delta Rule-2") splits that β in two, each a vector:
an erase gate b_t on the key axis and a write gate w_t on the value axis, both in [0, 1] (sigmoids of the token in
the paper's layer). With KDA's per-channel decay α_t = exp(g_t) kept as it was:

    S'  = Diag(α_t) S_{t−1}                               decay, as in KDA
    S_t = (I − k_t (b_t ⊙ k_t)ᵀ) S' + k_t (w_t ⊙ v_t)ᵀ       erase along b_t ⊙ k_t, write w_t ⊙ v_t
        = S' + k_t u_tᵀ,    u_t = w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t)
    o_t = S_tᵀ (scale · q_t)

(the paper's eq. for the Gated Delta Rule-2, written in this package's S ∈ R^{K×V} layout; the same update is
written out in flash-linear-attention's ``fla/ops/gdn2/naive.py`` and Megatron-Core's ``gated_delta_net.gdn2``).
Where b_t = w_t = β_t·1 it is KDA, term by term; where the decay is also one scalar per head it is Gated DeltaNet.

Gain: what is erased and what is written are set apart. After a step with a unit key, the memory reads back at k_t

    S_tᵀ k_t = S'ᵀ ((1 − b_t) ⊙ k_t) + w_t ⊙ v_t          (KDA: (1 − β_t) S'ᵀ k_t + β_t v_t, always a blend)

so a token can erase an association without writing a new one (b = 1, w = 0: the read at k_t becomes 0), replace
the old value outright however weakly it writes the new one (b = 1, w < 1), add without erasing (b = 0, w = 1: GLA's
additive write), or commit only some value channels (w per channel). KDA moves erase and write together.
Cost: two gate vectors per token instead of one number (K + V per head: their projections in the layer, and their
gradients in training), and an erase that is no longer symmetric. KDA's I − β k kᵀ with a unit key is a symmetric
contraction; I − k (b ⊙ k)ᵀ keeps its eigenvalues in [0, 1] but, with an uneven b, can stretch a state along some
direction (its largest singular value exceeds 1), so unit keys alone no longer bound the state. The state itself is
KDA's size, and so is the chunked form's work: the erase gate goes into one side of the WY/UT transform's key
products (hence its asymmetric A), the write gate onto the values.

Chunked form: inside a chunk of C steps with S the incoming state and G_i = Σ_{s≤i} g_s, unrolling the update gives
one unit lower-triangular system for the chunk's written vectors u, exactly KDA's with β moved inside:

    (I + StrictTril(A_bk)) u = (W ⊙ V) − (B ⊙ K ⊙ e^G) S,    A_bk[i, j] = Σ_c b_ic k_ic k_jc e^{G_ic − G_jc}

where B, W stack the erase and write gates of the chunk. KDA's UT transform is the special case B = β·1, W = β·1
(then A_bk = diag(β) A_kk). The products come from :func:`lineage.ops.recurrence.decayed_products` (anchored decays,
exact under wipes and strong decay) with B ⊙ K as one more row factor; the inverse from
:func:`lineage.ops.recurrence.unit_lower_inverse`. The hand-off and the outputs are KDA's.
"""

from __future__ import annotations

import torch

from lineage import checks
from lineage.ops.kda import bounded_gate
from lineage.ops.recurrence import (
    MemoryTrace,
    chunk_spans,
    compiled_steps,
    decayed_products,
    default_chunk_size,
    unchunked,
    unit_lower_inverse,
)


def _unit_gate(name: str, x, shape: tuple[int, ...], axis: str) -> torch.Tensor:
    """Check a channel-wise gate of shape ``shape`` with values in [0, 1] (``axis`` names its last dimension)."""
    checks.tensor(name, x, rank=4, nan=False)
    if tuple(x.shape) != shape:
        raise ValueError(f"{name} must have shape [B, H, T, {axis}] = {shape}, got {tuple(x.shape)}")
    if not checks.scanning() or not x.numel():
        return x
    lo, hi = (m.item() for m in torch.aminmax(x))  # both NaN if x holds a NaN
    if lo != lo:
        raise ValueError(f"{name} contains NaN; every input must be a number")
    if lo < 0 or hi > 1:
        raise ValueError(
            f"{name} must lie in [0, 1], got values in [{lo:.4g}, {hi:.4g}]; "
            "use sigmoid(x) to map a raw score into range"
        )
    return x


def _validate(q, k, v, g, erase, write, scale, initial_state):
    B, H, T, K, V = checks.qkv(q, k, v)
    checks.log_gate(g, B, H, T, K, per_channel=None)  # per channel as in the paper; a scalar per head is GDN's decay
    _unit_gate("erase", erase, (B, H, T, K), "K")
    _unit_gate("write", write, (B, H, T, V), "V")
    checks.state(initial_state, B, H, K, V)
    return B, H, T, K, V, checks.scale(scale, K)


def _prepare(q, k, v, g, erase, write, initial_state):
    """Cast to the compute dtype (fp32, or fp64 if any input is fp64); the gate gets a channel axis ([B, H, T, 1|K])."""
    dtype = checks.compute_dtype(q, k, v, g, erase, write, initial_state)
    q, k, v, erase, write = (x.to(dtype) for x in (q, k, v, erase, write))
    g = g.to(dtype)
    g = g.unsqueeze(-1) if g.dim() == 3 else g
    S0 = None if initial_state is None else initial_state.to(dtype)
    return q, k, v, g, erase, write, S0


def recurrent_gated_deltanet2(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    erase: torch.Tensor,
    write: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    trace: bool = False,
):
    """The loop, one line per term: S' = Diag(e^{g_t}) S, u_t = w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t), S_t = S' + k_t u_tᵀ.

    Args:
        q, k: [B, H, T, K]; v: [B, H, T, V]
        g: log-decay ≤ 0, [B, H, T, K] (per key channel) or [B, H, T] (one per head); −inf wipes
        erase: b, [B, H, T, K] in [0, 1]; write: w, [B, H, T, V] in [0, 1]
        scale: read scale (default K ** -0.5); initial_state: [B, H, K, V] or None (zeros)
        output_final_state: also return S_T; trace: also return a :class:`~lineage.ops.recurrence.MemoryTrace`
            (its ``read`` is the erased read S'ᵀ (b_t ⊙ k_t), its ``delta`` the written u_t)

    Returns:
        o: [B, H, T, V] in v's dtype; S_T: [B, H, K, V] in the compute dtype, or None; (trace)
    """
    B, H, T, K, V, scale = _validate(q, k, v, g, erase, write, scale, initial_state)
    out_dtype = v.dtype
    q, k, v, g, erase, write, S = _prepare(q, k, v, g, erase, write, initial_state)
    if S is None:
        S = q.new_zeros(B, H, K, V)
    alpha = torch.exp(g)  # [B, H, T, 1 or K]
    o = q.new_empty(B, H, T, V)
    rec = {name: [] for name in ("states", "decay", "read", "delta")} if trace else None
    for t in range(T):
        q_t, k_t, v_t = q[:, :, t], k[:, :, t], v[:, :, t]  # (B, H, K), (B, H, K), (B, H, V)
        # [panel:gdn2-decay] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # S' = Diag(α_t) S_{t−1}
        S = alpha[:, :, t, :, None] * S
        # [panel:gdn2-decay] end
        # [panel:gdn2-erase] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # S'ᵀ (b_t ⊙ k_t): what the memory holds along the erased key (KDA reads at k_t and scales by β afterwards)
        read_t = torch.einsum("bhkv,bhk->bhv", S, erase[:, :, t] * k_t)
        # [panel:gdn2-erase] end
        # [panel:gdn2-write] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        # u_t = w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t): the gated new value minus the erased read
        u_t = write[:, :, t] * v_t - read_t
        # S_t = S' + k_t u_tᵀ
        S = S + k_t[..., :, None] * u_t[..., None, :]
        # [panel:gdn2-write] end
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


def gated_ut_transform(
    A_bk: torch.Tensor, written: torch.Tensor, erased_keys: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The WY/UT representation of a chunk of Gated Delta Rule-2 writes: KDA's transform with β moved inside.

        T_ut = (I + StrictTril(A_bk))⁻¹        A_bk[i, j] = Σ_c b_ic k_ic k_jc e^{G_ic − G_jc}   (i > j)
        U    = T_ut (W ⊙ V)                   the written values, corrected for one another
        W_s  = T_ut (B ⊙ K ⊙ e^G)             how much of the incoming state each must subtract

    so that the chunk writes u = U − W_s S. With B = W = β·1 this is ``recurrence.ut_transform``: A_bk = diag(β) A_kk,
    and (I + diag(β) A_kk)⁻¹ (β ⊙ ·) = T_ut diag(β) (·).

    Args: A_bk [Z, C, C] (only the strict lower triangle is read); written = W ⊙ V [Z, C, V]; erased_keys =
    B ⊙ K ⊙ e^G [Z, C, K]. Returns U [Z, C, V], W_s [Z, C, K].
    """
    T_ut = unit_lower_inverse(A_bk)  # (Z, C, C)
    return T_ut @ written, T_ut @ erased_keys


def chunk_gated_deltanet2(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    erase: torch.Tensor,
    write: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    chunk_size: int | None = None,
):
    """Chunkwise-parallel form, in the steps of :func:`lineage.ops.recurrence.chunk_memory`. Per chunk, with S the
    state entering it and G the cumulative log-decay inside it:

        1. cut the sequence into chunks of C steps
        2. A_qk = Σ_c q_ic k_jc e^{G_ic − G_jc} (i ≥ j),  A_bk = Σ_c b_ic k_ic k_jc e^{G_ic − G_jc} (i > j)
        3. U, W_s = :func:`gated_ut_transform` (A_bk, W ⊙ V, B ⊙ K ⊙ e^G)
        4. u = U − W_s S, then the hand-off  S ← e^{G_C} S + (K ⊙ e^{G_C − G})ᵀ u
        5. O = (Q ⊙ e^G) S + A_qk u, with the S that entered the chunk

    Steps 2, 3 and 5 run on a span of chunks of every head at once (every chunk on a GPU; on a CPU, spans of
    :func:`lineage.ops.recurrence.chunk_spans`, the state carried between them); step 4 is the one loop, over
    chunks. Args and returns are those of :func:`recurrent_gated_deltanet2` (without ``trace``), plus ``chunk_size``
    ≥ 1 (None: the device's default, :func:`lineage.ops.recurrence.default_chunk_size`). T need not be a multiple of
    C: the tail is padded with steps that neither decay nor write (k = 0, g = 0).
    """
    B, H, T, K, V, scale = _validate(q, k, v, g, erase, write, scale, initial_state)
    C = default_chunk_size(q.device) if chunk_size is None else checks.chunk_size(chunk_size)
    out_dtype = v.dtype
    q, k, v, g, erase, write, S = _prepare(q, k, v, g, erase, write, initial_state)

    # 1. the chunks: [B·H, N, C, ·]; the padded tail has k = 0 (writes nothing) and g = 0 (decays nothing)
    C = min(C, T)
    N = -(-T // C)
    BH = B * H
    pad = N * C - T
    if pad:
        q, k, v, g, erase, write = (torch.nn.functional.pad(x, (0, 0, 0, pad)) for x in (q, k, v, g, erase, write))
    chunks = [x.reshape(BH, N, C, x.shape[-1]) for x in (q, k, v, g, erase, write)]
    S = q.new_zeros(BH, K, V) if S is None else S.reshape(BH, K, V)
    # speed knob, as chunk_memory's (recurrence.NATIVE_CHUNKS): on a CPU with no gradient to record, steps 2–5 compiled
    if (compiled := compiled_steps(*chunks[:4], None, S, scale, *chunks[4:])) is not None:
        return unchunked(*compiled, B, H, T, out_dtype, output_final_state)
    outputs = []
    for n, (q, k, v, g, erase, write) in chunk_spans(chunks):  # speed: spans of chunks, as chunk_memory runs
        # 2. the decays inside each chunk and the decayed products, anchored (every factor in [0, 1], wipes exact):
        #    the erase gate rides on the left factor of the key products, so A_bk is not symmetric in i and j
        decay, (A_qk, A_bk) = decayed_products(k, g, scale * q, erase * k)
        # 3. what each chunk writes: the Gated Delta Rule-2's UT transform
        U, W_s = gated_ut_transform(A_bk, write * v, erase * k * decay.from_start)
        # 4. the hand-off from chunk to chunk, the one loop; each chunk's incoming state is kept for step 5
        k_dec = (k * decay.to_end).view(BH, n, C, K)  # K ⊙ e^{G_C − G}: what is left of each write at the chunk's end
        chunk_decay = decay.chunk.view(BH, n, -1, 1)  # e^{G_C}, (BH, n, 1|K, 1)
        U, W_s = U.view(BH, n, C, V), W_s.view(BH, n, C, K)
        starts, corrected = [], []
        for i in range(n):
            starts.append(S)
            u_i = torch.baddbmm(U[:, i], W_s[:, i], S, alpha=-1)  # U − W_s S                             (BH, C, V)
            S = torch.baddbmm(chunk_decay[:, i] * S, k_dec[:, i].mT, u_i)  # e^{G_C} S + K_decᵀ u
            corrected.append(u_i)
        u = torch.stack(corrected, dim=1).view(BH * n, C, V)
        # 5. the outputs of every chunk at once, from the states step 4 kept
        S_in = torch.stack(starts, dim=1).view(BH * n, K, V)
        outputs.append(torch.baddbmm(A_qk @ u, scale * q * decay.from_start, S_in).view(BH, n, C, V))
    o = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=1)
    return unchunked(o, S, B, H, T, out_dtype, output_final_state)


def gated_deltanet2(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    erase: torch.Tensor,
    write: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    mode: str = "chunk",
    chunk_size: int | None = None,
    gate_lower_bound: float | None = None,
):
    """Gated Delta Rule-2: S_t = (I − k_t (b_t ⊙ k_t)ᵀ) Diag(e^{g_t}) S_{t−1} + k_t (w_t ⊙ v_t)ᵀ, o_t = S_tᵀ scale q_t

    Args:
        q, k: [B, H, T, K]; v: [B, H, T, V]; g: [B, H, T, K] (or [B, H, T]) log-decay ≤ 0;
        erase: [B, H, T, K] in [0, 1] (b, key axis); write: [B, H, T, V] in [0, 1] (w, value axis)
        mode: "recurrent" (the loop), "chunk" (chunks of ``chunk_size``) or "parallel" (the whole sequence as one
            chunk: the T×T form, O(T²) memory)
        gate_lower_bound: None (the gate as given) or a finite number < 0: the op runs on KDA's bounded gate,
            :func:`lineage.ops.kda.bounded_gate` (Kimi K3's lower_bound · sigmoid; fla's GDN-2 takes the same
            ``lower_bound``)

    Returns:
        o: [B, H, T, V]; S_T: [B, H, K, V] or None
    """
    checks.mode(mode)
    if gate_lower_bound is not None:
        B, H, T, K, _ = checks.qkv(q, k, v)
        g = bounded_gate(checks.log_gate(g, B, H, T, K, per_channel=None), gate_lower_bound)
    kw = {"scale": scale, "initial_state": initial_state, "output_final_state": output_final_state}
    if chunk_size is not None:  # checked in every mode, as run_memory does, though only "chunk" reads it
        checks.chunk_size(chunk_size)
    if mode == "recurrent":
        return recurrent_gated_deltanet2(q, k, v, g, erase, write, **kw)
    if mode == "parallel":
        T = checks.qkv(q, k, v)[2]
        return chunk_gated_deltanet2(q, k, v, g, erase, write, chunk_size=T, **kw)
    return chunk_gated_deltanet2(q, k, v, g, erase, write, chunk_size=chunk_size, **kw)
