"""Claims on a story a visitor wrote (issue 25): every stage's number is what its recurrence gives on that story, read
here from the recurrence's own final state; where the story lacks the claim's case the claim says what to add and
shows no number; over capacity it says the keys (or values) overlap. The default story's claims are
tests/test_claims.py's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lineage.ops.linear_attention import NORMALIZER_EPS, recurrence_inputs
from lineage.ops.recurrence import recurrent_memory
from lineage.stages import stage
from lineage.teach import claims
from lineage.teach.story import make_story, story_tensors
from lineage.teach.story_text import parse_story
from tests.util import KNOBS, claim_of

FULL = "*name = Kim, Ada = Paris, Bo = Rome, ..., |, Dee = tea, Eve = jazz, ..., Dee = coffee, Dee = milk"
STORIES = {  # a written story with every case (long-lived fact, switch, overwrite chain), at two state sizes
    "every-case-K8": (FULL, 8, 8),
    "every-case-K4-over-capacity": (FULL, 4, 8),
    "key-across-topics": ("*me = Al, Ada = Paris, Bo = Rome, |, Ada = Oslo, Cy = tea, Cy = jazz", 8, 8),
}


def written(text: str, K: int = 8, V: int = 8):
    parsed, problems = parse_story(text, max_tokens=64)
    assert parsed is not None, problems
    return make_story(K=K, V=V, written=parsed)


def final_answer(stage_key: str, story, key: str, knobs: claims.Knobs = KNOBS) -> np.ndarray:
    """The memory's answer at ``key`` from the recurrence's own final state S_T (not the trace the claims read)."""
    s = stage(stage_key)
    q, k, v, g, beta = story_tensors(
        story,
        s.gate,
        alpha_keep=knobs.alpha_keep,
        alpha_switch=knobs.alpha_switch,
        beta=1.0 if s.rule == "delta" else None,
    )
    if s.key == "linear_attention":
        q, k, v = recurrence_inputs(q, k, v, knobs.feature_map)
    _, S = recurrent_memory(q, k, v, g, beta, rule=s.rule, output_final_state=True)
    t = next(t for t, f in enumerate(story.facts) if f.key == key)
    out = S[0, 0].double().numpy().T @ k[0, 0, t].double().numpy()
    return out[:-1] / (out[-1] + NORMALIZER_EPS) if s.key == "linear_attention" else out


def share(answer: np.ndarray, story, value: str) -> float:
    """The answer's coefficient on ``value`` less every other value's, in [0, 1] (least squares over the story's own
    values, as a visitor would compute it)."""
    coef = dict(zip(story.vocab_values, np.linalg.lstsq(story.value_emb.T, answer, rcond=None)[0], strict=True))
    return float(np.clip(coef[value] - sum(abs(c) for name, c in coef.items() if name != value), 0, 1))


def rel_error(answer: np.ndarray, story, value: str) -> float:
    v = story.value(value)
    return float(np.linalg.norm(answer - v) / np.linalg.norm(v))


@pytest.mark.parametrize("case", STORIES)
@pytest.mark.parametrize("stage_key", ["linear_attention", "deltanet"])
def test_the_overwrite_claim_is_the_recurrence_on_the_written_story(stage_key, case):
    story = written(*STORIES[case])
    q = story.overwrite
    c = claim_of(stage_key, story)
    assert c.testable and q.key in c.label
    assert c.value == pytest.approx(rel_error(final_answer(stage_key, story, q.key), story, q.expected), abs=1e-5)
    assert c.shown == (f"{c.value:.2f}" if stage_key == "linear_attention" else f"{c.value:.3f}")
    assert f"changed from {story.overwritten_value} to {q.expected}" in c.verdict or stage_key == "deltanet"


@pytest.mark.parametrize("case", STORIES)
@pytest.mark.parametrize("stage_key", ["mamba2", "gated_deltanet"])
def test_the_forgetting_claim_is_the_recurrence_on_the_written_story(stage_key, case):
    story = written(*STORIES[case])
    facts = claims.topic_a_facts(story)
    after = np.mean([share(final_answer(stage_key, story, f.key), story, f.value) for f in facts])
    c = claim_of(stage_key, story)
    assert c.testable and c.value == pytest.approx(after, abs=1e-5)
    if stage_key == "gated_deltanet":  # both numbers: topic A left, and the edited key's error
        err = rel_error(final_answer(stage_key, story, story.overwrite.key), story, story.overwrite.expected)
        assert c.shown == f"{after:.0%} · {err:.3f}"


def test_a_key_written_again_after_the_switch_belongs_to_the_new_topic():
    story = written(*STORIES["key-across-topics"][:1])
    assert [f.key for f in claims.topic_a_facts(story)] == ["Bo"]  # Ada was rewritten in topic B
    c = claim_of("gated_deltanet", story)
    assert c.holds, c.verdict  # Bo is gone after the switch, Ada → Oslo is not counted as topic A lost


@pytest.mark.parametrize("case", STORIES)
@pytest.mark.parametrize("stage_key", ["gla", "kda"])
def test_the_per_channel_claim_is_the_recurrence_on_the_written_story(stage_key, case):
    story = written(*STORIES[case])
    long = story.long_lived[0]
    c = claim_of(stage_key, story)
    assert c.testable and long.key in c.label
    assert c.value == pytest.approx(share(final_answer(stage_key, story, long.key), story, long.expected), abs=1e-5)


def test_the_claim_follows_the_knobs_on_a_written_story():
    story = written(FULL)
    open_gate = claims.Knobs(alpha_switch=1.0)
    c = claim_of("mamba2", story, open_gate)
    facts = claims.topic_a_facts(story)
    kept = np.mean([share(final_answer("mamba2", story, f.key, open_gate), story, f.value) for f in facts])
    assert c.value == pytest.approx(kept, abs=1e-5) and not c.holds and "not small enough" in c.verdict


CANNOT = [  # (stage, a story that lacks its case, the words of what to add)
    ("linear_attention", "*name = Kim, Ada = Paris, |, Dee = tea", "add a second value for one key"),
    ("deltanet", "*name = Kim, Ada = Paris, |, Dee = tea", "add a second value for one key"),
    ("mamba2", "*name = Kim, Ada = Paris, Dee = tea, Dee = coffee", "add a topic switch"),
    ("gated_deltanet", "*name = Kim, Ada = Paris, Dee = tea, Dee = coffee", "add a topic switch"),
    ("gated_deltanet", "*name = Kim, Ada = Paris, |, Dee = tea", "add a second value for one key"),
    ("gla", "Ada = Paris, |, Dee = tea, Dee = coffee", "mark one fact long-lived with `*`"),
    ("kda", "Ada = Paris, |, Dee = tea, Dee = coffee", "mark one fact long-lived with `*`"),
    ("kda", "*name = Kim, Ada = Paris, Dee = tea", "add a topic switch"),
    ("mamba2", "Ada = Paris, |, Ada = Rome", "add a topic switch"),  # a switch, but nothing before it survives
]


@pytest.mark.parametrize(("stage_key", "text", "says"), CANNOT, ids=[f"{s}-{i}" for i, (s, *_) in enumerate(CANNOT)])
def test_a_story_without_the_case_says_what_to_add_instead_of_a_number(stage_key, text, says):
    c = claim_of(stage_key, written(text))
    assert not c.testable and says in c.missing and c.missing.startswith("To test it, ")
    assert math.isnan(c.value) and c.shown == "—" and not c.holds


def test_the_same_story_with_the_case_added_is_tested():
    """The mutation: add what the sentence asks for, and the claim gets its number."""
    assert not claim_of("deltanet", written("Ada = Paris, Dee = tea")).testable
    assert claim_of("deltanet", written("Ada = Paris, Dee = tea, Dee = coffee")).testable


def test_over_capacity_the_claim_says_the_keys_and_values_overlap():
    many = ", ".join(f"k{i} = v{i}" for i in range(10)) + ", k0 = w"
    story = written(many, K=8, V=8)  # 11 keys with the filler, 12 values: past both K and V
    assert not story.keys_fit and not story.values_fit
    c = claim_of("deltanet", story)
    assert "11 keys share K = 8 channels" in c.verdict and "12 values share V = 8 columns" in c.verdict
    fits = claim_of("deltanet", written("a = 1, a = 2"))
    assert "over capacity" not in fits.verdict and "overlap" not in fits.verdict
    untested = claim_of("mamba2", story)  # said even where the claim cannot be tested
    assert not untested.testable and "11 keys share K = 8" in untested.missing


def test_the_written_default_story_gives_the_default_claims():
    """The scripted story as the form shows it, run as written, gives the scripted story's claims at its length."""
    from lineage.teach.story import scripted_text

    scripted = make_story(12, 8, 8)
    as_written = written(scripted_text(), 8, 8)
    for stage_key in ("linear_attention", "deltanet", "mamba2", "gla", "gated_deltanet", "kda"):
        a, b = claim_of(stage_key, scripted), claim_of(stage_key, as_written)
        assert (a.shown, a.verdict, a.label) == (b.shown, b.verdict, b.label), stage_key


def test_the_hybrid_claim_names_the_written_story_keys():
    story = make_story(K=claims.HYBRID_STATE_K, V=8, written=parse_story(FULL, max_tokens=64)[0])
    run = claims.trace_story("kda", story, claims.Knobs(alpha_switch=1.0))
    needle = claims.hybrid_needle(story, run)
    assert needle["needle"] == "Ada → Paris"
    c = claims.hybrid_claim(needle, story)
    assert f"for {len(story.vocab_keys)} keys" in c.verdict
    small = make_story(K=claims.HYBRID_STATE_K, V=8, written=parse_story("a = 1, b = 2", max_tokens=64)[0])
    c_small = claims.hybrid_claim(claims.hybrid_needle(small, claims.trace_story("kda", small)), small)
    assert not c_small.holds and "fit the state's 4 rows" in c_small.verdict


def test_reading_a_missing_case_is_a_value_error_naming_what_to_add():
    story = written("a = 1, b = 2")
    run = claims.trace_story("deltanet", story)
    with pytest.raises(ValueError, match="no overwrite"):
        claims.overwrite_error(run, story)
    with pytest.raises(ValueError, match="no long-lived fact"):
        claims.long_fact_held(run, story)
    with pytest.raises(ValueError, match="no topic switch"):
        claims.topic_a_held(run, story)


def test_step_sentences_and_curves_follow_the_written_queries():
    story = written("*me = Al, x = 1, |, y = 2, y = 3, ? y, ? me")
    run = claims.trace_story("kda", story)
    assert list(claims.held_over_time(run, story)) == ["y → 3", "me → Al"]
    last = claims.step_sentences(run, story)[-1]
    assert "read back: y " in last and "me " in last
