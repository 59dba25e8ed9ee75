"""Waits and assertions the browser tests share."""

from __future__ import annotations

import re

LOAD_TIMEOUT_MS = 60_000  # a cold page on a loaded 2-core machine

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


# The run is complete: the script is not running; the sidebar's seed input is there (app.py draws the sidebar's
# controls after every page, ui.common.stop_page before an early stop; only the first run of home, which its probe
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
