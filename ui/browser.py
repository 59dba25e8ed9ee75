"""The app's server on this machine, driven from outside: by a headless Chromium, or by visitors speaking the
frontend's websocket protocol. Not used by the app itself.

The browser tests (``tests/e2e``) and the measuring scripts (``scripts/measure_cold_start.py``,
``scripts/screenshots.py``, ``scripts/load_test.py``) set up alike from here, so what the scripts measure is what the
tests check: the same browser (``find_chromium``) and its arguments, the server started the same way on a free port
of 127.0.0.1 (``start_server``, ``stop``), the same offline browser context, the same wait for a page to be
rendered (``wait_until_rendered``), the same load (``visit``, ``LAB_AT_CAPS``, ``TINY_BUDGET``). Plain functions,
no pytest; it lives in an installed package (``pip install -e .``) because scripts never import from ``tests/``.

The server runs from the repository, ``ROOT`` (``app.py``, ``serve.py``): from a checkout or an editable install.
``visit`` speaks Streamlit's websocket protocol through its generated protobuf modules (``streamlit.proto``), which
are not Streamlit's public API: the app never does this; only a client standing in for the frontend does.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import quote, urlparse

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext

ROOT = Path(__file__).resolve().parents[1]  # the repository: app.py, serve.py
CHROMIUM_ENV = "LINEAGE_CHROMIUM"  # a path to any Chromium or Chrome: wins over everything else
DEBIAN_CHROMIUM = "/usr/bin/chromium"  # Debian's chromium package
# Where `playwright install chromium` puts its builds (PLAYWRIGHT_BROWSERS_PATH overrides), and the executable in each
PLAYWRIGHT_CACHES = ("~/.cache/ms-playwright", "~/Library/Caches/ms-playwright")
PLAYWRIGHT_EXECUTABLES = (
    "chromium-*/chrome-linux*/chrome",
    "chromium-*/chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
    "chromium-*/chrome-mac*/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
)


def _executable(path: str | Path) -> bool:
    return Path(path).is_file() and os.access(path, os.X_OK)


def playwright_chromium() -> str | None:
    """The newest Chromium that ``playwright install chromium`` left on this machine, or None. Found by its folder,
    without starting Playwright (nothing is downloaded here)."""
    custom = os.environ.get("PLAYWRIGHT_BROWSERS_PATH")
    roots = [custom] if custom else PLAYWRIGHT_CACHES
    found = [p for root in roots for pattern in PLAYWRIGHT_EXECUTABLES for p in Path(root).expanduser().glob(pattern)]
    found = sorted(str(p) for p in found if _executable(p))
    return found[-1] if found else None


def find_chromium() -> str | None:
    """The browser for the end-to-end tests: ``$LINEAGE_CHROMIUM`` (None if it names no executable), else Debian's
    ``/usr/bin/chromium``, else Playwright's own Chromium; None when there is none."""
    override = os.environ.get(CHROMIUM_ENV)
    if override:
        return override if _executable(override) else None
    if _executable(DEBIAN_CHROMIUM):
        return DEBIAN_CHROMIUM
    return playwright_chromium()


CHROMIUM_PATH = find_chromium() or DEBIAN_CHROMIUM  # what the browser tests and scripts launch
NO_CHROMIUM = (
    "no Chromium for the browser tests: set LINEAGE_CHROMIUM=/path/to/chrome, or apt-get install chromium (Debian), or "
    "playwright install chromium (macOS, most Linux); ./scripts/test.sh says the same"
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
VIEWPORT = {"width": 1400, "height": 900}
LOAD_TIMEOUT_MS = 60_000  # a cold page on a loaded 2-core machine


def is_local(url: str) -> bool:
    return urlparse(url).hostname in LOCAL_HOSTS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    """Whether the Streamlit server at ``url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def server_command(port: int, *, preload: bool = False, script: str = "app.py") -> list[str]:
    """``streamlit run <script>`` on ``port``, headless, this machine only; ``preload``: the app started by serve.py,
    as the README and the container start it."""
    if preload and script != "app.py":
        raise ValueError("serve.py starts app.py only")
    start = ["serve.py"] if preload else ["-m", "streamlit", "run", script]
    return [sys.executable, *start, "--server.headless", "true", "--server.port", str(port)] + [
        "--server.address",
        "127.0.0.1",  # this machine only
        "--browser.gatherUsageStats",
        "false",
    ]


def stop(proc: subprocess.Popen) -> None:
    """Terminate a server, killing it if it does not exit within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass
class RunningServer:
    proc: subprocess.Popen
    url: str
    started: float  # time.monotonic() when the process was started
    healthy_at: float  # … and when /_stcore/health first answered


def start_server(
    log: IO, *, preload: bool = False, timeout_s: float, script: str = "app.py", env: dict[str, str] | None = None
) -> RunningServer:
    """Start the app on a free port from the repository root (output to ``log``) and wait for its health check.

    Raises RuntimeError, the server stopped, if it exits or is not healthy within ``timeout_s``. Polls every 50 ms,
    so that ``healthy_at`` is exact enough to time from.
    """
    if not (ROOT / "app.py").is_file():
        raise RuntimeError(
            f"no app.py in {ROOT}: start the server from a checkout (pip install -e ., not pip install .)"
        )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    proc = subprocess.Popen(
        server_command(port, preload=preload, script=script),
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    while not healthy(url):
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode}")
        if time.monotonic() > started + timeout_s:
            stop(proc)
            raise RuntimeError(f"the server was not healthy after {timeout_s} s")
        time.sleep(0.05)
    return RunningServer(proc=proc, url=url, started=started, healthy_at=time.monotonic())


def offline_context(browser: Browser) -> tuple[BrowserContext, list[str]]:
    """A fresh context that reaches only this machine; the returned list collects every other URL asked for."""
    context = browser.new_context(viewport=VIEWPORT)
    blocked: list[str] = []

    def route(r):
        if is_local(r.request.url):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return context, blocked


# ---- a page, rendered ----------------------------------------------------------------------------------------------

# The run is complete: the script is not running; the sidebar's seed input is there (app.py draws the sidebar's
# controls after every page, ui.running.stop_page before an early stop; only the first run of home, which its probe
# completes, ends without them: ui.first_chart); nothing is still a loading placeholder; no probe holds the page's rest
# back; and every Plotly chart has drawn its SVG.
RENDERED_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    if (!document.querySelector('[data-testid="stSidebar"] input[aria-label^="Seed"]')) return false;
    if (document.querySelector('[data-testid="stSkeleton"], [data-testid="stSkeletonElement"]')) return false;
    if (document.querySelector('[data-lineage-probe]')) return false;
    return [...document.querySelectorAll('.stPlotlyChart')].every(c => c.querySelector('.js-plotly-plot svg.main-svg'));
}"""


def wait_until_rendered(page) -> None:
    """The script run has finished and every chart has drawn. Call it once the run is known to have started."""
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=LOAD_TIMEOUT_MS)
    page.wait_for_function(RENDERED_JS, timeout=LOAD_TIMEOUT_MS)


# ---- visitors without a browser: Streamlit's own websocket protocol, for load tests ---------------------------------

# The Memory lab at its caps (every experiment at its largest), and the Live benchmark's smallest budget: the load the
# tests (tests/e2e/test_serve.py) and scripts/load_test.py put on a server.
LAB_AT_CAPS = "lab_d_k=32&lab_capacity_n=96&lab_capacity_trials=1&lab_needle_fill=96&lab_overwrite_between=128"
TINY_BUDGET = "live_benchmark_budget=" + quote("tiny — 4 contexts up to 4,096, 3 repeats (well under a second)")


@dataclass
class Visit:
    """What one visitor's script run sent back."""

    seconds: float  # connect → script finished
    alerts: list[str]  # every st.info / warning / error / success body, in order (transient ones included)
    exceptions: list[str]  # exception boxes
    buttons: dict[str, str]  # button label → widget id
    charts: int  # Plotly charts


async def visit(url: str, page: str, query: str = "", *, press: str | None = None, clear_cache: bool = False,
                timeout_s: float = 120.0) -> Visit:  # fmt: skip
    """One visitor of the server at ``url`` (this machine only), as the browser's frontend talks to it: open the
    websocket, ask for ``page`` with ``query``, and read every message until the script run finishes. ``press``: then
    press the button with that label (a second run); ``clear_cache``: first send the clear-cache message that any
    client may send."""
    import asyncio

    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
    from websockets.asyncio.client import connect

    if not is_local(url):
        raise ValueError(f"load only this machine's servers, not {url}")
    stream = url.replace("http://", "ws://", 1) + "/_stcore/stream"
    result = Visit(seconds=0.0, alerts=[], exceptions=[], buttons={}, charts=0)

    async def run(ws, widgets: list | None = None) -> None:
        state = ClientState(query_string=query, page_name=page)
        if widgets:
            state.widget_states.CopyFrom(WidgetStates(widgets=widgets))
        await ws.send(BackMsg(rerun_script=state).SerializeToString())
        while True:
            msg = ForwardMsg.FromString(await ws.recv())
            kind = msg.WhichOneof("type")
            if kind == "script_finished":
                return
            if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                which = element.WhichOneof("type")
                if which == "alert":
                    result.alerts.append(element.alert.body)
                elif which == "exception":
                    result.exceptions.append(f"{element.exception.type}: {element.exception.message}")
                elif which == "button":
                    result.buttons[element.button.label] = element.button.id
                elif which == "plotly_chart":
                    result.charts += 1

    async def session() -> None:
        async with connect(stream, subprotocols=["streamlit"], max_size=None, open_timeout=timeout_s) as ws:
            if clear_cache:
                await ws.send(BackMsg(clear_cache=True).SerializeToString())
            await run(ws)
            if press is not None:
                await run(ws, [WidgetState(id=result.buttons[press], trigger_value=True)])

    t0 = time.monotonic()
    await asyncio.wait_for(session(), timeout_s)
    result.seconds = time.monotonic() - t0
    return result


def run_async(coro):
    """``asyncio.run(coro)`` in a thread of its own: Playwright's sync API keeps an event loop in the test's thread."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def health_latencies(url: str, stop_at: float, every_s: float = 0.1) -> list[float]:
    """Seconds each /_stcore/health request took, one every ``every_s`` until ``stop_at`` (time.monotonic()); a
    request unanswered within 10 s counts as 10 s. Bounded: it ends at ``stop_at``."""
    found = []
    while time.monotonic() < stop_at:
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=10) as response:
                response.read()
            found.append(time.monotonic() - t0)
        except (urllib.error.URLError, OSError):
            found.append(10.0)
        time.sleep(max(0.0, every_s - (time.monotonic() - t0)))
    return found


def process_memory_mb(pid: int) -> tuple[float, float]:
    """(resident, peak resident) MB of a process (Linux /proc)."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def reset_peak_memory(pid: int) -> None:
    """Start a process's peak resident set (VmHWM) again from its current one (Linux, same user)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
