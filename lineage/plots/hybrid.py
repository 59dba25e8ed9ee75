"""Figures for the hybrid stack: which layers' memory grows while decoding, and which stays fixed.

Pure builders: numpy in, ``go.Figure`` out. Softmax layers (MLA, MHA, GQA) keep a cache and are drawn in the cache
colour of :mod:`lineage.plots.memory`; linear-memory layers keep a fixed state and get the state colour, so the
two pages on memory read alike.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lineage.plots.core import Panel, figure, frame_indices, heatmaps, house_layout, play_controls, step_marker
from lineage.plots.memory import format_bytes
from lineage.plots.palette import MEMORY_COLOURS
from lineage.schedules import SOFTMAX_KINDS


def _check(schedule: Sequence[str], layer_bytes) -> np.ndarray:
    b = np.asarray(layer_bytes)
    if b.ndim != 2 or b.size == 0:
        raise ValueError(f"layer_bytes must be a non-empty [T, n_layers] array, got shape {b.shape}")
    if len(schedule) != b.shape[1]:
        raise ValueError(f"schedule must name one kind per layer ({b.shape[1]}), got {len(schedule)}")
    return b


def _bars(schedule: Sequence[str], row: np.ndarray) -> list[dict]:
    """One bar trace for the cache layers and one for the state layers (so the legend names both)."""
    layers = np.arange(1, len(schedule) + 1)
    out = []
    for name, is_cache, color in (
        ("softmax layer: cache (grows)", True, MEMORY_COLOURS["cache"]),
        ("linear layer: state (fixed)", False, MEMORY_COLOURS["state"]),
    ):
        pick = np.array([(kind in SOFTMAX_KINDS) == is_cache for kind in schedule])
        out.append(
            dict(
                type="bar",
                x=layers[pick],
                y=row[pick],
                name=name,
                marker=dict(color=color),
                customdata=[
                    [kind, f"{int(b):,} bytes ({format_bytes(float(b))})"]
                    for kind, b in zip(np.asarray(schedule)[pick], row[pick], strict=True)
                ],
                hovertemplate="layer %{x} (%{customdata[0]}): %{customdata[1]}<extra></extra>",
            )
        )
    return out


def _changing(bar: dict) -> dict:
    """What of a bar trace changes from frame to frame: the bars and their hover text."""
    return {key: bar[key] for key in ("type", "x", "y", "customdata")}


def decode_bytes_animation(
    schedule: Sequence[str],
    layer_bytes: np.ndarray,
    *,
    title: str,
    start: int | None = None,
    height: int = 420,
) -> go.Figure:
    """Bytes each layer holds, animated over decoding steps: ``layer_bytes`` [T, n_layers] after 1 … T tokens.

    The y range is fixed over all frames (0 to the largest count), so a bar that grows really grows.
    """
    b = _check(schedule, layer_bytes)
    T = b.shape[0]
    keep = frame_indices(T)
    first = int(np.abs(keep - (T - 1 if start is None else start)).argmin())
    labels = [str(t + 1) for t in keep]
    # plotly.js merges a frame's traces into the figure's: names, colours and hover text stay as set here
    frames = [
        dict(data=[_changing(bar) for bar in _bars(schedule, b[t])], name=lab, traces=[0, 1])
        for t, lab in zip(keep, labels, strict=True)
    ]
    layout = dict(
        **play_controls(labels, start=first, prefix="tokens: "),
        barmode="group",
        bargap=0.15,
        xaxis=dict(title=dict(text="layer"), dtick=1, range=[0.5, len(schedule) + 0.5]),
        yaxis=dict(title=dict(text="bytes held"), range=[0, 1.05 * float(b.max()) or 1.0]),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1.0, xanchor="right"),
    )
    return figure(_bars(schedule, b[keep[first]]), layout | house_layout(title=title, height=height), frames)


def bytes_by_layer_and_time(
    schedule: Sequence[str], layer_bytes: np.ndarray, *, title: str, step: int | None = None, height: int = 380
) -> go.Figure:
    """Layers × tokens heatmap of the bytes each layer holds (``layer_bytes`` [T, n_layers]); ``step`` outlined."""
    b = _check(schedule, layer_bytes).astype(np.float64)
    fig = heatmaps(
        [
            Panel(
                "bytes held",
                b.T[None],
                x_title="tokens decoded",
                y_title="layer",
                zrange=(0.0, float(b.max()) or 1.0),
                x_labels=list(range(1, b.shape[0] + 1)),
                y_labels=[f"{i + 1} {kind.upper()}" for i, kind in enumerate(schedule)],
                hover="layer %{y} after %{x} tokens: %{z:.3s}B (%{z:,.0f} bytes)",
            )
        ],
        title=title,
        height=height,
    )
    if step is not None:
        step_marker(fig, step + 1, band=True)
    return fig


def layer_schedule_strip(schedule: Sequence[str], *, title: str, height: int = 200) -> go.Figure:
    """One cell per layer, bottom layer first: softmax layers (a cache that grows) in the cache colour, linear-memory
    layers (a fixed state) in the state colour, each softmax layer's position written on it."""
    if len(schedule) == 0:
        raise ValueError("schedule must name at least one layer kind")
    layers = np.arange(1, len(schedule) + 1)
    data = []
    for name, is_cache, color in (
        ("softmax layer: cache (grows)", True, MEMORY_COLOURS["cache"]),
        ("linear layer: state (fixed)", False, MEMORY_COLOURS["state"]),
    ):
        pick = np.array([(kind in SOFTMAX_KINDS) == is_cache for kind in schedule])
        data.append(
            dict(
                type="bar",
                x=layers[pick],
                y=np.ones(int(pick.sum())),
                name=name,
                marker=dict(color=color, line=dict(width=0)),
                customdata=[kind.upper() for kind in np.asarray(schedule)[pick]],
                text=[str(i) for i in layers[pick]] if is_cache else None,
                textposition="inside" if is_cache else "none",
                insidetextanchor="middle",
                textangle=-90,
                hovertemplate="layer %{x}: %{customdata}<extra></extra>",
            )
        )
    layout = dict(
        bargap=0.08,
        xaxis=dict(
            title=dict(text="layer (bottom to top)"),
            range=[0.5, len(schedule) + 0.5],
            dtick=4 if len(schedule) > 32 else 1,
        ),
        yaxis=dict(visible=False, range=[0, 1]),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1.0, xanchor="right"),
    )
    return figure(data, layout | house_layout(title=title, height=height))
