"""Measured results kept for every visitor of the process, where no visitor's message can clear them.

Streamlit lets any client ask the server to clear ``st.cache_data`` and ``st.cache_resource`` (the viewer toolbar only
hides the menu item), so a benchmark cached there can be forced to run again and again. A ``ResultStore`` is a plain
object of this process: a result stays until it is older than ``keep_s``, and a new measurement of the same thing
starts at most once per ``rerun_s`` whoever asks. Two visitors asking at once get one run: the second waits for the
first's result.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Stored:
    value: Any
    measured_at: float  # time.monotonic() when the run ended

    def age_s(self) -> float:
        return time.monotonic() - self.measured_at


class ResultStore:
    """Results by key, at most ``max_entries`` (the oldest go first), each kept ``keep_s`` and re-measured at most
    once per ``rerun_s``."""

    def __init__(self, *, keep_s: float, rerun_s: float, max_entries: int):
        self.keep_s, self.rerun_s, self.max_entries = keep_s, rerun_s, max_entries
        self._lock = threading.Lock()
        self._results: dict[tuple, Stored] = {}
        self._running: dict[tuple, threading.Lock] = {}
        self.runs = 0  # measurements started, for the tests and the load script

    def get(self, key: tuple) -> Stored | None:
        """The stored result for ``key`` if it is younger than ``keep_s``."""
        with self._lock:
            found = self._results.get(key)
        return found if found is not None and found.age_s() < self.keep_s else None

    def next_run_in_s(self, key: tuple) -> float:
        """Seconds until a new measurement of ``key`` may start (0: now)."""
        found = self.get(key)
        return 0.0 if found is None else max(0.0, self.rerun_s - found.age_s())

    def measure(self, key: tuple, run: Callable[[], Any]) -> Stored:
        """The result for ``key``: ``run()``'s, unless a result younger than ``rerun_s`` is stored (then that one).
        While one thread runs ``key``, others asking for it wait and get its result."""
        with self._lock:
            gate = self._running.setdefault(key, threading.Lock())
        with gate:
            found = self.get(key)
            if found is not None and found.age_s() < self.rerun_s:
                return found
            with self._lock:
                self.runs += 1
            print(f"lineage: measuring {key} (measurement {self.runs} of this process)", file=sys.stderr, flush=True)
            stored = Stored(value=run(), measured_at=time.monotonic())
            with self._lock:
                self._results[key] = stored
                for old in sorted(self._results, key=lambda k: self._results[k].measured_at)[: -self.max_entries]:
                    del self._results[old]
            return stored


BENCHMARKS = ResultStore(keep_s=3600.0, rerun_s=60.0, max_entries=16)  # the Live benchmark page's runs
