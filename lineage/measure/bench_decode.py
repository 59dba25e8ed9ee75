"""Live decode benchmark: one decoding step of a KV-cache softmax layer against a KDA layer (and Gated DeltaNet-2's,
the stage after the article), on this device.

The claim under test: decoding is limited by memory bandwidth, not by arithmetic. A softmax layer generating
token N reads its whole cache — N keys and N values per head — and does one multiply and one add with each
number it reads:

    FLOPs per step  = 2 · H · N · (K + V)            (q·k_s for every s, then Σ_s p_s v_s)
    bytes per step  = 4 · H · N · (K + V)            (fp32 cache, each number read once)
    so ½ FLOP per byte (1 in bf16): the arithmetic units wait on memory, the step takes about as long as
    reading the cache, and its time grows linearly with N.

A KDA layer of the same width keeps a fixed K × V state per head instead, so its step reads and writes
4 · H · K · V bytes whatever N is: its time is flat in the context.

What is timed (every step on ``device``, inputs already there):

    KV cache   ``lineage.ops.softmax.decode_step``: append k_t, v_t to a cache of N − 1 tokens, then one query
               attends to all N keys and values. Every repeat runs on a fresh copy of the cache (copied outside
               the timed region), so each step sees exactly N tokens and the append never reallocates.
    KDA        ``lineage.ops.kda.kda(..., mode="recurrent", initial_state=S)`` with T = 1: decay, delta-rule write
               and read on S [1, H, K, V], one token drawn as the layer feeds it (``lineage.inputs.layer_inputs``).
               It includes kda's input checks (a NaN scan of every input), as a caller of ``kda`` pays them.
    GDN-2      ``lineage.ops.gated_deltanet2.gated_deltanet2(..., mode="recurrent", initial_state=S)``, the same step
               with an erase gate [1, H, 1, K] and a write gate [1, H, 1, V] where KDA has one β: the same state,
               K + V gate numbers more per token and head, so its time is flat in the context too.
    copy       ``dst.copy_(src)`` on one large fp32 tensor: bytes moved = 2 × size (read + write). The KV
               step's achieved bandwidth (bytes of K and V read / time) is reported as a fraction of this.

Honesty: every time comes from the one timer, ``lineage.measure.timing``: warm-up runs first; GPU work is synchronised
before and after each timed call; the two steps are timed in interleaved rounds at each context, so background
load hits them alike; the reported time is the median of the repeats. Sizes are capped per device
from a memory estimate (``memory_estimate``), and a request over the cap is refused with a ``ValueError``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from lineage import checks
from lineage.checks import positive_int
from lineage.device import device_info, get_device
from lineage.inputs import layer_inputs
from lineage.measure.timing import Timed, interleaved_times, repeat_times
from lineage.mechanisms import mechanism
from lineage.ops.kv_cache import KVCache
from lineage.ops.softmax import decode_step
from lineage.units import format_bytes

# Width of the layer: 8 heads × 128 per head, the key/value shape of one Llama-3-8B layer (8 KV heads × 128,
# meta-llama/llama3 params.json). Each cached token costs 8 · 2 · 128 · 4 = 8 KiB in fp32.
HEADS = 8
HEAD_DIM = 128
DTYPE = torch.float32  # decode_step computes in fp32, so an fp32 cache is read exactly once per step
DTYPE_BYTES = 4
MIN_CONTEXT = 128  # smallest context measured (below it a step is all fixed overhead)
FILL_TOKENS = 1024  # the cache is filled by repeating one random block of this many tokens (values don't change time)

MiB, GiB = 2**20, 2**30
# Most benchmark memory one run may hold, per device type. The CPU figure keeps a hosted demo with many
# visitors safe while still being well past a laptop's last-level cache (so the step really reads memory).
MEMORY_CAP = {"cpu": 256 * MiB, "mps": 1 * GiB, "cuda": 4 * GiB}
CUDA_CAP_FRACTION = 4  # and at most a quarter of the GPU's memory

ProgressFn = Callable[[float, str], None]


@dataclass(frozen=True)
class Budget:
    """How much a run measures: more points and repeats cost time and buy steadier medians."""

    points: int  # context lengths, spaced geometrically from MIN_CONTEXT to the largest
    warmup: int  # untimed runs before each measurement (caches, allocator, lazy init)
    repeats: int  # timed runs; the median is reported
    max_context: int | None  # largest context; None means the device's cap
    copy_share: int  # the copy test moves a tensor of cap / copy_share bytes (src and dst each)


BUDGETS: dict[str, Budget] = {
    "tiny": Budget(points=4, warmup=1, repeats=3, max_context=4096, copy_share=16),  # tests; well under a second
    "standard": Budget(points=7, warmup=2, repeats=7, max_context=None, copy_share=4),  # the page's default
    "full": Budget(points=10, warmup=3, repeats=15, max_context=None, copy_share=2),  # the CLI's report
}


def budget_label(name: str) -> str:
    """A budget as the Live benchmark's select shows it, from :data:`BUDGETS` (short enough for the select's box on
    a 1280 px slide in presenter mode: a longer label is cut off there). A link to the page names the budget by this
    label: Streamlit keeps a bound select's shown label in the URL, and drops a value it does not show."""
    b = BUDGETS[name]
    up_to = "the cap" if b.max_context is None else f"{b.max_context:,}"
    return f"{name} — {b.points} contexts up to {up_to}, {b.repeats} repeats"


# ---------------------------------------------------------------------------------------------------------
# Sizes and the cap
# ---------------------------------------------------------------------------------------------------------


def kv_bytes(context: int, heads: int = HEADS, head_dim: int = HEAD_DIM) -> int:
    """Bytes of keys and values a cache of ``context`` tokens holds (= what one decode step reads)."""
    return context * heads * 2 * head_dim * DTYPE_BYTES


def memory_estimate(context: int, heads: int = HEADS, head_dim: int = HEAD_DIM) -> int:
    """Peak bytes the KV part of the benchmark holds at ``context`` tokens.

    Two copies of the cache (the prepared one and the fresh copy a step runs on), plus the step's score
    temporaries: the scores, their masked version and the softmax, H · N fp32 numbers each, and the N-long
    boolean mask. The KDA state (H · K · V) and the fill block are small beside them. It counts tensors only: on
    CPU at the 256 MiB cap the process grew by about 10 % more (allocator and library workspace).
    """
    return 2 * kv_bytes(context, heads, head_dim) + 3 * heads * context * DTYPE_BYTES + context


def memory_cap(device: torch.device | str | None = None) -> int:
    """The most bytes a benchmark run may hold on ``device`` (see ``MEMORY_CAP``)."""
    dev = torch.device(device) if device is not None else get_device()
    cap = MEMORY_CAP.get(dev.type, MEMORY_CAP["cpu"])
    if dev.type == "cuda":
        cap = min(cap, torch.cuda.get_device_properties(dev).total_memory // CUDA_CAP_FRACTION)
    return cap


def context_cap(cap_bytes: int, heads: int = HEADS, head_dim: int = HEAD_DIM) -> int:
    """The largest context whose ``memory_estimate`` fits in ``cap_bytes`` (the estimate is linear in N)."""
    per_token = memory_estimate(1, heads, head_dim)
    return cap_bytes // per_token


def context_grid(max_context: int, points: int) -> np.ndarray:
    """Context lengths from min(MIN_CONTEXT, max_context) to ``max_context``, log-spaced: int64, increasing."""
    positive_int("max_context", max_context)
    positive_int("points", points)
    start = min(MIN_CONTEXT, max_context)
    grid = np.unique(np.round(np.geomspace(start, max_context, points)).astype(np.int64))
    grid[-1] = max_context  # exactly the largest requested, whatever the rounding
    return grid


# ---------------------------------------------------------------------------------------------------------
# The result
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodeBenchmark:
    """One run of ``run_decode_benchmark``. Times are seconds; every ``[P, R]`` array is contexts × repeats.

    Attributes:
        device_type, device_name, device_label, threads: where it ran (``lineage.device.device_info``).
        budget, warmup, repeats: the settings used.
        heads, head_dim, dtype: the layer measured (H heads, K = V = head_dim, stored in ``dtype``).
        cap_bytes: the device's cap on benchmark memory; cap_context: the largest context it allows.
        contexts: [P] int64, increasing: tokens attended by the KV step (the cache after its append).
        kv_seconds: [P, R] per-step times of the KV-cache decode step.
        kda_seconds: [P, R] per-step times of the KDA recurrent step (its state is the same at every context).
        gdn2_seconds: [P, R] per-step times of Gated DeltaNet-2's recurrent step (KDA's state, two gate vectors).
        copy_size_bytes: size of the copied tensor (src and dst each); copy_seconds: [R] times of one copy.
        read_seconds: [P, R] times of reading the cache's own keys and values once (a sum over each), interleaved
            with the KV step: the bound at each size. A cache small enough to sit in the processor's caches is read
            faster than the large copy moves main memory, so only a bound measured on the same bytes holds there.
        wall_seconds: the whole run, preparation included.
    """

    device_type: str
    device_name: str
    device_label: str
    threads: int
    budget: str
    warmup: int
    repeats: int
    heads: int
    head_dim: int
    dtype: str
    cap_bytes: int
    cap_context: int
    contexts: np.ndarray
    kv_seconds: np.ndarray
    kda_seconds: np.ndarray
    gdn2_seconds: np.ndarray
    copy_size_bytes: int
    copy_seconds: np.ndarray
    read_seconds: np.ndarray
    wall_seconds: float

    @property
    def kv_ms(self) -> np.ndarray:
        """[P] median milliseconds per token of the KV-cache step."""
        return np.median(self.kv_seconds, axis=1) * 1e3

    @property
    def kda_ms(self) -> np.ndarray:
        """[P] median milliseconds per token of the KDA step."""
        return np.median(self.kda_seconds, axis=1) * 1e3

    @property
    def gdn2_ms(self) -> np.ndarray:
        """[P] median milliseconds per token of Gated DeltaNet-2's step."""
        return np.median(self.gdn2_seconds, axis=1) * 1e3

    @property
    def kv_bytes_per_step(self) -> np.ndarray:
        """[P] bytes of K and V one KV step reads: N · H · 2 · head_dim · 4."""
        return self.contexts * (self.heads * 2 * self.head_dim * DTYPE_BYTES)

    @property
    def kv_flops_per_step(self) -> np.ndarray:
        """[P] FLOPs of one KV step's attention: 2 · H · N · (K + V) (a multiply and an add per cached number)."""
        return 2 * self.heads * self.contexts * 2 * self.head_dim

    @property
    def kda_state_bytes(self) -> int:
        """Bytes of the KDA state S that every KDA step reads and rewrites: H · K · V · 4."""
        return self.heads * self.head_dim * self.head_dim * DTYPE_BYTES

    @property
    def copy_bytes_per_s(self) -> float:
        """Measured memory-copy bandwidth: 2 × size (read + write) / median copy time."""
        return 2 * self.copy_size_bytes / float(np.median(self.copy_seconds))

    @property
    def kv_bytes_per_s(self) -> np.ndarray:
        """[P] achieved bandwidth of the KV step: bytes of K and V read / median step time."""
        return self.kv_bytes_per_step / np.median(self.kv_seconds, axis=1)

    @property
    def kv_fraction_of_copy(self) -> np.ndarray:
        """[P] the KV step's achieved bandwidth as a fraction of the copy bandwidth."""
        return self.kv_bytes_per_s / self.copy_bytes_per_s

    @property
    def read_bytes_per_s(self) -> np.ndarray:
        """[P] bandwidth of reading the cache's own bytes once (the context − 1 tokens it holds before the step)."""
        held = (self.contexts - 1) * (self.heads * 2 * self.head_dim * DTYPE_BYTES)
        return held / np.median(self.read_seconds, axis=1)

    @property
    def kv_fraction_of_read(self) -> np.ndarray:
        """[P] the KV step's achieved bandwidth as a fraction of reading the same bytes: the share of its bound."""
        return self.kv_bytes_per_s / self.read_bytes_per_s

    @property
    def kv_floor_ms(self) -> np.ndarray:
        """[P] the bandwidth floor of the KV step: its bytes / the bandwidth of reading them (measured at that size),
        in milliseconds. No step that reads those bytes can take less."""
        return self.kv_bytes_per_step / self.read_bytes_per_s * 1e3

    @property
    def memory_estimate_bytes(self) -> int:
        """``memory_estimate`` at the largest context measured."""
        return memory_estimate(int(self.contexts[-1]), self.heads, self.head_dim)


# ---------------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------------


def _filled_cache(context: int, heads: int, head_dim: int, device: torch.device, gen: torch.Generator) -> KVCache:
    """A cache holding context − 1 tokens, with room for exactly one more (so the timed append never grows it)."""
    cache = KVCache(1, heads, head_dim, head_dim, dtype=DTYPE, device=device, capacity=context)
    block = min(FILL_TOKENS, max(context - 1, 1))
    k_block = torch.randn(1, heads, block, head_dim, generator=gen, device=device, dtype=DTYPE)
    v_block = torch.randn(1, heads, block, head_dim, generator=gen, device=device, dtype=DTYPE)
    filled = 0
    while filled < context - 1:
        n = min(block, context - 1 - filled)
        cache.append(k_block[:, :, :n], v_block[:, :, :n])
        filled += n
    return cache


def measure_copy_bandwidth(
    size_bytes: int, device: torch.device | str | None = None, *, warmup: int = 2, repeats: int = 7
) -> np.ndarray:
    """Seconds of ``dst.copy_(src)`` for fp32 tensors of ``size_bytes`` each; bandwidth = 2 · size / time."""
    positive_int("size_bytes", size_bytes)
    dev = torch.device(device) if device is not None else get_device()
    n = max(size_bytes // DTYPE_BYTES, 1)
    src = torch.ones(n, dtype=DTYPE, device=dev)  # values don't change a copy's speed; ones are cheap to make
    dst = torch.empty_like(src)  # its pages are first touched in the warm-up
    with torch.inference_mode():
        return np.asarray(repeat_times(lambda: dst.copy_(src), dev, repeats, warmup=warmup))


# ---------------------------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------------------------


def _largest_context(cfg, dev: torch.device, cap: int, max_context: int | None, heads: int, head_dim: int) -> int:
    """The largest context a run measures: ``max_context`` if it fits the device's memory cap, else the budget's
    (at most the cap's); a ValueError naming the cap when even one token, or ``max_context``, does not fit."""
    cap_ctx = context_cap(cap, heads, head_dim)
    if cap_ctx < 1:
        raise ValueError(
            f"heads={heads}, head_dim={head_dim}: even one token needs {memory_estimate(1, heads, head_dim):,} bytes, "
            f"over the {dev.type} cap of {format_bytes(cap)}"
        )
    if max_context is None:
        return min(cfg.max_context or cap_ctx, cap_ctx)
    positive_int("max_context", max_context)
    if max_context > cap_ctx:
        raise ValueError(
            f"max_context={max_context:,} needs {memory_estimate(max_context, heads, head_dim):,} bytes of "
            f"benchmark memory on {dev.type}, over the cap of {format_bytes(cap)} (at most {cap_ctx:,} tokens at "
            f"{heads} heads × {head_dim})"
        )
    return max_context


def _fixed_state_step(key: str, heads: int, head_dim: int, gen: torch.Generator) -> Callable:
    """One decoding step of the linear mechanism ``key`` (KDA, Gated DeltaNet-2) as a call: one token's inputs and a
    state S, shaped and ranged as its layer feeds its op (``lineage.inputs.layer_inputs``: Gated DeltaNet-2's erase
    and write gates too), checked once here so that the timed step skips the value scans (a scan would wait for the
    device inside the timed step)."""
    m = mechanism(key)
    x = layer_inputs(m, heads, 1, head_dim, gen, state=True)
    args, state = m.op_args(x), x["initial_state"]
    m.op(*args, mode="recurrent", initial_state=state)

    def step():
        with checks.values_checked():
            return m.op(*args, mode="recurrent", initial_state=state, output_final_state=True)

    return step


def run_decode_benchmark(
    budget: str = "standard",
    *,
    max_context: int | None = None,
    heads: int = HEADS,
    head_dim: int = HEAD_DIM,
    device: torch.device | str | None = None,
    progress: ProgressFn | None = None,
    seed: int = 0,
) -> DecodeBenchmark:
    """Time one decode step of a KV-cache softmax layer and of a KDA layer against context length.

    Args:
        budget: a key of ``BUDGETS`` ("tiny", "standard", "full"): points, warm-up, repeats, largest context.
        max_context: the largest context to measure (overrides the budget's); must fit the device's cap.
        heads, head_dim: the layer's width (H heads, K = V = head_dim); 8 × 128 by default.
        device: where to run; ``lineage.device.get_device()`` by default.
        progress: called as ``progress(fraction, message)`` after the copy test and after each context.
        seed: seeds the random cache contents and KDA inputs.

    Returns:
        A ``DecodeBenchmark``.

    Raises:
        ValueError naming the cap when ``max_context`` needs more memory than the device's cap allows; for an
        unknown budget; for sizes < 1.
    """
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {', '.join(repr(b) for b in BUDGETS)}, got {budget!r}")
    positive_int("heads", heads)
    positive_int("head_dim", head_dim)
    cfg = BUDGETS[budget]
    dev = torch.device(device) if device is not None else get_device()
    info = device_info(dev)
    cap = memory_cap(dev)
    contexts = context_grid(_largest_context(cfg, dev, cap, max_context, heads, head_dim), cfg.points)
    report = progress or (lambda fraction, message: None)
    gen = torch.Generator(device=dev).manual_seed(seed)
    started = time.perf_counter()

    # 1. the device's copy bandwidth: the ceiling any memory-bound step can approach
    copy_size = cap // cfg.copy_share // 2  # src and dst together take cap / copy_share
    copy_seconds = measure_copy_bandwidth(copy_size, dev, warmup=cfg.warmup, repeats=cfg.repeats)
    report(1 / (len(contexts) + 1), f"copy: {2 * copy_size / float(np.median(copy_seconds)) / 1e9:,.1f} GB/s")

    # 2. the decode steps at each context, interleaved so background load hits them alike
    kda_step, gdn2_step = (_fixed_state_step(key, heads, head_dim, gen) for key in ("kda", "gated_deltanet2"))

    q_t, k_t, v_t = (torch.randn(1, heads, 1, head_dim, generator=gen, device=dev, dtype=DTYPE) for _ in range(3))
    kv_seconds, kda_seconds, gdn2_seconds, read_seconds = [], [], [], []
    with torch.inference_mode():
        for i, N in enumerate(contexts.tolist()):
            base = _filled_cache(N, heads, head_dim, dev, gen)
            steps = {
                "kv": Timed(lambda cache: decode_step(q_t, k_t, v_t, cache), cfg.repeats, setup=base.clone),
                "kda": Timed(kda_step, cfg.repeats),
                "gdn2": Timed(gdn2_step, cfg.repeats),
                "read": Timed(lambda cache=base: (cache.keys.sum(), cache.values.sum()), cfg.repeats),
            }
            times = interleaved_times(steps, dev, cfg.warmup)
            del base
            kv_seconds.append(np.asarray(times["kv"]))
            kda_seconds.append(np.asarray(times["kda"]))
            gdn2_seconds.append(np.asarray(times["gdn2"]))
            read_seconds.append(np.asarray(times["read"]))
            report(
                (i + 2) / (len(contexts) + 1),
                f"context {N:,}: KV cache {np.median(kv_seconds[-1]) * 1e3:.3f} ms, "
                f"KDA {np.median(kda_seconds[-1]) * 1e3:.3f} ms, GDN-2 {np.median(gdn2_seconds[-1]) * 1e3:.3f} ms",
            )
    return DecodeBenchmark(
        device_type=info.type,
        device_name=info.name,
        device_label=info.label,
        threads=info.threads,
        budget=budget,
        warmup=cfg.warmup,
        repeats=cfg.repeats,
        heads=heads,
        head_dim=head_dim,
        dtype="fp32",
        cap_bytes=cap,
        cap_context=context_cap(cap, heads, head_dim),
        contexts=contexts,
        kv_seconds=np.stack(kv_seconds),
        kda_seconds=np.stack(kda_seconds),
        gdn2_seconds=np.stack(gdn2_seconds),
        copy_size_bytes=copy_size,
        copy_seconds=copy_seconds,
        read_seconds=np.stack(read_seconds),
        wall_seconds=time.perf_counter() - started,
    )


# ---------------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------------


# The table's columns, each with its format and its width in the printed report (the app shows the same table).
COLUMNS = {
    "context": (",", 10),
    "KV bytes read": (",", 15),
    "KV ms/token": (".3f", 12),
    "KV GB/s": (".2f", 9),
    "of copy": (".0%", 8),
    "of read": (".0%", 8),
    "KDA ms/token": (".3f", 13),
    "GDN-2 ms/token": (".3f", 15),
}


def settings_lines(result: DecodeBenchmark) -> list[str]:
    """The report's lines above its table: the run, the copy bandwidth, the cap and KDA's state."""
    r = result
    return [
        f"decode step, {r.device_label}; {r.heads} heads × {r.head_dim} ({r.dtype}); "
        f"median of {r.repeats} after {r.warmup} warm-up ({r.budget} budget, {r.wall_seconds:.1f} s)",
        f"memory copy: {r.copy_bytes_per_s / 1e9:,.2f} GB/s (dst.copy_(src), 2 × {format_bytes(r.copy_size_bytes)} "
        f"moved per copy)",
        f"cap: {format_bytes(r.cap_bytes)} of benchmark memory on {r.device_type} -> at most {r.cap_context:,} tokens",
        f"KDA state read and written per step: {r.kda_state_bytes:,} bytes",
    ]


def table_rows(result: DecodeBenchmark) -> list[dict[str, float]]:
    """One row per context, the :data:`COLUMNS` in order (GB/s in 10⁹ bytes, the shares as fractions)."""
    r = result
    columns = zip(
        r.contexts,
        r.kv_bytes_per_step,
        r.kv_ms,
        r.kv_bytes_per_s / 1e9,
        r.kv_fraction_of_copy,
        r.kv_fraction_of_read,
        r.kda_ms,
        r.gdn2_ms,
        strict=True,
    )
    return [dict(zip(COLUMNS, (x.item() for x in row), strict=True)) for row in columns]


def format_cell(column: str, value: float) -> str:
    """A table cell as the report prints it (:data:`COLUMNS`' format, without its width)."""
    return format(value, COLUMNS[column][0])


def format_table(result: DecodeBenchmark) -> str:
    """A plain-text report: settings, copy bandwidth, then one row per context."""
    header = " ".join(f"{name:>{width}}" for name, (_, width) in COLUMNS.items())
    rows = [
        " ".join(f"{format_cell(name, row[name]):>{COLUMNS[name][1]}}" for name in COLUMNS)
        for row in table_rows(result)
    ]
    return "\n".join([*settings_lines(result), "", header, *rows])


def to_json(result: DecodeBenchmark) -> dict:
    """Everything in the result as plain JSON types (lists, numbers, strings), derived figures included."""
    r = result
    return dict(
        device=dict(type=r.device_type, name=r.device_name, label=r.device_label, threads=r.threads),
        settings=dict(
            budget=r.budget,
            warmup=r.warmup,
            repeats=r.repeats,
            heads=r.heads,
            head_dim=r.head_dim,
            dtype=r.dtype,
            cap_bytes=r.cap_bytes,
            cap_context=r.cap_context,
        ),
        copy=dict(
            size_bytes=r.copy_size_bytes,
            seconds=r.copy_seconds.tolist(),
            bytes_per_s=r.copy_bytes_per_s,
        ),
        contexts=r.contexts.tolist(),
        kv=dict(
            seconds=r.kv_seconds.tolist(),
            ms_per_token=r.kv_ms.tolist(),
            bytes_per_step=r.kv_bytes_per_step.tolist(),
            bytes_per_s=r.kv_bytes_per_s.tolist(),
            fraction_of_copy=r.kv_fraction_of_copy.tolist(),
            fraction_of_read=r.kv_fraction_of_read.tolist(),
        ),
        read=dict(seconds=r.read_seconds.tolist(), bytes_per_s=r.read_bytes_per_s.tolist()),
        kda=dict(
            seconds=r.kda_seconds.tolist(),
            ms_per_token=r.kda_ms.tolist(),
            state_bytes=r.kda_state_bytes,
        ),
        gated_deltanet2=dict(
            seconds=r.gdn2_seconds.tolist(),
            ms_per_token=r.gdn2_ms.tolist(),
            state_bytes=r.kda_state_bytes,  # the same K × V state per head
        ),
        wall_seconds=r.wall_seconds,
    )
