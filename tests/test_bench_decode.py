"""Live decode benchmark: sizes and the cap by hand, a tiny run's shape and sanity, refusals, reports."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from lineage.device import get_device
from lineage.measure import bench_decode
from lineage.measure.bench_decode import (
    BUDGETS,
    MEMORY_CAP,
    MIN_CONTEXT,
    context_cap,
    context_grid,
    format_table,
    kv_bytes,
    measure_copy_bandwidth,
    memory_cap,
    memory_estimate,
    run_decode_benchmark,
    to_json,
)

MiB = 2**20


@pytest.fixture(scope="module")
def tiny():
    """One tiny run on the current device, with every progress report kept."""
    reports = []
    result = run_decode_benchmark("tiny", progress=lambda f, message: reports.append((f, message)))
    return result, reports


# ---- sizes and the cap, by hand -------------------------------------------------------------------------------


def test_kv_bytes_by_hand():
    # 1000 tokens × 8 heads × (128 keys + 128 values) × 4 bytes
    assert kv_bytes(1000) == 1000 * 8 * 256 * 4 == 8_192_000
    assert kv_bytes(10, heads=2, head_dim=4) == 10 * 2 * 8 * 4


def test_memory_estimate_by_hand():
    # two copies of the cache + three H × N fp32 score tensors + an N-long bool mask
    assert memory_estimate(1000) == 2 * 8_192_000 + 3 * 8 * 1000 * 4 + 1000


def test_context_cap_is_the_largest_that_fits():
    for cap in (256 * MiB, 4 * 2**30, 123_456_789):
        n = context_cap(cap)
        assert memory_estimate(n) <= cap < memory_estimate(n + 1)
    assert context_cap(256 * MiB) == 16_287  # 268,435,456 // 16,481 bytes per token


def test_cpu_cap():
    assert memory_cap("cpu") == MEMORY_CAP["cpu"] == 256 * MiB


@pytest.mark.parametrize("largest, points", [(4096, 4), (16_287, 10), (300, 7), (50, 3), (1, 5)])
def test_context_grid_is_increasing_and_ends_at_the_largest(largest, points):
    grid = context_grid(largest, points)
    assert grid.dtype == np.int64
    assert np.all(np.diff(grid) > 0)
    assert grid[0] == min(MIN_CONTEXT, largest) and grid[-1] == largest
    assert len(grid) <= points


# ---- a tiny run ------------------------------------------------------------------------------------------------


def test_tiny_run_shapes_and_sanity(tiny):
    r, _ = tiny
    P, R = len(r.contexts), BUDGETS["tiny"].repeats
    assert r.device_type == get_device().type
    assert np.all(np.diff(r.contexts) > 0), "context lengths must increase"
    assert r.contexts[-1] == min(BUDGETS["tiny"].max_context, r.cap_context)
    assert r.kv_seconds.shape == r.kda_seconds.shape == r.gdn2_seconds.shape == r.read_seconds.shape == (P, R)
    assert r.copy_seconds.shape == (R,)
    timed = (("kv", r.kv_seconds), ("kda", r.kda_seconds), ("gdn2", r.gdn2_seconds))
    for name, x in (*timed, ("copy", r.copy_seconds), ("read", r.read_seconds)):
        assert np.all(np.isfinite(x)) and np.all(x > 0), f"{name} times must be positive"
    assert np.all(r.kv_ms > 0) and np.all(r.kda_ms > 0)
    np.testing.assert_allclose(r.gdn2_ms, np.median(r.gdn2_seconds, axis=1) * 1e3)
    assert r.copy_bytes_per_s > 0 and np.all(np.isfinite(r.kv_fraction_of_copy))
    assert r.memory_estimate_bytes <= r.cap_bytes


def test_tiny_run_derived_numbers(tiny):
    r, _ = tiny
    np.testing.assert_array_equal(r.kv_bytes_per_step, r.contexts * 8 * 256 * 4)
    np.testing.assert_allclose(r.kv_ms, np.median(r.kv_seconds, axis=1) * 1e3)
    np.testing.assert_allclose(r.kv_bytes_per_s, r.kv_bytes_per_step / np.median(r.kv_seconds, axis=1))
    assert r.copy_bytes_per_s == pytest.approx(2 * r.copy_size_bytes / np.median(r.copy_seconds))
    np.testing.assert_allclose(r.kv_fraction_of_copy, r.kv_bytes_per_s / r.copy_bytes_per_s)
    # the bound at each size: reading the cache's own bytes (the context − 1 tokens it holds before the step's append)
    held = (r.contexts - 1) * 8 * 256 * 4
    np.testing.assert_allclose(r.read_bytes_per_s, held / np.median(r.read_seconds, axis=1))
    np.testing.assert_allclose(r.kv_fraction_of_read, r.kv_bytes_per_s / r.read_bytes_per_s)
    np.testing.assert_allclose(r.kv_floor_ms, r.kv_bytes_per_step / r.read_bytes_per_s * 1e3)
    # a multiply and an add per cached fp32 number: 2 FLOPs per 4 bytes
    np.testing.assert_allclose(r.kv_flops_per_step / r.kv_bytes_per_step, 0.5)
    assert r.kda_state_bytes == 8 * 128 * 128 * 4


def test_progress_reports_increase_to_one(tiny):
    r, reports = tiny
    fractions = [f for f, _ in reports]
    assert len(reports) == len(r.contexts) + 1  # the copy test, then one per context
    assert all(0 < a < b for a, b in zip(fractions, fractions[1:], strict=False))
    assert fractions[-1] == pytest.approx(1.0)
    assert "GB/s" in reports[0][1] and f"{r.contexts[-1]:,}" in reports[-1][1]


def test_small_width_and_explicit_max_context():
    r = run_decode_benchmark("tiny", max_context=300, heads=2, head_dim=16, device="cpu")
    assert r.contexts[-1] == 300 and r.contexts[0] == MIN_CONTEXT
    assert r.kda_state_bytes == 2 * 16 * 16 * 4
    np.testing.assert_array_equal(r.kv_bytes_per_step, r.contexts * 2 * 32 * 4)


def test_copy_bandwidth_times():
    seconds = measure_copy_bandwidth(MiB, "cpu", warmup=1, repeats=4)
    assert seconds.shape == (4,) and np.all(seconds > 0)


# ---- refusals --------------------------------------------------------------------------------------------------


def test_refuses_context_over_the_cap():
    dev = get_device()
    cap_ctx = context_cap(memory_cap(dev))
    with pytest.raises(
        ValueError, match=rf"max_context={cap_ctx + 1:,} needs .* over the cap of .*at most {cap_ctx:,} tokens"
    ):
        run_decode_benchmark("tiny", max_context=cap_ctx + 1)


def test_cpu_refusal_names_the_cap():
    with pytest.raises(ValueError, match=r"on cpu, over the cap of 268 MB \(at most 16,287 tokens"):
        run_decode_benchmark("tiny", max_context=1_000_000, device="cpu")


def test_refuses_a_width_whose_one_token_exceeds_the_cap():
    with pytest.raises(ValueError, match="even one token"):
        run_decode_benchmark("tiny", heads=2**16, head_dim=2**12, device="cpu")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(budget="huge"), "budget must be one of 'tiny', 'standard', 'full'"),
        (dict(heads=0), "heads must be >= 1"),
        (dict(head_dim=-4), "head_dim must be >= 1"),
        (dict(max_context=0), "max_context must be >= 1"),
    ],
    ids=["budget", "heads", "head_dim", "max_context"],
)
def test_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_decode_benchmark(**{"budget": "tiny", **kwargs})


def test_does_not_run_when_refused(monkeypatch):
    calls = []
    monkeypatch.setattr(bench_decode, "measure_copy_bandwidth", lambda *a, **k: calls.append(a))
    with pytest.raises(ValueError):
        run_decode_benchmark("tiny", max_context=10**9, device="cpu")
    assert not calls


# ---- reports ---------------------------------------------------------------------------------------------------


def test_format_table_has_a_row_per_context(tiny):
    r, _ = tiny
    text = format_table(r)
    assert r.device_label in text and "GB/s" in text and f"{r.cap_context:,} tokens" in text
    rows = text.splitlines()[-len(r.contexts) :]
    assert "GDN-2 ms/token" in text
    for row, N, kv, kd, g2 in zip(rows, r.contexts, r.kv_ms, r.kda_ms, r.gdn2_ms, strict=True):
        cells = row.split()
        assert cells[0] == f"{N:,}" and cells[2] == f"{kv:.3f}" and cells[-2:] == [f"{kd:.3f}", f"{g2:.3f}"]


def test_to_json_round_trips(tiny):
    r, _ = tiny
    data = json.loads(json.dumps(to_json(r)))
    assert data["contexts"] == r.contexts.tolist()
    assert data["kv"]["ms_per_token"] == pytest.approx(r.kv_ms.tolist())
    assert data["kda"]["ms_per_token"] == pytest.approx(r.kda_ms.tolist())
    assert data["gated_deltanet2"]["ms_per_token"] == pytest.approx(r.gdn2_ms.tolist())
    assert data["gated_deltanet2"]["state_bytes"] == data["kda"]["state_bytes"] == r.kda_state_bytes
    assert data["copy"]["bytes_per_s"] == pytest.approx(r.copy_bytes_per_s)
    assert data["kv"]["fraction_of_copy"] == pytest.approx(r.kv_fraction_of_copy.tolist())
    assert data["kv"]["fraction_of_read"] == pytest.approx(r.kv_fraction_of_read.tolist())
    assert data["read"]["bytes_per_s"] == pytest.approx(r.read_bytes_per_s.tolist())
    assert data["settings"]["cap_context"] == r.cap_context
    assert data["device"]["threads"] == torch.get_num_threads()


def test_cli_decode_runs_at_the_chosen_threads_and_budget(tmp_path, capsys):
    from lineage.__main__ import main

    before = torch.get_num_threads()
    out = tmp_path / "decode.json"
    assert main(["bench", "decode", "--budget", "tiny", "--threads", "1", "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "running on" in captured.out and "GB/s" in captured.out
    assert "[100%] context" in captured.err  # progress, one line per context
    data = json.loads(out.read_text())
    assert data["settings"]["budget"] == "tiny" and data["device"]["threads"] == 1
    assert len(data["contexts"]) == len(data["kv"]["ms_per_token"]) >= 2
    assert torch.get_num_threads() == before
