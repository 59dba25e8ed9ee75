"""The stage after the article: Gated DeltaNet-2 on the story, beside KDA, and the claim it makes there.

The article's lineage ends at KDA and the Kimi hybrid. Its successor here is Gated DeltaNet-2 (arXiv 2605.22791,
:mod:`lineage.ops.gated_deltanet2`): KDA's one write strength β, which both erases the old value at a key and writes
the new one, split into an erase gate b (key axis) and a write gate w (value axis). On the story every token writes
with both gates open (b = w = 1, which is KDA at β = 1: a clean overwrite), except the overwrite itself (the story's
Dee = coffee after Dee = tea), whose erase and write gates the page sets, each one number for every channel. KDA runs
beside it with β = w at the overwrite: the same write, and an erase as strong as the write, as one β must.

The claim: with a full erase, the overwritten fact loses its old value however weakly the new one is written. Its
number is the share of the old value left in the overwritten key's answer at the end (the story's Dee: tea, then
coffee), read as :func:`lineage.teach.claims.blend` reads every stage's answers; KDA's share on the same story is the
comparison, so swapping the mechanism moves the number.

Everything here takes primitives and returns numpy (a page caches it); nothing imports streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lineage.inputs import run_mechanism
from lineage.mechanisms import mechanism
from lineage.numerics import rel_rms
from lineage.ops.gated_deltanet2 import gated_deltanet2, recurrent_gated_deltanet2
from lineage.stages import stage
from lineage.teach.claims import HELD_TOL, NEEDS_OVERWRITE, StageClaim, _capacity_note, blend, percent
from lineage.teach.story import Story, story_for, story_tensors

_ENTRY = mechanism("gated_deltanet2")  # its entry of the table: narrative, colour, paper
NARRATIVE = _ENTRY.narrative
WHY = (
    "Why this successor: it changes one thing in KDA — β becomes an erase gate and a write gate — and with both set to "
    "β it is KDA again, to rounding, so every difference on this page is that one split."
)
COLOUR = _ENTRY.colour
TITLE = stage("gated_deltanet2").heading  # the page's heading, its navigation entry and the site's page
PAPER = _ENTRY.paper
URL = _ENTRY.url
CLAIM = (
    "Gated DeltaNet-2 erases and writes apart: a full erase takes the old value out, however weakly the new is written."
)
LABEL = "share of the old value left in the overwritten key's answer"


@dataclass(frozen=True)
class EraseWriteRun:
    """Gated DeltaNet-2 and KDA (β = w) on the story, one head, numpy.

    Attributes:
        k: [T, K] the story's keys; states, kda_states: [T, K, V] S_t of each, from the reference loops
        gates: [T, K] α_t on every key channel (the story's gate, the same for both)
        err_chunk: relative RMS difference of Gated DeltaNet-2's chunked outputs and final state from its loop
    """

    story: Story
    erase: float
    write: float
    k: np.ndarray
    states: np.ndarray
    kda_states: np.ndarray
    gates: np.ndarray
    err_chunk: float


def _unit(name: str, x) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float) or not 0.0 <= x <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {x!r}")
    return float(x)


def run_on_story(
    T: int, K: int, V: int, erase: float, write: float, *, alpha_keep: float = 1.0, alpha_switch: float = 0.0,
    written: str = "", chunk_size: int = 16,
) -> EraseWriteRun:  # fmt: skip
    """Gated DeltaNet-2 on the story at T, K, V, every token with b = w = 1 but the overwrite, which erases with
    b = ``erase`` and writes with w = ``write`` on every channel; beside it KDA, β = 1 but ``write`` at the overwrite.
    The story's gate: every channel keeps ``alpha_keep``, and at the topic switch all but the long-lived fact's keep
    ``alpha_switch``. The chunked form is checked against the loop on the same inputs."""
    erase, write = _unit("erase", erase), _unit("write", write)
    story = story_for(T, K, V, written)
    q, k, v, g, beta = story_tensors(story, "channel", alpha_keep=alpha_keep, alpha_switch=alpha_switch, beta=1.0)
    b, w = torch.ones_like(k), torch.ones_like(v)  # [1, 1, T, K], [1, 1, T, V]: erase and write fully
    if story.overwrite is not None:
        t = story.overwrite_step
        b[:, :, t], w[:, :, t], beta[:, :, t] = erase, write, write
    o, S, trace = recurrent_gated_deltanet2(q, k, v, g, b, w, output_final_state=True, trace=True)
    o_chunk, S_chunk = gated_deltanet2(q, k, v, g, b, w, output_final_state=True, chunk_size=min(chunk_size, T))
    _, _, kda_trace = run_mechanism(mechanism("kda"), q, k, v, g, beta, trace=True)  # the one display path
    return EraseWriteRun(
        story=story,
        erase=erase,
        write=write,
        k=k[0, 0].numpy(),
        states=trace.states[0, 0],
        kda_states=kda_trace.states[0, 0],
        gates=trace.decay[0, 0],
        err_chunk=max(rel_rms(o_chunk, o), rel_rms(S_chunk, S)),
    )


def answer(states: np.ndarray, k: np.ndarray, story: Story, key: str, step: int) -> np.ndarray:
    """The memory's answer at ``key`` after ``step``: S_stepᵀ k (k as the story wrote it). [V]"""
    t_key = next((t for t, f in enumerate(story.facts) if f.key == key), None)
    if t_key is None:
        raise ValueError(f"key {key!r} is not in the story")
    return states[step].astype(np.float64).T @ k[t_key].astype(np.float64)


def _old_and_new_lines(run: EraseWriteRun) -> list[tuple[str, str, np.ndarray, str]]:
    """(line name, mechanism key, states, value) for each memory and each of the overwritten key's two values."""
    story, q = run.story, run.story.overwrite
    if q is None:
        return []
    memories = (  # KDA last: where the lines coincide, its half of tea left shows over Gated DeltaNet-2's coffee
        ("Gated DeltaNet-2", "gated_deltanet2", run.states),
        (f"KDA (β = {run.write:g})", "kda", run.kda_states),
    )
    return [
        (f"{name}: {value}", key, states, value)
        for name, key, states in memories
        for value in (story.overwritten_value, q.expected)
    ]


def old_and_new_over_time(run: EraseWriteRun) -> dict[str, np.ndarray]:
    """How much of the overwritten key's old and new value each memory reads back at every step (blend coefficients):
    {"<mechanism>: <value>": [T]}. Empty when the story has no overwrite."""
    story = run.story
    mixes: dict[str, list] = {}
    out = {}
    for name, key, states, value in _old_and_new_lines(run):
        if key not in mixes:
            mixes[key] = [blend(answer(states, run.k, story, story.overwrite.key, t), story) for t in range(story.T)]
        out[name] = np.array([m[value] for m in mixes[key]])
    return out


def old_and_new_lines(run: EraseWriteRun) -> dict[str, tuple[str, bool]]:
    """Who draws each line of :func:`old_and_new_over_time`: {line name: (mechanism key, whether it is the old value)},
    so a chart draws each memory in its mechanism's colour and the old value apart from the new."""
    return {name: (key, value == run.story.overwritten_value) for name, key, _, value in _old_and_new_lines(run)}


def _mix(coefs: dict[str, float], old: str, new: str) -> str:
    return f"{coefs[new]:.2f}·{new} {'−' if coefs[old] < 0 else '+'} {abs(coefs[old]):.2f}·{old}"


def erase_write_claim(run: EraseWriteRun) -> StageClaim:
    """The claim on the story: the old value's share of the overwritten key's answer at the end, beside KDA's."""
    story = run.story
    q = story.overwrite
    if q is None:
        missing = f"To test it, {NEEDS_OVERWRITE}."
        return StageClaim("gated_deltanet2", CLAIM, LABEL, float("nan"), "—", False, missing, "", missing)
    old, new, end = story.overwritten_value, q.expected, story.T - 1
    t = story.overwrite_step
    if t == 0 or abs(blend(answer(run.states, run.k, story, q.key, t - 1), story)[old]) <= HELD_TOL:
        missing = (
            f"Nothing of {q.key} → {old} is left when {new} is written (a gate cleared it), so there is nothing to "
            f"erase. To test it, write {q.key} = {new} while {old} is still held, with no topic switch between."
        )
        return StageClaim("gated_deltanet2", CLAIM, LABEL, float("nan"), "—", False, missing, "", missing)
    ours = blend(answer(run.states, run.k, story, q.key, end), story)
    theirs = blend(answer(run.kda_states, run.k, story, q.key, end), story)
    left, kda_left = abs(ours[old]), abs(theirs[old])  # a negative share of the old value is no cleaner
    holds = left <= HELD_TOL
    b, w = run.erase, run.write
    if holds:
        wrote = (
            f"the write gate w = {w:g} wrote {ours[new]:.2f}·{new}"
            if ours[new] > HELD_TOL
            else f"the write gate w = {w:g} wrote nothing of {new}: the erase alone emptied {q.key}"
        )
        verdict = (
            f"The erase gate b = {b:g} took {old} out of {q.key}'s memory and {wrote}: {q.key} reads back "
            f"{_mix(ours, old, new)}. KDA has one β for both, so at β = {w:g} it erases only as much as it writes: "
            f"{_mix(theirs, old, new)}."
        )
    else:
        why = (
            f"the overwrite keeps 1 − b = {1 - b:g} of the old read. The old value goes only when the erase gate is "
            "near 1."
            if b < 1 - HELD_TOL
            else f"the erase takes out only what the old value left along {q.key}'s key, and here the keys overlap."
        )
        verdict = f"Here {q.key} reads back {_mix(ours, old, new)}: {percent(left)} of {old} is left, because {why}"
    return StageClaim(
        "gated_deltanet2",
        CLAIM,
        LABEL,
        left,
        percent(left),
        holds,
        verdict + _capacity_note(story),
        f"KDA at β = {w:g} on the same story: {percent(kda_left)} of {old} left",
    )
