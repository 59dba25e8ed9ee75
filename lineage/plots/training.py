"""Figures of the Learned memory page (:mod:`lineage.train.loop`): accuracy while training, and the Zoology-style
sweeps.

Every line is a mechanism in its lineage colour, dash and marker (:func:`lineage.plots.palette.mechanism_line`);
the hybrid takes the hybrid stage's line, the no-mixing control a neutral grey. A dotted grey line marks chance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from lineage.mechanisms import MECHANISMS
from lineage.models.lm import mixer_title  # re-exported as lineage.plots.mixer_title
from lineage.plots.core import LEGEND_BELOW, LEGEND_BELOW_MARGIN, figure, house_layout
from lineage.plots.palette import NEUTRAL, mechanism_line, stage_line


def _style(mixer: str) -> tuple[dict, dict]:
    if mixer == "hybrid":
        return stage_line("hybrid")
    if mixer in MECHANISMS:
        return mechanism_line(mixer)
    return dict(color=NEUTRAL, dash="longdash", width=3.0), dict(color=NEUTRAL, symbol="x", size=8)


def _chance(chance: float | None) -> list[dict]:
    if chance is None:
        return []
    line = dict(color=NEUTRAL, dash="dot", width=1.5)
    return [dict(type="line", x0=0, x1=1, xref="paper", y0=chance, y1=chance, yref="y", line=line)]


def _layout(title: str, x_title: str, *, chance: float | None, height: int, x_type: str = "linear") -> dict:
    layout = dict(
        xaxis=dict(title=dict(text=x_title), type=x_type),
        yaxis=dict(title=dict(text="held-out accuracy"), range=[0, 1.05], tickformat=".0%"),
        legend=LEGEND_BELOW,
        shapes=_chance(chance),
    )
    layout |= house_layout(title=title, height=height)
    layout["margin"]["b"] = LEGEND_BELOW_MARGIN
    return layout


def training_curves(
    curves: Mapping[str, tuple[Sequence[int], Sequence[float]]],
    *,
    title: str,
    chance: float | None = None,
    height: int = 420,
) -> go.Figure:
    """Held-out accuracy against training step, one line per mixer: ``curves`` mixer -> (steps, accuracies)."""
    data = []
    for mixer, (steps, acc) in curves.items():
        if len(steps) != len(acc):
            raise ValueError(f"curves[{mixer!r}]: {len(steps)} steps but {len(acc)} accuracies")
        line, marker = _style(mixer)
        name = mixer_title(mixer)
        data.append(
            dict(
                type="scatter",
                x=np.asarray(steps, dtype=float),
                y=np.asarray(acc, dtype=float),
                name=name,
                mode="lines+markers",
                line=line,
                marker=marker | dict(size=5),
                hovertemplate=f"{name}<br>step %{{x}}: %{{y:.1%}} of answers right<extra></extra>",
            )
        )
    return figure(data, _layout(title, "training step", chance=chance, height=height))


def accuracy_sweep(
    points: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    x_title: str,
    title: str,
    chance: float | None = None,
    live: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    spread: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    names: Mapping[str, str] | None = None,
    log_x: bool = False,
    height: int = 420,
    dodge: float = 0.0,
    rising: Mapping[str, Sequence[bool]] | None = None,
) -> go.Figure:
    """Final held-out accuracy against a task size (pairs, sequence length) or a state size, one line per line key:
    ``points`` key -> (sizes, accuracies) from the recorded run. A key is a mixer, or ``"mixer/variant"`` (drawn in
    the mixer's colour, dotted, named by ``names``). ``spread`` key -> (lowest, highest) accuracy over the seeds at
    each size, drawn as error bars; ``live`` adds the points re-run here as open markers. ``dodge``: lines are drawn
    this far apart along x (a fraction of a decade on a log axis), so points at the same size and accuracy do not hide
    one another; the hover gives the true size. ``rising`` key -> one flag per point: points that hit their budget
    while still rising are ringed by an open triangle (their accuracy is a lower bound)."""
    data = []
    lower_bounds: tuple[list, list, list] = ([], [], [])  # x, y, true size of the still-rising points
    for i, (key, (x, acc)) in enumerate(points.items()):
        mixer, _, variant = key.partition("/")
        line, marker = _style(mixer)
        name = (names or {}).get(key, mixer_title(mixer))
        y = np.asarray(acc, dtype=float)
        sizes = np.asarray(x, dtype=float)
        shift = (i - (len(points) - 1) / 2) * dodge
        trace = dict(
            type="scatter",
            x=sizes * 10**shift if log_x else sizes + shift,
            customdata=sizes,
            y=y,
            name=f"{name} (recorded)",
            legendgroup=key,
            mode="lines+markers",
            line=line | (dict(dash="dot", width=2.0) if variant else {}),
            marker=marker | dict(size=9),
            hovertemplate=f"{name}, recorded<br>{x_title} %{{customdata:g}}: %{{y:.1%}}<extra></extra>",
        )
        for xi, yi, si, flag in zip(trace["x"], y, sizes, (rising or {}).get(key, ()), strict=False):
            if flag:
                for column, value in zip(lower_bounds, (xi, yi, si), strict=True):
                    column.append(float(value))
        if spread and key in spread:
            low, high = (np.asarray(v, dtype=float) for v in spread[key])
            if low.shape != y.shape or high.shape != y.shape:
                raise ValueError(f"spread[{key!r}] must give a low and a high for each of its {y.size} points")
            trace["error_y"] = dict(type="data", symmetric=False, array=high - y, arrayminus=y - low, thickness=1.5)
        data.append(trace)
    if lower_bounds[0]:
        data.append(
            dict(
                type="scatter",
                x=lower_bounds[0],
                y=lower_bounds[1],
                customdata=lower_bounds[2],
                name="still rising when its budget ran out (a lower bound)",
                mode="markers",
                marker=dict(size=20, symbol="triangle-up-open", color="#444", line=dict(width=2)),
                hovertemplate=f"still rising at its budget<br>{x_title} %{{customdata:g}}: %{{y:.1%}}<extra></extra>",
            )
        )
    for mixer, (x, acc) in (live or {}).items():
        line, marker = _style(mixer)
        name = mixer_title(mixer)
        data.append(
            dict(
                type="scatter",
                x=np.asarray(x, dtype=float),
                y=np.asarray(acc, dtype=float),
                name=f"{name} (re-run here)",
                legendgroup=mixer,
                mode="markers",
                marker=marker | dict(size=16, symbol=f"{marker['symbol']}-open", line=dict(width=3)),
                hovertemplate=f"{name}, re-run here<br>{x_title} %{{x}}: %{{y:.1%}}<extra></extra>",
            )
        )
    layout = _layout(title, x_title, chance=chance, height=height, x_type="log" if log_x else "linear")
    if dodge:  # ticks at the true sizes only: the lines are drawn beside them
        sizes = sorted({float(v) for x, _ in points.values() for v in x})
        layout["xaxis"].update(tickvals=sizes, ticktext=[f"{v:g}" for v in sizes])
    return figure(data, layout)
