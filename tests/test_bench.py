"""`python -m lineage bench` (the ops benchmark): the sweep, the gates, the FLOP model, threads, progress, output.

Tiny shapes throughout: these tests check what is timed and what is reported, never how fast anything is.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics

import pytest
import torch

from lineage.__main__ import main
from lineage.device import cpu_model
from lineage.inputs import GateDraw
from lineage.measure import bench, timing
from lineage.measure.bench import (
    BenchConfig,
    busy_warning,
    chunk_flop_model,
    format_result,
    gate_draws,
    run_bench,
    sweep_plan,
)
from lineage.mechanisms import LayerOptions, Mechanism, linear_mechanisms, registered
from lineage.ops import native, recurrence
from lineage.ops.mamba2 import mamba2
from lineage.ops.recurrence import default_chunk_size

TINY = BenchConfig(T=24, K=8, V=8, chunk_size=8, repeats=1, recurrent_repeats=1, matmul_repeats=1)
TINY_ARGS = ["--T", "24", "--K", "8", "--V", "8", "--chunk-size", "8", "--repeats", "1", "--recurrent-repeats", "1"]
STRENGTHS = ["logσ(x)/16", "logσ(x)/4", "logσ(x)/1", "logσ(x)/0.25", "logσ(x)/1 + 5% wipes"]


def toy_mechanism(op, key: str = "toy_fixed_gate") -> Mechanism:
    """An eighth linear mechanism for the registry: the additive rule with a scalar gate, run by ``op``."""
    return Mechanism(
        key=key,
        title="Toy fixed gate",
        year=2026,
        paper="none (a test entry)",
        url="https://example.org",
        rule="additive",
        gate="scalar",
        colour="#123456",
        stage="mamba2",
        layer=LayerOptions(gate_form="softplus"),
        op=op,
    )


@pytest.fixture(scope="module")
def tiny_run():
    messages: list[str] = []
    return run_bench(TINY, progress=messages.append), messages


# ---- the sweep -------------------------------------------------------------------------------------------------


def test_gated_ops_are_swept_over_every_strength_and_wipes_ungated_once():
    plan = sweep_plan(BenchConfig())
    by_op: dict[str, list[str]] = {}
    for m, draw in plan:
        by_op.setdefault(m.key, []).append("none" if draw is None else draw.label)
    assert list(by_op) == [m.key for m in linear_mechanisms()]
    assert set(by_op) == {"linear_attention", "deltanet", "mamba2", "gla", "gated_deltanet", "kda", "gated_deltanet2"}
    assert by_op["linear_attention"] == by_op["deltanet"] == ["none"]
    for key in ("mamba2", "gla", "gated_deltanet", "kda", "gated_deltanet2"):
        assert by_op[key] == STRENGTHS, key


def test_the_sweep_reads_the_registry_when_called():
    with registered(toy_mechanism(mamba2)):
        keys = [m.key for m, _ in sweep_plan(TINY)]
    assert keys.count("toy_fixed_gate") == len(STRENGTHS)
    assert "toy_fixed_gate" not in [m.key for m, _ in sweep_plan(TINY)]


def test_no_wipes_when_the_wipe_fraction_is_zero():
    assert [d.label for d in gate_draws(BenchConfig(normalisers=(2,), wipe_fraction=0))] == ["logσ(x)/2"]


@pytest.mark.parametrize("n, mean", [(16, -0.0504), (4, -0.2016), (1, -0.8063), (0.25, -3.2252)])
def test_gate_strength_sets_the_mean_log_decay(n, mean):
    # E[log σ(x)] for x ~ N(0, 1) is -0.8063 (numerical integration), divided by n
    g = GateDraw(n).draw((2, 4, 4096, 8), torch.Generator().manual_seed(0))
    assert g.shape == (2, 4, 4096, 8)
    assert torch.all(g <= 0) and torch.all(torch.isfinite(g))
    assert float(g.mean()) == pytest.approx(mean, rel=0.02)


@pytest.mark.parametrize("shape", [(2, 3, 200), (2, 3, 200, 5)], ids=["scalar", "channel"])
def test_wipes_erase_five_percent_of_positions_in_every_head(shape):
    g = GateDraw(1, 0.05).draw(shape, torch.Generator().manual_seed(1))
    wiped = torch.isneginf(g)
    if len(shape) == 4:  # a wipe erases every channel of its position
        assert torch.equal(wiped.all(-1), wiped.any(-1))
        wiped = wiped[..., 0]
    assert torch.all(wiped.sum(-1) == 10)  # round(0.05 · 200) in each (batch, head)
    assert torch.all(torch.isfinite(g[~torch.isneginf(g)]))


def test_every_op_accepts_the_wiped_gates_and_stays_finite():
    x = bench._inputs(TINY, torch.device("cpu"))
    for m in linear_mechanisms():
        shape = (TINY.B, TINY.H, TINY.T) + ((TINY.K,) if m.gate == "channel" else ())
        g = GateDraw(1, 0.25).draw(shape, torch.Generator().manual_seed(2))
        for mode in ("chunk", "recurrent"):
            o, _ = bench._call(m, x, g, TINY.T, mode=mode, chunk_size=8)
            assert torch.all(torch.isfinite(o)), (m.key, mode)


# ---- the FLOP model --------------------------------------------------------------------------------------------


def test_flop_model_by_hand():
    # T = 8, C = 4: two chunks; K = 2, V = 3. Per chunk: A_qk 2·16·2 = 64, A_kk 64, the 4×4 unit lower-triangular
    # inverse 20 (column j needs 1 + 2 + … + (3 − j) multiply-adds: 6 + 3 + 1 = 10, 2 FLOPs each),
    # U 2·16·3 = 96, W 2·16·2 = 64, W S 2·4·2·3 = 48, state update 48, output 48 (inter) + 96 (intra)
    delta = chunk_flop_model("delta", T=8, K=2, V=3, C=4)
    assert delta == {
        "A_qk": 128,
        "A_kk": 128,
        "solve": 40,
        "U = T V": 192,
        "W = T (K ⊙ e^G)": 128,
        "W S": 96,
        "state update": 96,
        "output inter-chunk": 96,
        "output intra-chunk": 192,
    }
    additive = chunk_flop_model("additive", T=8, K=2, V=3, C=4)
    assert additive == {"A_qk": 128, "state update": 96, "output inter-chunk": 96, "output intra-chunk": 192}


def test_flop_model_pads_to_whole_chunks_and_caps_the_chunk_at_T():
    assert sum(chunk_flop_model("delta", T=9, K=2, V=3, C=4).values()) == 3 * 548  # ⌈9 / 4⌉ = 3 chunks
    assert chunk_flop_model("additive", T=5, K=2, V=2, C=64) == chunk_flop_model("additive", T=5, K=2, V=2, C=5)


def test_flop_model_at_the_default_shape_matches_the_closed_form():
    # D = K = V = C: every product term is 2·D³, eight of them, plus the inverse (D³ − D)/3 per chunk;
    # the additive rule keeps four of the products: 8·D³
    D, N = 64, 4096 // 64
    assert sum(chunk_flop_model("delta", 4096, D, D, D).values()) == N * (16 * D**3 + (D**3 - D) // 3)
    assert sum(chunk_flop_model("additive", 4096, D, D, D).values()) == N * 8 * D**3


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(rule="gated", T=8, K=2, V=2, C=4), "rule must be one of 'additive', 'delta', got 'gated'"),
        (dict(rule="delta", T=0, K=2, V=2, C=4), "T must be >= 1"),
        (dict(rule="delta", T=8, K=2, V=2, C=0), "C must be >= 1"),
    ],
    ids=["rule", "T", "C"],
)
def test_flop_model_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        chunk_flop_model(**kwargs)


# ---- a run -----------------------------------------------------------------------------------------------------


def test_a_run_times_every_cell_and_derives_its_numbers(tiny_run):
    r, _ = tiny_run
    assert [(c.op, c.gate) for c in r.cells] == [(m.key, "none" if d is None else d.label) for m, d in sweep_plan(TINY)]
    for c in r.cells:
        assert c.chunk_seconds > 0 and c.recurrent_seconds > 0
        assert c.speedup == pytest.approx(c.recurrent_seconds / c.chunk_seconds)
        model = chunk_flop_model(c.rule, TINY.T, TINY.K, TINY.V, TINY.chunk_size)
        assert c.flops == TINY.B * TINY.H * sum(model.values())
        assert c.gflops == pytest.approx(c.flops / c.chunk_seconds / 1e9)
        assert r.fraction_of_matmul(c) == pytest.approx(c.gflops / r.baseline.total_gflops)
        assert (c.mean_log_alpha is None) == (c.gate_kind == "none")
    strong = next(c for c in r.cells if c.op == "kda" and c.gate == "logσ(x)/0.25")
    mild = next(c for c in r.cells if c.op == "kda" and c.gate == "logσ(x)/16")
    assert strong.mean_log_alpha < 10 * mild.mean_log_alpha < 0


def test_the_matmul_baseline_is_timed_before_and_after_the_sweep(tiny_run):
    r, _ = tiny_run
    b = r.baseline
    assert set(b.shapes) == set(b.flops) == set(b.seconds)
    assert all(len(ts) == 2 * TINY.matmul_repeats and min(ts) > 0 for ts in b.seconds.values())
    N, Z = 3, TINY.B * TINY.H * 3  # T = 24 in chunks of 8
    assert b.flops["decayed products"] == 2 * Z * 8 * 8 * 8
    assert b.flops["per-chunk state products"] == 2 * N * TINY.B * TINY.H * 8 * 8 * 8
    medians = [statistics.median(ts) for ts in b.seconds.values()]
    assert b.total_gflops == pytest.approx(sum(b.flops.values()) / sum(medians) / 1e9)


def test_progress_reports_every_round_with_elapsed_and_remaining_time():
    messages: list[str] = []
    cfg = dataclasses.replace(TINY, repeats=3, recurrent_repeats=2)
    r = run_bench(cfg, progress=messages.append)
    n = len(r.cells)
    assert len(messages) == 1 + 3 and r.rounds == r.planned_rounds == 3 and r.complete
    assert messages[0].startswith(f"{n} cells") and "1 torch thread" in messages[0]
    for i, msg in enumerate(messages[1:], start=1):
        assert msg.startswith(f"[round {i}/3] {n} cells, each form timed once more; ")
        assert " elapsed, about " in msg and msg.endswith(" left")
    assert messages[-1].endswith("about 0.0 s left")


def test_threads_are_set_for_the_run_and_restored():
    seen: list[int] = []

    def recording_op(q, k, v, g, **kw):
        seen.append(torch.get_num_threads())
        return mamba2(q, k, v, g, **kw)

    before = torch.get_num_threads()
    cfg = BenchConfig(
        T=16, K=4, V=4, chunk_size=8, threads=before + 1, repeats=1, recurrent_repeats=1, matmul_repeats=1
    )
    with registered(toy_mechanism(recording_op)):
        r = run_bench(cfg)
    assert seen and set(seen) == {before + 1}
    assert torch.get_num_threads() == before
    assert f"torch threads {before + 1} of " in format_result(r)


def test_a_busy_machine_is_warned_about_when_more_than_one_thread_is_asked_for(monkeypatch):
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (7.5, 7.0, 6.0))
    monkeypatch.setattr(bench.os, "cpu_count", lambda: 2)
    messages: list[str] = []
    run_bench(
        BenchConfig(T=8, K=4, V=4, chunk_size=4, threads=2, repeats=1, recurrent_repeats=1, matmul_repeats=1),
        messages.append,
    )
    assert messages[1].startswith("warning: load average 7.5 on 2 cores leaves fewer than 2 cores free")
    assert "--threads 1" in messages[1]
    assert busy_warning(1, 2, 7.5) is None  # one thread: nothing to wait for
    assert busy_warning(2, 16, 3.0) is None  # cores to spare
    assert busy_warning(4, 8, 5.0) is not None
    assert busy_warning(2, 2, None) is None  # no load average on this OS: no guess


def test_the_recurrent_form_on_a_prefix_is_timed_there_and_scaled(monkeypatch):
    """With recurrent_T, the recurrent form runs on the first recurrent_T steps and its time is scaled to T."""

    class StepClock:  # each step an op runs takes one second; anything else a millisecond
        now = 0.0

        def perf_counter(self):
            self.now += 1e-3
            return self.now

    clock = StepClock()
    lengths: list[tuple[str, int]] = []

    def stepping_op(q, k, v, g, *, mode, **kw):
        lengths.append((mode, q.shape[2]))
        clock.now += q.shape[2]
        return mamba2(q, k, v, g, mode=mode, **kw)

    monkeypatch.setattr(timing, "time", clock)
    cfg = BenchConfig(T=32, K=4, V=4, chunk_size=8, recurrent_T=8, repeats=1, recurrent_repeats=1, matmul_repeats=1)
    with registered(toy_mechanism(stepping_op)):
        r = run_bench(cfg)
    toy = [c for c in r.cells if c.op == "toy_fixed_gate"]
    assert {length for mode, length in lengths if mode == "recurrent"} == {8}
    assert {length for mode, length in lengths if mode == "chunk"} == {32}
    for c in toy:  # 32 steps; 8 steps timed, × 4
        assert c.chunk_seconds == pytest.approx(32.001) and c.recurrent_seconds == pytest.approx(4 * 8.001)
    assert "timed on the first 8 of 32 steps and scaled by 4" in format_result(r)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(T=0), "T must be >= 1"),
        (dict(threads=0), "threads must be >= 1"),
        (dict(recurrent_T=100, T=64), "recurrent_T must be <= 64"),
        (dict(normalisers=()), "normalisers must be one or more positive numbers"),
        (dict(normalisers=(1, -2)), "normalisers must be one or more positive numbers"),
        (dict(wipe_fraction=1.0), r"wipe_fraction must be in \[0, 1\)"),
        (dict(dtype="fp16"), "dtype must be one of 'fp32', 'bf16', 'fp64', got 'fp16'"),
    ],
    ids=["T", "threads", "recurrent_T", "no-normalisers", "negative-normaliser", "wipe_fraction", "dtype"],
)
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BenchConfig(**kwargs)


# ---- output ----------------------------------------------------------------------------------------------------


def test_table_has_one_row_per_cell_and_says_how_it_was_measured(tiny_run):
    r, _ = tiny_run
    text = format_result(r)
    assert f"torch threads 1 of {r.cores} cores" in text and f"torch {torch.__version__}" in text
    assert text.startswith(f"device cpu ({cpu_model()}); ")  # the CPU's model: a CPU's timings depend on it
    assert "B=1 H=4 T=24 K=8 V=8 fp32, chunk 8" in text and "interleaved rounds" in text
    assert "scaled by" not in text  # the recurrent form ran on the whole T
    assert f"{r.baseline.total_gflops:.1f} GFLOP/s" in text
    rows = [line for line in text.splitlines() if line.split() and line.split()[0] in {c.op for c in r.cells}]
    assert len(rows) == len(r.cells)
    for row, c in zip(rows, r.cells, strict=True):
        assert row.startswith(f"{c.op:<18}{c.gate:<24}")
        cells = row[42:].split()
        assert cells[1] == f"{c.chunk_seconds * 1e3:.1f}" and cells[2] == f"{c.recurrent_seconds * 1e3:.1f}"
        assert cells[3] == f"{c.speedup:.1f}x" and cells[5] == f"{r.fraction_of_matmul(c):.0%}"
    assert "slowest gate strength / fastest: mamba2" in text
    assert "KDA chunk / Gated DeltaNet chunk: logσ(x)/16" in text
    schemes = next(line for line in text.splitlines() if line.startswith("decays inside a chunk"))
    gated = [m for m in linear_mechanisms() if m.chunk_decays is not None]
    assert gated and all(m.key in schemes for m in gated)


def test_the_report_says_how_the_chunked_form_ran(tiny_run, monkeypatch):
    r, _ = tiny_run
    assert native.status().detail.startswith("compiled C++")
    assert r.native_form == f"steps 2-5 as {native.status().detail}"
    assert f"chunked form ran: {r.native_form}" in format_result(r).splitlines()
    assert r.to_json()["native_form"] == r.native_form
    assert bench.native_form(torch.device("meta")) == "Python form: the compiled code is for a CPU"
    monkeypatch.setattr(recurrence, "NATIVE_CHUNKS", False)
    assert bench.native_form(torch.device("cpu")) == (
        f"steps 2-5 in Python (NATIVE_CHUNKS is off), the per-channel products as {native.status().detail}"
    )
    monkeypatch.setattr(recurrence, "NATIVE_ANCHORS", False)
    assert bench.native_form(torch.device("cpu")) == (
        "Python form: lineage.ops.recurrence.NATIVE_CHUNKS and NATIVE_ANCHORS are off"
    )
    monkeypatch.setattr(native, "_loaded", lambda: (None, native.Status(False, "Python form: no C++ compiler")))
    monkeypatch.setattr(recurrence, "NATIVE_CHUNKS", True)
    assert bench.native_form(torch.device("cpu")) == "Python form: no C++ compiler"


def test_the_python_form_runs_without_the_compiled_code_and_the_knob_is_restored(monkeypatch):
    monkeypatch.setattr(native, "anchored", lambda *a: pytest.fail("the compiled products ran under --native python"))
    monkeypatch.setattr(native, "chunk_steps", lambda *a: pytest.fail("the compiled steps ran under --native python"))
    r = run_bench(dataclasses.replace(TINY, native="python", repeats=1, recurrent_repeats=1))
    assert r.native_form == "Python form, asked for (bench --native python)"
    assert not native.forced_python() and native.steps_usable(torch.zeros(1, 2, 64))
    assert any(c.gate_kind == "channel" for c in r.cells)
    with pytest.raises(ValueError, match="native must be one of 'compiled', 'python', got 'fast'"):
        BenchConfig(native="fast")


def test_the_decay_schemes_line_groups_the_ops_by_the_tables_scheme():
    text = bench.decay_schemes(["mamba2", "kda", "gated_deltanet", "gla", "linear_attention", "not_in_the_table"])
    assert text == "segment sum products: mamba2, gated_deltanet; anchored products: kda, gla"


def test_a_row_past_the_spread_limit_is_marked_as_a_slow_regime(tiny_run):
    r, _ = tiny_run
    gated = [c for c in r.cells if c.op == "gated_deltanet"]
    fastest = min(c.chunk_seconds for c in gated)
    # one strength made 2x slower than the op's fastest, one just inside the limit, the others at the fastest (so the
    # op's fastest stays the same whichever strength ran fastest in this run): only the first is marked
    slow, inside = gated[0], gated[1]
    cells = [
        dataclasses.replace(c, chunk_seconds=2 * fastest)
        if c is slow
        else dataclasses.replace(c, chunk_seconds=fastest * 1.4)
        if c is inside
        else dataclasses.replace(c, chunk_seconds=fastest)
        if c.op == "gated_deltanet"
        else c
        for c in r.cells
    ]
    changed = dataclasses.replace(r, cells=cells)
    marked = {c.gate for c in changed.cells if c.op == "gated_deltanet" and changed.slow_regime(c)}
    assert slow.gate in marked and inside.gate not in marked
    text = format_result(changed)
    row = next(line for line in text.splitlines() if line.startswith(f"{'gated_deltanet':<18}{slow.gate:<24}"))
    assert row.endswith(f"<< {changed.over_fastest(cells[r.cells.index(slow)]):.2f}x its fastest strength")
    assert not any("<<" in line for line in text.splitlines() if line.startswith(f"{'linear_attention':<18}"))
    data = changed.to_json()["cells"]
    assert [c["slow_regime"] for c in data] == [changed.slow_regime(c) for c in changed.cells]
    assert f"more than {bench.SPREAD_LIMIT:g}x slower" in text


def test_the_default_strengths_are_the_one_recipe_of_lineage_inputs():
    from lineage.inputs import GATE_STRENGTHS

    assert [d.label for d in gate_draws(BenchConfig())] == [d.label for d in GATE_STRENGTHS]


def test_cli_prints_the_table_writes_json_and_reports_progress(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", *TINY_ARGS, "--threads", "1", "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "rec/chunk" in captured.out and "% of matmul" in captured.out
    n = len(sweep_plan(TINY))  # 2 ungated ops once, 5 gated ones at every strength
    last = linear_mechanisms()[-1].key
    assert f"[round 1/1] {n} cells" in captured.err
    assert [c["op"] for c in json.loads(out.read_text())["cells"]][-1] == last
    data = json.loads(out.read_text())
    assert data["config"]["T"] == 24 and data["threads"] == 1 and data["torch"] == torch.__version__
    assert data["recurrent_scaled_from_T"] is None
    assert len(data["cells"]) == n
    for c in data["cells"]:
        assert c["recurrent_over_chunk"] == pytest.approx(c["seconds"]["recurrent"] / c["seconds"]["chunk"])
        assert c["gflops"] == pytest.approx(c["flops"] / c["seconds"]["chunk"] / 1e9)
        assert c["fraction_of_matmul"] == pytest.approx(c["gflops"] / data["matmul_baseline"]["gflops"])
    assert {c["gate"] for c in data["cells"] if c["op"] == "gla"} == set(STRENGTHS)
    assert math.isfinite(data["wall_seconds"])


def test_cli_gate_strengths_and_dtype_reach_the_sweep(tmp_path, capsys):
    out = tmp_path / "bench.json"
    args = [*TINY_ARGS, "--normalisers", "2", "0.5", "--wipe-fraction", "0", "--dtype", "bf16", "--json", str(out)]
    assert main(["bench", *args]) == 0
    assert "T=24 K=8 V=8 bf16, chunk 8" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["config"]["dtype"] == "bf16"
    gated = [m.key for m in linear_mechanisms() if m.gate != "none"]
    assert [(c["op"], c["gate"]) for c in data["cells"] if c["gate_kind"] != "none"] == [
        (key, gate) for key in gated for gate in ("logσ(x)/2", "logσ(x)/0.5")
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--threads", "0"], "--threads must be >= 1, got 0"),
        (["--T", "16", "--recurrent-T", "32"], "recurrent_T must be <= 16, got 32"),
        (["--chunk-size", "0"], "chunk_size must be >= 1, got 0"),
        (["--normalisers", "4", "0"], "normalisers must be one or more positive numbers, got (4.0, 0.0)"),
    ],
    ids=["threads", "recurrent_T", "chunk_size", "normalisers"],
)
def test_cli_refuses_bad_settings_with_a_message(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_help_states_the_expected_run_time(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "it took 27 s on a quiet 2-core CPU" in text and "expect under a minute" in text and "--threads" in text


def test_without_a_chunk_size_the_bench_takes_the_devices_and_says_so():
    cfg = BenchConfig(T=24, K=8, V=8, H=1, repeats=1, recurrent_repeats=1, matmul_repeats=1, normalisers=(1,))
    r = run_bench(cfg)
    assert r.config.chunk_size == default_chunk_size("cpu")
    assert f"chunk {default_chunk_size('cpu')} (this device's default)" in format_result(r)
    explicit = run_bench(dataclasses.replace(cfg, chunk_size=8))
    assert "chunk 8;" in format_result(explicit) and "default" not in format_result(explicit).splitlines()[1]


def test_ctrl_c_keeps_the_cells_already_timed_and_says_the_result_is_incomplete():
    """Ctrl-C between rounds: every cell is kept with the medians of the rounds done, the result marked incomplete,
    in the table and the JSON."""
    seen = []

    def progress(message: str) -> None:
        seen.append(message)
        if message.startswith("[round 1/"):
            raise KeyboardInterrupt

    cfg = dataclasses.replace(TINY, repeats=2, recurrent_repeats=2)
    result = run_bench(cfg, progress=progress)
    planned = len(sweep_plan(cfg))
    assert len(result.cells) == planned and result.rounds == 1 and result.planned_rounds == 2
    assert not result.complete and result.to_json()["complete"] is False
    assert result.to_json()["cells_planned"] == planned and result.to_json()["rounds"] == 1
    assert f"interrupted: {planned} of {planned} cells timed, 1 of 2 rounds" in format_result(result)
    assert seen[-1] == f"interrupted: {planned} of {planned} cells timed, 1 of 2 rounds"
    assert run_bench(TINY).complete


def test_ctrl_c_inside_a_round_keeps_the_cells_timed_in_both_forms():
    # the toy op, timed last, is interrupted on its first timed call: every cell before it has both forms timed once
    calls = []

    def op(q, k, v, g, **kw):
        calls.append(kw.get("mode"))
        if len(calls) > 2 * len(STRENGTHS):  # after its warm-up (one call of each form at every strength)
            raise KeyboardInterrupt
        return mamba2(q, k, v, g, **kw)

    with registered(toy_mechanism(op)):
        result = run_bench(TINY)
        planned = len(sweep_plan(TINY))
    assert [c.op for c in result.cells] == [m.key for m, _ in sweep_plan(TINY)][: planned - len(STRENGTHS)]
    assert not result.complete and result.rounds == 0
    assert f"interrupted: {planned - len(STRENGTHS)} of {planned} cells timed, 0 of 1 rounds" in format_result(result)


def test_an_ops_gate_strengths_are_timed_in_the_same_interleaved_rounds():
    # the spread between strengths is measured in rounds over all of an op's cells, so the machine's drift cannot
    # make one strength look slower: chunked calls go strength 1, 2, …, 5, then 1, 2, …, 5 again (after a warm-up)
    calls: list[tuple[float, str]] = []

    def op(q, k, v, g, **kw):
        calls.append((float(g.double().clamp_min(-50).mean()), kw.get("mode", "chunk")))
        return mamba2(q, k, v, g, **kw)

    cfg = dataclasses.replace(TINY, repeats=3, recurrent_repeats=2)
    with registered(toy_mechanism(op)):
        r = run_bench(cfg)
    chunked = [strength for strength, mode in calls if mode == "chunk"]
    strengths = list(dict.fromkeys(chunked))
    assert len(strengths) == len(STRENGTHS)
    assert chunked == strengths * (1 + cfg.repeats)  # the warm-up round, then the timed rounds, each over all five
    recurrent = [strength for strength, mode in calls if mode == "recurrent"]
    assert recurrent == strengths * (1 + cfg.recurrent_repeats)
    assert [c.gate for c in r.cells if c.op == "toy_fixed_gate"] == STRENGTHS


def test_the_cpu_model_is_the_os_name_for_it_or_says_it_is_unknown(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Example CPU 9000 @ 2GHz\nmodel name\t: other\n")
    real_open = open

    def fake_open(path, *args, **kwargs):
        return real_open(cpuinfo if path == "/proc/cpuinfo" else path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    assert cpu_model() == "Example CPU 9000 @ 2GHz"
    cpuinfo.unlink()  # no /proc/cpuinfo (not Linux): the platform's name, else "unknown CPU"
    monkeypatch.setattr("platform.processor", lambda: "")
    assert cpu_model() == "unknown CPU"
