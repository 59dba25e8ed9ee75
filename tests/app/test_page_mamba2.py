"""The Mamba-2 page (app_pages/mamba2.py): the gate, the state's size, the states and the same layer as attention
(the decay mask) are what ``lineage`` computes, and follow the controls."""

from __future__ import annotations

import numpy as np

from lineage.teach import stage_runs
from tests.app.util import figure, frames_z, rerun, run_page, z_of


def test_mamba2_page():
    at = run_page("mamba2", mamba2_inputs="random")
    run = stage_runs.run_stage("mamba2", 32, 8, 8, 0, stage_runs.GateRule(alpha=0.9, alpha_jitter=1.0), repeats=1)
    off = stage_runs.run_stage("mamba2", 32, 8, 8, 0, stage_runs.GateRule(alpha=1.0), repeats=1)
    gate = figure(at, "The gate at every step")
    np.testing.assert_allclose(gate["data"][0]["y"], run.trace.decay[0, 0][:, 0], rtol=1e-6)
    norms = figure(at, "Size of the state")
    np.testing.assert_allclose(norms["data"][0]["y"], stage_runs.state_norms(run.states), rtol=1e-6)
    np.testing.assert_allclose(norms["data"][1]["y"], stage_runs.state_norms(off.states), rtol=1e-6)
    state = figure(at, "The state, token by token")
    assert len(state["frames"]) == 32
    np.testing.assert_allclose(frames_z(state, 0), run.states, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(frames_z(state, 1), off.states, rtol=1e-6, atol=1e-7)
    z0 = state["frames"][0]["data"][0]
    assert z0["zmid"] == 0 and z0["zmin"] == -z0["zmax"]
    mask = figure(at, "The same layer as attention")
    causal = np.tri(32, dtype=bool)  # above the diagonal: masked (empty, the masked colour), not "decayed to 0"
    shown_mask, shown_mix = z_of(mask["data"][0]), z_of(mask["data"][1])
    assert np.isnan(shown_mask[~causal]).all() and np.isnan(shown_mix[~causal]).all()
    np.testing.assert_allclose(shown_mask[causal], stage_runs.decay_mask(run.g)[:, :, 0][causal], rtol=1e-6)
    np.testing.assert_allclose(shown_mix[causal], stage_runs.mixing_matrix(run)[causal], rtol=1e-5, atol=1e-6)

    at.slider(key="mamba2_T").set_value(12)
    at.slider(key="mamba2_alpha").set_value(0.0)
    rerun(at)
    assert len(figure(at, "The state, token by token")["frames"]) == 12
    wiped = z_of(figure(at, "The same layer as attention")["data"][0])  # α = 0: each step keeps only itself
    np.testing.assert_array_equal(np.where(np.tri(12, dtype=bool), wiped, 0.0), np.eye(12))
    at.query_params["mamba2_step"] = "4"  # steps count from 0, like the frames
    rerun(at)
    assert figure(at, "The state, token by token")["layout"]["sliders"][0]["active"] == 4
