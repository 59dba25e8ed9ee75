"""The written story (lineage.teach.story_text): valid stories read as written, hostile ones are refused line by line,
and a
story survives its round trips through text and through a link."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineage.teach.story import make_story, scripted_text
from lineage.teach.story_text import FILLER, MAX_NAME, MAX_TEXT, parse_story, story_link

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
        ("a = _b_", 1, "value may hold only"),  # Markdown emphasis
        ("a_b = 1", 1, "key may hold only"),
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


NAMES = st.text(alphabet="abcXYZ019'.-", min_size=1, max_size=MAX_NAME).filter(lambda s: s[0].isalnum())
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
        assert p.why and 0 <= p.line <= len(text.splitlines())
    if story is not None:  # every name is plain: nothing that Markdown or HTML would read
        for t in story.tokens:
            assert not set(t.key + t.value) & set("<>[]()`*_#!|\\")


# ---- the written story as the stages run it (lineage.teach.story.make_story)
# ------------------------------------------


@pytest.mark.parametrize("T", [make_story().T, 32])
def test_the_scripted_story_written_out_runs_exactly_as_the_scripted_one(T):
    """Same tokens, same vocabulary in the same order, so the same embeddings, gates and inputs: every stage's run and
    claim on it is the default's."""
    scripted = make_story(T, 8, 8)
    written = make_story(K=8, V=8, written=parsed(scripted_text(T)))  # what the story form shows
    assert written.facts == scripted.facts and written.T == T
    assert written.vocab_keys == scripted.vocab_keys and written.vocab_values == scripted.vocab_values
    assert [(q.key, q.expected) for q in written.queries] == [(q.key, q.expected) for q in scripted.queries]
    for a, b in zip(written.inputs(), scripted.inputs(), strict=True):
        np.testing.assert_array_equal(a, b)
    for gate in ("scalar", "channel"):
        np.testing.assert_array_equal(written.gates(gate, 0.9, 0.1), scripted.gates(gate, 0.9, 0.1))
    assert written.overwrite.key == scripted.overwrite.key and written.overwritten_value == scripted.overwritten_value


def test_a_written_story_brings_its_own_keys_values_and_queries():
    story = make_story(K=4, V=8, written=parsed("*x = 1, a = 2, |, a = 3, a = 4, b = 5, c = 6"))
    assert story.vocab_keys == ("x", "a", "b", "c", FILLER) and story.vocab_values[:6] == ("1", "2", "3", "4", "5", "6")
    assert not story.keys_fit and story.values_fit  # five keys in four rows: over capacity, and the rows say so
    assert story.row_labels == ["ch 0", "ch 1", "ch 2", "ch 3"]
    assert story.overwrite.key == "a" and story.overwritten_value == "3" and story.overwrite.expected == "4"
    assert [q.key for q in story.long_lived] == ["x"]
    g = story.gates("channel", 1.0, 0.0)
    assert story.has_switch and np.isfinite(g[story.switch_step]).sum() >= 1  # the long-lived key's share is held


def test_a_story_without_a_switch_or_a_long_lived_fact():
    story = make_story(K=8, V=8, written=parsed("a = 1, b = 2"))
    assert not story.has_switch and story.overwrite is None and story.overwritten_value is None
    assert story.long_lived == () and np.all(story.gates("channel", 0.9, 0.0) == np.log(0.9))
