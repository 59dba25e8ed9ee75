"""Helpers for Streamlit AppTest: run a page inside the real app shell (or open it from a link), read figures back
as numpy, find what a page renders that points outside the app, and the written story (issue 25) the story tests type
in (tests/app/test_written_story_pages.py, tests/e2e/test_written_story.py)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from lineage.mechanisms import linear_mechanisms
from lineage.stages import all_stages
from lineage.teach import after_article, claims
from lineage.teach.story import make_story
from lineage.teach.story_text import parse_story, story_link
from tests.util import claim_of
from ui import first_chart
from ui.caps import caps

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


def frames_z(fig: dict, panel: int) -> np.ndarray:
    """One panel's z in every frame of an animated figure dict, stacked: [frames, rows, columns]."""
    return np.stack([z_of(frame["data"][panel]) for frame in fig["frames"]])


def assert_fixed_colour_range(fig: dict) -> None:
    """Every panel of an animated figure dict keeps one colour range across its frames."""
    for i, first in enumerate(fig["data"]):
        ranges = {(f["data"][i]["zmin"], f["data"][i]["zmax"]) for f in fig["frames"]}
        assert ranges == {(first["zmin"], first["zmax"])}, f"panel {i} changes its colour range"


def figure(at: AppTest, title_start: str) -> dict:
    """The one figure on the page whose title starts with ``title_start``."""
    figs = figures(at)
    titles = [fig["layout"].get("title", {}).get("text", "") for fig in figs]
    matches = [fig for fig, title in zip(figs, titles, strict=True) if title.startswith(title_start)]
    assert len(matches) == 1, f"expected one figure titled {title_start!r}…, got {titles}"
    return matches[0]


def metrics(at: AppTest) -> dict[str, str]:
    """The page's metrics, label -> value."""
    return {m.label: m.value for m in at.metric}


def checked(at: AppTest) -> str:
    """The page's one line that checks the fast forms against the reference."""
    (line,) = [c.value for c in at.caption if c.value.startswith("Checked")]
    return line


def rerun(at: AppTest) -> AppTest:
    """Run again after setting widget values; fail on an exception or an error message."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def parse_markdown_table(text: str) -> list[dict[str, str]]:
    """The rows of a Markdown table (as ``ui.display.markdown_table`` writes it) as dicts, escapes undone."""
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


# ---- links: what a page renders that points outside the app -------------------------------------------------------

# Streamlit renders Markdown with remark-gfm: CommonMark plus tables, strikethrough and bare-URL autolinks.
MARKDOWN = MarkdownIt("commonmark", {"linkify": True}).enable(["linkify", "table", "strikethrough"])
OUTSIDE = "ex.invalid"


def outside_refs(markdown: str) -> list[str]:
    """Every link, image or HTML in ``markdown`` that points outside the app, as Markdown parses it."""
    found = []

    def walk(tokens):
        for token in tokens:
            if token.type in ("link_open", "image") and OUTSIDE in str(token.attrs.get("href", token.attrs.get("src"))):
                found.append(f"{token.type}: {token.attrs}")
            if token.type in ("html_inline", "html_block") and OUTSIDE in token.content:
                found.append(f"{token.type}: {token.content}")
            walk(token.children or [])

    walk(MARKDOWN.parse(markdown))
    return found


def open_link(url_path: str, params: dict[str, str]) -> AppTest:
    """A fresh session opening ``/<url_path>?<params>`` (the shell's first run, then the page, as a browser does)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if url_path == "home":
        assert first_chart_probes(at)
    else:
        at.switch_page(f"app_pages/{url_path}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def rendered_markdown(at: AppTest) -> list[str]:
    """Everything a page shows as Markdown: messages, text, captions, metrics' labels and help."""
    texts = []
    for kind in ("warning", "error", "info", "success", "markdown", "caption", "title", "header", "subheader"):
        texts += [e.value for e in getattr(at, kind)]
    return texts


# ---- a written story (issue 25) -------------------------------------------------------------------------------------

TEXT = "*me = Al\nAda = Paris, Bo = Rome\n...\n|\nCy = tea, Cy = jazz, Cy = milk"
LINEAR = [m.key for m in linear_mechanisms()]  # the linear-memory stages, from the table
STAGES = [s.key for s in all_stages()]


def written(text: str = TEXT):
    parsed, problems = parse_story(text, max_tokens=caps().T)
    assert parsed is not None, problems
    return parsed


def expected_metric(page: str, text: str = TEXT) -> tuple[str, str]:
    """(a word of the label, the value) the page's first metric should show for the written story."""
    parsed = written(text)
    n = len(parsed.tokens)
    if page == "gpt2":  # 1 + 2 + … + n rows without a cache, n with one
        return f"story's {n} tokens", f"{n * (n + 1) // 2:,} vs {n:,}"
    if page == "kv_cache":  # head dim 16: a key and a value of 16 fp32 numbers per token
        return f"story's {n} tokens", f"{n * 2 * 16 * 4:,} B"
    if page == "hybrid":
        story = make_story(K=claims.HYBRID_STATE_K, V=8, written=parsed)
        needle = claims.hybrid_needle(story, claims.trace_story("kda", story, claims.Knobs(alpha_switch=1.0)))
        return needle["needle"], f"{needle['softmax']:.3f}"
    if page == "gated_deltanet2":  # after the article: its page's claim, at its default gates (erase 1, write 0.5)
        run = after_article.run_on_story(n, 8, 8, 1.0, 0.5, written=story_link(parsed))
        c = after_article.erase_write_claim(run)
        return c.label.split(" ")[-1], c.shown
    story = make_story(K=8, V=8, written=parsed)
    c = claim_of(page, story)
    return c.label.split(" ")[-1], c.shown
