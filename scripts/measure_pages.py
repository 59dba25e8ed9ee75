"""How long each page's script run takes, at its defaults and after a change of its main control (AppTest timing).

    python scripts/measure_pages.py                      # every page of ui.nav.PAGES
    python scripts/measure_pages.py --pages kv_cache kda --changes 7 --json artifacts/pages.json
    python scripts/measure_pages.py --presenter          # the same with presenter mode on (larger charts)

Targets (on a 2-core CPU, after the first import): a page at its defaults in ≤ 1 s, a control change in ≤ 0.3 s.

Each page runs inside the real app shell, as ``tests/app/util.py::run_page`` does: ``app.py`` first (registering the
pages, drawing the sidebar), then ``switch_page`` and the run that is timed. Before any page, the heavy imports are
made and the home page runs once, so no page pays for importing torch, plotly or Streamlit's own machinery.

Per page:

    first     the very first run at the defaults in this process (every st.cache_data of the page misses);
    default   median of ``--default-runs`` more runs at the defaults, each in a new session with st.cache_data
              cleared first, so each is a cache miss as well;
    change    median of ``--changes`` runs, each after setting the page's main control to a value not used before
              (the live run and everything derived from it are computed again: a cache miss);
    revisit   median of the same number of runs going back to values already seen (st.cache_data hits: only the
              figures and the rest of the script run again).

Times are wall times (``time.perf_counter``) of ``AppTest.run``: the script run plus AppTest's own small overhead. The
app sets torch's threads from LINEAGE_THREADS (default 1) on every run; the count in force is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ui.nav import PAGES
from ui.presenter import PRESENT_KEY

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TARGET_S = 1.0
CHANGE_TARGET_S = 0.3
TIMEOUT_S = 120  # per script run: generous, a loaded machine must not turn a slow run into a failure


@dataclass(frozen=True)
class Control:
    """A page's main control: the AppTest element kind, its widget key, and distinct values to set in turn."""

    kind: str  # "slider", "select_slider", "number_input", "selectbox" … (AppTest's accessor of that name)
    key: str
    values: tuple  # none equal to the default, none repeated: each set is a new input for the page's caches


def _around(default: float, step: float, n: int = 10) -> tuple:
    """``n`` values alternating below and above ``default`` by whole steps (default − 1, + 1, − 2, + 2, …)."""
    out = []
    for i in range(1, n + 1):
        value = default + (-1) ** i * ((i + 1) // 2) * step
        out.append(round(value, 6) if isinstance(step, float) else int(value))
    return tuple(out)


_SWITCH = tuple(round(0.01 * i, 2) for i in range(1, 11))  # the story's gate at the topic switch (default 0)
# Sequence length where that is the page's main knob, the gate or write strength where the page is about it.
CONTROLS: dict[str, Control] = {
    "home": Control("number_input", "seed", tuple(range(1, 11))),  # the page has no control of its own
    "gpt2": Control("slider", "gpt2_T", _around(32, 1)),
    "kv_cache": Control("slider", "kv_cache_T", _around(32, 1)),
    "linear_attention": Control("slider", "linear_attention_T", _around(32, 1)),
    "deltanet": Control("slider", "deltanet_beta", _around(0.5, 0.05)),
    "mamba2": Control("slider", "mamba2_switch", _SWITCH),
    "gla": Control("slider", "gla_switch", _SWITCH),
    "gated_deltanet": Control("slider", "gated_deltanet_switch", _SWITCH),
    "kda": Control("slider", "kda_switch", _SWITCH),
    "hybrid": Control("slider", "hybrid_T", _around(24, 1)),
    "ledger": Control("select_slider", "ledger_batch", (2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096)),
    "memory_cost": Control("number_input", "memory_cost_len", tuple(2**20 - 1024 * i for i in range(1, 11))),
    # Changing the budget redraws the page; the benchmark itself runs only when its button is pressed.
    "live_benchmark": Control("selectbox", "live_benchmark_budget", ("tiny", "standard") * 5),
    "memory_lab": Control("slider", "lab_d_k", _around(16, 1)),
    # Training runs only when Train is pressed; the steps asked for are checked against the cap on every run.
    "learned_memory": Control("number_input", "learned_memory_steps", _around(300, 50)),
}


@dataclass
class PageTiming:
    page: str
    control: str
    first_s: float
    default_s: float
    change_s: float
    revisit_s: float
    default_runs: list[float]
    change_runs: list[float]
    revisit_runs: list[float]


def _fail_on_errors(at, what: str) -> None:
    if at.exception:
        raise RuntimeError(f"{what} raised: {[e.value for e in at.exception]}")
    if at.error:
        raise RuntimeError(f"{what} showed errors: {[e.value for e in at.error]}")


def _timed_run(at, what: str) -> float:
    t0 = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - t0
    _fail_on_errors(at, what)
    return elapsed


def _session(presenter: bool):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT_S)
    if presenter:
        at.session_state[PRESENT_KEY] = True
    return at


def _open(url_path: str, presenter: bool = False):
    """A new session on the page at ``url_path``; returns (AppTest, seconds of the page's own run)."""
    at = _session(presenter)
    if url_path == "home":  # the shell's first run is the home page's run
        return at, _timed_run(at, "home")
    at.run()
    _fail_on_errors(at, "app.py")
    at.switch_page(f"app_pages/{url_path}.py")
    return at, _timed_run(at, url_path)


def _set(at, control: Control, value) -> None:
    getattr(at, control.kind)(key=control.key).set_value(value)


def measure_page(url_path: str, control: Control, *, default_runs: int, changes: int, presenter: bool) -> PageTiming:
    import streamlit as st

    values = control.values[:changes]
    # a two-option control (the benchmark's budget) can only alternate; every other one gets new values
    if len(values) < changes or (control.kind != "selectbox" and len(set(values)) < changes):
        raise ValueError(f"{url_path}: {control.key} needs {changes} distinct values, has {control.values}")
    at, first = _open(url_path, presenter)
    change_runs = []
    for value in values:
        _set(at, control, value)
        change_runs.append(_timed_run(at, f"{url_path} with {control.key}={value!r}"))
    revisit_runs = []
    for value in values:
        _set(at, control, value)
        revisit_runs.append(_timed_run(at, f"{url_path} back at {control.key}={value!r}"))
    defaults = []
    for _ in range(default_runs):
        st.cache_data.clear()
        defaults.append(_open(url_path, presenter)[1])
    return PageTiming(
        page=url_path,
        control=control.key,
        first_s=first,
        default_s=statistics.median(defaults),
        change_s=statistics.median(change_runs),
        revisit_s=statistics.median(revisit_runs),
        default_runs=defaults,
        change_runs=change_runs,
        revisit_runs=revisit_runs,
    )


def _mark(value: float, target: float) -> str:
    return f"{value:7.3f}{' ' if value <= target else '*'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", nargs="*", help="url paths (default: every page of ui.nav.PAGES)")
    parser.add_argument("--default-runs", type=int, default=3, help="cache-cleared runs at the defaults per page")
    parser.add_argument("--changes", type=int, default=5, help="control changes per page (≥ 5 for a median)")
    parser.add_argument("--presenter", action="store_true", help="every session in presenter mode")
    parser.add_argument("--json", type=Path, help="also write the timings (and the machine) to this file")
    args = parser.parse_args()
    urls = [p.url_path for p in PAGES]
    pages = args.pages or urls
    unknown = sorted(set(pages) - set(urls))
    if unknown:
        parser.error(f"unknown pages {unknown}; choose from {urls}")
    missing = sorted(set(pages) - set(CONTROLS))
    if missing:
        parser.error(f"no main control listed in CONTROLS for {missing}")
    if args.default_runs < 1 or args.changes < 1:
        parser.error("--default-runs and --changes must be at least 1")

    t0 = time.perf_counter()
    import plotly.graph_objects  # noqa: F401
    import streamlit
    import streamlit.logger
    import torch

    import lineage.plots  # noqa: F401
    import lineage.teach.stage_runs  # noqa: F401

    _open("home")  # Streamlit's script runner, the sidebar, the home page's figure: warm before any timing
    # Clearing st.cache_data between sessions, outside any script run, makes Streamlit warn on every call. (Set after
    # the first run: that run applies Streamlit's configured log level.)
    streamlit.logger.set_log_level("error")
    warmup = time.perf_counter() - t0

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    machine = dict(
        cores=cores,
        torch_threads=torch.get_num_threads(),  # as app.py set it from LINEAGE_THREADS
        lineage_threads_env=os.environ.get("LINEAGE_THREADS"),
        python=platform.python_version(),
        torch=torch.__version__,
        streamlit=streamlit.__version__,
        load_average=os.getloadavg() if hasattr(os, "getloadavg") else None,
        presenter=args.presenter,
    )
    print(
        f"{cores} cores, torch threads {machine['torch_threads']} (LINEAGE_THREADS="
        f"{machine['lineage_threads_env'] or 'unset, app default 1'}); imports and warm-up run {warmup:.1f} s"
    )
    mode = ", presenter mode" if args.presenter else ""
    print(f"targets: defaults ≤ {DEFAULT_TARGET_S} s, control change ≤ {CHANGE_TARGET_S} s (* = over){mode}\n")
    header = f"{'page':<17}{'control':<24}{'first':>8}{'default':>9}{'change':>9}{'revisit':>9}"
    print(header)
    print("-" * len(header))
    timings = []
    for url in pages:
        t = measure_page(
            url, CONTROLS[url], default_runs=args.default_runs, changes=args.changes, presenter=args.presenter
        )
        timings.append(t)
        print(
            f"{t.page:<17}{t.control:<24}{_mark(t.first_s, DEFAULT_TARGET_S)}"
            f"{_mark(t.default_s, DEFAULT_TARGET_S)} {_mark(t.change_s, CHANGE_TARGET_S)} "
            f"{_mark(t.revisit_s, CHANGE_TARGET_S)}",
            flush=True,
        )
    print("\nseconds; default, change and revisit are medians (see the module docstring).")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(dict(machine=machine, pages=[asdict(t) for t in timings]), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
