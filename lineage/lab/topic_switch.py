"""Memory lab, experiment 3 — topic switch: a stream on topic A, then on topic B. Who forgets A, and does A
interfere with B?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from lineage.lab.common import (
    DEFAULT_MECHANISMS,
    DEFAULT_SETTINGS,
    FORGOTTEN,
    INTERFERENCE,
    KEPT,
    MAX_PAIRS,
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
    nearest_correct,
    recall_error,
    run_mechanisms,
)

TOPIC_GATES = Gates(alpha_reset=0.0)


@dataclass(frozen=True)
class TopicSwitchResult:
    """n_a pairs on topic A, a switch (one reset step for the gated mechanisms), then n_b pairs on topic B.

    Attributes:
        steps: [n_b + 1] B writes so far (0 … n_b)
        a_kept_curve: mechanism -> [n_b + 1] how much of A's values the A cues still return (mean ⟨r, v_A⟩)
        a_kept, a_error: mechanism -> at the end: A's remaining share and A's recall error
        b_error: mechanism -> recall error on B at the end
        b_error_alone: mechanism -> the same B stream written into an empty memory (no topic A)
        b_accuracy: mechanism -> share of B reads whose most aligned stored value is the right one
    """

    settings: LabSettings
    gates: Gates
    n_a: int
    n_b: int
    mechanisms: tuple[str, ...]
    steps: np.ndarray
    a_kept_curve: dict[str, np.ndarray]
    a_kept: dict[str, float]
    a_error: dict[str, float]
    b_error: dict[str, float]
    b_error_alone: dict[str, float]
    b_accuracy: dict[str, float]

    @property
    def forgot_a(self) -> tuple[str, ...]:
        return tuple(m for m in self.mechanisms if self.a_kept[m] < FORGOTTEN)

    @property
    def kept_a(self) -> tuple[str, ...]:
        return tuple(m for m in self.mechanisms if self.a_kept[m] > KEPT)

    @property
    def interfered(self) -> tuple[str, ...]:
        """Mechanisms whose B recall is worse (by more than INTERFERENCE) because A was written first."""
        return tuple(m for m in self.mechanisms if self.b_error[m] - self.b_error_alone[m] > INTERFERENCE)


def topic_switch(
    settings: LabSettings = DEFAULT_SETTINGS,
    gates: Gates = TOPIC_GATES,
    *,
    n_a: int | None = None,
    n_b: int | None = None,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> TopicSwitchResult:
    """Topic A (n_a pairs, default d_k), then topic B (n_b pairs, default d_k / 2); read A and B after the switch.

    The gated mechanisms apply α = gates.alpha_reset at the first B write (the explicit reset rule). The B stream
    is also written into an empty memory, so the damage A does to B is measured, not assumed.
    """
    d = settings.d_k
    n_a = d if n_a is None else n_a
    n_b = max(d // 2, 1) if n_b is None else n_b
    check_int("n_a", n_a, 1, MAX_PAIRS // 2)
    check_int("n_b", n_b, 1, MAX_PAIRS // 2)
    gen = generator(settings.seed)
    keys = torch.cat([make_keys(n_a, d, settings.keys, gen), make_keys(n_b, d, settings.keys, gen)])
    values = make_values(n_a + n_b, d, gen)
    cues = make_cues(keys, settings.noise, gen)
    T = n_a + n_b
    reads = run_mechanisms(keys[None], values[None], cues[None], gates, mechanisms, reset=n_a)
    # the same B stream (same keys, values, cues) written into an empty memory
    alone = run_mechanisms(keys[None, n_a:], values[None, n_a:], cues[None, n_a:], gates, mechanisms)
    v = values.numpy()
    va, vb = v[:n_a], v[n_a:]
    curve, kept, a_err, b_err, b_alone, b_acc = {}, {}, {}, {}, {}, {}
    for m in mechanisms:
        out = reads.out[m][0]  # (R = T, T, V): cue r after write t
        ra = out[:n_a, n_a - 1 :]  # (n_a, n_b + 1, V): A's cues after j = 0 … n_b writes of B
        curve[m] = np.einsum("rjv,rv->jr", ra, va).mean(axis=1)
        kept[m] = float(curve[m][-1])
        a_err[m] = float(recall_error(out[:n_a, -1], va).mean())
        b_err[m] = float(recall_error(out[n_a:, -1], vb).mean())
        b_alone[m] = float(recall_error(alone.out[m][0, :, -1], vb).mean())
        b_acc[m] = float(nearest_correct(out[n_a:, -1], v, np.arange(n_a, T)).mean())
    return TopicSwitchResult(
        settings=settings,
        gates=gates,
        n_a=n_a,
        n_b=n_b,
        mechanisms=tuple(mechanisms),
        steps=np.arange(n_b + 1),
        a_kept_curve=curve,
        a_kept=kept,
        a_error=a_err,
        b_error=b_err,
        b_error_alone=b_alone,
        b_accuracy=b_acc,
    )


def topic_switch_table(r: TopicSwitchResult) -> pd.DataFrame:
    return mechanism_table(
        {
            m: {
                "topic A kept ⟨r, v_A⟩": r.a_kept[m],
                "error on A": r.a_error[m],
                "error on B": r.b_error[m],
                "error on B without A": r.b_error_alone[m],
                "accuracy on B": r.b_accuracy[m],
            }
            for m in r.mechanisms
        }
    )


def topic_switch_summary(r: TopicSwitchResult) -> str:
    parts = []
    if r.forgot_a:
        clean = [m for m in r.forgot_a if m not in r.interfered]
        if len(clean) == len(r.forgot_a):
            tail = " and read topic B as well as if A had never been written"
        elif clean:
            who = join_names([label(m) for m in clean])
            tail = f"; of these, {who} read topic B as well as if A had never been written"
        else:
            tail = ""
        parts.append(
            f"After the switch {join_names([label(m) for m in r.forgot_a])} forgot topic A (what A's cues return is "
            f"below {FORGOTTEN} of A's values){tail}."
        )
    else:
        parts.append(f"No mechanism forgot topic A (each still returns at least {FORGOTTEN} of A's values).")
    if r.kept_a:
        kept = [f"{label(m)} ({r.a_kept[m]:.2f})" for m in r.kept_a]
        parts.append(f"Still holding A: {join_names(kept)}.")
    if r.interfered:
        hurt = [f"{label(m)} (error {r.b_error[m]:.2f} instead of {r.b_error_alone[m]:.2f})" for m in r.interfered]
        parts.append(f"What is left of A interferes with reading B in {join_names(hurt)}.")
    else:
        parts.append("Nowhere did A make B harder to read.")
    return " ".join(parts)
