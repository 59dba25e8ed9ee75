"""The story every stage page runs on: a short scripted text of facts, one overwrite, a topic switch, filler.

Random vectors make every stage's numbers correct and none of its pictures readable. The story gives the steps and
the state rows names, so each page can show its own claim on the same tokens:

    step  token            what it is
    0     name → Kim       a long-lived fact (asked for at the very end)
    1–4   Ada → Paris …    topic A: three facts, filler between them
    ...   ‖                the topic switch (a filler token whose gate closes in the gated stages)
    ...   Dee → tea …      topic B: two facts
    ...   Dee → coffee     the overwrite: Dee's value changes
    end   ? name, ? Ada …  recall queries with their expected answers (read from the state after the last token)

Each token writes one key → value pair (filler writes its own key and value). Keys and values come from a small fixed
vocabulary. Their embeddings are made here, deterministically: while the vocabulary fits the dimension, key i is the
i-th unit vector (so row i of a K × V state *is* key i, and column j is value j), otherwise every token gets a fixed
random unit vector and the keys overlap — the state is over capacity, and the pages say so. Nothing is downloaded.

Gates are part of the story, standing in for what a trained gate would do: every ordinary token keeps ``alpha_keep``
of the state; the switch token keeps ``alpha_switch``. A per-channel gate (GLA, KDA) keeps the long-lived fact's own
channel at ``alpha_keep`` through the switch — the channel a trained per-channel gate would learn to hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from lineage import checks
from lineage.teach.story_text import FILLER, FILLER_VALUE, SWITCH, Ask, Token, WrittenStory, parse_story

EMBED_SEED = 20190214  # fixed: the story's random embeddings (over capacity) are the same on every machine


@dataclass(frozen=True)
class Fact:
    """One token of the story: it writes ``key`` → ``value``. ``topic`` is "long", "A", "B" or "" (filler)."""

    key: str
    value: str
    topic: str = ""

    @property
    def label(self) -> str:
        if self.key == FILLER:
            return SWITCH if self.topic == "switch" else FILLER
        return f"{self.key}→{self.value}"


@dataclass(frozen=True)
class Query:
    """A recall query read from the state after the last token: the memory's answer at ``key`` should be
    ``expected`` (the latest value written for it)."""

    key: str
    expected: str
    topic: str
    why: str


# The scripted core, in order. Filler slots (None) are where extra filler goes when the story is stretched to T.
_CORE: tuple[Fact | None, ...] = (
    Fact("name", "Kim", "long"),
    Fact("Ada", "Paris", "A"),
    Fact("Bo", "Rome", "A"),
    None,
    Fact("Cy", "Oslo", "A"),
    None,
    Fact(FILLER, FILLER_VALUE, "switch"),
    Fact("Dee", "tea", "B"),
    Fact("Eve", "jazz", "B"),
    None,
    Fact("Dee", "coffee", "B"),
    None,
)
MIN_T = sum(f is not None for f in _CORE)  # the facts, the switch and the overwrite; filler comes on top

QUERIES: tuple[Query, ...] = (
    Query("name", "Kim", "long", "the long-lived fact, written first"),
    Query("Ada", "Paris", "A", "a topic-A fact, written before the switch"),
    Query("Dee", "coffee", "B", "the overwritten fact: tea first, then coffee"),
    Query("Eve", "jazz", "B", "a topic-B fact, never changed"),
)
OVERWRITE = QUERIES[2]
OVERWRITTEN_VALUE = "tea"

KEYS: tuple[str, ...] = ("name", "Ada", "Bo", "Cy", "Dee", "Eve", FILLER)  # key i is channel i while K ≥ 7
# Values are words, not colours: every chart draws them in the story's neutral styles, and a value called "blue" drawn
# in another colour would contradict its own name.
VALUES: tuple[str, ...] = ("Kim", "Paris", "Rome", "Oslo", "tea", "jazz", "coffee", FILLER_VALUE)
# The story every stage page runs by default (its size sliders start here) and the ledger's story rows use: one run,
# one number per quantity on every page.
DEFAULT_T, DEFAULT_K, DEFAULT_V = 32, 8, 8
# What the story's marks mean, in one line: the key under every story chart and the glossary say the same.
KEY_LINE = (
    f"{SWITCH} topic switch (the gate closes) · {FILLER} filler, no fact (writes {FILLER}→{FILLER_VALUE}) · "
    "a→b: key a written with value b"
)


def embeddings(n: int, dim: int, salt: int) -> tuple[np.ndarray, bool]:
    """``n`` deterministic unit vectors in ``dim`` dimensions, as [n, dim], and whether they are orthonormal.

    Unit vectors e_0 … e_{n−1} while n ≤ dim (each token owns one channel); otherwise fixed random unit vectors, which
    overlap. ``salt`` separates the key and value vocabularies.
    """
    checks.positive_int("dim", dim)
    if n <= dim:
        return np.eye(n, dim), True
    gen = np.random.default_rng([EMBED_SEED, salt, dim])
    x = gen.standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True), False


@dataclass(frozen=True)
class Story:
    """The story stretched to T tokens, with its embeddings in K (keys) and V (values) dimensions."""

    facts: tuple[Fact, ...]  # one per step
    K: int
    V: int
    key_emb: np.ndarray  # [len(vocab_keys), K]
    value_emb: np.ndarray  # [len(vocab_values), V]
    keys_fit: bool  # every key owns a channel (orthonormal keys); False: over capacity, keys overlap
    values_fit: bool
    # The story's own vocabulary and queries: the scripted story's by default, a written story's own
    # (lineage.teach.story_text, make_story's ``written``): key i owns state row i while the keys fit.
    vocab_keys: tuple[str, ...] = KEYS
    vocab_values: tuple[str, ...] = VALUES
    queries: tuple[Query, ...] = QUERIES
    written: bool = False  # written by a visitor (its length is its own: T follows the text)

    @property
    def T(self) -> int:
        return len(self.facts)

    @property
    def labels(self) -> list[str]:
        """One label per step, for time axes and frame names."""
        return [f.label for f in self.facts]

    @property
    def has_switch(self) -> bool:
        return any(f.topic == "switch" for f in self.facts)

    @property
    def switch_step(self) -> int:
        """The first topic switch (a story without one has no such step: check :attr:`has_switch`)."""
        return next(t for t, f in enumerate(self.facts) if f.topic == "switch")

    @property
    def overwrite(self) -> Query | None:
        """The query of the first key written with two different values (the scripted story's Dee), or None."""
        changed = [q for q in self.queries if len({f.value for f in self.facts if f.key == q.key}) > 1]
        return changed[0] if changed else None

    @property
    def overwritten_value(self) -> str | None:
        """The value the overwrite replaced last (the one written just before the final one)."""
        q = self.overwrite
        if q is None:
            return None
        values = [f.value for f in self.facts if f.key == q.key]
        return next(v for v in reversed(values) if v != q.expected)

    @property
    def overwrite_step(self) -> int:
        q = self.overwrite if self.overwrite is not None else OVERWRITE
        return max(t for t, f in enumerate(self.facts) if f.key == q.key)

    @property
    def long_lived(self) -> tuple[Query, ...]:
        """The queries of long-lived facts (the scripted story's name → Kim)."""
        return tuple(q for q in self.queries if q.topic == "long")

    def step_of(self, key: str, value: str) -> int:
        return next(t for t, f in enumerate(self.facts) if (f.key, f.value) == (key, value))

    @property
    def row_labels(self) -> list[str]:
        """Names of the K state rows: the key that owns each channel, or "ch i" when keys overlap or a row is spare."""
        owned = list(self.vocab_keys) if self.keys_fit else []
        return [owned[i] if i < len(owned) else f"ch {i}" for i in range(self.K)]

    @property
    def column_labels(self) -> list[str]:
        owned = list(self.vocab_values) if self.values_fit else []
        return [owned[j] if j < len(owned) else f"v{j}" for j in range(self.V)]

    def key_line(self, *, normaliser: bool = False) -> str:
        """One line saying what the story chart's marks mean (shown under every story chart)."""
        parts = [KEY_LINE]
        if normaliser:
            parts.append("z: the normaliser column (Σ φ(k), divides every read)")
        if any(label.startswith("ch ") for label in self.row_labels):
            spare = "a spare key channel" if self.keys_fit else "key channel i (keys overlap: over capacity)"
            parts.append(f"ch i: {spare}")
        return " · ".join(parts)

    def key(self, name: str) -> np.ndarray:
        return self.key_emb[self.vocab_keys.index(name)]

    def value(self, name: str) -> np.ndarray:
        return self.value_emb[self.vocab_values.index(name)]

    def inputs(self) -> tuple[np.ndarray, np.ndarray]:
        """Keys [T, K] and values [T, V] of every step (queries equal keys: each token asks for its own key)."""
        k = np.stack([self.key(f.key) for f in self.facts])
        v = np.stack([self.value(f.value) for f in self.facts])
        return k, v

    def gates(self, gate: str, alpha_keep: float, alpha_switch: float) -> np.ndarray | None:
        """Log-gates for a gate kind ("none" | "scalar" | "channel"): None, [T] or [T, K].

        Every token keeps ``alpha_keep``; the switch token keeps ``alpha_switch`` — in every channel for a scalar
        gate, and for a per-channel gate in every channel but the long-lived fact's, weighted by that key's share of
        each channel (exactly its own channel while keys fit). α = 0 is a wipe (log-gate −inf).
        """
        if gate not in ("none", "scalar", "channel"):
            raise ValueError(f"gate must be 'none', 'scalar' or 'channel', got {gate!r}")
        for name, a in (("alpha_keep", alpha_keep), ("alpha_switch", alpha_switch)):
            if not (isinstance(a, int | float) and 0.0 <= a <= 1.0):
                raise ValueError(f"{name} must be a number in [0, 1], got {a!r}")
        if gate == "none":
            return None
        alpha = np.full((self.T, self.K), float(alpha_keep))
        if gate == "scalar":
            alpha[[t for t, f in enumerate(self.facts) if f.topic == "switch"]] = alpha_switch
        else:
            # the long-lived keys' share of each channel (exactly their own channels while the keys fit)
            held = np.minimum(sum((self.key(q.key) ** 2 for q in self.long_lived), np.zeros(self.K)), 1.0)
            switches = [t for t, f in enumerate(self.facts) if f.topic == "switch"]
            alpha[switches] = alpha_switch + (alpha_keep - alpha_switch) * held
        with np.errstate(divide="ignore"):
            g = np.log(alpha)  # −inf where α = 0
        return g[:, 0] if gate == "scalar" else g


def make_story(T: int = 12, K: int = len(KEYS), V: int = len(VALUES), written: WrittenStory | None = None) -> Story:
    """The story stretched to ``T`` tokens (extra filler spread over the filler slots), embedded in K and V dims.

    ``written``: a story a visitor wrote (:func:`lineage.teach.story_text.parse_story`) instead of the scripted one. It
    runs as written, at its own length (T is ignored), with its own keys, values and queries; each of its keys (and
    the filler) owns a state row while they fit in K, and overlap past it, as the scripted story's do.
    """
    if written is not None:
        return _written_story(written, K, V)
    checks.positive_int("T", T)
    if T < MIN_T:
        raise ValueError(f"the story needs T ≥ {MIN_T} tokens (its facts, switch and overwrite), got T = {T}")
    slots = [i for i, f in enumerate(_CORE) if f is None]
    extra = T - MIN_T
    per_slot = [extra // len(slots) + (j < extra % len(slots)) for j in range(len(slots))]
    filler = Fact(FILLER, FILLER_VALUE)
    facts: list[Fact] = []
    for i, f in enumerate(_CORE):
        facts += [filler] * per_slot[slots.index(i)] if f is None else [f]
    key_emb, keys_fit = embeddings(len(KEYS), K, salt=0)
    value_emb, values_fit = embeddings(len(VALUES), V, salt=1)
    return Story(tuple(facts), K, V, key_emb, value_emb, keys_fit, values_fit)


def _written_story(written: WrittenStory, K: int, V: int) -> Story:
    facts = tuple(Fact(t.key, t.value, t.topic) for t in written.tokens)
    vocab_keys = (*written.keys, FILLER)
    vocab_values = (*written.values, FILLER_VALUE)
    queries = tuple(Query(a.key, a.expected, a.topic, a.why) for a in written.asks)
    key_emb, keys_fit = embeddings(len(vocab_keys), K, salt=0)
    value_emb, values_fit = embeddings(len(vocab_values), V, salt=1)
    return Story(facts, K, V, key_emb, value_emb, keys_fit, values_fit, vocab_keys, vocab_values, queries, True)


def story_for(T: int, K: int = len(KEYS), V: int = len(VALUES), written: str = "") -> Story:
    """The story a stage page runs: the scripted one stretched to T, or — ``written``, a story in its link form
    (:func:`lineage.teach.story_text.story_link`), already read without a problem — that story at its own length."""
    if not written:
        return make_story(T, K, V)
    parsed, problems = parse_story(written, max_tokens=len(written))  # never more tokens than characters
    if parsed is None:
        raise ValueError(f"the written story cannot be read: {problems[0].why}")
    return make_story(K=K, V=V, written=parsed)


def scripted_text(T: int = len(_CORE)) -> str:
    """The scripted story at T tokens written out in the story syntax (its queries included): what the story form
    shows first. Read back (:func:`lineage.teach.story_text.parse_story`) it runs exactly as the scripted story."""
    story = make_story(T)
    tokens = tuple(Token(f.key, f.value, f.topic) for f in story.facts)
    return WrittenStory(tokens, tuple(Ask(q.key, q.expected, q.topic, q.why) for q in story.queries)).text()


def default_story() -> Story:
    """The story at the stage pages' default sizes (T = DEFAULT_T, K = DEFAULT_K, V = DEFAULT_V)."""
    return make_story(DEFAULT_T, DEFAULT_K, DEFAULT_V)


def story_tensors(
    story: Story, gate: str, *, alpha_keep: float = 1.0, alpha_switch: float = 0.0, beta: float | None = 1.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """The story as op inputs q, k, v [1, 1, T, ·], g ([1, 1, T] or [1, 1, T, K] or None), beta ([1, 1, T] or None),
    fp32 on the CPU, in the layout of :func:`lineage.inputs.rule_inputs`. ``beta`` None means an additive
    write."""
    k, v = story.inputs()

    def as_t(x: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.ascontiguousarray(x), dtype=torch.float32)[None, None]

    g = story.gates(gate, alpha_keep, alpha_switch)
    b = None
    if beta is not None:
        if not 0.0 <= beta <= 1.0 or math.isnan(beta):
            raise ValueError(f"beta must lie in [0, 1], got {beta}")
        b = torch.full((1, 1, story.T), float(beta))
    return as_t(k), as_t(k), as_t(v), None if g is None else as_t(g), b


def token_vectors(story: Story, d_model: int) -> np.ndarray:
    """The story's tokens as model inputs [T, d_model] for the softmax stages: one fixed vector per distinct token
    (unit vectors while they fit, fixed random ones otherwise), scaled to entries of unit variance like the random
    inputs they replace. The same token is the same vector wherever it occurs."""
    vocab = list(dict.fromkeys(story.labels))
    emb, _ = embeddings(len(vocab), d_model, salt=2)
    return emb[[vocab.index(label) for label in story.labels]] * math.sqrt(d_model)
