"""Presenter scaling of figures (lineage.plots.present): every text reaches projector size, nothing shrinks, cell
numbers that cannot fit at that size are dropped, thin lines get thicker."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from lineage import plots
from lineage.plots.core import Panel
from lineage.plots.present import PROJECTION, active, for_projection, projecting


def font_sizes(fig: go.Figure) -> dict[str, float]:
    """Every font size a figure sets, by where it is set (what plotly.js draws the text of that place at)."""
    js = fig.to_plotly_json()
    found: dict[str, float] = {}

    def walk(obj, where: str) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k in ("font", "tickfont", "textfont") and isinstance(v, dict) and "size" in v:
                    found[f"{where}.{k}"] = v["size"]
                if k == "template":
                    continue
                walk(v, f"{where}.{k}")
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(v, f"{where}[{i}]")

    walk(js["data"], "data")
    walk(js["layout"], "layout")
    return found


def tiny_figure() -> go.Figure:
    """Every kind of text at 8 px, lines 1 px wide, a colour bar, bar labels, an annotation, an animation's controls."""
    small = dict(size=8)
    fig = go.Figure(
        data=[
            go.Scatter(x=[1, 2], y=[1, 2], mode="lines", line=dict(width=1), name="a"),
            go.Bar(x=[1, 2], y=[3, 4], text=["3", "4"], textposition="outside", textfont=small),
            go.Heatmap(z=[[1, 2], [3, 4]], text=[["1", "2"], ["3", "4"]], texttemplate="%{text}", textfont=small,
                       colorbar=dict(tickfont=small, title=dict(text="v", font=small))),
        ],
        layout=dict(
            font=small, title=dict(text="t", font=small), legend=dict(font=small),
            xaxis=dict(tickfont=small, title=dict(text="x", font=small)), yaxis=dict(tickfont=small),
            annotations=[dict(text="note", x=1, y=1, font=small)],
            sliders=[dict(steps=[dict(label="0")], font=small, currentvalue=dict(font=small))],
            updatemenus=[dict(buttons=[dict(label="Play")], font=small)],
        ),
    )  # fmt: skip
    return fig


def test_every_text_reaches_projector_size():
    fig = tiny_figure()
    before = font_sizes(fig)
    assert before and max(before.values()) == 8
    fig = for_projection(fig)
    after = font_sizes(fig)
    assert set(before) <= set(after)
    small = {where: size for where, size in after.items() if size < PROJECTION.tick}
    assert not small, small
    assert fig.layout.title.font.size >= PROJECTION.title
    assert fig.data[0].line.width >= PROJECTION.min_line
    assert fig.layout.height >= PROJECTION.min_height


def test_nothing_shrinks():
    fig = tiny_figure()
    fig.layout.title.font.size = 60
    fig.data[2].textfont.size = 30
    fig.data[0].line.width = 8
    fig = for_projection(fig)
    assert fig.layout.title.font.size == 60 and fig.data[2].textfont.size == 30 and fig.data[0].line.width > 8


@pytest.mark.parametrize(("n_panels", "rows", "cols", "kept"), [(1, 4, 4, True), (2, 12, 9, False)])
def test_cell_numbers_are_dropped_where_they_cannot_fit(n_panels, rows, cols, kept):
    """One 4×4 panel's cells hold a number at 18 px at 1280×720; two 12×9 panels' cells (≈ 47 px wide) do not, and
    lose their numbers rather than their size."""
    frames = np.random.default_rng(0).standard_normal((3, rows, cols))
    panels = [Panel(f"S{i}", frames) for i in range(n_panels)]
    assert all(t.texttemplate == "%{text}" for t in plots.animated_heatmaps(panels).data)
    with projecting():
        fig = plots.animated_heatmaps(panels)
    assert active() is None
    assert all((t.texttemplate == "%{text}") is kept for t in fig.data)
    assert all(t.textfont.size >= PROJECTION.tick for t in fig.data)
    assert all(t.hovertemplate for t in fig.data)  # the values stay one hover away


def test_builders_project_only_inside_the_block():
    """The builders apply the active projection as they build, and draw for a screen again after the block."""
    series = {"a": np.arange(5.0)}
    with projecting():
        big = plots.over_time(series, title="t", y_title="y")
    small = plots.over_time(series, title="t", y_title="y")
    assert big.layout.xaxis.tickfont.size >= PROJECTION.tick and big.data[0].line.width >= PROJECTION.min_line
    assert small.layout.xaxis.tickfont.size is None and small.data[0].line.width < PROJECTION.min_line
    assert big.layout.height > small.layout.height
