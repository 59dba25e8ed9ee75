"""The static site in a real Chromium, served by ``python -m http.server`` on loopback and opened from ``file://``:
every page draws every chart, Play advances with no blank heatmap, J / K step and the step lives in the URL hash, Next
walks the whole tour and back home, the presenter view's sizes at 1920×1080 and its tables and code whole at 1920 and
1280 px, no horizontal scroll at 375 px, no console error and no request off the serving host. And the first chart of
a page, site against app, in one run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from lineage.site import build
from ui.browser import LOAD_TIMEOUT_MS, free_port
from ui.presenter import PRESENTER_PX

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1920, "height": 1080}
PHONE = {"width": 375, "height": 800}
LAPTOP = {"width": 1400, "height": 900}
STEPS_PLAYED = 4
PAGES = build.tour()

FIRST = "document.querySelector('div.chart')"
STEP_JS = f"() => {FIRST}.layout.sliders[0].active"
CHARTS_DRAWN_JS = """() => [...document.querySelectorAll('div.chart')].map(d => !!d.querySelector('svg.main-svg')
    && d.querySelectorAll('g.trace, g.hm, g.scatterlayer path').length > 0)"""
CHART_TEXTS_JS = f"""() => [...{FIRST}.querySelectorAll('svg text')]
    .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0
        && getComputedStyle(t).fill !== 'rgba(0, 0, 0, 0)')
    .map(t => ({{px: parseFloat(getComputedStyle(t).fontSize), text: t.textContent.trim().slice(0, 40)}}))"""
HEAT_SAMPLER_JS = f"""() => {{
    const gd = {FIRST};
    const want = gd.querySelectorAll('g.hm image').length;
    const s = window.__heat = {{want, painted: 0, blank: 0, stop: false}};
    const tick = () => {{
        s.painted++;
        if (gd.querySelectorAll('g.hm image').length < want) s.blank++;
        if (!s.stop) requestAnimationFrame(tick);
    }};
    requestAnimationFrame(tick);
    return want;
}}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return build.build(tmp_path_factory.mktemp("site") / "site").out


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="module")
def served(site):
    """``python -m http.server`` on a free loopback port, serving the site under a sub-path (/lecture/)."""
    root = site.parent
    (root / "lecture").symlink_to(site, target_is_directory=True)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/lecture/"
    deadline = time.monotonic() + 30
    while not answers(base + "index.html"):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail("python -m http.server did not answer")
        time.sleep(0.1)
    yield base
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(params=["http", "file"])
def base(request, served, site) -> str:
    return served if request.param == "http" else site.as_uri() + "/"


@contextmanager
def visiting(browser, base: str, viewport=LAPTOP):
    """A fresh context that may reach only ``base`` (and data: URLs); everything else is aborted and recorded, as are
    console errors and uncaught exceptions."""
    context = browser.new_context(viewport=viewport)
    seen = {"off_host": [], "errors": [], "failed": []}

    def route(r):
        url = r.request.url
        if url.startswith((base, "data:", "blob:")):
            r.continue_()
        else:
            seen["off_host"].append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: seen["errors"].append(str(exc)))
    page.on("requestfailed", lambda req: seen["failed"].append(req.url) if req.url.startswith(base) else None)
    try:
        yield page, seen
    finally:
        context.close()


def assert_clean(seen, what: str) -> None:
    assert not seen["off_host"], f"{what}: requests off the serving host: {seen['off_host']}"
    assert not seen["failed"], f"{what}: failed requests: {seen['failed']}"
    assert not seen["errors"], f"{what}: console errors: {seen['errors']}"


def open_page(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=LOAD_TIMEOUT_MS)


def wait_for_step(page, lo: int, *, exact: bool = True) -> None:
    page.wait_for_function(
        f"([lo, exact]) => {{ const a = {FIRST}.layout.sliders[0].active; return exact ? a === lo : a >= lo; }}",
        arg=[lo, exact],
        timeout=LOAD_TIMEOUT_MS,
    )


def hash_step(page) -> str | None:
    return page.evaluate("() => new URLSearchParams(location.hash.slice(1)).get('step')")


def assert_charts_drawn(page, what: str) -> None:
    drawn = page.evaluate(CHARTS_DRAWN_JS)
    assert all(drawn), f"{what}: charts not drawn: {drawn}"
    assert len(drawn) == page.locator("script[id$='-reading']").count(), f"{what}: a chart has no element"


def test_next_walks_the_tour_drawing_every_chart_and_back_home(browser, base):
    """Shift+N from home through every page of the tour and back home; each page draws every chart it carries."""
    with visiting(browser, base) as (page, seen):
        open_page(page, base + "index.html")
        assert_charts_drawn(page, "index.html")
        walked = []
        for _ in PAGES:
            with page.expect_navigation():
                page.keyboard.press("Shift+N")
            page.wait_for_selector("body[data-ready='1']", timeout=LOAD_TIMEOUT_MS)
            walked.append(page.url.rsplit("/", 1)[-1].split("#")[0])
            assert_charts_drawn(page, walked[-1])
        assert walked == [p.file for p in PAGES[1:]] + ["index.html"]
        assert not page.locator("link[rel=prev]").count(), "home, the tour's start, has no previous page"
        assert_clean(seen, f"the tour from {base}")


def test_shift_p_goes_back(browser, base):
    with visiting(browser, base) as (page, seen):
        open_page(page, base + "kda.html")
        with page.expect_navigation():
            page.keyboard.press("Shift+P")
        assert page.url.endswith("gated_deltanet.html")
        assert_clean(seen, "Shift+P")


def test_j_k_step_and_the_step_is_in_the_hash(browser, base):
    with visiting(browser, base) as (page, seen):
        open_page(page, base + "kda.html#step=5")
        wait_for_step(page, 5)
        page.keyboard.press("k")
        wait_for_step(page, 6)
        assert hash_step(page) == "6"
        page.keyboard.press("j")
        page.keyboard.press("j")
        wait_for_step(page, 4)
        assert hash_step(page) == "4"
        link = page.url
        page.goto("about:blank")
        open_page(page, link)  # a link copied now opens at that step
        wait_for_step(page, 4)
        assert_clean(seen, "J / K")


@pytest.mark.parametrize("slug", ["kda", "gpt2"])
def test_play_advances_with_no_blank_heatmap(browser, served, slug):
    with visiting(browser, served) as (page, seen):
        open_page(page, served + f"{slug}.html#step=0")
        wait_for_step(page, 0)
        want = page.evaluate(HEAT_SAMPLER_JS)
        assert want >= 1, "the story chart has no heatmap"
        page.locator("div.chart").first.locator("g.updatemenu-button").filter(has_text="Play").click()
        wait_for_step(page, STEPS_PLAYED, exact=False)
        heat = page.evaluate("() => { window.__heat.stop = true; return window.__heat; }")
        assert heat["painted"] > STEPS_PLAYED and heat["blank"] == 0, f"{slug}: blank heatmap while playing: {heat}"
        assert int(hash_step(page)) >= STEPS_PLAYED, "Play's step is not in the URL hash"
        assert_clean(seen, f"{slug} Play")


def test_presenter_view_at_projector_size(browser, served):
    with visiting(browser, served, PROJECTOR) as (page, seen):
        open_page(page, served + "kda.html#view=present")
        texts = page.evaluate(CHART_TEXTS_JS)
        assert texts
        small = [t for t in texts if t["px"] < PRESENTER_PX["tick"]]
        assert not small, f"chart texts under {PRESENTER_PX['tick']} px: {small[:6]}"
        number = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('.metric-value')).fontSize)")
        assert number >= PRESENTER_PX["metric"]
        assert page.evaluate("() => [...document.querySelectorAll('details.prose')].every(d => !d.open)")
        with page.expect_navigation():
            page.keyboard.press("Shift+N")  # the next page opens in the same view
        page.wait_for_selector("body[data-ready='1']")
        assert page.url.endswith("hybrid.html#view=present")
        assert page.evaluate("() => document.documentElement.classList.contains('present')")
        page.locator("button.view").click()  # the reading view: prose open
        page.wait_for_function("() => !document.documentElement.classList.contains('present')")
        assert page.evaluate("() => [...document.querySelectorAll('details.prose')].every(d => d.open)")
        texts = page.evaluate(CHART_TEXTS_JS)
        assert min(t["px"] for t in texts) < PRESENTER_PX["tick"], "the reading view still draws the projected figure"
        assert_clean(seen, "presenter view")


SMALL_PROJECTOR = {"width": 1280, "height": 800}
# a table or a code block in the presenter view that scrolls sideways inside its box: the room sees it cut at the edge
BOXES_CUT_JS = """() => [...document.querySelectorAll('.table-box, pre.code')]
    .filter(box => box.scrollWidth > box.clientWidth + 1)
    .map(box => ({box: box.className, shown: box.clientWidth, wide: box.scrollWidth,
        start: box.textContent.trim().slice(0, 50)}))"""


@pytest.mark.parametrize("screen", [PROJECTOR, SMALL_PROJECTOR], ids=["1920x1080", "1280x800"])
def test_presenter_view_shows_every_table_and_code_line_whole(browser, site, screen):
    """In the presenter view no table and no code block is wider than its box, on every page: cells break long
    identifiers, and code lines wrap. (At 1280 px the ledger's config keys pushed its table 39 px past the box, the
    Memory lab's comparison hid its last two columns, and four stages' code lines were cut.)"""
    with visiting(browser, site.as_uri() + "/", screen) as (page, seen):
        for p in PAGES:
            open_page(page, site.as_uri() + "/" + p.file + "#view=present")
            assert page.evaluate("() => document.documentElement.classList.contains('present')")
            assert not page.evaluate(BOXES_CUT_JS), f"{p.file}: cut at {screen['width']} px"
        assert_clean(seen, f"presenter view at {screen['width']} px")


PHONE_JS = """() => [...document.querySelectorAll('figure.chart-box')].map(box => ({
    box: box.clientWidth, scrolls: box.scrollWidth > box.clientWidth,
    chart: box.querySelector('svg.main-svg').width.baseVal.value,
    smallest: Math.min(...[...box.querySelectorAll('svg text')].filter(t => t.textContent.trim()
        && getComputedStyle(t).fill !== 'rgba(0, 0, 0, 0)').map(t => parseFloat(getComputedStyle(t).fontSize)))}))"""
PHONE_CHART_PX = 600  # a chart keeps at least this width on a phone (its box scrolls), so its labels stay apart
PHONE_TEXT_PX = 10


def test_no_horizontal_scroll_on_a_phone(browser, base):
    """At 375 px the page never scrolls sideways; each chart keeps a readable width inside its own box, which a swipe
    moves, and no text in it is smaller than 10 px."""
    with visiting(browser, base, PHONE) as (page, seen):
        for p in PAGES:
            open_page(page, base + p.file)
            wide = page.evaluate("() => document.documentElement.scrollWidth")
            assert wide <= PHONE["width"], f"{p.file}: {wide} px wide at {PHONE['width']}"
            for chart in page.evaluate(PHONE_JS):
                assert chart["box"] <= PHONE["width"] and chart["chart"] >= PHONE_CHART_PX, f"{p.file}: {chart}"
                assert chart["scrolls"] and chart["smallest"] >= PHONE_TEXT_PX, f"{p.file}: {chart}"
        assert_clean(seen, "375 px")


def test_first_chart_site_against_app(browser, served, server, artifacts):
    """The first chart of the KDA page, drawn from a cold context: the site (a static file) against the app (a live
    Streamlit session), alternated three times in one run; the ratio of the medians is recorded."""
    times = {"site": [], "app": []}
    for _ in range(3):
        for name, url, wait in (
            ("site", served + "kda.html", "div.chart svg.main-svg"),
            ("app", f"{server.url}/kda", '[data-testid="stMain"] .stPlotlyChart svg.main-svg'),
        ):
            context = browser.new_context(viewport=LAPTOP)
            page = context.new_page()
            started = time.perf_counter()
            page.goto(url, wait_until="commit")
            page.wait_for_selector(wait, timeout=LOAD_TIMEOUT_MS)
            times[name].append(time.perf_counter() - started)
            context.close()
    site_s, app_s = sorted(times["site"])[1], sorted(times["app"])[1]
    (artifacts / "site-first-chart.json").write_text(
        json.dumps({"site_s": times["site"], "app_s": times["app"], "ratio": site_s / app_s}, indent=1)
    )
    print(f"first chart, /kda: site {site_s:.2f} s, app {app_s:.2f} s, ratio {site_s / app_s:.2f}")
    assert site_s < app_s, f"the site's first chart ({site_s:.2f} s) is not faster than the app's ({app_s:.2f} s)"
