"""The GPT-2 page (app_pages/gpt2.py): follows its controls, animates as the house rules say, and prints exactly
what ``lineage`` computes for the same inputs."""

from __future__ import annotations

import numpy as np

from lineage.teach import stage_runs
from tests.app.util import assert_fixed_colour_range, checked, figure, metrics, rerun, run_page, z_of


def test_gpt2_page():
    at = run_page("gpt2", gpt2_inputs="random")
    run = stage_runs.run_softmax(32, 4, 16, 0)
    shown = metrics(at)
    assert shown["Q/K/V rows projected, no cache"] == f"{run.rows_recompute:,}" == "528"
    assert shown["Q/K/V rows projected, with a cache"] == "32"
    assert f"{run.err_recompute:.1e}" in checked(at)
    attn = figure(at, "Head 0's attention")
    assert len(attn["frames"]) == 32
    assert_fixed_colour_range(attn)
    np.testing.assert_allclose(np.nan_to_num(z_of(attn["frames"][-1]["data"][0])), run.trace.attn, rtol=1e-6)
    cost = figure(at, "Work to generate each token")
    np.testing.assert_array_equal(cost["data"][0]["y"], run.cost.rows_recompute)

    at.slider(key="gpt2_T").set_value(20)
    at.slider(key="gpt2_heads").set_value(2)
    rerun(at)
    run = stage_runs.run_softmax(20, 2, 16, 0)
    attn = figure(at, "Head 0's attention")
    assert len(attn["frames"]) == 20
    np.testing.assert_allclose(np.nan_to_num(z_of(attn["frames"][-1]["data"][0])), run.trace.attn, rtol=1e-6)
    assert metrics(at)["Q/K/V rows projected, no cache"] == "210"

    at.query_params["gpt2_step"] = "4"  # where every move of the step (◀ / ▶, J / K, the slider, Play) is kept
    rerun(at)
    assert figure(at, "Head 0's attention")["layout"]["sliders"][0]["active"] == 4
    assert not any(m.value.startswith("**Step") for m in at.markdown)  # the animation alone shows the step
