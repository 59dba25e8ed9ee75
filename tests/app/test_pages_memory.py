"""Memory & cost and Live benchmark pages: they run, show what lineage computes, and turn nonsense into messages."""

from __future__ import annotations

import pytest

from lineage import plots, schedules
from lineage.measure import footprints
from lineage.measure.bench_decode import context_cap, kv_bytes
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
    for key in ("gpt2", "llama3-8b", "deepseek-v3", "kimi-linear-48b"):
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


def test_kimi_reduction_is_computed_next_to_the_claim(memory_page):
    shown = {m.label: m.value for m in memory_page.metric}
    baseline = footprints.footprint(footprints.all_mla("kimi-linear-48b"), MILLION)
    cache_cut = 1 - footprints.footprint("kimi-linear-48b", MILLION).kv_cache_bytes / baseline.kv_cache_bytes
    total_cut = footprints.reduction_vs_all_mla("kimi-linear-48b", MILLION)
    assert shown[f"saved, {ledger.SAVING_CACHE} (any length)"] == f"{cache_cut:.1%}" == "74.1%"  # 1 − 7/27
    assert shown[f"saved, {ledger.SAVING_TOTAL}, 1,048,576 tokens"] == f"{total_cut:.1%}"
    labels = list(shown)
    assert sum("1,048,576 tokens" in label and "saved" in label for label in labels) == 1  # at a million: once
    # the page's first screen: its claim and the cache-only saving, with the variant's words
    first = memory_page.metric[2]
    assert ledger.SAVING_CACHE in first.label and first.value == f"−{cache_cut:.1%}"
    other = run_page("memory_cost", memory_cost_len=4096)
    shown = {m.label: m.value for m in other.metric}
    assert shown[f"saved, {ledger.SAVING_TOTAL}, 1,048,576 tokens"] == f"{total_cut:.1%}"  # beside another length
    assert f"saved, {ledger.SAVING_TOTAL}, 4,096 tokens" in shown
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
    assert [t["name"] for t in figs[0]["data"]][:2] == ["KV-cache softmax step", "KDA recurrent step"]
    bandwidth, label = at.session_state["_measured_bandwidth"]
    assert bandwidth > 0 and "memory copy" in label

    at.switch_page("app_pages/memory_cost.py").run()
    assert not at.exception
    at.selectbox(key="memory_cost_bandwidth").set_value("measured").run()
    assert not at.exception
    row = rows_by_model(at)["Llama-3-8B"]
    expected = footprints.decode_time_lower_bound(
        footprints.footprint("llama3-8b", MILLION).read_bytes_per_token, bandwidth
    )
    assert row["floor, cache + state (ms/token)"] == pytest.approx(expected * 1e3)
