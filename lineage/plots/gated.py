"""Figures for the gated stages: gates over time and channels, how long a write survives, the state as it evolves.

Pure builders: numpy in, ``go.Figure`` out. Gates, decay masks and retention are fractions, always drawn on the
fixed range [0, 1] with a sequential scale, so a colour means the same α on every page. States are signed: the
panels of one animation share a single range centred on zero, across frames and across panels, so a fainter
panel really holds smaller numbers.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from lineage.plots.core import (
    LEGEND_BELOW,
    LEGEND_BELOW_MARGIN,
    STATE_HOVER,
    Panel,
    animated_heatmaps,
    checked_array,
    figure,
    heatmaps,
    house_layout,
    step_marker,
)
from lineage.plots.palette import mechanism_line, series_line
from lineage.plots.vocabulary import name_coinciding

UNIT = (0.0, 1.0)  # the colour range of every gate, mask and retention map
FADED = 0.45  # the opacity of a line that stands for what is being replaced (an old value), beside the new at 1


def mechanism_styles(lines: Mapping[str, tuple[str, bool]]) -> dict[str, dict]:
    """:func:`over_time` styles for lines drawn by mechanisms: {name: (mechanism key, faded)} → each line in its
    mechanism's colour, dash and marker (as on every chart), a faded one lighter and thinner (the old value)."""
    styles = {}
    for name, (key, faded) in lines.items():
        line, marker = mechanism_line(key, width=1.5 if faded else 2.5)
        styles[name] = dict(line=line, marker=marker | dict(size=5), opacity=FADED if faded else 1.0)
    return styles


def over_time(
    series: Mapping[str, np.ndarray],
    *,
    title: str,
    y_title: str,
    step: int | None = None,
    y_range: tuple[float, float] | None = None,
    height: int = 320,
    styles: Mapping[str, dict] | None = None,
) -> go.Figure:
    """Lines over the steps 0 … T−1, one per series (all of length T), with a dashed marker at ``step``. ``styles``:
    trace properties by series name (:func:`mechanism_styles`) in place of the neutral series' greys."""
    if not series:
        raise ValueError("series must name at least one line")
    arrays = {name: checked_array(f"series[{name!r}]", y, 1) for name, y in series.items()}
    T = next(iter(arrays.values())).size
    for name, y in arrays.items():
        if y.size != T:
            raise ValueError(f"series[{name!r}] must have {T} points like the first series, got {y.size}")
    data = [
        dict(
            type="scatter",
            x=np.arange(T),
            y=y,
            name=name,
            mode="lines+markers",
            marker=dict(size=5),
            line=series_line(i, width=2)[0],
            hovertemplate=f"{name}<br>step %{{x}}: %{{y:.4g}}<extra></extra>",
        )
        | (styles or {}).get(name, {})
        for i, (name, y) in enumerate(arrays.items())
    ]
    layout = dict(
        xaxis=dict(title=dict(text="step t"), range=[-0.5, T - 0.5]),
        yaxis=dict(title=dict(text=y_title), range=list(y_range) if y_range else None),
        legend=LEGEND_BELOW,
    )
    layout |= house_layout(title=title, height=height)
    layout["margin"]["b"] = LEGEND_BELOW_MARGIN
    fig = figure(name_coinciding(data), layout)  # α = β = 1 on most of the story's steps: one line, both names
    if step is not None:
        step_marker(fig, step)
    return fig


def gates_by_channel(alpha: np.ndarray, *, title: str, step: int | None = None, height: int = 360) -> go.Figure:
    """Key channels × time heatmap of the decay α applied at every step: ``alpha`` [T, K]."""
    a = checked_array("alpha", alpha, 2)
    fig = heatmaps(
        [Panel("α per key channel", a.T[None], x_title="step t", y_title="key channel c", zrange=UNIT)],
        title=title,
        height=height,
    )
    if step is not None:
        step_marker(fig, step, band=True)
    return fig


def retention_map(retention: np.ndarray, *, title: str, height: int = 420) -> go.Figure:
    """How much of the item written at step x is left t steps later: ``retention`` [T_write, T_lag] (NaN: past T)."""
    r = checked_array("retention", retention, 2)
    return heatmaps(
        [
            Panel(
                "left of the write",
                r[None],
                x_title="lag t (steps since the write)",
                y_title="write step x",
                zrange=UNIT,
            )
        ],
        title=title,
        height=height,
    )


def channel_retention(panels: Mapping[str, np.ndarray], *, title: str, height: int = 380) -> go.Figure:
    """Side by side, key channels × lag: how much of one write each channel keeps. Each value [T_lag, K]."""
    if not panels:
        raise ValueError("panels must name at least one retention array")
    return heatmaps(
        [
            Panel(
                name,
                checked_array(f"panels[{name!r}]", r, 2).T[None],
                x_title="lag t",
                y_title="" if i else "key channel c",  # the rows mean the same in every panel
                zrange=UNIT,
            )
            for i, (name, r) in enumerate(panels.items())
        ],
        title=title,
        height=height,
    )


def decay_mask_and_attention(
    mask: np.ndarray, attention: np.ndarray, *, title: str, step: int | None = None, height: int = 440
) -> go.Figure:
    """The decay mask L [T, T] and the attention it induces, A = L ⊙ scale·QKᵀ [T, T]; row ``step`` outlined."""
    m, a = checked_array("mask", mask, 2), checked_array("attention", attention, 2)
    if m.shape != a.shape or m.shape[0] != m.shape[1]:
        raise ValueError(f"mask and attention must both be [T, T], got {m.shape} and {a.shape}")
    future = ~np.tri(m.shape[0], dtype=bool)  # j > i: masked out, which is not the same as "decayed to 0"
    m, a = np.where(future, np.nan, m), np.where(future, np.nan, a)
    fig = heatmaps(
        [
            Panel(
                "decay mask L (αs multiplied)",
                m[None],
                x_title="source step j",
                y_title="step i",
                zrange=UNIT,
                hover="L[i=%{y}, j=%{x}] = %{z:.3g}: what is left at step %{y} of what step %{x} wrote",
            ),
            Panel(
                "attention A = L ⊙ scale·QKᵀ",
                a[None],
                x_title="source step j",
                signed=True,
                hover="A[i=%{y}, j=%{x}] = %{z:.3f}: how much of v_%{x} reaches output %{y}",
            ),
        ],
        title=title,
        height=height,
    )
    if step is not None:
        step_marker(fig, step, axis="y", band=True)
    return fig


def state_animation(
    states: Mapping[str, np.ndarray],
    *,
    title: str,
    gate: np.ndarray | None = None,
    start: int | None = None,
    height: int = 440,
) -> go.Figure:
    """The state S_t [T, K, V] of one or more runs, animated step by step on one shared signed colour range.

    Args:
        states: panel title -> states [T, K, V]; all runs share T and K (rows are the key channels).
        gate: optional α [T, K] shown first as a column beside the rows it scales (range [0, 1]).
        start: the step shown first (default the last).
    """
    if not states:
        raise ValueError("states must name at least one run")
    arrays = {name: checked_array(f"states[{name!r}]", s, 3) for name, s in states.items()}
    T, K = next(iter(arrays.values())).shape[:2]
    for name, s in arrays.items():
        if s.shape[:2] != (T, K):
            raise ValueError(f"states[{name!r}] must be [T={T}, K={K}, V], got {s.shape}")
    finite = np.concatenate([np.abs(s[np.isfinite(s)]) for s in arrays.values()])
    m = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    panels = [
        Panel(
            name,
            s,
            x_title="value column",
            y_title="" if i or gate is not None else "key row",
            signed=True,
            zrange=(-m, m),
            hover=f"{name}<br>{STATE_HOVER}",
        )
        for i, (name, s) in enumerate(arrays.items())
    ]
    if gate is not None:
        g = checked_array("gate", gate, 2)
        if g.shape != (T, K):
            raise ValueError(f"gate must be [T={T}, K={K}], got {g.shape}")
        panels.insert(0, Panel("α_t", g[:, :, None], y_title="key row", zrange=UNIT, x_labels=["α"], width=0.2))
    return animated_heatmaps(panels, title=title, start=start, height=height)
