"""A story anyone can write: the text a class types (or a link carries), read into the tokens every stage runs.

One token per line, or several on a line separated by commas:

    name = Kim        a fact: the memory should map the key to the value; a later fact with the same key overwrites it
    *name = Kim       a long-lived fact: the per-channel gates hold its channel through a topic switch
    |                 the topic switch (also ‖): the gated stages' gate closes here, and the next topic begins
    ...               filler (also …): a token no query asks about
    ? name            a recall query, read after the last token; without any, every key is asked for its latest value
    # a comment       ignored (to the end of the line)

Facts before the first switch are topic A, after it topic B (then C, …); long-lived facts belong to no topic. Keys
and values are short names — letters, digits, ``-``, ``'`` and ``.`` (no ``_``, which Markdown reads as emphasis) —
so that nothing a visitor types can be markup on a page (the app still shows every name as text). Bad lines are
reported with their number and what is allowed; the rest of the story is kept only when there is no problem at all
(the page then keeps running its last good story).

A link carries the story in the same syntax, tokens joined by commas (:func:`story_link`), so a lecturer can write
"what if Dee changes three times?" as ``?story=*name=Kim,Dee=red,Dee=green,Dee=blue``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FILLER = "…"  # the filler token's key, as in lineage.teach.story
FILLER_VALUE = "filler"
SWITCH = "‖"
SWITCH_WORDS = ("|", "‖", "||")
FILLER_WORDS = ("...", "…")
RESERVED = frozenset({FILLER, FILLER_VALUE, SWITCH, "?"})
MAX_NAME = 16  # characters of a key or a value
MAX_TEXT = 4_000  # characters of a whole story, as typed or linked
NAME = re.compile(r"[^\W_](?:[^\W_]|['.-])*\Z")  # a letter or digit first; then letters, digits, ' . -


@dataclass(frozen=True)
class Token:
    """One step of a written story: ``key`` → ``value`` (filler and the switch write the filler's own pair).
    ``topic``: "long" (a long-lived fact), "A", "B", … (a fact of that topic), "switch", or "" (filler)."""

    key: str
    value: str
    topic: str


@dataclass(frozen=True)
class Ask:
    """A recall query: the answer the memory should give for ``key`` after the last token (its latest value)."""

    key: str
    expected: str
    topic: str
    why: str


@dataclass(frozen=True)
class Problem:
    """A line that could not be read: its number (from 1), its text, and what is allowed instead."""

    line: int
    text: str
    why: str


@dataclass(frozen=True)
class WrittenStory:
    tokens: tuple[Token, ...]
    asks: tuple[Ask, ...]

    @property
    def facts(self) -> tuple[Token, ...]:
        return tuple(t for t in self.tokens if t.key != FILLER)

    @property
    def keys(self) -> tuple[str, ...]:
        """Distinct keys in order of first write."""
        return tuple(dict.fromkeys(t.key for t in self.facts))

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.value for t in self.facts))

    @property
    def overwritten(self) -> tuple[str, ...]:
        """Keys written with two or more different values."""
        return tuple(k for k in self.keys if len({t.value for t in self.facts if t.key == k}) > 1)

    @property
    def has_switch(self) -> bool:
        return any(t.topic == "switch" for t in self.tokens)

    @property
    def long_lived(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.key for t in self.tokens if t.topic == "long"))

    def text(self) -> str:
        """The story in its own syntax, one token per line (queries last): parsing it gives the same story."""
        return "\n".join(_token_text(t) for t in self.tokens) + "".join(f"\n? {a.key}" for a in self.asks)


def _token_text(t: Token) -> str:
    if t.topic == "switch":
        return "|"
    if t.key == FILLER:
        return "..."
    return f"{'*' if t.topic == 'long' else ''}{t.key} = {t.value}"


def _name_problem(what: str, name: str) -> str | None:
    if not name:
        return f"the {what} is empty"
    if len(name) > MAX_NAME:
        return f"the {what} has {len(name)} characters; at most {MAX_NAME} are allowed"
    if name in RESERVED:
        return f"the {what} {name!r} is the story's own (filler, switch); choose another name"
    if not NAME.match(name):
        return (
            f"the {what} may hold only letters, digits and ' . - (starting with a letter or digit), "
            "no spaces, markup or symbols"
        )
    return None


def _pieces(text: str) -> list[tuple[int, str]]:
    """(line number, piece) for every comma-separated piece of every line, comments and blanks dropped."""
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0]
        out += [(n, piece.strip()) for piece in line.split(",") if piece.strip()]
    return out


def parse_story(text: str, *, max_tokens: int) -> tuple[WrittenStory | None, list[Problem]]:
    """Read a written story. Returns (the story, []) or (None, every problem found), each problem naming its line.

    ``max_tokens``: the most tokens the page can run (its T cap); the story needs at least one fact.
    """
    if not isinstance(text, str):
        raise ValueError(f"a story is text, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        return None, [Problem(0, "", f"the story has {len(text):,} characters; at most {MAX_TEXT:,} are allowed")]
    if any(not ch.isprintable() and ch not in "\n\r\t" for ch in text):
        return None, [Problem(0, "", "the story holds control characters; write plain text, one token per line")]
    problems: list[Problem] = []
    tokens: list[Token] = []
    queried: list[tuple[int, str]] = []
    topic = "A"
    for n, piece in _pieces(text):
        if piece in SWITCH_WORDS:
            tokens.append(Token(FILLER, FILLER_VALUE, "switch"))
            topic = chr(ord(topic) + 1) if topic < "Z" else topic
        elif piece in FILLER_WORDS:
            tokens.append(Token(FILLER, FILLER_VALUE, ""))
        elif piece.startswith("?"):
            key = piece[1:].strip()
            why = _name_problem("key", key)
            if why:
                problems.append(Problem(n, piece, f"{why} (a query is ? key)"))
            else:
                queried.append((n, key))
        elif "=" in piece:
            key, value = (part.strip() for part in piece.split("=", 1))
            long_lived = key.startswith("*")
            key = key[1:].strip() if long_lived else key
            why = _name_problem("key", key) or _name_problem("value", value)
            if why:
                problems.append(Problem(n, piece, why))
            else:
                tokens.append(Token(key, value, "long" if long_lived else topic))
        else:
            problems.append(
                Problem(n, piece, "not a token: write key = value, *key = value, | (switch), ... (filler) or ? key")
            )
    if not problems and not any(t.key != FILLER for t in tokens):
        problems.append(Problem(0, "", "the story has no fact: write at least one key = value"))
    if len(tokens) > max_tokens:
        problems.append(
            Problem(0, "", f"the story has {len(tokens)} tokens; this page runs at most {max_tokens} (its T cap)")
        )
    latest = {t.key: t for t in tokens if t.key != FILLER}
    for n, key in queried:
        if key not in latest:
            problems.append(Problem(n, f"? {key}", f"the story never writes the key {key!r}; ask for a key it writes"))
    if problems:
        return None, problems
    keys = [k for _, k in queried] if queried else list(latest)
    return WrittenStory(tuple(tokens), tuple(_ask(tokens, k) for k in dict.fromkeys(keys))), []


def _ask(tokens: list[Token], key: str) -> Ask:
    writes = [t for t in tokens if t.key == key]
    last = writes[-1]
    values = list(dict.fromkeys(t.value for t in writes))
    if len(values) > 1:
        why = f"overwritten: {', then '.join(values)}"
    elif last.topic == "long":
        why = "a long-lived fact"
    else:
        why = f"a topic-{last.topic} fact"
    return Ask(key, last.value, last.topic, why)


def cut_story(story: WrittenStory, max_tokens: int) -> WrittenStory | None:
    """The story's first ``max_tokens`` tokens (a link's story cut to a page's cap), with the queries whose keys they
    still write; None when no fact is left."""
    tokens = story.tokens[:max_tokens]
    written = {t.key for t in tokens if t.key != FILLER}
    asked = [a.key for a in story.asks if a.key in written]
    text = "\n".join(_token_text(t) for t in tokens) + "".join(f"\n? {key}" for key in asked)
    cut, _ = parse_story(text, max_tokens=max_tokens)
    return cut


def story_link(story: WrittenStory) -> str:
    """The story as a link's value: its tokens in the same syntax, joined by commas; the queries too when they are
    not the default (every key, in the order first written)."""
    tokens = [_token_text(t).replace(" = ", "=") for t in story.tokens]
    asked = [a.key for a in story.asks]
    default = list(dict.fromkeys(t.key for t in story.facts))
    return ",".join(tokens + ([] if asked == default else [f"?{key}" for key in asked]))
