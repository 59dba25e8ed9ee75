"""Softmax attention: the math (standard, recurrent with a KV cache, FlashAttention's tiled form), GQA/MQA, the layer.

The cache itself is :mod:`lineage.ops.kv_cache`; the IO and FLOP accounting is :mod:`lineage.ops.io_cost`.

Papers
    Vaswani et al. 2017, "Attention Is All You Need" (arXiv 1706.03762): scaled dot-product attention.
    Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" (GPT-2): causal self-attention
        decoding one token at a time.
    Shazeer 2019, "Fast Transformer Decoding: One Write-Head is All You Need" (arXiv 1911.02150): MQA.
    Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", NeurIPS 2022
        (arXiv 2205.14135): tiling + online softmax, the same output with far fewer slow-memory bytes.
    Ainslie et al. 2023, "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints"
        (arXiv 2305.13245): grouped-query attention.

The equation, per head, for query t at absolute position n_t (causal: keys s <= n_t only):

    o_t = Σ_s softmax_s(scale · q_t · k_s) v_s        scale = K ** -0.5

What each step solved and what it cost:
    GPT-2 recompute   generating token N re-projects K and V for all N previous tokens: O(N) rows per step,
                      O(N²) for a whole generation (and O(N²·d) attention on top).
    KV cache          keep every k_s, v_s: one new row per step, but memory grows linearly with the context —
                      N × Hkv × (K + V) numbers per layer, which is what eventually bounds long-context decoding.
    GQA / MQA         H query heads share Hkv < H key/value heads (MQA: Hkv = 1), shrinking the cache by H / Hkv
                      at a small quality cost.
    FlashAttention    the T × T score matrix never leaves on-chip memory: key blocks are streamed past each query
                      block while a running max m and running sum l keep the softmax exact. Same FLOPs (slightly
                      more), far fewer bytes to and from slow memory — it is an IO fix, not a memory-of-the-past fix.

Layout is [B, H, T, D] everywhere: q [B, H, T, K], k [B, Hkv, T, K], v [B, Hkv, T, V] with H % Hkv == 0;
query head h reads key/value head h // (H / Hkv) (the same grouping as ``repeat_interleave`` along the heads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from lineage import checks
from lineage.ops.io_cost import IOCount, standard_attention_io_bytes, tiled_attention_io_bytes
from lineage.ops.kv_cache import KVCache, check_cache
from lineage.ops.recurrence import default_chunk_size

__all__ = [
    "CausalSelfAttention",
    "SoftmaxTrace",
    "TiledTrace",
    "decode_cached",
    "decode_recompute",
    "decode_step",
    "fused_softmax_attention",
    "softmax_attention",
    "tiled_softmax_attention",
    "trace_softmax",
]


# ----------------------------------------------------------------------------------------------------------------
# Input checks (GQA needs its own: checks.qkv demands equal head counts)
# ----------------------------------------------------------------------------------------------------------------


def _check_gqa(q, k, v) -> tuple[int, int, int, int, int, int]:
    """Check q [B, H, T, K], k [B, Hkv, T, K], v [B, Hkv, T, V] with H % Hkv == 0; return (B, H, Hkv, T, K, V)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        checks.tensor(name, x, rank=4)
    B, H, T, K = q.shape
    Hkv = k.shape[1]
    if k.shape[0] != B or k.shape[2] != T or k.shape[3] != K:
        raise ValueError(f"k must have shape [B, Hkv, T, K] with (B, T, K) = {(B, T, K)} as in q, got {tuple(k.shape)}")
    if tuple(v.shape[:3]) != (B, Hkv, T):
        raise ValueError(
            f"v must have shape [B, Hkv, T, V] with (B, Hkv, T) = {(B, Hkv, T)} as in k, got {tuple(v.shape)}"
        )
    if T < 1 or K < 1 or v.shape[3] < 1 or Hkv < 1:
        raise ValueError(
            f"q, k, v need T >= 1, heads >= 1 and non-empty head dims, got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    if H % Hkv != 0:
        raise ValueError(
            f"k has {Hkv} kv heads, which must divide q's {H} heads (GQA groups H / Hkv query heads "
            f"per kv head); got q {tuple(q.shape)}, k {tuple(k.shape)}"
        )
    return B, H, Hkv, T, K, v.shape[3]


# ----------------------------------------------------------------------------------------------------------------
# 1. The standard form: materialise the scores (also the one decode step of the recurrent form)
# ----------------------------------------------------------------------------------------------------------------


def _attend(q, k, v, scale: float, causal: bool, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(scale · q kᵀ + mask) v with query i at absolute position offset + i.

    q [B, H, T, K], k [B, Hkv, S, K], v [B, Hkv, S, V], all in the compute dtype.
    Returns o [B, H, T, V] and the attention weights p [B, H, T, S].
    """
    B, H, T, K = q.shape
    Hkv, S, V = k.shape[1], k.shape[2], v.shape[3]
    G = H // Hkv
    # GQA without copying k, v: the G query heads of one kv head become extra query rows.
    q_g = q.reshape(B, Hkv, G * T, K)  # (B, Hkv, G·T, K)
    s = (q_g @ k.transpose(-1, -2)) * scale  # (B, Hkv, G·T, S)
    if causal:
        # key s is visible to query i when s <= offset + i (diagonal included: a token sees itself)
        visible = torch.arange(S, device=q.device)[None, :] <= (offset + torch.arange(T, device=q.device))[:, None]
        # added as 0 / −∞, the same scores (speed: on a 2-core Xeon, 1 thread, [8, 4, 1, 256, 256] scores, the add took
        # 0.58 ms and masked_fill by a bool 1.76 ms)
        hidden = torch.zeros(T, S, dtype=s.dtype, device=q.device).masked_fill_(~visible, float("-inf"))
        s = (s.view(B, Hkv, G, T, S) + hidden).view(B, Hkv, G * T, S)
    p = torch.softmax(s, dim=-1)
    o = p @ v  # (B, Hkv, G·T, V)
    return o.reshape(B, H, T, V), p.reshape(B, H, T, S)


# ----------------------------------------------------------------------------------------------------------------
# 2. The tiled form: online softmax over key blocks (FlashAttention)
# ----------------------------------------------------------------------------------------------------------------


def _tiled(q, k, v, scale: float, causal: bool, offset: int, C: int, record: bool = False):
    """FlashAttention's forward pass, vectorised over query blocks, looping over key blocks.

    For every query row keep the running max m, the running sum l = Σ exp(s − m) and the unnormalised output
    acc = Σ exp(s − m) v. A new key block with scores s_j updates them exactly:

        m' = max(m, rowmax(s_j))          l' = exp(m − m') l + Σ exp(s_j − m')
        acc' = exp(m − m') acc + exp(s_j − m') v_j                 and finally o = acc / l

    The paper's Algorithm 1 puts key blocks in the outer loop too; here each step advances every query block at
    once. Causal: query block i only visits key blocks that hold a key at or before its last row.

    q [B, H, T, K], k [B, Hkv, S, K], v [B, Hkv, S, V] (compute dtype), query i at absolute position offset + i.
    Returns o [B, H, T, V], m [B, H, T], l [B, H, T] and, when ``record``, a list with one entry per key block j:
    (j, first query block visited, m [nQ, C], l [nQ, C]) for batch 0, head 0 after that key block.
    """
    B, H, T, K = q.shape
    Hkv, S, V = k.shape[1], k.shape[2], v.shape[3]
    G = H // Hkv
    nQ, nK = math.ceil(T / C), math.ceil(S / C)
    # pad the queries to whole blocks; padded rows compute harmless values and are dropped at the end
    q_b = torch.nn.functional.pad(q, (0, 0, 0, nQ * C - T)).reshape(B, Hkv, G, nQ, C, K)  # (B, Hkv, G, nQ, C, K)
    m = torch.full((B, Hkv, G, nQ, C), float("-inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros_like(m)
    acc = torch.zeros((B, Hkv, G, nQ, C, V), dtype=q.dtype, device=q.device)
    q_pos = offset + torch.arange(nQ * C, device=q.device).view(nQ, C)  # absolute position of each query row
    steps = []
    for j in range(nK):
        k_j, v_j = k[:, :, j * C : (j + 1) * C], v[:, :, j * C : (j + 1) * C]  # (B, Hkv, Cj, ·)
        k_pos = torch.arange(j * C, j * C + k_j.shape[2], device=q.device)
        # causal: block i's last row sits at offset + iC + C − 1, so blocks i < (jC − offset) // C see nothing here
        i0 = max(0, (j * C - offset) // C) if causal else 0
        if i0 < nQ:
            s = torch.einsum("bhgncd,bhsd->bhgncs", q_b[:, :, :, i0:], k_j) * scale  # (B, Hkv, G, n, C, Cj)
            if causal:
                s = s.masked_fill(k_pos[None, None, :] > q_pos[i0:, :, None], float("-inf"))
            m_old = m[..., i0:, :]
            m_new = torch.maximum(m_old, s.amax(dim=-1))
            # a row that has seen no visible key yet keeps m = −inf; shift by 0 there so exp gives 0, not NaN
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - m_safe[..., None])  # (B, Hkv, G, n, C, Cj)
            rescale = torch.exp(m_old - m_safe)  # exp(m − m'): shrink what was summed under the old max
            l[..., i0:, :] = rescale * l[..., i0:, :] + p.sum(dim=-1)
            acc[..., i0:, :, :] = rescale[..., None] * acc[..., i0:, :, :] + torch.einsum("bhgncs,bhsv->bhgncv", p, v_j)
            m[..., i0:, :] = m_new
        if record:
            steps.append((j, i0, m[0, 0, 0].clone(), l[0, 0, 0].clone()))
    o = (acc / l[..., None]).reshape(B, H, nQ * C, V)[:, :, :T]
    return o, m.reshape(B, H, nQ * C)[:, :, :T], l.reshape(B, H, nQ * C)[:, :, :T], steps


# ----------------------------------------------------------------------------------------------------------------
# The three modes, one function each (arguments already checked; o comes back in the compute dtype cd)
# ----------------------------------------------------------------------------------------------------------------


def _cache_copy(initial_state: KVCache | None, k: torch.Tensor, v: torch.Tensor) -> KVCache:
    """A copy of ``initial_state`` (never modified), or an empty KVCache in k's dtype and device."""
    if initial_state is not None:
        return initial_state.clone()
    B, Hkv, _, K = k.shape
    return KVCache(B, Hkv, K, v.shape[3], dtype=k.dtype, device=k.device)


def _past_and_new(k, v, initial_state: KVCache | None, cd: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The cache's N earlier keys and values followed by the T new ones, in cd: k_all [B, Hkv, N + T, K],
    v_all [B, Hkv, N + T, V], and N."""
    k_all, v_all = k.to(cd), v.to(cd)
    N = initial_state.length if initial_state is not None else 0
    if N:
        k_all = torch.cat([initial_state.keys.to(cd), k_all], dim=2)  # (B, Hkv, N + T, K)
        v_all = torch.cat([initial_state.values.to(cd), v_all], dim=2)  # (B, Hkv, N + T, V)
    return k_all, v_all, N


def _final_cache(initial_state: KVCache | None, k, v, output_final_state: bool) -> KVCache | None:
    """With ``output_final_state``, a new KVCache holding the N cached and the T new tokens; else None."""
    if not output_final_state:
        return None
    final = _cache_copy(initial_state, k, v)
    final.append(k, v)
    return final


def _softmax_parallel(q, k, v, scale: float, causal: bool, initial_state, output_final_state: bool, cd):
    """mode="parallel": materialise the T × (N + T) scores, mask, softmax (GPT-2's form). Returns (o in cd, cache)."""
    k_all, v_all, N = _past_and_new(k, v, initial_state, cd)
    o, _ = _attend(q.to(cd), k_all, v_all, scale, causal, offset=N)
    return o, _final_cache(initial_state, k, v, output_final_state)


def _softmax_chunk(q, k, v, scale: float, causal: bool, initial_state, output_final_state: bool, cd, C: int):
    """mode="chunk": FlashAttention's tiling, query and key blocks of C with an online softmax. Returns (o in cd,
    cache)."""
    k_all, v_all, N = _past_and_new(k, v, initial_state, cd)
    o, _, _, _ = _tiled(q.to(cd), k_all, v_all, scale, causal, offset=N, C=C)
    return o, _final_cache(initial_state, k, v, output_final_state)


def _softmax_recurrent(q, k, v, scale: float, initial_state, output_final_state: bool, cd):
    """mode="recurrent" (causal only): append k_t, v_t to a copy of the cache, attend q_t to all of it, t = 0 … T − 1.
    Returns (o in cd, cache)."""
    B, H, T, _ = q.shape
    cache = _cache_copy(initial_state, k, v)
    o = torch.empty((B, H, T, v.shape[3]), dtype=cd, device=q.device)
    for t in range(T):
        cache.append(k[:, :, t : t + 1], v[:, :, t : t + 1])
        o_t, _ = _attend(
            q[:, :, t : t + 1].to(cd), cache.keys.to(cd), cache.values.to(cd), scale, True, offset=cache.length - 1
        )
        o[:, :, t : t + 1] = o_t
    return o, (cache if output_final_state else None)


# ----------------------------------------------------------------------------------------------------------------
# The public op
# ----------------------------------------------------------------------------------------------------------------


def softmax_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float | None = None,
    causal: bool = True,
    initial_state: KVCache | None = None,
    output_final_state: bool = False,
    mode: str = "chunk",
    chunk_size: int | None = None,
) -> tuple[torch.Tensor, KVCache | None]:
    """Scaled dot-product attention, o_t = Σ_s softmax_s(scale · q_t · k_s) v_s, in three equivalent forms.

    The package's op convention (``lineage.__init__``) with what differs for softmax attention: no g or beta (there
    is no write rule); an extra ``causal``; and the state is not a fixed [B, H, K, V] matrix but the KVCache of every
    earlier key and value, which grows with the context.

    Modes:
        "chunk"      (default) FlashAttention's tiling: query and key blocks of ``chunk_size`` with an online
                     softmax — the package's "chunk" form, the score matrix never materialised whole.
        "parallel"   materialise the T × (N + T) scores, mask, softmax (GPT-2's form).
        "recurrent"  decode token by token: append k_t, v_t to a KVCache, attend q_t to the whole cache.
                     Causal only (a token cannot attend to keys that have not arrived).

    Args:
        q: [B, H, T, K].
        k: [B, Hkv, T, K] with H % Hkv == 0 (Hkv = H: MHA, 1 < Hkv < H: GQA, Hkv = 1: MQA).
        v: [B, Hkv, T, V].
        scale: defaults to K ** -0.5.
        causal: query t sees keys at positions <= its own.
        initial_state: a KVCache of N earlier tokens; the T new queries sit at positions N .. N + T − 1 and attend
            to the cache and the new keys. It is not modified.
        output_final_state: also return a new KVCache holding all N + T tokens (in the cache's / k's dtype).
        mode: see above.
        chunk_size: the block size of "chunk" (checked in every mode); None is the device's,
            :func:`lineage.ops.recurrence.default_chunk_size` of q's device (64 on a GPU, 32 on a CPU).

    Returns:
        o [B, H, T, V] in v's dtype (computed in fp32, fp64 stays fp64), and the KVCache or None.
    """
    B, H, Hkv, T, K, V = _check_gqa(q, k, v)
    checks.mode(mode)
    C = default_chunk_size(q.device) if chunk_size is None else checks.chunk_size(chunk_size)
    scale = checks.scale(scale, K)
    checks.boolean("causal", causal)
    checks.boolean("output_final_state", output_final_state)
    check_cache(initial_state, B, Hkv, K, V)
    if mode == "recurrent" and not causal:
        raise ValueError(
            "causal=False has no recurrent form: decoding token by token cannot see future keys; "
            "use mode='parallel' or 'chunk'"
        )
    cd = checks.compute_dtype(q, k, v)
    if mode == "recurrent":
        o, final = _softmax_recurrent(q, k, v, scale, initial_state, output_final_state, cd)
    elif mode == "parallel":
        o, final = _softmax_parallel(q, k, v, scale, causal, initial_state, output_final_state, cd)
    else:
        o, final = _softmax_chunk(q, k, v, scale, causal, initial_state, output_final_state, cd, C)
    return o.to(v.dtype), final


def fused_softmax_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: float | None = None, causal: bool = True
) -> torch.Tensor:
    """:func:`softmax_attention` in its "parallel" mode, through torch's fused kernel: the layers' training path.

    The same o_t = Σ_s softmax_s(scale · q_t · k_s) v_s (GQA included), computed by
    ``torch.nn.functional.scaled_dot_product_attention``, which on a CPU tiles the scores FlashAttention's way
    instead of materialising the T × T matrix and its mask: one kernel forward and one backward (at T = 64, head dim
    8, on a CPU: 2.3× the explicit form's forward, 1.4× its forward and backward). No cache: T queries, T keys.

    Args: q [B, H, T, K], k [B, Hkv, T, K], v [B, Hkv, T, V] with H % Hkv == 0; scale (default K ** -0.5); causal.
    Returns o [B, H, T, V] in v's dtype (computed in fp32, fp64 stays fp64).
    """
    B, H, Hkv, T, K, V = _check_gqa(q, k, v)
    scale = checks.scale(scale, K)
    checks.boolean("causal", causal)
    cd = checks.compute_dtype(q, k, v)
    o = torch.nn.functional.scaled_dot_product_attention(
        q.to(cd), k.to(cd), v.to(cd), is_causal=causal, scale=scale, enable_gqa=Hkv != H
    )
    return o.to(v.dtype)


def decode_step(
    q_t: torch.Tensor, k_t: torch.Tensor, v_t: torch.Tensor, cache: KVCache, *, scale: float | None = None
) -> torch.Tensor:
    """One decoding step with a KV cache: append k_t, v_t to ``cache`` (in place), then attend q_t to all of it.

        cache ← cache ∪ {(k_t, v_t)}          o_t = Σ_s softmax_s(scale · q_t · k_s) v_s   over the whole cache

    The hot path the benchmark times: shapes are checked, values are not scanned for NaN (that would force a
    device sync every step). Several new tokens (a prefill) also work: they attend causally.

    Args:
        q_t: [B, H, n, K] (n = 1 for a decode step).
        k_t: [B, Hkv, n, K], v_t: [B, Hkv, n, V].
        cache: KVCache with matching (B, Hkv, K, V); grows by n.

    Returns:
        o_t [B, H, n, V] in q_t's dtype.
    """
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
    if not isinstance(q_t, torch.Tensor) or q_t.dim() != 4:
        raise ValueError(f"q_t must be a tensor of shape [B, H, n, K], got {getattr(q_t, 'shape', type(q_t))}")
    B, H, n, K = q_t.shape
    if (cache.batch, cache.key_dim) != (B, K) or H % cache.kv_heads != 0:
        raise ValueError(
            f"q_t must have shape [B, H, n, K] with B = {cache.batch}, K = {cache.key_dim} and H a "
            f"multiple of the cache's {cache.kv_heads} kv heads, got {tuple(q_t.shape)}"
        )
    if k_t.dim() != 4 or k_t.shape[2] != n:
        raise ValueError(f"k_t must have shape [B, Hkv, n, K] with n = {n} as in q_t, got {tuple(k_t.shape)}")
    scale = checks.scale(scale, K)
    cache.append(k_t, v_t)
    cd = checks.compute_dtype(q_t, cache.keys)
    o_t, _ = _attend(q_t.to(cd), cache.keys.to(cd), cache.values.to(cd), scale, True, offset=cache.length - n)
    return o_t.to(q_t.dtype)


# ----------------------------------------------------------------------------------------------------------------
# Traces for the animations
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TiledTrace:
    """The online softmax at work, for batch 0, head 0.

    Steps are (query block, key block) pairs in FlashAttention-2 order: for each query block, its key blocks left
    to right. Rows past T in the last query block are NaN.

    Attributes:
        block_size: rows per query block and keys per key block.
        q_block, k_block: [n_steps] int, the pair processed at each step.
        m_steps, l_steps: [n_steps, block_size], running max and running sum of the query block's rows after
            the step.
        m_final, l_final: [T], the row max of the (masked) scaled scores and the softmax normaliser
            Σ_s exp(scale·q·k_s − m).
        io_standard, io_tiled: slow-memory bytes of the two algorithms for this T, head dim K, and q's dtype.
    """

    block_size: int
    q_block: np.ndarray
    k_block: np.ndarray
    m_steps: np.ndarray
    l_steps: np.ndarray
    m_final: np.ndarray
    l_final: np.ndarray
    io_standard: IOCount
    io_tiled: IOCount


def tiled_softmax_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block_size: int = 64,
    scale: float | None = None,
    causal: bool = True,
) -> tuple[torch.Tensor, TiledTrace]:
    """FlashAttention's tiled forward pass plus the trace of its running statistics.

    Same output as ``softmax_attention(..., mode="parallel")``; the trace (batch 0, head 0) records m and l
    after every visited (query block, key block) pair, and the IO byte counts of both algorithms.

    Args:
        q: [B, H, T, K], k: [B, Hkv, T, K], v: [B, Hkv, T, V].
        block_size: query and key block size.

    Returns:
        o [B, H, T, V] in q's dtype, and a TiledTrace.
    """
    B, H, Hkv, T, K, V = _check_gqa(q, k, v)
    checks.positive_int("block_size", block_size)
    scale = checks.scale(scale, K)
    checks.boolean("causal", causal)
    cd = checks.compute_dtype(q, k, v)
    o, m, l, steps = _tiled(q.to(cd), k.to(cd), v.to(cd), scale, causal, offset=0, C=block_size, record=True)

    n_q = math.ceil(T / block_size)
    visited = sorted((i, j) for j, i0, _, _ in steps for i in range(i0, n_q))  # FlashAttention-2 order
    m_steps = np.array([steps[j][2][i].cpu().numpy() for i, j in visited], dtype=np.float64)
    l_steps = np.array([steps[j][3][i].cpu().numpy() for i, j in visited], dtype=np.float64)
    pad_rows = np.arange(n_q * block_size).reshape(n_q, block_size) >= T
    last_block_rows = np.array([pad_rows[i] for i, _ in visited])
    m_steps[last_block_rows] = np.nan
    l_steps[last_block_rows] = np.nan
    io = {"bytes_per_element": q.element_size()}
    trace = TiledTrace(
        block_size=block_size,
        q_block=np.array([i for i, _ in visited], dtype=np.int64),
        k_block=np.array([j for _, j in visited], dtype=np.int64),
        m_steps=m_steps,
        l_steps=l_steps,
        m_final=m[0, 0].cpu().double().numpy(),
        l_final=l[0, 0].cpu().double().numpy(),
        io_standard=standard_attention_io_bytes(T, K, causal=causal, **io),
        io_tiled=tiled_attention_io_bytes(T, K, block_size=block_size, causal=causal, **io),
    )
    return o.to(q.dtype), trace


@dataclass(frozen=True)
class SoftmaxTrace:
    """Causal decoding of one head with a KV cache, step by step (numpy).

    The cache after step t is keys[: t + 1], values[: t + 1]; ``cache_bytes[t]`` is what it holds then.

    Attributes:
        attn: [T, T], row t = attention weights of query t over keys 0..t (zeros above the diagonal).
        keys: [T, K], values: [T, V], outputs: [T, V].
        cache_bytes: [T] int, KVCache.nbytes after each step.
    """

    attn: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    outputs: np.ndarray
    cache_bytes: np.ndarray


def trace_softmax(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: float | None = None) -> SoftmaxTrace:
    """Decode one head token by token through a KVCache and record what an animation needs.

    Args:
        q: [T, K] or [B, H, T, K] (then batch 0, head 0 is traced, with k, v head 0, the kv head it reads).
        k: [T, K] or [B, Hkv, T, K].
        v: [T, V] or [B, Hkv, T, V].

    Returns:
        SoftmaxTrace of numpy arrays (float64, cache_bytes int64).
    """
    for name, x in (("q", q), ("k", k), ("v", v)):
        checks.tensor(name, x, rank=(2, 4))
    if not (q.dim() == k.dim() == v.dim()):
        raise ValueError(f"q, k, v must all be [T, D] or all [B, H, T, D], got ranks {q.dim()}, {k.dim()}, {v.dim()}")
    if q.dim() == 4:
        q, k, v = q[0, 0], k[0, 0], v[0, 0]
    _check_gqa(q[None, None], k[None, None], v[None, None])
    T, K = q.shape
    scale = checks.scale(scale, K)
    cd = checks.compute_dtype(q, k, v)
    cache = KVCache(1, 1, K, v.shape[1], dtype=k.dtype, device=k.device)
    attn = np.zeros((T, T))
    outputs = np.zeros((T, v.shape[1]))
    cache_bytes = np.zeros(T, dtype=np.int64)
    for t in range(T):
        cache.append(k[None, None, t : t + 1], v[None, None, t : t + 1])
        o_t, p_t = _attend(
            q[None, None, t : t + 1].to(cd), cache.keys.to(cd), cache.values.to(cd), scale, True, offset=t
        )
        attn[t, : t + 1] = p_t[0, 0, 0].cpu().double().numpy()
        outputs[t] = o_t[0, 0, 0].cpu().double().numpy()
        cache_bytes[t] = cache.nbytes
    return SoftmaxTrace(
        attn=attn,
        keys=k.detach().cpu().double().numpy(),
        values=v.detach().cpu().double().numpy(),
        outputs=outputs,
        cache_bytes=cache_bytes,
    )


# ----------------------------------------------------------------------------------------------------------------
# The layer
# ----------------------------------------------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    """GPT-2-style causal self-attention (nanoGPT's ``CausalSelfAttention``), with optional GQA/MQA.

    One fused projection c_attn: x → [q (H·hd), k (Hkv·hd), v (Hkv·hd)], then softmax attention, then c_proj.

    Args:
        d_model: model width; hd = d_model / n_heads.
        n_heads: query heads H.
        n_kv_heads: key/value heads Hkv (None: = H, plain multi-head; 1: MQA). Must divide n_heads.
        bias: biases in both projections (GPT-2 has them).
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, bias: bool = True):
        super().__init__()
        checks.positive_int("d_model", d_model)
        checks.positive_int("n_heads", n_heads)
        n_kv_heads = n_heads if n_kv_heads is None else checks.positive_int("n_kv_heads", n_kv_heads)
        if d_model % n_heads:
            raise ValueError(f"n_heads must divide d_model, got d_model = {d_model}, n_heads = {n_heads}")
        if n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads must divide n_heads, got n_heads = {n_heads}, n_kv_heads = {n_kv_heads}")
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.head_dim = d_model // n_heads
        self.c_attn = nn.Linear(d_model, (n_heads + 2 * n_kv_heads) * self.head_dim, bias=bias)
        self.c_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(
        self, x: torch.Tensor, cache: KVCache | None = None, use_cache: bool = False
    ) -> tuple[torch.Tensor, KVCache | None]:
        """x [B, T, d_model] → y [B, T, d_model].

        With ``cache`` (or ``use_cache=True``, which starts one), the new keys and values are appended to the
        cache in place and the T new tokens attend to everything in it; the cache is returned. Without, the layer
        is a plain causal forward and returns (y, None).
        """
        checks.tensor("x", x, rank=3)
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape [B, T, d_model] with d_model = {self.d_model}, got {tuple(x.shape)}")
        B, T, _ = x.shape
        H, Hkv, hd = self.n_heads, self.n_kv_heads, self.head_dim
        q, k, v = self.c_attn(x).split([H * hd, Hkv * hd, Hkv * hd], dim=-1)
        q = q.view(B, T, H, hd).transpose(1, 2)  # (B, H, T, hd)
        k = k.view(B, T, Hkv, hd).transpose(1, 2)  # (B, Hkv, T, hd)
        v = v.view(B, T, Hkv, hd).transpose(1, 2)  # (B, Hkv, T, hd)
        if cache is None and not use_cache:
            with checks.values_checked():  # q, k, v are projections of the checked x
                o = fused_softmax_attention(q, k, v)
        else:
            if cache is None:
                cache = KVCache(B, Hkv, hd, hd, dtype=k.dtype, device=k.device)
            check_cache(cache, B, Hkv, hd, hd, name="cache")
            o = decode_step(q, k, v, cache)
        y = self.c_proj(o.transpose(1, 2).reshape(B, T, self.d_model))  # (B, T, d_model)
        return y, cache

    def state_nbytes(self, cache: KVCache | None) -> int:
        """Bytes this layer's cache holds: N × Hkv × 2·hd × B × element size (0 without a cache)."""
        return 0 if cache is None else cache.nbytes


def decode_recompute(layer: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """GPT-2 without a cache: at step t, run the layer on all of x[:, :t+1] and keep the last output row.

    Args:
        layer: a module with ``forward(x, cache=None, use_cache=False) -> (y, cache)``.
        x: [B, T, d_model].

    Returns:
        y [B, T, d_model] (equal to the full causal forward), and the number of token rows whose K and V were
        computed: 1 + 2 + … + T = T(T + 1) / 2, against T with a cache.
    """
    checks.tensor("x", x, rank=3)
    rows, outputs = 0, []
    # [panel:recompute-loop] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
    for t in range(x.shape[1]):
        y, _ = layer(x[:, : t + 1])
        rows += t + 1
        outputs.append(y[:, -1:])
    # [panel:recompute-loop] end
    return torch.cat(outputs, dim=1), rows


def decode_cached(layer: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, Any]:
    """Decode token by token with the layer's cache: each step projects one token and appends it.

    Args:
        layer: a module with ``forward(x, cache=None, use_cache=False) -> (y, cache)`` (CausalSelfAttention, MLA).
        x: [B, T, d_model].

    Returns:
        y [B, T, d_model] (equal to the full causal forward) and the final cache.
    """
    checks.tensor("x", x, rank=3)
    cache, outputs = None, []
    # [panel:cached-loop] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
    for t in range(x.shape[1]):
        y, cache = layer(x[:, t : t + 1], cache=cache, use_cache=True)
        outputs.append(y)
    # [panel:cached-loop] end
    return torch.cat(outputs, dim=1), cache
