"""The DeltaNet page (app_pages/deltanet.py): follows its controls (β, the chunk size, T), animates as the house
rules say, and draws exactly the states ``lineage`` computes for the same inputs."""

from __future__ import annotations

import numpy as np

from lineage.teach import stage_runs
from tests.app.util import assert_fixed_colour_range, checked, figure, frames_z, rerun, run_page


def test_deltanet_page():
    at = run_page("deltanet", deltanet_inputs="random")
    run = stage_runs.run_stage("deltanet", 32, 8, 8, 0, stage_runs.GateRule(beta=1.0), chunk_size=16)
    assert f"chunked form {run.err_chunk:.1e}" in checked(at)
    steps = figure(at, "The delta rule, token by token")
    assert len(steps["frames"]) == 32
    assert_fixed_colour_range(steps)
    np.testing.assert_allclose(frames_z(steps, 2), run.states, rtol=1e-6, atol=1e-7)
    assert len(figure(at, "The chunked form, C = 16")["frames"]) == 2
    assert len(figure(at, "Chunk size")["data"][0]["x"]) == 6  # C = 1, 2, 4, …, 32
    ages = figure(at, "Recall error by the age")
    assert [t["name"] for t in ages["data"]][-1] == "linear attention (adds only)"

    at.slider(key="deltanet_beta").set_value(0.5)
    at.select_slider(key="deltanet_chunk").set_value(4)
    rerun(at)
    run = stage_runs.run_stage("deltanet", 32, 8, 8, 0, stage_runs.GateRule(beta=0.5), chunk_size=4)
    assert f"chunked form {run.err_chunk:.1e}" in checked(at)
    np.testing.assert_allclose(frames_z(figure(at, "The delta rule"), 2), run.states, rtol=1e-6, atol=1e-7)
    assert len(figure(at, "The chunked form, C = 4")["frames"]) == 8

    at.slider(key="deltanet_T").set_value(12)
    rerun(at)
    assert len(figure(at, "The delta rule")["frames"]) == 12
    assert len(figure(at, "The chunked form, C = 4")["frames"]) == 3
