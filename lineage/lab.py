"""Memory lab: every mechanism of the lineage on the same key–value stream, side by side.

The stage pages show one mechanism at a time. Here each experiment streams key–value writes into all of them at
once, reads back with cues, and measures what came back, so each step's gain (and cost) is a number, not a claim:

1. :func:`overwrite`     a key is written with v1, later with v2. Which mechanisms return v2?
2. :func:`capacity`      store N pairs, N from 1 to well past d_k; recall error against N.
3. :func:`topic_switch`  a stream on topic A, then on topic B. Who forgets A, and does A interfere with B?
4. :func:`retention`     long-lived facts in slow key channels, short-lived ones in fast channels: KDA's
                         per-channel gate against Gated DeltaNet's single gate at the same average decay.
5. :func:`needle`        a needle written early, then more writes than the state can hold: pure KDA vs the hybrid.

The lab works at the level of the memory ops, not trained layers, so every number can be explained:

* Keys are unit vectors in d_k dimensions: "orthogonal" keys come in blocks of d_k orthonormal vectors (a fresh
  random basis per block, as orthogonal as N > d_k keys can be); "random" keys are independent unit vectors.
  Values are independent unit vectors in d_v = d_k dimensions, so an error of 1 means "nothing useful came back".
* A read uses a cue: the stored key, or with ``noise`` > 0 the normalised sum k + noise·ε, ε ~ N(0, I/d_k).
* The fixed-state mechanisms are the public ops called with ``scale=1``, so S holds Σ k vᵀ exactly as in the
  recurrence. Linear attention uses ``feature_map="identity", normalize=False``: the pure additive outer-product
  memory, the same write as Mamba-2's with α = 1. (The published ELU+1 normalised form is available as
  ``"linear_attention_elu1"``: its positive features make every key overlap every other, so it returns an
  average of the stored values weighted by similarity; it is not in the default set.)
* Every cue reads after every write: each cue is one head of the op, all heads receive the same writes, and head
  r's query is cue r at every step, so o_t = S_tᵀ q_t is the read of cue r after t + 1 writes (see
  :func:`run_mechanisms`). One call per mechanism gives whole curves (recall against N, against time).
* Softmax attention is :func:`lineage.softmax.softmax_attention` over the cache of writes with a sharp scale
  (``SHARP_SCALE``): retrieval by key match. Its memory grows with every write.
* Gates and write strengths follow explicit rules, never learned (:class:`Gates`): a constant α per write for the
  scalar gates (Mamba-2, Gated DeltaNet); for KDA a slow set of channels (α_slow) and a fast set whose α is chosen
  so that the mean log-decay over channels equals log α — the same average decay as Gated DeltaNet; a constant β
  for every delta-rule write; and, at a topic switch, one step with α = α_reset for every gated mechanism.
* The "hybrid" is a KDA memory plus a softmax-attention memory over the same stream, its read combined by one
  explicit rule: the softmax read when its largest attention weight is at least ``HYBRID_CONFIDENCE`` (it found
  one matching key), KDA's read otherwise. This is a memory-level stand-in for Kimi Linear's periodic softmax
  (MLA) layers: it pays for the full cache, where Kimi Linear pays for it in one layer of four.

Each experiment returns a frozen dataclass of numpy arrays and per-mechanism floats; :func:`summary` writes its
"what this shows" sentence from the numbers (thresholds are the named constants below) and :func:`table` puts the
numbers in a DataFrame. :func:`run_all` and :func:`comparison_table` give the one-row-per-mechanism overview.
Nothing here imports streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from lineage.deltanet import deltanet
from lineage.gated_deltanet import gated_deltanet
from lineage.kda import kda
from lineage.linear_attention import linear_attention
from lineage.mamba2 import mamba2
from lineage.softmax import softmax_attention

DTYPE = torch.float64  # clean numerics: "exact" means ~1e-16 here, so a 1e-6 threshold is a real test

# ---- the mechanisms --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mechanism:
    key: str
    label: str
    write: str  # "cache" | "additive" | "delta" | "cache + delta"
    gate: str  # "none" | "scalar" | "channel"


MECHANISMS: dict[str, Mechanism] = {
    m.key: m
    for m in (
        Mechanism("softmax", "Softmax (full cache)", "cache", "none"),
        Mechanism("linear_attention", "Linear attention", "additive", "none"),
        Mechanism("deltanet", "DeltaNet", "delta", "none"),
        Mechanism("mamba2", "Mamba-2", "additive", "scalar"),
        Mechanism("gated_deltanet", "Gated DeltaNet", "delta", "scalar"),
        Mechanism("kda", "KDA", "delta", "channel"),
        Mechanism("hybrid", "Hybrid (KDA + softmax)", "cache + delta", "channel"),
        Mechanism("linear_attention_elu1", "Linear attention (ELU+1, normalised)", "additive", "none"),
    )
}
DEFAULT_MECHANISMS: tuple[str, ...] = tuple(k for k in MECHANISMS if k != "linear_attention_elu1")


def label(key: str) -> str:
    return MECHANISMS[key].label


# ---- constants: sizes, rules, thresholds ------------------------------------------------------------------------

KEY_KINDS = ("orthogonal", "random")
SHARP_SCALE = 50.0  # softmax scale: a matching unit key scores 50, an unrelated one ~50·N(0, 1/d_k): near one-hot
HYBRID_CONFIDENCE = 0.9  # the hybrid trusts its softmax read when one key takes at least this attention weight
MODE = "chunk"  # the ops' chunkwise-parallel form (equal to the recurrence to ~1e-15 in fp64)

# Caps: every experiment stays well under a second on a small CPU at the caps, ~0.1 s at the defaults.
MAX_D_K = 32
MIN_D_K = 2
MAX_PAIRS = 96  # writes in one stream (each cue reads after every write: R·T reads per mechanism)
MAX_TRIALS = 4  # independent streams averaged per point of the capacity curve
MAX_NOISE = 1.0

# Thresholds of the "what this shows" sentences.
RECOVERED = 0.05  # recall error below this: the value came back
LOST = 0.5  # recall error above this: the value is lost
BLEND_PART = 0.2  # a coefficient above this on both v1 and v2: a blend
CAPACITY_ERROR = 0.1  # the capacity of a mechanism: the largest N whose mean recall error stays below this
RECENT_VS_OLD = 0.2  # recent items recalled this much better than old ones: "keeps the recent, loses the old"
FORGOTTEN = 0.2  # topic A's remaining share below this: forgotten
KEPT = 0.5  # topic A's remaining share above this: kept
INTERFERENCE = 0.05  # extra error on topic B caused by topic A still being in memory
MARGIN = 0.05  # a difference in error smaller than this is "the same"


# ---- settings and gate rules ------------------------------------------------------------------------------------


def _check_range(name: str, x, lo: float, hi: float, *, lo_open: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be a number, got {x!r} ({type(x).__name__})")
    if math.isnan(x) or x > hi or x < lo or (lo_open and x == lo):
        raise ValueError(f"{name} must lie in {'(' if lo_open else '['}{lo}, {hi}], got {x}")
    return float(x)


def _check_int(name: str, x, lo: int, hi: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {x!r} ({type(x).__name__})")
    if not lo <= x <= hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {x}")
    return int(x)


@dataclass(frozen=True)
class LabSettings:
    """The stream every mechanism sees: how keys, values and cues are generated."""

    d_k: int = 16  # key dimension (values have the same): every fixed state is d_k × d_k numbers
    keys: str = "orthogonal"  # "orthogonal": blocks of orthonormal keys; "random": independent unit vectors
    noise: float = 0.0  # cue noise: a read uses normalize(k + noise·ε), ε ~ N(0, I/d_k)
    seed: int = 0

    def __post_init__(self):
        _check_int("d_k", self.d_k, MIN_D_K, MAX_D_K)
        if self.keys not in KEY_KINDS:
            raise ValueError(f"keys must be one of {', '.join(map(repr, KEY_KINDS))}, got {self.keys!r}")
        _check_range("noise", self.noise, 0.0, MAX_NOISE)
        _check_int("seed", self.seed, 0, 2**63 - 1)


@dataclass(frozen=True)
class Gates:
    """Explicit gate and write-strength rules (nothing is learned, so every result can be traced to these numbers).

    Scalar gates (Mamba-2, Gated DeltaNet) decay by ``alpha`` at every write. KDA splits its key channels: the first
    round(slow_fraction·d_k) decay by ``alpha_slow``; the rest by α_fast, chosen so that the mean log-decay over the
    channels equals log(alpha) — the same average forgetting as the scalar gate. Every delta-rule write uses
    ``beta``. At a topic switch every gated mechanism applies α = ``alpha_reset`` once (all channels).
    """

    alpha: float = 1.0  # per-write retention of the scalar gates; 1 = never forget
    beta: float = 1.0  # delta-rule write strength; 1 = the slot at k is replaced exactly (unit keys)
    slow_fraction: float = 0.5  # share of KDA's key channels that are slow
    alpha_slow: float = 1.0  # KDA's slow channels (>= alpha); the fast ones compensate to keep the same mean
    alpha_reset: float = 1.0  # α applied once at a topic switch; 1 = no reset, 0 = wipe

    def __post_init__(self):
        _check_range("alpha", self.alpha, 0.0, 1.0, lo_open=True)
        _check_range("beta", self.beta, 0.0, 1.0)
        _check_range("slow_fraction", self.slow_fraction, 0.0, 1.0, lo_open=True)
        if self.slow_fraction >= 1.0:
            raise ValueError(f"slow_fraction must lie in (0, 1): KDA needs fast channels too, got {self.slow_fraction}")
        _check_range("alpha_slow", self.alpha_slow, 0.0, 1.0, lo_open=True)
        if self.alpha_slow < self.alpha:
            raise ValueError(
                f"alpha_slow must be >= alpha (slow channels forget less than average), got alpha_slow="
                f"{self.alpha_slow} < alpha={self.alpha}"
            )
        _check_range("alpha_reset", self.alpha_reset, 0.0, 1.0)

    def n_slow(self, d_k: int) -> int:
        """Number of slow KDA channels: round(slow_fraction·d_k), at least 1 and leaving at least 1 fast."""
        return min(max(round(self.slow_fraction * d_k), 1), d_k - 1)

    def kda_alpha(self, d_k: int) -> np.ndarray:
        """KDA's α per key channel, [d_k]: slow channels first. Mean of log α over channels = log(alpha)."""
        n_slow = self.n_slow(d_k)
        # d_k·log α = n_slow·log α_slow + n_fast·log α_fast
        log_fast = (d_k * math.log(self.alpha) - n_slow * math.log(self.alpha_slow)) / (d_k - n_slow)
        return np.array([self.alpha_slow] * n_slow + [math.exp(log_fast)] * (d_k - n_slow))


# ---- streams: keys, values, cues --------------------------------------------------------------------------------


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def make_keys(n: int, d_k: int, kind: str, gen: torch.Generator, channels: slice | None = None) -> torch.Tensor:
    """n unit keys in d_k dimensions, [n, d_k] fp64, supported on ``channels`` (default: all).

    "orthogonal": consecutive blocks of m orthonormal keys (m = number of channels), each block a fresh random
    basis (QR of a Gaussian matrix), so keys within a block never interfere and keys of different blocks do.
    "random": independent Gaussian vectors, normalised.
    """
    channels = slice(0, d_k) if channels is None else channels
    m = len(range(d_k)[channels])
    if kind == "orthogonal":
        blocks = []
        for _ in range(-(-n // m)):
            q, r = torch.linalg.qr(torch.randn(m, m, generator=gen, dtype=DTYPE))
            blocks.append((q * torch.sign(torch.diagonal(r))).T)  # sign fix: a unique, uniformly random basis
        sub = torch.cat(blocks)[:n]
    else:
        sub = F.normalize(torch.randn(n, m, generator=gen, dtype=DTYPE), dim=-1)
    keys = torch.zeros(n, d_k, dtype=DTYPE)
    keys[:, channels] = sub
    return keys


def make_values(n: int, d_v: int, gen: torch.Generator) -> torch.Tensor:
    """n independent unit values, [n, d_v] fp64."""
    return F.normalize(torch.randn(n, d_v, generator=gen, dtype=DTYPE), dim=-1)


def make_cues(keys: torch.Tensor, noise: float, gen: torch.Generator) -> torch.Tensor:
    """Read cues for ``keys`` [..., d_k]: normalize(k + noise·ε), ε ~ N(0, I/d_k) (the keys themselves at noise 0)."""
    eps = torch.randn(keys.shape, generator=gen, dtype=DTYPE) / math.sqrt(keys.shape[-1])
    return keys if noise == 0 else F.normalize(keys + noise * eps, dim=-1)


# ---- running every mechanism on a stream -----------------------------------------------------------------------


@dataclass(frozen=True)
class Reads:
    """What each mechanism returned for each cue after every write, plus how the hybrid decided.

    Attributes:
        out: mechanism key -> [B, R, T, V]; out[m][b, r, t] is the read of cue r after the write at step t
        confidence: [B, R, T] the softmax cache's largest attention weight
        hybrid_used_softmax: [B, R, T] bool, where the hybrid took the softmax read
    """

    out: dict[str, np.ndarray]
    confidence: np.ndarray
    hybrid_used_softmax: np.ndarray


def _softmax_reads(keys, values, cues):
    """Softmax attention of every cue over the cache after every write: (reads [B, R, T, V], max weight [B, R, T]).

    One call: the R cues are R query heads sharing one key/value head (multi-query attention), every cue
    repeated at every step, causal, so the row at step t attends to the cache of writes 0…t. The values carry an
    identity block beside them, whose output is the attention row itself.
    """
    B, T, V = values.shape
    R = cues.shape[1]
    v_aug = torch.cat([values, torch.eye(T, dtype=DTYPE).expand(B, T, T)], dim=-1)  # (B, T, V + T)
    q = cues[:, :, None, :].expand(B, R, T, cues.shape[-1])  # (B, R, T, K)
    o, _ = softmax_attention(q, keys[:, None], v_aug[:, None], scale=SHARP_SCALE, causal=True)
    return o[..., :V], o[..., V:].amax(dim=-1)


def run_mechanisms(
    keys: torch.Tensor,
    values: torch.Tensor,
    cues: torch.Tensor,
    gates: Gates,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
    reset: int | None = None,
) -> Reads:
    """Stream the writes into every mechanism and read every cue after every write.

    Each cue gets its own head: all R heads receive the same writes (k_t, v_t, gates, β), and head r's query is
    cue r at every step, so the op's output o_t = S_tᵀ q_t at step t is "the read of cue r after t + 1 writes".
    The whole trajectory of reads comes from one call per mechanism.

    Args:
        keys: [B, T, K] unit keys; values: [B, T, V]; cues: [B, R, K]
        gates: the rules; mechanisms: keys of MECHANISMS
        reset: a step at which the gated mechanisms apply α = gates.alpha_reset instead of their usual α, or None

    Returns:
        :class:`Reads` with out[m]: [B, R, T, V]
    """
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown:
        raise ValueError(f"mechanisms must be among {', '.join(map(repr, MECHANISMS))}, got {unknown}")
    B, T, K = keys.shape
    R = cues.shape[1]
    q = cues[:, :, None, :].expand(B, R, T, K)  # (B, R, T, K): head r asks cue r at every step
    k = keys[:, None].expand(B, R, T, K)  # every head sees the same writes
    v = values[:, None].expand(B, R, T, values.shape[-1])
    beta = torch.full((B, R, T), gates.beta, dtype=DTYPE)
    log_alpha = torch.full((T,), math.log(gates.alpha), dtype=DTYPE)
    log_kda = torch.as_tensor(np.log(gates.kda_alpha(K)), dtype=DTYPE).expand(T, K).clone()  # (T, K)
    if reset is not None:
        with np.errstate(divide="ignore"):
            log_reset = float(np.log(gates.alpha_reset))  # −inf for a wipe: the ops accept it
        log_alpha[reset] = log_reset
        log_kda[reset] = log_reset
    g = log_alpha.expand(B, R, T)
    g_kda = log_kda.expand(B, R, T, K)

    ops = {
        "linear_attention": lambda: linear_attention(
            q, k, v, feature_map="identity", normalize=False, scale=1.0, mode=MODE
        ),
        "linear_attention_elu1": lambda: linear_attention(q, k, v, feature_map="elu1", normalize=True, mode=MODE),
        "deltanet": lambda: deltanet(q, k, v, beta, scale=1.0, mode=MODE),
        "mamba2": lambda: mamba2(q, k, v, g, scale=1.0, mode=MODE),
        "gated_deltanet": lambda: gated_deltanet(q, k, v, g, beta, scale=1.0, mode=MODE),
        "kda": lambda: kda(q, k, v, g_kda, beta, scale=1.0, mode=MODE),
    }
    needed = set(mechanisms) | ({"kda"} if "hybrid" in mechanisms else set())
    out = {m: ops[m]()[0].numpy() for m in ops if m in needed}
    # the softmax cache is always read: its confidence is part of the result
    sm, confidence = (x.numpy() for x in _softmax_reads(keys, values, cues))
    out["softmax"] = sm
    used = confidence >= HYBRID_CONFIDENCE
    if "hybrid" in mechanisms:
        # the hybrid's rule: the softmax read when one key dominates, KDA's read otherwise
        out["hybrid"] = np.where(used[..., None], sm, out["kda"])
    return Reads(out={m: out[m] for m in mechanisms}, confidence=confidence, hybrid_used_softmax=used)


def recall_error(reads: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """‖read − target‖ / ‖target‖ over the last axis."""
    return np.linalg.norm(reads - targets, axis=-1) / np.linalg.norm(targets, axis=-1)


def nearest_correct(
    reads: np.ndarray, candidates: np.ndarray, target_index: np.ndarray, stored: np.ndarray | None = None
) -> np.ndarray:
    """Whether the stored value most aligned with each read (largest dot product) is the target: [..., R] bool.

    reads [..., R, V]; candidates [..., C, V]; target_index [..., R]; stored [..., C] bool or None: which
    candidates had been written (the others cannot be chosen). A read of (numerically) zero is never right.
    """
    scores = reads @ np.swapaxes(candidates, -1, -2)  # (..., R, C)
    if stored is not None:
        scores = np.where(stored[..., None, :], scores, -np.inf)
    return (scores.argmax(axis=-1) == target_index) & (np.linalg.norm(reads, axis=-1) > 1e-9)


def _state_numbers(m: str, n_writes: int, d_k: int) -> int:
    """Numbers a mechanism keeps after n_writes writes (d_v = d_k): the cache grows, the states do not."""
    cache = n_writes * 2 * d_k
    state = d_k * d_k + (d_k if m == "linear_attention_elu1" else 0)  # ELU+1 also keeps the normaliser z
    return {"cache": cache, "cache + delta": cache + d_k * d_k}.get(MECHANISMS[m].write, state)


def _join(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _table(rows: dict[str, dict[str, float]]) -> pd.DataFrame:
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index = [label(m) for m in rows]
    df.index.name = "mechanism"
    return df


# ---- 1. overwrite ------------------------------------------------------------------------------------------------

OVERWRITE_GATES = Gates(alpha=0.95)
MAX_BETWEEN = 128


@dataclass(frozen=True)
class OverwriteResult:
    """Key k* written with v1, then ``n_between`` other pairs, then k* with v2; k* read back once.

    Attributes:
        v1, v2: [V]; retrieved: mechanism -> [V]
        error_v2, error_v1: mechanism -> ‖r − v2‖, ‖r − v1‖ (unit values)
        coef_v1, coef_v2: mechanism -> least-squares r ≈ a·v1 + b·v2 (a, b); residual: ‖r − a v1 − b v2‖
        hybrid_used_softmax: whether the hybrid took its softmax read; softmax_confidence: that read's largest weight
    """

    settings: LabSettings
    gates: Gates
    n_between: int
    mechanisms: tuple[str, ...]
    v1: np.ndarray
    v2: np.ndarray
    retrieved: dict[str, np.ndarray]
    error_v2: dict[str, float]
    error_v1: dict[str, float]
    coef_v1: dict[str, float]
    coef_v2: dict[str, float]
    residual: dict[str, float]
    softmax_confidence: float
    hybrid_used_softmax: bool

    @property
    def recovered(self) -> tuple[str, ...]:
        """Mechanisms whose read is v2 (error below RECOVERED)."""
        return tuple(m for m in self.mechanisms if self.error_v2[m] < RECOVERED)

    @property
    def blended(self) -> tuple[str, ...]:
        """Mechanisms (not recovered) whose read carries both v1 and v2 (both coefficients above BLEND_PART)."""
        return tuple(
            m
            for m in self.mechanisms
            if m not in self.recovered and self.coef_v1[m] > BLEND_PART and self.coef_v2[m] > BLEND_PART
        )


def overwrite(
    settings: LabSettings = LabSettings(),
    gates: Gates = OVERWRITE_GATES,
    *,
    n_between: int = 4,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> OverwriteResult:
    """Write (k*, v1), ``n_between`` filler pairs, (k*, v2); read k*. Does the memory return v2, v1 or a blend?"""
    _check_int("n_between", n_between, 0, MAX_BETWEEN)
    d = settings.d_k
    gen = _generator(settings.seed)
    keys = make_keys(n_between + 1, d, settings.keys, gen)  # key 0 is k*, the rest fillers
    values = make_values(n_between + 2, d, gen)  # v1, fillers, v2
    stream_keys = torch.cat([keys, keys[:1]])  # k*, fillers, k*
    cue = make_cues(keys[:1], settings.noise, gen)
    reads = run_mechanisms(stream_keys[None], values[None], cue[None], gates, mechanisms)
    v1, v2 = values[0].numpy(), values[-1].numpy()
    basis = np.stack([v1, v2], axis=1)  # (V, 2)
    retrieved, e1, e2, c1, c2, res = {}, {}, {}, {}, {}, {}
    for m in mechanisms:
        r = reads.out[m][0, 0, -1]  # the read after the last write
        (a, b), *_ = np.linalg.lstsq(basis, r, rcond=None)
        retrieved[m] = r
        e1[m], e2[m] = float(np.linalg.norm(r - v1)), float(np.linalg.norm(r - v2))
        c1[m], c2[m] = float(a), float(b)
        res[m] = float(np.linalg.norm(r - basis @ np.array([a, b])))
    return OverwriteResult(
        settings=settings,
        gates=gates,
        n_between=n_between,
        mechanisms=tuple(mechanisms),
        v1=v1,
        v2=v2,
        retrieved=retrieved,
        error_v2=e2,
        error_v1=e1,
        coef_v1=c1,
        coef_v2=c2,
        residual=res,
        softmax_confidence=float(reads.confidence[0, 0, -1]),
        hybrid_used_softmax=bool(reads.hybrid_used_softmax[0, 0, -1]),
    )


def overwrite_table(r: OverwriteResult) -> pd.DataFrame:
    return _table(
        {
            m: {
                "error vs v2": r.error_v2[m],
                "error vs v1": r.error_v1[m],
                "coefficient on v1": r.coef_v1[m],
                "coefficient on v2": r.coef_v2[m],
                "rest (crosstalk)": r.residual[m],
            }
            for m in r.mechanisms
        }
    )


def overwrite_summary(r: OverwriteResult) -> str:
    parts = []
    if r.recovered:
        parts.append(f"{_join([label(m) for m in r.recovered])} recovered v2 (error below {RECOVERED}).")
    else:
        parts.append(f"No mechanism recovered v2 (error below {RECOVERED}).")
    if r.blended:
        blends = [f"{label(m)} ({r.coef_v1[m]:.2f}·v1 + {r.coef_v2[m]:.2f}·v2)" for m in r.blended]
        parts.append(f"Returned a blend of the old and the new value: {_join(blends)}.")
    old = [m for m in r.mechanisms if r.error_v1[m] < RECOVERED]
    if old:
        parts.append(f"Still returned the old value v1: {_join([label(m) for m in old])}.")
    rest = [m for m in r.mechanisms if m not in r.recovered + r.blended + tuple(old)]
    if rest:
        neither = [f"{label(m)} (error vs v2 {r.error_v2[m]:.2f}, vs v1 {r.error_v1[m]:.2f})" for m in rest]
        parts.append(f"Returned neither value cleanly: {_join(neither)}.")
    if "hybrid" in r.mechanisms:
        source = "its softmax cache" if r.hybrid_used_softmax else "KDA"
        parts.append(
            f"The hybrid used {source}: the softmax cache's largest attention weight was "
            f"{r.softmax_confidence:.2f} (threshold {HYBRID_CONFIDENCE})."
        )
    return " ".join(parts)


# ---- 2. capacity -------------------------------------------------------------------------------------------------

CAPACITY_GATES = Gates()


@dataclass(frozen=True)
class CapacityResult:
    """Recall of N stored pairs, for N = 1 … n_max; averaged over ``trials`` streams.

    Attributes:
        n: [n_max] the values of N (1 … n_max)
        error: mechanism -> [n_max] mean recall error over the N pairs (and the trials)
        accuracy: mechanism -> [n_max] share of reads whose most aligned stored value is the right one
        recent_error, old_error: mechanism -> mean error at N = n_max on the last d_k pairs / on the earlier ones
        capacity: mechanism -> the largest N up to which every point's error stays below CAPACITY_ERROR (0 if none)
        memory: mechanism -> numbers kept at N = n_max
    """

    settings: LabSettings
    gates: Gates
    trials: int
    mechanisms: tuple[str, ...]
    n: np.ndarray
    error: dict[str, np.ndarray]
    accuracy: dict[str, np.ndarray]
    recent_error: dict[str, float]
    old_error: dict[str, float]
    capacity: dict[str, int]
    memory: dict[str, int]

    def error_at(self, m: str, n: int) -> float:
        """Error of mechanism m with N = n pairs stored (n clipped to 1 … n_max)."""
        return float(self.error[m][min(max(n, 1), len(self.n)) - 1])


def _capacity(error: np.ndarray) -> int:
    """The largest N such that the error stays below CAPACITY_ERROR for every N' ≤ N (0 if none); error[N − 1]."""
    below = error < CAPACITY_ERROR
    return int(below.size if below.all() else below.argmin())


def capacity(
    settings: LabSettings = LabSettings(),
    gates: Gates = CAPACITY_GATES,
    *,
    n_max: int | None = None,
    trials: int = 2,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> CapacityResult:
    """Store N pairs (N = 1 … n_max, default 3·d_k), read all N back; recall error and accuracy against N.

    One stream of n_max writes per trial, every key's cue read after every write: the reads after write N − 1
    are the recall of "N pairs stored", so one call per mechanism computes the whole curve.
    """
    d = settings.d_k
    n_max = 3 * d if n_max is None else n_max
    _check_int("n_max", n_max, 1, MAX_PAIRS)
    _check_int("trials", trials, 1, MAX_TRIALS)
    gen = _generator(settings.seed)
    keys = torch.stack([make_keys(n_max, d, settings.keys, gen) for _ in range(trials)])  # (trials, n_max, K)
    values = torch.stack([make_values(n_max, d, gen) for _ in range(trials)])  # (trials, n_max, V)
    cues = make_cues(keys, settings.noise, gen)
    reads = run_mechanisms(keys, values, cues, gates, mechanisms)
    v = values.numpy()
    stored = np.tril(np.ones((n_max, n_max), dtype=bool))  # [t, r]: pair r is stored after write t
    n_stored = stored.sum(axis=1)  # N = t + 1
    targets = np.broadcast_to(np.arange(n_max), (trials, n_max, n_max))  # [b, t, r] -> r
    err, acc, recent, old, cap, mem = {}, {}, {}, {}, {}, {}
    n_recent = min(d, n_max)
    for m in mechanisms:
        out = reads.out[m].transpose(0, 2, 1, 3)  # (trials, t, r, V): cue r read after write t
        e = recall_error(out, v[:, None])  # (trials, t, r)
        ok = nearest_correct(out, v[:, None], targets, stored[None])  # (trials, t, r)
        err[m] = (e * stored).sum(axis=(0, 2)) / (trials * n_stored)
        acc[m] = (ok * stored).sum(axis=(0, 2)) / (trials * n_stored)
        last = e[:, -1]  # (trials, n_max): every pair after all n_max writes
        recent[m] = float(last[:, n_max - n_recent :].mean())
        old[m] = float(last[:, : n_max - n_recent].mean()) if n_max > n_recent else float("nan")
        cap[m] = _capacity(err[m])
        mem[m] = _state_numbers(m, n_max, d)
    return CapacityResult(
        settings=settings,
        gates=gates,
        trials=trials,
        mechanisms=tuple(mechanisms),
        n=np.arange(1, n_max + 1),
        error=err,
        accuracy=acc,
        recent_error=recent,
        old_error=old,
        capacity=cap,
        memory=mem,
    )


def capacity_table(r: CapacityResult) -> pd.DataFrame:
    d, n_max = r.settings.d_k, int(r.n[-1])
    return _table(
        {
            m: {
                f"holds N ≤ (error < {CAPACITY_ERROR})": r.capacity[m],
                f"error at N = d_k = {d}": r.error_at(m, d),
                f"error at N = {n_max}": float(r.error[m][-1]),
                f"accuracy at N = {n_max}": float(r.accuracy[m][-1]),
                f"error on the last {min(d, n_max)}": r.recent_error[m],
                "error on the older ones": r.old_error[m],
                f"numbers stored at N = {n_max}": r.memory[m],
            }
            for m in r.mechanisms
        }
    )


def _writes_clause(r: CapacityResult, m: str) -> str:
    """How mechanism m fails past capacity: keeps recent items and loses old ones, or blurs all alike."""
    recent, old = r.recent_error[m], r.old_error[m]
    if math.isnan(old):
        return f"{label(m)}'s error at N = {int(r.n[-1])} is {r.error[m][-1]:.2f}"
    if old - recent > RECENT_VS_OLD and recent < CAPACITY_ERROR:
        return (
            f"{label(m)} keeps its most recent {r.settings.d_k} items (error {recent:.2f}) and loses the older ones "
            f"(error {old:.2f})"
        )
    if old - recent > RECENT_VS_OLD:
        return f"{label(m)} recalls recent items better than old ones (error {recent:.2f} vs {old:.2f})"
    return f"{label(m)} blurs old and recent items alike (error {old:.2f} on old, {recent:.2f} on recent)"


def capacity_summary(r: CapacityResult) -> str:
    d, n_max = r.settings.d_k, int(r.n[-1])
    parts = []
    if "softmax" in r.mechanisms:
        worst = float(r.error["softmax"].max())
        verdict = "stays flat" if worst < RECOVERED else "does not stay flat"
        parts.append(
            f"Softmax attention's error {verdict} (at most {worst:.2g} for every N up to {n_max}), because its "
            f"cache grows to {n_max} entries ({r.memory['softmax']:,} numbers)."
        )
    fixed = [m for m in r.mechanisms if MECHANISMS[m].write in ("additive", "delta")]
    if fixed:
        caps = [f"{label(m)} {r.capacity[m]}" for m in fixed]
        parts.append(
            f"The fixed {d}×{d} states hold this many pairs with error below {CAPACITY_ERROR}: {_join(caps)} "
            f"(d_k = {d})."
        )
    clauses = [_writes_clause(r, m) for m in ("linear_attention", "deltanet") if m in r.mechanisms]
    if clauses and n_max > d:
        parts.append(f"Past capacity, at N = {n_max}: {'; '.join(clauses)}.")
    return " ".join(parts)


# ---- 3. topic switch ---------------------------------------------------------------------------------------------

TOPIC_GATES = Gates(alpha_reset=0.0)


@dataclass(frozen=True)
class TopicSwitchResult:
    """n_a pairs on topic A, a switch (one reset step for the gated mechanisms), then n_b pairs on topic B.

    Attributes:
        steps: [n_b + 1] B writes so far (0 … n_b)
        a_kept_curve: mechanism -> [n_b + 1] how much of A's values the A cues still return (mean ⟨r, v_A⟩)
        a_kept, a_error: mechanism -> at the end: A's remaining share and A's recall error
        b_error: mechanism -> recall error on B at the end
        b_error_alone: mechanism -> the same B stream written into an empty memory (no topic A)
        b_accuracy: mechanism -> share of B reads whose most aligned stored value is the right one
    """

    settings: LabSettings
    gates: Gates
    n_a: int
    n_b: int
    mechanisms: tuple[str, ...]
    steps: np.ndarray
    a_kept_curve: dict[str, np.ndarray]
    a_kept: dict[str, float]
    a_error: dict[str, float]
    b_error: dict[str, float]
    b_error_alone: dict[str, float]
    b_accuracy: dict[str, float]

    @property
    def forgot_a(self) -> tuple[str, ...]:
        return tuple(m for m in self.mechanisms if self.a_kept[m] < FORGOTTEN)

    @property
    def kept_a(self) -> tuple[str, ...]:
        return tuple(m for m in self.mechanisms if self.a_kept[m] > KEPT)

    @property
    def interfered(self) -> tuple[str, ...]:
        """Mechanisms whose B recall is worse (by more than INTERFERENCE) because A was written first."""
        return tuple(m for m in self.mechanisms if self.b_error[m] - self.b_error_alone[m] > INTERFERENCE)


def topic_switch(
    settings: LabSettings = LabSettings(),
    gates: Gates = TOPIC_GATES,
    *,
    n_a: int | None = None,
    n_b: int | None = None,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> TopicSwitchResult:
    """Topic A (n_a pairs, default d_k), then topic B (n_b pairs, default d_k / 2); read A and B after the switch.

    The gated mechanisms apply α = gates.alpha_reset at the first B write (the explicit reset rule). The B stream
    is also written into an empty memory, so the damage A does to B is measured, not assumed.
    """
    d = settings.d_k
    n_a = d if n_a is None else n_a
    n_b = max(d // 2, 1) if n_b is None else n_b
    _check_int("n_a", n_a, 1, MAX_PAIRS // 2)
    _check_int("n_b", n_b, 1, MAX_PAIRS // 2)
    gen = _generator(settings.seed)
    keys = torch.cat([make_keys(n_a, d, settings.keys, gen), make_keys(n_b, d, settings.keys, gen)])
    values = make_values(n_a + n_b, d, gen)
    cues = make_cues(keys, settings.noise, gen)
    T = n_a + n_b
    reads = run_mechanisms(keys[None], values[None], cues[None], gates, mechanisms, reset=n_a)
    # the same B stream (same keys, values, cues) written into an empty memory
    alone = run_mechanisms(keys[None, n_a:], values[None, n_a:], cues[None, n_a:], gates, mechanisms)
    v = values.numpy()
    va, vb = v[:n_a], v[n_a:]
    curve, kept, a_err, b_err, b_alone, b_acc = {}, {}, {}, {}, {}, {}
    for m in mechanisms:
        out = reads.out[m][0]  # (R = T, T, V): cue r after write t
        ra = out[:n_a, n_a - 1 :]  # (n_a, n_b + 1, V): A's cues after j = 0 … n_b writes of B
        curve[m] = np.einsum("rjv,rv->jr", ra, va).mean(axis=1)
        kept[m] = float(curve[m][-1])
        a_err[m] = float(recall_error(out[:n_a, -1], va).mean())
        b_err[m] = float(recall_error(out[n_a:, -1], vb).mean())
        b_alone[m] = float(recall_error(alone.out[m][0, :, -1], vb).mean())
        b_acc[m] = float(nearest_correct(out[n_a:, -1], v, np.arange(n_a, T)).mean())
    return TopicSwitchResult(
        settings=settings,
        gates=gates,
        n_a=n_a,
        n_b=n_b,
        mechanisms=tuple(mechanisms),
        steps=np.arange(n_b + 1),
        a_kept_curve=curve,
        a_kept=kept,
        a_error=a_err,
        b_error=b_err,
        b_error_alone=b_alone,
        b_accuracy=b_acc,
    )


def topic_switch_table(r: TopicSwitchResult) -> pd.DataFrame:
    return _table(
        {
            m: {
                "topic A kept ⟨r, v_A⟩": r.a_kept[m],
                "error on A": r.a_error[m],
                "error on B": r.b_error[m],
                "error on B without A": r.b_error_alone[m],
                "accuracy on B": r.b_accuracy[m],
            }
            for m in r.mechanisms
        }
    )


def topic_switch_summary(r: TopicSwitchResult) -> str:
    parts = []
    if r.forgot_a:
        clean = [m for m in r.forgot_a if m not in r.interfered]
        if len(clean) == len(r.forgot_a):
            tail = " and read topic B as well as if A had never been written"
        elif clean:
            tail = f"; of these, {_join([label(m) for m in clean])} read topic B as well as if A had never been written"
        else:
            tail = ""
        parts.append(
            f"After the switch {_join([label(m) for m in r.forgot_a])} forgot topic A (what A's cues return is "
            f"below {FORGOTTEN} of A's values){tail}."
        )
    else:
        parts.append(f"No mechanism forgot topic A (each still returns at least {FORGOTTEN} of A's values).")
    if r.kept_a:
        kept = [f"{label(m)} ({r.a_kept[m]:.2f})" for m in r.kept_a]
        parts.append(f"Still holding A: {_join(kept)}.")
    if r.interfered:
        hurt = [f"{label(m)} (error {r.b_error[m]:.2f} instead of {r.b_error_alone[m]:.2f})" for m in r.interfered]
        parts.append(f"What is left of A interferes with reading B in {_join(hurt)}.")
    else:
        parts.append("Nowhere did A make B harder to read.")
    return " ".join(parts)


# ---- 4. per-channel retention ------------------------------------------------------------------------------------

RETENTION_GATES = Gates(alpha=0.9, alpha_slow=1.0)
RECENT_READS = 4  # the short-lived facts read back: the last few written


@dataclass(frozen=True)
class RetentionResult:
    """Long-lived facts (keys in KDA's slow channels) first, then short-lived ones (keys in the fast channels).

    Attributes:
        lags: [L] steps since a write; retention: name -> [L] the share a gate leaves after that many steps
            ("KDA slow channels", "KDA fast channels", "Gated DeltaNet")
        kda_alpha: [d_k] KDA's α per channel; n_slow: number of slow channels
        long_error, recent_error: mechanism -> mean recall error on the long-lived facts / the last RECENT_READS
            short-lived facts; long_accuracy: share of long-lived facts still recognisable
        short_written: [n_short + 1] short-lived facts written so far; long_error_curve: mechanism -> [n_short + 1]
            the long-lived facts' mean recall error at that point
    """

    settings: LabSettings
    gates: Gates
    n_long: int
    n_short: int
    mechanisms: tuple[str, ...]
    lags: np.ndarray
    retention: dict[str, np.ndarray]
    kda_alpha: np.ndarray
    n_slow: int
    long_error: dict[str, float]
    recent_error: dict[str, float]
    long_accuracy: dict[str, float]
    short_written: np.ndarray
    long_error_curve: dict[str, np.ndarray]


def retention(
    settings: LabSettings = LabSettings(),
    gates: Gates = RETENTION_GATES,
    *,
    n_long: int = 4,
    n_short: int | None = None,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> RetentionResult:
    """``n_long`` facts that must last, then ``n_short`` (default 2·d_k) short-lived ones; read the long facts and
    the last RECENT_READS short ones.

    Long-lived facts are written with keys in KDA's slow channels, short-lived ones in its fast channels. A trained
    KDA learns to route keys this way; here the lab routes them by construction, so the gate alone decides.
    """
    d = settings.d_k
    n_short = 2 * d if n_short is None else n_short
    n_slow = gates.n_slow(d)
    _check_int("n_long", n_long, 1, MAX_PAIRS // 2)
    _check_int("n_short", n_short, RECENT_READS, MAX_PAIRS // 2)
    gen = _generator(settings.seed)
    keys = torch.cat(
        [
            make_keys(n_long, d, settings.keys, gen, channels=slice(0, n_slow)),
            make_keys(n_short, d, settings.keys, gen, channels=slice(n_slow, d)),
        ]
    )
    T = n_long + n_short
    values = make_values(T, d, gen)
    read_idx = np.r_[np.arange(n_long), np.arange(T - RECENT_READS, T)]
    cues = make_cues(keys[read_idx], settings.noise, gen)
    reads = run_mechanisms(keys[None], values[None], cues[None], gates, mechanisms)
    v = values.numpy()
    long_err, recent_err, long_acc, long_curve = {}, {}, {}, {}
    for m in mechanisms:
        out = reads.out[m][0]  # (R, T, V)
        e = recall_error(out[:, -1], v[read_idx])
        long_err[m] = float(e[:n_long].mean())
        recent_err[m] = float(e[n_long:].mean())
        long_acc[m] = float(nearest_correct(out[:n_long, -1], v, np.arange(n_long)).mean())
        long_curve[m] = recall_error(out[:n_long, n_long - 1 :], v[:n_long, None]).mean(axis=0)
    alphas = gates.kda_alpha(d)
    lags = np.arange(T + 1)
    curves = {
        "KDA slow channels": alphas[0] ** lags,
        "KDA fast channels": alphas[-1] ** lags,
        "Gated DeltaNet": gates.alpha**lags,
    }
    return RetentionResult(
        settings=settings,
        gates=gates,
        n_long=n_long,
        n_short=n_short,
        mechanisms=tuple(mechanisms),
        lags=lags,
        retention=curves,
        kda_alpha=alphas,
        n_slow=n_slow,
        long_error=long_err,
        recent_error=recent_err,
        long_accuracy=long_acc,
        short_written=np.arange(n_short + 1),
        long_error_curve=long_curve,
    )


def retention_table(r: RetentionResult) -> pd.DataFrame:
    return _table(
        {
            m: {
                "error on long-lived facts": r.long_error[m],
                "long-lived facts recognised": r.long_accuracy[m],
                f"error on the last {RECENT_READS} short-lived": r.recent_error[m],
            }
            for m in r.mechanisms
        }
    )


def retention_summary(r: RetentionResult) -> str:
    if "kda" not in r.mechanisms or "gated_deltanet" not in r.mechanisms:
        return "This experiment compares KDA with Gated DeltaNet; include both mechanisms."
    kl, gl = r.long_error["kda"], r.long_error["gated_deltanet"]
    kr, gr = r.recent_error["kda"], r.recent_error["gated_deltanet"]
    a_slow, a_fast = r.kda_alpha[0], r.kda_alpha[-1]
    head = (
        f"At the same average decay (mean log α = log {r.gates.alpha:.3g}; KDA: {r.n_slow} slow channels at "
        f"α = {a_slow:.3g}, {r.settings.d_k - r.n_slow} fast at α = {a_fast:.3g}),"
    )
    if kl < gl - MARGIN and kl < RECOVERED:
        long = f"KDA kept the long-lived facts (error {kl:.2f}) that Gated DeltaNet's single gate let fade ({gl:.2f})"
    elif kl < gl - MARGIN:
        long = f"KDA kept more of the long-lived facts than Gated DeltaNet (error {kl:.2f} vs {gl:.2f})"
    elif gl < kl - MARGIN:
        long = f"Gated DeltaNet kept the long-lived facts better than KDA (error {gl:.2f} vs {kl:.2f})"
    else:
        long = f"KDA and Gated DeltaNet kept the long-lived facts equally well (error {kl:.2f} vs {gl:.2f})"
    if kr > gr + MARGIN:
        recent = f"on the recent short-lived facts KDA pays with its faster channels (error {kr:.2f} vs {gr:.2f})"
    elif gr > kr + MARGIN:
        recent = f"and KDA also read the recent short-lived facts better (error {kr:.2f} vs {gr:.2f})"
    else:
        recent = f"and both read the recent short-lived facts about equally (error {kr:.2f} vs {gr:.2f})"
    joiner = "; " if kr > gr + MARGIN else " "
    return f"{head} {long}{joiner}{recent}."


# ---- 5. hybrid retrieval: the needle -----------------------------------------------------------------------------

NEEDLE_GATES = Gates(alpha=0.98, alpha_slow=1.0)


@dataclass(frozen=True)
class NeedleResult:
    """A needle pair written first, then up to ``n_fill`` filler pairs; the needle read after every filler.

    Attributes:
        fills: [n_fill + 1] fillers written after the needle (0 … n_fill)
        error: mechanism -> [n_fill + 1] the needle's recall error
        correct: mechanism -> [n_fill + 1] whether the most aligned stored value is the needle's
        hybrid_used_softmax: [n_fill + 1]; softmax_confidence: [n_fill + 1]
        final_error: mechanism -> error after all n_fill fillers
    """

    settings: LabSettings
    gates: Gates
    n_fill: int
    mechanisms: tuple[str, ...]
    fills: np.ndarray
    error: dict[str, np.ndarray]
    correct: dict[str, np.ndarray]
    softmax_confidence: np.ndarray
    hybrid_used_softmax: np.ndarray
    final_error: dict[str, float]


def needle(
    settings: LabSettings = LabSettings(),
    gates: Gates = NEEDLE_GATES,
    *,
    n_fill: int | None = None,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
) -> NeedleResult:
    """Write a needle, then ``n_fill`` (default 3·d_k) fillers; after each, read the needle back."""
    d = settings.d_k
    n_fill = 3 * d if n_fill is None else n_fill
    _check_int("n_fill", n_fill, 0, MAX_PAIRS)
    gen = _generator(settings.seed)
    T = n_fill + 1
    keys = make_keys(T, d, settings.keys, gen)  # key 0 is the needle
    values = make_values(T, d, gen)
    cue = make_cues(keys[:1], settings.noise, gen)
    reads = run_mechanisms(keys[None], values[None], cue[None], gates, mechanisms)
    v = values.numpy()
    stored = np.tril(np.ones((T, T), dtype=bool))  # [j, c]: value c is stored after the needle and j fillers
    err, ok, final = {}, {}, {}
    for m in mechanisms:
        out = reads.out[m][0, 0]  # (T, V): the needle's cue after the needle and j = 0 … n_fill fillers
        err[m] = recall_error(out, v[0])
        ok[m] = nearest_correct(out[:, None], v[None], np.zeros((T, 1), dtype=int), stored)[:, 0]
        final[m] = float(err[m][-1])
    return NeedleResult(
        settings=settings,
        gates=gates,
        n_fill=n_fill,
        mechanisms=tuple(mechanisms),
        fills=np.arange(T),
        error=err,
        correct=ok,
        softmax_confidence=reads.confidence[0, 0],
        hybrid_used_softmax=reads.hybrid_used_softmax[0, 0],
        final_error=final,
    )


def needle_table(r: NeedleResult) -> pd.DataFrame:
    d = r.settings.d_k
    at_d = min(d - 1, r.n_fill)  # d_k pairs in all: as many as a d_k × d_k state can hold
    return _table(
        {
            m: {
                f"needle error, {at_d + 1} pairs stored": float(r.error[m][at_d]),
                f"needle error, {r.n_fill + 1} pairs stored": r.final_error[m],
                "needle recognised at the end": bool(r.correct[m][-1]),
                "numbers stored at the end": _state_numbers(m, r.n_fill + 1, d),
            }
            for m in r.mechanisms
        }
    )


def needle_summary(r: NeedleResult) -> str:
    if "kda" not in r.mechanisms or "hybrid" not in r.mechanisms:
        return "This experiment compares pure KDA with the hybrid; include both mechanisms."
    n, d = r.n_fill, r.settings.d_k
    k_err, h_err = r.final_error["kda"], r.final_error["hybrid"]
    past = f"{n} fillers ({n / d:.1f}× d_k)"
    if k_err > LOST:
        kda = f"After {past}, pure KDA has lost the needle (error {k_err:.2f})"
    elif k_err < RECOVERED:
        kda = f"After {past}, pure KDA still holds the needle (error {k_err:.2f})"
    else:
        kda = f"After {past}, pure KDA returns a degraded needle (error {k_err:.2f})"
    if h_err < RECOVERED and r.hybrid_used_softmax[-1]:
        hyb = (
            f"the hybrid recovers it exactly (error {h_err:.1e}): its softmax cache found the needle with attention "
            f"weight {r.softmax_confidence[-1]:.2f}"
        )
    elif r.hybrid_used_softmax[-1]:
        hyb = f"the hybrid's softmax cache answered but not exactly (error {h_err:.2f})"
    else:
        hyb = (
            f"the hybrid fell back to KDA (error {h_err:.2f}): the softmax cache was not confident "
            f"(weight {r.softmax_confidence[-1]:.2f} < {HYBRID_CONFIDENCE})"
        )
    return f"{kda}; {hyb}."


# ---- all at once -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabReport:
    overwrite: OverwriteResult
    capacity: CapacityResult
    topic_switch: TopicSwitchResult
    retention: RetentionResult
    needle: NeedleResult


def run_all(settings: LabSettings = LabSettings(), mechanisms: Sequence[str] = DEFAULT_MECHANISMS) -> LabReport:
    """Every experiment at its default sizes and gate rules, on one stream setting."""
    return LabReport(
        overwrite=overwrite(settings, mechanisms=mechanisms),
        capacity=capacity(settings, mechanisms=mechanisms),
        topic_switch=topic_switch(settings, mechanisms=mechanisms),
        retention=retention(settings, mechanisms=mechanisms),
        needle=needle(settings, mechanisms=mechanisms),
    )


def comparison_table(report: LabReport) -> pd.DataFrame:
    """One row per mechanism, one headline number per experiment (errors: 0 is perfect, ~1 is nothing)."""
    o, c, t, r, n = report.overwrite, report.capacity, report.topic_switch, report.retention, report.needle
    return _table(
        {
            m: {
                "write": MECHANISMS[m].write,
                "gate": MECHANISMS[m].gate,
                "overwrite: error vs v2": o.error_v2[m],
                f"capacity: holds N ≤ (d_k = {c.settings.d_k})": c.capacity[m],
                f"capacity: error at N = {int(c.n[-1])}": float(c.error[m][-1]),
                "topic switch: A kept": t.a_kept[m],
                "topic switch: error on B": t.b_error[m],
                "retention: long-lived error": r.long_error[m],
                "retention: recent error": r.recent_error[m],
                "needle: error at the end": n.final_error[m],
            }
            for m in o.mechanisms
        }
    )


_SUMMARIES = {
    OverwriteResult: overwrite_summary,
    CapacityResult: capacity_summary,
    TopicSwitchResult: topic_switch_summary,
    RetentionResult: retention_summary,
    NeedleResult: needle_summary,
}
_TABLES = {
    OverwriteResult: overwrite_table,
    CapacityResult: capacity_table,
    TopicSwitchResult: topic_switch_table,
    RetentionResult: retention_table,
    NeedleResult: needle_table,
}


def summary(result) -> str:
    """The "what this shows" sentence of any experiment's result, computed from its numbers."""
    if type(result) not in _SUMMARIES:
        raise TypeError(
            f"result must be one of the lab's results ({', '.join(t.__name__ for t in _SUMMARIES)}), "
            f"got {type(result).__name__}"
        )
    return _SUMMARIES[type(result)](result)


def table(result) -> pd.DataFrame:
    """The numbers of any experiment's result, one row per mechanism."""
    if type(result) not in _TABLES:
        raise TypeError(
            f"result must be one of the lab's results ({', '.join(t.__name__ for t in _TABLES)}), "
            f"got {type(result).__name__}"
        )
    return _TABLES[type(result)](result)
