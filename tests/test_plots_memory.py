"""Memory and benchmark figures: one line per model, log axes, GPU lines at their bytes, exact bytes in the hover."""

from __future__ import annotations

import numpy as np
import pytest

from lineage import plots
from lineage.measure.footprints import GPU_PRESETS, MODELS, kv_cache_curve
from lineage.plots.memory import COPY_LINE_GROUP, GPU_LINE_GROUP

LENS = np.array([1, 10, 100, 1000, 10_000, 100_000, 1_048_576], dtype=np.int64)
GPUS = {p.name: p.memory_bytes for p in GPU_PRESETS.values()}


@pytest.fixture(scope="module")
def cache_fig():
    series = {spec.name: kv_cache_curve(spec, LENS).total_bytes for spec in MODELS.values()}
    return plots.cache_vs_length(LENS, series, gpu_memory=GPUS, mark_len=4096), series


def test_format_bytes():
    assert plots.format_bytes(0) == "0 B"
    assert plots.format_bytes(999) == "999 B"
    assert plots.format_bytes(36_864) == "36.9 kB"
    assert plots.format_bytes(141 * 10**9) == "141 GB"
    assert plots.format_bytes(2.5e15) == "2.5 PB"
    with pytest.raises(ValueError, match="n must be a finite number of bytes >= 0"):
        plots.format_bytes(-1)


def test_one_line_per_model_with_its_bytes(cache_fig):
    fig, series = cache_fig
    models = [t for t in fig.data if t.legendgroup != GPU_LINE_GROUP]
    assert [t.name for t in models] == list(series)
    for t in models:
        np.testing.assert_array_equal(t.x, LENS)
        np.testing.assert_array_equal(t.y, series[t.name])


def test_log_log_axes_with_byte_ticks(cache_fig):
    fig, series = cache_fig
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    ticks = dict(zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext, strict=True))
    assert ticks[1e5] == "100 kB" and ticks[1e9] == "1 GB" and ticks[1e11] == "100 GB"
    smallest = min(int(y.min()) for y in series.values())
    assert min(ticks) <= smallest and max(ticks) >= 141 * 10**9  # every line and the H200 line are in range


def test_gpu_lines_at_their_bytes(cache_fig):
    fig, _ = cache_fig
    lines = {t.name: t for t in fig.data if t.legendgroup == GPU_LINE_GROUP}
    assert len(lines) == 3  # A100 80GB and H100 share the 80 GB line
    by_size = {int(t.y[0]): name for name, t in lines.items()}
    assert sorted(by_size) == [24 * 10**9, 80 * 10**9, 141 * 10**9]
    assert "A100 80GB SXM" in by_size[80 * 10**9] and "H100 SXM" in by_size[80 * 10**9]
    assert "H200" in by_size[141 * 10**9] and "141 GB" in by_size[141 * 10**9]
    for t in lines.values():
        assert t.y[0] == t.y[1]
        assert tuple(t.x) == (LENS[0], LENS[-1])


def test_hover_has_exact_bytes(cache_fig):
    fig, series = cache_fig
    gpt2 = next(t for t in fig.data if t.name == MODELS["gpt2"].name)
    # GPT-2 at 1000 tokens: 1000 × 36,864 bytes
    assert gpt2.text[3] == "36,864,000 bytes (36.9 MB)"
    assert "%{text}" in gpt2.hovertemplate and "%{x:,} tokens" in gpt2.hovertemplate
    for t in fig.data:
        for y, text in zip(t.y, t.text, strict=True):
            assert text.startswith(f"{int(y):,} bytes")


def test_mark_len_draws_a_vertical_line(cache_fig):
    fig, _ = cache_fig
    assert [s.x0 for s in fig.layout.shapes] == [4096]
    series = {"a": np.array([1, 2])}
    assert not plots.cache_vs_length(np.array([1, 2]), series).layout.shapes


def test_cache_chart_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match=r"series\['a'\] must have 3 entries"):
        plots.cache_vs_length(np.array([1, 2, 3]), {"a": np.array([1, 2])})
    with pytest.raises(ValueError, match="series must hold at least one model"):
        plots.cache_vs_length(np.array([1, 2, 3]), {})


def test_per_layer_bars():
    kinds = ["kda", "kda", "kda", "mla"]
    cache = np.array([0, 0, 0, 1152])
    state = np.array([10, 10, 10, 0])
    fig = plots.per_layer_bars(kinds, cache, state)
    assert fig.layout.barmode == "stack"
    assert [t.type for t in fig.data] == ["bar", "bar"]
    kv, st = fig.data
    np.testing.assert_array_equal(kv.x, [1, 2, 3, 4])
    np.testing.assert_array_equal(kv.y, cache)
    np.testing.assert_array_equal(st.y, state)
    assert list(kv.customdata) == kinds
    assert kv.text[3] == "1,152 bytes (1.15 kB)"
    # ticks read as bytes with an SI prefix ("1.2GB"), not Plotly's "1.2B" for a billion
    assert (fig.layout.yaxis.exponentformat, fig.layout.yaxis.ticksuffix) == ("SI", "B")
    with pytest.raises(ValueError, match="kinds must have 4 entries"):
        plots.per_layer_bars(kinds[:3], cache, state)


def test_decode_time_chart():
    ctx = np.array([128, 1024, 8192])
    fig = plots.decode_time_vs_context(
        ctx, {"KV": np.array([0.1, 0.8, 6.4]), "KDA": np.array([1.0, 1.0, 1.0])}, floor_ms=np.array([0.05, 0.4, 3.2])
    )
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert [t.name for t in fig.data][:2] == ["KV", "KDA"]
    np.testing.assert_array_equal(fig.data[2].y, [0.05, 0.4, 3.2])
    assert "ms/token" in fig.data[0].hovertemplate
    with pytest.raises(ValueError, match="floor_ms must have 3 entries"):
        plots.decode_time_vs_context(ctx, {"KV": np.ones(3)}, floor_ms=np.ones(2))


def test_bandwidth_fraction_chart():
    ctx = np.array([128, 1024, 8192])
    frac = np.array([0.2, 0.4, 0.6])
    fig = plots.bandwidth_fraction(ctx, frac, bound_bytes_per_s=10e9)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.tickformat == ".0%"
    np.testing.assert_array_equal(fig.data[0].y, frac)
    np.testing.assert_allclose(fig.data[0].customdata, frac * 10)  # GB/s achieved
    copy = next(t for t in fig.data if t.legendgroup == COPY_LINE_GROUP)
    assert tuple(copy.y) == (1.0, 1.0) and "10 GB/s" in copy.name
    per_size = plots.bandwidth_fraction(
        ctx, frac, bound_bytes_per_s=np.array([40e9, 30e9, 20e9]), bound_name="reading the same bytes"
    )
    np.testing.assert_allclose(per_size.data[0].customdata, frac * [40, 30, 20])  # each point against its own bound
    assert "reading the same bytes (20–40 GB/s)" in per_size.data[1].name
    with pytest.raises(ValueError, match="bound_bytes_per_s must be positive and finite"):
        plots.bandwidth_fraction(ctx, frac, bound_bytes_per_s=0.0)
