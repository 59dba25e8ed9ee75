"""Presenter scaling of figures (lineage.plots.present): every text reaches projector size, nothing shrinks, cell
numbers that cannot fit at that size are dropped, thin lines get thicker."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from lineage import plots
from lineage.plots.core import FONT, LAPTOP_PLOT_PX, Panel
from lineage.plots.present import (
    PROJECTION,
    TITLE_EM,
    TITLE_LINE_EM,
    active,
    for_projection,
    projecting,
    wrapped_text,
)
from tests.util import BUILDERS, all_builders


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


@pytest.mark.parametrize(("categories", "side_by_side", "kept"), [(3, 1, True), (9, 3, False), (9, 1, True)])
def test_bar_labels_are_dropped_where_they_run_into_each_other(categories, side_by_side, kept):
    """The Memory lab's overwrite bars: 9 mechanisms × 3 grouped bars leave each bar ≈ 30 px at 1280×720, too narrow
    for "0.50" at 18 px ("0.500.50" on the slide); one bar a category has the room. The hover keeps the values."""
    names = [f"mechanism {i}" for i in range(categories)]
    bars = [
        go.Bar(x=names, y=[0.5] * categories, text=["0.50"] * categories, textposition="outside", name=f"b{j}")
        for j in range(side_by_side)
    ]
    fig = for_projection(go.Figure(data=bars, layout=dict(barmode="group")))
    assert all((t.text is not None) is kept for t in fig.data), [t.text for t in fig.data]
    if kept:
        assert all(t.textfont.size >= PROJECTION.tick for t in fig.data)


def test_builders_project_only_inside_the_block():
    """The builders apply the active projection as they build, and draw for a screen again after the block."""
    series = {"a": np.arange(5.0)}
    with projecting():
        big = plots.over_time(series, title="t", y_title="y")
    small = plots.over_time(series, title="t", y_title="y")
    assert big.layout.xaxis.tickfont.size >= PROJECTION.tick and big.data[0].line.width >= PROJECTION.min_line
    assert small.layout.xaxis.tickfont.size is None and small.data[0].line.width < PROJECTION.min_line
    assert big.layout.height > small.layout.height


# --- animation frames: every step is a slide ------------------------------------------------------------------------


def frame_text_sizes(fig: go.Figure) -> list[tuple[str, float]]:
    """(where, px) for every text a frame of ``fig`` draws while it is shown: each annotation and title the frame
    carries, and the text of each trace it updates, at the size that text gets — its own font, else the figure's
    trace's, else the figure's font (what plotly.js falls back to)."""
    spec = fig.to_plotly_json()
    base_px = spec["layout"].get("font", {}).get("size", 12)
    found = []
    for f, frame in enumerate(spec.get("frames") or []):
        layout = frame.get("layout") or {}
        for i, note in enumerate(layout.get("annotations") or []):
            found.append((f"frame {f} annotation {i}", (note.get("font") or {}).get("size") or base_px))
        if isinstance(layout.get("title"), dict) and layout["title"].get("text"):
            found.append((f"frame {f} title", (layout["title"].get("font") or {}).get("size") or base_px))
        for trace, i in zip(frame.get("data") or [], frame.get("traces") or range(99), strict=False):
            shown = spec["data"][i]
            template = trace.get("texttemplate", shown.get("texttemplate"))
            if trace.get("text") is None or not template:
                continue
            size = (trace.get("textfont") or {}).get("size") or (shown.get("textfont") or {}).get("size") or base_px
            found.append((f"frame {f} trace {i} cell text", size))
    return found


@pytest.mark.parametrize("name", BUILDERS)
def test_every_frame_of_every_animation_is_projected(runs, name):
    """In presenter mode no frame draws a text under the projection's smallest size: the step's sentence, the panel
    titles and the cell numbers each frame brings stay as large as the first frame's, at every step."""
    with projecting():
        fig = all_builders(runs)[name]()
    sizes = frame_text_sizes(fig)
    small = [(where, px) for where, px in sizes if px < PROJECTION.tick]
    assert not small, small[:5]
    if name in ("story_memory", "attention_story"):  # these carry the sentence and the titles in every frame
        notes = [px for where, px in sizes if "annotation" in where]
        assert len(notes) >= len(fig.frames) and min(notes) >= PROJECTION.text


def test_the_frame_walk_sees_small_frame_text():
    """The walk above reads real sizes: a frame's own 10 px annotation and cell text, unprojected, are found."""
    fig = go.Figure(
        data=[go.Heatmap(z=[[1]], text=[["1"]], texttemplate="%{text}", textfont=dict(size=10))],
        layout=dict(font=dict(size=14)),
        frames=[go.Frame(data=[go.Heatmap(z=[[2]], text=[["2"]])], traces=[0],
                         layout=dict(annotations=[dict(text="s", font=dict(size=10))]))],
    )  # fmt: skip
    assert sorted(px for _, px in frame_text_sizes(fig)) == [10, 10]
    assert min(px for _, px in frame_text_sizes(for_projection(fig))) >= PROJECTION.tick


@pytest.mark.parametrize("name", BUILDERS)
def test_outside_presenter_mode_axes_and_legends_are_inked(runs, name):
    """Streamlit's chart theme greys out axis text unless the text carries a colour: every axis's ticks and title and
    the legend carry the house's near-black (or a colour of the builder's own), and no projection was applied."""
    fig = all_builders(runs)[name]()
    spec = fig.to_plotly_json()["layout"]
    axes = {k: v for k, v in spec.items() if k[1:5] == "axis" and k[0] in "xy"}
    assert axes and spec["font"]["size"] < PROJECTION.text
    bare = [k for k, v in axes.items() if not (v.get("tickfont") or {}).get("color")]
    assert not bare, bare
    if spec.get("showlegend", True):
        assert spec["legend"]["font"]["color"]


# --- titles: Plotly cuts a long title off at the figure's edge, and never wraps it -----------------------------------


def test_a_title_too_long_for_the_projected_width_is_wrapped_and_the_plot_keeps_its_height():
    text = "With and without the bound: how much of token 0's write (name→Kim) each channel keeps, t steps later"
    short = for_projection(plots.over_time({"a": np.arange(5.0)}, title="t", y_title="y"))
    fig = for_projection(plots.over_time({"a": np.arange(5.0)}, title=text, y_title="y"))
    lines = fig.layout.title.text.split("<br>")
    fits = PROJECTION.width_px / (TITLE_EM * PROJECTION.title)
    assert len(lines) == 2 and all(len(line) <= fits for line in lines), lines
    assert " ".join(lines) == text, "the words and their order are kept"
    assert fig.layout.title.yanchor == "top" and fig.layout.title.yref == "container"
    grown = fig.layout.margin.t - short.layout.margin.t
    assert grown >= TITLE_LINE_EM * PROJECTION.title, "the second line gets its own room"
    assert fig.layout.height - short.layout.height == grown, "the plot area keeps its size"
    assert short.layout.title.text == "t" and short.layout.title.yanchor is None, "a short title is left as it is"


def test_a_legend_entry_too_long_for_the_projected_width_is_wrapped():
    """Gated DeltaNet-2's reads name each line with where it parts from the others: ~150 characters, past a
    projected chart's edge on one line."""
    long = (
        "KDA: tea (same line as Gated DeltaNet-2: tea except at 25–31, Gated DeltaNet-2: coffee except at 17–24, " * 2
    )
    fig = for_projection(go.Figure([go.Scatter(y=[1, 2, 3], name=long.strip()), go.Scatter(y=[3, 2, 1], name="b")]))
    lines = fig.data[0].name.split("<br>")
    assert len(lines) >= 2 and " ".join(lines) == long.strip()
    assert all(len(line) * TITLE_EM * PROJECTION.text <= PROJECTION.width_px - 80 for line in lines)
    assert fig.data[1].name == "b"


def test_on_a_screen_a_legend_entry_wraps_to_a_laptop_s_chart_too():
    """Outside presenter mode the builders wrap an entry for the legend a 1280×800 laptop with the sidebar open has
    (``LAPTOP_PLOT_PX`` at the house font): the same entry ran past the chart there."""
    long = "Gated DeltaNet-2: tea (same line as KDA: tea except at 25–31, KDA: coffee except at 17–24), " * 2
    fig = plots.over_time({long.strip(): np.arange(5.0), "b": np.ones(5)}, title="t", y_title="y")
    lines = fig.data[0].name.split("<br>")
    assert len(lines) >= 2 and " ".join(lines) == long.strip()
    assert all(len(line) * TITLE_EM * FONT["size"] <= LAPTOP_PLOT_PX for line in lines)
    assert fig.data[1].name == "b"


def test_a_title_with_its_own_markup_is_left_alone():
    marked = "x" * 80 + "<sup>2</sup>"
    assert wrapped_text(marked, PROJECTION.title, PROJECTION.width_px) == marked
    assert wrapped_text("a " * 60, PROJECTION.title, PROJECTION.width_px).count("<br>") >= 1


@pytest.mark.parametrize("name", BUILDERS)
def test_every_projected_title_fits_the_projected_width(runs, name):
    """Every builder's title, and every title an animation frame brings, fits the width presenter mode is made for,
    line by line."""
    with projecting():
        fig = all_builders(runs)[name]()
    spec = fig.to_plotly_json()
    titles = [(spec["layout"].get("title") or {}).get("text") or ""]
    titles += [((f.get("layout") or {}).get("title") or {}).get("text") or "" for f in spec.get("frames") or []]
    fits = PROJECTION.width_px / (TITLE_EM * PROJECTION.title)
    long = [line for t in titles for line in t.split("<br>") if len(line) > fits]
    assert not long, long
