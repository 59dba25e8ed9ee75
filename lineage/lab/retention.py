"""Memory lab, experiment 4 — per-channel retention: long-lived facts in slow key channels, short-lived ones in
fast channels; KDA's per-channel gate against Gated DeltaNet's single gate at the same average decay."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from lineage.lab.common import (
    DEFAULT_MECHANISMS,
    DEFAULT_SETTINGS,
    MARGIN,
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
)

RETENTION_GATES = Gates(alpha=0.9, alpha_slow=1.0)
RECENT_READS = 4  # the short-lived facts read back: the last few written


@dataclass(frozen=True)
class RetentionResult:
    """Long-lived facts (keys in KDA's slow channels) first, then short-lived ones (keys in the fast channels).

    Attributes:
        lags: [L] steps since a write; retention: name -> [L] the share a gate leaves after that many steps
            ("KDA slow channels", "KDA fast channels", "Gated DeltaNet")
        kda_alpha: [d_k] KDA's α per channel; n_slow: number of slow channels
        long_error, recent_error: mechanism -> mean recall error on the long-lived facts / the last RECENT_READS
            short-lived facts; long_accuracy: share of long-lived facts still recognisable
        short_written: [n_short + 1] short-lived facts written so far; long_error_curve: mechanism -> [n_short + 1]
            the long-lived facts' mean recall error at that point
    """

    settings: LabSettings
    gates: Gates
    n_long: int
    n_short: int
    mechanisms: tuple[str, ...]
    lags: np.ndarray
    retention: dict[str, np.ndarray]
    kda_alpha: np.ndarray
    n_slow: int
    long_error: dict[str, float]
    recent_error: dict[str, float]
    long_accuracy: dict[str, float]
    short_written: np.ndarray
    long_error_curve: dict[str, np.ndarray]


def retention(
    settings: LabSettings = DEFAULT_SETTINGS,
    gates: Gates = RETENTION_GATES,
    *,
    n_long: int = 4,
    n_short: int | None = None,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> RetentionResult:
    """``n_long`` facts that must last, then ``n_short`` (default 2·d_k) short-lived ones; read the long facts and
    the last RECENT_READS short ones.

    Long-lived facts are written with keys in KDA's slow channels, short-lived ones in its fast channels. A trained
    KDA learns to route keys this way; here the lab routes them by construction, so the gate alone decides.
    """
    d = settings.d_k
    n_short = 2 * d if n_short is None else n_short
    n_slow = gates.n_slow(d)
    check_int("n_long", n_long, 1, MAX_PAIRS // 2)
    check_int("n_short", n_short, RECENT_READS, MAX_PAIRS // 2)
    gen = generator(settings.seed)
    keys = torch.cat(
        [
            make_keys(n_long, d, settings.keys, gen, channels=slice(0, n_slow)),
            make_keys(n_short, d, settings.keys, gen, channels=slice(n_slow, d)),
        ]
    )
    T = n_long + n_short
    values = make_values(T, d, gen)
    read_idx = np.r_[np.arange(n_long), np.arange(T - RECENT_READS, T)]
    cues = make_cues(keys[read_idx], settings.noise, gen)
    reads = run_mechanisms(keys[None], values[None], cues[None], gates, mechanisms)
    v = values.numpy()
    long_err, recent_err, long_acc, long_curve = {}, {}, {}, {}
    for m in mechanisms:
        out = reads.out[m][0]  # (R, T, V)
        e = recall_error(out[:, -1], v[read_idx])
        long_err[m] = float(e[:n_long].mean())
        recent_err[m] = float(e[n_long:].mean())
        long_acc[m] = float(nearest_correct(out[:n_long, -1], v, np.arange(n_long)).mean())
        long_curve[m] = recall_error(out[:n_long, n_long - 1 :], v[:n_long, None]).mean(axis=0)
    alphas = gates.channel_alpha(d)
    lags = np.arange(T + 1)
    curves = {
        "KDA slow channels": alphas[0] ** lags,
        "KDA fast channels": alphas[-1] ** lags,
        "Gated DeltaNet": gates.alpha**lags,
    }
    return RetentionResult(
        settings=settings,
        gates=gates,
        n_long=n_long,
        n_short=n_short,
        mechanisms=tuple(mechanisms),
        lags=lags,
        retention=curves,
        kda_alpha=alphas,
        n_slow=n_slow,
        long_error=long_err,
        recent_error=recent_err,
        long_accuracy=long_acc,
        short_written=np.arange(n_short + 1),
        long_error_curve=long_curve,
    )


def retention_table(r: RetentionResult) -> pd.DataFrame:
    return mechanism_table(
        {
            m: {
                "error on long-lived facts": r.long_error[m],
                "long-lived facts: nearest value right (however faint)": r.long_accuracy[m],
                f"error on the last {RECENT_READS} short-lived": r.recent_error[m],
            }
            for m in r.mechanisms
        }
    )


def retention_summary(r: RetentionResult) -> str:
    if "kda" not in r.mechanisms or "gated_deltanet" not in r.mechanisms:
        return "This experiment compares KDA with Gated DeltaNet; include both mechanisms."
    kl, gl = r.long_error["kda"], r.long_error["gated_deltanet"]
    kr, gr = r.recent_error["kda"], r.recent_error["gated_deltanet"]
    a_slow, a_fast = r.kda_alpha[0], r.kda_alpha[-1]
    head = (
        f"At the same average decay (mean log α = log {r.gates.alpha:.3g}; KDA: {r.n_slow} slow channels at "
        f"α = {a_slow:.3g}, {r.settings.d_k - r.n_slow} fast at α = {a_fast:.3g}),"
    )
    if kl < gl - MARGIN and kl < RECOVERED:
        long = f"KDA kept the long-lived facts (error {kl:.2f}) that Gated DeltaNet's single gate let fade ({gl:.2f})"
    elif kl < gl - MARGIN:
        long = f"KDA kept more of the long-lived facts than Gated DeltaNet (error {kl:.2f} vs {gl:.2f})"
    elif gl < kl - MARGIN:
        long = f"Gated DeltaNet kept the long-lived facts better than KDA (error {gl:.2f} vs {kl:.2f})"
    else:
        long = f"KDA and Gated DeltaNet kept the long-lived facts equally well (error {kl:.2f} vs {gl:.2f})"
    if kr > gr + MARGIN:
        recent = f"on the recent short-lived facts KDA pays with its faster channels (error {kr:.2f} vs {gr:.2f})"
    elif gr > kr + MARGIN:
        recent = f"and KDA also read the recent short-lived facts better (error {kr:.2f} vs {gr:.2f})"
    else:
        recent = f"and both read the recent short-lived facts about equally (error {kr:.2f} vs {gr:.2f})"
    joiner = "; " if kr > gr + MARGIN else " "
    return f"{head} {long}{joiner}{recent}."
