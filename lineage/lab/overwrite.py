"""Memory lab, experiment 1 — overwrite: a key is written with v1, later with v2. Which mechanisms return v2?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from lineage.lab.common import (
    BLEND_PART,
    DEFAULT_MECHANISMS,
    DEFAULT_SETTINGS,
    HYBRID_CONFIDENCE,
    RECOVERED,
    Gates,
    LabSettings,
    check_int,
    generator,
    join_names,
    label,
    make_cues,
    make_keys,
    make_values,
    mechanism_table,
    run_mechanisms,
)

OVERWRITE_GATES = Gates(alpha=0.95)
MAX_BETWEEN = 128


@dataclass(frozen=True)
class OverwriteResult:
    """Key k* written with v1, then ``n_between`` other pairs, then k* with v2; k* read back once.

    Attributes:
        v1, v2: [V]; retrieved: mechanism -> [V]
        error_v2, error_v1: mechanism -> ‖r − v2‖, ‖r − v1‖ (unit values)
        coef_v1, coef_v2: mechanism -> least-squares r ≈ a·v1 + b·v2 (a, b); residual: ‖r − a v1 − b v2‖
        hybrid_used_softmax: whether the hybrid took its softmax read; softmax_confidence: that read's largest weight
    """

    settings: LabSettings
    gates: Gates
    n_between: int
    mechanisms: tuple[str, ...]
    v1: np.ndarray
    v2: np.ndarray
    retrieved: dict[str, np.ndarray]
    error_v2: dict[str, float]
    error_v1: dict[str, float]
    coef_v1: dict[str, float]
    coef_v2: dict[str, float]
    residual: dict[str, float]
    softmax_confidence: float
    hybrid_used_softmax: bool

    @property
    def recovered(self) -> tuple[str, ...]:
        """Mechanisms whose read is v2 (error below RECOVERED)."""
        return tuple(m for m in self.mechanisms if self.error_v2[m] < RECOVERED)

    @property
    def blended(self) -> tuple[str, ...]:
        """Mechanisms (not recovered) whose read carries both v1 and v2 (both coefficients above BLEND_PART)."""
        return tuple(
            m
            for m in self.mechanisms
            if m not in self.recovered and self.coef_v1[m] > BLEND_PART and self.coef_v2[m] > BLEND_PART
        )


def overwrite(
    settings: LabSettings = DEFAULT_SETTINGS,
    gates: Gates = OVERWRITE_GATES,
    *,
    n_between: int = 4,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> OverwriteResult:
    """Write (k*, v1), ``n_between`` filler pairs, (k*, v2); read k*. Does the memory return v2, v1 or a blend?"""
    check_int("n_between", n_between, 0, MAX_BETWEEN)
    d = settings.d_k
    gen = generator(settings.seed)
    keys = make_keys(n_between + 1, d, settings.keys, gen)  # key 0 is k*, the rest fillers
    values = make_values(n_between + 2, d, gen)  # v1, fillers, v2
    stream_keys = torch.cat([keys, keys[:1]])  # k*, fillers, k*
    cue = make_cues(keys[:1], settings.noise, gen)
    reads = run_mechanisms(stream_keys[None], values[None], cue[None], gates, mechanisms)
    v1, v2 = values[0].numpy(), values[-1].numpy()
    basis = np.stack([v1, v2], axis=1)  # (V, 2)
    retrieved, e1, e2, c1, c2, res = {}, {}, {}, {}, {}, {}
    for m in mechanisms:
        r = reads.out[m][0, 0, -1]  # the read after the last write
        (a, b), *_ = np.linalg.lstsq(basis, r, rcond=None)
        retrieved[m] = r
        e1[m], e2[m] = float(np.linalg.norm(r - v1)), float(np.linalg.norm(r - v2))
        c1[m], c2[m] = float(a), float(b)
        res[m] = float(np.linalg.norm(r - basis @ np.array([a, b])))
    return OverwriteResult(
        settings=settings,
        gates=gates,
        n_between=n_between,
        mechanisms=tuple(mechanisms),
        v1=v1,
        v2=v2,
        retrieved=retrieved,
        error_v2=e2,
        error_v1=e1,
        coef_v1=c1,
        coef_v2=c2,
        residual=res,
        softmax_confidence=float(reads.confidence[0, 0, -1]),
        hybrid_used_softmax=bool(reads.hybrid_used_softmax[0, 0, -1]),
    )


def overwrite_table(r: OverwriteResult) -> pd.DataFrame:
    return mechanism_table(
        {
            m: {
                "error vs v2": r.error_v2[m],
                "error vs v1": r.error_v1[m],
                "coefficient on v1": r.coef_v1[m],
                "coefficient on v2": r.coef_v2[m],
                "rest (crosstalk)": r.residual[m],
            }
            for m in r.mechanisms
        }
    )


def overwrite_summary(r: OverwriteResult) -> str:
    parts = []
    if r.recovered:
        parts.append(f"{join_names([label(m) for m in r.recovered])} recovered v2 (error below {RECOVERED}).")
    else:
        parts.append(f"No mechanism recovered v2 (error below {RECOVERED}).")
    if r.blended:
        blends = [f"{label(m)} ({r.coef_v1[m]:.2f}·v1 + {r.coef_v2[m]:.2f}·v2)" for m in r.blended]
        parts.append(f"Returned a blend of the old and the new value: {join_names(blends)}.")
    old = [m for m in r.mechanisms if r.error_v1[m] < RECOVERED]
    if old:
        parts.append(f"Still returned the old value v1: {join_names([label(m) for m in old])}.")
    rest = [m for m in r.mechanisms if m not in r.recovered + r.blended + tuple(old)]
    if rest:
        neither = [f"{label(m)} (error vs v2 {r.error_v2[m]:.2f}, vs v1 {r.error_v1[m]:.2f})" for m in rest]
        parts.append(f"Returned neither value cleanly: {join_names(neither)}.")
    if "hybrid" in r.mechanisms:
        source = "its softmax cache" if r.hybrid_used_softmax else "KDA"
        parts.append(
            f"The hybrid used {source}: the softmax cache's largest attention weight was "
            f"{r.softmax_confidence:.2f} (threshold {HYBRID_CONFIDENCE})."
        )
    return " ".join(parts)
