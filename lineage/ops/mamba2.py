"""Mamba-2 / SSD — Dao & Gu, "Transformers are SSMs" (ICML 2024, arXiv 2405.21060).

Linear attention and DeltaNet never forget: everything written stays until it is overwritten key by key.
Mamba-2's selective state-space layer decays the whole memory by a data-dependent scalar per head:

    S_t = α_t S_{t−1} + k_t v_tᵀ          α_t = exp(g_t) = exp(A · Δ_t) ∈ (0, 1]
    o_t = S_tᵀ q_t

In Mamba-2's own symbols (state h: [P, N]) the same recurrence reads h_t = exp(Δ_t A) h_{t−1} + Δ_t x_t B_tᵀ,
y_t = h_t C_t: C plays q, B plays k, Δ·x plays v and Δ·A the log-gate; :func:`mamba2_ssd` maps them.
"State space duality": unrolled, o = (L ⊙ Q Kᵀ) V with the causal decay mask L_ij = α_{j+1}⋯α_i — masked
attention with a structured mask, which the parallel mode computes literally.
Gain: bulk forgetting — a topic switch can clear room. Cost: the gate is one number per head, so every
channel of the state forgets at the same rate, and writes are still additive (no targeted update).
"""

from __future__ import annotations

import torch

from lineage import checks
from lineage.ops.recurrence import run_memory


def mamba2(
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
    """Scalar-gated additive memory: S_t = exp(g_t) S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ (scale q_t).

    Args:
        q, k: [B, H, T, K]; v: [B, H, T, V]; g: [B, H, T] log-decay ≤ 0 (one scalar per head and step)
        scale: default K ** -0.5 (Mamba-2 itself uses 1: see :func:`mamba2_ssd`)

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
        per_channel=False,
    )


def mamba2_ssd(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    *,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    mode: str = "chunk",
    chunk_size: int | None = None,
):
    """Mamba-2's SSD in its own symbols: h_t = exp(Δ_t A) h_{t−1} + B_t (Δ_t x_t)ᵀ, y_t = h_tᵀ C_t.

    Args:
        x: [batch, H, T, P] inputs (values); dt: [batch, H, T] step sizes Δ > 0 (after softplus)
        A: [H] negative decay rates; B, C: [batch, G, T, N] input/output projections, G divides H
        initial_state: [batch, H, N, P] (our layout: keys × values, i.e. Mamba's h transposed)

    Returns:
        y: [batch, H, T, P]; final state [batch, H, N, P] or None
    """
    checks.tensor("x", x, rank=4)
    batch, H, T, P = x.shape
    checks.tensor("dt", dt, rank=3)
    if tuple(dt.shape) != (batch, H, T):
        raise ValueError(f"dt must have shape [batch, H, T] = {(batch, H, T)}, got {tuple(dt.shape)}")
    if checks.scanning() and (dt <= 0).any():
        raise ValueError("dt (Δ) must be > 0 everywhere; apply softplus to the raw step size")
    checks.tensor("A", A, rank=1)
    if A.shape[0] != H:
        raise ValueError(f"A must have shape [H] = [{H}], got {tuple(A.shape)}")
    if checks.scanning() and (A >= 0).any():
        raise ValueError("A must be < 0 (Mamba-2 stores A = -exp(A_log)); a non-negative A would never decay")
    for name, m in (("B", B), ("C", C)):
        checks.tensor(name, m, rank=4)
        if m.shape[0] != batch or m.shape[2] != T or H % m.shape[1] != 0:
            raise ValueError(
                f"{name} must have shape [batch, G, T, N] with batch={batch}, T={T} and G dividing "
                f"H={H}, got {tuple(m.shape)}"
            )
    if B.shape != C.shape:
        raise ValueError(f"B and C must have the same shape, got {tuple(B.shape)} and {tuple(C.shape)}")
    repeat = H // B.shape[1]
    k = B.repeat_interleave(repeat, dim=1)  # (batch, H, T, N)
    q = C.repeat_interleave(repeat, dim=1)
    v = x * dt[..., None]  # Δ_t x_t
    g = A[None, :, None] * dt  # log α_t = Δ_t A
    if initial_state is not None:
        checks.tensor("initial_state", initial_state, rank=4)  # its shape is checked by run_memory
    with checks.values_checked():  # q, k, v, g are made from checked x, Δ, A, B, C: no second scan
        return run_memory(
            q,
            k,
            v,
            g,
            None,
            rule="additive",
            scale=1.0,
            initial_state=initial_state,
            output_final_state=output_final_state,
            mode=mode,
            chunk_size=chunk_size,
        )
