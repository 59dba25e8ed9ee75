"""``python -m lineage bench``: how fast each linear-memory op runs, chunked against recurrent, at every gate strength.

Every op of the linear family (the mechanisms of :mod:`lineage.mechanisms` that have a write rule) is timed in its
chunked and its recurrent form at one shape (default B=1, H=4, T=4096, K=V=64, fp32 inputs, chunks of the device's
default length: 32 on a CPU, 64 on a GPU, see :func:`lineage.ops.recurrence.default_chunk_size`). The gated ops are
timed at several gate strengths, because the chunked form's cost can depend on how strongly the gates decay:

    g = log σ(x) / n,  x ~ N(0, 1),  n ∈ {16, 4, 1, 0.25}     mean log-α ≈ −0.05, −0.2, −0.8, −3.2 per step
    the same at n = 1 with 5 % of positions wiped (g = −inf: the state is erased there)

(n = 16 gives the mild decay this benchmark used to draw alone; stronger decay, n = 1 and below, also occurs in
trained models and in fla's tests, and is where a chunked form's cost can change.) The ungated ops (linear
attention, DeltaNet) are timed once.

For each chunked form it also reports its throughput in GFLOP/s against a FLOP model of the chunked algorithm
(:func:`chunk_flop_model`), and that throughput as a share of what ``torch.bmm`` reaches on the same shapes in the
same run (:func:`matmul_baseline`): a chunked form made of matrix products cannot do much better than the matrix
products alone, so the share says how much of the machine it uses.

Not here: the parallel (T×T) form, which the stage pages time at their small sizes, and decoding one token,
which ``python -m lineage bench decode`` (:mod:`lineage.measure.bench_decode`) measures against the context length.

Timing: :mod:`lineage.measure.timing`. Every cell's two forms, of every op at every gate strength, are timed in the
same interleaved rounds (median of several after a warm-up round), so the machine's drift hits them all alike: the
ratio of the forms, the spread between strengths and the ratio of one op to another are steadier than any one time.
The machine may be shared and noisy: compare ratios within a run, not absolute times across runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from lineage.checks import positive_int
from lineage.device import cpu_model, device_info, get_device
from lineage.inputs import GATE_STRENGTHS, GateDraw, draw_unit_gates, random_inputs
from lineage.measure.timing import Timed, interleaved_times
from lineage.mechanisms import Mechanism, linear_mechanisms, write_rule
from lineage.ops import native, recurrence
from lineage.ops.recurrence import default_chunk_size

ProgressFn = Callable[[str], None]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp64": torch.float64}
NATIVE_FORMS = ("compiled", "python")  # BenchConfig.native


@dataclass(frozen=True)
class BenchConfig:
    """One benchmark run. The defaults are the issue's shape; smaller ones make a quick run (and the tests)."""

    B: int = 1
    H: int = 4
    T: int = 4096
    K: int = 64
    V: int = 64
    chunk_size: int | None = (
        None  # None: the device's (lineage.ops.recurrence.default_chunk_size), resolved by run_bench
    )
    dtype: str = "fp32"  # of the inputs: "fp32" | "bf16" | "fp64" (ops compute bf16 in fp32, fp64 in fp64)
    threads: int = 1  # torch intra-op threads; 1 keeps a shared 2-core machine usable and the times steady
    repeats: int = 15  # chunked form: median of this many interleaved rounds, after one warm-up (cheap: ~1 s a round)
    recurrent_repeats: int = 3  # the reference loop takes ~0.2 s per call at the default shape
    recurrent_T: int | None = None  # time the recurrent form on this prefix of T and scale by T / recurrent_T
    # g = log σ(x) / n for each n, then the wiped gates: the strengths of lineage.inputs.GATE_STRENGTHS by default
    normalisers: tuple[float, ...] = tuple(d.normaliser for d in GATE_STRENGTHS if not d.wipe_fraction)
    wipe_normaliser: float = next(d.normaliser for d in GATE_STRENGTHS if d.wipe_fraction)  # the wiped gates' n ...
    wipe_fraction: float = next(d.wipe_fraction for d in GATE_STRENGTHS if d.wipe_fraction)  # ... and g = −inf's share
    matmul_repeats: int = 5  # the bmm baseline: median of this many, measured before and after the sweep
    seed: int = 0
    # the chunked form's compiled code (lineage.ops.native: steps 2-5, the per-channel products), where it can run:
    # "compiled", or "python" (the Python form, native.python_form() around the run), to time one against the other
    native: str = "compiled"

    def __post_init__(self):
        for name in ("B", "H", "T", "K", "V", "threads", "repeats", "recurrent_repeats"):
            positive_int(name, getattr(self, name))
        if self.chunk_size is not None:
            positive_int("chunk_size", self.chunk_size)
        positive_int("matmul_repeats", self.matmul_repeats)
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(map(repr, DTYPES))}, got {self.dtype!r}")
        if self.recurrent_T is not None:
            positive_int("recurrent_T", self.recurrent_T, maximum=self.T)
        if not self.normalisers or any(not (n > 0 and math.isfinite(n)) for n in self.normalisers):
            raise ValueError(f"normalisers must be one or more positive numbers, got {self.normalisers}")
        if not (self.wipe_normaliser > 0 and math.isfinite(self.wipe_normaliser)):
            raise ValueError(f"wipe_normaliser must be a positive number, got {self.wipe_normaliser}")
        if not 0 <= self.wipe_fraction < 1:
            raise ValueError(
                f"wipe_fraction must be in [0, 1) (0 leaves out the wiped gates), got {self.wipe_fraction}"
            )
        if self.native not in NATIVE_FORMS:
            raise ValueError(f"native must be one of {', '.join(map(repr, NATIVE_FORMS))}, got {self.native!r}")


# ---------------------------------------------------------------------------------------------------------------
# What is timed: the ops and the gates
# ---------------------------------------------------------------------------------------------------------------


SPREAD_LIMIT = 1.5  # a gated op's slowest strength over its fastest above this marks the row: a slow regime


def gate_draws(cfg: BenchConfig) -> list[GateDraw]:
    """The gate strengths of a run (:class:`lineage.inputs.GateDraw`, drawn in fp32): one per normaliser, then the
    wiped gates (unless ``wipe_fraction`` is 0)."""
    draws = [GateDraw(n) for n in cfg.normalisers]
    if cfg.wipe_fraction:
        draws.append(GateDraw(cfg.wipe_normaliser, cfg.wipe_fraction))
    return draws


# ---------------------------------------------------------------------------------------------------------------
# The FLOP model and the matmul baseline
# ---------------------------------------------------------------------------------------------------------------


def chunk_flop_model(rule: str, T: int, K: int, V: int, C: int) -> dict[str, int]:
    """FLOPs of the chunked form for one head, term by term (sum the values for the total).

    Per chunk of C steps (a multiply-add is 2 FLOPs; every C×C product is counted in full, as a dense matrix
    product computes it, not halved for its triangle; elementwise work — exponentials of the gates, masks, the
    decay applied to S — is not counted):

        A_kk[i, j] = Σ_c k_ic k_jc e^(G_ic − G_jc)
                                      2·C²·K     delta rule only (the decayed key products, used below the diagonal)
        A_qk[i, j] = Σ_c q_ic k_jc e^(G_ic − G_jc)
                                      2·C²·K     (used on and below the diagonal)
        T = (I + StrictTril(diag(β) A_kk))⁻¹ diag(β)
                                      C·(C² − 1)/3  delta rule: the inverse of a unit lower-triangular C×C
                                                 matrix by substitution (≈ C³/3, as LAPACK counts its trtri),
                                                 since :func:`lineage.ops.recurrence.ut_transform` forms T itself
        U = T V                       2·C²·V     delta rule
        W = T (K ⊙ e^G)               2·C²·K     delta rule
        u = U − W S                   2·C·K·V    delta rule (additive: u = V)
        S ← e^{G_C} S + (K ⊙ e^{G_C − G})ᵀ u
                                      2·C·K·V
        O = (Q ⊙ e^G) S + A_qk u      2·C·K·V + 2·C²·V

    T is padded to whole chunks (N = ⌈T / C⌉), as the chunked form pads it; C is min(C, T).
    Linear attention's normaliser (one extra value column) is not counted.

    Args:
        rule: a write rule's key ("additive", "delta"; the terms it adds are its ``WriteRule.write_flops``).
        T: sequence length; K, V: key and value width; C: chunk size.

    Returns:
        {term: FLOPs for the whole sequence, one head}, in the order above.
    """
    writes = write_rule(rule)  # the rule's own terms: lineage.mechanisms.WriteRule.write_flops
    for name, x in (("T", T), ("K", K), ("V", V), ("C", C)):
        positive_int(name, x)
    C = min(C, T)
    N = -(-T // C)
    per_chunk = {"A_qk": 2 * C * C * K}
    per_chunk |= writes.write_flops(C, K, V)
    per_chunk |= {
        "state update": 2 * C * K * V,
        "output inter-chunk": 2 * C * K * V,
        "output intra-chunk": 2 * C * C * V,
    }
    return {term: N * flops for term, flops in per_chunk.items()}


@dataclass(frozen=True)
class MatmulBaseline:
    """``torch.bmm`` on the chunked form's main product shapes: what the machine's matrix products reach."""

    shapes: dict[str, str]  # product -> its shapes, e.g. "[Z, C, K] × [Z, K, C]"
    flops: dict[str, int]  # product -> FLOPs of one timed call
    seconds: dict[str, list[float]]  # product -> every timed call (before and after the sweep)

    def __add__(self, other: MatmulBaseline) -> MatmulBaseline:
        """The timed calls of two measurements of the same products, pooled."""
        return MatmulBaseline(self.shapes, self.flops, {p: ts + other.seconds[p] for p, ts in self.seconds.items()})

    def gflops(self, product: str) -> float:
        return self.flops[product] / statistics.median(self.seconds[product]) / 1e9

    @property
    def total_gflops(self) -> float:
        """All the products together: total FLOPs over the sum of their median times."""
        return sum(self.flops.values()) / sum(statistics.median(s) for s in self.seconds.values()) / 1e9


def _baseline_products(cfg: BenchConfig, device: torch.device) -> tuple[dict[str, Timed], dict[str, str], dict]:
    """The bmm calls of the baseline, their shapes and FLOPs, on random operands of the ops' compute dtype."""
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    dtype = torch.float64 if cfg.dtype == "fp64" else torch.float32  # the ops compute bf16 inputs in fp32
    C = min(cfg.chunk_size, cfg.T)
    N = -(-cfg.T // C)
    BH, K, V = cfg.B * cfg.H, cfg.K, cfg.V
    Z = BH * N

    def rand(*shape):
        return torch.randn(*shape, generator=gen).to(device, dtype)

    a, b = rand(Z, C, K), rand(Z, K, C)
    p, u = rand(Z, C, C), rand(Z, C, V)
    # the hand-off: one [BH, C, K] × [BH, K, V] product per chunk, in sequence (the state is needed by the next)
    w, s = rand(N, BH, C, K), rand(BH, K, V)

    def handoff():
        for n in range(N):
            torch.bmm(w[n], s)

    forms = {
        "decayed products": Timed(lambda: torch.bmm(a, b), cfg.matmul_repeats),
        "products × values": Timed(lambda: torch.bmm(p, u), cfg.matmul_repeats),
        "per-chunk state products": Timed(handoff, cfg.matmul_repeats),
    }
    shapes = {
        "decayed products": f"[{Z}, {C}, {K}] × [{Z}, {K}, {C}]",
        "products × values": f"[{Z}, {C}, {C}] × [{Z}, {C}, {V}]",
        "per-chunk state products": f"{N} × ([{BH}, {C}, {K}] × [{BH}, {K}, {V}])",
    }
    flops = {
        "decayed products": 2 * Z * C * C * K,
        "products × values": 2 * Z * C * C * V,
        "per-chunk state products": 2 * N * BH * C * K * V,
    }
    return forms, shapes, flops


def matmul_baseline(cfg: BenchConfig, device: torch.device) -> MatmulBaseline:
    """Time the baseline products: ``cfg.matmul_repeats`` interleaved calls of each, after a warm-up."""
    forms, shapes, flops = _baseline_products(cfg, device)
    return MatmulBaseline(shapes, flops, interleaved_times(forms, device))


# ---------------------------------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Cell:
    """One op at one gate strength: median seconds of its chunked and recurrent forms, and what follows from them."""

    op: str
    rule: str
    gate_kind: str  # "none" | "scalar" | "channel"
    gate: str  # the draw's label, or "none" for an ungated op
    mean_log_alpha: float | None  # mean of the finite g (None for an ungated op)
    chunk_seconds: float
    recurrent_seconds: float  # for the whole T (scaled from recurrent_T when that is set)
    flops: int  # chunk_flop_model total for B·H heads

    @property
    def speedup(self) -> float:
        """Recurrent time over chunked time."""
        return self.recurrent_seconds / self.chunk_seconds

    @property
    def gflops(self) -> float:
        """The chunked form's throughput in its own FLOP count."""
        return self.flops / self.chunk_seconds / 1e9


@dataclass
class BenchResult:
    config: BenchConfig
    device: str
    cores: int | None
    torch_version: str
    load_average: float | None  # 1-minute load average when the run started (None where the OS has none)
    baseline: MatmulBaseline
    cells: list[Cell]
    wall_seconds: float
    planned: int = 0  # cells the sweep was to time; fewer in ``cells`` when it was interrupted (Ctrl-C)
    rounds: int = 0  # timed rounds that finished (every cell's forms called once more in each)
    planned_rounds: int = 0  # the rounds the sweep was to run; fewer in ``rounds`` when it was interrupted
    native_form: str = ""  # how the chunked form's compiled parts ran (:func:`native_form`)

    @property
    def complete(self) -> bool:
        return len(self.cells) >= self.planned and self.rounds >= self.planned_rounds

    def fraction_of_matmul(self, cell: Cell) -> float:
        return cell.gflops / self.baseline.total_gflops

    def over_fastest(self, cell: Cell) -> float:
        """The cell's chunked time over its op's fastest gated cell of this run (1.0 for an ungated op)."""
        same = [c.chunk_seconds for c in self.cells if c.op == cell.op and c.gate_kind != "none"]
        return cell.chunk_seconds / min(same) if same and cell.gate_kind != "none" else 1.0

    def slow_regime(self, cell: Cell) -> bool:
        """The cell runs more than :data:`SPREAD_LIMIT` times slower than its op at its fastest gate strength."""
        return self.over_fastest(cell) > SPREAD_LIMIT

    def to_json(self) -> dict:
        b = self.baseline
        return {
            "config": asdict(self.config),
            "device": self.device,
            "threads": self.config.threads,
            "cores": self.cores,
            "torch": self.torch_version,
            "load_average": self.load_average,
            "wall_seconds": self.wall_seconds,
            "complete": self.complete,
            "cells_planned": self.planned,
            "rounds": self.rounds,
            "rounds_planned": self.planned_rounds,
            "recurrent_scaled_from_T": self.config.recurrent_T,
            "native_form": self.native_form,
            "matmul_baseline": {
                "gflops": b.total_gflops,
                "products": {
                    name: {
                        "shapes": b.shapes[name],
                        "flops": b.flops[name],
                        "seconds": b.seconds[name],
                        "gflops": b.gflops(name),
                    }
                    for name in b.shapes
                },
            },
            "cells": [
                {
                    "op": c.op,
                    "rule": c.rule,
                    "gate_kind": c.gate_kind,
                    "gate": c.gate,
                    "mean_log_alpha": c.mean_log_alpha,
                    "seconds": {"chunk": c.chunk_seconds, "recurrent": c.recurrent_seconds},
                    "recurrent_over_chunk": c.speedup,
                    "flops": c.flops,
                    "gflops": c.gflops,
                    "fraction_of_matmul": self.fraction_of_matmul(c),
                    "over_fastest_strength": self.over_fastest(c),
                    "slow_regime": self.slow_regime(c),
                }
                for c in self.cells
            ],
        }


def _inputs(cfg: BenchConfig, device: torch.device) -> dict[str, torch.Tensor]:
    """q, k, v and β of every cell (:func:`lineage.inputs.random_inputs`, drawn in fp32 from ``cfg.seed``), then any
    unit gates an op takes (U[0, 1) in their shapes), in the run's dtype on ``device``."""
    gen = torch.Generator().manual_seed(cfg.seed)
    x = random_inputs(cfg.B, cfg.H, cfg.T, cfg.K, cfg.V, gen, dtype=torch.float32)
    sizes = {"B": cfg.B, "H": cfg.H, "T": cfg.T, "K": cfg.K, "V": cfg.V}
    gates = {u.name: u for m in linear_mechanisms() for u in m.unit_gates}  # Gated DeltaNet-2's, once each
    x |= draw_unit_gates(list(gates.values()), sizes, gen, dtype=torch.float32)
    return {name: t.to(device, DTYPES[cfg.dtype]) for name, t in x.items() if name != "initial_state"}


def _call(m: Mechanism, x: dict[str, torch.Tensor], g: torch.Tensor | None, T: int, **kw):
    """Run ``m``'s op on the first T steps of the inputs (the registry passes g and beta where the op takes them)."""
    q, k, v, beta = (x[name][:, :, :T] for name in ("q", "k", "v", "beta"))
    own = {u.name: x[u.name][:, :, :T] for u in m.unit_gates}  # tensors of its contract beside g and β
    return m.call(q, k, v, None if g is None else g[:, :, :T], beta, **own, **kw)


def sweep_plan(cfg: BenchConfig) -> list[tuple[Mechanism, GateDraw | None]]:
    """Every (mechanism, gate) pair a run times, in lineage order: ungated ones once, gated ones at each strength.

    The mechanisms are those of the registry's linear family (:func:`lineage.mechanisms.linear_mechanisms`) at the
    time of the call, so a mechanism added to the registry is benchmarked with no change here.
    """
    draws = gate_draws(cfg)
    return [(m, d) for m in linear_mechanisms() for d in (draws if m.takes("g") else [None])]


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def run_bench(cfg: BenchConfig = BenchConfig(), progress: ProgressFn | None = None) -> BenchResult:
    """Time every cell of :func:`sweep_plan` with ``cfg.threads`` torch threads (restored afterwards).

    ``progress`` receives one line per step: which op and gate, its times, elapsed and estimated remaining time.
    """
    report = progress or (lambda message: None)
    device = get_device()
    if cfg.chunk_size is None:
        cfg = dataclasses.replace(cfg, chunk_size=default_chunk_size(device))
    threads_before = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        with native.python_form() if cfg.native == "python" else contextlib.nullcontext():
            return _run(cfg, device, report)
    finally:
        torch.set_num_threads(threads_before)


def busy_warning(threads: int, cores: int | None, load: float | None) -> str | None:
    """A warning when ``threads`` > 1 cannot all have a core: the load already takes more than cores − threads.

    Each of the recurrent loop's T steps is a handful of tiny operations, and with several threads every one of
    them waits until all threads have run; when other processes hold the cores, that wait is a scheduler time slice
    per operation. Measured on a 2-core machine at load 3-10: 2 threads made the recurrent form 4-70x slower and
    the default sweep took 14 minutes; 1 thread, 41 s.
    """
    if threads == 1 or cores is None or load is None or load + threads <= cores:
        return None
    return (
        f"warning: load average {load:.1f} on {cores} cores leaves fewer than {threads} cores free; with "
        f"{threads} threads every small step waits for a busy core, so the recurrent form can run 4-70x slower "
        "and the sweep take many minutes. --threads 1 (the default) or --recurrent-T keep it short."
    )


def _device_name(device: torch.device) -> str:
    info = device_info(device)
    return f"cpu ({cpu_model()})" if info.type == "cpu" else f"{info.type} ({info.name})"


def _run(cfg: BenchConfig, device: torch.device, report: ProgressFn) -> BenchResult:
    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    plan = sweep_plan(cfg)
    draws = gate_draws(cfg)
    report(
        f"{len(plan)} cells ({len({m.key for m, _ in plan})} ops × gate strengths) at B={cfg.B} H={cfg.H} "
        f"T={cfg.T} K={cfg.K} V={cfg.V}, {cfg.threads} torch thread{'s' if cfg.threads != 1 else ''}; "
        "timing the matmul baseline first"
    )
    busy = busy_warning(cfg.threads, os.cpu_count(), load)
    if busy:
        report(busy)
    baseline = matmul_baseline(cfg, device)
    x = _inputs(cfg, device)
    cells, rounds = [], []
    try:
        _time_cells(cfg, device, plan, draws, x, cells, rounds, report, started)
    except KeyboardInterrupt:  # Ctrl-C: the cells timed so far are the result, marked incomplete
        report(f"interrupted: {len(cells)} of {len(plan)} cells timed, {len(rounds)} of {_rounds(cfg)} rounds")
    else:
        baseline += matmul_baseline(cfg, device)  # again after the sweep: the machine's drift shows in the spread
    return BenchResult(
        config=cfg,
        device=_device_name(device),
        cores=os.cpu_count(),
        torch_version=torch.__version__,
        load_average=load,
        baseline=baseline,
        cells=cells,
        wall_seconds=time.perf_counter() - started,
        planned=len(plan),
        rounds=len(rounds),
        planned_rounds=_rounds(cfg),
        native_form=native_form(device),
    )


def native_form(device: torch.device) -> str:
    """How the chunked form runs on ``device`` without autograd: its steps 2–5 compiled (``recurrence.NATIVE_CHUNKS``),
    else in Python with the per-channel products compiled (``recurrence.NATIVE_ANCHORS``), else all in Python; with
    the compiler and flags, or why not (``lineage.ops.native``)."""
    if device.type != "cpu":
        return "Python form: the compiled code is for a CPU"
    if native.forced_python():
        return "Python form, asked for (bench --native python)"
    if not (recurrence.NATIVE_CHUNKS or recurrence.NATIVE_ANCHORS):
        return "Python form: lineage.ops.recurrence.NATIVE_CHUNKS and NATIVE_ANCHORS are off"
    state = native.status()
    if not state.available:
        return state.detail
    if not recurrence.NATIVE_CHUNKS:
        return f"steps 2-5 in Python (NATIVE_CHUNKS is off), the per-channel products as {state.detail}"
    return f"steps 2-5 as {state.detail}"


def _rounds(cfg: BenchConfig) -> int:
    """The timed rounds of a run: as many as the form with the most repeats."""
    return max(cfg.repeats, cfg.recurrent_repeats)


def _time_cells(cfg, device, plan, draws, x, cells: list, rounds: list, report: ProgressFn, started: float):
    """Time every cell of the plan in the same interleaved rounds: each round calls every cell's chunked form, then its
    recurrent form, in the plan's order (after one untimed warm-up round), so the machine's drift hits every cell alike
    and every ratio the report draws (form to form, strength to strength, op to op) is steadier than any one time.

    Progress is reported after each round. The cells are appended when the rounds end, or when Ctrl-C stops them:
    then every cell timed at least once in both forms is kept, with the medians of its calls so far, and ``rounds``
    holds the number of rounds that finished.
    """
    rec_T = cfg.recurrent_T or cfg.T
    sizes = {"B": cfg.B, "H": cfg.H, "T": cfg.T, "K": cfg.K, "V": cfg.V}
    gates = []
    for m, draw in plan:
        g = None
        if draw is not None:  # seeded by the draw, so every mechanism of one gate kind sees the same gates
            gen = torch.Generator().manual_seed(cfg.seed + 1 + draws.index(draw))
            g = draw.draw(m.input_shape("g", sizes), gen).to(device, DTYPES[cfg.dtype])
        gates.append(g)
    forms = {}  # (cell, form) -> what to time, in the plan's order: every cell's chunked form, then its recurrent one
    for i, ((m, _), g) in enumerate(zip(plan, gates, strict=True)):
        forms[i, "chunk"] = Timed(
            lambda m=m, g=g: _call(m, x, g, cfg.T, mode="chunk", chunk_size=cfg.chunk_size), cfg.repeats
        )
        forms[i, "recurrent"] = Timed(lambda m=m, g=g: _call(m, x, g, rec_T, mode="recurrent"), cfg.recurrent_repeats)
    times: dict[tuple[int, str], list[float]] = {}
    sweep_started = time.perf_counter()

    def after_round(done: int, planned: int) -> None:
        rounds.append(done)
        left = (time.perf_counter() - sweep_started) / (done + 0.5) * (planned - done)  # the warm-up: half a round
        report(
            f"[round {done}/{planned}] {len(plan)} cells, each form timed once more; "
            f"{_duration(time.perf_counter() - started)} elapsed, about {_duration(left)} left"
        )

    try:
        interleaved_times(forms, device, after_round=after_round, times=times)
    finally:
        for i, ((m, draw), g) in enumerate(zip(plan, gates, strict=True)):
            chunk_times, recurrent_times = times.get((i, "chunk")), times.get((i, "recurrent"))
            if not (chunk_times and recurrent_times):
                continue
            cells.append(
                Cell(
                    op=m.key,
                    rule=m.rule,
                    gate_kind=m.gate,
                    gate="none" if draw is None else draw.label,
                    mean_log_alpha=None if g is None else float(g[torch.isfinite(g)].mean()),
                    chunk_seconds=statistics.median(chunk_times),
                    recurrent_seconds=statistics.median(recurrent_times) * cfg.T / rec_T,
                    flops=cfg.B * cfg.H * sum(chunk_flop_model(m.rule, cfg.T, cfg.K, cfg.V, cfg.chunk_size).values()),
                )
            )


# ---------------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------------


def decay_schemes(ops: list[str]) -> str:
    """Which scheme builds each gated op's decays inside a chunk, from the table of mechanisms: "segment sum products:
    mamba2, gated_deltanet; anchored products: gla, kda" (ops the table does not hold are left out)."""
    table = {m.key: m for m in linear_mechanisms()}
    by_scheme: dict[str, list[str]] = {}
    for op in ops:
        scheme = table[op].chunk_decays if op in table else None
        if scheme is not None:
            by_scheme.setdefault(scheme.__name__.replace("_", " "), []).append(op)
    return "; ".join(f"{name}: {', '.join(names)}" for name, names in by_scheme.items())


def format_result(r: BenchResult) -> str:
    """The header (machine, threads, settings), the matmul baseline, one table row per cell, and the ratios."""
    c, b = r.config, r.baseline
    load = "" if r.load_average is None else f", load average {r.load_average:.1f} at start"
    device_type = r.device.split()[0]  # _device_name: the device's type, then its name in brackets
    chunk_note = " (this device's default)" if c.chunk_size == default_chunk_size(device_type) else ""
    lines = [
        f"device {r.device}; torch threads {c.threads} of {r.cores} cores (--threads N to change); "
        f"torch {r.torch_version}{load}; {_duration(r.wall_seconds)} in all",
        f"B={c.B} H={c.H} T={c.T} K={c.K} V={c.V} {c.dtype}, chunk {c.chunk_size}{chunk_note}; "
        f"median of {c.repeats} (chunked) and "
        f"{c.recurrent_repeats} (recurrent) after one warm-up, every cell and form in interleaved rounds",
    ]
    if not r.complete:
        lines.append(
            f"interrupted: {len(r.cells)} of {r.planned} cells timed, {r.rounds} of {r.planned_rounds} rounds; "
            "medians of the calls made"
        )
    if c.recurrent_T:
        lines.append(
            f"recurrent form timed on the first {c.recurrent_T:,} of {c.T:,} steps and scaled by "
            f"{c.T / c.recurrent_T:.3g} (its cost is the same for every step)"
        )
    lines += ["", f"matmul baseline (torch.bmm on the chunked form's shapes, this run): {b.total_gflops:.1f} GFLOP/s"]
    for name, shape in b.shapes.items():
        lines.append(f"  {name:<26}{shape:<44}{b.gflops(name):>8.1f} GFLOP/s")
    head = (
        f"{'op':<18}{'gates':<24}{'mean log-α':>11}{'chunk ms':>10}{'recurrent ms':>14}{'rec/chunk':>11}"
        f"{'GFLOP/s':>9}{'% of matmul':>13}"
    )
    lines += ["", head, "-" * len(head)]
    for cell in r.cells:
        mean = "-" if cell.mean_log_alpha is None else f"{cell.mean_log_alpha:.2f}"
        slow = f"  << {r.over_fastest(cell):.2f}x its fastest strength" if r.slow_regime(cell) else ""
        lines.append(
            f"{cell.op:<18}{cell.gate:<24}{mean:>11}{cell.chunk_seconds * 1e3:>10.1f}"
            f"{cell.recurrent_seconds * 1e3:>14.1f}{cell.speedup:>10.1f}x{cell.gflops:>9.1f}"
            f"{r.fraction_of_matmul(cell):>12.0%}{slow}"
        )
    lines += [
        "",
        "GFLOP/s: the chunked form's FLOP model (lineage.measure.bench.chunk_flop_model) over its median time.",
        *([f"chunked form ran: {r.native_form}"] if r.native_form else []),
        f"<<: a gated row more than {SPREAD_LIMIT:g}x slower than its op at its fastest gate strength (a slow regime).",
    ]
    gated: dict[str, list[Cell]] = {}
    for cell in r.cells:
        if cell.gate_kind != "none":
            gated.setdefault(cell.op, []).append(cell)
    if gated:
        spreads = []
        for op, cells in gated.items():
            slow = max(cells, key=lambda x: x.chunk_seconds)
            fast = min(cells, key=lambda x: x.chunk_seconds)
            spreads.append(f"{op} {slow.chunk_seconds / fast.chunk_seconds:.2f}x")
        lines.append("chunked form, slowest gate strength / fastest: " + ", ".join(spreads))
        lines.append("decays inside a chunk (lineage.mechanisms.CHUNK_DECAYS): " + decay_schemes(list(gated)))
    if "kda" in gated and "gated_deltanet" in gated:
        gdn = {cell.gate: cell.chunk_seconds for cell in gated["gated_deltanet"]}
        ratios = [
            f"{cell.gate} {cell.chunk_seconds / gdn[cell.gate]:.2f}x" for cell in gated["kda"] if cell.gate in gdn
        ]
        lines.append("KDA chunk / Gated DeltaNet chunk: " + ", ".join(ratios))
    return "\n".join(lines)
