"""A figure made readable from the back of a room: every text at least ``min_text`` px, lines at least 3 px.

One function, :func:`for_projection`, reaches every place a Plotly figure draws text — the title, axis ticks and
titles of every subplot, the legend and its title, annotations (subplot titles included), colour bars, hover labels,
the animation's buttons and slider, bar labels and the numbers printed inside heatmap cells. Cell numbers are dropped
rather than shrunk where a cell gets too small to hold them at that size: the hover still gives every value.

Pure (a ``go.Figure`` in, the same figure changed in place out); the app's chart helper calls it in presenter mode.
"""

from __future__ import annotations

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
INK = "#000000"
GLYPH_EM = 0.62  # width of a digit or a minus sign, in ems of the font (Inter, system-ui)
LINE_EM = 1.25  # height a line of cell text needs, in ems
CELL_PAD_PX = 4


def _bigger(font, size: int) -> dict:
    """``font`` (a Plotly font or None) with its size raised to at least ``size``."""
    current = getattr(font, "size", None) if font is not None else None
    return dict(size=max(size, current or 0))


def _domain(layout: go.Layout, axis: str, letter: str) -> tuple[float, float]:
    """The paper fraction an axis spans ("x2" -> layout.xaxis2.domain), [0, 1] where none is set."""
    name = f"{letter}axis{axis[1:]}"
    ax = layout[name] if name in layout else None  # noqa: SIM401 (a Layout has no .get)
    dom = getattr(ax, "domain", None) if ax is not None else None
    return (float(dom[0]), float(dom[1])) if dom else (0.0, 1.0)


def _decades_only(axis) -> None:
    if axis.type == "log" and axis.tickvals is None and axis.dtick is None:
        axis.dtick = 1


def _x_labels_px(fig: go.Figure, p: Projection) -> float:
    """How far below an x axis its tick labels reach at ``p.tick`` px: a line of text, or the longest label's length
    where the labels are words (categories, or ticktext) too many to sit side by side, as Plotly then stands them up."""
    longest = 0.0
    for trace in fig.data:
        xs = getattr(trace, "x", None)
        words = [str(x) for x in (xs if xs is not None else ()) if isinstance(x, str)]
        if not words:
            continue
        x0, x1 = _domain(fig.layout, trace.xaxis or "x", "x")
        width = max(len(w) for w in words) * GLYPH_EM * p.tick
        if width * len(words) > (x1 - x0) * p.width_px:
            longest = max(longest, width)
    for axis in (fig.layout[k] for k in fig.layout if k.startswith("xaxis")):
        if axis.ticktext:
            width = max(len(str(t)) for t in axis.ticktext) * GLYPH_EM * p.tick
            if width * len(axis.ticktext) > p.width_px * ((axis.domain or (0, 1))[1] - (axis.domain or (0, 1))[0]):
                longest = max(longest, width)
    return max(longest, LINE_EM * p.tick)


def cell_text_fits(fig: go.Figure, trace, *, tick_px: int, width_px: int) -> bool:
    """Whether a heatmap trace's cell text, drawn at ``tick_px``, fits its cells in a figure ``width_px`` wide."""
    z = np.asarray(trace.z if trace.z is not None else [[0]], dtype=object)
    if z.ndim != 2 or not z.size:
        return False
    rows, cols = z.shape
    text = np.asarray(trace.text if trace.text is not None else [["0.00"]], dtype=object)
    chars = max((len(str(t)) for t in text.ravel()), default=0)
    m = fig.layout.margin
    height = fig.layout.height or 450
    x0, x1 = _domain(fig.layout, trace.xaxis or "x", "x")
    y0, y1 = _domain(fig.layout, trace.yaxis or "y", "y")
    cell_w = (width_px - (m.l or 80) - (m.r or 80)) * (x1 - x0) / cols
    cell_h = (height - (m.t or 100) - (m.b or 80)) * (y1 - y0) / rows
    return cell_w >= chars * GLYPH_EM * tick_px + CELL_PAD_PX and cell_h >= LINE_EM * tick_px


def for_projection(fig: go.Figure, p: Projection = PROJECTION) -> go.Figure:
    """Raise every text of ``fig`` to projector sizes (never lower one), thicken thin lines, make it taller."""
    layout = fig.layout
    margins = (layout.margin.t or 0) + (layout.margin.b or 0)
    fig.update_layout(
        font=dict(size=max(p.text, (layout.font.size or 0)), color=INK),
        title_font={**_bigger(layout.title.font, p.title), "color": INK},
        legend=dict(
            font={**_bigger(layout.legend.font, p.text), "color": INK},
            title_font=_bigger(layout.legend.title.font, p.text),
        ),
        hoverlabel=dict(font=_bigger(layout.hoverlabel.font, p.text)),
        height=max(int((layout.height or 450) * p.height_scale), p.min_height),
    )
    # black, not a theme's grey: a projector washes light greys out
    axis_fonts = dict(tickfont=dict(size=p.tick, color=INK), title_font=dict(size=p.text, color=INK))
    fig.update_xaxes(**axis_fonts)
    fig.update_yaxes(**axis_fonts)
    # A log axis labels 2 and 5 between decades in smaller type (three quarters of the tick size): label decades only.
    fig.for_each_xaxis(_decades_only)
    fig.for_each_yaxis(_decades_only)
    legend = layout.legend
    if legend.orientation == "h" and (legend.y or 0) >= 1:  # a legend above the plot: room for it below the title
        above = int(LINE_EM * p.title + 2 * LINE_EM * p.text + 16)
        fig.update_layout(
            margin=dict(t=max(layout.margin.t or 0, above)),
            title=dict(y=1.0, yref="container", yanchor="top", pad=dict(t=8)),
        )
    for note in layout.annotations or ():
        note.font = _bigger(note.font, p.text)
    # The animation's controls hang a fixed distance below the plot; long x labels (which Plotly turns upright when
    # they crowd) and a bigger axis title need more of it, or the labels run into the slider.
    below = _x_labels_px(fig, p) + LINE_EM * p.text + 24
    for slider in layout.sliders or ():
        slider.font = _bigger(slider.font, p.tick)
        slider.currentvalue.font = _bigger(slider.currentvalue.font, p.text)
        slider.pad.t = max(slider.pad.t or 0, below)
    for menu in layout.updatemenus or ():
        menu.font = _bigger(menu.font, p.text)
        menu.pad.t = max(menu.pad.t or 0, below + 10)
    bottom = below + (110 if layout.sliders else 0)
    if legend.orientation == "h" and legend.y is not None and legend.y < 0:
        # A legend under the plot goes to the figure's foot, under the labels and the controls, whatever their size.
        bottom += 2 * LINE_EM * p.text + 10
        fig.update_layout(legend=dict(yref="container", y=0.0, yanchor="bottom"))
    if bottom > (layout.margin.b or 0) and (layout.sliders or legend.y is not None and legend.y < 0):
        fig.update_layout(margin=dict(b=int(bottom)))
    for shape in layout.shapes or ():
        if shape.line is not None and (shape.line.width or 0) > 0:
            shape.line.width = max(shape.line.width, 2.0)
    # what the margins grew by comes on top of the height, so the plot area keeps its size
    fig.update_layout(height=layout.height + max(0, (layout.margin.t or 0) + (layout.margin.b or 0) - margins))

    for trace in fig.data:
        kind = trace.type
        bar = getattr(trace, "colorbar", None) if kind in ("heatmap", "contour", "histogram2d") else None
        if bar is None and hasattr(trace, "marker") and getattr(trace.marker, "colorbar", None) is not None:
            bar = trace.marker.colorbar if trace.marker.showscale else None
        if bar is not None:
            bar.tickfont = {**_bigger(bar.tickfont, p.tick), "color": INK}
            bar.title.font = _bigger(bar.title.font, p.text)
            bar.thickness = max(bar.thickness or 0, 20)
        if hasattr(trace, "textfont"):
            trace.textfont = _bigger(trace.textfont, p.tick)
        fits = kind != "heatmap" or cell_text_fits(fig, trace, tick_px=p.tick, width_px=p.width_px)
        if trace.type == "heatmap" and trace.texttemplate and not fits:
            trace.texttemplate = ""
        if kind == "scatter" and trace.line is not None and "lines" in (trace.mode or "lines"):
            trace.line.width = max(p.min_line, (trace.line.width or 2.0) + 1.0)
    return fig
