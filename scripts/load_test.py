"""Load a fresh ``python serve.py`` on this machine (127.0.0.1 only) and print what the closing note reports.

    python scripts/load_test.py                    # 16 Memory-lab visitors, 20 arrivals, 40 s of clear-cache floods
    python scripts/load_test.py --visitors 8 --arrivals 10 --flood-s 20 --json artifacts/load.json

Visitors speak Streamlit's websocket protocol as the frontend does (``ui.browser.visit``), no browser. Every
loop is bounded in count and time. Three loads, one server:

1. ``--visitors`` sessions open the Memory lab at its caps at once (different seeds, so no cache helps): the server's
   peak resident memory (VmHWM, reset after a warm-up visit), how many were told they waited for a slot, wall time.
2. ``--arrivals`` sessions open the same /kda at once while /_stcore/health is polled every 0.1 s: its slowest answer.
3. Two clients, each for ``--flood-s`` seconds: clear-cache message, open the Live benchmark, press Run benchmark,
   again: how many benchmark runs the server started (its log says each one).

The tests in tests/e2e/test_serve.py run the same with small numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import threading
import time
from pathlib import Path

from ui.browser import (
    LAB_AT_CAPS,
    TINY_BUDGET,
    health_latencies,
    process_memory_mb,
    reset_peak_memory,
    run_async,
    start_server,
    stop,
    visit,
)
from ui.caps import caps
from ui.limits import MAX_HEAVY_RUNS

ROOT = Path(__file__).resolve().parents[1]
MAX_FLOOD_ROUNDS = 50  # per client, whatever --flood-s says


async def together(*visits):
    return await asyncio.gather(*visits)


def heavy_visitors(url: str, pid: int, n: int) -> dict:
    run_async(visit(url, "memory_lab", f"{LAB_AT_CAPS}&seed=999"))  # first-run costs are not the load's
    baseline, _ = process_memory_mb(pid)
    reset_peak_memory(pid)
    t0 = time.monotonic()
    runs = run_async(together(*(visit(url, "memory_lab", f"{LAB_AT_CAPS}&seed={i}") for i in range(n))))
    wall = time.monotonic() - t0
    rss, peak = process_memory_mb(pid)
    waited = sum(any(a.startswith("Waiting for a free slot") for a in r.alerts) for r in runs)
    return {
        "visitors": n,
        "baseline_mb": round(baseline, 1),
        "peak_mb": round(peak, 1),
        "rss_after_mb": round(rss, 1),
        "told_they_waited": waited,
        "exceptions": sum(len(r.exceptions) for r in runs),
        "wall_s": round(wall, 2),
        "slowest_visit_s": round(max(r.seconds for r in runs), 2),
        "budget_mb": f"baseline + {MAX_HEAVY_RUNS} slots × {caps().run.mb:.0f} MB",
    }


def arrivals(url: str, n: int) -> dict:
    run_async(visit(url, "kda", ""))  # cached, as the 20 sessions opening the cached /kda
    latencies: list[float] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            latencies.extend(health_latencies(url, time.monotonic() + 0.5))

    poller = threading.Thread(target=poll)
    poller.start()
    t0 = time.monotonic()
    try:
        runs = run_async(together(*(visit(url, "kda", "") for _ in range(n))))
    finally:
        done.set()
        poller.join(timeout=30)
    return {
        "arrivals": n,
        "wall_s": round(time.monotonic() - t0, 2),
        "slowest_visit_s": round(max(r.seconds for r in runs), 2),
        "health_polls": len(latencies),
        "health_max_s": round(max(latencies), 3),
        "health_median_s": round(statistics.median(latencies), 3),
        "exceptions": sum(len(r.exceptions) for r in runs),
    }


def flood(url: str, log: Path, seconds: float) -> dict:
    before = log.read_text().count("lineage: measuring")
    presses = [0, 0]

    async def client(i: int) -> None:
        stop_at = time.monotonic() + seconds
        for _ in range(MAX_FLOOD_ROUNDS):
            if time.monotonic() > stop_at:
                return
            await visit(url, "live_benchmark", TINY_BUDGET, press="Run benchmark", clear_cache=True)
            presses[i] += 1

    run_async(together(client(0), client(1)))
    return {
        "seconds": seconds,
        "presses": sum(presses),
        "benchmark_runs": log.read_text().count("lineage: measuring") - before,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visitors", type=int, default=16)
    parser.add_argument("--arrivals", type=int, default=20)
    parser.add_argument("--flood-s", type=float, default=40.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    log_path = ROOT / "artifacts" / "load-test-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; heavy-run slots {MAX_HEAVY_RUNS}")
    out: dict = {"cpus": os.cpu_count(), "load_average": load, "slots": MAX_HEAVY_RUNS}
    with open(log_path, "w") as log:
        server = start_server(log, preload=True, timeout_s=180)
        try:
            out["heavy"] = heavy_visitors(server.url, server.proc.pid, args.visitors)
            print("heavy visitors:", out["heavy"], flush=True)
            out["arrivals"] = arrivals(server.url, args.arrivals)
            print("arrivals:", out["arrivals"], flush=True)
            out["flood"] = flood(server.url, log_path, args.flood_s)
            print("clear-cache flood:", out["flood"], flush=True)
        finally:
            stop(server.proc)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
