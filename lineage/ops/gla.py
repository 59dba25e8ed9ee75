"""GLA — Gated Linear Attention, Yang et al., ICML 2024 (arXiv 2312.06635).

Mamba-2 forgets with one scalar per head. GLA gives every key channel its own data-dependent decay:

    S_t = Diag(α_t) S_{t−1} + k_t v_tᵀ      α_t = exp(g_t) ∈ (0, 1]^K
    o_t = S_tᵀ (scale · q_t)

Gain: some channels can hold information for long while others turn over quickly. Cost: the decay no longer
factors out of the key sum, so the chunked form needs the per-channel decay inside the intra-chunk products
(see :func:`lineage.ops.recurrence.decayed_products`) — and writes are still additive.
It is the additive neighbour of KDA in the grid: KDA = GLA's gate + DeltaNet's write.
"""

from __future__ import annotations

import torch

from lineage.ops.recurrence import run_memory


def gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    mode: str = "chunk",
    chunk_size: int | None = None,
):
    """Per-channel gated additive memory: S_t = Diag(exp g_t) S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ (scale q_t).

    Args:
        q, k: [B, H, T, K]; v: [B, H, T, V]; g: [B, H, T, K] log-decay ≤ 0 per key channel

    Returns:
        o: [B, H, T, V]; S_T: [B, H, K, V] or None
    """
    return run_memory(
        q,
        k,
        v,
        g,
        None,
        rule="additive",
        scale=scale,
        initial_state=initial_state,
        output_final_state=output_final_state,
        mode=mode,
        chunk_size=chunk_size,
        per_channel=True,
    )
