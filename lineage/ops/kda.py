"""KDA — Kimi Delta Attention, Kimi Linear (Moonshot AI, arXiv 2510.26692, October 2025).

Gated DeltaNet forgets with one scalar per head. KDA makes the gate a vector — one decay rate per key
channel, as in GLA — on top of the delta-rule write:

    S_t = (I − β_t k_t k_tᵀ) Diag(α_t) S_{t−1} + β_t k_t v_tᵀ      α_t = exp(g_t) ∈ (0, 1]^K
    o_t = S_tᵀ (scale · q_t)

In the Kimi Linear layer (see :mod:`lineage.models.layers`): q, k = L2Norm(Swish(ShortConv(W x))),
v = Swish(ShortConv(W x)), g = −exp(A_log) · softplus(W↑ W↓ x + dt_bias), β = sigmoid(W_β x), and the output
passes a sigmoid-gated RMSNorm. Kimi Linear interleaves three KDA layers per MLA layer.
Gain: each channel chooses how long to remember — slow channels keep facts, fast ones track recent context.
Cost: the per-channel decay sits inside the key sums of the chunked form, so its intra-chunk products cannot
be a plain decay-masked Q Kᵀ: :func:`lineage.ops.recurrence.decayed_products` builds them from matrix products of
factors split at causal anchors, exact at every gate strength.
"""

from __future__ import annotations

import torch

from lineage.ops.recurrence import run_memory


def kda(
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
    """Per-channel gated delta rule: S_t = (I − β_t k_t k_tᵀ) Diag(exp g_t) S_{t−1} + β_t k_t v_tᵀ.

    Args:
        q, k: [B, H, T, K]; v: [B, H, T, V]; g: [B, H, T, K] log-decay ≤ 0 per key channel;
        beta: [B, H, T] in [0, 1]

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
        per_channel=True,
    )
