"""What the browser tests and ``scripts/measure_cold_start.py`` share: the browser, the server's command line, an
offline browser context. Plain functions, no pytest: the measurement script imports them too.
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
from urllib.parse import urlparse

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext

ROOT = Path(__file__).resolve().parents[2]
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


# ---- visitors without a browser: Streamlit's own websocket protocol, for load tests ---------------------------------


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
