"""The story every stage page runs on: a short scripted text of facts, one overwrite, a topic switch, filler.

Random vectors make every stage's numbers correct and none of its pictures readable. The story gives the steps and
the state rows names, so each page can show its own claim on the same tokens:

    step  token            what it is
    0     name → Kim       a long-lived fact (asked for at the very end)
    1–4   Ada → Paris …    topic A: three facts, filler between them
    ...   ‖                the topic switch (a filler token whose gate closes in the gated stages)
    ...   Dee → red …      topic B: two facts
    ...   Dee → green      the overwrite: Dee's value changes
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

from lineage import _checks as checks

FILLER = "…"  # the filler token's key; it writes FILLER_VALUE
FILLER_VALUE = "filler"
SWITCH = "‖"  # the topic-switch token: a filler token whose gate closes in the gated stages
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
    Fact("Dee", "red", "B"),
    Fact("Eve", "blue", "B"),
    None,
    Fact("Dee", "green", "B"),
    None,
)
MIN_T = sum(f is not None for f in _CORE)  # the facts, the switch and the overwrite; filler comes on top

QUERIES: tuple[Query, ...] = (
    Query("name", "Kim", "long", "the long-lived fact, written first"),
    Query("Ada", "Paris", "A", "a topic-A fact, written before the switch"),
    Query("Dee", "green", "B", "the overwritten fact: red first, then green"),
    Query("Eve", "blue", "B", "a topic-B fact, never changed"),
)
OVERWRITE = QUERIES[2]
OVERWRITTEN_VALUE = "red"

KEYS: tuple[str, ...] = ("name", "Ada", "Bo", "Cy", "Dee", "Eve", FILLER)  # key i is channel i while K ≥ 7
VALUES: tuple[str, ...] = ("Kim", "Paris", "Rome", "Oslo", "red", "blue", "green", FILLER_VALUE)


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
    key_emb: np.ndarray  # [len(KEYS), K]
    value_emb: np.ndarray  # [len(VALUES), V]
    keys_fit: bool  # every key owns a channel (orthonormal keys); False: over capacity, keys overlap
    values_fit: bool

    @property
    def T(self) -> int:
        return len(self.facts)

    @property
    def labels(self) -> list[str]:
        """One label per step, for time axes and frame names."""
        return [f.label for f in self.facts]

    @property
    def switch_step(self) -> int:
        return next(t for t, f in enumerate(self.facts) if f.topic == "switch")

    @property
    def overwrite_step(self) -> int:
        return max(t for t, f in enumerate(self.facts) if f.key == OVERWRITE.key)

    def step_of(self, key: str, value: str) -> int:
        return next(t for t, f in enumerate(self.facts) if (f.key, f.value) == (key, value))

    @property
    def row_labels(self) -> list[str]:
        """Names of the K state rows: the key that owns each channel, or "ch i" when keys overlap or a row is spare."""
        owned = list(KEYS) if self.keys_fit else []
        return [owned[i] if i < len(owned) else f"ch {i}" for i in range(self.K)]

    @property
    def column_labels(self) -> list[str]:
        owned = list(VALUES) if self.values_fit else []
        return [owned[j] if j < len(owned) else f"v{j}" for j in range(self.V)]

    def key(self, name: str) -> np.ndarray:
        return self.key_emb[KEYS.index(name)]

    def value(self, name: str) -> np.ndarray:
        return self.value_emb[VALUES.index(name)]

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
            alpha[self.switch_step] = alpha_switch
        else:
            held = self.key("name") ** 2  # the long-lived key's share of each channel (sums to 1)
            alpha[self.switch_step] = alpha_switch + (alpha_keep - alpha_switch) * held
        with np.errstate(divide="ignore"):
            g = np.log(alpha)  # −inf where α = 0
        return g[:, 0] if gate == "scalar" else g


def make_story(T: int = 12, K: int = len(KEYS), V: int = len(VALUES)) -> Story:
    """The story stretched to ``T`` tokens (extra filler spread over the filler slots), embedded in K and V dims."""
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


def story_tensors(
    story: Story, gate: str, *, alpha_keep: float = 1.0, alpha_switch: float = 0.0, beta: float | None = 1.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """The story as op inputs q, k, v [1, 1, T, ·], g ([1, 1, T] or [1, 1, T, K] or None), beta ([1, 1, T] or None),
    fp32 on the CPU, in the layout of :func:`lineage.demo.make_inputs`. ``beta`` None means an additive write."""
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
