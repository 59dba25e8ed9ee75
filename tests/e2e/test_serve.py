"""The hosted demo's start, ``python serve.py``, in a real browser: its page shell loads plotly.js early, once.

serve.py hands out Streamlit's page shell with the chart chunk (plotly.js) preloaded and imported as soon as the
frontend has loaded (``ui.serving``). If the shell's path to the chunk and the frontend's own lazy import resolved to
different URLs, the browser would fetch and evaluate plotly.js twice. If the shell broke the frontend, nothing would
draw. Both are checked here, on the home page and on a deep link.
"""

from __future__ import annotations

import pytest

from tests.e2e.checks import assert_clean, wait_until_rendered
from ui import serving

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("path", ["", "kda?kda_T=20&seed=7"], ids=["home", "kda-deep-link"])
def test_serve_py_loads_plotly_early_and_once(watched_preloaded, preloaded_server, path):
    page = watched_preloaded.page
    chunk_requests: list[str] = []
    page.on("request", lambda r: chunk_requests.append(r.url) if "/PlotlyChart." in r.url else None)

    page.goto(f"{preloaded_server.url}/{path}", wait_until="domcontentloaded")
    wait_until_rendered(page)

    shell = page.evaluate("() => document.head.innerHTML")
    assert serving.MARKER in shell, "serve.py did not hand out its page shell"
    assert len(chunk_requests) == 1, f"plotly.js was requested {len(chunk_requests)} times: {chunk_requests}"
    # the import in the shell and the frontend's lazy import are the same module: one module record, evaluated once
    scripts = page.evaluate(
        "() => performance.getEntriesByType('resource').filter(e => e.name.includes('/PlotlyChart.')).length"
    )
    assert scripts == 1
    assert page.locator(".stPlotlyChart .js-plotly-plot .main-svg").count() >= 1
    assert_clean(watched_preloaded, f"serve.py /{path}")
