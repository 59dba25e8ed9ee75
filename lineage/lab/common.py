"""The Memory lab's common parts: who takes part, the stream (keys, values, cues), the gate rules, running every
mechanism on one stream, and the measures (recall error, nearest stored value). See :mod:`lineage.lab`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from lineage.inputs import run_mechanism
from lineage.mechanisms import linear_mechanisms, mechanism

DTYPE = torch.float64  # clean numerics: "exact" means ~1e-16 here, so a 1e-6 threshold is a real test

# ---- the participants: the table's mechanisms, plus the lab's hybrid and one variant ----------------------------

HYBRID = "hybrid"  # KDA plus a softmax cache over the same stream (see the package docstring)
ELU1 = "linear_attention_elu1"  # linear attention in its published ELU+1 normalised form


@dataclass(frozen=True)
class Participant:
    key: str
    label: str
    write: str  # "cache" | "additive" | "delta" | "cache + delta"
    gate: str  # "none" | "scalar" | "channel"


def participants() -> dict[str, Participant]:
    """Who runs in the lab, in the order of the lineage: softmax attention over a cache of the writes, every linear
    mechanism of :mod:`lineage.mechanisms` (as it stands at the call), the hybrid, and the ELU+1 variant."""
    linear = [Participant(m.key, m.label, m.rule, m.gate) for m in linear_mechanisms()]
    return {
        p.key: p
        for p in (
            Participant("softmax", "Softmax (full cache)", "cache", "none"),
            *linear,
            Participant(HYBRID, "Hybrid (KDA + softmax)", "cache + delta", "channel"),
            Participant(ELU1, "Linear attention (ELU+1, normalised)", "additive", "none"),
        )
    }


def default_mechanisms() -> tuple[str, ...]:
    """Every participant but the ELU+1 variant (which the page adds on request)."""
    return tuple(k for k in participants() if k != ELU1)


DEFAULT_MECHANISMS: tuple[str, ...] = default_mechanisms()


def label(key: str) -> str:
    return participants()[key].label


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


def check_range(name: str, x, lo: float, hi: float, *, lo_open: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be a number, got {x!r} ({type(x).__name__})")
    if math.isnan(x) or x > hi or x < lo or (lo_open and x == lo):
        raise ValueError(f"{name} must lie in {'(' if lo_open else '['}{lo}, {hi}], got {x}")
    return float(x)


def check_int(name: str, x, lo: int, hi: int) -> int:
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
        check_int("d_k", self.d_k, MIN_D_K, MAX_D_K)
        if self.keys not in KEY_KINDS:
            raise ValueError(f"keys must be one of {', '.join(map(repr, KEY_KINDS))}, got {self.keys!r}")
        check_range("noise", self.noise, 0.0, MAX_NOISE)
        check_int("seed", self.seed, 0, 2**63 - 1)


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
        check_range("alpha", self.alpha, 0.0, 1.0, lo_open=True)
        check_range("beta", self.beta, 0.0, 1.0)
        check_range("slow_fraction", self.slow_fraction, 0.0, 1.0, lo_open=True)
        if self.slow_fraction >= 1.0:
            raise ValueError(f"slow_fraction must lie in (0, 1): KDA needs fast channels too, got {self.slow_fraction}")
        check_range("alpha_slow", self.alpha_slow, 0.0, 1.0, lo_open=True)
        if self.alpha_slow < self.alpha:
            raise ValueError(
                f"alpha_slow must be >= alpha (slow channels forget less than average), got alpha_slow="
                f"{self.alpha_slow} < alpha={self.alpha}"
            )
        check_range("alpha_reset", self.alpha_reset, 0.0, 1.0)

    def n_slow(self, d_k: int) -> int:
        """Number of slow KDA channels: round(slow_fraction·d_k), at least 1 and leaving at least 1 fast."""
        return min(max(round(self.slow_fraction * d_k), 1), d_k - 1)

    def channel_alpha(self, d_k: int) -> np.ndarray:
        """α per key channel of the per-channel gates (KDA, GLA), [d_k]: slow channels first; the mean of log α over
        the channels is log(alpha)."""
        n_slow = self.n_slow(d_k)
        # d_k·log α = n_slow·log α_slow + n_fast·log α_fast
        log_fast = (d_k * math.log(self.alpha) - n_slow * math.log(self.alpha_slow)) / (d_k - n_slow)
        return np.array([self.alpha_slow] * n_slow + [math.exp(log_fast)] * (d_k - n_slow))


DEFAULT_SETTINGS = LabSettings()


# ---- streams: keys, values, cues --------------------------------------------------------------------------------


def generator(seed: int) -> torch.Generator:
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
    o, _ = mechanism("softmax").op(q, keys[:, None], v_aug[:, None], scale=SHARP_SCALE, causal=True, mode="parallel")
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
    The whole trajectory of reads comes from one call per mechanism. Every linear mechanism of the table runs
    through :func:`lineage.inputs.run_mechanism` (the pages' one display path: the table's
    :meth:`lineage.mechanisms.Mechanism.call`), in its bare form, with the gate of its kind (scalar: α; per channel:
    the slow/fast channels of :meth:`Gates.channel_alpha`) and β if it writes with the delta rule. The softmax cache
    is read by its op directly (:func:`_softmax_reads`): it has no state to run.

    Args:
        keys: [B, T, K] unit keys; values: [B, T, V]; cues: [B, R, K]
        gates: the rules; mechanisms: keys of PARTICIPANTS
        reset: a step at which the gated mechanisms apply α = gates.alpha_reset instead of their usual α, or None

    Returns:
        :class:`Reads` with out[m]: [B, R, T, V]
    """
    unknown = [m for m in mechanisms if m not in participants()]
    if unknown:
        raise ValueError(f"mechanisms must be among {', '.join(map(repr, participants()))}, got {unknown}")
    B, T, K = keys.shape
    R = cues.shape[1]
    q = cues[:, :, None, :].expand(B, R, T, K)  # (B, R, T, K): head r asks cue r at every step
    k = keys[:, None].expand(B, R, T, K)  # every head sees the same writes
    v = values[:, None].expand(B, R, T, values.shape[-1])
    beta = torch.full((B, R, T), gates.beta, dtype=DTYPE)
    log_alpha = torch.full((T,), math.log(gates.alpha), dtype=DTYPE)
    log_channel = torch.as_tensor(np.log(gates.channel_alpha(K)), dtype=DTYPE).expand(T, K).clone()  # (T, K)
    if reset is not None:
        with np.errstate(divide="ignore"):
            log_reset = float(np.log(gates.alpha_reset))  # −inf for a wipe: the ops accept it
        log_alpha[reset] = log_reset
        log_channel[reset] = log_reset
    # the gate in the shape the mechanism's op contract gives it: one per head ([B, R, T]) or per key channel
    gate_by_dims = {("B", "H", "T"): log_alpha.expand(B, R, T), ("B", "H", "T", "K"): log_channel.expand(B, R, T, K)}

    def read(key: str) -> np.ndarray:
        if key == ELU1:  # the published form: ELU+1 feature map, normalised, the op's own scale
            o, _ = run_mechanism(mechanism("linear_attention"), q, k, v, mode=MODE)
        else:  # the bare memory of the shared recurrence, S holding Σ k vᵀ exactly (scale 1)
            m = mechanism(key)
            g = gate_by_dims[m.input_dims("g")] if m.takes("g") else None
            o, _ = run_mechanism(m, q, k, v, g, beta, bare=True, scale=1.0, mode=MODE)
        return o.numpy()

    needed = [m for m in participants() if m in mechanisms or (m == "kda" and HYBRID in mechanisms)]
    out = {m: read(m) for m in needed if m not in ("softmax", HYBRID)}
    # the softmax cache is always read: its confidence is part of the result
    sm, confidence = (x.numpy() for x in _softmax_reads(keys, values, cues))
    out["softmax"] = sm
    used = confidence >= HYBRID_CONFIDENCE
    if HYBRID in mechanisms:
        # the hybrid's rule: the softmax read when one key dominates, KDA's read otherwise
        out[HYBRID] = np.where(used[..., None], sm, out["kda"])
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


def state_numbers(m: str, n_writes: int, d_k: int) -> int:
    """Numbers a mechanism keeps after n_writes writes (d_v = d_k): the cache grows, the states do not."""
    cache = n_writes * 2 * d_k
    state = d_k * d_k + (d_k if m == ELU1 else 0)  # ELU+1 also keeps the normaliser z
    return {"cache": cache, "cache + delta": cache + d_k * d_k}.get(participants()[m].write, state)


def join_names(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


ABOUT_ZERO = 1e-6  # a number below this (in size) is shown as "≈ 0": 2.77e-16 is rounding, not a measurement


def people_number(x, *, decimals: int = 2) -> str:
    """One number as a person reads it: "≈ 0" below ABOUT_ZERO, else ``decimals`` decimals (thousands separated);
    booleans as yes / no, whole numbers with separators, blank where missing."""
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return ""
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, int | np.integer):
        return f"{int(x):,}"
    x = float(x)
    if abs(x) < ABOUT_ZERO:
        return "≈ 0"
    return f"{x:,.{decimals}f}".replace("-", "−")  # a true minus, as in the charts


def people_formats(df: pd.DataFrame) -> dict[str, object]:
    """One format per column of a lab table (column -> formatter): whole-number columns with separators, yes/no
    columns as words, every other numeric column with two decimals (none once its largest value reaches 1,000)."""
    out = {}
    for column in df.columns:
        values = df[column]
        if values.dtype == bool or pd.api.types.is_integer_dtype(values):
            out[column] = people_number
        elif pd.api.types.is_float_dtype(values):
            magnitudes = np.abs(values.to_numpy(dtype=float))
            magnitudes = magnitudes[np.isfinite(magnitudes)]  # a column of no result yet (NaN) has no size
            big = magnitudes.size > 0 and float(magnitudes.max()) >= 1000
            out[column] = partial(people_number, decimals=0 if big else 2)
    return out


def mechanism_table(rows: dict[str, dict[str, float]]) -> pd.DataFrame:
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index = [label(m) for m in rows]
    df.index.name = "mechanism"
    return df
