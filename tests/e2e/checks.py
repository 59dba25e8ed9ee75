"""Waits and assertions the browser tests share. The wait for a rendered page is ``ui.browser``'s: the scripts wait
the same way."""

from __future__ import annotations

import re

from ui.browser import LOAD_TIMEOUT_MS, RENDERED_JS, wait_until_rendered

__all__ = ["BASE_PATH_PROBE", "LOAD_TIMEOUT_MS", "RENDERED_JS", "assert_clean", "wait_until_rendered"]

# Opened on a page's own path (a deep link), Streamlit's frontend first looks for the server under that path, then
# under the root: one 404 for each of these two, on the first load, wherever the app is served.
BASE_PATH_PROBE = re.compile(r"^https?://[^/]+/[^?#]+/_stcore/(health|host-config)$")


def assert_clean(watched, what: str) -> None:
    """Offline and error-free: nothing was asked of another host, nothing to the app failed, nothing raised."""
    assert not watched.blocked, f"{what}: requests to other hosts (the app must work offline): {watched.blocked}"
    assert not watched.failed_local, f"{what}: failed requests to the app server: {watched.failed_local}"
    assert not watched.page_errors, f"{what}: uncaught page errors: {watched.page_errors}"
    errors = [(text, url) for text, url in watched.console_sources if not BASE_PATH_PROBE.match(url)]
    assert not errors, f"{what}: console errors: {errors}"
    assert not watched.page.locator('[data-testid="stException"]').count(), f"{what}: shows an exception"
    assert not watched.page.locator('[data-testid="stAlertContentError"]').count(), f"{what}: shows an error"
