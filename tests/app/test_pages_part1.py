"""Home, GPT-2, KV cache, linear attention and DeltaNet in the app: each page follows its controls, animates as the
house rules say, and prints exactly what ``lineage`` computes for the same inputs.

One AppTest per page, walked through a few control changes, keeps this affordable on a small machine.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lineage import stages
from lineage.measure import footprints
from lineage.ops.io_cost import standard_attention_io_bytes, tiled_attention_io_bytes
from lineage.ops.kv_cache import KVCache
from lineage.plots.memory import short_title
from lineage.teach import stage_runs
from tests.app.util import figure, markdown_table, parse_markdown_table, rerun, run_page, z_of
from ui import common
from ui.nav import PAGES


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def frames_z(fig: dict, panel: int) -> np.ndarray:
    return np.stack([z_of(frame["data"][panel]) for frame in fig["frames"]])


def assert_fixed_colour_range(fig: dict) -> None:
    for i, first in enumerate(fig["data"]):
        ranges = {(f["data"][i]["zmin"], f["data"][i]["zmax"]) for f in fig["frames"]}
        assert ranges == {(first["zmin"], first["zmax"])}, f"panel {i} changes its colour range"


def checked(at) -> str:
    """The page's one line that checks the fast forms against the reference."""
    (line,) = [c.value for c in at.caption if c.value.startswith("Checked")]
    return line


def cache_nbytes(n_heads: int, head_dim: int, T: int) -> int:
    cache = KVCache(1, n_heads, head_dim, head_dim)
    cache.append(torch.zeros(1, n_heads, T, head_dim), torch.zeros(1, n_heads, T, head_dim))
    return cache.nbytes


def test_markdown_table_escapes_cells_and_reads_back():
    rows = [{"name": "a|b", "path": "C:\\x\\|y", "n": 3}, {"name": "two\nlines", "path": "", "n": 4.5}]
    text = common.markdown_table(rows)
    assert text.splitlines()[:2] == ["| name | path | n |", "|---|---|---|"]
    back = parse_markdown_table(text)
    assert back == [
        {"name": "a|b", "path": "C:\\x\\|y", "n": "3"},
        {"name": "two lines", "path": "", "n": "4.5"},
    ]
    with pytest.raises(ValueError, match="at least one row"):
        common.markdown_table([])


def test_home_page():
    at = run_page("home")
    rows = markdown_table(at, "Stage")
    assert [r["Stage"] for r in rows] == [s.title for s in stages.all_stages()]
    assert [r["Year"] for r in rows] == [str(s.year) for s in stages.all_stages()]
    assert [r["Memory mechanism"] for r in rows] == [s.summary for s in stages.all_stages()]
    assert [r["Problem solved"] for r in rows] == [s.problem_solved for s in stages.all_stages()]
    assert [r["Cost introduced"] for r in rows] == [s.cost_introduced for s in stages.all_stages()]
    assert not at.table and not at.dataframe  # the home page loads no Arrow table machinery before its chart

    ratio = footprints.lineage_ratio()
    assert metrics(at)["GPT-2s in one Kimi K3 (exact)"] == f"{ratio.ratio_to_computed:,.0f}"
    assert metrics(at)["GPT-2s in one Kimi K3 (nominal)"] == f"{int(ratio.ratio_to_nominal):,}"  # the article's
    assert any(f"**{int(ratio.ratio_to_nominal):,}**" in m.value for m in at.markdown)
    assert any("secondary source" in c.value for c in at.caption)

    registered = {entry.stage: entry for entry in PAGES if entry.stage}
    links = {link.proto.page for link in at.get("page_link")}
    assert links == {registered[s.key].url_path for s in stages.all_stages() if s.key in registered}
    assert len(stages.grid()) == 6

    chart = figure(at, "Bytes one layer holds")
    for s in stages.all_stages():  # every stage on exactly one line (stages holding the same bytes share one)
        (line,) = [trace for trace in chart["data"] if short_title(s.key) in trace["name"].split(" · ")]
        np.testing.assert_array_equal(line["y"], stages.memory_per_layer(s.key, np.asarray(line["x"])))
    # the hybrid's saving against the same layers all MLA, drawn beside it (the article's "−75%")
    (baseline,) = [trace for trace in chart["data"] if trace["name"].startswith("All-MLA")]
    hybrid = next(trace for trace in chart["data"] if trace["name"] == "Hybrid")
    cut = 1 - np.asarray(hybrid["y"])[-1] / np.asarray(baseline["y"])[-1]
    assert any(f"−{cut:.1%} against all-MLA" in a["text"] for a in chart["layout"]["annotations"])
    assert chart["layout"]["xaxis"]["type"] == chart["layout"]["yaxis"]["type"] == "log"


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


def test_kv_cache_page():
    at = run_page("kv_cache", kv_cache_inputs="random")
    run = stage_runs.run_softmax(32, 4, 16, 0, block_size=8)
    shown = metrics(at)
    assert shown["layer's cache after 32 tokens"] == f"{cache_nbytes(4, 16, 32):,} bytes" == "16,384 bytes"
    assert shown["one head's cache"] == f"{cache_nbytes(1, 16, 32):,} bytes"
    assert shown["tiled vs standard output"] == f"{run.err_tiled:.1e}"
    assert shown["bytes moved, standard"] == f"{standard_attention_io_bytes(32, 16).total:,}"
    assert shown["bytes moved, tiled"] == f"{tiled_attention_io_bytes(32, 16, block_size=8).total:,}"
    growth = figure(at, "Head 0's cache")
    assert len(growth["frames"]) == 32
    assert_fixed_colour_range(growth)
    np.testing.assert_allclose(frames_z(growth, 0)[-1], run.trace.keys.T, rtol=1e-6)
    traffic = figure(at, "Bytes in head 0's cache")
    np.testing.assert_array_equal(traffic["data"][0]["y"], run.trace.cache_bytes)
    tiles = figure(at, "Online softmax")
    assert len(tiles["frames"]) == len(run.tiled.q_block) == 10  # 4 query blocks: 1 + 2 + 3 + 4 tiles
    assert_fixed_colour_range(tiles)

    at.slider(key="kv_cache_T").set_value(24)
    at.slider(key="kv_cache_heads").set_value(2)
    at.select_slider(key="kv_cache_block").set_value(16)
    rerun(at)
    assert metrics(at)["layer's cache after 24 tokens"] == f"{cache_nbytes(2, 16, 24):,} bytes"
    assert len(figure(at, "Head 0's cache")["frames"]) == 24
    assert len(figure(at, "Online softmax")["frames"]) == 3  # blocks of 16 over 24 tokens: 1 + 2 tiles
    assert metrics(at)["bytes moved, tiled"] == f"{tiled_attention_io_bytes(24, 16, block_size=16).total:,}"

    at.query_params["kv_cache_step"] = "2"
    rerun(at)
    assert figure(at, "Head 0's cache")["layout"]["sliders"][0]["active"] == 2


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
