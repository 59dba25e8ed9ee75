"""The Gated DeltaNet page (app_pages/gated_deltanet.py): how much of each write is kept, the gate and the write
strength are what ``lineage`` computes; at α = 1 it is DeltaNet, at α = 0 each step keeps only itself."""

from __future__ import annotations

import numpy as np

from lineage.teach import stage_runs
from tests.app.util import figure, frames_z, rerun, run_page, z_of


def test_gated_deltanet_page():
    at = run_page("gated_deltanet", gated_deltanet_T=16, gated_deltanet_inputs="random")
    rule = stage_runs.GateRule(alpha=0.9, alpha_jitter=1.0, beta=1.0)
    run = stage_runs.run_stage("gated_deltanet", 16, 8, 8, 0, rule, repeats=1)
    retention = z_of(figure(at, "How much of each write")["data"][0])
    np.testing.assert_allclose(retention, stage_runs.retention(run.g)[:, :, 0], rtol=1e-6)
    assert not np.allclose(retention[0, :8], retention[1, :8])  # written at different times, fading differently
    gates = figure(at, "Gate and write strength")
    np.testing.assert_allclose(gates["data"][0]["y"], run.trace.decay[0, 0][:, 0], rtol=1e-6)
    np.testing.assert_allclose(gates["data"][1]["y"], 1.0)

    at.slider(key="gated_deltanet_alpha").set_value(1.0)
    rerun(at)
    retention = z_of(figure(at, "How much of each write")["data"][0])
    deltanet = stage_runs.run_stage("deltanet", 16, 8, 8, 0, stage_runs.GateRule(beta=1.0), repeats=1)
    np.testing.assert_array_equal(retention, stage_runs.retention(deltanet.g)[:, :, 0])
    assert np.all(retention[np.isfinite(retention)] == 1.0)
    state = figure(at, "The state, token by token")
    np.testing.assert_array_equal(frames_z(state, 0), frames_z(state, 1))  # Gated DeltaNet with α = 1 is DeltaNet
    np.testing.assert_allclose(frames_z(state, 1), deltanet.states, rtol=1e-6, atol=1e-7)

    at.slider(key="gated_deltanet_alpha").set_value(0.0)
    rerun(at)
    retention = z_of(figure(at, "How much of each write")["data"][0])
    assert np.all(retention[:, 0] == 1.0) and np.all(retention[:, 1:][np.isfinite(retention[:, 1:])] == 0.0)
