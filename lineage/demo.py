"""Live runs for the app: deterministic inputs, one call per page, numpy out.

A stage page passes primitives (sizes, seed, knobs) and gets back everything its figures need: the inputs,
the per-step trace of the reference recurrence, the chunked and parallel outputs computed on the current
device, their agreement with the reference, and the measured times. Nothing here imports streamlit.

Gates are set by explicit rules rather than learned, so what the animation shows can be explained:
a scalar gate holds α_t near ``alpha`` (jittered by ``alpha_jitter``), and a per-channel gate spreads the
channels' α evenly from ``alpha`` (channel 0, the slowest to forget) down to ``alpha_min`` (the fastest).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from lineage import _checks as checks
from lineage.device import device_info, get_device, synchronize
from lineage.recurrence import MemoryTrace, chunk_memory, parallel_memory, recurrent_memory
from lineage.stages import stage

# Sizes a page may ask for. The recurrent trace stores T·K·V numbers per head, and the parallel form
# T²·K for per-channel gates, so these caps keep one run well under a second and a few MB on a small CPU.
DEMO_LIMITS = {"T": 256, "K": 64, "V": 64}


@dataclass(frozen=True)
class GateRule:
    """How the demo sets gates and write strengths (all explicit, none learned)."""

    alpha: float = 0.9  # α of a scalar gate, or of the slowest channel
    alpha_min: float = 0.9  # α of the fastest channel (per-channel gates); = alpha makes all channels equal
    alpha_jitter: float = 0.0  # random spread of logit(α) over time steps
    beta: float | None = 0.5  # write strength of the delta rule; None draws β_t = sigmoid(N(0, 1))


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
    err_chunk: float  # max |chunk − recurrent| / max |recurrent|
    err_parallel: float  # max |parallel − recurrent| / max |recurrent|
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


def make_inputs(stage_key: str, T: int, K: int, V: int, seed: int, rule: GateRule = GateRule()):
    """Deterministic inputs for a stage: q, k, v [1, 1, T, ·], g (or None), beta (or None), all fp32 on CPU.

    Keys are L2-normalised for the delta family (as its layers do); linear attention gets raw q, k (its
    feature map is applied by the op). Same seed, same inputs, for every stage — so pages compare like for like.
    """
    s = stage(stage_key)
    if not s.in_grid:
        raise ValueError(f"stage {stage_key!r} is not a linear-memory stage; use lineage.softmax for it")
    _check_sizes(T, K, V)
    for name in ("alpha", "alpha_min"):
        a = getattr(rule, name)
        if not 0.0 <= a <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {a}")
    if rule.beta is not None and not 0.0 <= rule.beta <= 1.0:
        raise ValueError(f"beta must lie in [0, 1] (or None for random), got {rule.beta}")
    gen = torch.Generator().manual_seed(int(seed))
    q = torch.randn(1, 1, T, K, generator=gen)
    k = torch.randn(1, 1, T, K, generator=gen)
    v = torch.randn(1, 1, T, V, generator=gen)
    jitter = torch.randn(1, 1, T, K, generator=gen)
    beta_noise = torch.randn(1, 1, T, generator=gen)
    if s.rule == "delta":
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    g = None
    if s.gate != "none":
        base = torch.linspace(rule.alpha, rule.alpha_min, K) if s.gate == "channel" else torch.full((K,), rule.alpha)
        logit = torch.logit(base.clamp(1e-6, 1 - 1e-6)) + rule.alpha_jitter * (
            jitter if s.gate == "channel" else jitter[..., :1]
        )
        alpha = torch.sigmoid(logit)
        alpha = torch.where(base >= 1.0, 1.0, torch.where(base <= 0.0, 0.0, alpha))  # keep exact 0 and 1
        g = torch.log(alpha)  # −inf where α = 0: a wipe
        g = g if s.gate == "channel" else g[..., 0]
    beta = None
    if s.rule == "delta":
        beta = torch.sigmoid(beta_noise) if rule.beta is None else torch.full((1, 1, T), float(rule.beta))
    return q, k, v, g, beta


def _max_rel_err(actual: torch.Tensor, reference: torch.Tensor) -> float:
    return float((actual.cpu() - reference).abs().max() / reference.abs().max().clamp_min(1e-30))


def _median_seconds(fn, device: torch.device, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        synchronize(device)
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def run_stage(
    stage_key: str,
    T: int = 32,
    K: int = 8,
    V: int = 8,
    seed: int = 0,
    rule: GateRule = GateRule(),
    *,
    chunk_size: int = 16,
    feature_map: str = "elu1",
    repeats: int = 3,
) -> StageRun:
    """Run a linear-memory stage three ways (recurrent reference with a trace, chunked, parallel) and compare."""
    from lineage.linear_attention import get_feature_map

    s = stage(stage_key)
    checks.chunk_size(chunk_size)
    q, k, v, g, beta = make_inputs(stage_key, T, K, V, seed, rule)
    if s.key == "linear_attention":  # the state carries the normaliser as a column fed by ones
        phi = get_feature_map(feature_map)
        q, k = phi(q), phi(k)
        v = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
    kw = dict(rule=s.rule, output_final_state=False)
    o_ref, _, trace = recurrent_memory(q, k, v, g, beta, trace=True, **kw)
    device = get_device()
    qd, kd, vd = (x.to(device) for x in (q, k, v))
    gd = None if g is None else g.to(device)
    bd = None if beta is None else beta.to(device)
    o_chunk, _ = chunk_memory(qd, kd, vd, gd, bd, chunk_size=chunk_size, **kw)
    o_par, _ = parallel_memory(qd, kd, vd, gd, bd, **kw)
    seconds = {
        "recurrent": _median_seconds(lambda: recurrent_memory(qd, kd, vd, gd, bd, **kw), device, repeats),
        "chunk": _median_seconds(
            lambda: chunk_memory(qd, kd, vd, gd, bd, chunk_size=chunk_size, **kw), device, repeats
        ),
        "parallel": _median_seconds(lambda: parallel_memory(qd, kd, vd, gd, bd, **kw), device, repeats),
    }
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
        err_chunk=_max_rel_err(o_chunk, o_ref),
        err_parallel=_max_rel_err(o_par, o_ref),
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
