"""The gated stages and the hybrid in the app: each page runs, follows its controls, and shows what lineage computes.

One AppTest per page, walked through a few control changes, keeps this affordable on a small machine.
"""

from __future__ import annotations

import numpy as np
from streamlit.testing.v1 import AppTest

from lineage.measure import footprints
from lineage.models import hybrid
from lineage.teach import stage_runs
from tests.app.util import figure, rerun, run_page, z_of


def frames_z(fig: dict, panel: int) -> np.ndarray:
    return np.stack([z_of(frame["data"][panel]) for frame in fig["frames"]])


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


def test_kda_page():
    at = run_page("kda", kda_inputs="random")
    rule = stage_runs.GateRule(alpha=0.99, alpha_min=0.5, beta=1.0)
    run = stage_runs.run_stage("kda", 32, 8, 8, 0, rule, repeats=1)
    gdn = stage_runs.run_stage("gated_deltanet", 32, 8, 8, 0, stage_runs.matched_scalar_rule(rule, 8), repeats=1)
    decay = z_of(figure(at, "KDA: one gate per key channel")["data"][0])
    np.testing.assert_allclose(decay, run.trace.decay[0, 0].T, rtol=1e-6)
    assert decay[0, 0] > decay[-1, 0]  # the channels forget at different speeds
    kda_ret, gdn_ret = (z_of(tr) for tr in figure(at, "How much of token 0's write")["data"])
    np.testing.assert_allclose(kda_ret, stage_runs.retention(run.g)[0].T, rtol=1e-6)
    np.testing.assert_allclose(gdn_ret, stage_runs.retention(gdn.g)[0].T, rtol=1e-6)
    assert len(figure(at, "The state, token by token")["frames"]) == 32

    at.slider(key="kda_alpha_min").set_value(0.99)
    at.slider(key="kda_T").set_value(20)
    rerun(at)
    decay = z_of(figure(at, "KDA: one gate per key channel")["data"][0])
    np.testing.assert_array_equal(decay, np.repeat(decay[:1], 8, axis=0))  # equal gates: identical rows
    state = figure(at, "The state, token by token")
    assert len(state["frames"]) == 20
    np.testing.assert_allclose(frames_z(state, 0), frames_z(state, 1), rtol=1e-6, atol=1e-7)  # KDA = GDN


def test_hybrid_page():
    at = run_page("hybrid", hybrid_T=12)
    schedule = footprints.periodic_schedule(8, 4)
    trace = hybrid.decode_trace(hybrid.HybridConfig(schedule=schedule), 12, 0)
    fp = footprints.footprint(hybrid.kimi_linear_spec(schedule), 2**17)
    bars = figure(at, "Kimi Linear shapes, 8 layers (2 MLA)")
    np.testing.assert_array_equal(bars["data"][0]["y"], [layer.kv_cache_bytes for layer in fp.per_layer])
    np.testing.assert_array_equal(bars["data"][1]["y"], [layer.state_bytes for layer in fp.per_layer])
    heat = figure(at, "The same, every layer at every step")
    np.testing.assert_array_equal(z_of(heat["data"][0]), trace.bytes.T)
    decode = figure(at, "Bytes each layer holds while decoding")
    assert [f["name"] for f in decode["frames"]] == [str(t + 1) for t in range(12)]
    cache, state = decode["frames"][-1]["data"]
    np.testing.assert_array_equal(cache["y"], trace.bytes[-1, [3, 7]])
    np.testing.assert_array_equal(state["y"], trace.bytes[-1, [0, 1, 2, 4, 5, 6]])
    assert any(f"{trace.max_err_vs_full:.1e}" in c.value for c in at.caption)

    at.radio(key="hybrid_schedule").set_value("kimi")
    at.slider(key="hybrid_T").set_value(4)
    at.select_slider(key="hybrid_context").set_value(2**20)
    rerun(at)
    fp = footprints.footprint("kimi-linear-48b", 2**20)
    bars = figure(at, "Kimi Linear 48B-A3B")
    np.testing.assert_array_equal(bars["data"][0]["y"], [layer.kv_cache_bytes for layer in fp.per_layer])
    trace = hybrid.decode_trace(hybrid.HybridConfig(schedule=footprints.KIMI_LINEAR_SCHEDULE), 4, 0)
    np.testing.assert_array_equal(z_of(figure(at, "The same, every layer")["data"][0]), trace.bytes.T)


def test_a_lineage_error_becomes_a_message():
    def page():
        from lineage.teach import stage_runs
        from ui.common import run_or_stop

        run_or_stop(stage_runs.run_stage, "kda", T=10**6)

    at = AppTest.from_function(page).run()
    assert not at.exception
    assert "T must be" in at.error[0].value
