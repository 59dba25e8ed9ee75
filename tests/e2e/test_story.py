"""The story's first screen and one step, in a real browser at 1920 × 1080 with ``?present=1``; the path.

On every stage page the first chart starts inside the first screen and the claim's number is drawn at ≥ 48 px; after
Play has moved the story chart, its slider, its sentence and its step marker name the same step (read from the DOM).
Home has a Start button, ``/home`` opens without a "Page not found" dialog, and every page is listed in the sidebar
without expanding anything.
"""

from __future__ import annotations

import pytest

from tests.e2e.checks import LOAD_TIMEOUT_MS, assert_clean, wait_until_rendered
from ui.nav import PAGES

pytestmark = pytest.mark.browser

SCREEN = {"width": 1920, "height": 1080}
STAGES = [p.url_path for p in PAGES if p.stage]
CLAIM_PX = 48

FIRST_SCREEN_JS = """() => {
    const chart = document.querySelector('[data-testid="stMain"] .stPlotlyChart');
    const metric = document.querySelector('[data-testid="stMain"] [data-testid="stMetricValue"]');
    const sized = metric ? [metric, ...metric.querySelectorAll('*')].filter(e => e.textContent.trim()) : [];
    return {
        chartTop: chart ? chart.getBoundingClientRect().top + window.scrollY : null,
        metricPx: sized.length ? Math.min(...sized.map(e => parseFloat(getComputedStyle(e).fontSize))) : null,
        metricText: metric ? metric.textContent.trim() : null,
    };
}"""

# What the story chart shows as its step: the slider's read-out, the sentence, the marker's x and the slider's index.
STEP_SHOWN_JS = """() => {
    const gd = document.querySelector('[data-testid="stMain"] .stPlotlyChart .js-plotly-plot');
    const label = gd.querySelector('g.slider-group > text.slider-label')?.textContent || '';
    const sentence = [...gd.querySelectorAll('g.annotation text')].map(t => t.textContent)
        .find(t => t.startsWith('Step ')) || '';
    const marker = (gd.layout.shapes || []).find(s => s.name === 'step_marker');
    return {label, sentence, marker: marker ? marker.x0 : null, active: gd.layout.sliders[0].active};
}"""


def open_page(page, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded")
    wait_until_rendered(page)


@pytest.mark.parametrize("stage", STAGES)
def test_first_screen_holds_the_claim_and_the_chart(watched, server, stage):
    page = watched.page
    page.set_viewport_size(SCREEN)
    open_page(page, f"{server.url}/{stage}?present=1")
    shown = page.evaluate(FIRST_SCREEN_JS)
    assert shown["chartTop"] is not None and shown["chartTop"] < SCREEN["height"], (stage, shown)
    assert shown["metricPx"] is not None and shown["metricPx"] >= CLAIM_PX, (stage, shown)
    assert_clean(watched, f"/{stage} in presenter mode")


def test_after_play_the_sentence_the_slider_and_the_marker_agree(watched, server):
    page = watched.page
    page.set_viewport_size(SCREEN)
    open_page(page, f"{server.url}/deltanet?present=1&deltanet_step=2")
    before = page.evaluate(STEP_SHOWN_JS)
    assert before["label"] == "step 2" and before["marker"] == 2 and before["sentence"].startswith("Step 2:"), before
    chart = page.locator('[data-testid="stMain"] .stPlotlyChart').first
    chart.locator("g.updatemenu-button").filter(has_text="Play").click()
    # Read while it plays (a frame redraws the heatmap, the marker and the sentence in one go), once it is well past
    # the step the page opened on. (Pause is not clicked: plotly.js rejects the interrupted animation's promise.)
    page.wait_for_function(
        '() => parseInt((document.querySelector(\'[data-testid="stMain"] .stPlotlyChart '
        "g.slider-group > text.slider-label')?.textContent || '').replace('step ', '')) >= 6",
        timeout=LOAD_TIMEOUT_MS,
    )
    after = page.evaluate(STEP_SHOWN_JS)
    step = int(after["label"].removeprefix("step "))
    assert step >= 6 and after["active"] == step, after
    assert after["marker"] == step and after["sentence"].startswith(f"Step {step}:"), after
    assert not page.get_by_text("Step t", exact=True).count(), "a second step control shows another step"
    assert_clean(watched, "/deltanet Play")


def test_home_starts_the_tour_and_home_deep_link_opens_cleanly(watched, server):
    page = watched.page
    open_page(page, f"{server.url}/home")
    assert not page.get_by_role("dialog").count(), "a dialog opened over /home"
    assert page.locator('[data-testid="stMain"] h1').first.inner_text().strip() == "Attention Lineage"
    links = page.locator('[data-testid="stSidebarNav"] a')
    listed = {a.split("/")[-1] for a in links.evaluate_all("els => els.filter(e => e.offsetParent).map(e => e.href)")}
    assert {p.url_path for p in PAGES if p.url_path != "home"} <= listed, listed
    assert not page.get_by_text("View more", exact=False).count()
    page.get_by_role("button", name="Start the tour").click()
    page.wait_for_url("**/gpt2*", timeout=LOAD_TIMEOUT_MS)
    wait_until_rendered(page)
    assert_clean(watched, "/home and Start")
