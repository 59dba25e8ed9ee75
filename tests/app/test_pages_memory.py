"""Memory & cost and Live benchmark pages: they run, show what lineage computes, and turn nonsense into messages."""

from __future__ import annotations

import numpy as np
import pytest

from lineage import plots, schedules
from lineage.measure import footprints
from lineage.measure.bench_decode import COLUMNS, context_cap, kv_bytes
from lineage.plots.memory import GPU_LINE_GROUP
from lineage.teach import ledger
from tests.app.util import figures, run_page
from ui.caps import benchmark_memory_bytes

H100 = footprints.GPU_PRESETS["h100-sxm"].bandwidth_bytes_per_s
MILLION = 2**20


def rows_by_model(at) -> dict:
    table = at.dataframe[0].value
    return {row["model"]: row for _, row in table.iterrows()}


def specs_on_page(at) -> dict[str, footprints.ModelSpec]:
    """MODELS plus the custom spec as the page's default widgets define it."""
    custom = footprints.custom_spec(32, 32, 8, 128, schedules.periodic_schedule(32, 4, base="kda", kind="gqa"))
    return {s.name: s for s in (*footprints.MODELS.values(), custom)}


# ---- Memory & cost ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def memory_page():
    return run_page("memory_cost")


def test_memory_page_runs_without_errors(memory_page):
    assert not memory_page.exception and not memory_page.error


def test_table_equals_footprint(memory_page):
    rows = rows_by_model(memory_page)
    specs = specs_on_page(memory_page)
    assert set(rows) == set(specs)
    for name, spec in specs.items():
        fp = footprints.footprint(spec, MILLION, "bf16")
        row = rows[name]
        assert row["KV cache (bytes)"] == fp.kv_cache_bytes
        assert row["state (bytes)"] == fp.state_bytes
        assert row["read per token (bytes)"] == fp.read_bytes_per_token
        floor = footprints.decode_time_lower_bound(fp.read_bytes_per_token, H100) * 1e3
        assert row["floor, cache + state (ms/token)"] == pytest.approx(floor)


def test_table_follows_length_and_dtype():
    at = run_page("memory_cost", memory_cost_len=4096, memory_cost_dtype="fp32")
    rows = rows_by_model(at)
    for key in ("gpt2", "llama3-8b", "deepseek-v3", "kimi-linear-48b", "kimi-k3"):
        fp = footprints.footprint(key, 4096, "fp32")
        assert rows[footprints.MODELS[key].name]["KV cache (bytes)"] == fp.kv_cache_bytes
    # by hand: Llama-3-8B, 4096 tokens × 2 × 32 layers × 8 KV heads × 128 × 4 bytes
    assert rows["Llama-3-8B"]["KV cache (bytes)"] == 4096 * 2 * 32 * 8 * 128 * 4


def test_chart_has_every_model_and_the_gpu_lines(memory_page):
    fig = figures(memory_page)[0]
    names = [t["name"] for t in fig["data"] if t.get("legendgroup") != GPU_LINE_GROUP]
    assert names == list(specs_on_page(memory_page))
    gpu = sorted(int(t["y"][0]) for t in fig["data"] if t.get("legendgroup") == GPU_LINE_GROUP)
    assert gpu == [24 * 10**9, 80 * 10**9, 141 * 10**9]
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    kimi = next(t for t in fig["data"] if t["name"] == "Kimi Linear 48B-A3B")
    expected = footprints.footprint("kimi-linear-48b", int(kimi["x"][-1])).total_bytes
    assert int(kimi["y"][-1]) == expected and kimi["text"][-1].startswith(f"{expected:,} bytes")


@pytest.mark.parametrize("key", ["kimi-linear-48b", "kimi-k3"])
def test_hybrid_reductions_are_computed_next_to_the_claim(memory_page, key):
    shown = {m.label: m.value for m in memory_page.metric}
    spec = footprints.MODELS[key]
    held = footprints.footprint(key, MILLION)
    baseline = footprints.footprint(footprints.all_mla(key), MILLION)
    cache_cut = 1 - held.kv_cache_bytes / baseline.kv_cache_bytes
    total_cut = footprints.reduction_vs_all_mla(key, MILLION)
    mha_cut = 1 - held.total_bytes / footprints.footprint(footprints.all_mha(key), MILLION).total_bytes
    n_mla = len(spec.layers_of("mla"))
    assert shown[f"{spec.name}: saved against all-MLA, {ledger.SAVING_CACHE} (any length)"] == f"{cache_cut:.1%}"
    assert f"{cache_cut:.1%}" == f"{1 - n_mla / spec.n_layers:.1%}"  # 1 − 7/27, 1 − 24/93
    assert shown[f"{spec.name}: saved against all-MLA, {ledger.SAVING_TOTAL}, 1,048,576 tokens"] == f"{total_cut:.1%}"
    assert shown[f"{spec.name}: saved against all-MHA, {ledger.SAVING_TOTAL}, 1,048,576 tokens"] == f"{mha_cut:.1%}"
    labels = [label for label in shown if label.startswith(f"{spec.name}: saved against all-MLA")]
    assert sum("1,048,576 tokens" in label for label in labels) == 1  # at a million: once
    other = run_page("memory_cost", memory_cost_len=4096)
    shown = {m.label: m.value for m in other.metric}
    assert shown[f"{spec.name}: saved against all-MLA, {ledger.SAVING_TOTAL}, 1,048,576 tokens"] == f"{total_cut:.1%}"
    assert f"{spec.name}: saved against all-MLA, {ledger.SAVING_TOTAL}, 4,096 tokens" in shown
    text = " ".join(m.value for m in memory_page.markdown)
    assert f"{n_mla} of {spec.n_layers} layers still cache" in text


def test_the_first_screen_states_the_claim(memory_page):
    cache_cut = ledger.hybrid_saving("kimi-linear-48b", MILLION).cache
    first = memory_page.metric[2]  # the page's first screen: its claim and the cache-only saving, in its words
    assert ledger.SAVING_CACHE in first.label and first.value == f"−{cache_cut:.1%}"
    k3 = {m.label: m.value for m in memory_page.metric}["Kimi K3: held per sequence"]
    assert k3 == plots.format_bytes(footprints.footprint("kimi-k3", MILLION).read_bytes_per_token)
    text = " ".join(m.value for m in memory_page.markdown)
    assert footprints.KIMI_PAPER_CLAIM.text in text and footprints.KIMI_PAPER_CLAIM.source in text


def test_sources_on_screen(memory_page):
    text = " ".join(m.value for m in memory_page.markdown)
    for spec in footprints.MODELS.values():
        assert spec.source in text
    for preset in footprints.GPU_PRESETS.values():
        assert preset.source in text


def test_per_layer_bars_follow_the_model():
    at = run_page("memory_cost")
    at.selectbox(key="memory_cost_layer_model").set_value("DeepSeek-V3").run()
    fig = figures(at)[1]
    cache = fig["data"][0]["y"]
    assert len(cache) == 61 and all(int(b) == MILLION * 576 * 2 for b in cache)
    at.selectbox(key="memory_cost_layer_model").set_value("Kimi K3").run()
    k3 = schedules.KIMI_K3_CONFIG
    cache, state = (np.asarray(trace["y"]) for trace in figures(at)[1]["data"])
    per_token = (k3["kv_lora_rank"] + k3["qk_rope_head_dim"]) * 2  # bf16
    mla = np.array([p in k3["full_attn_layers"] for p in range(1, k3["num_hidden_layers"] + 1)])
    assert (
        len(cache) == k3["num_hidden_layers"] and np.all(cache[mla] == MILLION * per_token) and np.all(cache[~mla] == 0)
    )
    assert np.all(state[~mla] == footprints.footprint("kimi-k3", MILLION).per_layer[0].state_bytes) and np.all(
        state[mla] == 0
    )


@pytest.mark.parametrize(
    "widget, value, field",
    [
        ("memory_cost_kv_heads", 64, "n_kv_heads"),  # more KV heads than heads
        ("memory_cost_kv_heads", 5, "n_kv_heads"),  # 32 heads don't split over 5
        ("memory_cost_layers", 0, "n_layers"),
        ("memory_cost_heads", -8, "n_heads"),
        ("memory_cost_head_dim", 0, "head_dim"),
    ],
    ids=["kv-over-heads", "not-dividing", "zero-layers", "negative-heads", "zero-head-dim"],
)
def test_custom_nonsense_is_a_message(widget, value, field):
    at = run_page("memory_cost")
    at.number_input(key=widget).set_value(value).run()
    assert not at.exception
    assert any(field in e.value for e in at.error), [e.value for e in at.error]
    # the real models are still drawn and tabled, without the custom one
    assert "custom" not in rows_by_model(at)
    assert len(figures(at)) >= 1


def test_absurd_length_is_a_message():
    at = run_page("memory_cost")
    at.number_input(key="memory_cost_len").set_value(2**40).run()
    assert not at.exception
    assert any("seq_len" in e.value and "Context length" in e.value for e in at.error)
    assert not at.dataframe and len(figures(at)) == 1  # the chart stays, the table waits for a valid length


# ---- Live benchmark ---------------------------------------------------------------------------------------------


def test_live_page_waits_for_the_button_and_shows_the_cap():
    at = run_page("live_benchmark")
    assert not figures(at)
    # before any run, the first screen states the claim with the bytes a step reads, computed, not measured
    (first,) = at.metric
    cap = context_cap(benchmark_memory_bytes())
    assert f"{cap:,} tokens" in first.label and "computed" in first.label
    assert first.value.startswith(plots.format_bytes(kv_bytes(cap)))
    info = " ".join(i.value for i in at.info)
    assert f"{context_cap(benchmark_memory_bytes()):,} tokens" in info  # ui.caps: on a CPU, below bench_decode's cap


def test_live_benchmark_tiny_run_shares_its_bandwidth():
    at = run_page("live_benchmark", live_benchmark_budget="tiny")
    at.button(key="live_benchmark_run").click().run()
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert "measured" in labels[0] and labels[1] == "memory copy"  # the claim's number first, then the details
    figs = figures(at)
    assert len(figs) == 2
    names = [t["name"] for t in figs[0]["data"]]
    assert names[:3] == ["KV-cache softmax step", "KDA recurrent step", "Gated DeltaNet-2 recurrent step"]
    kda, gdn2 = (np.asarray(figs[0]["data"][i]["y"], dtype=float) for i in (1, 2))  # the stage after the article
    ratio = float(np.median(gdn2 / kda))
    assert any(f"took {ratio:.2g}× KDA's time here" in m.value for m in at.markdown), "its sentence, measured"
    bandwidth, label = at.session_state["_measured_bandwidth"]
    assert bandwidth > 0 and "memory copy" in label
    # the numbers as a table, a row per context measured, the columns the command line prints
    (numbers,) = [d.value for d in at.dataframe if "KDA ms/token" in d.value.columns]
    assert list(numbers.columns) == list(COLUMNS) and len(numbers) == len(figs[0]["data"][1]["x"])
    assert numbers["KDA ms/token"].tolist() == pytest.approx(np.asarray(figs[0]["data"][1]["y"], dtype=float))

    at.switch_page("app_pages/memory_cost.py").run()
    assert not at.exception
    at.selectbox(key="memory_cost_bandwidth").set_value("measured").run()
    assert not at.exception
    row = rows_by_model(at)["Llama-3-8B"]
    expected = footprints.decode_time_lower_bound(
        footprints.footprint("llama3-8b", MILLION).read_bytes_per_token, bandwidth
    )
    assert row["floor, cache + state (ms/token)"] == pytest.approx(expected * 1e3)
