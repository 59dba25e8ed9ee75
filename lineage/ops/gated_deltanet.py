"""Gated DeltaNet — Yang, Kautz & Hatamizadeh, ICLR 2025 (arXiv 2412.06464).

DeltaNet can edit one association at a time but cannot clear the memory in bulk; Mamba-2 can decay the whole
memory but only adds. Gated DeltaNet does both — decay first, then the delta-rule write:

    S'  = α_t S_{t−1}                               α_t = exp(g_t) ∈ [0, 1], one scalar per head
    S_t = S' + β_t k_t (v_t − S'ᵀ k_t)ᵀ = (I − β_t k_t k_tᵀ) α_t S_{t−1} + β_t k_t v_tᵀ
    o_t = S_tᵀ (scale · q_t)

α = 1 is DeltaNet; α = 0 wipes the memory before the write. An item written at step x and read at x + t has
been scaled by α_{x+1}⋯α_{x+t}: information written at different times fades at different rates.
Gain: forgetting *and* precise updates. Cost: one gate for all channels of a head — the whole head forgets
at the same speed.
"""

from __future__ import annotations

import torch

from lineage.ops.recurrence import run_memory


def gated_deltanet(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    mode: str = "chunk",
    chunk_size: int | None = None,
):
    """Scalar-gated delta rule: S_t = (I − β_t k_t k_tᵀ) exp(g_t) S_{t−1} + β_t k_t v_tᵀ, o_t = S_tᵀ (scale q_t).

    Args:
        q, k: [B, H, T, K]; v: [B, H, T, V]; g: [B, H, T] log-decay ≤ 0; beta: [B, H, T] in [0, 1]

    Returns:
        o: [B, H, T, V]; S_T: [B, H, K, V] or None
    """
    return run_memory(
        q,
        k,
        v,
        g,
        beta,
        rule="delta",
        scale=scale,
        initial_state=initial_state,
        output_final_state=output_final_state,
        mode=mode,
        chunk_size=chunk_size,
        per_channel=False,
    )
