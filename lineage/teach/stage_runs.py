"""Live runs for the app: deterministic inputs, one call per page, numpy out.

A stage page passes primitives (sizes, seed, knobs) and gets back everything its figures need: the inputs,
the per-step trace of the reference recurrence, the chunked and parallel outputs computed on the current
device, their agreement with the reference, and the measured times. Nothing here imports streamlit.

Gates are set by explicit rules rather than learned, so what the animation shows can be explained: the inputs are
:func:`lineage.inputs.rule_inputs` with a :class:`GateRule` (a scalar gate holds α_t near ``alpha``, jittered by
``alpha_jitter``; a per-channel gate spreads the channels' α evenly from ``alpha``, channel 0, the slowest to forget,
down to ``alpha_min``, the fastest). Every form runs through :func:`lineage.inputs.run_mechanism`, the one display
path (the table's ``Mechanism.call``, and the reference loop for the trace).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from lineage import checks
from lineage.device import device_info, get_device
from lineage.inputs import GateRule, as_recurrence, rule_inputs, run_mechanism
from lineage.lab import recall_error
from lineage.measure.timing import Timed, interleaved_medians, median_seconds, timed
from lineage.mechanisms import mechanism
from lineage.numerics import rel_rms
from lineage.ops.io_cost import (
    RecomputeCost,
    recompute_generation_cost,
    standard_attention_io_bytes,
    tiled_attention_io_bytes,
)
from lineage.ops.linear_attention import NORMALIZER_EPS
from lineage.ops.recurrence import MemoryTrace, parallel_memory, segsum
from lineage.ops.softmax import (
    CausalSelfAttention,
    SoftmaxTrace,
    TiledTrace,
    decode_cached,
    decode_recompute,
    softmax_attention,
    tiled_softmax_attention,
    trace_softmax,
)
from lineage.stages import stage

# Sizes a page may ask for. The recurrent trace stores T·K·V numbers per head, and the parallel form
# T²·K for per-channel gates, so these caps keep one run well under a second and a few MB on a small CPU.
DEMO_LIMITS = {"T": 256, "K": 64, "V": 64}
DEFAULT_RULE = GateRule()  # α = 0.9 on every channel, β = 0.5


@dataclass
class StageRun:
    """One live run of a linear-memory stage, for one batch element and head (numpy, [T, ·])."""

    stage: str
    q: np.ndarray  # [T, K] (after the feature map for linear attention)
    k: np.ndarray  # [T, K]
    v: np.ndarray  # [T, V] (with the normaliser's column of ones for linear attention)
    g: np.ndarray  # [T, K] log-decay per step and channel (0 where there is no gate)
    beta: np.ndarray  # [T] (1 for additive writes)
    trace: MemoryTrace  # of the reference recurrence; arrays [1, 1, T, ...]
    output_chunk: np.ndarray  # [T, V] chunked form on the device
    output_parallel: np.ndarray  # [T, V] T×T form on the device
    err_chunk: float  # ‖chunk − recurrent‖ / ‖recurrent‖ (lineage.numerics.rel_rms)
    err_parallel: float  # ‖parallel − recurrent‖ / ‖recurrent‖
    seconds: dict  # median wall time per form on the device: {"recurrent", "chunk", "parallel"}
    device: str  # label of the device that ran the chunked/parallel forms
    scale: float

    @property
    def states(self) -> np.ndarray:
        """[T, K, V] state after every step."""
        return self.trace.states[0, 0]


def _check_sizes(T: int, K: int, V: int) -> None:
    for name, value in (("T", T), ("K", K), ("V", V)):
        checks.positive_int(name, value, maximum=DEMO_LIMITS[name])


def run_stage(
    stage_key: str,
    T: int = 32,
    K: int = 8,
    V: int = 8,
    seed: int = 0,
    rule: GateRule = DEFAULT_RULE,
    *,
    chunk_size: int = 16,
    feature_map: str = "elu1",
    repeats: int = 3,
    inputs: tuple | None = None,
) -> StageRun:
    """Run a linear-memory stage three ways (recurrent reference with a trace, chunked, parallel) and compare.

    ``inputs`` (q, k, v, g, beta) replaces the seeded inputs of ``rule`` (e.g. ``lineage.teach.story.story_tensors``);
    T, K and V must then be its sizes. Every form runs through :func:`lineage.inputs.run_mechanism` on the
    recurrence's inputs (:func:`lineage.inputs.as_recurrence`: linear attention's φ is ``feature_map``, its state
    carries the normaliser as a column fed by ones), so the outputs are the recurrence's own.
    """
    s = stage(stage_key)
    checks.chunk_size(chunk_size)
    if not s.in_grid:
        raise ValueError(f"stage {stage_key!r} is not a linear-memory stage; use lineage.ops.softmax for it")
    m = mechanism(s.key)
    if inputs is None:
        _check_sizes(T, K, V)
        inputs = rule_inputs(m, T, K, V, seed, rule)
    q, k, v, g, beta = inputs
    q, k, v = as_recurrence(m, q, k, v, feature_map)
    o_ref, _, trace = run_mechanism(m, q, k, v, g, beta, trace=True)
    device = get_device()
    on_device = [None if x is None else x.to(device) for x in (q, k, v, g, beta)]

    def form(mode: str):
        return run_mechanism(m, *on_device, bare=True, mode=mode, chunk_size=chunk_size)

    o_chunk, _ = form("chunk")
    o_par, _ = form("parallel")
    # the forms side by side in interleaved rounds; each has just run once above, which serves as its warm-up
    forms = {mode: Timed(lambda mode=mode: form(mode), repeats) for mode in ("recurrent", "chunk", "parallel")}
    seconds = interleaved_medians(forms, device, warmup=0)
    g_full = np.zeros((T, K), dtype=np.float32) if g is None else g[0, 0].reshape(T, -1).expand(T, K).numpy().copy()
    return StageRun(
        stage=s.key,
        q=q[0, 0].numpy(),
        k=k[0, 0].numpy(),
        v=v[0, 0].numpy(),
        g=g_full,
        beta=np.ones(T, dtype=np.float32) if beta is None else beta[0, 0].numpy(),
        trace=trace,
        output_chunk=o_chunk[0, 0].cpu().numpy(),
        output_parallel=o_par[0, 0].cpu().numpy(),
        err_chunk=rel_rms(o_chunk, o_ref),
        err_parallel=rel_rms(o_par, o_ref),
        seconds=seconds,
        device=device_info(device).label,
        scale=K**-0.5,
    )


def retention(g: np.ndarray) -> np.ndarray:
    """How much of what was written at step x survives at step x + t, per channel: [T_write, T_lag, K].

    retention[x, t, c] = α_{x+1,c} ⋯ α_{x+t,c} (1 at lag 0; NaN past the end of the sequence). This is the
    decay part only — the delta rule may also overwrite an item, which the lab measures separately.
    """
    g = np.asarray(g, dtype=np.float64)
    if g.ndim == 1:
        g = g[:, None]
    T = g.shape[0]
    out = np.full((T, T, g.shape[1]), np.nan)
    running = np.zeros_like(g)  # running[x] = Σ_{x < s ≤ x+lag} g_s: summed directly, so −inf stays a clean 0
    for lag in range(T):
        if lag:
            running = running[:-1] + g[lag:]
        out[: T - lag, lag] = np.exp(running)
    return out


def gate_off(rule: GateRule) -> GateRule:
    """The same rule with every α = 1, so g = 0 exactly: a gated stage becomes its ungated neighbour in the grid.

    With the same seed the inputs are the same (:func:`lineage.inputs.rule_inputs` draws the same numbers whatever
    the rule), so Mamba-2 with the gate off is the plain additive recurrence and Gated DeltaNet with the gate off is
    DeltaNet.
    """
    return replace(rule, alpha=1.0, alpha_min=1.0)


def matched_scalar_rule(rule: GateRule, K: int) -> GateRule:
    """A scalar gate at the mean α of a per-channel rule's K channels, for comparing KDA with Gated DeltaNet."""
    checks.positive_int("K", K, maximum=DEMO_LIMITS["K"])
    mean = float(torch.linspace(rule.alpha, rule.alpha_min, K, dtype=torch.float64).mean())
    return replace(rule, alpha=mean, alpha_min=mean)


def state_norms(states: np.ndarray) -> np.ndarray:
    """‖S_t‖ (Frobenius) after every step: [T] from states [T, K, V]."""
    states = np.asarray(states)
    if states.ndim != 3:
        raise ValueError(f"states must be [T, K, V], got shape {states.shape}")
    return np.linalg.norm(states.astype(np.float64), axis=(1, 2))


def decay_mask(g: np.ndarray) -> np.ndarray:
    """The cumulative decay between every pair of steps: L[i, j, c] = α_{j+1,c} ⋯ α_{i,c} for i ≥ j, else 0.

    For an additive stage the output unrolls to o = A V with A = L ⊙ (scale Q Kᵀ) when the gate is a scalar (see
    :func:`mixing_matrix`): masked attention whose mask decays with distance, Mamba-2's "state space duality"
    (arXiv 2405.21060). L is the mask :func:`lineage.ops.recurrence.parallel_memory` builds from segment sums; a wipe
    (g = −∞) gives exact zeros.

    Args:
        g: log-decay [T] or [T, K] (``StageRun.g``). Returns: [T, T, K] (K = 1 for [T]).
    """
    g = np.asarray(g, dtype=np.float64)
    g = g[:, None] if g.ndim == 1 else g
    if g.ndim != 2 or g.size == 0:
        raise ValueError(f"g must be a non-empty [T] or [T, K] array of log-decays, got shape {g.shape}")
    return torch.exp(segsum(torch.from_numpy(g))).numpy()


# ---------------------------------------------------------------------------------------------------------------
# Reading a linear memory back, and the chunked form's schedule (Linear attention and DeltaNet pages)
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recall:
    """A memory read back with the keys it was given: after step t, read k_s (s ≤ t) and compare with v_s.

    Linear attention reads with its normaliser, (S_tᵀ φ(k_s))[:V] / z_tᵀ φ(k_s) — its own output for a query equal
    to the key; the delta family reads S_tᵀ k_s (unit keys). An error of 0 is perfect recall; about 1 means the
    read has no useful overlap with the value that was stored.
    """

    error: np.ndarray  # [T, T] error[t, s] = ‖read(S_t, k_s) − v_s‖ / ‖v_s‖ for s ≤ t, NaN above the diagonal
    state_norm: np.ndarray  # [T] ‖S_t‖ (Frobenius) over the value columns

    @property
    def by_step(self) -> np.ndarray:
        """[T] mean error over every pair stored so far, after each step."""
        return np.nanmean(self.error, axis=1)

    @property
    def by_age(self) -> np.ndarray:
        """[T] mean error of the pair written ``age`` steps before the read, over all reads that have one."""
        T = self.error.shape[0]
        return np.array([np.diagonal(self.error, offset=-age).mean() for age in range(T)])


def recall(run: StageRun) -> Recall:
    """Read every stored key back from every state of a run (see :class:`Recall`)."""
    states = run.states.astype(np.float64)  # [T, K, V(+1)]
    k, v = run.k.astype(np.float64), run.v.astype(np.float64)
    reads = np.einsum("tkv,sk->tsv", states, k)  # [t, s, ·]: S_tᵀ k_s
    V = v.shape[1]
    if mechanism(run.stage).keeps_normaliser:  # the last column is the normaliser z, fed by a value of 1
        V -= 1
        reads = reads[..., :V] / (reads[..., V:] + NORMALIZER_EPS)
    error = recall_error(reads, v[None, :, :V])
    T = error.shape[0]
    error[np.triu_indices(T, k=1)] = np.nan  # key s has not been written yet at step t < s
    return Recall(error=error, state_norm=state_norms(states[..., :V]))


def write_gaps(run: StageRun) -> tuple[np.ndarray, np.ndarray]:
    """How far the memory's answer at k_t is from v_t before and after step t's write: ([T], [T]).

    Before: ‖v_t − S'ᵀ k_t‖ (the delta rule's v_old, recorded by the trace). After: ‖v_t − S_tᵀ k_t‖. With a unit
    key the delta rule closes exactly a fraction β of the gap: after = (1 − β) · before.
    """
    v = run.v.astype(np.float64)
    before = np.linalg.norm(v - run.trace.read[0, 0], axis=-1)
    after = np.linalg.norm(v - np.einsum("tkv,tk->tv", run.states.astype(np.float64), run.k), axis=-1)
    return before, after


def mixing_matrix(run: StageRun) -> np.ndarray:
    """The run's outputs as a mix of its values, o_t = Σ_j A_tj v_j: A as [T, T].

    The output is linear in the values (the keys, gates and β fix how they mix), so running the parallel form with
    one-hot values, v = I, returns A itself, row by row. For the delta rule A is the masked attention after the WY
    correction. Computed in fp64 on the CPU: this is a picture, not a timing.
    """
    m = mechanism(run.stage)
    T = run.k.shape[0]
    q, k = (torch.as_tensor(x, dtype=torch.float64)[None, None] for x in (run.q, run.k))
    g = torch.as_tensor(run.g, dtype=torch.float64)[None, None] if m.takes("g") else None
    beta = torch.as_tensor(run.beta, dtype=torch.float64)[None, None] if m.writes_with_strength else None
    eye = torch.eye(T, dtype=torch.float64)[None, None]
    A, _ = parallel_memory(q, k, eye, g, beta, rule=m.rule, scale=run.scale)
    return A[0, 0].numpy()


def chunk_flops(T: int, D: int, chunk_size: int) -> int:
    """The chunked form's cost model for one head, D = K = V: 2·T·D² (state upkeep) + 2·T·C·D (inside chunks)."""
    return 2 * T * D * D + 2 * T * chunk_size * D


@dataclass(frozen=True)
class ChunkSweep:
    """Wall time of DeltaNet's chunked form against its chunk size C, beside the FLOP model."""

    chunk_sizes: np.ndarray  # [n]
    seconds: np.ndarray  # [n] median wall time of one call of the chunked form on the device
    model_flops: np.ndarray  # [n] chunk_flops(T, D, C)
    T: int
    D: int
    device: str


def chunk_size_sweep(
    T: int = 64, D: int = 16, seed: int = 0, *, chunk_sizes=None, beta: float = 0.5, repeats: int = 5
) -> ChunkSweep:
    """Time DeltaNet's chunked form (one head, K = V = D) at each chunk size; default sizes 1, 2, 4, … ≤ T.

    Small chunks mean many sequential state hand-offs (T / C small matrix products in a Python loop); large chunks
    mean C×C triangular solves and more arithmetic inside each chunk. The FLOP model only sees the second effect.
    """
    checks.positive_int("repeats", repeats)
    _check_sizes(T, D, D)
    m = mechanism("deltanet")
    q, k, v, _, b = rule_inputs(m, T, D, D, seed, GateRule(beta=beta))
    sizes = [2**i for i in range(T.bit_length()) if 2**i <= T] if chunk_sizes is None else list(chunk_sizes)
    for C in sizes:
        checks.chunk_size(C)
    device = get_device()
    qd, kd, vd, bd = (x.to(device) for x in (q, k, v, b))
    seconds = [
        median_seconds(
            lambda C=C: run_mechanism(m, qd, kd, vd, None, bd, mode="chunk", chunk_size=C), device, repeats, warmup=0
        )
        for C in sizes
    ]
    return ChunkSweep(
        chunk_sizes=np.array(sizes),
        seconds=np.array(seconds),
        model_flops=np.array([chunk_flops(T, D, C) for C in sizes], dtype=np.int64),
        T=T,
        D=D,
        device=device_info(device).label,
    )


# ---------------------------------------------------------------------------------------------------------------
# Softmax attention: GPT-2 recomputing, the KV cache, FlashAttention's tiles (GPT-2 and KV cache pages)
# ---------------------------------------------------------------------------------------------------------------

SOFTMAX_MAX_HEADS = 12  # GPT-2 124M's head count


@dataclass
class SoftmaxRun:
    """A GPT-2-style attention layer generating T tokens with and without a KV cache, plus FlashAttention's tiles.

    The traced head (head 0) is the layer's own: its q, k, v come from the layer's c_attn projection.
    """

    trace: SoftmaxTrace  # head 0 decoded through a KVCache: attention rows, cache contents, KVCache.nbytes per step
    scores: np.ndarray  # [T, T] scale · q kᵀ of head 0, −inf above the diagonal (what the tiled form streams)
    cost: RecomputeCost  # rows and FLOPs per generated token, without and with a cache, at this layer's width
    rows_recompute: int  # token rows projected to Q/K/V while generating without a cache (counted by the loop)
    rows_cached: int  # the same with a cache: one per token
    layer_cache_bytes: int  # KVCache.nbytes of the whole layer (every head) after the T tokens
    err_recompute: float  # ‖recompute − cached‖ / ‖cached‖ over the layer's outputs
    seconds: dict  # wall time to generate the T tokens on the device: {"recompute", "cached"}
    tiled: TiledTrace  # the online softmax of head 0, block by block, and both IO byte counts
    err_tiled: float  # ‖tiled − standard‖ / ‖standard‖ for head 0
    io_seq_lens: np.ndarray  # [n] sequence lengths for the IO comparison, 16 … 65,536
    io_standard: np.ndarray  # [n] slow-memory bytes of the standard form, one head of this width, fp32
    io_tiled: np.ndarray  # [n] the same for the tiled form at this block size
    device: str
    n_heads: int
    head_dim: int


def run_softmax(
    T: int = 32,
    n_heads: int = 4,
    head_dim: int = 16,
    seed: int = 0,
    *,
    block_size: int | None = None,
    inputs: np.ndarray | None = None,
) -> SoftmaxRun:
    """Generate T tokens through one causal self-attention layer (d_model = n_heads · head_dim) both ways.

    Weights are drawn N(0, 1/d_model) with zero biases, so q, k, v have unit variance and the attention is neither
    flat nor one-hot. Same seed, same layer and inputs. Each generation is timed once: the timed run is the one
    whose outputs are compared. ``block_size`` is FlashAttention's tile size, at most T (default min(8, T)).
    ``inputs`` [T, d_model] replaces the random token vectors (e.g. the story's, ``lineage.teach.story.token_vectors``).
    """
    checks.positive_int("T", T, maximum=DEMO_LIMITS["T"])
    checks.positive_int("n_heads", n_heads, maximum=SOFTMAX_MAX_HEADS)
    checks.positive_int("head_dim", head_dim, maximum=DEMO_LIMITS["K"])
    block_size = min(8, T) if block_size is None else checks.positive_int("block_size", block_size, maximum=T)
    d_model = n_heads * head_dim
    gen = torch.Generator().manual_seed(int(seed))
    # Built on the meta device, so its default initialisers never draw from torch's global generator: another
    # session may be seeding that one at this very moment (see hybrid.seeded_stack). Every parameter is set below.
    with torch.device("meta"):
        layer = CausalSelfAttention(d_model, n_heads)
    layer = layer.to_empty(device="cpu")
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * d_model**-0.5 if p.dim() == 2 else torch.zeros_like(p))
    x = torch.randn(1, T, d_model, generator=gen)
    if inputs is not None:
        if np.shape(inputs) != (T, d_model):
            raise ValueError(f"inputs must be [T, d_model] = [{T}, {d_model}], got shape {np.shape(inputs)}")
        x = torch.as_tensor(np.asarray(inputs), dtype=torch.float32)[None]
    device = get_device()
    layer, x = layer.to(device), x.to(device)
    with torch.inference_mode():
        (y_cached, cache), t_cached = timed(lambda: decode_cached(layer, x), device)
        (y_recompute, rows), t_recompute = timed(lambda: decode_recompute(layer, x), device)
        seconds = {"recompute": t_recompute, "cached": t_cached}
        q, k, v = (
            t.reshape(1, T, n_heads, head_dim).transpose(1, 2) for t in layer.c_attn(x).split(d_model, dim=-1)
        )  # (1, H, T, hd) each
        trace = trace_softmax(q, k, v)
        o_standard, _ = softmax_attention(q, k, v, mode="parallel")
        o_tiled, tiled = tiled_softmax_attention(q, k, v, block_size=block_size)
        q0, k0 = q[0, 0].double().cpu(), k[0, 0].double().cpu()
        scores = (q0 @ k0.T * head_dim**-0.5).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    io_lens = [2**i for i in range(4, 17)]
    return SoftmaxRun(
        trace=trace,
        scores=scores.numpy(),
        cost=recompute_generation_cost(T, d_model),
        rows_recompute=rows,
        rows_cached=T,
        layer_cache_bytes=cache.nbytes,
        err_recompute=rel_rms(y_recompute, y_cached.cpu()),
        seconds=seconds,
        tiled=tiled,
        err_tiled=rel_rms(o_tiled, o_standard.cpu()),
        io_seq_lens=np.array(io_lens),
        io_standard=np.array([standard_attention_io_bytes(n, head_dim).total for n in io_lens]),
        io_tiled=np.array([tiled_attention_io_bytes(n, head_dim, block_size=block_size).total for n in io_lens]),
        device=device_info(device).label,
        n_heads=n_heads,
        head_dim=head_dim,
    )
