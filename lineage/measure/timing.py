"""The one timer behind every measured number: the benchmarks, the live stage runs and the softmax decode.

A timed call starts from an idle device (queued GPU work is finished first, so it is not billed to this call)
and ends when its own device work is done (``lineage.device.synchronize``), on ``time.perf_counter``. Several
things to compare are timed in interleaved rounds — one call of each per round — so that the slow drift of a
shared machine hits all of them alike and their ratio is steadier than if each were timed in its own block.
Report medians, not means: one preempted call should not move the number.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import torch

from lineage.checks import positive_int
from lineage.device import synchronize

R = TypeVar("R")


def timed(fn: Callable[[], R], device: torch.device) -> tuple[R, float]:
    """``(fn(), seconds)`` for one call, its queued device work included and earlier work excluded."""
    synchronize(device)
    start = time.perf_counter()
    out = fn()
    synchronize(device)
    return out, time.perf_counter() - start


@dataclass(frozen=True)
class Timed:
    """One thing to time: ``run()`` — or ``run(setup())`` with ``setup`` untimed — ``repeats`` times.

    ``setup`` makes a fresh argument for every call (e.g. a copy of a KV cache that the call appends to); the
    previous argument is released before the next is made, so two never coexist.
    """

    run: Callable[..., object]
    repeats: int
    setup: Callable[[], object] | None = None

    def once(self, device: torch.device) -> float:
        """Seconds of one call (the setup, if any, untimed)."""
        if self.setup is None:
            return timed(self.run, device)[1]
        # the argument lives only in this frame: released on return, before the next call makes its own
        return timed(functools.partial(self.run, self.setup()), device)[1]


def interleaved_times(
    forms: Mapping[str, Timed],
    device: torch.device,
    warmup: int = 1,
    *,
    after_round: Callable[[int, int], object] | None = None,
    times: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Seconds of every timed call of each ``name: Timed``, after ``warmup`` untimed calls of each.

    Round i calls every form that still has repeats left (in the mapping's order), so a form with fewer repeats
    drops out of the later rounds. ``after_round(done, rounds)`` is called after each round (progress). The calls'
    seconds go into ``times`` when one is given (a caller keeps those of the rounds done if a call is interrupted).
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    for name, form in forms.items():
        positive_int(f"repeats of {name!r}", form.repeats)
    for form in forms.values():
        for _ in range(warmup):
            form.once(device)
    times = {} if times is None else times
    for name in forms:
        times.setdefault(name, [])
    rounds = max((form.repeats for form in forms.values()), default=0)
    for i in range(rounds):
        for name, form in forms.items():
            if i < form.repeats:
                times[name].append(form.once(device))
        if after_round is not None:
            after_round(i + 1, rounds)
    return times


def interleaved_medians(forms: Mapping[str, Timed], device: torch.device, warmup: int = 1) -> dict[str, float]:
    """Median seconds of each form, timed as :func:`interleaved_times` does."""
    return {name: statistics.median(ts) for name, ts in interleaved_times(forms, device, warmup).items()}


def repeat_times(
    fn: Callable[..., object],
    device: torch.device,
    repeats: int,
    *,
    warmup: int = 1,
    setup: Callable[[], object] | None = None,
) -> list[float]:
    """Seconds of each of ``repeats`` timed calls of ``fn`` (``fn(setup())`` if ``setup``), after ``warmup``."""
    return interleaved_times({"fn": Timed(fn, repeats, setup)}, device, warmup)["fn"]


def median_seconds(fn: Callable[[], object], device: torch.device, repeats: int, *, warmup: int = 1) -> float:
    """Median seconds of ``repeats`` timed calls of ``fn`` after ``warmup`` untimed ones."""
    return statistics.median(repeat_times(fn, device, repeats, warmup=warmup))
