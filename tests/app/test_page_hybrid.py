"""The hybrid page (app_pages/hybrid.py): the bytes every layer holds, per layer and while decoding, are what
``lineage`` computes for the chosen schedule and context."""

from __future__ import annotations

import numpy as np

from lineage import plots, schedules
from lineage.measure import footprints
from lineage.models import hybrid
from lineage.teach import ledger
from tests.app.util import figure, metrics, rerun, run_page, z_of
from ui.caps import caps


def test_hybrid_page():
    at = run_page("hybrid", hybrid_T=12)
    schedule = schedules.periodic_schedule(8, 4)
    trace = hybrid.decode_trace(hybrid.HybridConfig(schedule=schedule), 12, 0)
    fp = footprints.footprint(footprints.kimi_linear_spec(schedule), 2**17)
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
    trace = hybrid.decode_trace(hybrid.HybridConfig(schedule=schedules.KIMI_LINEAR_SCHEDULE), 4, 0)
    np.testing.assert_array_equal(z_of(figure(at, "The same, every layer")["data"][0]), trace.bytes.T)


def test_hybrid_page_draws_kimi_k3_from_its_config():
    at = run_page("hybrid", hybrid_T=4)
    at.radio(key="hybrid_schedule").set_value("k3")
    at.select_slider(key="hybrid_context").set_value(2**20)
    rerun(at)
    k3 = schedules.KIMI_K3_CONFIG
    strip = figure(at, "Where the MLA layers sit: Kimi K3")
    assert list(strip["data"][0]["x"]) == list(k3["full_attn_layers"])  # 4, 8, …, 92, 93
    fp = footprints.footprint("kimi-k3", 2**20)
    bars = figure(at, "Kimi K3: bytes per layer")
    assert len(bars["data"][0]["y"]) == k3["num_hidden_layers"]
    np.testing.assert_array_equal(bars["data"][0]["y"], [layer.kv_cache_bytes for layer in fp.per_layer])
    shown = metrics(at)
    mla = ledger.hybrid_saving("kimi-k3", 2**20)
    mha = ledger.hybrid_saving("kimi-k3", 2**20, against="mha")
    assert shown[f"saved against all-MLA, {ledger.SAVING_TOTAL}"] == f"−{mla.total:.1%}"
    assert shown[f"saved against all-MHA, {ledger.SAVING_TOTAL}"] == f"−{mha.total:.1%}"
    assert shown["of which cache (grows)"] == plots.format_bytes(fp.kv_cache_bytes)
    text = " ".join(m.value for m in at.markdown)
    n_mla = len(k3["full_attn_layers"])
    assert f"{k3['num_hidden_layers'] - n_mla}:{n_mla}, not strictly 3:1" in text
    assert mla.text() in text and mha.text() in text
    assert any("secondary sources" in c.value and "inference-sim" in c.value for c in at.caption)


def test_choosing_kimi_k3_decodes_the_most_tokens_its_93_layers_may_instead_of_refusing():
    """The page opens at 24 tokens, which Kimi Linear's 27 layers decode; K3's 93 would pass the layers × tokens cap.
    Choosing K3 lowers the count to the most its stack may decode, and a cold link to K3 opens there too."""
    cap = caps().hybrid_layer_tokens
    fits = cap // schedules.KIMI_K3_CONFIG["num_hidden_layers"]
    at = run_page("hybrid")
    assert at.slider(key="hybrid_T").value == 24 and not at.error
    at.radio(key="hybrid_schedule").set_value("k3")
    rerun(at)
    assert not at.error, [e.value for e in at.error]
    assert at.slider(key="hybrid_T").value == fits
    decode = figure(at, "Bytes each layer holds while decoding")
    assert len(decode["frames"]) == fits and len(decode["frames"][-1]["data"][0]["y"]) == 24  # K3's 24 MLA layers
    at.radio(key="hybrid_schedule").set_value("kimi")
    rerun(at)
    assert at.slider(key="hybrid_T").value == fits and not at.error  # a smaller count stays as it was

    cold = run_page("hybrid", hybrid_schedule="k3")  # a fresh session opening on K3
    assert not cold.error and cold.slider(key="hybrid_T").value == fits
    assert len(figure(cold, "Bytes each layer holds while decoding")["frames"]) == fits


def test_the_schedule_strip_names_its_layer_count_once():
    """A custom stack's name already counts its layers ("Kimi Linear shapes, 8 layers (2 MLA)"): the strip's title
    says it once; a preset's name does not, and the title adds it."""
    at = run_page("hybrid", hybrid_T=4)
    title = figure(at, "Where the MLA layers sit")["layout"]["title"]["text"]
    assert title == "Where the MLA layers sit: Kimi Linear shapes, 8 layers (2 MLA)", title
    at.radio(key="hybrid_schedule").set_value("k3")
    rerun(at)
    title = figure(at, "Where the MLA layers sit")["layout"]["title"]["text"]
    assert title == "Where the MLA layers sit: Kimi K3, 93 layers", title
