"""Crafted links in a real Chromium: the app's own warning box shows a hostile value as text — no outside link, no
image, no request that leaves this machine — and a link past Streamlit's limits is said on the page.

(Every key of every page is driven through AppTest in tests/app/test_links.py; this is the rendered page itself.)
"""

from __future__ import annotations

from urllib.parse import urlencode, urlparse

import pytest

from tests.e2e.checks import LOAD_TIMEOUT_MS, wait_until_rendered
from tests.e2e.conftest import watching
from tests.e2e.harness import CHROMIUM_ARGS, CHROMIUM_PATH
from ui import links, serving

pytestmark = pytest.mark.browser

OUTSIDE = "ex.invalid"
BREAKOUTS = {  # the links, and the other ways out of a code span
    "": {"seed": "1`[Log in](http://ex.invalid/a)`", "a`[Log in](http://ex.invalid/k)`b": "1"},
    "kda": {"seed": "1`![x](http://ex.invalid/i.png)`", "kda_step": "1`<http://ex.invalid/c>`"},
    "memory_lab": {"lab_elu1": "``[x](http://ex.invalid/b)``", "_runs_started": "<img src=http://ex.invalid/h.png>"},
    "memory_cost": {"memory_cost_len": "`:red[Log in]` http://ex.invalid/d", "x": "![y](http://ex.invalid/j.png)"},
}


def notices(page) -> list[str]:
    """The link report's warnings, as the visitor reads them."""
    return page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts()


@pytest.mark.parametrize("path", list(BREAKOUTS), ids=[p or "home" for p in BREAKOUTS])
def test_a_crafted_link_renders_as_text_and_loads_nothing_from_outside(watched, server, path):
    page = watched.page
    params = BREAKOUTS[path]
    page.goto(f"{server.url}/{path}?{urlencode(params)}", wait_until="domcontentloaded")
    wait_until_rendered(page)
    said = notices(page)
    assert said, f"/{path}: the link's values were not reported"
    outside = page.locator(f'a[href*="{OUTSIDE}"], img[src*="{OUTSIDE}"], [src*="{OUTSIDE}"], [href*="{OUTSIDE}"]')
    assert outside.count() == 0, f"/{path}: {outside.count()} elements point outside: {said}"
    assert not watched.blocked, f"/{path}: requests left this machine: {watched.blocked}"
    # each is there, as text, in the code spans of the warnings: a control's refused value, an unknown name
    codes = page.locator('[data-testid="stAlertContentWarning"] code').all_inner_texts()
    for key, value in params.items():
        shown = [text[: links.SHOWN_CHARS - 1] for text in (key, value) if text != "seed"]
        assert any(text in code for text in shown for code in codes), (key, value, codes)


def test_a_link_past_streamlit_limits_is_said(watched, server):
    """Streamlit ignores a query string of more than 1,000 parameters with a line in its log; the page says so."""
    page = watched.page
    query = "&".join(f"p{i}=1" for i in range(links.LINK_MAX_FIELDS + 5))
    page.goto(f"{server.url}/memory_cost?{query}", wait_until="domcontentloaded")
    wait_until_rendered(page)  # the run that mounts the check; the check's answer reruns the page
    expected = f"{links.LINK_MAX_FIELDS + 5:,} parameters"
    page.wait_for_function(
        """expected => [...document.querySelectorAll('[data-testid="stAlertContentWarning"]')]
            .some(e => e.innerText.includes(expected))""",
        arg=expected,
        timeout=2 * LOAD_TIMEOUT_MS,
    )
    said = [n for n in notices(page) if expected in n]
    assert said and "page shows its defaults" in said[0], notices(page)


# The pages whose machinery differs: the first-chart component (home), a stage's animations and step keys (kda), the
# hybrid's stack, the lab's tables, the benchmark's tables and charts.
POLICY_PAGES = ("home", "kda", "hybrid", "memory_lab", "live_benchmark")
VIOLATIONS_JS = """window.__violations = [];
document.addEventListener("securitypolicyviolation",
  e => window.__violations.push(e.violatedDirective + " " + e.blockedURI));"""


@pytest.fixture(scope="module")
def policy_browser(browser):
    """A Chromium for pages served under the policy, from the session's Playwright. The header is added by
    Playwright's route (the host's proxy, in a test), and a document fulfilled by a route is no longer known to come
    from this machine: Chromium's local network access checks would then refuse its websocket to 127.0.0.1. Off for
    this browser only."""
    chromium = browser.browser_type.launch(
        executable_path=str(CHROMIUM_PATH), args=[*CHROMIUM_ARGS, "--disable-features=LocalNetworkAccessChecks"]
    )
    yield chromium
    chromium.close()


@pytest.mark.parametrize("url_path", POLICY_PAGES)
def test_pages_work_under_the_documented_content_security_policy(policy_browser, server, url_path):
    """The policy the README gives a host: the page draws in full under it with nothing refused, and an outside
    image put on the page (what the link slip did) is refused by it."""
    with watching(policy_browser) as w:
        page = w.page

        def with_policy(route):
            response = route.fetch()
            headers = {**response.headers, "content-security-policy": serving.CONTENT_SECURITY_POLICY}
            route.fulfill(response=response, headers=headers)

        page.route(lambda url: urlparse(url).path.rstrip("/") in ("", f"/{url_path}"), with_policy)
        page.add_init_script(VIOLATIONS_JS)
        page.goto(f"{server.url}/{url_path}", wait_until="domcontentloaded")
        wait_until_rendered(page)
        assert page.locator("h1").count() > 0
        assert page.evaluate("window.__violations") == [], f"{url_path}: the policy refused what the app needs"
        page.evaluate("() => { const i = new Image(); i.src = 'http://ex.invalid/p.png'; document.body.append(i); }")
        page.wait_for_function("() => window.__violations.length > 0", timeout=LOAD_TIMEOUT_MS)
        assert page.evaluate("window.__violations") == ["img-src http://ex.invalid/p.png"]
        assert not w.blocked, f"the policy let an outside request through: {w.blocked}"
