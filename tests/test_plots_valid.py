"""Every figure builder's output passes Plotly's full validation unchanged.

The builders assemble figures as plain dicts and skip validation when wrapping them (``lineage.plots.core.figure``),
so a misspelt property would otherwise reach the browser, which ignores it silently. Here each figure is rebuilt with
validation on: an invalid property raises, and a value Plotly would have coerced (a colour scale by name, say) shows
up as a difference.
"""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from lineage import plots
from lineage.plots.present import PROJECTION, projecting
from tests.util import BUILDERS, all_builders


def test_every_builder_is_covered():
    exported = {name for name in plots.__all__ if name[0].islower()}
    helpers = {"animated_heatmaps", "animation_steps", "color_range", "format_bytes", "frame_indices", "heatmaps"}
    helpers |= {"play_controls", "step_marker", "style", "mixer_title", "mechanism_styles"}  # styles, not figures
    assert exported - helpers == set(BUILDERS)


@pytest.mark.parametrize("name", BUILDERS)
def test_a_builders_figure_is_what_validation_makes_of_it(runs, name):
    build = all_builders(runs)[name]
    fig = build()
    spec = json.loads(pio.to_json(fig, validate=False))
    validated = go.Figure(fig.to_dict())  # raises on any property Plotly does not know or accept
    assert json.loads(pio.to_json(validated, validate=False)) == spec


@pytest.mark.parametrize("name", BUILDERS)
def test_a_projected_figure_is_valid_too(runs, name):
    """Presenter mode's sizes (lineage.plots.present), applied while the builder builds, are all properties Plotly
    accepts."""
    build = all_builders(runs)[name]
    with projecting():
        fig = build()
    spec = json.loads(pio.to_json(fig, validate=False))
    assert spec["layout"]["font"]["size"] >= PROJECTION.text
    validated = go.Figure(fig.to_dict())
    assert json.loads(pio.to_json(validated, validate=False)) == spec


def test_style_gives_any_figure_the_house_template():
    fig = plots.style(go.Figure(go.Scatter(y=[1, 2])), title="t", height=300)
    assert fig.layout.template == go.Figure(layout=dict(template="plotly_white")).layout.template
    assert (fig.layout.title.text, fig.layout.height) == ("t", 300)


def test_a_dodged_sweep_keeps_its_ticks_at_the_true_sizes():
    """Lines drawn beside each other along x: the axis still reads the sizes that were run, nothing between them."""
    fig = plots.accuracy_sweep(
        {"softmax": ([4, 8], [0.99, 0.5]), "deltanet": ([4, 8], [0.98, 0.6])}, x_title="pairs", title="t", dodge=0.06
    )
    assert list(fig.layout.xaxis.tickvals) == [4.0, 8.0] and list(fig.layout.xaxis.ticktext) == ["4", "8"]
    assert [list(t.x) for t in fig.data] == [[3.97, 7.97], [4.03, 8.03]]
    assert [list(t.customdata) for t in fig.data] == [[4.0, 8.0], [4.0, 8.0]]
