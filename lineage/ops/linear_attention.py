"""Linear attention — Katharopoulos et al., "Transformers are RNNs" (ICML 2020, arXiv 2006.16236).

Softmax attention keeps every past key and value (a cache that grows with T). Replacing the softmax kernel
exp(q·k) by a feature-map inner product φ(q)·φ(k) lets the sum over the past be folded first:

    S_t = S_{t−1} + φ(k_t) v_tᵀ            z_t = z_{t−1} + φ(k_t)
    o_t = S_tᵀ φ(q_t) / (z_tᵀ φ(q_t))      φ(x) = elu(x) + 1 (positive, so the normaliser never vanishes)

Gain: the memory is a fixed K×V matrix — O(1) in sequence length, O(T·K·V) work instead of O(T²·D).
Cost: φ only approximates the softmax kernel, and the state can only *add*: an old association is never
updated or removed, so keys that are not orthogonal interfere more and more as T grows.

In the shared recurrence (:mod:`lineage.ops.recurrence`) this is the additive write with no gate. The normaliser
is carried as one extra value column of ones, so with ``normalize=True`` the state is [B, H, K, V + 1] and
its last column is z.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lineage import checks
from lineage.ops.recurrence import run_memory

FEATURE_MAPS = {
    "elu1": lambda x: F.elu(x).add_(1.0),  # Katharopoulos et al.: positive, smooth, cheap
    "relu": F.relu,  # non-negative; a zero row reads nothing
    "identity": lambda x: x,  # plain (unnormalised) linear attention
}

# Katharopoulos et al. add a small epsilon to the normaliser.
NORMALIZER_EPS = 1e-6


def get_feature_map(name: str):
    """Return the feature map φ named ``name`` (one of FEATURE_MAPS)."""
    if name not in FEATURE_MAPS:
        raise ValueError(f"feature_map must be one of {', '.join(map(repr, FEATURE_MAPS))}, got {name!r}")
    return FEATURE_MAPS[name]


def recurrence_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, feature_map: str = "elu1", normalize=True):
    """q, k, v as :func:`linear_attention` hands them to the shared recurrence: φ(q), φ(k), and the values with a
    column of ones after them when ``normalize`` (the state's last column then accumulates the normaliser z)."""
    phi = get_feature_map(feature_map)
    return phi(q), phi(k), torch.cat([v, torch.ones_like(v[..., :1])], dim=-1) if normalize else v


def linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    feature_map: str = "elu1",
    normalize: bool = True,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    mode: str = "chunk",
    chunk_size: int | None = None,
):
    """Causal linear attention: o_t = S_tᵀ φ(q_t) / z_tᵀ φ(q_t) with S_t = Σ_{s≤t} φ(k_s) v_sᵀ.

    Args:
        q, k: [B, H, T, K]; v: [B, H, T, V]
        feature_map: "elu1" (default), "relu" or "identity" (identity requires normalize=False)
        normalize: divide by the normaliser z_tᵀ φ(q_t)
        scale: multiplies φ(q) (default K ** -0.5; it cancels when normalize=True)
        initial_state: [B, H, K, V + 1] when normalize (last column: z), else [B, H, K, V]
        mode: "recurrent" | "chunk" | "parallel"

    Returns:
        o: [B, H, T, V]; the final state (shape as initial_state) or None
    """
    get_feature_map(feature_map)  # a bad name is reported before anything else
    if normalize and feature_map == "identity":
        raise ValueError("feature_map='identity' can make the normaliser zero or negative; use normalize=False")
    checks.qkv(q, k, v)
    # With the normaliser, the state carries z as an extra value column fed by ones. Numerator and normaliser both
    # grow with t: keep them in the compute dtype (fp32/fp64) until the division, or fp16 overflows (65504) after
    # some thousands of steps even though the ratio is O(1).
    phi_q, phi_k, values = recurrence_inputs(q, k, v, feature_map, normalize)
    values = values.to(checks.compute_dtype(q, k, v)) if normalize else values
    if initial_state is not None:
        checks.tensor("initial_state", initial_state, rank=4)  # its shape is checked by run_memory
    with checks.values_checked():  # φ(q), φ(k) and the values are made from checked q, k, v: no second scan
        o, S = run_memory(
            phi_q,
            phi_k,
            values,
            rule="additive",
            scale=scale,
            initial_state=initial_state,
            output_final_state=output_final_state,
            mode=mode,
            chunk_size=chunk_size,
        )

    if normalize:  # numerator S_tᵀ φ(q_t) over the normaliser z_tᵀ φ(q_t), the state's last column
        # (speed: one split, whose backward is one concatenation, and a product with the normaliser's reciprocal, one
        # number a step, whose backward is a product too; two slices and a division back-propagate in five passes)
        numerator, normaliser = o.split([o.shape[-1] - 1, 1], dim=-1)
        o = numerator * (normaliser + NORMALIZER_EPS).reciprocal()
    return o.to(v.dtype), S
