"""A figure made readable from the back of a room: every text at least ``tick`` px, lines at least 3 px.

:func:`project` reaches every place a Plotly figure draws text — the title, axis ticks and titles of every subplot,
the legend and its title, annotations (subplot titles included), colour bars, hover labels, the animation's buttons
and slider, bar labels and the numbers printed inside heatmap cells; :func:`project_frames` the same texts in every
animation frame, which carries texts of its own (a step's sentence, the panel titles, cell numbers) that replace the
first frame's while it plays. Cell numbers are dropped rather than shrunk where a cell gets too small to hold them at
that size: the hover still gives every value. Room is made where bigger text needs it (labels under an axis, a legend
above or below the plot, a title too long for one line, which Plotly clips and never wraps), and the figure grows by
that room, so the plot area keeps its size.

It works on the plain dicts the builders assemble, before they become a ``go.Figure`` (going through the figure's
property API cost ~70 ms an animation, too much for a page that redraws on every control change): while a
projection is active (:func:`projecting`, or :func:`set_projection` for a whole script run — the app sets it when
presenter mode is on), every builder of :mod:`lineage.plots` returns projected figures. :func:`for_projection` gives a
projected copy of any other figure.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go


@dataclass(frozen=True)
class Projection:
    """Sizes in px for a projected figure, and the narrowest plot width it must work at."""

    text: int = 20  # legend, axis titles, annotations, hover labels, button and slider labels
    tick: int = 18  # tick labels, colour-bar ticks, cell numbers, bar labels: the smallest text drawn
    title: int = 32
    min_line: float = 3.0  # the thinnest data line
    min_height: int = 560
    height_scale: float = 1.3
    # The chart's width when projected at 1280×720 (the smaller of the two screens presenter mode is made for): the
    # main column of a wide-layout page, less its padding. Cell text is kept only where it fits at this width.
    width_px: int = 1120


PROJECTION = Projection()
INK = "#000000"  # black, not a theme's grey: a projector washes light greys out
GLYPH_EM = 0.62  # width of a digit or a minus sign, in ems of the font (Inter, system-ui)
LINE_EM = 1.25  # height a line of text needs, in ems
# average width of a title's characters, in ems: measured 0.46 on a projected title in Chromium (76 characters across
# 1,116 px at 32 px), rounded up so that a line wrapped to it fits
TITLE_EM = 0.5
TITLE_LINE_EM = 1.3  # the distance plotly.js puts between a title's lines (measured: 42 px apart at 32 px)
# plotly.js draws a title of several lines anchored at its top (yanchor "top") this much higher than one of one line,
# cutting the first line off at the figure's edge (measured 22 px at 32 px in Chromium, plotly 6 and 7); a wrapped
# title's pad makes up for it. tests/e2e/test_presenter.py checks that plotly.js still does this, and that no title on
# any page leaves its chart.
MULTILINE_TITLE_RISE_EM = 0.7
CELL_PAD_PX = 4
CONTROLS_BELOW_PX = 110  # the Play buttons and the step slider, under the labels

_ACTIVE: ContextVar[Projection | None] = ContextVar("lineage_projection", default=None)


def active() -> Projection | None:
    """The projection the builders apply now (None: draw for a screen)."""
    return _ACTIVE.get()


def set_projection(p: Projection | None) -> None:
    """Project (or, with None, stop projecting) every figure built from here on in this thread: the app calls it at
    the start of each script run."""
    _ACTIVE.set(p)


@contextmanager
def projecting(p: Projection = PROJECTION) -> Iterator[Projection]:
    """Within the block, the builders of :mod:`lineage.plots` return projected figures."""
    token = _ACTIVE.set(p)
    try:
        yield p
    finally:
        _ACTIVE.reset(token)


def _font(obj: dict, key: str, size: float, *, ink: bool = False) -> None:
    """``obj[key]`` (a font dict, made if missing) with its size raised to at least ``size``."""
    font = dict(obj.get(key) or {})
    font["size"] = max(size, font.get("size") or 0)
    if ink:
        font["color"] = INK
    obj[key] = font


def _copied(layout: dict, key: str) -> list[dict]:
    """``layout[key]`` (a list of dicts: annotations, sliders, …) as copies that can be changed; [] if none."""
    if not layout.get(key):
        return []
    layout[key] = [dict(item) for item in layout[key]]
    return layout[key]


def _axis_name(ref: str) -> str:
    """A trace's axis reference as the layout key of that axis: "x" -> "xaxis", "y2" -> "yaxis2"."""
    return f"{ref[0]}axis{ref[1:]}"


def _domain(layout: dict, ref: str) -> tuple[float, float]:
    dom = (layout.get(_axis_name(ref)) or {}).get("domain")
    return (float(dom[0]), float(dom[1])) if dom is not None else (0.0, 1.0)


def _x_labels_px(data: list[dict], layout: dict, p: Projection) -> float:
    """How far below an x axis its tick labels reach at ``p.tick`` px: a line of text, or the longest label's length
    where the labels are words (categories, or ticktext) too many to sit side by side, as Plotly then stands them up."""
    longest = 0.0
    groups = [([x for x in t.get("x", ()) if isinstance(x, str)], t.get("xaxis", "x")) for t in data]
    groups += [([str(s) for s in ax.get("ticktext") or ()], name[1:].replace("axis", "")) for name, ax in _axes(layout)]
    for words, ref in groups:
        if not words or not ref.startswith("x"):
            continue
        x0, x1 = _domain(layout, ref)
        width = max(len(w) for w in words) * GLYPH_EM * p.tick
        if width * len(words) > (x1 - x0) * p.width_px:
            longest = max(longest, width)
    return max(longest, LINE_EM * p.tick)


def _axes(layout: dict) -> list[tuple[str, dict]]:
    return [(k, v) for k, v in layout.items() if k[1:5] == "axis" and k[0] in "xy" and isinstance(v, dict)]


def cell_text_fits(trace: dict, layout: dict, *, tick_px: float, width_px: int) -> bool:
    """Whether a heatmap trace's cell text, drawn at ``tick_px``, fits its cells in a figure ``width_px`` wide."""
    z = trace.get("z")
    shape = np.shape(z) if z is not None else ()
    if len(shape) != 2 or not all(shape):
        return False
    rows, cols = shape
    text = trace.get("text")
    chars = max((len(str(t)) for t in np.asarray(text, dtype=object).ravel()), default=0) if text is not None else 4
    m = layout.get("margin") or {}
    height = layout.get("height") or 450
    x0, x1 = _domain(layout, trace.get("xaxis", "x"))
    y0, y1 = _domain(layout, trace.get("yaxis", "y"))
    cell_w = (width_px - m.get("l", 80) - m.get("r", 80)) * (x1 - x0) / cols
    cell_h = (height - m.get("t", 100) - m.get("b", 80)) * (y1 - y0) / rows
    return cell_w >= chars * GLYPH_EM * tick_px + CELL_PAD_PX and cell_h >= LINE_EM * tick_px


def wrapped_text(text: str, size_px: float, width_px: float) -> str:
    """``text`` broken into lines (Plotly's ``<br>``) of at most as many characters as fit ``width_px`` at ``size_px``
    (:data:`TITLE_EM`): Plotly cuts a title or a legend entry off at the figure's edge. Text with markup of its own is
    left alone."""
    if not text or "<" in text:
        return text
    return "<br>".join(textwrap.wrap(text, max(20, int(width_px / (TITLE_EM * size_px))))) or text


def hung_title(title: dict, lines: int = 1, size_px: float = 0.0) -> dict:
    """``title`` hung from the figure's top, 8 px down; a title of several lines at ``size_px`` that much lower again
    as plotly.js raises it (:data:`MULTILINE_TITLE_RISE_EM`)."""
    rise = MULTILINE_TITLE_RISE_EM * size_px if lines > 1 else 0.0
    return {**title, "y": 1.0, "yref": "container", "yanchor": "top", "pad": {"t": 8 + rise}}


def _wrap_title(layout: dict, p: Projection) -> int:
    """The layout's title wrapped to the projected width (:func:`wrapped_text`); returns the lines it takes."""
    title = layout.get("title")
    if not isinstance(title, dict) or not isinstance(title.get("text"), str):
        return 1 if title else 0
    title["text"] = wrapped_text(title["text"], p.title, p.width_px)
    return title["text"].count("<br>") + 1


def bar_text_fits(trace: dict, data: list[dict], layout: dict, *, tick_px: float, width_px: int) -> bool:
    """Whether a bar trace's labels, drawn at ``tick_px``, fit its bars' width in a figure ``width_px`` wide (bars
    grouped side by side share their category's width; horizontal bars have the room of their length)."""
    x, text = trace.get("x"), trace.get("text")
    if trace.get("orientation") == "h" or x is None or text is None or not len(x):
        return True
    ref = trace.get("xaxis", "x")
    grouped = layout.get("barmode") == "group"
    side_by_side = sum(t.get("type") == "bar" and t.get("xaxis", "x") == ref for t in data) if grouped else 1
    m = layout.get("margin") or {}
    x0, x1 = _domain(layout, ref)
    bar_px = (width_px - m.get("l", 80) - m.get("r", 80)) * (x1 - x0) / len(x) * (1 - layout.get("bargap", 0.2))
    chars = max((len(str(t)) for t in np.asarray(text, dtype=object).ravel()), default=0)
    return bar_px / max(side_by_side, 1) >= chars * GLYPH_EM * tick_px + CELL_PAD_PX


def project(data: list[dict], layout: dict, p: Projection = PROJECTION) -> None:
    """Raise every text of a figure (its traces and layout as plain dicts, changed in place) to projector sizes —
    never lowering one —, thicken thin lines, give bigger text the room it needs and the figure that much height."""
    margin = layout["margin"] = dict(layout.get("margin") or {})
    margins = margin.get("t", 0) + margin.get("b", 0)
    _font(layout, "font", p.text, ink=True)
    if isinstance(layout.get("title"), dict):
        layout["title"] = dict(layout["title"])
        _font(layout["title"], "font", p.title, ink=True)
    title_lines = _wrap_title(layout, p)
    if title_lines > 1:  # hung from the figure's top, each further line pushing the plot down by its height
        layout["title"] = hung_title(layout["title"], title_lines, p.title)
        grown = margin.get("t", 0) + (title_lines - 1) * TITLE_LINE_EM * p.title
        margin["t"] = math.ceil(max(grown, title_lines * TITLE_LINE_EM * p.title + 24))
    legend = layout["legend"] = dict(layout.get("legend") or {})
    _font(legend, "font", p.text, ink=True)
    hover = layout["hoverlabel"] = dict(layout.get("hoverlabel") or {})
    _font(hover, "font", p.text)
    layout["height"] = max(int((layout.get("height") or 450) * p.height_scale), p.min_height)

    # every axis a trace uses, and every axis the layout names: black ticks ≥ tick px, titles ≥ text px
    for trace in data:
        for ref in (trace.get("xaxis", "x"), trace.get("yaxis", "y")):
            layout.setdefault(_axis_name(ref), {})
    for name, axis in _axes(layout):
        axis = layout[name] = dict(axis)
        _font(axis, "tickfont", p.tick, ink=True)
        title = axis.get("title")
        axis["title"] = dict(title) if isinstance(title, dict) else ({"text": title} if title else {})
        _font(axis["title"], "font", p.text, ink=True)
        # a log axis labels 2 and 5 between decades in smaller type (three quarters of the tick size): decades only
        if axis.get("type") == "log" and axis.get("tickvals") is None and axis.get("dtick") is None:
            axis["dtick"] = 1

    if legend.get("orientation") == "h" and (legend.get("y") or 0) >= 1:  # above the plot: room under the title
        margin["t"] = max(
            margin.get("t", 0), int(max(title_lines, 1) * TITLE_LINE_EM * p.title + 2 * LINE_EM * p.text + 16)
        )
        layout["title"] = hung_title(layout.get("title") or {}, title_lines, p.title)
    for note in _copied(layout, "annotations"):
        _font(note, "font", p.text)

    # The animation's controls hang a fixed distance below the plot; long x labels (which Plotly stands upright when
    # they crowd) and a bigger axis title need more of it, or the labels run into the slider.
    below = _x_labels_px(data, layout, p) + LINE_EM * p.text + 24
    sliders = _copied(layout, "sliders")
    for slider in sliders:
        _font(slider, "font", p.tick)
        slider["currentvalue"] = dict(slider.get("currentvalue") or {})
        _font(slider["currentvalue"], "font", p.text)
        slider["pad"] = {**(slider.get("pad") or {}), "t": max((slider.get("pad") or {}).get("t", 0), below)}
    for menu in _copied(layout, "updatemenus"):
        _font(menu, "font", p.text)
        if (menu.get("y") or 0) <= 0:  # hanging below the plot, under the labels (a menu above it stays there)
            menu["pad"] = {**(menu.get("pad") or {}), "t": max((menu.get("pad") or {}).get("t", 0), below + 10)}
    bottom = below + (CONTROLS_BELOW_PX if sliders else 0)
    legend_below = (
        legend.get("orientation") == "h"
        and legend.get("y") is not None
        and (legend["y"] < 0 or (legend.get("yref") == "container" and legend["y"] == 0))
    )
    if legend_below:  # to the figure's foot, under the labels and the controls, whatever their size
        bottom += 2 * LINE_EM * p.text + 10
        legend.update(yref="container", y=0.0, yanchor="bottom")
    if sliders or legend_below:
        margin["b"] = int(max(margin.get("b", 0), bottom))
    for shape in _copied(layout, "shapes"):
        line = shape.get("line") or {}
        if (line.get("width") or 0) > 0:
            shape["line"] = {**line, "width": max(line["width"], 2.0)}
    # what the margins grew by comes on top of the height, so the plot area keeps its size
    layout["height"] += max(0, margin.get("t", 0) + margin.get("b", 0) - margins)
    _project_traces(data, layout, p)


def wrap_legend(data: list[dict], size_px: float, width_px: float) -> None:
    """Every legend entry too long for one line at ``size_px`` in a legend ``width_px`` wide, wrapped
    (:func:`wrapped_text`): Plotly draws an entry on one line, past the chart's edge."""
    for trace in data:
        if isinstance(trace.get("name"), str) and trace.get("showlegend", True) is not False:
            trace["name"] = wrapped_text(trace["name"], size_px, width_px)


def _project_traces(data: list[dict], layout: dict, p: Projection) -> None:
    """:func:`project` on the traces: colour bars, cell and bar texts at projector sizes (a heatmap's cell text, or a
    bar's label, dropped where it no longer fits its cell or bar), legend entries too long for one line wrapped, lines
    thickened."""
    wrap_legend(data, p.text, p.width_px - 80)
    for trace in data:
        kind = trace.get("type", "scatter")
        marker = trace.get("marker") or {}
        if kind in ("heatmap", "contour", "histogram2d") or marker.get("showscale"):
            owner = trace if kind != "scatter" else trace.setdefault("marker", dict(marker))
            bar = owner["colorbar"] = dict(owner.get("colorbar") or {})
            _font(bar, "tickfont", p.tick, ink=True)
            bar["title"] = dict(bar.get("title") or {})
            _font(bar["title"], "font", p.text)
            bar["thickness"] = max(bar.get("thickness") or 0, 20)
        if kind in ("heatmap", "bar", "scatter", "table", "pie", "funnel") and (
            trace.get("text") is not None or trace.get("texttemplate")
        ):
            _font(trace, "textfont", p.tick)
        fits = kind != "heatmap" or cell_text_fits(trace, layout, tick_px=p.tick, width_px=p.width_px)
        if trace.get("texttemplate") and not fits:
            trace["texttemplate"] = ""
        if kind == "bar" and not bar_text_fits(trace, data, layout, tick_px=p.tick, width_px=p.width_px):
            trace["text"], trace["textposition"] = None, "none"  # labels run into each other: the hover keeps them
        if kind == "scatter" and "lines" in trace.get("mode", "lines"):
            line = trace["line"] = dict(trace.get("line") or {})
            line["width"] = max(p.min_line, (line.get("width") or 2.0) + 1.0)


def project_frames(frames: list[dict], data: list[dict], p: Projection = PROJECTION) -> None:
    """Raise the texts that animation frames (plain dicts, changed in place) carry to the sizes :func:`project` gave
    the figure: a frame's annotations and title replace the figure's while it plays, and a trace in a frame that sets
    its own fonts overrides the projected trace's. ``data``: the figure's projected traces, which a frame's cell text
    follows (dropped where the figure dropped it)."""
    for frame in frames:
        layout = frame.get("layout")
        if layout:
            layout = frame["layout"] = dict(layout)
            for note in _copied(layout, "annotations"):
                _font(note, "font", p.text)
            if isinstance(layout.get("title"), dict):
                layout["title"] = dict(layout["title"])
                _font(layout["title"], "font", p.title, ink=True)
                if (lines := _wrap_title(layout, p)) > 1:
                    layout["title"] = hung_title(layout["title"], lines, p.title)
        indices = frame.get("traces") or range(len(frame.get("data") or ()))
        frame["data"] = [dict(t) for t in frame.get("data") or ()]
        for trace, i in zip(frame["data"], indices, strict=False):
            shown = data[i] if i < len(data) else {}
            if "textfont" in trace:
                _font(trace, "textfont", p.tick)
            if "texttemplate" in trace and not shown.get("texttemplate"):
                trace["texttemplate"] = ""


def for_projection(fig: go.Figure, p: Projection = PROJECTION) -> go.Figure:
    """A projected copy of any figure (for a notebook, or a figure not built by :mod:`lineage.plots`)."""
    spec = fig.to_plotly_json()
    project(spec["data"], spec["layout"], p)
    frames = spec.get("frames") or []
    project_frames(frames, spec["data"], p)
    return go.Figure(data=spec["data"], layout=spec["layout"], frames=frames or None)
