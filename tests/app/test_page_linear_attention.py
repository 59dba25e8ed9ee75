"""The linear attention page (app_pages/linear_attention.py): follows its controls (the feature map among them),
animates as the house rules say, and draws exactly the states ``lineage`` computes for the same inputs."""

from __future__ import annotations

import numpy as np

from lineage.teach import stage_runs
from tests.app.util import assert_fixed_colour_range, checked, figure, frames_z, rerun, run_page


def test_linear_attention_page():
    at = run_page("linear_attention", linear_attention_inputs="random")
    run = stage_runs.run_stage("linear_attention", 32, 8, 8, 0, feature_map="relu")  # the page opens on relu
    assert f"T × T form {run.err_parallel:.1e}" in checked(at)
    state = figure(at, "The state, token by token")
    assert len(state["frames"]) == 32
    assert_fixed_colour_range(state)
    np.testing.assert_allclose(frames_z(state, 1), run.states, rtol=1e-6, atol=1e-7)
    assert state["data"][1]["x"][-1] == "z"  # the normaliser column
    recall = figure(at, "Only adds")
    np.testing.assert_allclose(recall["data"][0]["y"], stage_runs.recall(run).by_step, rtol=1e-6)

    at.radio(key="linear_attention_feature_map").set_value("elu1")  # the paper's, one click away
    at.slider(key="linear_attention_T").set_value(16)
    rerun(at)
    run = stage_runs.run_stage("linear_attention", 16, 8, 8, 0, feature_map="elu1")
    assert f"T × T form {run.err_parallel:.1e}" in checked(at)
    state = figure(at, "The state, token by token")
    assert len(state["frames"]) == 16
    np.testing.assert_allclose(frames_z(state, 1), run.states, rtol=1e-6, atol=1e-7)

    at.query_params["linear_attention_step"] = "0"
    rerun(at)
    assert figure(at, "The state, token by token")["layout"]["sliders"][0]["active"] == 0
