"""Input validation shared by every op: errors are for people.

Each check raises ``ValueError`` (or ``TypeError`` for a wrong kind of object) whose message names the
argument, what was given and what was expected, so a wrong call explains itself.

Values are checked once, at the public boundary. Type, rank and shape checks are free; a value scan (NaN, a
log-gate's sign, β's range) reads every element and, on a GPU, waits for the device. So a caller that has checked
its inputs — an op that calls another op, a layer or stack passing tensors it computed from checked ones, a timed
decode step whose inputs were checked before the clock started — runs the inner call inside
:func:`values_checked`, where the checks keep to types and shapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch

MODES_ALL = ("recurrent", "chunk", "parallel")

# Per thread and per task (a ContextVar), so one app session's trusted call never skips another session's checks.
_VALUES_CHECKED: ContextVar[bool] = ContextVar("values_checked", default=False)


@contextmanager
def values_checked() -> Iterator[None]:
    """Inside this block the checks skip value scans (NaN, signs, ranges): the caller checked the values already."""
    token = _VALUES_CHECKED.set(True)
    try:
        yield
    finally:
        _VALUES_CHECKED.reset(token)


def scanning() -> bool:
    """Whether value scans run here (False inside :func:`values_checked`)."""
    return not _VALUES_CHECKED.get()


def _has_nan(x: torch.Tensor) -> bool:
    """True if ``x`` holds a NaN. One reduction on the common path: a sum is NaN if any element is NaN (it can
    also be NaN from inf − inf, or overflow), and only then is the exact elementwise test run."""
    return bool(torch.isnan(x.sum())) and bool(torch.isnan(x).any())


def tensor(name: str, x, *, rank: int | tuple[int, ...] | None = None, nan: bool = True) -> torch.Tensor:
    """Check that ``x`` is a floating-point tensor of the given rank(s) with no NaN (``nan=False`` skips that
    scan, for callers that find NaN as a side effect of their own range check)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if rank is not None:
        ranks = (rank,) if isinstance(rank, int) else rank
        if x.dim() not in ranks:
            want = " or ".join(str(r) for r in ranks)
            raise ValueError(f"{name} must have rank {want}, got shape {tuple(x.shape)} (rank {x.dim()})")
    if nan and scanning() and _has_nan(x):
        raise ValueError(f"{name} contains NaN; every input must be a number")
    return x


def qkv(q, k, v) -> tuple[int, int, int, int, int]:
    """Check q, k, v of shapes [B, H, T, K], [B, H, T, K], [B, H, T, V]; return (B, H, T, K, V)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        tensor(name, x, rank=4)
    B, H, T, K = q.shape
    if k.shape != q.shape:
        raise ValueError(f"k must have the same shape as q [B, H, T, K] = {tuple(q.shape)}, got {tuple(k.shape)}")
    if v.shape[:3] != (B, H, T):
        raise ValueError(f"v must have shape [B, H, T, V] with (B, H, T) = {(B, H, T)} as in q, got {tuple(v.shape)}")
    if T < 1 or K < 1 or v.shape[3] < 1:
        raise ValueError(f"q, k, v need T >= 1 and non-empty head dims, got q {tuple(q.shape)}, v {tuple(v.shape)}")
    return B, H, T, K, v.shape[3]


def log_gate(g, B: int, H: int, T: int, K: int, *, per_channel: bool | None) -> torch.Tensor:
    """Check a log-space gate: [B, H, T] (scalar per head) or [B, H, T, K] (per channel), all <= 0.

    ``per_channel`` None accepts either shape; True/False demands one. -inf is allowed (alpha = 0, a wipe).
    """
    tensor("g", g, rank=(3, 4), nan=False)
    scalar_shape, channel_shape = (B, H, T), (B, H, T, K)
    allowed = {None: (scalar_shape, channel_shape), False: (scalar_shape,), True: (channel_shape,)}[per_channel]
    if tuple(g.shape) not in allowed:
        want = " or ".join(f"[B, H, T{', K' if len(s) == 4 else ''}] = {s}" for s in allowed)
        raise ValueError(f"g (log-space gate) must have shape {want}, got {tuple(g.shape)}")
    if not scanning():
        return g
    top = g.max().item() if g.numel() else 0.0  # max propagates NaN: one reduction checks both the sign and NaN
    if top != top:
        raise ValueError("g contains NaN; every input must be a number")
    if top > 0:
        raise ValueError(
            f"g is a log-space gate (alpha = exp(g)) and must be <= 0, got a maximum of {top:.4g}; "
            "pass log(alpha), e.g. -softplus(x), not alpha itself"
        )
    return g


def gate_lower_bound(b) -> float | None:
    """Check a lower bound on a log-space gate: None (no bound) or a finite number < 0 (Kimi K3's is −5)."""
    if b is None:
        return None
    if isinstance(b, bool) or not isinstance(b, (int, float)):
        raise TypeError(f"gate_lower_bound must be a negative number or None, got {b!r} ({type(b).__name__})")
    b = float(b)
    if not (b < 0 and b > float("-inf")):
        raise ValueError(
            f"gate_lower_bound must be a finite number < 0 (the most a channel may forget per token in log space, "
            f"e.g. -5.0), got {b}"
        )
    return b


def beta(b, B: int, H: int, T: int) -> torch.Tensor:
    """Check a write strength beta of shape [B, H, T] with values in [0, 1]."""
    tensor("beta", b, rank=3, nan=False)
    if tuple(b.shape) != (B, H, T):
        raise ValueError(f"beta must have shape [B, H, T] = {(B, H, T)}, got {tuple(b.shape)}")
    if not scanning():
        return b
    lo, hi = (m.item() for m in torch.aminmax(b)) if b.numel() else (0.0, 0.0)  # both NaN if b holds a NaN
    if lo != lo:
        raise ValueError("beta contains NaN; every input must be a number")
    if lo < 0 or hi > 1:
        raise ValueError(
            f"beta must lie in [0, 1], got values in [{lo:.4g}, {hi:.4g}]; use sigmoid(x) to map a raw score into range"
        )
    return b


def state(s, B: int, H: int, K: int, V: int, name: str = "initial_state") -> torch.Tensor | None:
    """Check an optional recurrent state of shape [B, H, K, V]."""
    if s is None:
        return None
    tensor(name, s, rank=4)
    if tuple(s.shape) != (B, H, K, V):
        raise ValueError(f"{name} must have shape [B, H, K, V] = {(B, H, K, V)}, got {tuple(s.shape)}")
    return s


def mode(m, allowed: tuple[str, ...] = MODES_ALL) -> str:
    """Check the execution mode."""
    if m not in allowed:
        raise ValueError(f"mode must be one of {', '.join(repr(a) for a in allowed)}, got {m!r}")
    return m


def chunk_size(c) -> int:
    """Check the chunk size: an int >= 1."""
    if isinstance(c, bool) or not isinstance(c, int):
        raise TypeError(f"chunk_size must be an int >= 1, got {c!r} ({type(c).__name__})")
    if c < 1:
        raise ValueError(f"chunk_size must be >= 1, got {c}")
    return c


def scale(s, K: int) -> float:
    """Resolve the read scale: None means K ** -0.5; otherwise a positive finite number."""
    if s is None:
        return K**-0.5
    if isinstance(s, bool) or not isinstance(s, (int, float)):
        raise TypeError(f"scale must be a float or None, got {s!r} ({type(s).__name__})")
    s = float(s)
    if not (s > 0 and s != float("inf")):
        raise ValueError(f"scale must be a positive finite number (or None for K ** -0.5), got {s}")
    return s


def positive_int(name: str, x, *, maximum: int | None = None) -> int:
    """Check a size argument: an int >= 1 (and <= maximum when given)."""
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{name} must be an int, got {x!r} ({type(x).__name__})")
    if x < 1:
        raise ValueError(f"{name} must be >= 1, got {x}")
    if maximum is not None and x > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {x}")
    return x


def boolean(name: str, x) -> bool:
    """Check a flag: True or False (not a truthy number or string)."""
    if not isinstance(x, bool):
        raise TypeError(f"{name} must be True or False, got {x!r} ({type(x).__name__})")
    return x


def compute_dtype(*xs: torch.Tensor) -> torch.dtype:
    """fp64 inputs stay fp64; every other float dtype (bf16, fp16, fp32) is computed in fp32."""
    return torch.float64 if any(x is not None and x.dtype == torch.float64 for x in xs) else torch.float32
