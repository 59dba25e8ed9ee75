"""The story's figures: a memory read as a table of facts, one frame per token, everything step-dependent in the frame.

A stage page's main chart. Left, the state S_t with its rows named by the keys that own them and its columns by the
values (while the story's vocabulary fits K and V, row "Dee", column "green" is literally "how strongly Dee points to
green"). Right, how much of each query's expected answer the memory holds after every step, with a marker at the
current step. The sentence describing the step sits in the figure too. Play, the slider and the frames move the
heatmap, the marker and the sentence together, so no view can show two steps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from lineage.plots import present
from lineage.plots.core import (
    COLORSCALES,
    CONTROLS_PX,
    DIVERGING,
    SEQUENTIAL,
    cell_text,
    color_range,
    figure,
    frame_indices,
    house_layout,
    play_controls,
    subplot_grid,
)
from lineage.plots.palette import NEUTRAL, OKABE_ITO

STEP_LABEL_PX = 12  # Plotly's tick font size outside presenter mode (presenter mode makes its own room)
STEP_LABEL_ANGLE = -60  # the step labels (token names) stand at this angle under the line panels

SENTENCE_Y = 1.16  # paper y of the step's sentence: above the panel titles
QUERY_COLOURS = [OKABE_ITO[c] for c in ("blue", "vermillion", "bluish green", "reddish purple", "orange", "sky blue")]


def _sentence(text: str) -> dict:
    return dict(
        text=text,
        x=0.0,
        xanchor="left",
        xref="paper",
        y=SENTENCE_Y,
        yanchor="bottom",
        yref="paper",
        showarrow=False,
        align="left",
        font=dict(size=16),
        name="step_sentence",
    )


def _animated(data, layout, frames, keep, first, *, title: str, height: int, upright: Sequence[str]) -> go.Figure:
    """What the story's animations share: Play and the step slider, hanging below the step labels that stand at
    STEP_LABEL_ANGLE under the line panel (``upright``; none: nothing stands up), the house layout, and the legend
    beside the line panel, on the first screen (below the rotated labels it would fall off it)."""
    layout.update(play_controls([str(t) for t in keep], start=first))
    reach = 0
    if upright:  # how far below the axis the longest label reaches, at the tick size outside presenter mode
        longest_px = max(map(len, upright)) * present.GLYPH_EM * STEP_LABEL_PX
        reach = int(longest_px * math.sin(math.radians(-STEP_LABEL_ANGLE)))
        for control in (*layout["updatemenus"], *layout["sliders"]):
            control["pad"] = {**control["pad"], "t": control["pad"]["t"] + reach}
    layout.update(house_layout(title=title, height=height))
    layout["margin"].update(t=130 if title else 100, b=max(190, CONTROLS_PX + reach + present.CONTROLS_BELOW_PX), r=170)
    layout["legend"] = dict(x=1.01, y=1.0, xanchor="left", yanchor="top")
    return figure(data, layout, frames)


def story_memory(
    states: np.ndarray,
    *,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    step_labels: Sequence[str],
    sentences: Sequence[str],
    held: Mapping[str, np.ndarray] | None = None,
    start: int | None = None,
    title: str = "",
    height: int = 480,
) -> go.Figure:
    """The state as a fact table, animated over the story, beside each query's held share with a step marker.

    Args:
        states: [T, K, V] the state after every step.
        row_labels, column_labels: names of the K rows and V columns.
        step_labels: the token of each step (shown on the time axis).
        sentences: one sentence per step, shown above the panels in that step's frame.
        held: query name -> [T] share of its expected answer held after each step (NaN before it is written).
        start: the step shown first (default the last).
    """
    states = np.asarray(states, dtype=np.float64)
    if states.ndim != 3 or states.shape[0] == 0:
        raise ValueError(f"states must be a non-empty [T, K, V] array, got shape {states.shape}")
    T, K, V = states.shape
    for name, seq, n in (
        ("row_labels", row_labels, K),
        ("column_labels", column_labels, V),
        ("step_labels", step_labels, T),
        ("sentences", sentences, T),
    ):
        if len(seq) != n:
            raise ValueError(f"{name} must have {n} entries, got {len(seq)}")
    held = dict(held or {})
    for name, curve in held.items():
        if np.shape(curve) != (T,):
            raise ValueError(f"held[{name!r}] must be [T = {T}], got shape {np.shape(curve)}")
    keep = frame_indices(T)
    first = int(np.abs(keep - (T - 1 if start is None else start)).argmin())
    zmin, zmax, signed = color_range(states)
    texts = cell_text(states[keep])
    ticks = [f"{t} {lab}" for t, lab in enumerate(step_labels)]

    panels = ["The memory S_t: row = key, column = value", "Share of each answer held"] if held else ["The memory S_t"]
    layout = subplot_grid(panels, widths=[1.0, 0.9][: len(panels)], spacing=0.14)
    titles = layout.pop("annotations", [])
    layout["xaxis"].update(title=dict(text="value"), side="bottom", tickangle=0)
    layout["yaxis"].update(title=dict(text="key"), autorange="reversed")
    heat = dict(
        type="heatmap",
        z=states[keep[first]],
        x=list(column_labels),
        y=list(row_labels),
        zmin=zmin,
        zmax=zmax,
        zmid=0.0 if signed else None,
        colorscale=COLORSCALES[DIVERGING if signed else SEQUENTIAL],
        colorbar=dict(x=layout["xaxis"]["domain"][1] + 0.005, len=0.85, thickness=12),
        text=None if texts is None else texts[first],
        texttemplate="%{text}" if texts is not None else None,
        textfont=dict(size=10),
        hovertemplate="S[key %{y}, value %{x}] = %{z:.3f}: how strongly key %{y} points to value %{x}<extra></extra>",
        name="state",
    )
    data = [heat]
    if held:
        layout["xaxis2"].update(
            title=dict(text="step (token)"),
            tickmode="array",
            tickvals=list(range(T)),
            ticktext=ticks,
            range=[-0.5, T - 0.5],
            tickangle=STEP_LABEL_ANGLE,
        )
        # the panel's title names the quantity; ticks in percent keep the gap to the heatmap's colour bar clear
        layout["yaxis2"].update(range=[-0.25, 1.25], tickvals=[0, 0.5, 1], tickformat=".0%")
        for i, (name, curve) in enumerate(held.items()):
            data.append(
                dict(
                    type="scatter",
                    mode="lines+markers",
                    x=list(range(T)),
                    y=[None if not np.isfinite(c) else float(c) for c in curve],
                    name=name,
                    line=dict(color=QUERY_COLOURS[i % len(QUERY_COLOURS)], width=3),
                    marker=dict(size=6),
                    xaxis="x2",
                    yaxis="y2",
                    hovertemplate=f"{name}<br>after step %{{x}}: %{{y:.0%}} held<extra></extra>",
                )
            )
        data.append(  # the step marker: a trace, so every frame moves it with the heatmap
            dict(
                type="scatter",
                mode="lines",
                x=[int(keep[first])] * 2,
                y=[-0.25, 1.25],
                line=dict(color=NEUTRAL, width=3, dash="dash"),
                name="this step",
                showlegend=False,
                hoverinfo="skip",
                xaxis="x2",
                yaxis="y2",
                meta="step_marker",
            )
        )
    frames = []
    for j, t in enumerate(keep):
        traces = [dict(type="heatmap", z=states[t], zmin=zmin, zmax=zmax)]
        if texts is not None:
            traces[0]["text"] = texts[j]
        idx = [0]
        if held:
            traces.append(dict(type="scatter", x=[int(t)] * 2, y=[-0.25, 1.25]))
            idx.append(len(data) - 1)
        frames.append(
            dict(
                name=str(t),
                data=traces,
                traces=idx,
                layout=dict(annotations=[*titles, _sentence(sentences[t])]),
            )
        )
    layout["annotations"] = [*titles, _sentence(sentences[keep[first]])]
    return _animated(data, layout, frames, keep, first, title=title, height=height, upright=ticks if held else ())


def attention_story(
    attn: np.ndarray,
    *,
    step_labels: Sequence[str],
    sentences: Sequence[str],
    series: Mapping[str, np.ndarray],
    series_title: str,
    y_title: str,
    start: int | None = None,
    title: str = "",
    height: int = 480,
) -> go.Figure:
    """Softmax attention generating the story: head 0's attention rows so far (left) and a cost per step (right:
    rows projected, bytes cached…, with the step marker), one frame per token, with the step's sentence.

    Args:
        attn: [T, T] attention weights (row t: query t over keys ≤ t).
        step_labels: the token of each step. sentences: one per step.
        series: name -> [T] values per step, drawn as lines on the right. series_title, y_title: its panel's title
            and y axis.
    """
    attn = np.asarray(attn, dtype=np.float64)
    T = attn.shape[0]
    if attn.shape != (T, T) or T == 0:
        raise ValueError(f"attn must be a non-empty [T, T] array, got shape {attn.shape}")
    if len(step_labels) != T or len(sentences) != T:
        raise ValueError(f"step_labels and sentences must have {T} entries each")
    series = {name: np.asarray(y, dtype=np.float64) for name, y in series.items()}
    for name, y in series.items():
        if y.shape != (T,):
            raise ValueError(f"series[{name!r}] must be [T = {T}], got shape {y.shape}")
    top = 1.1 * max((float(np.nanmax(y)) for y in series.values()), default=1.0)
    keep = frame_indices(T)
    first = int(np.abs(keep - (T - 1 if start is None else start)).argmin())
    ticks = [f"{t} {lab}" for t, lab in enumerate(step_labels)]
    shown = np.where(np.tril(np.ones((T, T))) > 0, attn, np.nan)

    def upto(t: int) -> np.ndarray:
        z = shown.copy()
        z[t + 1 :] = np.nan
        return z

    layout = subplot_grid(["Head 0's attention, query row by row", series_title], spacing=0.14)
    titles = layout.pop("annotations", [])
    axis = dict(tickmode="array", tickvals=list(range(T)), ticktext=ticks, tickangle=STEP_LABEL_ANGLE)
    layout["xaxis"].update(title=dict(text="key (token)"), **axis)
    layout["yaxis"].update(title=dict(text="query (token)"), autorange="reversed", **axis | dict(tickangle=0))
    layout["xaxis2"].update(title=dict(text="step (token)"), range=[-0.5, T - 0.5], **axis)
    layout["yaxis2"].update(title=dict(text=y_title), range=[0, top])
    data = [
        dict(
            type="heatmap",
            z=upto(int(keep[first])),
            zmin=0.0,
            zmax=1.0,
            colorscale=COLORSCALES[SEQUENTIAL],
            colorbar=dict(x=layout["xaxis"]["domain"][1] + 0.005, len=0.85, thickness=12),
            hovertemplate="query %{y} → key %{x}: weight %{z:.3f}<extra></extra>",
            name="attention",
        )
    ]
    for i, (name, r) in enumerate(series.items()):
        data.append(
            dict(
                type="scatter",
                mode="lines+markers",
                x=list(range(T)),
                y=r.tolist(),
                name=name,
                line=dict(color=QUERY_COLOURS[i], width=3),
                xaxis="x2",
                yaxis="y2",
            )
        )
    data.append(
        dict(
            type="scatter",
            mode="lines",
            x=[int(keep[first])] * 2,
            y=[0, top],
            line=dict(color=NEUTRAL, width=3, dash="dash"),
            showlegend=False,
            hoverinfo="skip",
            xaxis="x2",
            yaxis="y2",
            name="this step",
            meta="step_marker",
        )
    )
    frames = [
        dict(
            name=str(t),
            data=[dict(type="heatmap", z=upto(int(t))), dict(type="scatter", x=[int(t)] * 2, y=[0, top])],
            traces=[0, len(data) - 1],
            layout=dict(annotations=[*titles, _sentence(sentences[t])]),
        )
        for t in keep
    ]
    layout["annotations"] = [*titles, _sentence(sentences[keep[first]])]
    return _animated(data, layout, frames, keep, first, title=title, height=height, upright=ticks)


def decode_ratio_curves(
    batches: np.ndarray,
    ratios: Mapping[str, np.ndarray],
    *,
    paper: float,
    ceiling: float,
    title: str = "",
    height: int = 420,
) -> go.Figure:
    """The bandwidth model's decode-time ratio (all-MLA over the hybrid) against batch size, one line per context,
    beside the paper's figure and the cache-only ceiling.

    Args:
        batches: [n] batch sizes (log x axis). ratios: context label -> [n] ratio at each batch.
        paper: the paper's stated ratio (a horizontal reference line). ceiling: the ratio of cache bytes alone.
    """
    batches = np.asarray(batches, dtype=np.float64)
    if batches.ndim != 1 or batches.size == 0 or np.any(batches <= 0):
        raise ValueError(f"batches must be a non-empty 1-D array of positive sizes, got {batches!r}")
    data = []
    for i, (name, r) in enumerate(ratios.items()):
        if np.shape(r) != batches.shape:
            raise ValueError(f"ratios[{name!r}] must match batches ({batches.shape}), got {np.shape(r)}")
        data.append(
            dict(
                type="scatter",
                mode="lines+markers",
                x=batches.tolist(),
                y=np.asarray(r, dtype=np.float64).tolist(),
                name=name,
                line=dict(color=QUERY_COLOURS[i % len(QUERY_COLOURS)], width=3),
                hovertemplate=f"{name}<br>batch %{{x}}: %{{y:.2f}}×<extra></extra>",
            )
        )
    for y, text, dash in (
        (paper, f"paper: {paper:g}× (measured)", "dash"),
        (ceiling, f"cache bytes alone: {ceiling:.2f}×", "dot"),
    ):
        data.append(
            dict(
                type="scatter",
                mode="lines",
                x=[batches.min(), batches.max()],
                y=[y, y],
                name=text,
                line=dict(color=NEUTRAL, width=2, dash=dash),
                hoverinfo="skip",
            )
        )
    layout = dict(
        xaxis=dict(type="log", title=dict(text="sequences decoded together (batch)")),
        yaxis=dict(title=dict(text="decode time, all-MLA ÷ hybrid"), rangemode="tozero"),
        legend=dict(orientation="h", x=0.0, y=-0.25, xanchor="left", yanchor="top"),
    )
    layout |= house_layout(title=title, height=height)
    layout["margin"]["b"] = 140
    return figure(data, layout)


def crossover(
    tokens: np.ndarray,
    measured: Mapping[str, np.ndarray],
    extended_tokens: np.ndarray,
    extended: Mapping[str, np.ndarray],
    *,
    crossing: float,
    title: str = "",
    height: int = 420,
) -> go.Figure:
    """Bytes one layer of each kind holds against tokens decoded: measured in the live decode (solid), and computed
    beyond it from the same bytes per token (dashed, labelled as computed), with the crossing marked.

    Args:
        tokens: [n] decode steps measured. measured: kind -> [n] bytes.
        extended_tokens: [m] token counts of the computed extension. extended: kind -> [m] bytes.
        crossing: the token count where the growing cache passes the fixed state.
    """
    tokens = np.asarray(tokens, dtype=np.float64)
    extended_tokens = np.asarray(extended_tokens, dtype=np.float64)
    if set(measured) != set(extended):
        raise ValueError("measured and extended must name the same layer kinds")
    data = []
    for i, kind in enumerate(measured):
        colour = QUERY_COLOURS[i % len(QUERY_COLOURS)]
        data.append(
            dict(
                type="scatter",
                mode="lines+markers",
                x=tokens.tolist(),
                y=np.asarray(measured[kind], dtype=np.float64).tolist(),
                name=f"{kind}: measured in the live decode",
                line=dict(color=colour, width=3),
            )
        )
        data.append(
            dict(
                type="scatter",
                mode="lines",
                x=extended_tokens.tolist(),
                y=np.asarray(extended[kind], dtype=np.float64).tolist(),
                name=f"{kind}: computed beyond it",
                line=dict(color=colour, width=3, dash="dash"),
            )
        )
    layout = dict(
        xaxis=dict(type="log", title=dict(text="tokens decoded")),
        yaxis=dict(type="log", title=dict(text="bytes held by one layer"), exponentformat="SI"),
        shapes=[
            dict(
                type="line",
                x0=crossing,
                x1=crossing,
                xref="x",
                y0=0,
                y1=1,
                yref="y domain",
                line=dict(color=NEUTRAL, width=2, dash="dot"),
            )
        ],
        annotations=[
            dict(
                x=float(np.log10(crossing)),
                xref="x",
                y=1.0,
                yref="y domain",
                yanchor="bottom",
                text=f"cache passes the state at {crossing:,.0f} tokens",
                showarrow=False,
            )
        ],
        legend=dict(orientation="h", x=0.0, y=-0.25, xanchor="left", yanchor="top"),
    )
    layout |= house_layout(title=title, height=height)
    layout["margin"]["b"] = 150
    return figure(data, layout)
