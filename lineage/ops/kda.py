"""KDA — Kimi Delta Attention, Kimi Linear (Moonshot AI, arXiv 2510.26692, October 2025).

Gated DeltaNet forgets with one scalar per head. KDA makes the gate a vector — one decay rate per key
channel, as in GLA — on top of the delta-rule write:

    S_t = (I − β_t k_t k_tᵀ) Diag(α_t) S_{t−1} + β_t k_t v_tᵀ      α_t = exp(g_t) ∈ (0, 1]^K
    o_t = S_tᵀ (scale · q_t)

In the Kimi Linear layer (see :mod:`lineage.models.layers`): q, k = L2Norm(Swish(ShortConv(W x))),
v = Swish(ShortConv(W x)), g = −exp(A_log) · softplus(W↑ W↓ x + dt_bias), β = sigmoid(W_β x), and the output
passes a sigmoid-gated RMSNorm. Kimi Linear 48B puts 20 KDA layers beside 7 MLA layers (MLA at 4, 8, …, 24 and 27).
Gain: each channel chooses how long to remember — slow channels keep facts, fast ones track recent context.
Cost: the per-channel decay sits inside the key sums of the chunked form, so its intra-chunk products cannot
be a plain decay-masked Q Kᵀ: :func:`lineage.ops.recurrence.decayed_products` builds them from matrix products of
factors split at causal anchors, exact at every gate strength.

Kimi K3 bounds the gate (config ``gate_lower_bound: -5.0``; fla's ``chunk_kda(..., lower_bound=-5)``):
g = lower_bound · sigmoid(·), so no channel forgets more than e⁵ per token (α ≥ e⁻⁵ ≈ 0.0067). It is a numerics
decision: every decay ratio exp(G_i − G_j) across n steps is then at most e^{5n}, inside fp32 (largest e^{88.7})
for n ≤ 17, so a chunked kernel can form 16-step tiles with plain matrix products; unbounded, one step can be a
wipe. :func:`bounded_gate` is that bound on a log-space gate.
"""

from __future__ import annotations

import torch

from lineage import checks
from lineage.ops.recurrence import run_memory


def bounded_gate(g: torch.Tensor, lower_bound: float) -> torch.Tensor:
    """Kimi K3's bounded gate, on a log-space gate: g_b = L · expm1(g / L) with L = −lower_bound > 0.

    fla (``fla/ops/kda/gate.py``, ``naive_kda_lowerbound_gate``) bounds a *raw* pre-activation x:
    g_b = lower_bound · sigmoid(x). The package's ops take log-space gates, so this takes the unbounded gate of the
    same x at the bound's scale, g = lower_bound · softplus(x) ≤ 0, and returns exactly fla's g_b
    (L · expm1(−softplus(x)) = L · (sigmoid(−x) − 1) = −L · sigmoid(x)). So: g = 0 stays 0 (α = 1), a mild gate
    is almost unchanged (slope 1 at 0), g_b ≥ g everywhere (never more forgetting than asked), and a wipe g = −inf
    becomes the bound itself (α = e^{lower_bound}).

    Args:
        g: a log-space gate ≤ 0, any shape (−inf allowed).
        lower_bound: a finite number < 0 (K3: −5.0).

    Returns:
        The bounded gate, same shape, in (lower_bound, 0], in fp32 (fp64 stays fp64), as the ops compute.
    """
    L = -checks.gate_lower_bound(lower_bound)
    return L * torch.expm1(g.to(checks.compute_dtype(g)) / L)


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
    gate_lower_bound: float | None = None,
):
    """Per-channel gated delta rule: S_t = (I − β_t k_t k_tᵀ) Diag(exp g_t) S_{t−1} + β_t k_t v_tᵀ.

    Args:
        q, k: [B, H, T, K]; v: [B, H, T, V]; g: [B, H, T, K] log-decay ≤ 0 per key channel;
        beta: [B, H, T] in [0, 1]
        gate_lower_bound: None (the gate as given, Kimi Linear) or a finite number < 0 (Kimi K3: −5.0): the op then
            runs on :func:`bounded_gate` (g), K3's lower_bound · sigmoid(x) for g = lower_bound · softplus(x), and
            keeps taking a log-space g so that g = 0 still means "keep everything" in every form.

    Returns:
        o: [B, H, T, V]; S_T: [B, H, K, V] or None
    """
    if gate_lower_bound is not None:
        B, H, T, K, _ = checks.qkv(q, k, v)
        g = bounded_gate(checks.log_gate(g, B, H, T, K, per_channel=True), gate_lower_bound)
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
