"""The one relative error used by every comparison: verification, the pages' live checks, the tests.

    rel_rms(a, e) = ‖a − e‖ / ‖e‖        (Frobenius norms, in fp64; NaN or inf anywhere counts as an infinite error)

Relative RMS rather than a max-abs ratio: one bad entry in a large tensor still shows, and the number does not
depend on which single element happens to be largest (fla's tests compare the same way).
"""

from __future__ import annotations

import torch

TINY = 1e-300  # floor of the denominator: an all-zero reference compares by the absolute error


def rel_rms(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """‖actual − expected‖ / ‖expected‖ in fp64 on the CPU; inf if either holds a NaN or an inf.

    Raises:
        ValueError: the shapes differ (a broadcast would compare the wrong numbers).
    """
    if actual.shape != expected.shape:
        raise ValueError(
            f"actual and expected must have the same shape, got {tuple(actual.shape)} and {tuple(expected.shape)}"
        )
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    if not (torch.isfinite(a).all() and torch.isfinite(e).all()):
        return float("inf")
    return float((a - e).norm() / e.norm().clamp_min(TINY))
