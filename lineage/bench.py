"""``python -m lineage bench``: how fast each form of each mechanism runs on this device.

Times the recurrent (reference loop), chunked and — where its T×T memory fits — parallel form of every
linear-memory op at one shape (default B=1, H=4, T=4096, K=V=64, fp32), and the decode step: one token
against a fixed state (linear family) and against a KV cache (softmax) at two context lengths. Every number is
the median of several runs after a warm-up, with GPU work synchronised; the forms of one op are timed in
interleaved rounds, so ratios compare runs made side by side. The machine is shared and noisy: compare ratios,
not absolute times across runs.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F

from lineage.deltanet import deltanet
from lineage.device import device_info, get_device, synchronize
from lineage.gated_deltanet import gated_deltanet
from lineage.gla import gla
from lineage.kda import kda
from lineage.kv_cache import KVCache
from lineage.linear_attention import linear_attention
from lineage.mamba2 import mamba2
from lineage.softmax import decode_step

# The parallel form holds T×T (×K for per-channel gates) numbers per head; skip it past this many bytes.
PARALLEL_MAX_BYTES = 2 * 2**30


@dataclass(frozen=True)
class BenchConfig:
    B: int = 1
    H: int = 4
    T: int = 4096
    K: int = 64
    V: int = 64
    chunk_size: int = 64
    repeats: int = 7  # median of this many timed runs (after one warm-up)
    recurrent_repeats: int = 5  # the reference loop is slow; fewer runs keep the benchmark short
    decode_contexts: tuple[int, ...] = (1024, 65536)


@dataclass
class OpTiming:
    op: str
    seconds: dict[str, float | None]  # mode -> median seconds (None: skipped)

    @property
    def speedup(self) -> float | None:
        """Recurrent time over chunked time."""
        r, c = self.seconds.get("recurrent"), self.seconds.get("chunk")
        return r / c if r and c else None


@dataclass
class BenchResult:
    config: BenchConfig
    device: str
    threads: int
    cores: int | None
    ops: list[OpTiming] = field(default_factory=list)
    decode: dict[str, dict[int, float]] = field(default_factory=dict)  # mechanism -> context -> median seconds

    def to_json(self) -> dict:
        return {
            "config": asdict(self.config),
            "device": self.device,
            "threads": self.threads,
            "cores": self.cores,
            "ops": [{"op": o.op, "seconds": o.seconds, "recurrent_over_chunk": o.speedup} for o in self.ops],
            "decode_step_seconds": {m: {str(n): s for n, s in d.items()} for m, d in self.decode.items()},
        }


def median_time(fn: Callable[[], object], device: torch.device, repeats: int, warmup: int = 1) -> float:
    """Median wall time of ``fn`` over ``repeats`` runs after ``warmup`` runs, synchronising the device."""
    return interleaved_medians({"fn": (fn, repeats)}, device, warmup)["fn"]


def _inputs(cfg: BenchConfig, device: torch.device):
    gen = torch.Generator().manual_seed(0)
    shape = (cfg.B, cfg.H, cfg.T)
    q = torch.randn(*shape, cfg.K, generator=gen)
    k = F.normalize(torch.randn(*shape, cfg.K, generator=gen), dim=-1)
    v = torch.randn(*shape, cfg.V, generator=gen)
    # Gates as in fla's tests: log σ(x) / 16 — decays near 1, as trained models mostly have them.
    g_scalar = F.logsigmoid(torch.randn(*shape, generator=gen)) / 16
    g_channel = F.logsigmoid(torch.randn(*shape, cfg.K, generator=gen)) / 16
    beta = torch.rand(*shape, generator=gen)
    return [x.to(device) for x in (q, k, v, g_scalar, g_channel, beta)]


def _ops(cfg: BenchConfig, device: torch.device):
    q, k, v, gs, gc, beta = _inputs(cfg, device)
    return {
        "linear_attention": (lambda **kw: linear_attention(q, k, v, **kw), "none"),
        "deltanet": (lambda **kw: deltanet(q, k, v, beta, **kw), "none"),
        "mamba2": (lambda **kw: mamba2(q, k, v, gs, **kw), "scalar"),
        "gla": (lambda **kw: gla(q, k, v, gc, **kw), "channel"),
        "gated_deltanet": (lambda **kw: gated_deltanet(q, k, v, gs, beta, **kw), "scalar"),
        "kda": (lambda **kw: kda(q, k, v, gc, beta, **kw), "channel"),
    }


def _parallel_bytes(cfg: BenchConfig, gate: str) -> int:
    per_pair = cfg.K if gate == "channel" else 1
    return cfg.B * cfg.H * cfg.T * cfg.T * per_pair * 4


def interleaved_medians(
    fns: dict[str, tuple[Callable[[], object], int]], device: torch.device, warmup: int = 1
) -> dict[str, float]:
    """Median wall time of each ``name: (fn, repeats)``, timed in interleaved rounds (one run of each per round).

    On a shared machine the speed drifts over seconds; timing the forms of one op side by side, round after round,
    lets that drift hit all of them alike, so their ratio is steadier than if each were timed in its own block.
    """
    for fn, _ in fns.values():
        for _ in range(warmup):
            fn()
    synchronize(device)
    times: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(max(reps for _, reps in fns.values())):
        for name, (fn, reps) in fns.items():
            if i < reps:
                t0 = time.perf_counter()
                fn()
                synchronize(device)
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def bench_ops(cfg: BenchConfig, device: torch.device, progress: Callable[[str], None] | None = None) -> list[OpTiming]:
    out = []
    for name, (op, gate) in _ops(cfg, device).items():
        if progress:
            progress(name)
        # the parallel form takes seconds at T = 4096: as few runs as the recurrent one
        reps = {"recurrent": cfg.recurrent_repeats, "chunk": cfg.repeats, "parallel": cfg.recurrent_repeats}
        if _parallel_bytes(cfg, gate) > PARALLEL_MAX_BYTES:
            del reps["parallel"]
        fns = {mode: (lambda op=op, mode=mode: op(mode=mode, chunk_size=cfg.chunk_size), n) for mode, n in reps.items()}
        seconds: dict[str, float | None] = {"recurrent": None, "chunk": None, "parallel": None}
        seconds.update(interleaved_medians(fns, device))
        out.append(OpTiming(name, seconds))
    return out


def bench_decode_step(cfg: BenchConfig, device: torch.device) -> dict[str, dict[int, float]]:
    """One decode step at each context length: KDA from a fixed state vs softmax over a KV cache.

    The KDA state after N tokens is a K×V matrix per head whatever N is, so it is produced once per context
    by a chunked pass over N tokens (the benchmark times only the step). The KV cache holds N keys and values
    (plus the few tokens the timed steps append).
    """
    gen = torch.Generator().manual_seed(1)
    B, H, K, V = cfg.B, cfg.H, cfg.K, cfg.V
    step = [torch.randn(B, H, 1, d, generator=gen).to(device) for d in (K, K, V)]
    q1, k1, v1 = step[0], F.normalize(step[1], dim=-1), step[2]
    g1 = (F.logsigmoid(torch.randn(B, H, 1, K, generator=gen)) / 16).to(device)
    b1 = torch.rand(B, H, 1, generator=gen).to(device)
    out: dict[str, dict[int, float]] = {"kda": {}, "kv_cache": {}}
    for N in cfg.decode_contexts:
        kN = F.normalize(torch.randn(B, H, N, K, generator=gen), dim=-1).to(device)
        vN = torch.randn(B, H, N, V, generator=gen).to(device)
        gN = (F.logsigmoid(torch.randn(B, H, N, K, generator=gen)) / 16).to(device)
        _, S = kda(kN, kN, vN, gN, torch.rand(B, H, N, generator=gen).to(device), output_final_state=True)
        out["kda"][N] = median_time(
            lambda S=S: kda(q1, k1, v1, g1, b1, initial_state=S, output_final_state=True, mode="recurrent"),
            device,
            cfg.repeats * 4,
        )
        # Room for the appended tokens up front, so each timed step appends in O(1) and reads N + a few tokens.
        cache = KVCache(B, H, K, V, dtype=kN.dtype, device=device, capacity=N + 8 * cfg.repeats + 8)
        cache.append(kN, vN)
        out["kv_cache"][N] = median_time(lambda cache=cache: decode_step(q1, k1, v1, cache), device, cfg.repeats * 4)
    return out


def run_bench(cfg: BenchConfig = BenchConfig(), progress: Callable[[str], None] | None = None) -> BenchResult:
    device = get_device()
    info = device_info(device)
    result = BenchResult(cfg, info.label, torch.get_num_threads(), os.cpu_count())
    result.ops = bench_ops(cfg, device, progress)
    if progress:
        progress("decode steps")
    result.decode = bench_decode_step(cfg, device)
    return result


def _ms(x: float | None) -> str:
    return "skipped" if x is None else f"{x * 1e3:.2f}"


def format_result(r: BenchResult) -> str:
    c = r.config
    lines = [
        f"device: {r.device} (torch threads {r.threads}, {r.cores} cores); "
        f"B={c.B} H={c.H} T={c.T} K={c.K} V={c.V} fp32, chunk {c.chunk_size}; median of {c.repeats} "
        f"(recurrent {c.recurrent_repeats})",
        "",
        f"{'op':<18}{'recurrent ms':>14}{'chunk ms':>12}{'parallel ms':>13}{'rec/chunk':>11}",
    ]
    for o in r.ops:
        s = o.seconds
        sp = f"{o.speedup:.1f}x" if o.speedup else "-"
        lines.append(f"{o.op:<18}{_ms(s['recurrent']):>14}{_ms(s['chunk']):>12}{_ms(s['parallel']):>13}{sp:>11}")
    by = {o.op: o.seconds["chunk"] for o in r.ops}
    if by.get("kda") and by.get("gated_deltanet"):
        lines.append(f"\nKDA chunk / Gated DeltaNet chunk: {by['kda'] / by['gated_deltanet']:.2f}x")
    lines.append("\ndecode step (one token), ms:")
    ctxs = c.decode_contexts
    lines.append(f"{'mechanism':<12}" + "".join(f"{f'ctx {n:,}':>14}" for n in ctxs) + f"{'last/first':>12}")
    for mech, d in r.decode.items():
        ratio = d[ctxs[-1]] / d[ctxs[0]] if d[ctxs[0]] else float("nan")
        lines.append(f"{mech:<12}" + "".join(f"{d[n] * 1e3:>14.3f}" for n in ctxs) + f"{ratio:>11.1f}x")
    return "\n".join(lines)
