"""The story's figures: a memory read as a table of facts, one frame per token, everything step-dependent in the frame.

A stage page's main chart. Left, the state S_t with its rows named by the keys that own them and its columns by the
values (while the story's vocabulary fits K and V, row "Dee", column "green" is literally "how strongly Dee points to
green"). Right, how much of each query's expected answer the memory holds after every step, with a marker at the
current step. The sentence describing the step sits in the figure too. Play, the slider and the frames move the
heatmap, the marker and the sentence together, so no view can show two steps.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from lineage.plots import present
from lineage.plots.core import (
    COLORSCALES,
    CONTROLS_PX,
    FONT,
    LAPTOP_PLOT_PX,
    SEQUENTIAL,
    cell_text,
    color_range,
    figure,
    frame_indices,
    house_layout,
    play_controls,
    subplot_grid,
)
from lineage.plots.palette import NEUTRAL, STATE_SCALE, mechanism_line, series_line
from lineage.plots.vocabulary import coinciding_groups, spread_coinciding

STEP_LABEL_PX = 12  # Plotly's tick font size outside presenter mode (presenter mode makes its own room)
# The step labels (token names) stand upright under the time axes: a label then takes one line height of the axis,
# so MAX_STEP_LABELS of them fit side by side in the narrowest panel (~270 px at 1280×800) without touching.
STEP_LABEL_ANGLE = -90

# The step's sentence stands on its own line(s) above the panel titles, a fixed number of px above the plot area,
# wrapped to fit the narrowest chart it is drawn in: ~800 px at 1280×800 with the sidebar open (16 px text), presenter
# mode's 1120 px (20 px text). A sentence cut at the chart's right edge, or run into the titles, is no sentence.
SENTENCE_PX = 16
SENTENCE_CHARS = 84  # characters per line: 84 × 0.55 em × 16 px ≈ 740 px, 84 × 0.55 × 20 ≈ 925 px
PANEL_TITLE_PX = 16  # core.SUBPLOT_TITLE_FONT
PANEL_SPACING = 0.2  # paper fraction between the two panels: the heatmap's colour bar and the line panel's ticks
MAX_STEP_LABELS = 16  # step labels under a time axis: every k-th token beyond this, never overprinted
HELD_SPREAD = 0.04  # answers that read back the same are drawn this far apart (4 points), and say so


def _text_px(px: int) -> int:
    """The size a text of ``px`` is drawn at: raised to the projection's text size in presenter mode."""
    p = present.active()
    return max(px, p.text) if p else px


def _sentence(text: str) -> dict:
    """The step's sentence as an annotation: wrapped, above the panel titles (``yshift``: px above the plot area)."""
    return dict(
        text=_wrapped(text, SENTENCE_CHARS),
        x=0.0,
        xanchor="left",
        xref="paper",
        y=1.0,
        yanchor="bottom",
        yshift=int(present.LINE_EM * _text_px(PANEL_TITLE_PX)) + 8,  # over one line of panel titles (_animated)
        yref="paper",
        showarrow=False,
        align="left",
        font=dict(size=SENTENCE_PX),
        name="step_sentence",
    )


def _sentence_room(frames: Sequence[dict]) -> int:
    """Px that the longest of the frames' sentences takes."""
    lines = max((n["text"].count("<br>") + 1 for f in frames for n in f["layout"]["annotations"] if n.get("name") ==
                 "step_sentence"), default=0)  # fmt: skip
    return int(present.LINE_EM * lines * _text_px(SENTENCE_PX)) + 8


def _wrapped(text: str, chars: int) -> str:
    """``text`` in lines of at most ``chars`` characters (Plotly's <br>), keeping the breaks it has."""
    return "<br>".join(line for part in text.split("<br>") for line in textwrap.wrap(part, max(chars, 12)))


def _panel_chars(layout: dict, x: float) -> int:
    """How many characters of a panel title fit over the panel centred at paper ``x``, at the laptop's width."""
    domains = [a["domain"] for k, a in layout.items() if k.startswith("xaxis")]
    dom = next(d for d in domains if d[0] <= x <= d[1])
    return int((dom[1] - dom[0]) * LAPTOP_PLOT_PX / (0.55 * _text_px(PANEL_TITLE_PX)))


LABEL_GAP = 0.2  # of the held panel's y (shares): end labels closer than this go on opposite sides of their lines


def _line_end(y: np.ndarray) -> float | None:
    """Where a drawn line ends: its last finite value (None for a line with none)."""
    finite = y[np.isfinite(y)]
    return float(finite[-1]) if finite.size else None


def _labels_below(ends: dict[str, float | None]) -> set[str]:
    """The labelled lines (name: where the line ends) whose end label goes below the line: the lower of two lines that
    end within LABEL_GAP of each other, from the top down."""
    below, previous = set(), None
    for y, name in sorted(((y, name) for name, y in ends.items() if y is not None), reverse=True):
        if previous is not None and previous - y < LABEL_GAP:
            below.add(name)
            previous = None  # the next label is free to go above again
        else:
            previous = y
    return below


def step_marker_shape(t: int) -> dict:
    """The dashed line at step ``t`` across the line panel (axes x2, y2), named "step_marker".

    A shape in each frame's layout, not a trace: a frame that updates a line trace (which plotly.js can animate)
    beside a heatmap (which it cannot) takes the animation's transition path, and that path takes the heatmap's image
    out of the page until the frame's redraw puts it back — a blank panel for most of every frame on a slow machine.
    A frame of heatmaps and layout only is redrawn in one go (measured in tests/e2e/test_player.py, CPU throttled)."""
    return dict(
        type="line",
        name="step_marker",
        x0=t,
        x1=t,
        xref="x2",
        y0=0,
        y1=1,
        yref="y2 domain",
        line=dict(color=NEUTRAL, width=3, dash="dash"),
        layer="above",
    )


def step_ticks(step_labels: Sequence[str]) -> dict:
    """Axis entries naming the steps "t token", every k-th one where more than ``MAX_STEP_LABELS`` would overprint
    (the last step always named); the hover names every step."""
    T = len(step_labels)
    k = max(1, math.ceil(T / MAX_STEP_LABELS))
    shown = list(range(0, T, k))
    if shown[-1] != T - 1:  # the last step is named; a k-th label too close before it makes way
        shown = [*shown[:-1], T - 1] if T - 1 - shown[-1] <= k / 2 else [*shown, T - 1]
    return dict(tickmode="array", tickvals=shown, ticktext=[f"{t} {step_labels[t]}" for t in shown])


def _animated(data, layout, frames, keep, first, *, title: str, height: int, upright: Sequence[str]) -> go.Figure:
    """What the story's animations share, from the top: Play / Pause on a row of their own (inside the first screen
    however tall the page's head is), the step's sentence on its own lines, the panel titles (wrapped to their panel),
    the panels; under them the step labels standing at STEP_LABEL_ANGLE (``upright``; none: nothing stands up), the
    step slider, and the legend at the foot, where long names cost height, not the panels' width. ``height``: the
    plot area gets ``height - 150`` px, the rows around it come on top."""
    layout.update(play_controls([str(t) for t in keep], start=first))
    reach = 0
    if upright:  # how far below the axis the longest label reaches, at the tick size outside presenter mode
        longest_px = max(map(len, upright)) * present.GLYPH_EM * STEP_LABEL_PX
        reach = int(longest_px * math.sin(math.radians(-STEP_LABEL_ANGLE)))
        for control in layout["sliders"]:
            control["pad"] = {**control["pad"], "t": control["pad"]["t"] + reach}
    layout.update(house_layout(title=title, height=height))
    title_lines = 1
    for note in layout["annotations"]:  # the panel titles, shared with every frame
        if note.get("name") != "step_sentence":
            lines = _wrapped(note["text"], _panel_chars(layout, note["x"]))
            note["text"], title_lines = lines, max(title_lines, lines.count("<br>") + 1)
    shift = int(present.LINE_EM * _text_px(PANEL_TITLE_PX) * title_lines) + 8
    for note in (*layout["annotations"], *(n for f in frames for n in f["layout"]["annotations"])):
        if note.get("name") == "step_sentence":
            note["yshift"] = shift
    sentence = _sentence_room(frames) + shift
    buttons = int(present.LINE_EM * _text_px(FONT["size"])) + 16  # a button: a line of text and its padding
    for menu in layout["updatemenus"]:
        menu.update(y=1.0, yanchor="bottom", pad=dict(b=sentence, r=10))
    title_px = present.active().title if present.active() else 1.2 * FONT["size"]  # Plotly's title: 1.2 × the font
    top = sentence + buttons + (int(present.LINE_EM * title_px) + 10 if title else 0)
    names = [t["name"] for t in data if t.get("name") and t.get("showlegend", True) and t.get("type") == "scatter"]
    legend_px = sum(len(n) * 0.55 * _text_px(FONT["size"]) + 50 for n in names)
    legend_rows = math.ceil(legend_px / LAPTOP_PLOT_PX) if names else 0
    bottom = max(190, CONTROLS_PX + reach + present.CONTROLS_BELOW_PX) + int(
        legend_rows * present.LINE_EM * _text_px(FONT["size"]) * 1.2
    )
    layout["margin"].update(t=top, b=bottom, r=40)
    layout["height"] = max(height - 150, 240) + top + bottom
    layout["legend"] = dict(orientation="h", x=0.0, xanchor="left", y=0.0, yanchor="bottom", yref="container")
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
    scale_rows: Sequence[int] | None = None,
    scale_cols: Sequence[int] | None = None,
) -> go.Figure:
    """The state as a fact table, animated over the story, beside each query's held share with a step marker.

    Args:
        states: [T, K, V] the state after every step.
        row_labels, column_labels: names of the K rows and V columns.
        step_labels: the token of each step (shown on the time axis).
        sentences: one sentence per step, shown above the panels in that step's frame.
        held: query name -> [T] share of its expected answer held after each step (NaN before it is written).
        start: the step shown first (default the last).
        scale_rows, scale_cols: the cells that set the colour range (default all): the facts' rows and columns, so a
            filler row or a normaliser column that grows far past them does not turn every fact the same colour.
            Cells beyond the range show its end colour and their value in the cell.
    """
    states = np.asarray(states, dtype=np.float64)
    held = dict(held or {})
    _check_story(states, row_labels, column_labels, step_labels, sentences, held)
    T, K, V = states.shape
    keep = frame_indices(T)
    first = int(np.abs(keep - (T - 1 if start is None else start)).argmin())
    rows = list(range(K)) if scale_rows is None else list(scale_rows)
    cols = list(range(V)) if scale_cols is None else list(scale_cols)
    # S_t is drawn on the one state scale, centred at 0, on every page (lineage.plots.palette.STATE_SCALE)
    zmin, zmax, _ = color_range(states[:, rows][:, :, cols], signed=True)
    texts = cell_text(states[keep])
    ticks = step_ticks(step_labels)

    panels = (
        ["The memory S_t: row = key, column = value", "Each answer read back (a blend counts 0)"]
        if held
        else ["The memory S_t"]
    )
    layout = subplot_grid(panels, widths=[1.0, 0.9][: len(panels)], spacing=PANEL_SPACING)
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
        zmid=0.0,
        colorscale=COLORSCALES[STATE_SCALE],
        colorbar=dict(x=layout["xaxis"]["domain"][1] + 0.005, len=0.85, thickness=12),
        text=None if texts is None else texts[first],
        texttemplate="%{text}" if texts is not None else None,
        textfont=dict(size=10),
        hovertemplate="S[key %{y}, value %{x}] = %{z:.3f}: how strongly key %{y} points to value %{x}<extra></extra>",
        name="state",
    )
    data = [heat, *(_held_lines(held, layout, ticks, T) if held else [])]
    frames = []
    for j, t in enumerate(keep):
        trace = dict(type="heatmap", z=states[t], zmin=zmin, zmax=zmax)
        if texts is not None:
            trace["text"] = texts[j]
        frame_layout = dict(annotations=[*titles, _sentence(sentences[t])])
        if held:
            frame_layout["shapes"] = [step_marker_shape(int(t))]
        frames.append(dict(name=str(t), data=[trace], traces=[0], layout=frame_layout))
    layout["annotations"] = [*titles, _sentence(sentences[keep[first]])]
    if held:
        layout["shapes"] = [step_marker_shape(int(keep[first]))]
    upright = ticks["ticktext"] if held else ()
    return _animated(data, layout, frames, keep, first, title=title, height=height, upright=upright)


def _check_story(states, row_labels, column_labels, step_labels, sentences, held) -> None:
    """story_memory's inputs agree in size: states [T, K, V], K row labels, V column labels, T steps and sentences, a
    [T] curve per query."""
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
    for name, curve in held.items():
        if np.shape(curve) != (T,):
            raise ValueError(f"held[{name!r}] must be [T = {T}], got shape {np.shape(curve)}")


def _held_lines(held: Mapping[str, np.ndarray], layout: dict, ticks: dict, T: int) -> list[dict]:
    """story_memory's right panel: its axes set in ``layout``, and one line per query of the share it holds."""
    out = []
    layout["xaxis2"].update(
        title=dict(text="step (token)"),
        **ticks,
        range=[-0.5, T - 0.5],
        tickangle=STEP_LABEL_ANGLE,
    )
    # the panel's title names the quantity; ticks in percent keep the gap to the heatmap's colour bar clear
    layout["yaxis2"].update(range=[-0.25, 1.25], tickvals=[0, 0.5, 1], tickformat=".0%")
    # answers that read back alike would hide one another: drawn a little apart, each naming the others
    drawn, notes = spread_coinciding(held, offset=HELD_SPREAD)

    # a direct label at the end of lines that stand for one another names them all (keys), outside the band they are
    # drawn in: above its highest line, or below its lowest where another label sits just above (a label on a line
    # inside the band is struck through by the others). A line alone has its legend entry and no label: labels of
    # nearby lines would run into each other.
    ends = {name: _line_end(y) for name, y in drawn.items()}

    def end(name: str) -> float:  # where a line is drawn to end (a line with no finite value sorts at 0)
        return ends[name] or 0.0

    end_label, end_below = {}, set()
    groups = [g for g in coinciding_groups(held) if len(g) > 1]
    below = _labels_below({top: ends[top] for top in (max(g, key=end) for g in groups)})  # labelled above, for now
    for g in groups:
        top, bottom = max(g, key=end), min(g, key=end)
        end_label[bottom if top in below else top] = ", ".join(n.split(" →")[0] for n in g)
        if top in below:
            end_below.add(bottom)
    for i, (name, curve) in enumerate(held.items()):
        line, marker = series_line(i)
        finite = np.isfinite(curve)
        last = int(np.flatnonzero(finite)[-1]) if finite.any() else -1
        text = [end_label[name] if t == last and name in end_label else "" for t in range(T)]
        out.append(
            dict(
                type="scatter",
                mode="lines+markers+text",
                text=text,
                # inside the panel, above the line's end (below it where another label sits just above): no
                # margin to run off, and two labels of lines that end close together do not overprint
                textposition="bottom left" if name in end_below else "top left",
                cliponaxis=False,
                x=list(range(T)),
                y=[float(d) if ok else None for d, ok in zip(drawn[name], finite, strict=True)],
                customdata=[float(c) if ok else None for c, ok in zip(curve, finite, strict=True)],
                name=name,
                line=line,
                marker=marker | dict(size=6),
                xaxis="x2",
                yaxis="y2",
                hovertemplate=f"{name}<br>after step %{{x}}: %{{customdata:.0%}} read back"
                + (f"<br>({notes[name]})" if notes[name] else "")
                + "<extra></extra>",
            )
        )
    return out


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
    colours: Mapping[str, str] | None = None,
) -> go.Figure:
    """Softmax attention generating the story: head 0's attention rows so far (left) and a cost per step (right:
    rows projected, bytes cached…, with the step marker), one frame per token, with the step's sentence.

    Args:
        attn: [T, T] attention weights (row t: query t over keys ≤ t).
        step_labels: the token of each step. sentences: one per step.
        series: name -> [T] values per step, drawn as lines on the right. series_title, y_title: its panel's title
            and y axis. colours: series name -> colour, for a series that is a kind of memory
            (``palette.MEMORY_COLOURS``); the others are neutral series.
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
    ticks = step_ticks(step_labels)
    shown = np.where(np.tril(np.ones((T, T))) > 0, attn, np.nan)

    def upto(t: int) -> np.ndarray:
        z = shown.copy()
        z[t + 1 :] = np.nan
        return z

    layout = subplot_grid(["Head 0's attention, query row by row", series_title], spacing=PANEL_SPACING)
    titles = layout.pop("annotations", [])
    axis = dict(**ticks, tickangle=STEP_LABEL_ANGLE)
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
        line, marker = series_line(i)
        if colours and name in colours:  # a series that is a kind of memory wears its kind's colour (grows / fixed)
            line, marker = line | dict(color=colours[name], dash="solid"), marker | dict(color=colours[name])
        data.append(
            dict(
                type="scatter",
                mode="lines+markers",
                x=list(range(T)),
                y=r.tolist(),
                name=name,
                line=line,
                marker=marker,
                xaxis="x2",
                yaxis="y2",
            )
        )
    frames = [
        dict(
            name=str(t),
            data=[dict(type="heatmap", z=upto(int(t)))],
            traces=[0],
            layout=dict(annotations=[*titles, _sentence(sentences[t])], shapes=[step_marker_shape(int(t))]),
        )
        for t in keep
    ]
    layout["annotations"] = [*titles, _sentence(sentences[keep[first]])]
    layout["shapes"] = [step_marker_shape(int(keep[first]))]
    return _animated(data, layout, frames, keep, first, title=title, height=height, upright=ticks["ticktext"])


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
                line=series_line(i)[0],
                marker=series_line(i)[1],
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
    for kind in measured:
        colour = mechanism_line(kind.split()[0].lower())[0]["color"]  # "MLA layer" -> MLA's colour
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
