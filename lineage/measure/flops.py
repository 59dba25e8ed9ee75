"""Count the FLOPs an op really computes, by watching its matrix products as it runs.

A light :class:`torch.overrides.TorchFunctionMode` that adds up the products the ops use (``@`` / ``matmul``,
``baddbmm``, ``einsum``, ``solve_triangular``), counting a multiply-add as 2 FLOPs, the way
``torch.utils.flop_counter`` counts them. Elementwise work (exponentials, masks, sums) is not counted. It exists
because torch's own counter takes seconds to start (it loads its symbolic-shape machinery on first use), which a
page cannot wait for; a test checks that the two counts agree on every op the ledger counts. While it counts, the
chunked form runs its Python steps (``lineage.ops.native.python_form``, for this thread only): the compiled loop,
which runs the same products where nothing records gradients, does them in C++, out of any mode's sight.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch.overrides import TorchFunctionMode

from lineage.ops import native

__all__ = ["count_flops"]


def _matmul(a: torch.Tensor, b: torch.Tensor) -> int:
    if a.dim() == 1 or b.dim() == 1:  # a vector product: treat the vector as one row / column
        a = a.unsqueeze(0) if a.dim() == 1 else a
        b = b.unsqueeze(-1) if b.dim() == 1 else b
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    return 2 * math.prod(batch) * m * k * n


def _einsum(equation: str, *operands) -> int:
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    inputs = equation.replace(" ", "").split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for letters, x in zip(inputs, operands, strict=True):
        if "..." in letters:
            raise ValueError(f"count_flops: einsum with '...' is not counted, got {equation!r}")
        sizes.update(zip(letters, x.shape, strict=True))
    # every index combination is one multiply-add when two operands meet; a one-operand einsum is a sum or a copy
    return 2 * math.prod(sizes.values()) if len(operands) > 1 else 0


def _solve_triangular(a: torch.Tensor, b: torch.Tensor, **_) -> int:
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, nrhs = a.shape[-1], b.shape[-1]
    return math.prod(batch) * n * n * nrhs  # forward substitution: n²/2 multiply-adds per right-hand side


_COUNTERS: dict[Callable, Callable[..., int]] = {
    torch.matmul: _matmul,
    torch.Tensor.__matmul__: _matmul,
    torch.Tensor.matmul: _matmul,
    torch.bmm: _matmul,
    torch.mm: _matmul,
    torch.baddbmm: lambda input, b1, b2, **_: _matmul(b1, b2),
    torch.einsum: _einsum,
    torch.linalg.solve_triangular: _solve_triangular,
}


class _Counter(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.flops = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        counter = _COUNTERS.get(func)
        if counter is not None:
            self.flops += counter(*args, **kwargs)
        return func(*args, **kwargs)


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs of the matrix products ``fn()`` computes (a multiply-add is 2), its chunked forms in their Python steps."""
    with native.python_form(), _Counter() as counter:
        fn()
    return counter.flops
