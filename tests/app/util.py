"""Helpers for Streamlit AppTest: run a page inside the real app shell, read figures back as numpy."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from ui import first_chart

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60  # seconds per script run; generous for a loaded 2-core machine
SEED_LABEL = "Seed (shared by all pages)"  # the sidebar's seed input, as a visitor reads it


def run_page(url_path: str, *, seed: int | None = None, timeout: float = TIMEOUT, **session) -> AppTest:
    """Run app.py, then switch to the page at ``url_path`` as st.navigation would; return the AppTest.

    The first run registers the pages (and renders the sidebar of the real shell); switching before it would
    bypass st.navigation and run the page alone.
    """
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    if seed is not None:
        at.session_state["seed"] = seed
    for key, value in session.items():
        at.session_state[key] = value
    at.run()
    if url_path == "home":
        after_first_chart(at)
    else:
        at.switch_page(f"app_pages/{url_path}.py")
        at.run()
    assert not at.exception, f"page {url_path} raised: {[e.value for e in at.exception]}"
    return at


def first_chart_probes(at: AppTest) -> list:
    """The probes on the page that hold its rest back until the browser has drawn the first chart (ui.first_chart)."""
    return [e for e in at.get("bidi_component") if e.proto.component_name == first_chart.COMPONENT_NAME]


def after_first_chart(at: AppTest) -> AppTest:
    """What the browser does after a session's first run of the home page: that run ends after the first chart with
    a probe whose script asks for a rerun once the chart is drawn. AppTest runs no JavaScript, so the rerun is made
    here; it fails if there is no probe, since then nothing would complete the page."""
    assert first_chart_probes(at), "the session's first run of home did not wait for its first chart"
    at.run()
    assert not first_chart_probes(at), "the rerun after the first chart held the page back again"
    return at


def decode(obj):
    """Undo Plotly's typed-array encoding ({"dtype", "bdata", "shape"}) anywhere in a figure dict."""
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
            shape = obj.get("shape")
            if shape:
                dims = [int(s) for s in str(shape).split(",")] if isinstance(shape, str) else list(shape)
                arr = arr.reshape(dims)
            return arr
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


def figures(at: AppTest) -> list[dict]:
    """Every Plotly chart on the page, as decoded figure dicts (data, layout, frames)."""
    return [decode(json.loads(chart.proto.spec)) for chart in at.get("plotly_chart")]


def z_of(trace: dict) -> np.ndarray:
    """A heatmap trace's z as a float array (lists of lists or typed arrays)."""
    return np.asarray(trace["z"], dtype=float)


def figure(at: AppTest, title_start: str) -> dict:
    """The one figure on the page whose title starts with ``title_start``."""
    figs = figures(at)
    titles = [fig["layout"].get("title", {}).get("text", "") for fig in figs]
    matches = [fig for fig, title in zip(figs, titles, strict=True) if title.startswith(title_start)]
    assert len(matches) == 1, f"expected one figure titled {title_start!r}…, got {titles}"
    return matches[0]


def rerun(at: AppTest) -> AppTest:
    """Run again after setting widget values; fail on an exception or an error message."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def parse_markdown_table(text: str) -> list[dict[str, str]]:
    """The rows of a Markdown table (as ``ui.common.markdown_table`` writes it) as dicts, escapes undone."""
    lines = [line.strip() for line in text.strip().splitlines()]

    def cells(line: str) -> list[str]:
        parts = re.split(r"(?<!\\)\|", line.strip("|"))  # split on pipes that are not escaped
        return [p.strip().replace("\\|", "|").replace("\\\\", "\\") for p in parts]

    header = cells(lines[0])
    assert set(lines[1]) <= set("|-: "), f"not a Markdown table: {lines[1]!r}"
    return [dict(zip(header, cells(line), strict=True)) for line in lines[2:]]


def markdown_table(at: AppTest, first_header: str) -> list[dict[str, str]]:
    """The one Markdown table on the page whose first column is ``first_header``."""
    found = [m.value for m in at.markdown if m.value.lstrip().startswith(f"| {first_header} |")]
    assert len(found) == 1, f"expected one Markdown table headed {first_header!r}, found {len(found)}"
    return parse_markdown_table(found[0])
