"""Each stage's claim, computed on the story, and the ledger of every number the article states.

A stage page opens with one sentence (what the stage claims), one number that proves it, computed from the live run
on the story (:mod:`lineage.teach.story`), and a sentence computed from the result that says whether the claim holds
at the
chosen settings and, if not, why. The claim functions read any run, whatever its mechanism: a claim is only evidence
if swapping the mechanism changes the number (the tests do exactly that).

The ledger (:func:`ledger`) lists the article's numbers with the app's own value — computed from cited configs,
computed live, or quoted with its source where the app cannot compute it — and a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lineage.inputs import as_recurrence, run_mechanism
from lineage.lab import SHARP_SCALE
from lineage.measure import footprints
from lineage.mechanisms import mechanism
from lineage.ops.linear_attention import NORMALIZER_EPS
from lineage.stages import Stage, stage
from lineage.teach import stage_runs
from lineage.teach.story import FILLER, SWITCH, Fact, Query, Story, story_tensors, token_vectors

HELD_TOL = 0.05  # a fact counts as held when its share of the read is ≥ 1 − HELD_TOL, gone when ≤ HELD_TOL
# Linear attention's φ on the story: relu keeps the story's one-hot keys apart, so the overwritten fact reads back as
# the textbook blend of its old and new value; the paper's elu(x) + 1 gives every key a floor of 1 in every channel,
# and the filler (most of the story's tokens) then swamps every read. The page keeps elu(x) + 1 one click away.
STORY_FEATURE_MAP = "relu"
EXACT_TOL = 1e-3  # an answer counts as exact when its relative error is below this
HYBRID_STATE_K = 4  # the hybrid page's KDA state: 4 key channels for the story's 7 keys, over capacity on purpose


# ---------------------------------------------------------------------------------------------------------------
# Running the story
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Knobs:
    """The story's settings a page exposes: write strength, the gate on ordinary tokens and at the switch."""

    beta: float = 1.0  # delta-rule write strength (ignored by additive writes)
    alpha_keep: float = 1.0  # every ordinary token keeps this much of the state (gated stages)
    alpha_switch: float = 0.0  # the switch token keeps this much (0: a wipe); see Story.gates
    feature_map: str = STORY_FEATURE_MAP  # linear attention's φ


def _story_inputs(s: Stage, story: Story, knobs: Knobs) -> tuple:
    """The story as the inputs of stage ``s`` (a linear-memory row of the stage table), with the knobs' gates and β."""
    if not s.in_grid:
        raise ValueError(f"stage {s.key!r} is not a linear-memory stage")
    # the op contract: β only where the op takes it, or takes unit gates that are β on every channel (Gated DeltaNet-2)
    beta = knobs.beta if mechanism(s.key).writes_with_strength else None
    return story_tensors(story, s.gate, alpha_keep=knobs.alpha_keep, alpha_switch=knobs.alpha_switch, beta=beta)


def run_story(
    stage_key: str, story: Story, knobs: Knobs = Knobs(), *, chunk_size: int = 16, repeats: int = 1
) -> stage_runs.StageRun:
    """Run a linear-memory stage on the story: reference recurrence with its trace, chunked and parallel forms."""
    s = stage(stage_key)
    inputs = _story_inputs(s, story, knobs)
    return stage_runs.run_stage(
        stage_key,
        story.T,
        story.K,
        story.V,
        chunk_size=min(chunk_size, story.T),
        feature_map=knobs.feature_map,
        repeats=repeats,
        inputs=inputs,
    )


@dataclass(frozen=True)
class StoryTrace:
    """The reference recurrence alone on the story (no fast forms, no timing): what a comparison line needs."""

    stage: str
    k: np.ndarray  # [T, K] keys as written (after φ for linear attention)
    states: np.ndarray  # [T, K, V(+1)]


Run = stage_runs.StageRun | StoryTrace  # what the claims read: a page's full run, or a comparison's trace


def trace_story(stage_key: str, story: Story, knobs: Knobs = Knobs()) -> StoryTrace:
    """Run only the reference recurrence of a stage on the story (for the comparison beside a page's own run): the
    traced loop of :func:`lineage.inputs.run_mechanism` on the inputs :func:`run_story` gives its reference."""
    s = stage(stage_key)
    m = mechanism(s.key)
    q, k, v, g, beta = _story_inputs(s, story, knobs)
    q, k, v = as_recurrence(m, q, k, v, knobs.feature_map)  # as stage_runs.run_stage: φ on q and k, z a column of ones
    _, _, trace = run_mechanism(m, q, k, v, g, beta, trace=True)
    return StoryTrace(s.key, k[0, 0].numpy(), trace.states[0, 0])


def run_softmax_story(
    story: Story, n_heads: int = 4, head_dim: int = 16, seed: int = 0, *, block_size: int | None = None
) -> stage_runs.SoftmaxRun:
    """A GPT-2-style attention layer generating the story's tokens with and without a KV cache (``seed`` draws the
    layer's weights; the tokens are the story's)."""
    return stage_runs.run_softmax(
        story.T, n_heads, head_dim, seed, block_size=block_size, inputs=token_vectors(story, n_heads * head_dim)
    )


# ---------------------------------------------------------------------------------------------------------------
# Reading the memory back
# ---------------------------------------------------------------------------------------------------------------


def read(run: Run, story: Story, key: str, step: int) -> np.ndarray:
    """The memory's answer at ``key`` from the state after ``step``: Sᵀk, normalised for linear attention. [V]"""
    t_key = next((t for t, f in enumerate(story.facts) if f.key == key), None)
    if t_key is None:
        raise ValueError(f"key {key!r} is not in the story")
    if not 0 <= step < story.T:
        raise ValueError(f"step must lie in [0, {story.T - 1}], got {step}")
    k = run.k[t_key].astype(np.float64)  # the key as the run wrote it (after φ for linear attention)
    out = run.states[step].astype(np.float64).T @ k
    if mechanism(run.stage).keeps_normaliser:  # the last column is the normaliser z
        return out[:-1] / (out[-1] + NORMALIZER_EPS)
    return out


def held(answer: np.ndarray, story: Story, value: str) -> float:
    """How much of ``value`` the answer reads back clean: its coefficient when the answer is written as a mix of the
    story's values (least squares), less every other value mixed in, clipped to [0, 1]. 1 = the right value and
    nothing else; a fact faded to 40% = 0.4; a blend of old and new (1.00·tea + 1.00·coffee) = 0: a blend is not
    the answer held, it is a blend."""
    mix = blend(answer, story)
    rest = sum(abs(c) for name, c in mix.items() if name != value)
    return float(np.clip(mix[value] - rest, 0.0, 1.0))


def is_blend(answer: np.ndarray, story: Story, value: str) -> bool:
    """Whether other values make up more than HELD_TOL of the answer (it reads back as a blend, not as ``value``)."""
    return sum(abs(c) for name, c in blend(answer, story).items() if name != value) > HELD_TOL


def blend(answer: np.ndarray, story: Story) -> dict[str, float]:
    """The answer as a mix of the story's value vectors: {value: coefficient} (least squares)."""
    coef, *_ = np.linalg.lstsq(story.value_emb.T, answer, rcond=None)
    return dict(zip(story.vocab_values, coef.tolist(), strict=True))


def error(answer: np.ndarray, story: Story, value: str) -> float:
    """‖answer − v‖ / ‖v‖: 0 is exact, about 1 means the answer has nothing of v."""
    v = story.value(value)
    return float(np.linalg.norm(answer - v) / np.linalg.norm(v))


def _overwrite(story: Story) -> Query:
    if story.overwrite is None:
        raise ValueError(f"the story has no overwrite (no key written with two values); {NEEDS_OVERWRITE}")
    return story.overwrite


def _long_lived(story: Story) -> Query:
    if not story.long_lived:
        raise ValueError(f"the story has no long-lived fact; {NEEDS_LONG}")
    return story.long_lived[0]


def overwrite_error(run: Run, story: Story) -> float:
    """Error of the answer for the overwritten key after the last token (expected: the newer value)."""
    q = _overwrite(story)
    return error(read(run, story, q.key, story.T - 1), story, q.expected)


def topic_a_facts(story: Story) -> list[Fact]:
    """Topic A's facts that no later token rewrites (each its key's latest value): what the switch should clear. A
    key written again after the switch belongs to the new topic."""
    last = {f.key: t for t, f in enumerate(story.facts)}
    return [f for t, f in enumerate(story.facts) if f.topic == "A" and last[f.key] == t]


def topic_a_held(run: Run, story: Story, *, after_switch: bool = True) -> float:
    """Mean share of topic A's facts the memory holds after the last token (or just before the switch)."""
    facts = topic_a_facts(story)
    if not story.has_switch or not facts:
        raise ValueError(f"the story has no topic switch with a fact before it; {NEEDS_SWITCH}")
    step = story.T - 1 if after_switch else story.switch_step - 1
    return float(np.mean([held(read(run, story, f.key, step), story, f.value) for f in facts]))


def long_fact_held(run: Run, story: Story) -> float:
    """Share of the long-lived fact (the first marked with *) the memory holds after the last token."""
    q = _long_lived(story)
    return held(read(run, story, q.key, story.T - 1), story, q.expected)


def held_over_time(run: Run, story: Story) -> dict[str, np.ndarray]:
    """For every query, the share of its expected answer the memory holds after each step ([T], NaN before the
    fact is written)."""
    curves = {}
    for q in story.queries:
        first = story.step_of(q.key, q.expected)
        curve = np.full(story.T, np.nan)
        for t in range(first, story.T):
            curve[t] = held(read(run, story, q.key, t), story, q.expected)
        curves[f"{q.key} → {q.expected}"] = curve
    return curves


def hybrid_needle(story: Story, kda_run: Run) -> dict[str, float]:
    """The needle (topic A's first fact, or the story's first fact that no later token rewrites) read after the last
    token two ways: from the KDA state, and by softmax attention over the cache of every key and value (the MLA
    layer's lookup), at the lab's sharp scale."""
    kept = topic_a_facts(story) or [f for f in story.facts if f.key != FILLER and _is_latest(story, f)]
    needle = kept[0]
    k, v = story.inputs()
    scores = SHARP_SCALE * (k @ story.key(needle.key))  # one query against every cached key
    weights = np.exp(scores - scores.max())
    softmax_read = (weights / weights.sum()) @ v
    return dict(
        needle=f"{needle.key} → {needle.value}",
        kda=error(read(kda_run, story, needle.key, story.T - 1), story, needle.value),
        softmax=error(softmax_read, story, needle.value),
    )


def _is_latest(story: Story, fact: Fact) -> bool:
    """Whether ``fact`` is the last write of its key (its value is the one a query expects)."""
    return [f.value for f in story.facts if f.key == fact.key][-1] == fact.value


# ---------------------------------------------------------------------------------------------------------------
# The claim of each stage page
# ---------------------------------------------------------------------------------------------------------------

# What a written story must add before a stage can test its claim on it (said instead of a number that means nothing)
NEEDS_OVERWRITE = "add a second value for one key, e.g. `Dee = coffee` after `Dee = tea`"
NEEDS_SWITCH = "add a topic switch `|` with a fact before it that no later token rewrites, e.g. `Ada = Paris, |`"
NEEDS_LONG = "mark one fact long-lived with `*`, e.g. `*name = Kim` first"


@dataclass(frozen=True)
class StageClaim:
    """What a stage page states first: the claim, the number that proves it, and whether it holds here — or, when the
    story lacks the case the claim is about (``missing``), what to add to it instead of a number."""

    stage: str
    claim: str  # one sentence
    label: str  # what the number is
    value: float
    shown: str  # the number as shown
    holds: bool
    verdict: str  # a sentence computed from the result: why it holds, or why it fails at this setting
    compare: str  # the same number for the mechanism before it, on the same story
    missing: str = ""  # non-empty: this story cannot test the claim; the sentence says what to add

    @property
    def testable(self) -> bool:
        return not self.missing


def _untestable(stage_key: str, claim: str, label: str, story: Story, *needs: str) -> StageClaim:
    """The claim on a story that lacks its case: no number, no verdict, what to add."""
    lacks = "; and ".join(needs)
    missing = f"To test it, {lacks}." + _capacity_note(story)
    return StageClaim(stage_key, claim, label, math.nan, "—", False, missing, "", missing)


def percent(x: float) -> str:
    return f"{x:.0%}"


def _mix(answer: np.ndarray, story: Story, n: int = 3) -> str:
    """The answer as its ``n`` largest value coefficients, signed with a true minus: "0.69·Oslo − 0.48·jazz"."""
    parts = [(v, c) for v, c in sorted(blend(answer, story).items(), key=lambda kv: -abs(kv[1]))[:n] if abs(c) >= 0.005]
    if not parts:
        return "≈ 0 (no value)"
    text = ""
    for i, (value, c) in enumerate(parts):
        sign = ("−" if c < 0 else "") if i == 0 else (" − " if c < 0 else " + ")
        text += f"{sign}{abs(c):.2f}·{value}"
    return text


def _capacity_note(story: Story) -> str:
    """Over capacity — more keys than K rows, or values than V columns — the embeddings overlap: said with the claim."""
    note = ""
    if not story.keys_fit:
        note += (
            f" The state is over capacity: the story's {len(story.vocab_keys)} keys share K = {story.K} channels, so "
            "they overlap and every write disturbs the others."
        )
    if not story.values_fit:
        note += (
            f" Its {len(story.vocab_values)} values share V = {story.V} columns, so they overlap too and a read is a "
            "mix even when the key is clean."
        )
    return note


FEATURE_MAP_NAMES = {"relu": "φ = relu", "elu1": "φ = elu + 1, the paper's"}
LINEAR_CLAIM = (
    "Linear attention keeps a fixed-size memory, but it can only add: an overwritten fact reads back as a blend."
)
DELTANET_CLAIM = (
    "DeltaNet updates: it reads what the memory holds at a key and writes only the correction, so an overwritten fact "
    "reads back as the new value."
)


def linear_claim(run: Run, story: Story, deltanet_run: Run, feature_map: str = STORY_FEATURE_MAP) -> StageClaim:
    if story.overwrite is None:
        return _untestable(
            "linear_attention", LINEAR_CLAIM, "error of the answer after an overwrite", story, NEEDS_OVERWRITE
        )
    q = story.overwrite
    err = overwrite_error(run, story)
    answer = read(run, story, q.key, story.T - 1)
    holds = err > 0.3
    phi = FEATURE_MAP_NAMES.get(feature_map, f"φ = {feature_map}")
    verdict = (
        f"Asked for {q.key} after it changed from {story.overwritten_value} to {q.expected}, linear "
        f"attention ({phi}) answers a blend, {_mix(answer, story)}: every write was added on top of the others, the "
        f"old value included."
        if holds
        else f"At these settings ({phi}) the blend is small (error {err:.2f}): the keys barely overlap."
    )
    if holds and feature_map == "elu1":
        verdict += (
            f" elu + 1 is at least 1 in every channel, so every key overlaps every other and the filler ({FILLER}), "
            "most of the story's tokens, outweighs both values: choose φ = relu to see the blend itself."
        )
    return StageClaim(
        "linear_attention",
        LINEAR_CLAIM,
        f"error of the answer for {q.key} after the overwrite",
        err,
        f"{err:.2f}",
        holds,
        verdict + _capacity_note(story),
        f"DeltaNet on the same story: {overwrite_error(deltanet_run, story):.3f}",
    )


def deltanet_claim(run: Run, story: Story, linear_run: Run, beta: float) -> StageClaim:
    if story.overwrite is None:
        return _untestable("deltanet", DELTANET_CLAIM, "error of the answer after an overwrite", story, NEEDS_OVERWRITE)
    q = story.overwrite
    err = overwrite_error(run, story)
    answer = read(run, story, q.key, story.T - 1)
    holds = err < EXACT_TOL
    if holds:
        verdict = (
            f"Before writing {q.key} → {q.expected}, DeltaNet read {story.overwritten_value} at the key and "
            f"wrote only the difference: the answer is now {_mix(answer, story)}."
        )
    elif beta < 1:
        verdict = (
            f"With β = {beta:g} each write closes only {beta:.0%} of the gap, so the answer is still a mix, "
            f"{_mix(answer, story)} (error {err:.3f}); β = 1 replaces the old value outright."
        )
    else:
        verdict = f"The answer is {_mix(answer, story)} (error {err:.3f})."
    return StageClaim(
        "deltanet",
        DELTANET_CLAIM,
        f"error of the answer for {q.key} after the overwrite",
        err,
        f"{err:.3f}",
        holds,
        verdict + _capacity_note(story),
        f"linear attention ({FEATURE_MAP_NAMES[STORY_FEATURE_MAP]}) on the same story: "
        f"{overwrite_error(linear_run, story):.2f}",
    )


def can_forget(story: Story) -> bool:
    """Whether the story has a topic switch with a fact before it that no later token rewrites."""
    return story.has_switch and bool(topic_a_facts(story))


def _forget_verdict(before: float, after: float, forgot: bool, run: Run, story: Story) -> str:
    """Why topic A is (or is not) gone after the switch, read from the shares before and after it."""
    if forgot:
        went = (
            f"so the long-lived fact went too ({percent(long_fact_held(run, story))} left)."
            if story.long_lived
            else "so it clears every fact alike."
        )
        return (
            f"Topic A was held ({percent(before)}) until the switch token closed the gate; after it, {percent(after)} "
            f"is left. The gate is one number for the head, {went}"
        )
    if before < 1 - HELD_TOL and after <= HELD_TOL:
        return (
            f"Topic A had already faded to {percent(before)} before the switch, and {percent(after)} is left after "
            "it: the gate on every token is forgetting everything as it goes, not the old topic at the switch (slide "
            "the gate on every token back to 1)."
        )
    return (
        f"Topic A is still {percent(after)} held after the switch: the gate at the switch is not small enough to clear "
        "it (slide it towards 0)."
    )


MAMBA2_CLAIM = (
    "Mamba-2 can forget: one gate per head decays the whole memory, so a topic switch clears what came before."
)


def forget_claim(stage_key: str, run: Run, story: Story, ungated_run: Run) -> StageClaim:
    """Mamba-2: the gate at the switch clears topic A (and, being one number, everything else). Gated DeltaNet: the
    same gate and the delta rule in one run — topic A forgotten *and* the overwritten fact edited (both numbers)."""
    additive = stage(stage_key).rule == "additive"  # Mamba-2; Gated DeltaNet writes with the delta rule
    if additive and not can_forget(story):
        return _untestable(stage_key, MAMBA2_CLAIM, "share of topic A still held after the switch", story, NEEDS_SWITCH)
    q = story.overwrite
    gdn_claim = (
        "Gated DeltaNet forgets and edits in one run: the gate clears the old topic at the switch, and the delta rule "
        f"replaces {q.key if q else 'a key'}'s value with the new one."
    )
    if not additive and (q is None or not can_forget(story)):
        needs = [n for n, lacks in ((NEEDS_SWITCH, not can_forget(story)), (NEEDS_OVERWRITE, q is None)) if lacks]
        return _untestable(stage_key, gdn_claim, f"topic A left after {SWITCH} · the edited key's error", story, *needs)
    before, after = topic_a_held(run, story, after_switch=False), topic_a_held(run, story)
    kept = topic_a_held(ungated_run, story)
    forgot = after <= HELD_TOL and before - after >= 0.5  # held before the switch, gone after it
    verdict = _forget_verdict(before, after, forgot, run, story)
    if additive:
        if q is not None:
            answer = read(run, story, q.key, story.T - 1)
            verdict += f" Its writes still only add: {q.key}'s answer is {_mix(answer, story)}."
        return StageClaim(
            stage_key,
            MAMBA2_CLAIM,
            "share of topic A still held after the switch",
            after,
            percent(after),
            forgot,
            verdict + _capacity_note(story),
            f"the same writes with the gate open (α = 1) on the same story: {percent(kept)}",
        )
    err = overwrite_error(run, story)
    edited = err < EXACT_TOL
    if edited:
        answer = _mix(run_answer(run, story), story)
        verdict += f" In the same run the delta rule edited {q.key}: the answer is {answer}."
    else:
        verdict += (
            f" {q.key}'s answer is {_mix(run_answer(run, story), story)} (error {err:.3f}): the edit is not "
            "clean at these settings (β below 1, or a gate below 1 fading the new value too)."
        )
    return StageClaim(
        stage_key,
        gdn_claim,
        f"topic A left after {SWITCH} · {q.key}'s error",
        after,
        f"{percent(after)} · {err:.3f}",
        forgot and edited,
        verdict + _capacity_note(story),
        f"DeltaNet (no gate) on the same story: {percent(kept)} of topic A held after the switch",
    )


def overwrite_mix(run: Run, story: Story) -> str:
    """The overwritten key's answer after the last token, as a mix of the story's values ("0.50·tea + 0.50·coffee")."""
    return _mix(run_answer(run, story), story)


def run_answer(run: Run, story: Story) -> np.ndarray:
    """The memory's answer for the overwritten key after the last token."""
    return read(run, story, _overwrite(story).key, story.T - 1)


GLA_CLAIM = "GLA gives every key channel its own gate, so the memory can drop one topic and keep a long-lived fact."
KDA_CLAIM = (
    "KDA keeps a long-lived fact in its slow channel while the fast channels turn over, and still edits with the delta "
    "rule."
)


def channel_claim(stage_key: str, run: Run, story: Story, scalar_run: Run) -> StageClaim:
    """GLA and KDA: per-channel gates clear topic A's channels and keep the long-lived fact's."""
    additive = stage(stage_key).rule == "additive"  # GLA; KDA writes with the delta rule
    claim = GLA_CLAIM if additive else KDA_CLAIM
    if not story.long_lived or not can_forget(story):
        lacks = ((NEEDS_LONG, not story.long_lived), (NEEDS_SWITCH, not can_forget(story)))
        needs = [need for need, lacking in lacks if lacking]
        return _untestable(stage_key, claim, "share of the long-lived fact still held at the end", story, *needs)
    long_held, a_after = long_fact_held(run, story), topic_a_held(run, story)
    scalar_long = long_fact_held(scalar_run, story)
    holds = long_held >= 1 - HELD_TOL and a_after <= HELD_TOL
    q = story.long_lived[0]
    if holds:
        verdict = (
            f"At the switch, topic A's channels closed ({percent(a_after)} of topic A left) while the channel of "
            f"{q.key} → {q.expected} stayed open: {percent(long_held)} of it is still there."
        )
    else:
        verdict = (
            f"Here the long-lived fact keeps {percent(long_held)} and topic A {percent(a_after)}: per-channel gates "
            "only separate them when the slow channel stays near 1 and the others close at the switch."
        )
    edited = story.overwrite
    if additive:
        if edited is not None:
            answer = read(run, story, edited.key, story.T - 1)
            verdict += f" GLA's writes still only add: {edited.key}'s answer is {_mix(answer, story)}."
        prev = "Mamba-2 (one gate)"
    else:
        if edited is not None:
            err = overwrite_error(run, story)
            verdict += f" The delta rule edits as before: {edited.key}'s answer has error {err:.3f}."
        prev = "Gated DeltaNet (one gate)"
    return StageClaim(
        stage_key,
        claim,
        f"share of {q.key} → {q.expected} still held at the end",
        long_held,
        percent(long_held),
        holds,
        verdict + _capacity_note(story),
        f"{prev} on the same story: {percent(scalar_long)}",
    )


def hybrid_claim(needle: dict[str, float], story: Story | None = None) -> StageClaim:
    """The needle's two errors (:func:`hybrid_needle`) on ``story`` (default: the scripted story's 7 keys)."""
    n_keys = 7 if story is None else len(story.vocab_keys)
    holds = needle["softmax"] < 0.1 < needle["kda"]
    verdict = (
        f"With {HYBRID_STATE_K} key channels for {n_keys} keys, KDA's state blurs {needle['needle']} (error "
        f"{needle['kda']:.2f}); the softmax layer looks it up in its cache (error {needle['softmax']:.3f})."
    )
    if not holds:
        verdict += " At these settings the difference is small."
        if story is not None and story.keys_fit:
            verdict += (
                f" Your story's {n_keys} keys (the filler's included) fit the state's {HYBRID_STATE_K} rows, so "
                "nothing blurs: write more distinct keys than that."
            )
    return StageClaim(
        "hybrid",
        "The hybrid keeps a few softmax layers because a fixed state blurs details that a cache finds exactly.",
        f"needle {needle['needle']}: softmax layer's error",
        needle["softmax"],
        f"{needle['softmax']:.3f}",
        holds,
        verdict,
        f"KDA state alone: {needle['kda']:.2f}",
    )


def gpt2_claim(run: stage_runs.SoftmaxRun, story: Story) -> StageClaim:
    ratio = run.rows_recompute / run.rows_cached
    return StageClaim(
        "gpt2",
        "GPT-2 without a cache recomputes every earlier token's key and value for each new token: the work grows "
        "as N².",
        f"Q/K/V rows projected to generate the story's {story.T} tokens (no cache vs cache)",
        float(run.rows_recompute),
        f"{run.rows_recompute:,} vs {run.rows_cached:,}",
        run.rows_recompute == story.T * (story.T + 1) // 2,
        f"Counted by the generation loop: {ratio:.1f}× the rows a cache needs, for the same outputs (they differ "
        f"by {run.err_recompute:.1e}).",
        f"with a KV cache: {run.rows_cached:,} rows",
    )


def growth(bytes_per_step: Sequence[int]) -> float:
    """Memory held after the last step over memory after the first: T for a cache, 1 for a fixed state."""
    b = np.asarray(bytes_per_step, dtype=np.float64)
    return float(b[-1] / b[0])


def kv_cache_claim(run: stage_runs.SoftmaxRun, story: Story) -> StageClaim:
    """The cache of head 0 against a fixed state of the same head width (head dim × head dim numbers, fp32)."""
    cache = run.trace.cache_bytes
    g = growth(cache)
    d = run.head_dim
    state_bytes = d * d * 4
    return StageClaim(
        "kv_cache",
        "A KV cache computes each key and value once, but it keeps all of them: it grows with every token and every "
        "step reads all of it.",
        f"cache of head 0 after the story's {story.T} tokens",
        float(cache[-1]),
        f"{int(cache[-1]):,} B",
        g > 1.5,
        f"{int(cache[0]):,} bytes after the first token, {int(cache[-1]):,} after the last: {g:.0f}× — one key and "
        f"one value more per token. A fixed {d} × {d} state of the same head width holds {state_bytes:,} bytes at "
        "every step.",
        f"a fixed {d} × {d} fp32 state (head 0's width): {state_bytes:,} B at every step",
    )


def step_sentences(run: Run, story: Story) -> list[str]:
    """One sentence per step for the story chart: the token, what the gate did, and how much of each query's answer
    the memory holds after it (all read from the run)."""
    curves = held_over_time(run, story)
    g = getattr(run, "g", None)
    out = []
    for t, fact in enumerate(story.facts):
        s = f"<b>Step {t}</b>: {_TOKEN_NAMES.get(fact.label, fact.label)}"
        if g is not None and np.any(g[t] < 0):
            lo, hi = np.exp(g[t]).min(), np.exp(g[t]).max()
            kept = f"α = {lo:.2f}" if hi - lo < 1e-6 else f"α from {lo:.2f} to {hi:.2f}"
            s += f" — the gate keeps {kept}"
        shown = []
        for q, c in zip(story.queries, curves.values(), strict=True):
            if np.isfinite(c[t]):
                answer = read(run, story, q.key, t)
                blended = is_blend(answer, story, q.expected)
                shown.append(f"{q.key} {_mix(answer, story, 2)} (blend)" if blended else f"{q.key} {c[t]:.0%}")
        if shown:
            s += "<br>read back: " + ", ".join(shown)
        out.append(s)
    return out


_TOKEN_NAMES = {SWITCH: f"{SWITCH} (the topic switch)", FILLER: f"{FILLER} (filler, no fact)"}


def softmax_step_sentences(run: stage_runs.SoftmaxRun, story: Story, stage_key: str) -> list[str]:
    """One sentence per step for the GPT-2 and KV-cache story charts, read from the run's counts and cache sizes."""
    out = []
    for t, label in enumerate(story.labels):
        s = f"<b>Step {t}</b>: {_TOKEN_NAMES.get(label, label)} — "
        if stage_key == "gpt2":
            s += (
                f"without a cache the layer projects {int(run.cost.rows_recompute[t]):,} rows "
                f"(every token so far); with one, {int(run.cost.rows_cached[t])}"
            )
        else:
            s += f"head 0's cache holds {int(run.trace.cache_bytes[t]):,} bytes: {t + 1} keys and {t + 1} values"
        out.append(s)
    return out


@dataclass(frozen=True)
class Crossover:
    """Where a growing MLA cache passes a fixed KDA state: measured in a live decode, extended by computation."""

    tokens: np.ndarray  # [T] tokens decoded (1 … T)
    measured: dict  # kind -> [T] bytes one layer of that kind held, measured
    extended_tokens: np.ndarray  # [m] token counts from T to past the crossing
    extended: dict  # kind -> [m] bytes, computed from the measured bytes per token
    mla_per_token: int
    kda_state: int
    crossing: float  # tokens where the MLA layer's cache equals the KDA layer's state
    kimi_crossing: float  # the same at Kimi Linear 48B's shapes (footprints)


def crossover_extension(layer_bytes: np.ndarray, schedule: Sequence[str]) -> Crossover:
    """From a live decode's bytes[t, layer], the bytes per token of an MLA layer and the fixed bytes of a KDA layer,
    and where the first passes the second; the same at Kimi Linear's shapes."""
    layer_bytes = np.asarray(layer_bytes)
    schedule = tuple(schedule)
    if layer_bytes.ndim != 2 or layer_bytes.shape[1] != len(schedule) or layer_bytes.shape[0] < 2:
        raise ValueError(f"layer_bytes must be [T ≥ 2, {len(schedule)} layers], got shape {layer_bytes.shape}")
    if not {"mla", "kda"} <= set(schedule):
        raise ValueError("the schedule needs at least one MLA and one KDA layer")
    T = layer_bytes.shape[0]
    mla = layer_bytes[:, schedule.index("mla")].astype(np.float64)
    kda = layer_bytes[:, schedule.index("kda")].astype(np.float64)
    per_token = int(mla[1] - mla[0])
    state = int(kda[-1])
    crossing = state / per_token
    ext = np.unique(np.geomspace(T, max(4 * crossing, 2 * T), 48).round())
    kimi = footprints.footprint(footprints.MODELS["kimi-linear-48b"], 1).per_layer
    kimi_mla = next(layer for layer in kimi if layer.kind == "mla").kv_cache_bytes
    kimi_kda = next(layer for layer in kimi if layer.kind == "kda").state_bytes
    return Crossover(
        tokens=np.arange(1, T + 1),
        measured={"MLA layer": mla, "KDA layer": kda},
        extended_tokens=ext,
        extended={"MLA layer": mla[0] + per_token * (ext - 1), "KDA layer": np.full_like(ext, state)},
        mla_per_token=per_token,
        kda_state=state,
        crossing=crossing,
        kimi_crossing=kimi_kda / kimi_mla,
    )
