"""`python -m lineage bench` (the ops benchmark): interleaved timing, what it measures, what it skips, its JSON."""

from __future__ import annotations

import json
import time

import pytest
import torch

from lineage import bench
from lineage.__main__ import main

CPU = torch.device("cpu")
SMALL = bench.BenchConfig(T=48, K=8, V=8, chunk_size=16, repeats=3, recurrent_repeats=2, decode_contexts=(16, 64))


def test_interleaved_medians_runs_each_form_its_own_number_of_times_in_rounds():
    calls: list[str] = []
    fns = {
        "slow": (lambda: calls.append("slow"), 2),
        "fast": (lambda: calls.append("fast"), 4),
    }
    medians = bench.interleaved_medians(fns, CPU, warmup=1)
    assert set(medians) == {"slow", "fast"}
    # one warm-up each, then rounds: slow runs in the first two rounds only, alternating with fast
    assert calls == ["slow", "fast", "slow", "fast", "slow", "fast", "fast", "fast"]
    assert all(m >= 0 for m in medians.values())


def test_interleaved_medians_are_medians_of_the_timed_runs():
    durations = iter([0.0, 0.03, 0.01, 0.02])  # warm-up, then three timed runs

    def sleeper():
        time.sleep(next(durations))

    medians = bench.interleaved_medians({"f": (sleeper, 3)}, CPU, warmup=1)
    assert 0.019 <= medians["f"] < 0.03


def test_bench_ops_times_every_mechanism_in_every_form_that_fits():
    timings = bench.bench_ops(SMALL, CPU)
    assert [t.op for t in timings] == [
        "linear_attention",
        "deltanet",
        "mamba2",
        "gla",
        "gated_deltanet",
        "kda",
    ]
    for t in timings:
        assert set(t.seconds) == {"recurrent", "chunk", "parallel"}
        assert all(s is not None and s > 0 for s in t.seconds.values()), (t.op, t.seconds)
        assert t.speedup == pytest.approx(t.seconds["recurrent"] / t.seconds["chunk"])


def test_bench_ops_skips_the_parallel_form_past_its_memory_limit(monkeypatch):
    # per-channel gates hold T×T×K numbers in the parallel form, scalar gates T×T: a limit between the two
    per_channel = bench._parallel_bytes(SMALL, "channel")
    monkeypatch.setattr(bench, "PARALLEL_MAX_BYTES", per_channel - 1)
    by_op = {t.op: t.seconds for t in bench.bench_ops(SMALL, CPU)}
    assert by_op["kda"]["parallel"] is None and by_op["gla"]["parallel"] is None
    assert by_op["gated_deltanet"]["parallel"] is not None and by_op["mamba2"]["parallel"] is not None


def test_cli_prints_the_table_and_writes_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench, "BenchConfig", lambda T=SMALL.T: SMALL)  # the CLI's --T still reaches the config
    out = tmp_path / "bench.json"
    assert main(["bench", "ops", "--T", "48", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "rec/chunk" in printed and "KDA chunk / Gated DeltaNet chunk" in printed
    data = json.loads(out.read_text())
    assert data["config"]["T"] == 48 and data["threads"] == torch.get_num_threads()
    ops = {o["op"]: o for o in data["ops"]}
    assert set(ops) == {"linear_attention", "deltanet", "mamba2", "gla", "gated_deltanet", "kda"}
    for o in ops.values():
        assert o["recurrent_over_chunk"] == pytest.approx(o["seconds"]["recurrent"] / o["seconds"]["chunk"])
    assert set(data["decode_step_seconds"]) == {"kda", "kv_cache"}
