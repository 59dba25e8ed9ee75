"""At most a few heavy runs at a time in the whole process: every visitor of the hosted demo shares one process.

A live run at its caps holds up to a few hundred MB for about a second (``ui.caps``); sixteen visitors starting one
together would need gigabytes. ``heavy_slot`` lets ``MAX_HEAVY_RUNS`` of them run at once and queues the rest; a
visitor in the queue sees a message saying so, and where they are in it, until their run starts. The pages' calls into
``lineage`` go through ``ui.running.run_or_stop`` / ``run_or_error``, which take a slot; so does the Live benchmark.

One slot per thread: a run that calls another page helper inside its slot does not take a second one (which could
deadlock once every slot is held by a run waiting for another).
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

import streamlit as st

LIMIT_ENV = "LINEAGE_HEAVY_RUNS"
MAX_HEAVY_RUNS = max(1, int(os.environ.get(LIMIT_ENV, "2")))  # 2 on the 2-core host: one per core
MAX_WAIT_S = 120.0  # a visitor waits this long at most, then is told the server is busy
POLL_S = 0.2  # how often a waiting visitor's message is refreshed


class ServerBusy(RuntimeError):
    """No slot came free within MAX_WAIT_S."""


class HeavyRunLimiter:
    """A counting semaphore that also knows how many are running and waiting (to tell a waiting visitor)."""

    def __init__(self, slots: int, what: str = "live run"):
        self.slots = slots
        self.what = what  # what a slot is for, in the waiting message
        self._free = threading.Semaphore(slots)
        self._count_lock = threading.Lock()
        self._counts = {"running": 0, "waiting": 0}
        self._held = threading.local()  # per thread: does it hold a slot already

    def counts(self) -> tuple[int, int]:
        """(runs in progress, visitors waiting), now."""
        with self._count_lock:
            return self._counts["running"], self._counts["waiting"]

    def _change(self, running: int = 0, waiting: int = 0) -> None:
        with self._count_lock:
            self._counts["running"] += running
            self._counts["waiting"] += waiting

    @contextmanager
    def slot(self, on_wait=None, max_wait_s: float | None = None):
        """Hold one slot for the block. ``on_wait(running, waiting, waited_s)`` is called while queued (every POLL_S);
        raises ServerBusy after ``max_wait_s`` (default MAX_WAIT_S). Re-entrant per thread."""
        max_wait_s = MAX_WAIT_S if max_wait_s is None else max_wait_s
        if getattr(self._held, "yes", False):
            yield
            return
        if not self._free.acquire(blocking=False):
            self._change(waiting=1)
            t0 = time.monotonic()
            try:
                while not self._free.acquire(timeout=POLL_S):
                    waited = time.monotonic() - t0
                    if waited > max_wait_s:
                        raise ServerBusy(f"no free slot after {max_wait_s:.0f} s")
                    if on_wait is not None:
                        on_wait(*self.counts(), waited)
            finally:
                self._change(waiting=-1)
        self._change(running=1)
        self._held.yes = True
        try:
            yield
        finally:
            self._held.yes = False
            self._change(running=-1)
            self._free.release()

    @contextmanager
    def released(self):
        """Give this thread's slot back for the block, then take one again (waiting like anyone else if none is free).

        For a page that spends minutes in work another limiter governs (training): holding a page slot all that time
        would leave the other visitors' pages queued behind it."""
        if not getattr(self._held, "yes", False):
            yield
            return
        self._held.yes = False
        self._change(running=-1)
        self._free.release()
        try:
            yield
        finally:
            self._free.acquire()
            self._change(running=1)
            self._held.yes = True


LIMITER = HeavyRunLimiter(MAX_HEAVY_RUNS)
# Page runs, cached or not, all run Python in this one process: twenty visitors arriving together were twenty script
# threads taking turns with the server's event loop, whose health check then went unanswered for seconds, and sixteen
# pages building their figures at once held memory no heavy-run limit saw. At most MAX_PAGE_RUNS page scripts run at
# once (app.py); the rest wait without holding the interpreter. Measured with scripts/load_test.py on 2 cores (load
# average 5): 20 arrivals, slowest health answer 2.6 s without this limit, 1.07 s with 4, 1.02 s with 2; 16 Memory
# lab visitors at its caps, peak 1,006 / 925 / 683 MB over a resident set of about 470 MB.
PAGE_LIMIT_ENV = "LINEAGE_PAGE_RUNS"
MAX_PAGE_RUNS = max(1, int(os.environ.get(PAGE_LIMIT_ENV, "2")))  # 2 on the 2-core host: one per core
PAGES = HeavyRunLimiter(MAX_PAGE_RUNS, what="page")
# Training (the Learned memory page) holds a run for up to its seconds cap per mechanism, several mechanisms a press:
# one visitor trains at a time, outside the page limit (PAGES.released), so a trainer never holds a page slot.
TRAINING_ENV = "LINEAGE_TRAINING_RUNS"
MAX_TRAINING_RUNS = max(1, int(os.environ.get(TRAINING_ENV, "1")))
TRAINING = HeavyRunLimiter(MAX_TRAINING_RUNS, what="training run")


def waiting_text(running: int, waiting: int, waited_s: float, *, limiter: HeavyRunLimiter = LIMITER) -> str:
    what = limiter.what
    return (
        f"Waiting for a free slot: {running} {what}{'s' if running != 1 else ''} in progress for the visitors of "
        f"this server (at most {limiter.slots} at a time, so that no visitor's run starves another's), "
        f"{waiting} waiting including yours; waited {waited_s:.0f} s. Yours starts as soon as one ends."
    )


@contextmanager
def heavy_slot(limiter: HeavyRunLimiter = LIMITER):
    """Hold a slot of ``limiter`` (default: heavy runs) for the block; while queued, a message on the page says so. On
    ServerBusy the message goes and the exception propagates (the caller decides what the rest of the page does)."""
    shown = None

    def on_wait(running: int, waiting: int, waited_s: float) -> None:
        nonlocal shown
        shown = shown or st.empty()
        shown.info(waiting_text(running, waiting, waited_s, limiter=limiter), icon=":material/hourglass_top:")

    try:
        with limiter.slot(on_wait):
            if shown is not None:
                shown.empty()
            yield
    except ServerBusy:
        if shown is not None:
            shown.empty()
        raise
