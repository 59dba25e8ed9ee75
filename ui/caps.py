"""The caps: the largest live run each page offers on each kind of device, and what a run there really costs.

This is deployment policy (how much of one shared server a visitor's click may take), so it lives on the app's side;
``lineage`` itself accepts any size its functions can compute. One table, ``DEVICE_CAPS``, read through ``caps()``.

Every cap is stated in what a run costs — its peak extra memory and its wall time, measured by
``scripts/measure_caps.py`` (2 CPUs, one torch thread, load average 5: six other agents shared the machine) — against
one budget per run (``Caps.run``). ``ui.limits`` lets at most ``MAX_HEAVY_RUNS`` runs go at once, so the server's
memory stays under its baseline + MAX_HEAVY_RUNS × ``Caps.run.mb`` however many visitors arrive.

Measured at the CPU caps (MB: peak above the resident set before the run; s: median of 3):

| run at its cap                                   | MB    | s     |
|--------------------------------------------------|-------|-------|
| a stage page, KDA, T 64, K = V 16                | 2.5   | 0.04  |
| GPT-2 / KV cache, T 64, 12 heads × 16            | 3.9   | 0.12  |
| (GPU caps on the CPU) KDA T 64, K = V 32         | 3.5   | 0.20  |
| (GPU caps on the CPU) softmax 12 heads × 32      | 9.3   | 0.28  |
| hybrid decode, 27 layers × 24 tokens             | 6.3   | 1.20  |
| Memory lab capacity, d_k 32, N 96, 1 stream      | 91    | 0.43  |
| Memory lab capacity, d_k 16, N 96, 4 streams     | 253   | 1.21  |
| Memory lab capacity, d_k 32, N 96, 4 streams     | 342   | 1.98  |
| real size, T 8,192, 4 heads × 64 (worst stage)   | 83    | 0.33  |

The "At real size" row (``scripts/measure_caps.py --scale``, nice 10, one torch thread, load average 3.3 falling to 2.8
on the 2 CPUs): all six linear-memory stages at T 8,192, 4 heads, K = V = 64; the most memory was linear attention's
(its state carries the normaliser's column), 75–83 MB over four runs of the script (KDA 77 MB), the longest time
KDA's 0.33 s (0.23 s in a run at load 1.2). At the next T, 16,384, linear attention took 157–170 MB, past the run
budget.

The Memory lab's capacity experiment is the one run whose cost the sliders can push past the budget, and its cost is
not the old proxy (streams × N² × d_k²: d_k 16 with 4 streams has the proxy of d_k 32 with 1, and costs 2.8× the
memory). It reads every cue after every write: outputs of trials·N·N·d_k numbers per mechanism and softmax rows of
trials·N·N·N, so ``capacity_cost`` is trials·N²·(a·d_k + b·N), fitted to 27 measured points (d_k 8–32, N 32–96,
1–4 streams) and scaled by CAPACITY_SAFETY so that it is above every measured point.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from lineage.device import get_device
from lineage.measure import bench_decode
from lineage.teach.stage_runs import SOFTMAX_MAX_HEADS
from lineage.units import MiB


@dataclass(frozen=True)
class Cost:
    """What one run takes: peak extra resident memory (``mb``, in MiB: 2²⁰ bytes, as measured) and wall time (s, one
    torch thread). Pages show it in the app's one unit system through ``bytes`` and ``lineage.units.format_bytes``."""

    mb: float
    seconds: float

    @property
    def bytes(self) -> float:
        return self.mb * MiB

    def within(self, budget: Cost) -> bool:
        return self.mb <= budget.mb and self.seconds <= budget.seconds


@dataclass(frozen=True)
class TrainCaps:
    """What one press of Train on the Learned memory page may ask for."""

    steps: int  # training steps per mechanism
    seconds: float  # wall seconds per mechanism
    mechanisms: int  # mechanisms trained by one press


@dataclass(frozen=True)
class Caps:
    """The largest sizes the app's live runs offer on one kind of device; see :func:`caps`."""

    T: int  # tokens of a stage run, softmax and linear-memory alike
    state_dim: int  # K and V of a linear-memory stage: its K×V state is drawn cell by cell
    head_dim: int  # head dim of the softmax stages (GPT-2 124M uses 64)
    heads: int  # heads of the softmax stages
    hybrid_layer_tokens: int  # layers × tokens of the hybrid page's live decode
    run: Cost  # what one run may cost; the Memory lab's capacity experiment is capped by this directly
    benchmark_mb: float | None  # host memory the Live benchmark may hold (bench_decode's estimate); None: its own cap
    benchmark_budgets: tuple[str, ...]  # the Live benchmark page's budgets (keys of bench_decode.BUDGETS)
    scale_T: int  # tokens of a stage page's "At real size" run: the chunked op over the whole sequence (ui.real_size)
    scale_head_dims: tuple[int, ...]  # the K = V that run offers
    scale_heads: int  # heads of that run
    training: TrainCaps  # the Learned memory page's live training (one visitor at a time: ui.limits.TRAINING)


# Why each number (and why a GPU gets what it gets):
# - T: the figures ship every frame (at most 64) of T×T and T×d matrices to the browser, so what a page sends grows
#   like T² and faster: at T = 64 the heaviest page (KV cache) sends about 5 MB. A GPU makes none of that smaller.
# - state_dim, head_dim: the animations draw the K×V state cell by cell in every frame; at 32 they send about 2 MB
#   (the KV-cache page about 4 MB). The run itself is a few MB either way (table above); on a GPU the chunked and T×T
#   forms run there, so a GPU gets the wider state.
# - heads: GPT-2 124M's 12, a fact about the model rather than the device.
# - hybrid_layer_tokens: the hybrid decodes on the CPU whatever the device, 1.2 s for Kimi Linear's 27 layers × the
#   page's default 24 tokens (table above): the most a decode may cost.
# - run: 150 MB and 1.5 s per run on the CPU; two at once (ui.limits) keep a 2-core, 2 GB host responsive. The Memory
#   lab computes in float64 on the CPU whatever the device, so its budget is the same on a GPU.
# - benchmark_budgets: the "full" budget (10 contexts, 15 repeats) takes about 4 s on a CPU, "standard" about 2 s;
#   a GPU runs either in well under a second.
# - benchmark_mb: on a CPU the benchmark's cache is host memory. At bench_decode's own 256 MB cap the hosted start
#   peaked at 763 MB after every page; at 150 MB, 629 MB (it took 181 MB over a 448 MB resident set); at 96 MB its
#   peak stays under the 600 MB the hosted start is allowed. A GPU's benchmark holds GPU memory: bench_decode's cap.
# - scale_T: the real-size run draws only summaries (at most lineage.teach.real_size.MAX_POINTS points) and the first
# steps of one
#   head, so what it sends the browser does not grow with T; what grows is the run. On a CPU its memory binds first:
#   the inputs alone are 4 × heads × T × K numbers, and the op's output and temporaries as many again. T 8,192 at
#   K = V = 64 took at most 83 MB and 0.33 s (table above), T 16,384 up to 170 MB, past the run budget. On a GPU the
#   tensors live in GPU memory and the host keeps a few KB of summaries, so a GPU gets tens of thousands of tokens:
#   65,536. There each input is 134 MB (4 heads × 65,536 × 128 × 4 bytes) and the chunked form's one span of every
#   chunk held 370–500 MB above its inputs at T 16,384 (measured on the CPU with chunk_memory's span set to all
#   chunks, as on a GPU, C = 64): about 2.7 GB of GPU memory per run at the cap, linear in T. Measured on a lent
#   NVIDIA H200 (scripts/measure_caps.py, torch 2.11, 2026-12-04, median of 2): peak GPU memory 1.95-2.72 GB per
#   stage at the cap (KDA and Gated DeltaNet-2 the most), 0.18 s (linear attention, Mamba-2) to 0.77 s (KDA), with
#   a few MB of host memory; the same script's other runs there took 0.04-0.42 s (the hybrid decode the longest).
# - scale_head_dims: real layers use 64–128 (Llama-3-8B and Kimi Linear's KDA: 128, from their configs as quoted in
#   lineage.measure.footprints.MODELS). A CPU pays for the state upkeep (≈ 2·T·K·V per head) in time and for every
#   input in memory: 32 and 64 there; a GPU gets 64 and 128. The first steps drawn exactly shrink with K
#   (lineage.teach.real_size.FIRST_STEP_CELLS), so the page stays light.
# - scale_heads: a few heads, to show that each has its own state; 4 on both (Kimi Linear has 32: eight times the
#   inputs and temporaries, about 22 GB at the GPU's cap by the estimate above).
# - training: a training step of the Learned memory page's model (d_model 64, 2 layers, 4 heads, batch 64, 32 tokens)
#   took 25–80 ms for softmax and 80–250 ms for KDA on the busy 2-core machine (`python -m lineage train
#   --throughput`, 1 thread, load average 6–7). 600 steps is about what the delta-rule layers needed for 4 pairs in
#   the recorded run (525–600); 45 s bounds what one visitor's press takes from a shared server, and binds first for
#   the slower layers on a busy CPU. A GPU runs the same steps several times faster: 3,000 steps, 60 s, all 8 mixers
#   (on a lent H200, 14 trainings at once, a capacity-record point of width 64 at 64 tokens that ran its whole 2,000
#   steps took 108-171 s).
CPU_RUN = Cost(mb=150.0, seconds=1.5)
_CPU_CAPS = Caps(
    T=64,
    state_dim=16,
    head_dim=16,
    heads=SOFTMAX_MAX_HEADS,
    hybrid_layer_tokens=27 * 24,
    run=CPU_RUN,
    benchmark_mb=96.0,
    benchmark_budgets=("tiny", "standard"),
    scale_T=8192,
    scale_head_dims=(32, 64),
    scale_heads=4,
    training=TrainCaps(steps=600, seconds=45.0, mechanisms=4),
)
DEVICE_CAPS: dict[str, Caps] = {
    "cpu": _CPU_CAPS,
    "gpu": replace(
        _CPU_CAPS,
        state_dim=32,
        head_dim=32,
        benchmark_mb=None,
        benchmark_budgets=tuple(bench_decode.BUDGETS),
        scale_T=65536,
        scale_head_dims=(64, 128),
        training=TrainCaps(steps=3000, seconds=60.0, mechanisms=8),
    ),
}
DEVICE_KINDS = tuple(DEVICE_CAPS)

# capacity_cost's fit (scripts/measure_caps.py): MB and seconds per trials·N²·d_k and per trials·N³
CAPACITY_FIT = {"mb": (1.54e-4, 4.63e-5), "seconds": (1.08e-6, 1.36e-7)}
CAPACITY_SAFETY = 1.3  # the largest measured/fitted ratio was 1.26 (memory) and 1.20 (time)


def device_kind(device: torch.device | str | None = None) -> str:
    """ "cpu" or "gpu" (CUDA and MPS alike) for ``device`` (default: the live device)."""
    dev = get_device() if device is None else torch.device(device)
    return "cpu" if dev.type == "cpu" else "gpu"


def caps(device: torch.device | str | None = None) -> Caps:
    """The caps of ``device`` (default: the live device): CPU caps small, CUDA and MPS larger."""
    return DEVICE_CAPS[device_kind(device)]


def capacity_cost(d_k: int, n: int, trials: int) -> Cost:
    """What the Memory lab's capacity experiment costs: ``trials`` streams of ``n`` pairs at key width ``d_k``."""
    work = {name: trials * n * n * (a * d_k + b * n) * CAPACITY_SAFETY for name, (a, b) in CAPACITY_FIT.items()}
    return Cost(mb=work["mb"], seconds=work["seconds"])


def stage_run_bytes(T: int, K: int, V: int) -> int:
    """A generous estimate of the host memory a linear-memory stage page holds for one run, in bytes.

    The traced recurrence keeps the state after every step (T·K·V) and per-step reads and writes (T·(K + V)); the
    pages derive T×T×K gate products (decay mask, retention) and T×T mixing matrices. Every array is counted as
    float64, three times over (the run, the page's arrays, the figures' copies).
    """
    return 3 * 8 * (T * K * V + T * T * K + T * T + 4 * T * (K + V))


def softmax_run_bytes(T: int, n_heads: int, head_dim: int) -> int:
    """A generous estimate of the memory the GPT-2 and KV-cache pages hold for one run, in bytes: the layer's
    projections (3·T·d_model), the scores and weights of every head (2·H·T²) and head 0's trace, as float64,
    three times over."""
    return 3 * 8 * (3 * T * n_heads * head_dim + 2 * n_heads * T * T + T * T + 2 * T * head_dim)


def benchmark_memory_bytes(device: torch.device | str | None = None) -> int:
    """The most bytes the Live benchmark may hold: ``bench_decode``'s cap for the device, and on a CPU (host memory that
    every visitor shares) no more than ``Caps.benchmark_mb``."""
    own, mb = bench_decode.memory_cap(device), caps(device).benchmark_mb
    return own if mb is None else min(own, int(mb * 2**20))
