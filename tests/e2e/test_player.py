"""The player and the tour in a real browser: what a lecturer does after the page has loaded.

- Play keeps every text of the story chart at presenter size at every step (the frames carry their own texts).
- The heatmap keeps its image while the animation plays, with the CPU throttled 4× (DevTools protocol).
- The slider, ◀ / ▶ and J / K move one step: J after a scrub goes one back from the scrub, and the URL follows.
- The tour, by its Next buttons and Shift+N, walks every page of the navigation and comes back home; every page opens
  at its top, however far down the previous one was scrolled.
- At 1280×800 with the sidebar open, no chart's texts overlap, no sentence or metric label is cut off, and no colour
  bar lies over a neighbouring panel.

Waits are for events (a frame drawn, a page run finished), never for a fixed time. Screenshots go to
artifacts/screenshots/.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.e2e.checks import LOAD_TIMEOUT_MS, assert_clean, wait_until_rendered
from ui.nav import DEFAULT_PAGE, PAGES, tour
from ui.presenter import PRESENTER_PX

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1920, "height": 1080}
LAPTOP = {"width": 1280, "height": 800}
STAGES = [p.url_path for p in PAGES if p.stage]
THROTTLE = 4  # Emulation.setCPUThrottlingRate: a projector laptop on a busy day
STEPS_PLAYED = 4  # frames the animation must advance through while it is watched

STORY_CHART = '[data-testid="stMain"] .stPlotlyChart'
# The first chart's step (its slider's index; plotly.js keeps it in step with Play and the slider) and its read-out.
STEP_JS = """() => {
    const gd = document.querySelector('[data-testid="stMain"] .stPlotlyChart .js-plotly-plot');
    return {active: gd.layout.sliders[0].active,
            label: gd.querySelector('g.slider-group > text.slider-label')?.textContent || ''};
}"""

# Every drawn text of the first chart, with its size; the slider's own labels are transparent (the read-out names the
# step), and are left out.
CHART_TEXTS_JS = """() => {
    const gd = document.querySelector('[data-testid="stMain"] .stPlotlyChart .js-plotly-plot');
    return [...gd.querySelectorAll('svg text')]
        .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0
            && getComputedStyle(t).fill !== 'rgba(0, 0, 0, 0)')
        .map(t => ({px: parseFloat(getComputedStyle(t).fontSize), text: t.textContent.trim().slice(0, 40),
                    sentence: !!t.closest('g.annotation') && t.textContent.startsWith('Step ')}));
}"""

# Counts, in every animation frame the browser paints (a requestAnimationFrame callback precedes each paint), the
# heatmap images of the first chart; stopped by window.__heat.stop.
HEAT_SAMPLER_JS = """() => {
    const gd = document.querySelector('[data-testid="stMain"] .stPlotlyChart .js-plotly-plot');
    const want = gd.querySelectorAll('g.hm image').length;
    const s = window.__heat = {want, painted: 0, blank: 0, stop: false};
    const tick = () => {
        s.painted++;
        if (gd.querySelectorAll('g.hm image').length < want) s.blank++;
        if (!s.stop) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    return want;
}"""
HEAT_IMAGES_JS = """() => document.querySelector('[data-testid="stMain"] .stPlotlyChart .js-plotly-plot')
    .querySelectorAll('g.hm image').length"""

MAIN_SCROLL_JS = """() => document.querySelector('[data-testid="stMain"]').scrollTop"""


# The active step of every animated chart on the page.
ACTIVE_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .filter(gd => gd.layout && gd.layout.sliders && gd.layout.sliders.length).map(gd => gd.layout.sliders[0].active)"""


def open_page(page, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=LOAD_TIMEOUT_MS)
    wait_until_rendered(page)


def step_of(page) -> dict:
    return page.evaluate(STEP_JS)


def wait_for_step(page, lo: int, what: str, *, exact: bool = True) -> None:
    """Wait until the first chart's slider index is ``lo`` (``exact``) or at least ``lo``."""
    try:
        page.wait_for_function(
            '([lo, exact]) => { const gd = document.querySelector(\'[data-testid="stMain"] .stPlotlyChart'
            " .js-plotly-plot'); const active = gd.layout.sliders[0].active;"
            " return exact ? active === lo : active >= lo; }",
            arg=[lo, exact],
            timeout=LOAD_TIMEOUT_MS,
        )
    except PlaywrightTimeoutError:
        pytest.fail(f"{what}: the chart stayed at {step_of(page)}")


def press_play(page) -> None:
    play = page.locator(STORY_CHART).first.locator("g.updatemenu-button").filter(has_text="Play")
    play.click(no_wait_after=True)  # a throttled page is slow to settle; the frames are what the test waits for


def query(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


# --- frames are slides too -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["gpt2", "kda"])
def test_play_keeps_every_text_at_presenter_size(watched, server, artifacts, stage):
    """Mid-play, in presenter mode, the story chart's sentence, titles, ticks and cell numbers are all ≥ 18 px (the
    frames carry their own sentence and titles, which once came at 16 px), and Play is on the first screen."""
    page = watched.page
    page.set_viewport_size(PROJECTOR)
    open_page(page, f"{server.url}/{stage}?present=1&{stage}_step=0")
    play = page.locator(STORY_CHART).first.locator("g.updatemenu-button").filter(has_text="Play")
    box = play.bounding_box()
    assert box is not None and box["y"] + box["height"] <= PROJECTOR["height"], f"Play is below the first screen: {box}"
    press_play(page)
    sizes = []
    for step in range(1, STEPS_PLAYED + 1):  # read at every frame it reaches
        wait_for_step(page, step, f"/{stage} Play", exact=False)
        sizes += page.evaluate(CHART_TEXTS_JS)
    page.screenshot(path=str(artifacts / "screenshots" / f"player-{stage}-presenter-playing.png"))
    assert any(s["sentence"] for s in sizes), "no step sentence measured while playing"
    small = [s for s in sizes if s["px"] < PRESENTER_PX["tick"]]
    assert not small, f"/{stage} while playing: texts under {PRESENTER_PX['tick']} px: {small[:6]}"
    assert_clean(watched, f"/{stage}?present=1 Play")


# --- nothing goes blank ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["gpt2", "kda"])
def test_the_heatmap_keeps_its_image_while_playing_on_a_slow_machine(watched, server, artifacts, stage):
    """CPU throttled 4×: in every frame the browser paints while the animation plays, and every time the page is
    asked between frames, the heatmap has its image (plotly.js once took it out of the page for most of each frame)."""
    page = watched.page
    page.set_viewport_size(PROJECTOR)
    open_page(page, f"{server.url}/{stage}?present=1&{stage}_step=0")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": THROTTLE})
    try:
        want = page.evaluate(HEAT_SAMPLER_JS)
        assert want >= 1, "the story chart has no heatmap image to watch"
        press_play(page)
        asked = []
        while step_of(page)["active"] < STEPS_PLAYED:  # each call is a task of its own, between the frame's tasks
            asked.append(page.evaluate(HEAT_IMAGES_JS))
            if len(asked) == 1:
                page.screenshot(path=str(artifacts / "screenshots" / f"player-{stage}-throttled-playing.png"))
            page.wait_for_timeout(50)  # a poll interval, not a wait for the result: the loop ends on the frame reached
        painted = page.evaluate("() => { window.__heat.stop = true; return window.__heat; }")
    finally:
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
    assert asked and painted["painted"] > 0, (asked, painted)
    assert painted["blank"] == 0, f"/{stage}: {painted['blank']} of {painted['painted']} painted frames had no image"
    assert min(asked) >= want, f"/{stage}: heatmap images seen between frames: {asked}"
    assert_clean(watched, f"/{stage} throttled Play")


# --- one step control ------------------------------------------------------------------------------------------------


def scrubber(page):
    """A click on the story chart's slider rail at a step: the rail scrolled into view once, then one click a call."""
    rail = page.locator(STORY_CHART).first.locator("g.slider-group rect.slider-rail-rect").first
    rail.scroll_into_view_if_needed()
    box = rail.bounding_box()
    steps = len(page.evaluate("() => document.querySelector('.stPlotlyChart .js-plotly-plot').layout.sliders[0].steps"))

    def scrub(step: int) -> None:
        page.mouse.click(box["x"] + box["width"] * step / (steps - 1), box["y"] + box["height"] / 2)

    return scrub


def test_j_after_a_scrub_steps_back_from_the_scrub(watched, server):
    """Scrub the story chart's slider to step 10, press J: step 9, not the step the page opened on. K, ◀ and ▶ step
    from there too, and the URL follows, so the link opens at the step shown."""
    page = watched.page
    page.set_viewport_size(LAPTOP)
    open_page(page, f"{server.url}/kda?kda_T=32")
    assert step_of(page)["label"] == "step 31", "a page opens on its last step"
    scrub = scrubber(page)
    scrub(10)
    wait_for_step(page, 10, "a scrub to step 10")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("j")
    wait_for_step(page, 9, "J after the scrub")
    assert step_of(page)["label"] == "step 9"
    # every chart of the page is at that step now, not only the one scrubbed (the others were at 31, and J took them
    # to 30, and the URL to whichever chart drew last)
    page.wait_for_function(f"() => {{ const a = ({ACTIVE_JS})(); return a.length > 1 && a.every(i => i === 9); }}")
    assert query(page).get("kda_step") == "9", page.url
    page.keyboard.press("k")
    wait_for_step(page, 10, "K")
    page.get_by_role("button", name=re.compile("Forward")).first.click()
    wait_for_step(page, 11, "Forward ▶")
    page.get_by_role("button", name=re.compile("Back")).first.click()
    wait_for_step(page, 10, "◀ Back")
    assert query(page).get("kda_step") == "10", page.url
    watched.wait_for_requests()  # the icon asked for again at the last step, which opening the link would abort
    open_page(page, page.url)  # the link as it stands now opens at that step
    assert step_of(page)["label"] == "step 10"
    assert_clean(watched, "/kda steps")


def test_j_pressed_as_a_scrub_lands_is_not_lost(watched, server):
    """J at once after a click on the slider: Plotly's slider moves its handle at once but animates in the next
    animation frame, and a step started before that was overridden by it (the chart stayed on the scrubbed step; the
    race lost 2 of 5 and 4 of 10 such presses before the player waited a frame). Six scrubs, each at once followed
    by J."""
    page = watched.page
    page.set_viewport_size(LAPTOP)
    open_page(page, f"{server.url}/kda?kda_T=32")
    scrub = scrubber(page)
    for target in (10, 14, 18, 22, 6, 26):
        scrub(target)
        page.keyboard.press("j")
        wait_for_step(page, target - 1, f"J at once after a scrub to step {target}")
    assert query(page).get("kda_step") == "25", page.url
    assert_clean(watched, "/kda scrubs with J")


# --- the tour --------------------------------------------------------------------------------------------------------


def test_the_tour_reaches_every_page_and_each_opens_at_its_top(watched, server, artifacts):
    """Home → Start → Next … through every page of the navigation (stages, hybrid, ledger, labs, tools) → Home. Each
    Next is pressed from the bottom of a page (clicked, or Shift+N), and each page opens with its main area scrolled
    to the top."""
    page = watched.page
    page.set_viewport_size(LAPTOP)
    open_page(page, f"{server.url}/")
    stops = tour()
    visited, landed, left_from = [], [], []
    for i in range(len(stops)):
        button = page.get_by_role("button", name=re.compile(r"^(Next: |Start the tour)"))
        assert button.count(), f"no Next on /{visited[-1] if visited else DEFAULT_PAGE}: the tour has a dead end"
        button.first.scroll_into_view_if_needed()
        left_from.append(page.evaluate(MAIN_SCROLL_JS))
        old = page.url
        if i % 2:
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
            page.keyboard.press("Shift+N")
        else:
            button.first.click()
        page.wait_for_function("(old) => location.href !== old", arg=old, timeout=LOAD_TIMEOUT_MS)
        wait_until_rendered(page)
        visited.append(urlparse(page.url).path.strip("/") or DEFAULT_PAGE)
        landed.append(page.evaluate(MAIN_SCROLL_JS))
    page.screenshot(path=str(artifacts / "screenshots" / "tour-back-home.png"))
    assert visited == [p.url_path for p in stops[1:]] + [DEFAULT_PAGE], visited
    assert max(left_from[1:]) > 0, "the Next buttons were all on the first screen: nothing tested the landing"
    opened_away = {v: y for v, y in zip(visited, landed, strict=True) if y != 0}
    assert not opened_away, f"pages opened away from their top (px): {opened_away}"
    assert_clean(watched, "the whole tour")


def test_a_sidebar_link_opens_the_page_at_its_top(watched, server):
    page = watched.page
    page.set_viewport_size(LAPTOP)
    open_page(page, f"{server.url}/deltanet")
    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 3000)")
    assert page.evaluate(MAIN_SCROLL_JS) > 0
    link = page.locator('[data-testid="stSidebarNav"] a[href$="/gla"]')
    if not link.is_visible():
        page.locator('[data-testid="stExpandSidebarButton"]').click()
    link.click()
    page.wait_for_url("**/gla*", timeout=LOAD_TIMEOUT_MS)
    wait_until_rendered(page)
    assert page.evaluate(MAIN_SCROLL_JS) == 0
    assert_clean(watched, "sidebar link")


# --- a laptop layout -------------------------------------------------------------------------------------------------

# Per chart: pairs of its texts whose boxes overlap (by more than 1 px both ways), texts reaching past the chart's
# edges, and colour bars that lie over another panel's plot area or tick labels; and cut labels: a key number's, or a
# link's in the sidebar's navigation.
LAYOUT_JS = """() => {
    const inside = (a, b) => a.left < b.right - 1 && b.left < a.right - 1
        && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const out = [];
    document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot').forEach((gd, c) => {
        const svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
        const texts = [...gd.querySelectorAll('svg text')]
            .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0
                && getComputedStyle(t).fill !== 'rgba(0, 0, 0, 0)' && getComputedStyle(t).display !== 'none')
            .map(t => ({box: t.getBoundingClientRect(), text: t.textContent.trim().slice(0, 30)}));
        for (let i = 0; i < texts.length; i++) {
            const a = texts[i];
            if (a.box.left < svg.left - 1 || a.box.right > svg.right + 1)
                out.push(`chart ${c}: "${a.text}" runs past the chart's edge`);
            for (let j = i + 1; j < texts.length; j++)
                if (inside(a.box, texts[j].box)) out.push(`chart ${c}: "${a.text}" overlaps "${texts[j].text}"`);
        }
        const panels = [...gd.querySelectorAll('g.cartesianlayer > g.subplot')];
        gd.querySelectorAll('g.colorbar').forEach(bar => {
            const b = bar.getBoundingClientRect();
            for (const p of panels) {
                const bg = p.querySelector('rect.nsewdrag, path.bg, rect.bg');
                const ticks = [...p.querySelectorAll('g.ytick text')].map(t => t.getBoundingClientRect());
                for (const r of [bg?.getBoundingClientRect(), ...ticks].filter(Boolean))
                    if (inside(b, r)) { out.push(`chart ${c}: a colour bar lies over panel ${p.classList[1]}`); break; }
            }
        });
    });
    document.querySelectorAll('[data-testid="stMain"] [data-testid="stMetricLabel"] *').forEach(el => {
        if (el.scrollWidth > el.clientWidth + 1 && el.textContent.trim())
            out.push(`metric label cut off: "${el.textContent.trim().slice(0, 40)}"`);
    });
    document.querySelectorAll('[data-testid="stSidebarNav"] a *').forEach(el => {
        if (el.scrollWidth > el.clientWidth + 1 && el.textContent.trim())
            out.push(`navigation link cut off: "${el.textContent.trim().slice(0, 40)}"`);
    });
    return out;
}"""


@pytest.mark.parametrize("stage", STAGES)
def test_a_laptop_with_the_sidebar_open_shows_every_chart_without_collisions(watched, server, artifacts, stage):
    page = watched.page
    page.set_viewport_size(LAPTOP)
    open_page(page, f"{server.url}/{stage}")
    sidebar = page.locator('[data-testid="stSidebar"]')
    if sidebar.get_attribute("aria-expanded") == "false" or not sidebar.bounding_box()["width"]:
        page.locator('[data-testid="stExpandSidebarButton"]').click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"stSidebar\"]').getBoundingClientRect().width > 200"
        " && [...document.querySelectorAll('.js-plotly-plot svg.main-svg')].every(s => s.getBoundingClientRect().width"
        " <= document.querySelector('[data-testid=\"stMain\"]').getBoundingClientRect().width)",
        timeout=LOAD_TIMEOUT_MS,
    )
    page.screenshot(path=str(artifacts / "screenshots" / f"laptop-{stage}.png"))
    found = page.evaluate(LAYOUT_JS)
    assert not found, f"/{stage} at 1280×800, sidebar open: {found[:10]}"
    assert_clean(watched, f"/{stage} on a laptop")
