"""Text a visitor controls is never Markdown: every link key and value, every typed number the app echoes, goes through
one helper (``ui.links.quote``), and a crafted link cannot put a link or an image of its own on a page.

Three layers: the helper itself against every text (property-based, parsed as Streamlit's GitHub-flavoured Markdown
would be); a scan of the code that fails a message built another way; and every URL key of every page, plus unknown
and reserved names, driven with break-outs, links, images, HTML, autolinks, reference links and long values, with
everything the page then renders parsed for a link or an image that points outside the app. (The same links in a real
Chromium, where no request may leave 127.0.0.1: tests/e2e/test_links_browser.py.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_
from streamlit.testing.v1 import AppTest

from tests.app.util import MARKDOWN, ROOT, open_link, outside_refs, rendered_markdown
from ui import links
from ui.nav import PAGES

HOSTILE = {  # name -> a value a crafted link can carry
    "backtick link": "1`[Log in](http://ex.invalid/a)`",
    "backtick image": "1`![x](http://ex.invalid/i.png)`",
    "double fence": "``a``[Log in](http://ex.invalid/b)``",
    "html": "<img src=http://ex.invalid/h.png><a href='http://ex.invalid/x'>x</a>",
    "autolink": "1`<http://ex.invalid/c>`",
    "bare url": "` http://ex.invalid/d www.ex.invalid/e",
    "reference": "`[Log in][r]`\n\n[r]: http://ex.invalid/r",
    "directives": "`:red[Log in] :material/home: $x$ **bold**",
    "long": "`" + "[Log in](http://ex.invalid/l)" * 400,
    "control chars": "`\n\n[Log in](http://ex.invalid/n)\u202e\t",
}


# ---- the helper -----------------------------------------------------------------------------------------------------


def code_spans(markdown: str) -> list[str]:
    spans = []
    for token in MARKDOWN.parse(markdown):
        spans += [child.content for child in token.children or [] if child.type == "code_inline"]
    return spans


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_quoted_value_is_one_code_span_of_the_value_as_given(value):
    message = f"The link's {links.quote('key')} = {links.quote(value)} is not used: **ours**."
    assert outside_refs(message) == []
    spans = code_spans(message)
    assert spans[0] == "key" and len(spans) == 2, spans
    shown = spans[1]
    assert len(shown) <= links.SHOWN_CHARS
    printable = "".join(ch if ch.isprintable() else "\ufffd" for ch in value)
    if len(value) <= links.SHOWN_CHARS:
        assert shown == printable
        assert "shortened" not in message
    else:
        assert shown == printable[: links.SHOWN_CHARS - 1] + "…"
        assert f"(shortened; {len(value):,} characters in all)" in message


@settings(max_examples=400, deadline=None)
@given(st_.text(alphabet=st_.sampled_from("`[]()!<>:*_\\$#|~ \nab/.h"), max_size=60))
def test_no_text_can_leave_its_code_span(text):
    """Whatever the text — backtick runs at either end, brackets, HTML — the message parses to our words around one
    code span that holds the text (cut and made printable), and nothing else."""
    message = f"before {links.quote(text)} after"
    tokens = MARKDOWN.parse(message)
    assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"]
    children = tokens[1].children
    if text:
        kinds = [c.type for c in children]
        assert kinds == ["text", "code_inline", "text"], (text, kinds)
        shown = "".join(ch if ch.isprintable() else "\ufffd" for ch in text[: links.SHOWN_CHARS])
        if len(text) > links.SHOWN_CHARS:
            shown = shown[: links.SHOWN_CHARS - 1] + "…"
        assert children[1].content == shown
    else:
        assert message == "before (empty) after"


def test_the_issue_links_would_have_broken_out_the_old_way():
    """The test can fail: the old message (the value between single backticks) parses to the attacker's link."""
    for name in ("backtick link", "backtick image", "autolink"):
        assert outside_refs(f"The link's seed `{HOSTILE[name]}` is not used.") != [], name


# ---- the code: no other way to echo a visitor's text ------------------------------------------------------------


SOURCES = sorted([*ROOT.glob("app_pages/*.py"), *ROOT.glob("ui/*.py"), ROOT / "app.py"])
# Placeholders inside a hand-made code span that are the app's own text, never a visitor's, with why:
NOT_VISITOR_TEXT = {
    ("ui/display.py", "obj.__module__"): "the module of the code shown (show_code)",
    ("ui/display.py", "obj.__qualname__"): "the name of the code shown (show_code)",
    ("ui/story.py", "excerpt.where"): "a source file of lineage, named by the app",
    ("app_pages/learned_memory.py", "c"): "a command recorded in the repository's sweep file",
}
VISITOR_NAMES = {"given", "typed", "raw", "key", "value"}  # what the link and input code call a visitor's text
MESSAGE_CALLS = {"notice", "warning", "error", "info", "success", "toast", "caption", "markdown", "write", "append"}


def placeholders_in_code_spans(path: Path) -> list[str]:
    """``{expr}`` placed inside backticks of an f-string: a hand-made code span that a backtick in the value closes."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.JoinedStr):
            literal = ""
            for part in node.values:
                if isinstance(part, ast.Constant):
                    literal += str(part.value)
                elif literal.count("`") % 2 == 1:
                    found.append(ast.unparse(part.value))
    return found


def unquoted_visitor_text(path: Path) -> list[str]:
    """``{name}`` of a variable that holds a visitor's text, formatted without ``quote`` into a message: an f-string
    handed to a call that shows text (``notice``, ``st.warning``, ``messages.append``, …)."""
    found = []
    for call in ast.walk(ast.parse(path.read_text())):
        func = getattr(call, "func", None)
        name = getattr(func, "attr", getattr(func, "id", None))
        if not isinstance(call, ast.Call) or name not in MESSAGE_CALLS:
            continue
        for node in [n for arg in call.args for n in ast.walk(arg) if isinstance(n, ast.JoinedStr)]:
            for part in node.values:
                is_name = isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name)
                if is_name and part.value.id in VISITOR_NAMES:
                    found.append(f"line {node.lineno}: {{{part.value.id}}}")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_no_message_formats_visitor_text_another_way(path):
    where = str(path.relative_to(ROOT))
    spans = [e for e in placeholders_in_code_spans(path) if (where, e) not in NOT_VISITOR_TEXT]
    assert spans == [], f"{where}: {{…}} inside backticks, a span a backtick in the value closes; use links.quote"
    assert unquoted_visitor_text(path) == [], f"{where}: a visitor's text formatted without links.quote"


def test_the_scan_finds_the_old_message(tmp_path):
    """The scan can fail: the message this issue was about is caught by both rules."""
    path = tmp_path / "old.py"
    path.write_text('def f(given):\n    notice(f"The link\'s seed `{given}` is not used.")\n')
    assert placeholders_in_code_spans(path) == ["given"] and unquoted_visitor_text(path) == ["line 2: {given}"]


def test_quote_is_the_only_shortener():
    """One helper: the old ``shown`` is gone, and nothing else in the app cuts a visitor's text."""
    assert not hasattr(links, "shown")
    for path in SOURCES:
        assert not re.search(r"\bshown\(", path.read_text()), path


# ---- every URL key of every page, in the rendered page ----------------------------------------------------------


KINDS = ("slider", "select_slider", "number_input", "selectbox", "radio", "checkbox", "toggle", "multiselect")
FRESH: dict[str, tuple[list[str], list[str]]] = {}  # url_path -> (its URL keys, every name in its session state)


def fresh(url_path: str) -> tuple[list[str], list[str]]:
    """The page's controls (every widget with a key) and its step, and every session-state name, in a fresh session."""
    if url_path not in FRESH:
        at = open_link(url_path, {})
        keys = [w.key for kind in KINDS for w in getattr(at, kind) if w.key]
        step = f"{url_path}_step"
        buttons = [b.key for kind in ("button", "download_button") for b in at.get(kind) if b.key]
        names = [name for name in at.session_state.keys() if name not in buttons]  # noqa: SIM118 (not a dict)
        FRESH[url_path] = (sorted({*keys, *([step] if step in at.session_state else [])}), names)
    return FRESH[url_path]


def url_keys(url_path: str) -> list[str]:
    return fresh(url_path)[0]


@pytest.mark.parametrize("entry", PAGES, ids=[e.url_path for e in PAGES])
def test_the_app_own_session_state_names_start_with_an_underscore(entry):
    """So a link can never pass off a value as used by naming one (ui.links reports every ``_`` name): whatever else
    is in session state is a control of the page (a widget, a button, the step, the shared seed and presenter switch).
    """
    controls, names = fresh(entry.url_path)
    others = [n for n in names if not n.startswith("_") and n not in {*controls, "present", "seed"}]
    assert others == [], f"{entry.url_path}: session-state names that are no control: {others}"


def link_notices(at: AppTest) -> list[str]:
    """The warnings at the top of the page about what the link (or a typed value) asked for (ui.links.report)."""
    return [w.value for w in at.warning if w.icon == ":material/link_off:"]


@pytest.mark.parametrize("rotation", [0, 1], ids=["first", "second"])
@pytest.mark.parametrize("entry", PAGES, ids=[e.url_path for e in PAGES])
def test_a_crafted_link_shows_no_outside_link_or_image(entry, rotation):
    """Every key of the page gets a hostile value (each pattern in turn, two rotations), and the link adds unknown
    names made of the patterns, the app's own session-state names and Streamlit's reserved ones. No outside link or
    image is rendered, every value the page could not use is reported, and the report stays short."""
    page = entry.url_path
    names = list(HOSTILE)
    keys = url_keys(page)
    params = {key: HOSTILE[names[(i + rotation) % len(names)]] for i, key in enumerate(keys)}
    unknown = {f"a{HOSTILE[names[(i + rotation) % len(names)]][:30]}b": "1" for i in range(3)}
    reserved = {"_link_notices": "1", "_runs_started": "1"}
    params |= unknown | reserved | {"seed": HOSTILE[names[rotation]], "embed_options": "show_toolbar"}
    at = open_link(page, params)
    shown = rendered_markdown(at)
    assert [ref for text in shown for ref in outside_refs(text)] == []
    said = link_notices(at)
    counted = sum(int(m.group(1).replace(",", "")) for w in said if (m := re.match(r"… and ([\d,]+) more", w)))
    listed = [w for w in said if not w.startswith("… and")]
    assert len(listed) <= links.MAX_MESSAGES
    mentioned = {key for key in [*params, "seed"] if any(links.quote(key) in w for w in listed)}
    mentioned |= {"seed"} if any(w.startswith("The link's seed ") for w in listed) else set()
    expected = set(params) - {"embed_options"}  # Streamlit's own (ui.links.NOT_CONTROLS)
    missing = expected - mentioned
    assert len(missing) <= counted, f"{page}: not reported: {sorted(missing)}; the page said {said}"
    assert not any(links.quote("embed_options") in w for w in said)


def test_reserved_names_are_reported_and_embed_is_streamlit_own():
    at = open_link("kda", {"_runs_started": "7", "_link_notices": "x", "embed": "true"})
    said = link_notices(at)
    for key in ("_runs_started", "_link_notices"):
        assert any(f"{links.quote(key)} in the link is not a setting of this page" in w for w in said), said
    assert not any("embed" in w for w in said), said


def test_a_long_value_is_shortened_in_the_message():
    at = open_link("kda", {"kda_beta": "9" * 100_000})
    said = [w for w in link_notices(at) if links.quote("kda_beta") in w]
    assert said and all(len(w) < 400 for w in said), said
    assert "(shortened; 100,000 characters in all)" in said[0]


def test_a_thousand_unknown_names_are_counted_not_listed():
    params = {f"name{i}": str(i) for i in range(200)}
    at = open_link("deltanet", params)
    said = link_notices(at)
    assert len(said) == links.MAX_MESSAGES + 1, len(said)
    assert said[-1].startswith(f"… and {200 - links.MAX_MESSAGES:,} more"), said[-1]


def test_the_app_limits_on_links_are_streamlit_own():
    """ui.links restates Streamlit's limits on a query string (it has no public name for them); when Streamlit
    changes them this fails, and the oversized-link notice must follow."""
    from streamlit.runtime.state import query_params as streamlit_query_params

    assert links.LINK_MAX_CHARS == streamlit_query_params.CLIENT_STATE_QUERY_STRING_MAX_LENGTH
    assert links.LINK_MAX_FIELDS == streamlit_query_params.CLIENT_STATE_QUERY_STRING_MAX_FIELDS
    assert streamlit_query_params.sanitize_query_string("a=1&" * links.LINK_MAX_FIELDS) == ""
    assert "1,000 parameters" in links.oversized_text(10, 1001) and "defaults" in links.oversized_text(10, 1001)


def test_the_readme_gives_the_content_security_policy_the_browser_tests_serve():
    """Defence in depth: the deployment notes quote ui.serving's policy word for word (tests/e2e/test_links_browser.py
    serves pages under it and sees an outside image refused)."""
    from ui import serving

    readme = " ".join((ROOT / "README.md").read_text().split())
    assert serving.CONTENT_SECURITY_POLICY in readme
