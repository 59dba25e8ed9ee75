"""The lineage's colours: one table, used by every figure that draws a stage, and apart for colour-blind viewers.

Metric and threshold: CIEDE2000 (Sharma, Wu & Dalal 2005) between every two mechanism colours, after simulating
deuteranopia and protanopia at full severity (Machado et al. 2009), at least ``MIN_CVD_DELTA_E`` = 10 — about
five times the difference a viewer just notices (≈ 2) for patches side by side.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lineage import lab, mechanisms, plots, stages
from lineage.measure import footprints
from lineage.plots import palette
from lineage.plots.core import COLORSCALES, DIVERGING, SEQUENTIAL

# Sharma, Wu & Dalal (2005), Table 1: pairs of CIELAB colours and their CIEDE2000 difference.
SHARMA_PAIRS = [
    ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
    ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
    ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082),
]


@pytest.mark.parametrize(("lab1", "lab2", "expected"), SHARMA_PAIRS)
def test_ciede2000_matches_the_published_pairs(lab1, lab2, expected):
    assert palette.ciede2000(np.array(lab1), np.array(lab2)) == pytest.approx(expected, abs=1e-4)
    assert palette.ciede2000(np.array(lab2), np.array(lab1)) == pytest.approx(expected, abs=1e-4)


def test_cvd_simulation_merges_red_and_green_but_keeps_grey():
    red, green = palette.hex_to_rgb("#D62728"), palette.hex_to_rgb("#2CA02C")
    normal = palette.ciede2000(palette.to_lab(red), palette.to_lab(green))
    for deficiency in palette.CVD_DEFICIENCIES:
        seen = palette.simulate_cvd(np.stack([red, green]), deficiency)
        assert palette.ciede2000(*palette.to_lab(seen)) < normal / 2, deficiency
        for grey in (0.0, 0.5, 1.0):
            np.testing.assert_allclose(palette.simulate_cvd(np.full(3, grey), deficiency), grey, atol=2e-3)
    with pytest.raises(ValueError, match="deficiency must be one of"):
        palette.simulate_cvd(red, "tritanopia")


@pytest.mark.parametrize("deficiency", [None, *palette.CVD_DEFICIENCIES])
def test_every_two_mechanism_colours_stay_apart(deficiency):
    colours = mechanisms.colours()
    assert len(set(colours.values())) == len(colours), "two mechanisms share a colour"
    distances = palette.cvd_distances(colours, deficiency)
    close = {pair: round(d, 1) for pair, d in distances.items() if d < palette.MIN_CVD_DELTA_E}
    assert not close, f"closer than CIEDE2000 {palette.MIN_CVD_DELTA_E} seen as {deficiency or 'normal'}: {close}"


def test_the_distance_check_catches_a_palette_that_merges():
    """The same check on a palette that is fine to normal sight (every pair ≥ 17) but not to red-green blindness."""
    merged = {"orange": "#E69F00", "yellow": "#DDCC00", "red": "#D62728", "green": "#2CA02C"}
    assert min(palette.cvd_distances(merged).values()) > palette.MIN_CVD_DELTA_E
    for deficiency, pair in (("deuteranopia", ("red", "green")), ("protanopia", ("orange", "green"))):
        assert palette.cvd_distances(merged, deficiency)[pair] < palette.MIN_CVD_DELTA_E, deficiency


def test_stage_colours_come_from_the_table_of_mechanisms():
    for s in stages.all_stages():
        m = palette.stage_mechanism(s.key)
        assert m.key in s.mechanisms
        assert palette.stage_colour(s.key) == mechanisms.mechanism(m.key).colour
    assert palette.stage_mechanism("kv_cache").key == palette.stage_mechanism("gpt2").key == "softmax"
    assert palette.stage_mechanism("hybrid").key == "mla"


def test_stages_that_can_coincide_differ_in_dash():
    """A gated stage at α = 1 is its ungated parent; its line must differ by more than colour."""
    for gated, parent in (("mamba2", "linear_attention"), ("gated_deltanet", "deltanet"), ("kda", "gated_deltanet")):
        assert palette.stage_line(gated)[0]["dash"] != palette.stage_line(parent)[0]["dash"]
    markers = {palette.stage_line(k)[1]["symbol"] for k in ("gpt2", "linear_attention", "deltanet", "hybrid")}
    assert len(markers) == 4


def _lightness(scale) -> np.ndarray:
    return palette.to_lab(np.stack([palette.css_to_rgb(c) for _, c in scale]))[:, 0]


def test_colour_scales_read_in_greyscale():
    """Sequential: lightness rises with the value. Diverging: lightness falls with |value| on both sides of zero."""
    seq = _lightness(COLORSCALES[SEQUENTIAL])
    assert np.all(np.diff(seq) > 0)
    div = _lightness(COLORSCALES[DIVERGING])
    mid = int(np.argmax(div))
    assert 0 < mid < div.size - 1
    assert np.all(np.diff(div[: mid + 1]) > 0) and np.all(np.diff(div[mid:]) < 0)


def test_masked_colour_is_on_neither_scale():
    masked = palette.to_lab(palette.hex_to_rgb(palette.MASKED))
    for name in (SEQUENTIAL, DIVERGING):
        rgb = np.stack([palette.css_to_rgb(c) for _, c in COLORSCALES[name]])
        # every colour the scale passes through, interpolated finely between its stops
        fine = np.concatenate([np.linspace(a, b, 20) for a, b in itertools.pairwise(rgb)])
        nearest = palette.ciede2000(palette.to_lab(fine), masked).min()
        assert nearest > palette.MIN_CVD_DELTA_E / 2, f"{name} passes within {nearest:.1f} of the masked colour"


# ---- every figure that draws a stage draws it in the stage's colour --------------------------------------------------


def stage_trace_colours(fig) -> dict[str, set[str]]:
    """legendgroup (a stage or mechanism key) -> the colours its traces are drawn in."""
    keys = {s.key for s in stages.all_stages()} | set(mechanisms.MECHANISMS)
    found: dict[str, set[str]] = {}
    for trace in fig.data:
        group = getattr(trace, "legendgroup", None)
        if group in keys:
            lines = getattr(trace, "line", None) is not None and trace.line.color and "lines" in (trace.mode or "lines")
            colour = trace.line.color if lines else trace.marker.color
            found.setdefault(group, set()).add(str(colour).upper())
    return found


def assert_stage_colours(fig) -> None:
    found = stage_trace_colours(fig)
    assert found, "no trace names a stage or mechanism (legendgroup)"
    for key, colours in found.items():
        expected = (
            mechanisms.mechanism(key).colour if key in mechanisms.MECHANISMS else palette.stage_colour(key)
        ).upper()
        assert colours == {expected}, f"{key} drawn in {colours}, its colour is {expected}"


def home_figure():
    seq_lens = np.array([2**i for i in range(0, 21, 4)])
    per_stage = {s.key: footprints.memory_per_layer(s.key, seq_lens) for s in stages.all_stages()}
    return plots.memory_by_stage(seq_lens, per_stage, baseline=("all-MLA", "baseline", per_stage["gpt2"] / 3))


def test_home_chart_draws_every_stage_in_its_colour():
    fig = home_figure()
    assert_stage_colours(fig)
    drawn = {t.legendgroup for t in fig.data}
    # stages with the same curve share a line, named after all of them
    assert {"gpt2", "linear_attention", "gla", "hybrid", "mla"} <= drawn
    assert any("GPT-2" in t.name and "KV cache" in t.name for t in fig.data)


def test_a_stage_drawn_in_another_colour_fails_the_check():
    fig = home_figure()
    trace = next(t for t in fig.data if t.legendgroup == "hybrid")
    trace.line.color = mechanisms.mechanism("kda").colour
    with pytest.raises(AssertionError, match="hybrid drawn in"):
        assert_stage_colours(fig)


@pytest.fixture(scope="module")
def lab_capacity():
    return lab.capacity(lab.LabSettings(d_k=8, keys="random", noise=0.0, seed=0), lab.CAPACITY_GATES, n_max=8, trials=1)


def other_figures(lab_capacity):
    """Every other builder that draws stages or mechanisms, each drawing several."""
    ages = {"DeltaNet, β = 1": np.linspace(0, 1, 5), "DeltaNet, β = 0.5": np.ones(5), "linear attention": np.ones(5)}
    mech = {"DeltaNet, β = 1": "deltanet", "DeltaNet, β = 0.5": "deltanet", "linear attention": "linear_attention"}
    lens = np.array([1, 10, 100])
    sweep = {m: ([4, 8], [1.0, 0.5]) for m in ("softmax", "deltanet", "kda", "hybrid")}
    return {
        "recall_by_age": plots.recall_by_age(ages, mechanisms=mech, emphasis="DeltaNet, β = 1"),
        "decode_time_vs_context": plots.decode_time_vs_context(
            lens, {"KV": lens * 1.0, "KDA": np.ones(3)}, mechanisms={"KV": "softmax", "KDA": "kda"}
        ),
        "capacity_curves": plots.capacity_curves(lab_capacity),
        "accuracy_sweep": plots.accuracy_sweep(sweep, x_title="pairs", title="t", live=sweep),
    }


@pytest.mark.parametrize("name", ["recall_by_age", "decode_time_vs_context", "capacity_curves", "accuracy_sweep"])
def test_every_figure_draws_stages_in_their_colours(lab_capacity, name):
    assert_stage_colours(other_figures(lab_capacity)[name])
