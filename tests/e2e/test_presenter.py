"""Presenter mode as a projector shows it: every page at 1920×1080 with ``?present=1``, measured in Chromium.

On every page: every text Plotly draws (axis ticks and titles, legends, colour-bar ticks, annotations, heatmap cell
numbers where shown, the animation's buttons and slider) is at least 18 px; every table cell's text too; every
``st.metric`` value at least 48 px; no element is wider than the viewport, at 1920×1080 and at 1280×720 (an element
inside a box that scrolls or clips on its own, like a code block, does not count: the page itself does not scroll
sideways), and no line of a shown code block is cut at the block's edge.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from lineage.measure.bench_decode import budget_label
from tests.e2e.checks import LOAD_TIMEOUT_MS, assert_clean, wait_until_rendered
from ui.nav import PAGES
from ui.presenter import PRESENTER_PX

pytestmark = pytest.mark.browser

SCREENS = ((1920, 1080), (1280, 720))
MIN_CHART_TEXT_PX = PRESENTER_PX["tick"]

# Every visible text element of every Plotly chart, with its drawn size (the SVG text's computed font size).
CHART_TEXT_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot svg text')]
    .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0
        && getComputedStyle(t).visibility !== 'hidden' && getComputedStyle(t).display !== 'none')
    .map(t => ({
        px: parseFloat(getComputedStyle(t).fontSize),
        text: t.textContent.trim().slice(0, 40),
        where: (t.closest('g[class]')?.getAttribute('class') || '').split(' ')[0],
    }))"""

# The drawn size of every st.metric value (its text sits in nested elements: the innermost one's size is drawn).
METRIC_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMetricValue"]')].map(m => {
    const walker = document.createTreeWalker(m, NodeFilter.SHOW_TEXT);
    const sizes = [], tops = new Set();
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (!n.textContent.trim()) continue;
        sizes.push(parseFloat(getComputedStyle(n.parentElement).fontSize));
        const range = document.createRange();
        range.selectNodeContents(n);
        for (const r of range.getClientRects()) if (r.width > 0) tops.add(Math.round(r.top));
    }
    return {value: m.innerText.trim(), px: Math.min(...sizes), lines: tops.size};
})"""

# The drawn size of every table cell's text (HTML tables: presenter mode writes its tables that way, so that they grow).
TABLE_TEXT_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] td, [data-testid="stMain"] th')]
    .filter(c => c.innerText.trim() && c.getBoundingClientRect().width > 0)
    .map(c => ({px: parseFloat(getComputedStyle(c).fontSize), text: c.innerText.trim().slice(0, 30)}))"""

# Elements reaching past the right edge of the window, unless a box around them clips or scrolls them within it.
TOO_WIDE_JS = """() => {
    const clipped = (el) => {
        for (let a = el.parentElement; a; a = a.parentElement) {
            if (getComputedStyle(a).overflowX !== 'visible' && a.getBoundingClientRect().right <= innerWidth + 1)
                return true;
        }
        return false;
    };
    const out = [];
    for (const el of document.querySelectorAll('[data-testid="stMain"] *')) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.right <= 0) continue;  // not drawn, or parked off-screen on purpose
        if ((r.right > innerWidth + 1 || r.width > innerWidth + 1) && !clipped(el))
            out.push(`${el.tagName.toLowerCase()}.${String(el.className.baseVal ?? el.className).slice(0, 40)} `
                + `in ${el.closest('[data-testid]')?.getAttribute('data-testid')}: right edge ${Math.round(r.right)}`);
    }
    return {out: out.slice(0, 10), scroll: document.scrollingElement.scrollWidth};
}"""


# Each chart's title against its chart's box: Plotly cuts a title off at the figure's edge rather than wrap it, and
# draws one of several lines anchored at its top partly above the figure (lineage.plots.present wraps and places them).
TITLES_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].map(plot => {
    const title = plot.querySelector('.gtitle');
    if (!title || !title.textContent.trim()) return null;
    const a = plot.getBoundingClientRect(), b = title.getBoundingClientRect();
    return {text: title.textContent.trim().slice(0, 60), left: b.left - a.left, right: a.right - b.right,
            top: b.top - a.top};
}).filter(t => t)"""


# Tables wider than the column they sit in: the page does not scroll, but the table's own box does, and a slide shows
# a cut table.
WIDE_TABLES_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] table')]
    .filter(t => t.getBoundingClientRect().width > 0)
    .map(t => ({width: Math.round(t.scrollWidth), box: Math.round(t.closest('[data-testid="stMarkdownContainer"]')
        ?.getBoundingClientRect().width ?? t.parentElement.getBoundingClientRect().width),
        first: (t.querySelector('th')?.innerText || '').slice(0, 30)}))
    .filter(t => t.width > t.box + 1)"""


# Text cut off with an ellipsis: an element that ends its text in "…" and holds more than it shows.
CUT_TEXT_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] *')]
    .filter(e => getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1
        && e.innerText.trim() && e.getBoundingClientRect().width > 0)
    .map(e => `${e.tagName.toLowerCase()}: ${e.innerText.trim().slice(0, 40)} (${e.scrollWidth} > ${e.clientWidth})`)"""


# A control's shown value cut by its box: a select or a field shows its value in an <input>, which clips what does not
# fit without an ellipsis ("… 7 repeats (a second or two on a laptop CPl"), so CUT_TEXT_JS does not see it.
CUT_INPUTS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] input')]
    .filter(i => i.value && i.getBoundingClientRect().width > 0 && i.scrollWidth > i.clientWidth + 1)
    .map(i => `${(i.getAttribute('aria-label') || i.type).slice(0, 30)}: ${i.value.slice(0, 50)} `
        + `(${i.scrollWidth} > ${i.clientWidth})`)"""


# A code block's line cut at the block's edge: a code block scrolls sideways on its own, and a projector shows its lines
# cut (the equation panel's code beside the change it makes, at 1920 px as at 1280). A closed expander keeps its code
# laid out but not shown: checkVisibility() leaves it out.
CUT_CODE_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stCode"] pre')]
    .filter(p => p.checkVisibility() && p.scrollWidth > p.clientWidth + 1)
    .map(p => `${p.innerText.trim().slice(0, 40)} (${p.scrollWidth} > ${p.clientWidth})`)"""


# A link in a table cell broken inside a word: more lines than words ("Hom" over "e", a column squeezed to a letter).
BROKEN_LINKS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] td a')]
    .map(a => ({text: a.innerText.trim(), lines: new Set([...a.getClientRects()].map(r => Math.round(r.top))).size}))
    .filter(a => a.text && a.lines > a.text.split(/\\s+/).length)
    .map(a => `${a.text.slice(0, 40)} (${a.lines} lines)`)"""


# Chart texts that reach past their chart's edge (an axis title cut by the margin, a label past the side).
OUTSIDE_JS = """() => {
    const out = [];
    for (const plot of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')) {
        const box = plot.getBoundingClientRect();
        for (const t of plot.querySelectorAll('svg text')) {
            const r = t.getBoundingClientRect();
            if (!t.textContent.trim() || r.width === 0 || getComputedStyle(t).visibility === 'hidden') continue;
            const past = Math.max(box.left - r.left, r.right - box.right, box.top - r.top, r.bottom - box.bottom);
            if (past > 4) out.push(`${t.textContent.trim().slice(0, 40)} (${Math.round(past)} px past)`);
        }
    }
    return out;
}"""


def open_presenting(page, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=LOAD_TIMEOUT_MS)
    wait_until_rendered(page)


def too_wide(page, width: int) -> list[str]:
    found = page.evaluate(TOO_WIDE_JS)
    assert found["scroll"] <= width, f"the page scrolls sideways: {found['scroll']} px wide in a {width} px window"
    return found["out"]


def check_screen(page, what: str, width: int, height: int) -> None:
    """The three checks on what the page shows now, in a window of this size."""
    wide = too_wide(page, width)
    assert not wide, f"{what} at {width}×{height}: wider than the window: {wide}"
    texts = page.evaluate(CHART_TEXT_JS)
    small = [t for t in texts if t["px"] < MIN_CHART_TEXT_PX]
    assert not small, f"{what} at {width}×{height}: chart text under {MIN_CHART_TEXT_PX} px: {small[:8]}"
    if page.locator('[data-testid="stMain"] .js-plotly-plot').count():
        assert texts, f"{what}: charts drawn, but no chart text measured"
    cells = page.evaluate(TABLE_TEXT_JS)
    small_cells = [c for c in cells if c["px"] < MIN_CHART_TEXT_PX]
    assert not small_cells, f"{what} at {width}×{height}: table text under {MIN_CHART_TEXT_PX} px: {small_cells[:5]}"
    # a glyph box reaches ~2 px above the letters: a title hung 8 px from the top is drawn in full
    cut = [t for t in page.evaluate(TITLES_JS) if min(t["left"], t["right"], t["top"]) < -4]
    assert not cut, f"{what} at {width}×{height}: chart titles reaching past their chart's edge: {cut[:5]}"
    outside = page.evaluate(OUTSIDE_JS)
    assert not outside, f"{what} at {width}×{height}: chart text past its chart's edge: {outside[:6]}"
    cut_text = page.evaluate(CUT_TEXT_JS)
    assert not cut_text, f"{what} at {width}×{height}: text cut off with an ellipsis: {cut_text[:5]}"
    broken_links = page.evaluate(BROKEN_LINKS_JS)
    assert not broken_links, f"{what} at {width}×{height}: a table's link broken inside a word: {broken_links[:5]}"
    cut_values = page.evaluate(CUT_INPUTS_JS)
    assert not cut_values, f"{what} at {width}×{height}: a control's value cut by its box: {cut_values[:5]}"
    cut_code = page.evaluate(CUT_CODE_JS)
    assert not cut_code, f"{what} at {width}×{height}: code lines cut at the block's edge: {cut_code[:3]}"
    wide_tables = page.evaluate(WIDE_TABLES_JS)
    assert not wide_tables, f"{what} at {width}×{height}: tables wider than their column: {wide_tables}"
    metrics = page.evaluate(METRIC_JS)
    small_numbers = [m for m in metrics if not m["px"] >= PRESENTER_PX["metric"]]
    assert not small_numbers, f"{what}: key numbers under {PRESENTER_PX['metric']} px: {small_numbers}"
    # a key number may wrap between its words ("99% → 9%"), never inside one: "2,780,000,00" over "0,000" misreads
    broken = [m["value"] for m in metrics if m["lines"] > 1 and not any(c.isspace() for c in m["value"])]
    assert not broken, f"{what} at {width}×{height}: key numbers broken inside a word: {broken}"


def check_both_screens(page, what: str) -> None:
    for i, (width, height) in enumerate(SCREENS):
        if i:
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_timeout(1000)  # charts follow the new width (no rerun)
        check_screen(page, what, width, height)


@pytest.mark.parametrize("entry", PAGES, ids=[e.url_path for e in PAGES])
def test_every_page_reads_from_the_back_of_the_room(watched, server, entry):
    page = watched.page
    page.set_viewport_size({"width": SCREENS[0][0], "height": SCREENS[0][1]})
    path = "" if entry.url_path == "home" else entry.url_path  # the default page's own address is the root
    open_presenting(page, f"{server.url}/{path}?present=1")
    check_both_screens(page, entry.url_path)
    assert_clean(watched, f"/{entry.url_path}?present=1")


def test_the_live_benchmark_results_read_from_the_back_too(watched, server):
    """The Live benchmark draws its charts and numbers only after a run: run the smallest budget, then check them."""
    page = watched.page
    page.set_viewport_size({"width": SCREENS[0][0], "height": SCREENS[0][1]})
    # the URL names a bound select's option by its shown label ("tiny" alone would be dropped: a standard run)
    budget = urlencode({"live_benchmark_budget": budget_label("tiny")})
    open_presenting(page, f"{server.url}/live_benchmark?present=1&{budget}")
    assert page.locator('[data-testid="stSelectbox"] input').first.input_value() == budget_label("tiny")
    page.get_by_role("button", name="Run benchmark").click()
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stMain\"] .js-plotly-plot svg.main-svg').length >= 2",
        timeout=LOAD_TIMEOUT_MS,
    )
    wait_until_rendered(page)
    assert page.locator('[data-testid="stMetricValue"]').count() >= 4
    check_both_screens(page, "live_benchmark after a run")
    assert_clean(watched, "/live_benchmark?present=1, run")


def test_the_checks_see_what_normal_mode_draws(watched, server):
    """Without presenter mode the same measurements find ticks under 18 px and key numbers under 48 px: the checks
    above measure real sizes, not their own assumptions."""
    page = watched.page
    page.set_viewport_size({"width": 1920, "height": 1080})
    open_presenting(page, f"{server.url}/gpt2")
    assert min(t["px"] for t in page.evaluate(CHART_TEXT_JS)) < MIN_CHART_TEXT_PX
    assert max(m["px"] for m in page.evaluate(METRIC_JS)) < PRESENTER_PX["metric"]
    assert_clean(watched, "/gpt2")
    open_presenting(page, f"{server.url}/")  # the home page's lineage table, at body size
    assert min(c["px"] for c in page.evaluate(TABLE_TEXT_JS)) < MIN_CHART_TEXT_PX


def test_plotly_still_raises_a_title_of_several_lines_that_hangs_from_the_top(browser):
    """The workaround of lineage.plots.present (MULTILINE_TITLE_RISE_EM) is still needed: plotly.js draws a two-line
    title anchored at its top partly above the figure, and the pad the projection gives it brings it inside."""
    import plotly.graph_objects as go
    import plotly.io as pio

    from lineage.plots.present import PROJECTION, hung_title

    def title_top(place: dict) -> float:
        title = {"text": "One line<br>and another", "font": {"size": PROJECTION.title}, **place}
        fig = go.Figure(go.Scatter(y=[1, 2]), layout={"title": title, "margin": {"t": 150}, "height": 400})
        page = browser.new_page()
        try:
            page.set_content(pio.to_html(fig, include_plotlyjs=True, full_html=True, div_id="fig"))
            page.wait_for_selector("#fig .gtitle")
            return page.evaluate(
                "() => document.querySelector('#fig .gtitle').getBoundingClientRect().top"
                " - document.getElementById('fig').getBoundingClientRect().top"
            )
        finally:
            page.close()

    plain = {**hung_title({}, 2, PROJECTION.title), "pad": {"t": 8}}
    assert title_top(plain) < -4, "plotly.js no longer raises such a title: drop MULTILINE_TITLE_RISE_EM"
    assert title_top(hung_title({}, 2, PROJECTION.title)) >= 0
