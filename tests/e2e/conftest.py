"""One real app server and one real headless Chromium for the whole end-to-end session.

The browser is ``ui.browser.find_chromium()``'s — ``$LINEAGE_CHROMIUM``, Debian's ``chromium``, or Playwright's own
build if one was installed — driven by Playwright; nothing is downloaded here. Every request to a host other than this
machine is aborted, so the app must work offline. The server's start and the browser's set-up are ``ui.browser``'s,
which the measuring scripts share.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ui.browser import (
    CHROMIUM_ARGS,
    CHROMIUM_PATH,
    NO_CHROMIUM,
    ROOT,
    is_local,
    offline_context,
    start_server,
    stop,
)

ARTIFACTS = ROOT / "artifacts"  # git-ignored
CHROMIUM = Path(CHROMIUM_PATH)
STARTUP_TIMEOUT_S = 90  # server import + first health answer on a loaded 2-core machine


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where the browser tests leave screenshots and timings."""
    (ARTIFACTS / "screenshots").mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@contextmanager
def running_server(log_name: str, *, preload: bool = False):
    """The app on a free port, from the repository root, until the block ends: ``streamlit run app.py``, or with
    ``preload`` ``python serve.py`` (the hosted demo's start). Its output goes to ``artifacts/<log_name>``."""
    ARTIFACTS.mkdir(exist_ok=True)
    log_path = ARTIFACTS / log_name
    with open(log_path, "w") as log:
        try:
            running = start_server(log, preload=preload, timeout_s=STARTUP_TIMEOUT_S)
        except RuntimeError as exc:
            pytest.fail(f"{exc}:\n{log_path.read_text()}")
        try:
            yield running
        finally:
            stop(running.proc)


@pytest.fixture(scope="session")
def server():
    """``streamlit run app.py`` on a free port; stopped when the session ends."""
    with running_server("e2e-server.log") as running:
        yield running


@pytest.fixture(scope="session")
def preloaded_server():
    """``python serve.py``, as the hosted demo starts; only started when a test asks for it."""
    with running_server("e2e-serve-py.log", preload=True) as running:
        yield running


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():  # a failure, never a skip: CI must not pass without its browser
        pytest.fail(f"{CHROMIUM} is missing: {NO_CHROMIUM}. These tests never download a browser themselves.")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class Watched:
    """A browser page and everything that went wrong on it."""

    page: object
    console_errors: list[str] = field(default_factory=list)
    console_sources: list[tuple[str, str]] = field(default_factory=list)  # (error text, the URL it came from)
    page_errors: list[str] = field(default_factory=list)
    failed_local: list[str] = field(default_factory=list)  # requests to this machine that failed
    blocked: list[str] = field(default_factory=list)  # requests elsewhere, aborted by the route
    in_flight: set = field(default_factory=set)  # requests to this machine not yet answered

    def wait_for_requests(self, quiet_ms: int = 300, timeout_ms: int = 10_000) -> None:
        """Until no request to this machine has been in flight for ``quiet_ms``: a test that opens another URL next
        would otherwise abort them and count them as failed (Chromium asks for the page's icon again a few ms after a
        history.replaceState, which the player does at a step)."""
        waited = quiet = 0
        while quiet < quiet_ms:
            assert waited < timeout_ms, f"requests still unanswered after {timeout_ms} ms: {self.in_flight}"
            self.page.wait_for_timeout(50)
            waited += 50
            quiet = 0 if self.in_flight else quiet + 50


@contextmanager
def watching(browser):
    """A fresh browser context (1400 × 900), offline except for this machine, and a page whose errors are recorded."""
    context, blocked = offline_context(browser)
    page = context.new_page()
    w = Watched(page=page, blocked=blocked)

    def on_console(msg) -> None:
        if msg.type == "error":
            w.console_errors.append(msg.text)
            w.console_sources.append((msg.text, msg.location.get("url", "")))

    page.on("console", on_console)
    page.on("pageerror", lambda exc: w.page_errors.append(str(exc)))

    def on_failed(req) -> None:
        w.in_flight.discard(req)
        if is_local(req.url):
            w.failed_local.append(f"{req.url}: {req.failure}")

    page.on("request", lambda req: w.in_flight.add(req) if is_local(req.url) else None)
    page.on("requestfinished", lambda req: w.in_flight.discard(req))
    page.on("requestfailed", on_failed)
    try:
        yield w
    finally:
        context.close()


@pytest.fixture
def watched(browser, server):
    """A fresh, offline browser context per test, for pages of ``server``."""
    with watching(browser) as w:
        yield w


@pytest.fixture
def watched_preloaded(browser, preloaded_server):
    """The same, for pages of ``preloaded_server``."""
    with watching(browser) as w:
        yield w
