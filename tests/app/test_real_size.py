"""The "At real size" section of every linear-memory stage page (ui.real_size): drawn at a tiny size, off until asked,
and held to each kind of device's caps (ui.caps: scale_T, scale_head_dims, scale_heads)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from lineage.mechanisms import linear_mechanisms
from lineage.ops.recurrence import default_chunk_size
from lineage.teach import real_size
from tests.app.util import ROOT, TIMEOUT, decode, z_of
from ui import caps as app_caps

STAGES = [m.key for m in linear_mechanisms()]  # each has its own page, at its own key
CHARTS = ("scale_first", "scale_norms", "scale_rows", "scale_outputs")


def open_link(page: str, params: dict[str, str]) -> AppTest:
    """A fresh session opening ``/<page>?<params>``: the app shell's first run, then the page."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def charts(at: AppTest) -> dict[str, dict]:
    return {c.key: decode(json.loads(c.proto.spec)) for c in at.get("plotly_chart")}


def notices(at: AppTest) -> list[str]:
    """What the page says about link values it could not use as given (ui.links)."""
    return [w.value for w in at.warning if "link" in w.value]


def test_a_stage_page_draws_its_run_at_a_tiny_real_size():
    """KDA at T = 256, K = V = 32 and the link's seed: the exact first steps, the summaries, the times and bytes."""
    at = open_link("kda", {"seed": "3", "kda_scale_run": "true", "kda_scale_T": "256", "kda_scale_head_dim": "32"})
    assert not at.error, [e.value for e in at.error]
    heads = app_caps.caps().scale_heads
    expected = real_size.run_at_scale("kda", 256, 32, heads, seed=3)  # the same seeded inputs on this CPU
    n = real_size.segment_ends(256, default_chunk_size("cpu")).size
    shown = charts(at)
    assert all(f"kda_{name}" in shown for name in CHARTS), list(shown)
    first = shown["kda_scale_first"]
    assert len(first["frames"]) == expected.n_first == 32
    np.testing.assert_allclose(z_of(first["frames"][-1]["data"][-1]), expected.first_states[-1], rtol=1e-6)
    rows = z_of(shown["kda_scale_rows"]["data"][0])
    assert rows.shape == (32, n) and np.allclose(rows, expected.row_norms.T, rtol=1e-6)
    norms = shown["kda_scale_norms"]["data"]
    assert len(norms) == heads and all(len(t["x"]) == n for t in norms)
    np.testing.assert_allclose(np.asarray(norms[0]["y"], dtype=float), expected.state_norm[0], rtol=1e-6)
    labels = [m.label for m in at.metric]
    assert "one call of the op" in labels and "tokens per second" in labels
    assert any("256 tokens and 4 heads" in m.help for m in at.metric if m.label == "one call of the op")
    kv = next(m.value for m in at.metric if m.label == "KV cache of 256 tokens")
    assert kv == f"{heads * 256 * 64 * 4 / 1e3:.3g} kB"  # heads × T × (K + V) × 4 bytes
    said = [m.value for m in at.markdown if m.value.startswith("**What is drawn.**")]
    assert len(said) == 1 and "first 32 steps" in said[0] and f"({n} points for 256 steps" in said[0], said
    assert any("seed 3" in c.value and "matches one call" in c.value for c in at.caption)


def test_the_section_waits_until_asked():
    at = open_link("gla", {})
    assert at.toggle(key="gla_scale_run").value is False
    assert not [key for key in charts(at) if "scale" in key]
    assert any(c.value.startswith("Turn on **Run at real size**") for c in at.caption)


@pytest.fixture(params=app_caps.DEVICE_KINDS)
def kind(request, monkeypatch):
    """The app's caps as on each kind of device (the page itself still runs on this machine's CPU)."""
    monkeypatch.setattr(app_caps, "device_kind", lambda device=None: request.param)
    return request.param


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_page_holds_the_real_size_run_to_the_devices_caps(stage, kind):
    """A link asking for a billion tokens and a head dim no device offers: T is clamped to this kind's cap and the
    head dim refused, each said on the page naming the link's value."""
    cap = app_caps.DEVICE_CAPS[kind]
    at = open_link(stage, {f"{stage}_scale_T": "1000000000", f"{stage}_scale_head_dim": "256"})
    slider = at.slider(key=f"{stage}_scale_T")
    assert slider.max == cap.scale_T and slider.value == cap.scale_T
    radio = at.radio(key=f"{stage}_scale_head_dim")
    assert radio.options == [str(d) for d in cap.scale_head_dims] and radio.value == max(cap.scale_head_dims)
    said = notices(at)
    assert any(
        f"` {stage}_scale_T ` = ` 1000000000 `" in n and f"Real-size T is set to {cap.scale_T:,}" in n for n in said
    )
    assert any(
        f"` {stage}_scale_head_dim ` = ` 256 `" in n and "not one of that control's values" in n for n in said
    ), said
    assert any(f"Real-size T is capped at {cap.scale_T:,}" in c.value for c in at.caption)
    assert not [key for key in charts(at) if "scale" in key]  # nothing ran: the section waits to be turned on


def test_a_gpu_offers_what_a_cpu_refuses(monkeypatch):
    cpu, gpu = app_caps.DEVICE_CAPS["cpu"], app_caps.DEVICE_CAPS["gpu"]
    assert gpu.scale_T >= 10_000 and gpu.scale_T > cpu.scale_T  # tens of thousands of tokens through the chunked form
    assert 128 in gpu.scale_head_dims and max(cpu.scale_head_dims) < 128 and min(gpu.scale_head_dims) >= 64
    T, K = 2 * cpu.scale_T, max(gpu.scale_head_dims)
    link = {"deltanet_scale_T": str(T), "deltanet_scale_head_dim": str(K)}
    at = open_link("deltanet", link)
    assert at.slider(key="deltanet_scale_T").value == cpu.scale_T
    assert at.radio(key="deltanet_scale_head_dim").value == max(cpu.scale_head_dims)
    assert any("` deltanet_scale_head_dim `" in n for n in notices(at)), notices(at)
    monkeypatch.setattr(app_caps, "device_kind", lambda device=None: "gpu")
    at = open_link("deltanet", link)
    assert at.slider(key="deltanet_scale_T").value == T and at.radio(key="deltanet_scale_head_dim").value == K
    assert not [n for n in notices(at) if "deltanet_scale" in n]


def test_a_run_that_cannot_be_made_is_said_and_the_page_goes_on(monkeypatch):
    def refuse(*args, **kwargs):
        raise ValueError("K must be <= 8, got 32")

    monkeypatch.setattr(real_size, "run_at_scale", refuse)
    at = open_link("mamba2", {"mamba2_scale_run": "true", "mamba2_scale_T": "768", "mamba2_scale_head_dim": "32"})
    assert [e.value for e in at.error] == ["Can't run this: K must be <= 8, got 32"]
    assert not [key for key in charts(at) if "scale" in key]
    assert any(h.value == "What to notice" for h in at.subheader)  # the rest of the page still ran
