"""Shared figure machinery: client-side animations with Play/Pause and a step slider, one look for every page.

Every animated figure here follows the same rules, so a projector shows them smoothly and honestly:

* frames live in the figure (``go.Frame``), so playing them needs no round trip to the server;
* at most ``MAX_FRAMES`` frames by default (long runs are subsampled evenly, always keeping the last step);
* one colour range per panel, fixed across all frames, so a colour means the same value at every step;
* signed matrices use a diverging scale centred on zero, unsigned ones a sequential scale; both are
  colour-blind-safe (ColorBrewer RdBu, viridis), and a colour bar is always shown;
* small matrices also print their values in the cells, so nothing is conveyed by colour alone.

Functions take numpy arrays and return ``plotly.graph_objects.Figure``; nothing here imports streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

MAX_FRAMES = 64  # smooth on a projector, small enough to ship to the browser at once
TEXT_MAX_CELLS = 144  # print values in the cells of matrices up to 144 cells (12×12, 9×16, …)
TEXT_MAX_SIDE = 16  # … with no side longer than 16, so a 1×32 strip is not crammed with numbers
DIVERGING = "RdBu_r"  # ColorBrewer RdBu, colour-blind-safe; reversed so positive is red
SEQUENTIAL = "Viridis"  # perceptually uniform, colour-blind-safe
FRAME_MS = 250  # per frame while playing
FONT = dict(family="Inter, system-ui, sans-serif", size=14)
CONTROLS_PX = 52  # Play/Pause and the step slider start this far below the plot area: past the x ticks and title
PANEL_GAP = 0.15  # paper fraction between panels: room for a colour bar and the next panel's axis labels


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
    """Values to print in the cells of a small matrix (2 decimals; blank where not finite), or None if too big."""
    if z.size > TEXT_MAX_CELLS or max(z.shape) > TEXT_MAX_SIDE:
        return None
    return np.vectorize(lambda x: "" if not np.isfinite(x) else f"{x:.2f}")(z)


def _heatmap(panel: Panel, z: np.ndarray, zmin: float, zmax: float, signed: bool, colorbar_x: float, col: int):
    text = cell_text(z)
    return dict(
        type="heatmap",
        z=z,
        x=list(panel.x_labels) if panel.x_labels is not None else None,
        y=list(panel.y_labels) if panel.y_labels is not None else None,
        zmin=zmin,
        zmax=zmax,
        zmid=0.0 if signed else None,
        colorscale=DIVERGING if signed else SEQUENTIAL,
        colorbar=dict(x=colorbar_x, len=0.85, thickness=12),
        showscale=True,
        text=text,
        texttemplate="%{text}" if text is not None else None,
        textfont=dict(size=10),
        hovertemplate=f"{panel.title}<br>row %{{y}}, col %{{x}}: %{{z:.4g}}<extra></extra>",
        name=panel.title,
        xaxis=f"x{col if col > 1 else ''}",
        yaxis=f"y{col if col > 1 else ''}",
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
            )
        ],
    )


def animated_heatmaps(
    panels: Sequence[Panel],
    *,
    title: str = "",
    step_labels: Sequence | None = None,
    start: int | None = None,
    max_frames: int = MAX_FRAMES,
    height: int = 420,
) -> go.Figure:
    """Side-by-side heatmaps animated together over steps.

    Args:
        panels: each with ``frames [F, rows, cols]``; all panels share F (the number of steps).
        step_labels: a label per step (default 0 … F−1), shown on the slider.
        start: the step shown first (default the last); rounded to the nearest kept frame.
        max_frames: cap on frames sent to the browser (steps are subsampled evenly beyond it).
    """
    if not panels:
        raise ValueError("panels must contain at least one Panel")
    F = panels[0].frames.shape[0]
    for p in panels:
        if p.frames.ndim != 3 or p.frames.shape[0] != F:
            raise ValueError(f"panel {p.title!r}: frames must be [F={F}, rows, cols], got {p.frames.shape}")
    labels = list(step_labels) if step_labels is not None else list(range(F))
    keep = frame_indices(F, max_frames)
    first = int(np.abs(keep - (F - 1 if start is None else start)).argmin())
    n = len(panels)
    if any(not p.width > 0 for p in panels):
        raise ValueError(f"panel widths must be > 0, got {[p.width for p in panels]}")
    fig = make_subplots(
        rows=1,
        cols=n,
        subplot_titles=[p.title for p in panels],
        column_widths=[p.width for p in panels],
        horizontal_spacing=PANEL_GAP if n > 1 else 0.0,
    )
    # each colour bar stands in the gap just right of its own panel
    bar_x = [fig.layout[f"xaxis{i + 1 if i else ''}"].domain[1] + 0.005 for i in range(n)]
    ranges = [
        p.zrange + (color_range(p.frames, p.signed)[2],) if p.zrange else color_range(p.frames, p.signed)
        for p in panels
    ]

    def traces(f: int):
        out = []
        for i, (p, (zmin, zmax, signed)) in enumerate(zip(panels, ranges, strict=True)):
            out.append(_heatmap(p, p.frames[f], zmin, zmax, signed, colorbar_x=bar_x[i], col=i + 1))
        return out

    # Traces and frames go in as plain dicts: Plotly then validates each heatmap once, not three times
    # (constructing go.Heatmap, wrapping it in go.Frame and assigning fig.frames each copy and re-validate it).
    fig.add_traces(traces(int(keep[first])))
    fig.frames = [dict(data=traces(int(f)), name=str(labels[f]), traces=list(range(n))) for f in keep]
    for i, p in enumerate(panels):
        fig.update_xaxes(title_text=p.x_title, row=1, col=i + 1)
        fig.update_yaxes(title_text=p.y_title, autorange="reversed", row=1, col=i + 1)
    fig.update_layout(**play_controls([str(labels[f]) for f in keep], start=first))
    return style(fig, title=title, height=height).update_layout(margin_b=CONTROLS_PX + 100)  # room for the controls


def style(fig: go.Figure, *, title: str = "", height: int | None = None) -> go.Figure:
    """The house look: readable font, white background, room for the animation controls below."""
    fig.update_layout(
        title=dict(text=title, x=0.0, xanchor="left") if title else None,
        font=FONT,
        template="plotly_white",
        margin=dict(l=60, r=40, t=70 if title else 40, b=90),
        height=height,
    )
    return fig


def heatmaps(panels: Sequence[Panel], *, title: str = "", height: int = 420) -> go.Figure:
    """Side-by-side still heatmaps, drawn by the same rules as the animations (each panel holds one frame)."""
    for p in panels:
        if p.frames.ndim != 3 or p.frames.shape[0] != 1:
            raise ValueError(f"panel {p.title!r}: a still heatmap needs frames [1, rows, cols], got {p.frames.shape}")
    fig = animated_heatmaps(panels, title=title, height=height)
    fig.frames = ()
    fig.layout.updatemenus, fig.layout.sliders = (), ()
    fig.update_layout(margin_b=60)
    return fig


def step_marker(fig: go.Figure, step: int, *, axis: str = "x", band: bool = False) -> go.Figure:
    """Mark where the Step control stands, in every subplot.

    A dashed line at ``step`` on ``axis`` ("x" or "y"); with ``band``, an outline around that column (x) or row (y)
    of a heatmap instead, so the values in its cells stay readable.
    """
    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    line = dict(dash="dash", color="#222", width=2)
    if band:
        add = fig.add_vrect if axis == "x" else fig.add_hrect
        add(step - 0.5, step + 0.5, line=line, fillcolor="rgba(0,0,0,0)", row="all", col="all")
    else:
        add = fig.add_vline if axis == "x" else fig.add_hline
        add(step, line=line, row="all", col="all")
    return fig


def animation_steps(n_steps: int, start: int | None) -> tuple[np.ndarray, int | None]:
    """The steps that become frames (at most ``MAX_FRAMES``, always the last) and ``start`` as an index into them.

    Building only the kept frames keeps a long run's animation as light as a short one's.
    """
    keep = frame_indices(n_steps)
    return keep, None if start is None else int(np.abs(keep - start).argmin())
