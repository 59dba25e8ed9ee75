"""Figures of a run at real size (:mod:`lineage.teach.real_size`): summaries over the whole sequence, one point per
segment.

A run of tens of thousands of tokens is drawn as lines over the token position (a point at the end of each segment)
and as a key channels × segments heatmap; its first steps, which are drawn exactly, use the stage pages' own state
animation (:func:`lineage.plots.gated.state_animation`). Pure builders: numpy in, ``go.Figure`` out.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from lineage.plots.core import LEGEND_BELOW, LEGEND_BELOW_MARGIN, Panel, figure, heatmaps, house_layout
from lineage.plots.palette import series_line


def _positions(x) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.diff(arr) > 0):
        raise ValueError(f"positions must be a non-empty increasing 1-D array, got shape {arr.shape}")
    return arr


def run_summary(
    positions: np.ndarray,
    series: Mapping[str, np.ndarray],
    *,
    title: str,
    y_title: str,
    x_title: str = "tokens read",
    height: int = 340,
) -> go.Figure:
    """Lines over a long run, one point per segment: ``series`` name -> values [n] at ``positions`` [n] (the token
    count at the end of each segment). Each line is labelled in the legend and on hover."""
    x = _positions(positions)
    if not series:
        raise ValueError("series must name at least one line")
    data = []
    for i, (name, y) in enumerate(series.items()):
        y = np.asarray(y, dtype=np.float64)
        if y.shape != x.shape:
            raise ValueError(f"series[{name!r}] must have one value per position ({x.size}), got shape {y.shape}")
        data.append(
            dict(
                type="scatter",
                x=x,
                y=y,
                name=name,
                mode="lines",
                line=series_line(i, width=2)[0],
                hovertemplate=f"{name}<br>after %{{x:,}} tokens: %{{y:.4g}}<extra></extra>",
            )
        )
    layout = dict(
        xaxis=dict(title=dict(text=x_title), range=[0, float(x[-1])]),
        yaxis=dict(title=dict(text=y_title), rangemode="tozero"),
        legend=LEGEND_BELOW,
    )
    layout |= house_layout(title=title, height=height)
    layout["margin"]["b"] = LEGEND_BELOW_MARGIN
    return figure(data, layout)


def state_rows_over_run(positions: np.ndarray, row_norms: np.ndarray, *, title: str, height: int = 400) -> go.Figure:
    """Key channels × segments: ‖S[c, :]‖ of each key row c of one head's state after each segment.

    Args: positions [n] (tokens read after each segment); row_norms [n, K].
    """
    x = _positions(positions)
    rows = np.asarray(row_norms, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != x.size:
        raise ValueError(f"row_norms must be [n={x.size}, K], got shape {rows.shape}")
    return heatmaps(
        [
            Panel(
                "‖S[c, :]‖",
                rows.T[None],
                x_title="tokens read",
                y_title="key channel c",
                signed=False,
                x_labels=x.astype(np.int64).tolist(),
                hover="after %{x:,} tokens, key row %{y} of the state has norm %{z:.3g}",
            )
        ],
        title=title,
        height=height,
    )
