"""One comparison helper and one tolerance table for every numerical test."""

from __future__ import annotations

import torch

from lineage.numerics import rel_rms

# Measured: fp64 agreement between forms is ~1e-15; fp32 is ~1e-6 (strong decay ~2e-5). Bounds keep headroom.
TOL = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 5e-3}


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype | None = None, tol=None, what=""):
    """Fail unless relative RMS error is within the tolerance for ``dtype`` (default: expected's dtype)."""
    bound = tol if tol is not None else TOL[dtype or expected.dtype]
    if actual.shape != expected.shape:
        raise AssertionError(f"{what} shape mismatch: {tuple(actual.shape)} vs {tuple(expected.shape)}")
    err = rel_rms(actual, expected)
    assert err <= bound, f"{what} relative RMS error {err:.3e} exceeds {bound:.1e}"
