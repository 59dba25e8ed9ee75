"""The hosted demo's start, ``python serve.py``, under load: bounded loops of visitors against 127.0.0.1 only.

Visitors here speak Streamlit's own websocket protocol (``ui.browser.visit``), as the browser's frontend does, without a
browser: many of them fit on two cores. Small numbers, for CI; ``scripts/load_test.py`` runs the same with the
numbers in the closing note (16 Memory-lab visitors at the caps, 20 arrivals, 40 s of clear-cache floods).

- Simultaneous heavy runs queue behind the process-wide limit (``ui.limits``): visitors beyond it are told they wait,
  and the server's peak memory stays under its baseline + the limit × one run's budget (``ui.caps``).
- Many visitors arriving at once leave the health check answering within a second.
- A client's clear-cache message cannot force more than one benchmark run per budget per interval (``ui.results``).
- A second serve.py on a port that is taken says so at once (see also tests/app/test_serving.py).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest

from tests.e2e.checks import assert_clean, wait_until_rendered
from tests.e2e.conftest import running_server
from ui.browser import (
    LAB_AT_CAPS,
    ROOT,
    TINY_BUDGET,
    health_latencies,
    process_memory_mb,
    reset_peak_memory,
    run_async,
    visit,
)
from ui.caps import caps
from ui.limits import MAX_HEAVY_RUNS


async def together(*visits):
    return await asyncio.gather(*visits)


@pytest.fixture(scope="module")
def load_server():
    """A fresh serve.py for this module's load (its memory is this module's alone)."""
    with running_server("e2e-load.log", preload=True) as running:
        yield running


def test_heavy_runs_queue_and_memory_stays_within_the_limit(load_server):
    visitors = 4
    pid = load_server.proc.pid
    run_async(visit(load_server.url, "memory_lab", f"{LAB_AT_CAPS}&seed=99"))  # first-run costs are not the load's
    baseline, _ = process_memory_mb(pid)
    reset_peak_memory(pid)
    runs = run_async(
        together(*(visit(load_server.url, "memory_lab", f"{LAB_AT_CAPS}&seed={i}") for i in range(visitors)))
    )
    _, peak = process_memory_mb(pid)
    for r in runs:
        assert not r.exceptions and r.charts >= 5, (r.exceptions, r.charts)
    waited = [r for r in runs if any(a.startswith("Waiting for a free slot") for a in r.alerts)]
    assert waited, "no visitor was told that it waited, with more visitors than slots"
    budget = MAX_HEAVY_RUNS * caps().run.mb
    assert peak - baseline <= budget, f"peak {peak:.0f} MB over a baseline of {baseline:.0f} MB (budget {budget:.0f})"


def test_the_health_check_answers_while_many_arrive(load_server):
    arrivals = 8
    latencies: list[float] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            latencies.extend(health_latencies(load_server.url, time.monotonic() + 0.5))

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        runs = run_async(together(*(visit(load_server.url, "kda", f"seed={i}") for i in range(arrivals))))
    finally:
        done.set()
        poller.join(timeout=30)
    assert all(not r.exceptions and r.charts for r in runs)
    assert latencies and max(latencies) <= 1.0, f"slowest health answer {max(latencies):.2f} s of {len(latencies)}"


def test_clear_cache_cannot_force_benchmark_runs(load_server):
    log = ROOT / "artifacts" / "e2e-load.log"
    before = log.read_text().count("lineage: measuring")

    async def flooding_client() -> None:
        for _ in range(3):  # bounded: three presses, each after a clear-cache message
            r = await visit(load_server.url, "live_benchmark", TINY_BUDGET, press="Run benchmark", clear_cache=True)
            assert not r.exceptions and r.charts >= 2, (r.exceptions, r.alerts)

    run_async(together(flooding_client(), flooding_client()))
    runs = log.read_text().count("lineage: measuring") - before
    assert runs == 1, f"{runs} benchmark runs for one budget within a minute"


def test_a_second_server_on_the_same_port_says_so_at_once(load_server):
    port = load_server.url.rsplit(":", 1)[1]
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "serve.py", "--server.port", port, "--server.address", "127.0.0.1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and f"port {port}" in done.stderr, done.stderr[-500:]
    assert time.monotonic() - t0 < 10


@pytest.mark.browser
@pytest.mark.parametrize("path", ["", "kda?kda_T=20&seed=7"], ids=["home", "kda-deep-link"])
def test_serve_py_draws_in_a_browser_and_loads_plotly_once(watched_preloaded, preloaded_server, path):
    """The README's start, in Chromium: the page draws its charts, plotly.js is requested once, nothing goes wrong."""
    page = watched_preloaded.page
    chunk_requests: list[str] = []
    page.on("request", lambda r: chunk_requests.append(r.url) if "/PlotlyChart." in r.url else None)
    page.goto(f"{preloaded_server.url}/{path}", wait_until="domcontentloaded")
    wait_until_rendered(page)
    assert len(chunk_requests) == 1, f"plotly.js was requested {len(chunk_requests)} times: {chunk_requests}"
    assert page.locator(".stPlotlyChart .js-plotly-plot .main-svg").count() >= 1
    assert_clean(watched_preloaded, f"serve.py /{path}")
