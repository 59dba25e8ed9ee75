"""The GLA page (app_pages/gla.py): one gate per key channel and the states are what ``lineage`` computes, and
follow the controls."""

from __future__ import annotations

import numpy as np

from lineage.teach import stage_runs
from tests.app.util import figure, frames_z, rerun, run_page, z_of


def test_gla_page():
    at = run_page("gla", gla_inputs="random")
    run = stage_runs.run_stage("gla", 32, 8, 8, 0, stage_runs.GateRule(alpha=0.99, alpha_min=0.5), repeats=1)
    gates = figure(at, "One gate per key channel")
    np.testing.assert_allclose(z_of(gates["data"][0]), run.trace.decay[0, 0].T, rtol=1e-6)
    state = figure(at, "The state, token by token")
    assert len(state["frames"]) == 32
    np.testing.assert_allclose(frames_z(state, 1), run.states, rtol=1e-6, atol=1e-7)

    at.slider(key="gla_T").set_value(10)
    at.slider(key="gla_jitter").set_value(1.0)
    rerun(at)
    run = stage_runs.run_stage(
        "gla", 10, 8, 8, 0, stage_runs.GateRule(alpha=0.99, alpha_min=0.5, alpha_jitter=1.0), repeats=1
    )
    assert len(figure(at, "The state, token by token")["frames"]) == 10
    np.testing.assert_allclose(z_of(figure(at, "One gate per key channel")["data"][0]), run.trace.decay[0, 0].T, 1e-6)
