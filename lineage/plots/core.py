"""Shared figure machinery: client-side animations with Play/Pause and a step slider, one look for every page.

Every animated figure here follows the same rules, so a projector shows them smoothly and honestly:

* frames live in the figure (``go.Frame``), so playing them needs no round trip to the server;
* at most ``MAX_FRAMES`` frames by default (long runs are subsampled evenly, always keeping the last step);
* one colour range per panel, fixed across all frames, so a colour means the same value at every step;
* signed matrices use a diverging scale centred on zero, unsigned ones a sequential scale; both are
  colour-blind-safe (ColorBrewer RdBu, viridis), and a colour bar is always shown;
* small matrices also print their values in the cells, so nothing is conveyed by colour alone;
* cells left empty (NaN: a causal mask's future, steps not reached) show the plot's background, ``palette.MASKED``,
  a colour neither scale takes, and have no hover; a cell's hover names the quantity (``Panel.hover``).

Functions take numpy arrays and return ``plotly.graph_objects.Figure``; nothing here imports streamlit.

Figures are assembled as plain dicts and wrapped once by :func:`figure`, which skips Plotly's property validation:
a page redraws its figures on every control change, and validating them (a hundred heatmaps in one animation, the
template in every figure) cost more than the rest of the page. ``tests/test_plots_valid.py`` validates every
builder's output in full instead.
"""

from __future__ import annotations

import copy
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from lineage.plots import present
from lineage.plots.palette import MASKED

# The plot area's width at 1280×800 with the sidebar open: panel titles and legend entries are wrapped to fit there.
LAPTOP_PLOT_PX = 700
MAX_FRAMES = 64  # smooth on a projector, small enough to ship to the browser at once
TEXT_MAX_CELLS = 144  # print values in the cells of matrices up to 144 cells (12×12, 9×16, …)
TEXT_MAX_SIDE = 16  # … with no side longer than 16, so a 1×32 strip is not crammed with numbers
DIVERGING = "RdBu_r"  # ColorBrewer RdBu, colour-blind-safe; reversed so positive is red; greyscale keeps |value|
SEQUENTIAL = "Viridis"  # perceptually uniform, colour-blind-safe, lightness rising with the value
# Per frame while playing. Every frame is a full redraw (``redraw=True``: plotly.js can tween lines, not a heatmap's
# image, so a frame without it would move the marker and leave the matrix behind; transition 0 ms for the same reason).
# A redraw of a two-panel story frame took 250–450 ms on a loaded 2-core machine and ~1.4 s with the CPU throttled 4×
# (tests/e2e/test_player.py); frames timed closer than a redraw queue back to back, and the browser then neither
# paints between them nor answers Pause. 500 ms leaves a projector laptop room for both: 32 steps play in 16 s.
FRAME_MS = 500
# Near-black rather than the template's slate (#2a3f5f): chart text keeps its contrast on a washed-out screen too.
FONT = dict(family="Inter, system-ui, sans-serif", size=14, color="#1a1a1a")
CONTROLS_PX = 52  # Play/Pause and the step slider start this far below the plot area: past the x ticks and title
PANEL_GAP = 0.18  # paper fraction between panels: a colour bar and the next panel's axis labels, at 1280×800 too
SUBPLOT_TITLE_FONT = dict(size=16)  # make_subplots' size for panel titles
# A legend under the x-axis title, clear of the chart's title at any font size (a legend above the plot area runs into
# a left-aligned title once presenter mode enlarges both); the bottom margin that makes room for it.
# Pinned to the figure's foot (the container), not at a fraction of the plot's height below it: on a short plot (a
# laptop) a paper fraction put the legend on the x axis's title.
LEGEND_BELOW = dict(orientation="h", x=0.0, xanchor="left", y=0.0, yanchor="bottom", yref="container")
LEGEND_BELOW_MARGIN = 130
# Hover templates of the matrices every stage draws: the quantity in symbols, then in words.
STATE_HOVER = "S[k=%{y}, v=%{x}] = %{z:.3f}: what key channel %{y} holds for value column %{x}"
ATTENTION_HOVER = "A[t=%{y}, s=%{x}] = %{z:.3f}: how much of position %{x} query %{y} reads"

# What Plotly stores for template="plotly_white" and for the named colour scales: the figures carry them spelled
# out, as validation would have, since plotly.js knows neither the template's name nor Plotly.py's "_r" scales.
TEMPLATE = pio.templates["plotly_white"].to_plotly_json()
COLORSCALES = {
    name: [list(stop) for stop in go.Heatmap(colorscale=name).colorscale] for name in (DIVERGING, SEQUENTIAL)
}


@dataclass(frozen=True)
class Panel:
    """One heatmap panel of an animation: ``frames[f]`` is the matrix shown at frame f."""

    title: str
    frames: np.ndarray  # [F, rows, cols]
    x_title: str = ""
    y_title: str = ""
    signed: bool | None = None  # None: signed if any value is negative
    zrange: tuple[float, float] | None = None  # override the fixed colour range
    x_labels: Sequence | None = None
    y_labels: Sequence | None = None
    width: float = 1.0  # share of the figure's width relative to the other panels (a gate column can be narrow)
    # What a cell means, as a Plotly hover template over %{x}, %{y} and %{z} (the quantity in words and symbols, e.g.
    # "S[k=%{y}, v=%{x}] = %{z:.3f}: what key channel %{y} holds for value column %{x}"); default: from the titles.
    hover: str = ""

    def hover_text(self) -> str:
        if self.hover:
            return self.hover
        where = f"{self.y_title or 'row'} %{{y}}, {self.x_title or 'column'} %{{x}}"
        return f"{self.title}<br>{where}: %{{z:.4g}}"


def _compact(value):
    """``value`` without the None entries of its dicts, at any depth: unset, as validation would have left them."""
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple) and any(isinstance(v, dict | list | tuple) for v in value):
        return [_compact(v) for v in value]
    return value


def checked_array(name: str, x, ndim: int) -> np.ndarray:
    """``x`` as a float64 array of ``ndim`` dimensions with at least one element; a ValueError naming ``name`` else."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != ndim or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-D array, got shape {arr.shape}")
    return arr


def figure(data: Sequence[dict] = (), layout: dict | None = None, frames: Sequence[dict] = ()) -> go.Figure:
    """A ``go.Figure`` of traces and layout given as plain dicts, taken as they are.

    ``_validate=False`` is Plotly's flag for trusted input (its templates are loaded that way): the dicts are stored
    without checking each property, and objects read back through the go.Figure API are built when read. Entries
    that are None are dropped, as validation would. Frames are always validated by Plotly, so builders keep them
    to what changes between frames and what a reader of a frame needs (values, colour range, scale, cell text).
    While a projection is active (presenter mode, :mod:`lineage.plots.present`), the dicts are projected first, the
    frames' texts included.
    """
    data, layout, frames = [_compact(trace) for trace in data], _compact(layout or {}), list(frames)
    p = present.active()
    if p is not None:  # presenter mode: projector sizes, applied to the dicts before they become a figure
        present.project(data, layout, p)
        present.project_frames(frames, data, p)  # and to what each frame shows while it plays
    else:
        _ink(data, layout)
        present.wrap_legend(data, FONT["size"], LAPTOP_PLOT_PX)
    return go.Figure(data=data, layout=layout, frames=frames, _validate=False)


def _ink(data: list[dict], layout: dict) -> None:
    """Axis ticks and titles, the legend and colour-bar ticks in the house's near-black, where a builder set no colour.

    Streamlit's chart theme draws a figure's axes in its faded grey, which wins over the figure's font colour: chart
    text set in it was light and thin on a laptop, and faint on a projector. A colour set on the text itself wins."""
    ink = FONT["color"]
    for trace in data:  # the axes a trace draws on, named in the layout or not
        if trace.get("type", "scatter") in ("scatter", "bar", "heatmap", "histogram", "box"):
            for ref in (trace.get("xaxis", "x"), trace.get("yaxis", "y")):
                layout.setdefault(f"{ref[0]}axis{ref[1:]}", {})
    for name, axis in list(layout.items()):
        if name[1:5] == "axis" and name[0] in "xy" and isinstance(axis, dict):
            axis = layout[name] = dict(axis)
            axis["tickfont"] = {"color": ink, **(axis.get("tickfont") or {})}
            if isinstance(axis.get("title"), dict):
                axis["title"] = {**axis["title"], "font": {"color": ink, **(axis["title"].get("font") or {})}}
    if layout.get("showlegend", True):
        layout["legend"] = {
            **(layout.get("legend") or {}),
            "font": {"color": ink, **((layout.get("legend") or {}).get("font") or {})},
        }
    for trace in data:
        if trace.get("type") == "heatmap" and trace.get("showscale", True):
            bar = trace["colorbar"] = dict(trace.get("colorbar") or {})
            bar["tickfont"] = {"color": ink, **(bar.get("tickfont") or {})}


def house_layout(*, title: str = "", height: int | None = None) -> dict:
    """The house look as layout entries: readable font, white background, room for the animation controls below."""
    return dict(
        title=dict(text=title, x=0.0, xanchor="left") if title else None,
        font=FONT,
        template=TEMPLATE,
        margin=dict(l=60, r=40, t=70 if title else 40, b=90),
        height=height,
    )


def style(fig: go.Figure, *, title: str = "", height: int | None = None) -> go.Figure:
    """Give any figure the house look (see :func:`house_layout`); the builders here put it in at construction."""
    look = house_layout(title=title, height=height)
    # assigned, not merged into the template the figure had; a copy, as a figure may be changed in place later
    fig.layout.template = copy.deepcopy(look.pop("template"))
    return fig.update_layout(**look)


def _suffix(i: int) -> str:
    """Plotly's numbering of the axes of panel ``i`` (0-based): "" for the first, then "2", "3", …"""
    return str(i + 1) if i else ""


def axis_refs(i: int) -> dict:
    """The axes of panel ``i`` (0-based) of a one-row grid, as trace entries: ``xaxis="x2", yaxis="y2"`` for i = 1."""
    return dict(xaxis=f"x{_suffix(i)}", yaxis=f"y{_suffix(i)}")


def subplot_grid(titles: Sequence[str], *, widths: Sequence[float] | None = None, spacing: float = 0.0) -> dict:
    """Layout entries of one row of panels, placed as ``plotly.subplots.make_subplots(rows=1, cols=n, …)`` places
    them: an x and a y axis per panel (``xaxis``, ``yaxis``, ``xaxis2``, …) and each title centred above its panel.

    Args:
        titles: one per panel ("" for none).
        widths: relative widths of the panels (default equal).
        spacing: paper fraction between neighbouring panels.
    """
    n = len(titles)
    free = 1.0 - spacing * (n - 1)
    if widths is None:
        sizes = [free / n] * n
    else:
        total = float(sum(widths))
        sizes = [free * (w / total) for w in widths]
    layout: dict = {}
    annotations = []
    for i, title in enumerate(titles):
        x0 = sum(sizes[:i]) + i * spacing
        domain = [x0, x0 + sizes[i]]
        layout[f"xaxis{_suffix(i)}"] = dict(anchor=f"y{_suffix(i)}", domain=domain)
        layout[f"yaxis{_suffix(i)}"] = dict(anchor=f"x{_suffix(i)}", domain=[0.0, 1.0])
        if title:
            annotations.append(
                dict(
                    font=SUBPLOT_TITLE_FONT,
                    showarrow=False,
                    text=title,
                    x=sum(domain) / 2.0,
                    xanchor="center",
                    xref="paper",
                    y=1.0,
                    yanchor="bottom",
                    yref="paper",
                )
            )
    layout["annotations"] = annotations
    return layout


def frame_indices(n_steps: int, max_frames: int = MAX_FRAMES) -> np.ndarray:
    """Which steps become frames: all of them up to ``max_frames``, else an even subsample ending at the last."""
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    if max_frames < 1:
        raise ValueError(f"max_frames must be >= 1, got {max_frames}")
    if n_steps <= max_frames:
        return np.arange(n_steps)
    if max_frames == 1:
        return np.array([n_steps - 1])
    return np.unique(np.round(np.linspace(0, n_steps - 1, max_frames)).astype(int))


def color_range(frames: np.ndarray, signed: bool | None = None) -> tuple[float, float, bool]:
    """The fixed colour range over all frames: symmetric around 0 when signed. Returns (zmin, zmax, signed)."""
    finite = frames[np.isfinite(frames)]
    if finite.size == 0:
        return 0.0, 1.0, bool(signed)
    is_signed = bool(finite.min() < 0) if signed is None else signed
    if is_signed:
        m = float(np.abs(finite).max()) or 1.0
        return -m, m, True
    lo, hi = float(finite.min()), float(finite.max())
    return lo, (hi if hi > lo else lo + 1.0), False


def cell_text(z: np.ndarray) -> np.ndarray | None:
    """Values to print in the cells of a small matrix ``z`` [..., rows, cols] (2 decimals; blank where not finite),
    or None if the matrix is too big. A stack of matrices is formatted in one call."""
    rows, cols = z.shape[-2:]
    if rows * cols > TEXT_MAX_CELLS or max(rows, cols) > TEXT_MAX_SIDE:
        return None
    text = np.char.mod("%.2f", z)
    text[~np.isfinite(z)] = ""
    return text


def _heatmap(panel: Panel, z: np.ndarray, text, zmin: float, zmax: float, signed: bool, colorbar_x: float, i: int):
    """The full trace of a panel: what the figure opens on, and what every frame's values are merged into."""
    return dict(
        type="heatmap",
        z=z,
        x=list(panel.x_labels) if panel.x_labels is not None else None,
        y=list(panel.y_labels) if panel.y_labels is not None else None,
        zmin=zmin,
        zmax=zmax,
        zmid=0.0 if signed else None,
        colorscale=COLORSCALES[DIVERGING if signed else SEQUENTIAL],
        colorbar=dict(x=colorbar_x, len=0.85, thickness=12),
        showscale=True,
        text=text,
        texttemplate="%{text}" if text is not None else None,
        textfont=dict(size=10),
        hovertemplate=f"{panel.hover_text()}<extra></extra>",
        hoverongaps=False,  # an empty (masked) cell has no value to show
        name=panel.title,
        **axis_refs(i),
    )


def play_controls(labels: Sequence[str], *, start: int = 0, prefix: str = "step ") -> dict:
    """Play/Pause buttons and a slider over named frames, as layout entries (``updatemenus``, ``sliders``)."""
    play = dict(
        label="▶ Play",
        method="animate",
        args=[None, dict(frame=dict(duration=FRAME_MS, redraw=True), transition=dict(duration=0), fromcurrent=True)],
    )
    pause = dict(
        label="❚❚ Pause",
        method="animate",
        args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate", transition=dict(duration=0))],
    )
    steps = [
        dict(
            label=str(lab),
            method="animate",
            args=[[str(lab)], dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))],
        )
        for lab in labels
    ]
    # Both hang a fixed number of pixels below the plot area (y = 0 plus a padding in px), so they clear the x-axis
    # ticks and title at any figure height; the "step …" readout sits at the slider's right end, clear of the buttons.
    # The slider prints no numbers of its own (its labels are drawn transparent): its evenly spaced steps cannot line
    # up with a panel's time axis, and a second row of numbers under the axis would read as a second time axis. The
    # readout names the step, the axis places it.
    return dict(
        updatemenus=[
            dict(
                type="buttons",
                direction="left",
                buttons=[play, pause],
                x=0.0,
                y=0.0,
                xanchor="left",
                yanchor="top",
                pad=dict(t=CONTROLS_PX + 10, r=10),
                showactive=False,
            )
        ],
        sliders=[
            dict(
                active=start,
                steps=steps,
                x=0.16,
                len=0.84,
                y=0.0,
                yanchor="top",
                pad=dict(t=CONTROLS_PX),
                currentvalue=dict(prefix=prefix, visible=True, xanchor="right"),
                font=dict(color="rgba(0,0,0,0)"),
            )
        ],
    )


def _panel_layout(panels: Sequence[Panel]) -> tuple[dict, list[float]]:
    """The grid of panels with their axis titles (rows read top-down), and the x of each panel's colour bar."""
    n = len(panels)
    if any(not p.width > 0 for p in panels):
        raise ValueError(f"panel widths must be > 0, got {[p.width for p in panels]}")
    layout = subplot_grid(
        [p.title for p in panels], widths=[p.width for p in panels], spacing=PANEL_GAP if n > 1 else 0
    )
    # Titles wider than their panel at the laptop's width would run into each other: wrapped to it, line by line.
    projection = present.active()
    title_px = max(SUBPLOT_TITLE_FONT["size"], projection.text if projection else 0)
    domains = [a["domain"] for k, a in layout.items() if k.startswith("xaxis")]
    for note in layout["annotations"]:
        dom = next(d for d in domains if d[0] <= note["x"] <= d[1])
        chars = max(12, int((dom[1] - dom[0]) * LAPTOP_PLOT_PX / (0.55 * title_px)))
        note["text"] = "<br>".join(textwrap.wrap(note["text"], chars)) if len(note["text"]) > chars else note["text"]
    for i, p in enumerate(panels):
        layout[f"xaxis{_suffix(i)}"]["title"] = dict(text=p.x_title)
        layout[f"yaxis{_suffix(i)}"].update(title=dict(text=p.y_title), autorange="reversed")
    # each colour bar stands in the gap just right of its own panel
    bar_x = [layout[f"xaxis{_suffix(i)}"]["domain"][1] + 0.005 for i in range(n)]
    return layout, bar_x


def _title_room(layout: dict) -> None:
    """Room above the panels for their titles' extra lines (wrapped by :func:`_panel_layout`)."""
    extra = max((n["text"].count("<br>") for n in layout.get("annotations") or ()), default=0)
    if extra:
        projection = present.active()
        px = max(SUBPLOT_TITLE_FONT["size"], projection.text if projection else 0)
        layout["margin"]["t"] += int(extra * present.LINE_EM * px)
        if layout.get("height"):
            layout["height"] += int(extra * present.LINE_EM * px)
        if layout.get("title"):  # at the figure's top, clear of the taller panel titles under it
            layout["title"] = present.hung_title(layout["title"])


def _ranges(panels: Sequence[Panel]) -> list[tuple[float, float, bool]]:
    return [
        p.zrange + (color_range(p.frames, p.signed)[2],) if p.zrange else color_range(p.frames, p.signed)
        for p in panels
    ]


def animated_heatmaps(
    panels: Sequence[Panel],
    *,
    title: str = "",
    step_labels: Sequence | None = None,
    start: int | None = None,
    max_frames: int = MAX_FRAMES,
    height: int = 420,
    slider_prefix: str = "step ",
) -> go.Figure:
    """Side-by-side heatmaps animated together over steps.

    Args:
        panels: each with ``frames [F, rows, cols]``; all panels share F (the number of steps).
        step_labels: a label per step (default 0 … F−1), shown on the slider.
        start: the step shown first (default the last); rounded to the nearest kept frame.
        max_frames: cap on frames sent to the browser (steps are subsampled evenly beyond it).
        slider_prefix: what the slider's readout says before the label ("step 3", "tile Q1·K0").
    """
    if not panels:
        raise ValueError("panels must contain at least one Panel")
    F = panels[0].frames.shape[0]
    for p in panels:
        if p.frames.ndim != 3 or p.frames.shape[0] != F:
            raise ValueError(f"panel {p.title!r}: frames must be [F={F}, rows, cols], got {p.frames.shape}")
    labels = [str(lab) for lab in (step_labels if step_labels is not None else range(F))]
    keep = frame_indices(F, max_frames)
    first = int(np.abs(keep - (F - 1 if start is None else start)).argmin())
    layout, bar_x = _panel_layout(panels)
    ranges = _ranges(panels)
    shown = [p.frames[keep] for p in panels]  # [len(keep), rows, cols] per panel
    texts = [cell_text(z) for z in shown]
    data = [
        _heatmap(p, z[first], None if t is None else t[first], *r, colorbar_x=x, i=i)
        for i, (p, z, t, r, x) in enumerate(zip(panels, shown, texts, ranges, bar_x, strict=True))
    ]
    # A frame's traces are merged into the figure's by plotly.js, so titles, labels, colour bars and hover text
    # stay as the traces above set them; each frame carries its values and what a reader of it needs besides.
    frames = []
    for j, f in enumerate(keep):
        traces = []
        for z, t, (zmin, zmax, signed) in zip(shown, texts, ranges, strict=True):
            # The scale goes in by name: Plotly validates every frame, and expands a name faster than it checks a list.
            trace = dict(type="heatmap", z=z[j], zmin=zmin, zmax=zmax, showscale=True)
            trace["colorscale"] = DIVERGING if signed else SEQUENTIAL
            if signed:
                trace["zmid"] = 0.0
            if t is not None:
                trace["text"] = t[j]
            traces.append(trace)
        frames.append(dict(data=traces, name=labels[f], traces=list(range(len(panels)))))
    layout.update(play_controls([labels[f] for f in keep], start=first, prefix=slider_prefix))
    layout.update(house_layout(title=title, height=height), plot_bgcolor=MASKED)  # empty cells: masked, not zero
    layout["margin"].update(b=CONTROLS_PX + 100, pad=0)  # room for the controls; no masked rim around the matrix
    _title_room(layout)
    return figure(data, layout, frames)


def heatmaps(panels: Sequence[Panel], *, title: str = "", height: int = 420) -> go.Figure:
    """Side-by-side still heatmaps, drawn by the same rules as the animations (each panel holds one frame)."""
    if not panels:
        raise ValueError("panels must contain at least one Panel")
    for p in panels:
        if p.frames.ndim != 3 or p.frames.shape[0] != 1:
            raise ValueError(f"panel {p.title!r}: a still heatmap needs frames [1, rows, cols], got {p.frames.shape}")
    layout, bar_x = _panel_layout(panels)
    data = [
        _heatmap(p, p.frames[0], cell_text(p.frames[0]), *r, colorbar_x=x, i=i)
        for i, (p, r, x) in enumerate(zip(panels, _ranges(panels), bar_x, strict=True))
    ]
    layout.update(house_layout(title=title, height=height), plot_bgcolor=MASKED)  # empty cells: masked, not zero
    layout["margin"].update(b=60, pad=0)  # pad 0: Streamlit's theme would leave a rim of the masked colour
    _title_room(layout)
    return figure(data, layout)


def step_marker(fig: go.Figure, step: int, *, axis: str = "x", band: bool = False) -> go.Figure:
    """Mark where the Step control stands, in every subplot that holds a trace.

    A dashed line at ``step`` on ``axis`` ("x" or "y"); with ``band``, an outline around that column (x) or row (y)
    of a heatmap instead, so the values in its cells stay readable.
    """
    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    line = dict(dash="dash", color="#222", width=2)
    lo, hi = (step - 0.5, step + 0.5) if band else (step, step)
    kind = dict(type="rect", fillcolor="rgba(0,0,0,0)") if band else dict(type="line")
    subplots = dict.fromkeys((t.xaxis or "x", t.yaxis or "y") for t in fig.data) or {("x", "y"): None}
    shapes = []
    for xref, yref in subplots:
        if axis == "x":
            at = dict(x0=lo, x1=hi, xref=xref, y0=0, y1=1, yref=f"{yref} domain")
        else:
            at = dict(x0=0, x1=1, xref=f"{xref} domain", y0=lo, y1=hi, yref=yref)
        shapes.append(dict(kind, line=line, **at))
    fig.layout.shapes = [*fig.layout.shapes, *shapes]
    return fig


def animation_steps(n_steps: int, start: int | None) -> tuple[np.ndarray, int | None]:
    """The steps that become frames (at most ``MAX_FRAMES``, always the last) and ``start`` as an index into them.

    Building only the kept frames keeps a long run's animation as light as a short one's.
    """
    keep = frame_indices(n_steps)
    return keep, None if start is None else int(np.abs(keep - start).argmin())
