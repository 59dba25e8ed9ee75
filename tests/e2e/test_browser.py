"""Every page in a real browser: it loads from the navigation, its charts draw, Play animates, nothing errors.

Parametrised over ``ui.nav.PAGES``. A full-page screenshot of each page lands in ``artifacts/screenshots/``.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.checks import LOAD_TIMEOUT_MS, wait_until_rendered
from ui.nav import PAGES

pytestmark = pytest.mark.browser

FIRST_CHART_TARGET_S = 5.0  # the first chart after the server is healthy, on an idle machine
FIRST_CHART_LIMIT_S = 30.0  # what the test enforces: generous, because the CI machine is shared


def full_page_screenshot(page, path) -> None:
    """The whole page: Streamlit scrolls inside its main container, so grow the viewport to the content first."""
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    width = page.viewport_size["width"]
    page.set_viewport_size({"width": width, "height": max(height, 900)})
    wait_until_rendered(page)  # charts redraw at the new size
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": width, "height": 900})


def open_from_navigation(page, url: str, entry) -> None:
    """Open the app's home, then click the page's link in the sidebar navigation (home: stay)."""
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector('[data-testid="stSidebarNav"]', timeout=LOAD_TIMEOUT_MS)
    wait_until_rendered(page)
    if entry.url_path != "home":
        home_title = page.locator("h1").first.inner_text()
        link = page.locator(f'[data-testid="stSidebarNav"] a[href$="/{entry.url_path}"]')
        if not link.count():  # the navigation lists the first pages and folds the rest under "View more"
            page.locator('[data-testid="stSidebarNavViewButton"]').click()
        link.click()
        page.wait_for_url(f"**/{entry.url_path}", timeout=LOAD_TIMEOUT_MS)
        # the script state reads "notRunning" until the new run starts: wait for the new page's title first
        page.wait_for_function(
            "title => document.querySelector('h1') && document.querySelector('h1').innerText !== title",
            arg=home_title,
            timeout=LOAD_TIMEOUT_MS,
        )
        wait_until_rendered(page)


def test_first_chart_is_quick_after_the_server_is_up(watched, server, artifacts):
    """Time from the server answering its health check to the first chart drawn on the home page."""
    page = watched.page
    page.goto(server.url, wait_until="domcontentloaded")
    page.wait_for_selector(".stPlotlyChart .main-svg", timeout=LOAD_TIMEOUT_MS)
    elapsed = time.monotonic() - server.healthy_at
    (artifacts / "e2e-first-chart.txt").write_text(
        f"first chart {elapsed:.2f} s after the server was healthy (target {FIRST_CHART_TARGET_S} s)\n"
    )
    assert elapsed < FIRST_CHART_LIMIT_S, f"first chart took {elapsed:.1f} s"


@pytest.mark.parametrize("entry", PAGES, ids=[entry.url_path for entry in PAGES])
def test_page_in_the_browser(watched, server, artifacts, entry):
    page = watched.page
    open_from_navigation(page, server.url, entry)
    # the screenshot comes before the checks, so a failing page leaves one too
    full_page_screenshot(page, artifacts / "screenshots" / f"{entry.url_path}.png")

    title = page.locator("h1").first.inner_text()
    assert title, f"{entry.url_path}: no title"
    assert "running on" in page.locator('[data-testid="stSidebar"]').inner_text()  # the device label

    charts = page.locator(".stPlotlyChart")
    n_charts = charts.count()
    if entry.stage is not None:
        assert n_charts > 0, f"{entry.url_path}: a stage page without charts"
    for i in range(n_charts):
        assert charts.nth(i).locator(".js-plotly-plot svg.main-svg").count() > 0, f"chart {i} did not draw"

    animated = page.locator(".stPlotlyChart:has(g.updatemenu-button)")
    if entry.stage is not None:
        assert animated.count() > 0, f"{entry.url_path}: a stage page without an animation"
    if animated.count():
        chart = animated.first
        chart.scroll_into_view_if_needed()
        current = chart.locator("g.slider-group > text.slider-label").first  # the "step …" readout
        before = current.text_content()
        chart.locator("g.updatemenu-button", has_text="Play").click()
        page.wait_for_function(
            "([el, before]) => el.textContent !== before",
            arg=[current.element_handle(), before],
            timeout=10_000,
        )
        # Pause is left alone: Plotly rejects the interrupted animation's promise with no handler attached, which
        # Chromium reports as an uncaught page error "undefined" (Plotly's own, harmless to the page).

    assert not watched.page_errors, f"{entry.url_path}: uncaught page errors {watched.page_errors}"
    assert not watched.console_errors, f"{entry.url_path}: console errors {watched.console_errors}"
    assert not watched.failed_local, f"{entry.url_path}: failed requests to the app server {watched.failed_local}"
    assert not page.locator('[data-testid="stException"]').count(), f"{entry.url_path}: shows a traceback"
