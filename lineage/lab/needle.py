"""Memory lab, experiment 5 — the needle: a needle written early, then more writes than the state can hold; pure
KDA against the hybrid."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lineage.lab.common import (
    DEFAULT_MECHANISMS,
    DEFAULT_SETTINGS,
    HYBRID_CONFIDENCE,
    LOST,
    MAX_PAIRS,
    RECOVERED,
    Gates,
    LabSettings,
    check_int,
    generator,
    make_cues,
    make_keys,
    make_values,
    mechanism_table,
    nearest_correct,
    recall_error,
    run_mechanisms,
    state_numbers,
)

NEEDLE_GATES = Gates(alpha=0.98, alpha_slow=1.0)


@dataclass(frozen=True)
class NeedleResult:
    """A needle pair written first, then up to ``n_fill`` filler pairs; the needle read after every filler.

    Attributes:
        fills: [n_fill + 1] fillers written after the needle (0 … n_fill)
        error: mechanism -> [n_fill + 1] the needle's recall error
        correct: mechanism -> [n_fill + 1] whether the most aligned stored value is the needle's
        hybrid_used_softmax: [n_fill + 1]; softmax_confidence: [n_fill + 1]
        final_error: mechanism -> error after all n_fill fillers
    """

    settings: LabSettings
    gates: Gates
    n_fill: int
    mechanisms: tuple[str, ...]
    fills: np.ndarray
    error: dict[str, np.ndarray]
    correct: dict[str, np.ndarray]
    softmax_confidence: np.ndarray
    hybrid_used_softmax: np.ndarray
    final_error: dict[str, float]


def needle(
    settings: LabSettings = DEFAULT_SETTINGS,
    gates: Gates = NEEDLE_GATES,
    *,
    n_fill: int | None = None,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> NeedleResult:
    """Write a needle, then ``n_fill`` (default 3·d_k) fillers; after each, read the needle back."""
    d = settings.d_k
    n_fill = 3 * d if n_fill is None else n_fill
    check_int("n_fill", n_fill, 0, MAX_PAIRS)
    gen = generator(settings.seed)
    T = n_fill + 1
    keys = make_keys(T, d, settings.keys, gen)  # key 0 is the needle
    values = make_values(T, d, gen)
    cue = make_cues(keys[:1], settings.noise, gen)
    reads = run_mechanisms(keys[None], values[None], cue[None], gates, mechanisms)
    v = values.numpy()
    stored = np.tril(np.ones((T, T), dtype=bool))  # [j, c]: value c is stored after the needle and j fillers
    err, ok, final = {}, {}, {}
    for m in mechanisms:
        out = reads.out[m][0, 0]  # (T, V): the needle's cue after the needle and j = 0 … n_fill fillers
        err[m] = recall_error(out, v[0])
        ok[m] = nearest_correct(out[:, None], v[None], np.zeros((T, 1), dtype=int), stored)[:, 0]
        final[m] = float(err[m][-1])
    return NeedleResult(
        settings=settings,
        gates=gates,
        n_fill=n_fill,
        mechanisms=tuple(mechanisms),
        fills=np.arange(T),
        error=err,
        correct=ok,
        softmax_confidence=reads.confidence[0, 0],
        hybrid_used_softmax=reads.hybrid_used_softmax[0, 0],
        final_error=final,
    )


def needle_table(r: NeedleResult) -> pd.DataFrame:
    d = r.settings.d_k
    at_d = min(d - 1, r.n_fill)  # d_k pairs in all: as many as a d_k × d_k state can hold
    return mechanism_table(
        {
            m: {
                f"needle error, {at_d + 1} pairs stored": float(r.error[m][at_d]),
                f"needle error, {r.n_fill + 1} pairs stored": r.final_error[m],
                "needle: nearest value right at the end (however faint)": bool(r.correct[m][-1]),
                "numbers stored at the end": state_numbers(m, r.n_fill + 1, d),
            }
            for m in r.mechanisms
        }
    )


def needle_summary(r: NeedleResult) -> str:
    if "kda" not in r.mechanisms or "hybrid" not in r.mechanisms:
        return "This experiment compares pure KDA with the hybrid; include both mechanisms."
    n, d = r.n_fill, r.settings.d_k
    k_err, h_err = r.final_error["kda"], r.final_error["hybrid"]
    past = f"{n} fillers ({n / d:.1f}× d_k)"
    if k_err > LOST:
        kda = f"After {past}, pure KDA has lost the needle (error {k_err:.2f})"
    elif k_err < RECOVERED:
        kda = f"After {past}, pure KDA still holds the needle (error {k_err:.2f})"
    else:
        kda = f"After {past}, pure KDA returns a degraded needle (error {k_err:.2f})"
    if h_err < RECOVERED and r.hybrid_used_softmax[-1]:
        hyb = (
            f"the hybrid recovers it exactly (error {h_err:.1e}): its softmax cache found the needle with attention "
            f"weight {r.softmax_confidence[-1]:.2f}"
        )
    elif r.hybrid_used_softmax[-1]:
        hyb = f"the hybrid's softmax cache answered but not exactly (error {h_err:.2f})"
    else:
        hyb = (
            f"the hybrid fell back to KDA (error {h_err:.2f}): the softmax cache was not confident "
            f"(weight {r.softmax_confidence[-1]:.2f} < {HYBRID_CONFIDENCE})"
        )
    return f"{kda}; {hyb}."
