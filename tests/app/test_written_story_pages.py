"""A story anyone can write (issue 25), in the pages: typed into the form on one stage page, every stage page runs it at
its own length and opens with its claim on it (the number lineage.teach.claims computes for that story, itself checked
against the recurrence in tests/test_written_claims.py); a story that lacks a claim's case says what to add; bad input
is listed line by line, quoted, while the last good story keeps running; the story travels in the link."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from lineage.stages import stage
from lineage.teach.story import make_story
from lineage.teach.story_text import story_link
from tests.app.util import (
    LINEAR,
    STAGES,
    TEXT,
    expected_metric,
    figures,
    open_link,
    outside_refs,
    rendered_markdown,
    rerun,
    run_page,
    written,
)
from ui import links
from ui.caps import caps
from ui.story import INPUT_KEY, PRESET_NAMES, PRESETS, STORY_PARAM


def type_story(at: AppTest, text: str) -> AppTest:
    """What a visitor does: type into the form's text area and press Run this story."""
    at.text_area(key=INPUT_KEY).input(text)
    next(b for b in at.button if b.label == "Run this story").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("page", STAGES)
def test_a_typed_story_runs_on_the_page_at_its_own_length_with_its_claim(page):
    at = type_story(run_page(page), TEXT)
    word, value = expected_metric(page)
    assert word in at.metric[0].label and at.metric[0].value == value, (at.metric[0].label, at.metric[0].value)
    assert at.query_params[STORY_PARAM] == story_link(written())  # the page's link carries the story
    if page != "hybrid":  # the hybrid runs the story at its own length always (it has no T slider for it)
        assert any(f"T = {len(written().tokens)} tokens" in c.value for c in at.caption)
    if page in LINEAR and not stage(page).after_article:  # the story chart's rows are the written story's own keys
        story = make_story(K=8, V=8, written=written())
        assert list(figures(at)[0]["data"][0]["y"]) == story.row_labels
        assert story.row_labels[:4] == ["me", "Ada", "Bo", "Cy"]


def test_the_story_follows_the_visitor_to_every_stage_page():
    at = type_story(run_page("deltanet"), TEXT)
    for page in STAGES:
        at.switch_page(f"app_pages/{page}.py")
        rerun(at)
        word, value = expected_metric(page)
        assert word in at.metric[0].label and at.metric[0].value == value, page
        assert at.text_area(key=INPUT_KEY).value.replace(" ", "") != PRESETS["default"].replace(" ", "")


@pytest.mark.parametrize(
    ("page", "preset", "says"),
    [
        ("mamba2", "no switch", "add a topic switch"),
        ("gla", "no switch", "add a topic switch"),
        ("deltanet", "a key across topics", None),
        ("kda", "an overwrite chain", None),
        ("linear_attention", "more keys than rows", None),
    ],
)
def test_presets_run_and_a_story_without_the_case_says_what_to_add(page, preset, says):
    at = run_page(page)
    next(b for b in at.button if b.label == PRESET_NAMES[preset]).click()
    rerun(at)
    untested = [i.value for i in at.info if i.value.startswith("**Not tested on this story.**")]
    if says:
        assert len(untested) == 1 and says in untested[0]
        assert not any("topic A" in m.label or "still held" in m.label for m in at.metric)  # no number for it
    else:
        assert not untested
        word, value = expected_metric(page, PRESETS[preset])
        assert word in at.metric[0].label and at.metric[0].value == value
    if preset == "more keys than rows":
        assert any("over capacity" in m.value for m in at.markdown if "keys share K = 8" in m.value)


def test_the_default_preset_brings_back_the_scripted_story():
    at = type_story(run_page("deltanet"), TEXT)
    assert STORY_PARAM in at.query_params
    next(b for b in at.button if b.label == PRESET_NAMES["default"]).click()
    rerun(at)
    assert STORY_PARAM not in at.query_params and at.metric[0].value == "0.000"
    assert "for Dee after" in at.metric[0].label and not any("own length" in c.value for c in at.caption)


HOSTILE_TEXT = "a = 1\n[Log in](http://ex.invalid/a) = 2\n<img src=http://ex.invalid/i.png>\n`x` = 3\n? zz"


def test_bad_input_is_listed_by_line_quoted_and_the_last_good_story_keeps_running():
    at = type_story(run_page("deltanet"), TEXT)
    before = at.metric[0].value
    at = type_story(at, HOSTILE_TEXT)
    errors = [e.value for e in at.error if e.value.startswith("**This story cannot run**")]
    assert len(errors) == 1 and "the last story that read well keeps running" in errors[0]
    for line, piece in [(2, "[Log in](http://ex.invalid/a) = 2"), (3, "<img src=http://ex.invalid/i.png>")]:
        assert f"Line {line}: {links.quote(piece)}" in errors[0]
    assert "Line 5:" in errors[0] and "ask for a key it writes" in errors[0]
    assert [ref for text in rendered_markdown(at) for ref in outside_refs(text)] == []
    assert at.metric[0].value == before and "Cy" in at.metric[0].label  # still the last good story
    assert at.query_params[STORY_PARAM] == story_link(written())


def test_a_story_past_the_cap_is_refused_naming_the_cap():
    long = ", ".join(f"k{i % 5} = v{i}" for i in range(caps().T + 1))
    at = type_story(run_page("kda"), long)
    errors = " ".join(e.value for e in at.error)
    assert f"this page runs at most {caps().T}" in errors and at.metric[0].value  # the default story still runs


def test_a_story_link_opens_the_story_on_the_page():
    link = story_link(written())
    at = open_link("gated_deltanet", {STORY_PARAM: link})
    word, value = expected_metric("gated_deltanet")
    assert word in at.metric[0].label and at.metric[0].value == value
    assert not [w.value for w in at.warning if w.icon == ":material/link_off:"]  # story is a known name of a link
    assert at.text_area(key=INPUT_KEY).value == written().text()


def test_a_link_story_over_the_caps_is_cut_and_said():
    cap = caps().T
    link = ",".join(f"k{i % 5}=v{i}" for i in range(cap + 10))
    at = open_link("deltanet", {STORY_PARAM: link})
    said = [w.value for w in at.warning if w.icon == ":material/link_off:"]
    assert any("cut to the caps" in w and f"first {cap:,} of {cap + 10:,} tokens" in w for w in said), said
    assert any(f"T = {cap} tokens" in c.value for c in at.caption)


@pytest.mark.parametrize(
    "link",
    [
        "a=1,`[Log in](http://ex.invalid/a)`=2",
        "![x](http://ex.invalid/i.png)",
        "<http://ex.invalid/c>",
        "a=1,?zz",
        "x" * 10_000,
    ],
    ids=["backtick-link", "image", "autolink", "unknown-query", "long"],
)
def test_a_refused_link_story_is_said_quoted_and_the_default_story_runs(link):
    at = open_link("deltanet", {STORY_PARAM: link})
    said = [w.value for w in at.warning if w.icon == ":material/link_off:"]
    assert any(w.startswith("The link's story ") and "is not used" in w for w in said), said
    assert [ref for text in rendered_markdown(at) for ref in outside_refs(text)] == []
    assert at.metric[0].value == "0.000" and "for Dee after" in at.metric[0].label  # the default story
    assert STORY_PARAM not in at.query_params  # the refused story is not kept in the URL


def test_a_visitor_who_never_opens_the_form_gets_no_story_in_the_link():
    at = run_page("kda")
    assert STORY_PARAM not in at.query_params and not any("own length" in c.value for c in at.caption)
    assert at.text_area(key=INPUT_KEY).value == PRESETS["default"]
