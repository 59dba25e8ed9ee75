"""What Kimi K3's gate bound does to a run: each channel's retention with and without it, and the range it keeps.

K3's config sets ``gate_lower_bound: -5.0`` (``lineage.schedules.KIMI_K3_CONFIG``; its sources in
``KIMI_K3_SOURCES["gate"]``): no channel's log-decay per token goes below −5, so the smallest α is e⁻⁵ ≈ 0.0067 and a
wipe (α = 0) becomes a cut to 0.67%. The op applies it as :func:`lineage.ops.kda.bounded_gate`. The point is numerics:
a decay ratio exp(G_i − G_j) across n steps is then at most e^{5n}, inside fp32's range for n up to
⌊ln(fp32 max) / 5⌋ = 17 steps, so a chunked kernel's 16-step tiles need no anchoring; unbounded, one step can be −∞.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from lineage.numerics import rel_rms
from lineage.ops.kda import bounded_gate, kda
from lineage.ops.recurrence import recurrent_memory
from lineage.teach.stage_runs import retention

FP32_MAX_EXPONENT = math.log(torch.finfo(torch.float32).max)  # 88.72: e^x is past fp32's largest number beyond it


@dataclass(frozen=True)
class GateBound:
    """One run's gates with and without a lower bound (numpy; retention of token 0's write, [T_lag, K])."""

    lower_bound: float
    alpha_floor: float  # e^lower_bound, the smallest α the bound allows
    retention: np.ndarray  # unbounded
    retention_bounded: np.ndarray
    alpha_min: float  # the run's smallest α (0 at a wipe)
    alpha_min_bounded: float
    alpha_max_change: float  # the largest change the bound makes to any α
    tile_steps: int  # the longest run of steps whose decay ratios stay inside fp32 under the bound
    err_chunk_fp32: float  # the bounded op's chunked form in fp32 against the fp64 loop on the bounded gate

    @property
    def worst_ratio_exponent(self) -> float:
        """ln of the largest decay ratio in a 16-step tile at the bound: 16 · |lower_bound|."""
        return 16 * -self.lower_bound


def gate_bound_effect(q, k, v, g, beta, lower_bound: float, *, chunk_size: int = 16) -> GateBound:
    """The bound applied to one head's gates (g: [T, K] log-space) and the bounded op checked on the same inputs
    (q, k: [T, K]; v: [T, V]; beta: [T]; numpy, as a ``StageRun`` holds them)."""
    q, k, v, g, beta = (torch.from_numpy(np.asarray(x, dtype=np.float64))[None, None] for x in (q, k, v, g, beta))
    g_bounded = bounded_gate(g, lower_bound)
    ref, _ = recurrent_memory(q, k, v, g_bounded, beta, rule="delta")
    fast, _ = kda(*(x.float() for x in (q, k, v, g, beta)), mode="chunk", chunk_size=chunk_size,
                  gate_lower_bound=lower_bound)  # fmt: skip
    g, g_bounded = g[0, 0].numpy(), g_bounded[0, 0].numpy()
    alpha, alpha_b = np.exp(g), np.exp(g_bounded)
    return GateBound(
        lower_bound=lower_bound,
        alpha_floor=math.exp(lower_bound),
        retention=retention(g)[0],
        retention_bounded=retention(g_bounded)[0],
        alpha_min=float(alpha.min()),
        alpha_min_bounded=float(alpha_b.min()),
        alpha_max_change=float(np.abs(alpha_b - alpha).max()),
        tile_steps=math.floor(FP32_MAX_EXPONENT / -lower_bound),
        err_chunk_fp32=rel_rms(fast.double(), ref),
    )
