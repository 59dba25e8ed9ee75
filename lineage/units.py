"""The one unit system the app shows: decimal bytes (kB = 10³, MB = 10⁶, GB = 10⁹), as disk and bandwidth figures are
quoted (GB/s). Sizes set in powers of two (a 256 MiB cap, a 2²⁰-token context) are still shown through
:func:`format_bytes`, so a page never puts kB beside KiB. ``MiB`` is here only to write such settings."""

from __future__ import annotations

import math

MiB = 2**20  # for writing sizes that are set in powers of two; they are shown in decimal units


def format_bytes(n: float) -> str:
    """Decimal units, three significant figures: 36,864 -> "36.9 kB", 1.4e11 -> "140 GB", 268,435,456 -> "268 MB"."""
    n = float(n)  # also a Python int too large for numpy
    if not math.isfinite(n) or n < 0:
        raise ValueError(f"n must be a finite number of bytes >= 0, got {n}")
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"
