"""The written story (lineage.story_text): valid stories read as written, hostile ones are refused line by line, and a
story survives its round trips through text and through a link."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineage.story_text import FILLER, MAX_NAME, MAX_TEXT, parse_story, story_link

CAP = 64


def parsed(text: str, max_tokens: int = CAP):
    story, problems = parse_story(text, max_tokens=max_tokens)
    assert problems == [], problems
    return story


def test_a_story_reads_as_written():
    story = parsed("*name = Kim\nAda = Paris, ..., Bo = Rome\n|\nDee = red\nDee = green # the overwrite\n")
    assert [(t.key, t.value, t.topic) for t in story.tokens] == [
        ("name", "Kim", "long"),
        ("Ada", "Paris", "A"),
        (FILLER, "filler", ""),
        ("Bo", "Rome", "A"),
        (FILLER, "filler", "switch"),
        ("Dee", "red", "B"),
        ("Dee", "green", "B"),
    ]
    assert [(a.key, a.expected) for a in story.asks] == [
        ("name", "Kim"),
        ("Ada", "Paris"),
        ("Bo", "Rome"),
        ("Dee", "green"),
    ]
    assert story.overwritten == ("Dee",) and story.has_switch and story.long_lived == ("name",)
    assert story.asks[3].why == "overwritten: red, then green"


def test_queries_when_written_and_topics_after_each_switch():
    story = parsed("a = 1, |, b = 2, |, c = 3, ? c, ? a")
    assert [(a.key, a.expected, a.topic) for a in story.asks] == [("c", "3", "C"), ("a", "1", "A")]
    assert [t.topic for t in story.facts] == ["A", "B", "C"]


def test_a_story_without_a_switch_or_an_overwrite_is_a_story():
    story = parsed("x = 1\ny = 2")
    assert not story.has_switch and story.overwritten == () and story.long_lived == ()


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("a = 1\nb ==", 2, "value may hold only"),
        ("a = 1\nthis is not a token", 2, "not a token"),
        ("<b>x</b> = x", 1, "key may hold only"),
        ("a = [x](http://e)", 1, "value may hold only"),
        ("<script>alert(1)</script> = x", 1, "at most 16"),
        ("a = `b`", 1, "value may hold only"),
        ("a = " + "x" * (MAX_NAME + 1), 1, f"at most {MAX_NAME}"),
        ("filler = 3", 1, "the story's own"),
        ("a = filler", 1, "the story's own"),
        ("a = 1\n? b", 2, "never writes the key 'b'"),
        ("? ", 1, "key is empty"),
        ("*  = 2", 1, "key is empty"),
        ("|\n...", 0, "no fact"),
        ("", 0, "no fact"),
        ("a = 1\x00", 0, "control characters"),
        ("a = 1\u202e", 0, "control characters"),
        ("a = 1\n" * 2_000, 0, f"at most {MAX_TEXT:,}"),
        ("a = 1,\n" * 65, 0, "at most 64"),
    ],
)
def test_bad_stories_are_refused_naming_the_line_and_what_is_allowed(text, line, says):
    story, problems = parse_story(text, max_tokens=CAP)
    assert story is None
    assert any(p.line == line and says in p.why for p in problems), problems


def test_every_bad_line_is_reported_not_only_the_first():
    _, problems = parse_story("a = 1\nb c\nd = <e>\nf = 2\n? zz", max_tokens=CAP)
    assert [p.line for p in problems] == [2, 3, 5]


def test_not_text_is_a_value_error():
    with pytest.raises(ValueError, match="a story is text"):
        parse_story(None, max_tokens=CAP)  # type: ignore[arg-type]


NAMES = st.text(alphabet="abcXYZ019_'.-", min_size=1, max_size=MAX_NAME).filter(lambda s: s[0].isalnum())
TOKENS = st.one_of(
    st.tuples(st.booleans(), NAMES, NAMES).map(lambda t: f"{'*' if t[0] else ''}{t[1]} = {t[2]}"),
    st.just("|"),
    st.just("..."),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(TOKENS, min_size=1, max_size=40).filter(lambda ts: any("=" in t for t in ts)), st.booleans())
def test_a_story_survives_its_text_and_its_link(tokens, commas):
    story = parsed(", ".join(tokens) if commas else "\n".join(tokens))
    assert len(story.tokens) == len(tokens)
    assert parsed(story.text()) == story
    assert parsed(story_link(story)) == story


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_a_story_or_problems_never_an_exception(text):
    story, problems = parse_story(text, max_tokens=CAP)
    assert (story is None) == bool(problems)
    for p in problems:
        assert p.why and 0 <= p.line <= text.count("\n") + 1
    if story is not None:  # every name is plain: nothing that Markdown or HTML would read
        for t in story.tokens:
            assert not set(t.key + t.value) & set("<>[]()`*#!|\\")
