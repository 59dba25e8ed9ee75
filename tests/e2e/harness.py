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
CHROMIUM_PATH = "/usr/bin/chromium"  # Debian's chromium; Playwright's own browser downloads are never used
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


def server_command(port: int, *, preload: bool = False) -> list[str]:
    """``streamlit run app.py`` on ``port``, headless; ``preload``: started by serve.py, as the container does."""
    start = ["serve.py"] if preload else ["-m", "streamlit", "run", "app.py"]
    return [sys.executable, *start, "--server.headless", "true", "--server.port", str(port)] + [
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


def start_server(log: IO, *, preload: bool = False, timeout_s: float) -> RunningServer:
    """Start the app on a free port from the repository root (output to ``log``) and wait for its health check.

    Raises RuntimeError, the server stopped, if it exits or is not healthy within ``timeout_s``. Polls every 50 ms,
    so that ``healthy_at`` is exact enough to time from.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    proc = subprocess.Popen(
        server_command(port, preload=preload),
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
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
