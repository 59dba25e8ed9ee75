"""DeltaNet — Schlag et al. 2021 (arXiv 2102.11174); parallelised by Yang et al., NeurIPS 2024 (arXiv 2406.06484).

Linear attention can only add. The delta rule (Widrow–Hoff; Schmidhuber's fast weight programmers) first
reads what the memory holds at the key, then writes only the correction:

    v_old = S_{t−1}ᵀ k_t
    S_t   = S_{t−1} + β_t k_t (v_t − v_old)ᵀ = (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ
    o_t   = S_tᵀ (scale · q_t)

With ‖k_t‖ = 1 and β_t = 1 the slot at k_t is overwritten exactly; β_t ∈ (0, 1) interpolates between keeping
and replacing. Gain: associations can be *updated*, so the fixed-size state is used far better.
Cost: each step depends on the previous state through S_{t−1}ᵀ k_t, so the recurrence looks sequential;
training needs the chunkwise WY/UT form (:func:`lineage.ops.recurrence.chunk_memory`) — a triangular solve per
chunk — to run in parallel. Keys are L2-normalised in the layer so that (I − β k kᵀ) is a contraction.
"""

from __future__ import annotations

import torch

from lineage.ops.recurrence import run_memory


def deltanet(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    mode: str = "chunk",
    chunk_size: int | None = None,
):
    """The delta rule with no forgetting gate: S_t = S_{t−1} + β_t k_t (v_t − S_{t−1}ᵀ k_t)ᵀ, o_t = S_tᵀ (scale q_t).

    Args:
        q, k: [B, H, T, K] (the layer L2-normalises them); v: [B, H, T, V]; beta: [B, H, T] in [0, 1]
        scale: default K ** -0.5; initial_state: [B, H, K, V]; mode: "recurrent" | "chunk" | "parallel"

    Returns:
        o: [B, H, T, V]; S_T: [B, H, K, V] or None
    """
    return run_memory(
        q,
        k,
        v,
        None,
        beta,
        rule="delta",
        scale=scale,
        initial_state=initial_state,
        output_final_state=output_final_state,
        mode=mode,
        chunk_size=chunk_size,
    )
