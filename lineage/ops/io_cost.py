"""What attention costs, counted: slow-memory bytes (FlashAttention's IO model) and GPT-2's recompute FLOPs.

Two cost models, both exact counts from the algorithms' structure (nothing measured, nothing typed in):

* :func:`standard_attention_io_bytes` / :func:`tiled_attention_io_bytes`: bytes between slow memory (GPU HBM)
  and the chip for unfused attention and for FlashAttention's tiling (Dao et al. 2022, arXiv 2205.14135, §3.2);
* :func:`recompute_generation_cost`: the work of generating each token without and with a KV cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from lineage import checks

__all__ = [
    "IOCount",
    "RecomputeCost",
    "recompute_generation_cost",
    "standard_attention_io_bytes",
    "tiled_attention_io_bytes",
]


@dataclass(frozen=True)
class IOCount:
    """Bytes moved between slow memory (GPU HBM) and the compute units, for one (batch, head) of attention.

    The model is the FlashAttention paper's (Dao et al. 2022, §3.2, Algorithm 0 vs Algorithm 1/2): every kernel
    reads its operands from slow memory and writes its result back; on-chip SRAM and FLOPs are free. What
    matters is whether the T × T score matrix makes the round trip.
    """

    reads: int
    writes: int
    total: int = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "total", self.reads + self.writes)


def _check_sizes(T, D, bytes_per_element) -> None:
    checks.positive_int("T", T)
    checks.positive_int("D", D)
    checks.positive_int("bytes_per_element", bytes_per_element)


def standard_attention_io_bytes(T: int, D: int, *, bytes_per_element: int = 4, causal: bool = True) -> IOCount:
    """Slow-memory traffic of unfused attention (the paper's Algorithm 0), one head, T tokens, head dim D.

        1. S = scale · Q Kᵀ        read Q, K (2·T·D)        write S (T²)
        2. (causal) mask S         read S (T²)               write S (T²)    — a separate masked_fill, as in GPT-2
        3. P = softmax(S)          read S (T²)               write P (T²)
        4. O = P V                 read P (T²), V (T·D)      write O (T·D)

    The masked half of S is still stored: an unfused kernel writes the whole T × T matrix.
    """
    _check_sizes(T, D, bytes_per_element)
    checks.boolean("causal", causal)
    td, tt = T * D, T * T
    reads = 2 * td + tt + (tt + td)  # steps 1, 3, 4
    writes = tt + tt + td
    if causal:
        reads, writes = reads + tt, writes + tt  # step 2
    return IOCount(reads * bytes_per_element, writes * bytes_per_element)


def tiled_attention_io_bytes(
    T: int, D: int, *, block_size: int, bytes_per_element: int = 4, causal: bool = True
) -> IOCount:
    """Slow-memory traffic of tiled attention (FlashAttention-2's loop order), one head, T tokens, head dim D.

    Query block i (block_size rows) is loaded once and kept on chip; each key block it visits is loaded once as
    K and V (causal: only key blocks 0..i, the ones at or below the diagonal); O is written once. No T × T
    matrix touches slow memory. With n_Q = ceil(T / block_size) query blocks:

        reads  = T·D (Q) + 2·D · Σ_i (keys visited by block i)      Σ_i = n_Q·T, or causally Σ_i min((i+1)·B, T)
        writes = T·D (O)

    (The per-row log-sum-exp that training saves for the backward pass is not counted: this is inference.)
    """
    _check_sizes(T, D, bytes_per_element)
    checks.positive_int("block_size", block_size)
    checks.boolean("causal", causal)
    n_q = math.ceil(T / block_size)
    # every block but the last ends at (i + 1)·block_size <= T; the last one sees all T keys
    keys_visited = block_size * (n_q - 1) * n_q // 2 + T if causal else n_q * T
    reads = T * D + 2 * D * keys_visited
    writes = T * D
    return IOCount(reads * bytes_per_element, writes * bytes_per_element)


@dataclass(frozen=True)
class RecomputeCost:
    """Work to produce the token at each context length N = 1 .. n_tokens, without and with a KV cache.

    Attributes (all [n_tokens], numpy int64):
        position: N, the number of tokens in the context at that step.
        rows_recompute, rows_cached: tokens whose Q/K/V projections are computed at that step (N vs 1).
        flops_recompute, flops_cached: FLOPs of one attention layer's projections (QKV + output) and attention
            (scores + weighted sum), times n_layers. A multiply-add counts 2.
    """

    position: np.ndarray
    rows_recompute: np.ndarray
    rows_cached: np.ndarray
    flops_recompute: np.ndarray
    flops_cached: np.ndarray


def recompute_generation_cost(n_tokens: int, d_model: int, n_layers: int = 1) -> RecomputeCost:
    """Per-step cost of one attention layer generating with and without a KV cache.

    Only the attention layer is counted; without a cache the MLP is re-run on all N tokens as well.

    Without a cache (GPT-2 recompute), step N runs the layer on all N tokens:
        projections 2·N·d·3d (Q, K, V) + 2·N·d·d (output),  attention 2·N·N·d (Q Kᵀ) + 2·N·N·d (P V)
    With a cache, only the new token:
        projections 2·d·3d + 2·d·d,                          attention 2·N·d + 2·N·d
    """
    checks.positive_int("n_tokens", n_tokens)
    checks.positive_int("d_model", d_model)
    checks.positive_int("n_layers", n_layers)
    N = np.arange(1, n_tokens + 1, dtype=np.int64)
    d = d_model

    def flops(rows: np.ndarray) -> np.ndarray:  # ``rows`` query rows attending to N keys
        projections = 2 * rows * d * 3 * d + 2 * rows * d * d
        attention = 2 * rows * N * d + 2 * rows * N * d
        return n_layers * (projections + attention)

    ones = np.ones_like(N)
    return RecomputeCost(N, N.copy(), ones, flops(N), flops(ones))
