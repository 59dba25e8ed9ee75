"""How long a fresh server takes to draw its first chart, against a bare Streamlit app, and its memory after every page.

    python scripts/measure_cold_start.py            # 5 rounds: bare app, serve.py, streamlit run app.py, interleaved
    python scripts/measure_cold_start.py --runs 3 --json artifacts/cold-start.json
    python scripts/measure_cold_start.py --starts serve bare --skip-memory

Each round starts each kind of server afresh, in turn (so machine load falls on all of them alike):

    bare     ``streamlit run`` of a bare app, a title and one Plotly chart (written to artifacts/): the floor, what
             Streamlit and plotly.js cost before this app adds anything;
    serve    ``python serve.py``, the README's and the container's start (heavy imports before health);
    plain    ``streamlit run app.py`` (its first visitor waits for the imports).

Once ``/_stcore/health`` answers, a new context of a headless Chromium (``ui.browser.find_chromium()``; offline:
requests to other hosts are aborted) opens the home page and the first Plotly chart drawn (``.js-plotly-plot
.main-svg``) is timed, split into:

    boot     health OK → the page's first <h1>: the frontend's JavaScript loads and the script starts running;
    script   <h1> → the chart's element: the rest of the script up to the chart, and plotly.js — a 4.7 MB chunk the
             frontend fetches and evaluates when the first chart arrives (the element mounts once it has);
    draw     the element → its SVG.

and, for the app's starts, the whole home page: health → its last section and the sidebar's seed input drawn (a
fresh visitor's first run ends after the first chart and the rest follows once the chart is drawn: ui.first_chart).

Medians per start, and each start's median over the bare app's (target ≤ 1.15). Then one ``serve.py`` server serves
every page of ``ui.nav.PAGES`` once (a deep link each, waiting for all charts; on the Live benchmark page it also
presses "Run benchmark", unless --no-benchmark) and its resident memory and peak (VmHWM) are read (target: peak
≤ 600 MB). The machine's CPU count and load average are printed with the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from ui.browser import (  # the browser tests' own set-up, so the two measure alike
    CHROMIUM_ARGS,
    NO_CHROMIUM,
    find_chromium,
    offline_context,
    start_server,
    stop,
)
from ui.nav import PAGES
from ui.session import SEED_LABEL

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.15  # first chart, over the bare app's
TARGET_PEAK_MB = 600.0
BARE_APP = ROOT / "artifacts" / "bare_app.py"
BARE_SOURCE = """import plotly.graph_objects as go
import streamlit as st

st.title("Bare app")
st.plotly_chart(go.Figure(go.Scatter(x=[0, 1, 2], y=[0, 1, 4])))
"""
STARTS = {
    "bare": dict(script=str(BARE_APP)),
    "serve": dict(preload=True),
    "plain": dict(),
}
STARTUP_TIMEOUT_S = 120
PAGE_TIMEOUT_MS = 120_000
LAST_SECTION = "22,580 GPT-2s?"  # home's last heading
BENCHMARK_TIMEOUT_MS = 300_000  # the Live benchmark's default budget, on a slow shared machine


@dataclass
class ColdStart:
    health_s: float  # process start → /_stcore/health answers
    first_chart_s: float  # health → first chart drawn on the home page
    boot_s: float  # health → first <h1>
    script_s: float  # first <h1> → first chart element
    draw_s: float  # chart element → its SVG drawn
    whole_s: float  # health → all of home drawn: its last section and the sidebar's seed input (bare: the chart)


@contextmanager
def running_server(log_path: Path, start: str):
    """A server of kind ``start`` (a key of STARTS) on a free port, as the end-to-end tests start theirs."""
    with open(log_path, "w") as log:
        try:
            server = start_server(log, timeout_s=STARTUP_TIMEOUT_S, **STARTS[start])
        except RuntimeError as exc:
            raise SystemExit(f"streamlit did not come up ({exc}); see {log_path}") from None
        try:
            yield server
        finally:
            stop(server.proc)


def cold_start(browser, log_path: Path, start: str) -> ColdStart:
    with running_server(log_path, start) as server:
        context, blocked = offline_context(browser)
        page = context.new_page()
        page.goto(server.url, wait_until="commit")
        page.wait_for_selector("h1", timeout=PAGE_TIMEOUT_MS)
        h1_at = time.monotonic()
        page.wait_for_selector(".stPlotlyChart", state="attached", timeout=PAGE_TIMEOUT_MS)
        element_at = time.monotonic()
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=PAGE_TIMEOUT_MS)
        chart_at = time.monotonic()
        whole_at = chart_at
        if start != "bare":  # the rest of home follows the first chart (ui.first_chart)
            page.get_by_role("heading", name=LAST_SECTION).wait_for(timeout=PAGE_TIMEOUT_MS)
            page.get_by_label(SEED_LABEL).wait_for(timeout=PAGE_TIMEOUT_MS)
            whole_at = time.monotonic()
        context.close()
        if blocked:
            print(f"  warning: the page asked other hosts for {blocked}", file=sys.stderr)
        return ColdStart(
            health_s=server.healthy_at - server.started,
            first_chart_s=chart_at - server.healthy_at,
            boot_s=h1_at - server.healthy_at,
            script_s=element_at - h1_at,
            draw_s=chart_at - element_at,
            whole_s=whole_at - server.healthy_at,
        )


def process_tree_memory_mb(pid: int) -> tuple[float, float | None, str]:
    """(RSS of the process and its descendants in MB, the process's own peak RSS or None, how it was read)."""
    peak_kb = _proc_status_kb(pid).get("VmHWM")  # Linux only
    peak_mb = peak_kb / 1024 if peak_kb else None
    try:
        import psutil
    except ImportError:
        pids = [pid, *_descendants(pid)]
        rss_kb = sum(_proc_status_kb(p).get("VmRSS", 0) for p in pids)
        return rss_kb / 1024, peak_mb, f"/proc VmRSS, {len(pids)} process(es)"
    procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    return sum(p.memory_info().rss for p in procs) / 2**20, peak_mb, f"psutil, {len(procs)} process(es)"


def _proc_status_kb(pid: int) -> dict[str, int]:
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def _descendants(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *_descendants(child)]
    return found


def visit_every_page(browser, log_path: Path, run_benchmark: bool) -> dict:
    with running_server(log_path, "serve") as server:
        context, blocked = offline_context(browser)
        page = context.new_page()
        seconds = {}
        for entry in PAGES:
            t0 = time.monotonic()
            page.goto(f"{server.url}/{entry.url_path}", wait_until="commit")
            page.wait_for_selector('[data-testid="stMain"] h1', timeout=PAGE_TIMEOUT_MS)
            page.wait_for_selector(
                '[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=PAGE_TIMEOUT_MS
            )
            page.wait_for_function(
                "() => [...document.querySelectorAll('.stPlotlyChart')]"
                ".every(c => c.querySelector('.js-plotly-plot svg.main-svg'))",
                timeout=PAGE_TIMEOUT_MS,
            )
            seconds[entry.url_path] = round(time.monotonic() - t0, 2)
            if entry.url_path == "live_benchmark" and run_benchmark:  # what a visitor does there: press Run
                t0 = time.monotonic()
                page.get_by_role("button", name="Run benchmark").click()
                page.wait_for_function(
                    "() => document.querySelectorAll('.stPlotlyChart .js-plotly-plot svg.main-svg').length >= 2",
                    timeout=BENCHMARK_TIMEOUT_MS,
                )
                seconds["live_benchmark (Run)"] = round(time.monotonic() - t0, 2)
        context.close()
        rss_mb, peak_mb, how = process_tree_memory_mb(server.proc.pid)
        return {"rss_mb": rss_mb, "peak_mb": peak_mb, "how": how, "page_seconds": seconds, "blocked": blocked}


def report_memory(mem: dict) -> None:
    for path, s in mem["page_seconds"].items():
        print(f"  /{path:<18} {s:6.2f} s")
    peak = mem["peak_mb"]
    verdict = "ok" if peak is not None and peak <= TARGET_PEAK_MB else "OVER"
    print(
        f"serve.py server after every page: RSS {mem['rss_mb']:.0f} MB, peak {peak or float('nan'):.0f} MB "
        f"[{mem['how']}] (target: peak ≤ {TARGET_PEAK_MB:.0f} MB: {verdict})"
    )
    if mem["blocked"]:
        print(f"warning: pages asked other hosts for {mem['blocked']}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds of cold starts (default 5)")
    parser.add_argument("--starts", nargs="+", choices=list(STARTS), default=list(STARTS), help="which starts to time")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--log", type=Path, default=ROOT / "artifacts" / "cold-start-server.log")
    parser.add_argument("--skip-memory", action="store_true", help="time the cold starts only")
    parser.add_argument(
        "--no-benchmark", action="store_true", help="visit the Live benchmark page without pressing Run benchmark"
    )
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        raise SystemExit(NO_CHROMIUM)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    BARE_APP.write_text(BARE_SOURCE)

    from playwright.sync_api import sync_playwright

    load = os.getloadavg()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        browser.new_context().close()  # the browser's own start-up is not the app's
        runs: dict[str, list[ColdStart]] = {start: [] for start in args.starts}
        print(
            f"cold start → first chart on the home page, {args.runs} rounds of {', '.join(args.starts)}, interleaved "
            f"({os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})"
        )
        print("  round  start         health  first chart  (boot  script  draw)  whole page")
        for i in range(args.runs):
            for start in args.starts:
                r = cold_start(browser, args.log, start)
                runs[start].append(r)
                print(
                    f"  {i + 1:>5}  {start:<12}  {r.health_s:5.2f}s  {r.first_chart_s:9.2f}s   "
                    f"({r.boot_s:4.2f}  {r.script_s:5.2f}  {r.draw_s:4.2f})  {r.whole_s:9.2f}s",
                    flush=True,
                )
        medians = {start: statistics.median(r.first_chart_s for r in found) for start, found in runs.items()}
        for start, found in runs.items():
            phases = "  ".join(f"{ph[:-2]} {statistics.median(getattr(r, ph) for r in found):.2f}" for ph in
                               ("boot_s", "script_s", "draw_s"))  # fmt: skip
            ratio = f", ×{medians[start] / medians['bare']:.2f} the bare app's" if "bare" in medians else ""
            verdict = ""
            if "bare" in medians and start != "bare":
                verdict = " ok" if medians[start] / medians["bare"] <= TARGET_RATIO else f" OVER ×{TARGET_RATIO}"
            print(f"median first chart, {start:<12} {medians[start]:.2f} s after health{ratio}{verdict} ({phases})")
            print(f"median whole page,  {start:<12} {statistics.median(r.whole_s for r in found):.2f} s after health")

        mem = None
        if not args.skip_memory:
            print("memory after every page, one serve.py server:")
            mem = visit_every_page(browser, args.log, not args.no_benchmark)
        browser.close()
    if mem is not None:
        report_memory(mem)

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "cpus": os.cpu_count(),
                    "load_average": load,
                    "runs": {start: [asdict(r) for r in found] for start, found in runs.items()},
                    "median_first_chart_s": medians,
                    "memory": mem,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
