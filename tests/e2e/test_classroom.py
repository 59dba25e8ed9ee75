"""The classroom features in a real browser: presenter mode, the guided tour, deep links, keyboard steps, and the
offline HTML export of an animation.

Every test runs in the offline context of ``conftest.watched`` (requests to any other host are aborted) and ends by
checking that no such request was made and that nothing failed or raised on the page.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from lineage import stages
from tests.e2e.checks import LOAD_TIMEOUT_MS, RENDERED_JS, assert_clean, wait_until_rendered
from ui.nav import tour
from ui.presenter import PRESENTER_PX

pytestmark = pytest.mark.browser

CHANGE_TIMEOUT_MS = 30_000  # one rerun after a click or a key
# The tour after Home through the stages and the claims ledger to the first lab (tests/e2e/test_player.py walks on
# through the labs and the tools back home).
_STOPS = tour()[1:]
TOUR = _STOPS[: next(i for i, e in enumerate(_STOPS) if e.section == "Labs") + 1]
STEP_PAGE = "gla"  # a quick stage page for the step keys and the export
STEP_T = 8  # its sequence length, kept short so each rerun is quick

# The size every text node is drawn at (the computed size of its parent element: a heading's words sit in a <span>,
# so the <h1> element's own size says nothing), and the Plotly tick labels (SVG text with an inline font-size). Text
# in a table counts as table text, not prose (presenter mode sets tables a size under the body's).
MEASURE_JS = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const drawnSizes = (roots, inTables = false) => {
        const sizes = [];
        for (const root of roots) {
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                const el = node.parentElement;
                if (!node.textContent.trim() || !el.getClientRects().length || el.closest('code')) continue;
                if (Boolean(el.closest('td, th')) !== inTables) continue;
                sizes.push(parseFloat(getComputedStyle(el).fontSize));
            }
        }
        return sizes;
    };
    const prose = [...main.querySelectorAll(
        '[data-testid="stMarkdown"] [data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"], '
        + '[data-testid="stAlertContentSuccess"], [data-testid="stAlertContentWarning"]')];
    const ticks = [...main.querySelectorAll('.js-plotly-plot .xtick text, .js-plotly-plot .ytick text')]
        .map(t => parseFloat(t.style.fontSize));
    const sidebar = document.querySelector('[data-testid="stSidebar"]');
    const expand = document.querySelector('[data-testid="stExpandSidebarButton"]');
    return {
        prose: drawnSizes(prose),
        tables: drawnSizes([...main.querySelectorAll('table')], true),
        h1: drawnSizes([...main.querySelectorAll('h1')]),
        ticks,
        sidebarWidth: sidebar.getBoundingClientRect().width,
        sidebarCollapsed: sidebar.getAttribute('data-collapsed'),
        expandButtonWidth: expand ? expand.getBoundingClientRect().width : 0,
    };
}"""

SLIDERS_JS = """(label) => [...document.querySelectorAll('[data-testid="stSlider"]')]
    .filter(s => s.querySelector('input[type=range]')?.getAttribute('aria-label') === label)
    .map(s => ({
        value: s.querySelector('input[type=range]').value,
        shown: s.querySelector('[data-testid="stSliderThumbValue"]').innerText.trim(),
    }))"""

# The "step …" readout of every animated chart on the page.
ANIMATION_LABELS_JS = """() => [...document.querySelectorAll('.stPlotlyChart')]
    .filter(c => c.querySelector('g.updatemenu-button'))
    .map(c => c.querySelector('g.slider-group > text.slider-label')?.textContent)"""

# --- helpers ---------------------------------------------------------------------------------------------------------


def open_url(page, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=LOAD_TIMEOUT_MS)  # the page's script has started
    wait_until_rendered(page)


def heading(entry) -> str:
    """The heading a tour stop's page opens with: its stage's title (marked "after the article" for a stage after
    it), or the page's own (the ledger, the labs)."""
    return stages.stage(entry.stage).listed_title if entry.stage else entry.title


def title(page) -> str:
    return page.locator('[data-testid="stMain"] h1').first.inner_text().strip()


def slider(page, label: str) -> str:
    """The value of the one slider with this label, as the page shows it on the thumb (checked against the input)."""
    found = page.evaluate(SLIDERS_JS, label)
    assert len(found) == 1, f"expected one slider labelled {label!r}, found {found}"
    assert float(found[0]["shown"]) == float(found[0]["value"]), f"{label!r}: the thumb shows {found[0]}"
    return found[0]["shown"]


# Records that the script has been running since it was installed (the app's run state attribute changing).
WATCH_RUNS_JS = """() => {
    window.__reran = false;
    const app = document.querySelector('[data-testid="stApp"]');
    new MutationObserver(() => {
        if (app.getAttribute('data-test-script-state') === 'running') window.__reran = true;
    }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""
RERAN_JS = """() => window.__reran
    && document.querySelector('[data-testid="stApp"]').getAttribute('data-test-script-state') === 'notRunning'"""


@contextmanager
def one_rerun(page, what: str):
    """The block's action makes the app run its script again: wait for that run to start and end, and to draw."""
    page.evaluate(WATCH_RUNS_JS)
    yield
    try:
        page.wait_for_function(RERAN_JS, timeout=CHANGE_TIMEOUT_MS)
    except PlaywrightTimeoutError:
        pytest.fail(f"{what}: the app did not run again")
    page.wait_for_function(RENDERED_JS, timeout=LOAD_TIMEOUT_MS)


def animation_labels(page) -> list[str]:
    return page.evaluate(ANIMATION_LABELS_JS)


def query(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


def wait_for_param(page, key: str, value: str | None) -> None:
    """The URL's query string has ``key=value`` (``None``: no ``key`` at all)."""
    page.wait_for_function(
        "([key, value]) => new URLSearchParams(location.search).get(key) === value",
        arg=[key, value],
        timeout=CHANGE_TIMEOUT_MS,
    )


def path(page) -> str:
    return urlparse(page.url).path.strip("/") or "home"


def blur(page) -> None:
    """Keyboard focus back on the page itself, so a key press reaches the shortcuts and not an input."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.locator('[data-testid="stMain"] h1').first.click()  # plain text: not a control, takes no key presses


# --- presenter mode --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url_path", ["", "kda"], ids=["home", "kda"])
def test_presenter_mode_enlarges_text_and_collapses_the_sidebar(watched, server, url_path):
    """``?present=1``: prose ≥ 24 px, titles ≥ 32 px, chart ticks ≥ 18 px, sidebar collapsed but reachable; the
    sidebar toggle then turns it off in the same session, and everything is smaller again."""
    page = watched.page
    open_url(page, f"{server.url}/{url_path}?present=1")
    big = page.evaluate(MEASURE_JS)
    assert big["prose"] and big["h1"] and big["ticks"], f"nothing measured: {big}"
    assert min(big["prose"]) >= PRESENTER_PX["body"] >= 24, f"prose sizes {sorted(set(big['prose']))}"
    assert min(big["tables"], default=PRESENTER_PX["table"]) >= PRESENTER_PX["table"] >= 20, sorted(set(big["tables"]))
    assert big["tables"] or url_path, "the home page's lineage table was not measured"
    assert min(big["h1"]) >= 32, f"title drawn at {sorted(set(big['h1']))} px"
    assert min(big["ticks"]) >= 18, f"tick labels {sorted(set(big['ticks']))} px"
    assert big["sidebarCollapsed"] == "true" and big["sidebarWidth"] == 0, big
    # collapsed, not gone: the teacher can still open it to navigate or to leave presenter mode
    assert big["expandButtonWidth"] > 0, "presenter mode hides the button that opens the sidebar"

    page.locator('[data-testid="stExpandSidebarButton"]').click()
    with one_rerun(page, "the presenter toggle"):
        page.locator('[data-testid="stSidebar"]').get_by_text("Presenter mode").click()
    wait_for_param(page, "present", None)  # the toggle keeps the URL in step: a link copied now opens the normal view
    small = page.evaluate(MEASURE_JS)
    assert max(small["prose"]) < min(big["prose"]), (sorted(set(small["prose"])), sorted(set(big["prose"])))
    assert max(small["ticks"]) < min(big["ticks"]), (sorted(set(small["ticks"])), sorted(set(big["ticks"])))
    assert min(big["h1"]) >= max(small["h1"]), f"presenter title {big['h1']} px, normal {small['h1']} px"
    assert_clean(watched, f"/{url_path}")


# --- the tour --------------------------------------------------------------------------------------------------------


def next_button(page):
    return page.get_by_role("button", name=re.compile(r"^Next: "))


def prev_button(page):
    return page.get_by_role("button", name=re.compile(r"^← Previous: "))


def wait_for_page_change(page, old_path: str, old_title: str) -> None:
    """Both the URL's path and the title have moved on from the old page, and the new page's run has finished."""
    try:
        page.wait_for_function(
            "([p, t]) => (location.pathname.replace(/^\\/+|\\/+$/g, '') || 'home') !== p"
            " && document.querySelector('[data-testid=\"stMain\"] h1')?.innerText.trim() !== t",
            arg=[old_path, old_title],
            timeout=LOAD_TIMEOUT_MS,
        )
    except PlaywrightTimeoutError:
        shown = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]').all_inner_texts()
        pytest.fail(f"still on {page.url} ({title(page)!r}) after asking to leave it; errors shown: {shown}")
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=LOAD_TIMEOUT_MS)


def test_tour_walks_every_stage_in_order(watched, server):
    """From the first stage, "Next" (clicked, or Shift+N) visits every lineage stage in ``ui.nav.PAGES`` order, then
    the first lab, which offers the next stop in turn; "Previous" (Shift+P, or clicked) goes back one stage at a time.
    The shared seed, set by the link, stays in the URL all the way (and with it a widget-bound parameter, which
    st.switch_page must not clear)."""
    page = watched.page
    open_url(page, f"{server.url}/{TOUR[0].url_path}?seed=5")
    visited = [(path(page), title(page))]
    seeds = [query(page).get("seed")]
    labels = []
    for i in range(len(TOUR) - 1):
        button = next_button(page)
        assert button.count(), f"no Next on {visited[-1]}"
        labels.append(button.inner_text().splitlines()[0].strip())
        old = visited[-1]
        if i % 2:
            blur(page)
            page.keyboard.press("Shift+N")
        else:
            button.click()
        wait_for_page_change(page, *old)
        visited.append((path(page), title(page)))
        seeds.append(query(page).get("seed"))

    assert [p for p, _ in visited] == [e.url_path for e in TOUR]
    assert [t for _, t in visited] == [heading(e) for e in TOUR]
    assert labels == [f"Next: {e.title} →" for e in TOUR[1:]]
    assert next_button(page).inner_text().startswith(f"Next: {_STOPS[len(TOUR)].title}"), "the tour ends at the lab"
    assert seeds == ["5"] * len(visited), f"the seed in the URL, page by page: {seeds}"

    # back from the ledger (the lab where the tour ends has its own page, without tour buttons)
    open_url(page, f"{server.url}/{TOUR[-2].url_path}?seed=5")
    wait_until_rendered(page)
    blur(page)
    page.keyboard.press("Shift+P")
    wait_for_page_change(page, TOUR[-2].url_path, TOUR[-2].title)
    assert path(page) == TOUR[-3].url_path
    prev_button(page).click()
    wait_for_page_change(page, TOUR[-3].url_path, heading(TOUR[-3]))
    assert path(page) == TOUR[-4].url_path
    wait_until_rendered(page)
    assert page.locator('[data-testid="stSidebar"] input[type=number]').input_value() == "5"
    assert_clean(watched, "the tour")


def test_the_tour_keeps_presenter_mode(watched, server):
    """A teacher touring in presenter mode stays in it, and the URL of every stage still says so."""
    page = watched.page
    open_url(page, f"{server.url}/{TOUR[-2].url_path}?present=1&seed=3")
    old_title = title(page)
    blur(page)
    page.keyboard.press("Shift+N")
    wait_for_page_change(page, TOUR[-2].url_path, old_title)
    wait_until_rendered(page)
    assert path(page) == TOUR[-1].url_path
    assert (query(page).get("present"), query(page).get("seed")) == ("1", "3"), page.url
    sizes = page.evaluate(MEASURE_JS)
    assert min(sizes["prose"]) >= PRESENTER_PX["body"] and min(sizes["h1"]) >= 32, sizes
    assert min(sizes["tables"], default=PRESENTER_PX["table"]) >= PRESENTER_PX["table"], sizes["tables"]
    assert min(sizes["ticks"]) >= 18, sizes["ticks"]
    assert sizes["sidebarWidth"] == 0, "the sidebar opened on the next stage"
    assert_clean(watched, "the tour in presenter mode")


# --- deep links ------------------------------------------------------------------------------------------------------


def test_deep_link_restores_the_view_and_controls_update_the_url(watched, server):
    page = watched.page
    open_url(page, f"{server.url}/kda?kda_T=20&kda_keep=0.8&seed=7&kda_step=3")
    assert path(page) == "kda"
    assert title(page) == stages.stage("kda").title
    assert slider(page, "Sequence length T") == "20"
    assert slider(page, "Gate α on every token") == "0.80"
    assert page.locator('[data-testid="stSidebar"] input[type=number]').input_value() == "7"
    assert set(animation_labels(page)) == {"step 3"}, "the animations do not start at the linked step"
    assert page.locator(".js-plotly-plot text", has_text="Step 3:").count(), "the step's sentence is not for step 3"

    # one step of the T slider from the keyboard: the URL follows, the rest of the link stays
    with one_rerun(page, "T slider, ArrowRight"):
        page.locator('input[type=range][aria-label="Sequence length T"]').focus()
        page.keyboard.press("ArrowRight")
    assert slider(page, "Sequence length T") == "21"
    wait_for_param(page, "kda_T", "21")
    q = query(page)
    assert (q.get("kda_T"), q.get("seed"), q.get("kda_step"), q.get("kda_keep")) == ("21", "7", "3", "0.8"), q
    assert set(animation_labels(page)) == {"step 3"}, "the step was lost"

    # the shared seed, typed into the sidebar
    seed_input = page.locator('[data-testid="stSidebar"] input[type=number]')
    with one_rerun(page, "a new seed"):
        seed_input.fill("11")
        seed_input.press("Enter")
    wait_for_param(page, "seed", "11")
    assert_clean(watched, "/kda deep link")


# --- keyboard steps --------------------------------------------------------------------------------------------------


def test_keys_j_and_k_step_the_page(watched, server):
    """J and K step every animation on the page in the browser (no rerun: ui.player), and the URL follows."""
    page = watched.page
    key = f"{STEP_PAGE}_step"
    open_url(page, f"{server.url}/{STEP_PAGE}?{STEP_PAGE}_T={STEP_T}")
    last = STEP_T - 1
    assert set(animation_labels(page)) == {f"step {last}"}, "a page opens on its last step"

    for press, step in (("J", last - 1), ("J", last - 2), ("K", last - 1)):
        blur(page)
        page.keyboard.press(press)
        page.wait_for_function(
            f"() => ({ANIMATION_LABELS_JS})().every(label => label === 'step {step}')", timeout=CHANGE_TIMEOUT_MS
        )
        wait_for_param(page, key, str(step))  # and the URL
    assert_clean(watched, f"/{STEP_PAGE} keys")


# --- the offline export ----------------------------------------------------------------------------------------------


def test_exported_animation_plays_offline(watched, server, browser, tmp_path):
    """The "Download this animation" file opens from disk in a browser that can reach nothing else, and plays."""
    page = watched.page
    open_url(page, f"{server.url}/{STEP_PAGE}?{STEP_PAGE}_T={STEP_T}")
    with page.expect_download(timeout=CHANGE_TIMEOUT_MS) as download:
        page.get_by_role("button", name="Download this animation (offline HTML)").first.click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.suffix == ".html"
    assert_clean(watched, f"/{STEP_PAGE} export")

    context = browser.new_context(viewport={"width": 1200, "height": 800})
    aborted: list[str] = []
    errors: list[str] = []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            aborted.append(r.request.url)
            r.abort()

    try:
        context.route("**/*", route)
        offline = context.new_page()
        offline.on("pageerror", lambda exc: errors.append(str(exc)))
        offline.goto(saved.as_uri())  # returns once the page has loaded: every script it asked for was asked
        assert not aborted, f"the exported file asked the network for {aborted}"
        offline.wait_for_selector(".js-plotly-plot .main-svg", timeout=LOAD_TIMEOUT_MS)
        assert "Attention Lineage" in offline.title()
        readout = offline.locator("g.slider-group > text.slider-label").first
        before = readout.text_content()
        assert before and before.startswith("step "), before
        # plotly.js says when it draws a frame: wait for that, as long as a loaded machine needs, not a fixed time
        offline.evaluate(
            "() => { window.__frames = 0;"
            " document.querySelector('.js-plotly-plot').on('plotly_animatingframe', () => window.__frames++); }"
        )
        offline.locator("g.updatemenu-button", has_text="Play").click()
        offline.wait_for_function("() => window.__frames > 0", timeout=LOAD_TIMEOUT_MS)
        offline.wait_for_function(
            "([el, before]) => el.textContent !== before",
            arg=[readout.element_handle(), before],
            timeout=LOAD_TIMEOUT_MS,
        )
        assert not aborted, f"the exported file asked the network for {aborted}"
        assert not errors, f"the exported file raised {errors}"
    finally:
        context.close()
