"""Memory lab, all at once: every experiment on one stream setting, one row per mechanism, and the summary/table of
any result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from lineage.lab.capacity import CapacityResult, capacity, capacity_summary, capacity_table
from lineage.lab.common import DEFAULT_MECHANISMS, DEFAULT_SETTINGS, LabSettings, mechanism_table, participants
from lineage.lab.needle import NeedleResult, needle, needle_summary, needle_table
from lineage.lab.overwrite import OverwriteResult, overwrite, overwrite_summary, overwrite_table
from lineage.lab.retention import RetentionResult, retention, retention_summary, retention_table
from lineage.lab.topic_switch import TopicSwitchResult, topic_switch, topic_switch_summary, topic_switch_table


@dataclass(frozen=True)
class LabReport:
    overwrite: OverwriteResult
    capacity: CapacityResult
    topic_switch: TopicSwitchResult
    retention: RetentionResult
    needle: NeedleResult


def run_all(settings: LabSettings = DEFAULT_SETTINGS, mechanisms: Sequence[str] = DEFAULT_MECHANISMS) -> LabReport:
    """Every experiment at its default sizes and gate rules, on one stream setting."""
    return LabReport(
        overwrite=overwrite(settings, mechanisms=mechanisms),
        capacity=capacity(settings, mechanisms=mechanisms),
        topic_switch=topic_switch(settings, mechanisms=mechanisms),
        retention=retention(settings, mechanisms=mechanisms),
        needle=needle(settings, mechanisms=mechanisms),
    )


def comparison_table(report: LabReport) -> pd.DataFrame:
    """One row per mechanism, one headline number per experiment (errors: 0 is perfect, ~1 is nothing)."""
    o, c, t, r, n = report.overwrite, report.capacity, report.topic_switch, report.retention, report.needle
    return mechanism_table(
        {
            m: {
                "write": participants()[m].write,
                "gate": participants()[m].gate,
                "overwrite: error vs v2": o.error_v2[m],
                f"capacity: holds N ≤ (d_k = {c.settings.d_k})": c.capacity[m],
                f"capacity: error at N = {int(c.n[-1])}": float(c.error[m][-1]),
                "topic switch: A kept": t.a_kept[m],
                "topic switch: error on B": t.b_error[m],
                "retention: long-lived error": r.long_error[m],
                "retention: recent error": r.recent_error[m],
                "needle: error at the end": n.final_error[m],
            }
            for m in o.mechanisms
        }
    )


_SUMMARIES = {
    OverwriteResult: overwrite_summary,
    CapacityResult: capacity_summary,
    TopicSwitchResult: topic_switch_summary,
    RetentionResult: retention_summary,
    NeedleResult: needle_summary,
}
_TABLES = {
    OverwriteResult: overwrite_table,
    CapacityResult: capacity_table,
    TopicSwitchResult: topic_switch_table,
    RetentionResult: retention_table,
    NeedleResult: needle_table,
}


def summary(result) -> str:
    """The "what this shows" sentence of any experiment's result, computed from its numbers."""
    if type(result) not in _SUMMARIES:
        raise TypeError(
            f"result must be one of the lab's results ({', '.join(t.__name__ for t in _SUMMARIES)}), "
            f"got {type(result).__name__}"
        )
    return _SUMMARIES[type(result)](result)


def table(result) -> pd.DataFrame:
    """The numbers of any experiment's result, one row per mechanism."""
    if type(result) not in _TABLES:
        raise TypeError(
            f"result must be one of the lab's results ({', '.join(t.__name__ for t in _TABLES)}), "
            f"got {type(result).__name__}"
        )
    return _TABLES[type(result)](result)
