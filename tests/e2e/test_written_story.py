"""A story anyone can write (issue 25), in a real browser: type a story into the form on one stage page and run it;
every stage page, reached through the app's own navigation, opens with its claim on that story; the page's link
carries the story, and opening that link in a fresh browser runs the same story."""

from __future__ import annotations

import pytest

from tests.app.util import STAGES, TEXT, expected_metric, written
from tests.e2e.checks import LOAD_TIMEOUT_MS, assert_clean, wait_until_rendered
from tests.e2e.conftest import watching

pytestmark = pytest.mark.browser

FIRST_METRIC_JS = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const label = main.querySelector('[data-testid="stMetricLabel"]');
    const value = main.querySelector('[data-testid="stMetricValue"]');
    return {label: label ? label.textContent.trim() : '', value: value ? value.textContent.trim() : ''};
}"""


def first_metric(page, word: str) -> dict:
    """The page's first metric, once its label holds ``word`` (the run on the written story has drawn)."""
    page.wait_for_function(
        f"() => ({FIRST_METRIC_JS})().label.includes({word!r})",
        timeout=LOAD_TIMEOUT_MS,
    )
    wait_until_rendered(page)
    return page.evaluate(FIRST_METRIC_JS)


def test_a_typed_story_runs_on_every_stage_and_opens_again_from_its_link(browser, server):
    with watching(browser) as watched:
        page = watched.page
        page.goto(f"{server.url}/deltanet", wait_until="domcontentloaded")
        wait_until_rendered(page)
        page.get_by_text("Your own story", exact=True).click()
        page.get_by_role("textbox", name="The story", exact=True).fill(TEXT)
        page.get_by_role("button", name="Run this story").click()
        word, value = expected_metric("deltanet")
        assert first_metric(page, word)["value"] == value
        page.wait_for_function("() => window.location.search.includes('story=')", timeout=LOAD_TIMEOUT_MS)
        for stage in STAGES:
            page.locator(f'[data-testid="stSidebarNav"] a[href$="/{stage}"]').first.click()
            page.wait_for_url(f"**/{stage}?*", timeout=LOAD_TIMEOUT_MS)
            word, value = expected_metric(stage)
            assert first_metric(page, word)["value"] == value, stage
        page.wait_for_function("() => window.location.search.includes('story=')", timeout=LOAD_TIMEOUT_MS)
        link = page.url
        assert_clean(watched, "a written story on every stage page")
    with watching(browser) as fresh:  # a new browser, as a student opening the lecturer's link
        fresh.page.goto(link, wait_until="domcontentloaded")
        stage = STAGES[-1]
        word, value = expected_metric(stage)
        assert first_metric(fresh.page, word)["value"] == value
        shown = fresh.page.get_by_role("textbox", name="The story", exact=True).input_value()
        assert shown == written().text()  # the form shows the story the link carried
        assert_clean(fresh, "the written story's link")
