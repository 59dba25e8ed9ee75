"""The KDA page (app_pages/kda.py): one gate per key channel and what each keeps of token 0's write, against Gated
DeltaNet with the matched scalar gate, are what ``lineage`` computes; with equal gates KDA is Gated DeltaNet."""

from __future__ import annotations

import math

import numpy as np
import torch

from lineage.ops.kda import bounded_gate
from lineage.schedules import KIMI_K3_CONFIG
from lineage.teach import stage_runs
from tests.app.util import figure, frames_z, metrics, rerun, run_page, z_of


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


def test_kda_page_shows_what_k3s_gate_bound_does():
    """On the story (the gate closes to α = 0 at the switch) the bound keeps e^-5 where the unbounded gate wipes; the
    smallest α and both retention maps are what lineage computes from K3's config value."""
    at = run_page("kda")
    bound = KIMI_K3_CONFIG["gate_lower_bound"]
    shown = metrics(at)
    assert shown["smallest α on this run, no bound"] == "0.0000"  # the story's switch wipes
    assert shown[f"smallest α with the bound ({bound:g})"] == f"{math.exp(bound):.4f}" == "0.0067"
    free, capped = (z_of(tr) for tr in figure(at, "With and without the bound")["data"])
    decay = z_of(figure(at, "KDA: one gate per key channel")["data"][0])  # [K, T] α, so g = log α
    with np.errstate(divide="ignore"):
        g = np.log(decay.T)
    g_bounded = bounded_gate(torch.from_numpy(g.astype(np.float64)), bound).numpy()
    np.testing.assert_allclose(free, stage_runs.retention(g)[0].T, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(capped, stage_runs.retention(g_bounded)[0].T, rtol=1e-5, atol=1e-7)
    assert (capped >= free - 1e-9).all() and capped.min() > 0 == free.min()  # the bound never forgets more
    assert any(f"gate_lower_bound` {bound:g}" in m.value and "fp32" in m.value for m in at.markdown)
