"""What every figure builder shares (lineage.plots.core): still heatmaps, the step marker."""

from __future__ import annotations

import numpy as np
import pytest

from lineage import plots

RNG = np.random.default_rng(0)


def test_heatmaps_are_still_figures():
    fig = plots.heatmaps([plots.Panel("p", RNG.normal(size=(1, 3, 3)))])
    assert not fig.frames and not fig.layout.sliders and not fig.layout.updatemenus
    with pytest.raises(ValueError, match="a still heatmap needs frames"):
        plots.heatmaps([plots.Panel("p", RNG.normal(size=(2, 3, 3)))])


def test_step_marker_rejects_an_unknown_axis():
    with pytest.raises(ValueError, match="axis must be 'x' or 'y'"):
        plots.step_marker(plots.over_time({"a": np.ones(3)}, title="t", y_title="y"), 1, axis="z")
