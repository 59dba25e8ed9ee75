"""The home page's first chart first (ui.first_chart), in a real browser: a fresh visitor's chart is drawn before the
rest of the page and the sidebar's widgets arrive, the rest follows by itself, and it follows even when plotly.js
never loads (after the probe's fallback delay)."""

from __future__ import annotations

import time

import pytest

from tests.e2e.checks import LOAD_TIMEOUT_MS, assert_clean, wait_until_rendered
from ui.first_chart import FALLBACK_MS

pytestmark = pytest.mark.browser

# When each part of home first appears in the document (performance.now(), ms), recorded from the first byte on
SEEN_JS = """
window.__seen = {};
new MutationObserver(() => {
  const seen = window.__seen, now = performance.now();
  if (!seen.chart && document.querySelector(".js-plotly-plot .main-svg")) seen.chart = now;
  if (!seen.rest && [...document.querySelectorAll("h3")].some(h => h.textContent.includes("One recurrence")))
    seen.rest = now;
  if (!seen.seed && document.querySelector('[data-testid="stSidebar"] input[aria-label^="Seed"]')) seen.seed = now;
}).observe(document, { childList: true, subtree: true });
"""
SEED_LABEL = "Seed (shared by all pages)"  # the sidebar's seed input, as a visitor reads it
REST_WITHIN_MS = 3000  # after the chart, on a loaded machine; well under FALLBACK_MS, so it was the probe's trigger


def test_a_fresh_visitor_gets_the_chart_first_and_then_the_rest_by_itself(watched, server):
    page = watched.page
    page.add_init_script(SEEN_JS)
    page.goto(server.url, wait_until="domcontentloaded")
    page.get_by_role("heading", name="One recurrence, six cells").wait_for(timeout=LOAD_TIMEOUT_MS)
    page.get_by_label(SEED_LABEL).wait_for(timeout=LOAD_TIMEOUT_MS)
    wait_until_rendered(page)
    seen = page.evaluate("() => window.__seen")
    assert set(seen) == {"chart", "rest", "seed"}, seen
    assert seen["chart"] < seen["rest"] and seen["chart"] < seen["seed"], seen
    assert seen["rest"] - seen["chart"] < REST_WITHIN_MS, seen
    assert page.get_by_role("heading", name="22,580 GPT-2s?").count() == 1
    assert not page.locator("[data-lineage-probe]").count()
    assert_clean(watched, "home, first visit")


def test_the_rest_comes_even_if_plotly_js_never_loads(watched, server):
    page = watched.page
    page.route("**/PlotlyChart*.js", lambda route: route.abort())  # the chart can never be drawn
    page.goto(server.url, wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=LOAD_TIMEOUT_MS)
    started = time.monotonic()
    page.get_by_role("heading", name="One recurrence, six cells").wait_for(timeout=LOAD_TIMEOUT_MS)
    waited_ms = (time.monotonic() - started) * 1000
    assert waited_ms > FALLBACK_MS * 0.5, f"the rest came after {waited_ms:.0f} ms, before any fallback could fire"
    assert not page.locator(".js-plotly-plot .main-svg").count()
    page.get_by_label(SEED_LABEL).wait_for(timeout=LOAD_TIMEOUT_MS)
