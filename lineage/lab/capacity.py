"""Memory lab, experiment 2 — capacity: store N pairs, N from 1 to well past d_k; recall error against N."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from lineage.lab.common import (
    CAPACITY_ERROR,
    DEFAULT_MECHANISMS,
    DEFAULT_SETTINGS,
    MAX_PAIRS,
    MAX_TRIALS,
    RECENT_VS_OLD,
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
    nearest_correct,
    participants,
    recall_error,
    run_mechanisms,
    state_numbers,
)
from lineage.mechanisms import write_rules

CAPACITY_GATES = Gates()


@dataclass(frozen=True)
class CapacityResult:
    """Recall of N stored pairs, for N = 1 … n_max; averaged over ``trials`` streams.

    Attributes:
        n: [n_max] the values of N (1 … n_max)
        error: mechanism -> [n_max] mean recall error over the N pairs (and the trials)
        accuracy: mechanism -> [n_max] share of reads whose most aligned stored value is the right one
        recent_error, old_error: mechanism -> mean error at N = n_max on the last d_k pairs / on the earlier ones
        capacity: mechanism -> the largest N up to which every point's error stays below CAPACITY_ERROR (0 if none)
        memory: mechanism -> numbers kept at N = n_max
    """

    settings: LabSettings
    gates: Gates
    trials: int
    mechanisms: tuple[str, ...]
    n: np.ndarray
    error: dict[str, np.ndarray]
    accuracy: dict[str, np.ndarray]
    recent_error: dict[str, float]
    old_error: dict[str, float]
    capacity: dict[str, int]
    memory: dict[str, int]

    def error_at(self, m: str, n: int) -> float:
        """Error of mechanism m with N = n pairs stored (n clipped to 1 … n_max)."""
        return float(self.error[m][min(max(n, 1), len(self.n)) - 1])


def _capacity(error: np.ndarray) -> int:
    """The largest N such that the error stays below CAPACITY_ERROR for every N' ≤ N (0 if none); error[N − 1]."""
    below = error < CAPACITY_ERROR
    return int(below.size if below.all() else below.argmin())


def capacity(
    settings: LabSettings = DEFAULT_SETTINGS,
    gates: Gates = CAPACITY_GATES,
    *,
    n_max: int | None = None,
    trials: int = 2,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> CapacityResult:
    """Store N pairs (N = 1 … n_max, default 3·d_k), read all N back; recall error and accuracy against N.

    One stream of n_max writes per trial, every key's cue read after every write: the reads after write N − 1
    are the recall of "N pairs stored", so one call per mechanism computes the whole curve.
    """
    d = settings.d_k
    n_max = 3 * d if n_max is None else n_max
    check_int("n_max", n_max, 1, MAX_PAIRS)
    check_int("trials", trials, 1, MAX_TRIALS)
    gen = generator(settings.seed)
    keys = torch.stack([make_keys(n_max, d, settings.keys, gen) for _ in range(trials)])  # (trials, n_max, K)
    values = torch.stack([make_values(n_max, d, gen) for _ in range(trials)])  # (trials, n_max, V)
    cues = make_cues(keys, settings.noise, gen)
    reads = run_mechanisms(keys, values, cues, gates, mechanisms)
    v = values.numpy()
    stored = np.tril(np.ones((n_max, n_max), dtype=bool))  # [t, r]: pair r is stored after write t
    n_stored = stored.sum(axis=1)  # N = t + 1
    targets = np.broadcast_to(np.arange(n_max), (trials, n_max, n_max))  # [b, t, r] -> r
    err, acc, recent, old, cap, mem = {}, {}, {}, {}, {}, {}
    n_recent = min(d, n_max)
    for m in mechanisms:
        out = reads.out[m].transpose(0, 2, 1, 3)  # (trials, t, r, V): cue r read after write t
        e = recall_error(out, v[:, None])  # (trials, t, r)
        ok = nearest_correct(out, v[:, None], targets, stored[None])  # (trials, t, r)
        err[m] = (e * stored).sum(axis=(0, 2)) / (trials * n_stored)
        acc[m] = (ok * stored).sum(axis=(0, 2)) / (trials * n_stored)
        last = e[:, -1]  # (trials, n_max): every pair after all n_max writes
        recent[m] = float(last[:, n_max - n_recent :].mean())
        old[m] = float(last[:, : n_max - n_recent].mean()) if n_max > n_recent else float("nan")
        cap[m] = _capacity(err[m])
        mem[m] = state_numbers(m, n_max, d)
    return CapacityResult(
        settings=settings,
        gates=gates,
        trials=trials,
        mechanisms=tuple(mechanisms),
        n=np.arange(1, n_max + 1),
        error=err,
        accuracy=acc,
        recent_error=recent,
        old_error=old,
        capacity=cap,
        memory=mem,
    )


def capacity_table(r: CapacityResult) -> pd.DataFrame:
    d, n_max = r.settings.d_k, int(r.n[-1])
    return mechanism_table(
        {
            m: {
                f"holds N ≤ (error < {CAPACITY_ERROR})": r.capacity[m],
                f"error at N = d_k = {d}": r.error_at(m, d),
                f"error at N = {n_max}": float(r.error[m][-1]),
                f"accuracy at N = {n_max}": float(r.accuracy[m][-1]),
                f"error on the last {min(d, n_max)}": r.recent_error[m],
                "error on the older ones": r.old_error[m],
                f"numbers stored at N = {n_max}": r.memory[m],
            }
            for m in r.mechanisms
        }
    )


def _writes_clause(r: CapacityResult, m: str) -> str:
    """How mechanism m fails past capacity: keeps recent items and loses old ones, or blurs all alike."""
    recent, old = r.recent_error[m], r.old_error[m]
    if math.isnan(old):
        return f"{label(m)}'s error at N = {int(r.n[-1])} is {r.error[m][-1]:.2f}"
    if old - recent > RECENT_VS_OLD and recent < CAPACITY_ERROR:
        return (
            f"{label(m)} keeps its most recent {r.settings.d_k} items (error {recent:.2f}) and loses the older ones "
            f"(error {old:.2f})"
        )
    if old - recent > RECENT_VS_OLD:
        return f"{label(m)} recalls recent items better than old ones (error {recent:.2f} vs {old:.2f})"
    return f"{label(m)} blurs old and recent items alike (error {old:.2f} on old, {recent:.2f} on recent)"


def capacity_summary(r: CapacityResult) -> str:
    d, n_max = r.settings.d_k, int(r.n[-1])
    parts = []
    if "softmax" in r.mechanisms:
        worst = float(r.error["softmax"].max())
        verdict = "stays flat" if worst < RECOVERED else "does not stay flat"
        parts.append(
            f"Softmax attention's error {verdict} (at most {worst:.2g} for every N up to {n_max}), because its "
            f"cache grows to {n_max} entries ({r.memory['softmax']:,} numbers)."
        )
    fixed = [m for m in r.mechanisms if participants()[m].write in write_rules()]  # a fixed state, whatever its rule
    if fixed:
        caps = [f"{label(m)} {r.capacity[m]}" for m in fixed]
        parts.append(
            f"The fixed {d}×{d} states hold this many pairs with error below {CAPACITY_ERROR}: {join_names(caps)} "
            f"(d_k = {d})."
        )
    clauses = [_writes_clause(r, m) for m in ("linear_attention", "deltanet") if m in r.mechanisms]
    if clauses and n_max > d:
        parts.append(f"Past capacity, at N = {n_max}: {'; '.join(clauses)}.")
    return " ".join(parts)
