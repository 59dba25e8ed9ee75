"""The top of every stage page: the claim, the number that proves it (computed from the run), the main chart.

A stage page opens a slot right under its header (:func:`top_slot`), reads its controls, runs, then fills the slot
with :func:`show_claim` and its main chart — so the claim and the chart stand first on the page (and on the first
screen in presenter mode) although the controls that feed them come later in the script.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from lineage.claims import StageClaim, held_over_time, step_sentences
from lineage.equations import equation
from lineage.plots.story import HELD_SPREAD, story_memory
from lineage.plots.vocabulary import spread_coinciding
from lineage.story import FILLER, FILLER_VALUE, SWITCH
from ui.classroom import chart

INPUTS = {"story": "the story (named facts)", "random": "random vectors"}
# Every term a slide uses, defined once; the glossary beside each claim shows them.
GLOSSARY = {
    SWITCH: "the topic switch: a filler token at which the gated stages' gate closes (what a trained gate would do "
    "at a change of topic).",
    FILLER: f"filler: a token that carries no fact; it writes key {FILLER} → value {FILLER_VALUE}.",
    "S_t": "the memory (state) after token t: a K × V matrix, row = key channel, column = value channel.",
    "φ": "linear attention's feature map, applied to queries and keys (relu, or the paper's elu(x) + 1).",
    "z": "linear attention's normaliser: the running sum of φ(k); every read is divided by z·φ(q).",
    "α": "a gate: the share of the memory kept before a write (1 keeps all, 0 wipes).",
    "β": "the delta rule's write strength: the share of the gap between the stored and the new value closed.",
    "WY": "the WY (or UT) representation: a product of delta-rule updates (I − β k kᵀ) written as one matrix, so a "
    "chunk of them is applied at once (the chunked form).",
    "MLA": "multi-head latent attention (DeepSeek): softmax attention that caches one compressed vector and a small "
    "shared key per token instead of a key and a value per head.",
    "MQAR": "multi-query associative recall (Zoology, Arora et al. 2023): a synthetic task of key–value pairs "
    "followed by queries for them, used to test a memory's recall.",
}


def top_slot():
    """A container right under the page header, filled once the page has run."""
    return st.container()


def inputs_choice(page: str) -> str:
    """The story (default) or random vectors, bound to the URL as ``?<page>_inputs=``."""
    return st.radio(
        "Inputs",
        list(INPUTS),
        format_func=INPUTS.get,
        horizontal=True,
        bind="query-params",
        key=f"{page}_inputs",
        help="The story writes named facts (an overwrite, a topic switch, filler), so rows and steps have names and "
        "the page can test its claim. Random vectors show the same mechanism on unnamed data.",
    )


def glossary() -> None:
    """A small popover defining every symbol and abbreviation the slides use."""
    with st.popover("Glossary: ‖ … S_t φ z α β WY MLA MQAR"):
        st.markdown("\n".join(f"- **{term}**: {text}" for term, text in GLOSSARY.items()))


def show_claim(claim: StageClaim) -> None:
    """The claim in one sentence, its number as a large metric, and whether it holds here (computed)."""
    st.markdown(f"**{claim.claim}**")
    number, verdict = st.columns([1, 2], vertical_alignment="center")
    with number:
        st.metric(claim.label, claim.shown, help=claim.compare)
        glossary()
    if claim.holds:
        verdict.markdown(f"{claim.verdict}  \n*Compare: {claim.compare}.*")
    else:
        verdict.warning(
            f"**The claim does not hold at these settings.** {claim.verdict}  \n*Compare: {claim.compare}.*"
        )


def checked_line(run) -> None:
    """The verification of a linear-memory run, as one small line (the numbers are not the lesson)."""
    st.caption(
        f"Checked against the reference loop: chunked form {run.err_chunk:.1e}, T × T form {run.err_parallel:.1e} "
        f"(relative RMS difference); {run.device}."
    )


def fact_cells(story, column_labels: list[str]) -> tuple[list[int], list[int]]:
    """The rows and columns of the facts (not the filler, a spare channel or the normaliser z): they set the story
    chart's colour range, so a filler row or a z column far larger than any fact does not flatten the facts."""
    rows = [i for i, r in enumerate(story.row_labels) if r != FILLER and not r.startswith("ch ")]
    cols = [j for j, c in enumerate(column_labels) if c not in (FILLER_VALUE, "z")]
    return (rows or list(range(story.K))), (cols or list(range(len(column_labels))))


def story_chart(stage_key: str, run, story, *, start: int, value_labels: list[str] | None = None) -> None:
    """The page's main chart: the state as a fact table over the story, with the held answers, the step marker and
    the step's sentence all in the animation's frames; under it, one line saying what its marks mean."""
    columns = value_labels or story.column_labels
    rows, cols = fact_cells(story, columns)
    states = np.asarray(run.states)
    facts_max = float(np.abs(states[:, rows][:, :, cols]).max())
    clipped = float(np.abs(states).max()) > facts_max * (1 + 1e-9)
    held = held_over_time(run, story)
    chart(
        story_memory(
            run.states,
            row_labels=story.row_labels,
            column_labels=columns,
            step_labels=story.labels,
            sentences=step_sentences(run, story),
            held=held,
            start=start,
            scale_rows=rows,
            scale_cols=cols,
        ),
        key=f"{stage_key}_story",
        alt="Animated state of the memory over the story, rows named by keys and columns by values, beside the share "
        "of each query's answer the memory holds after every step.",
        export_name=f"{stage_key}_story",
    )
    extra = []
    if clipped:
        extra.append(
            f"colours span the fact cells (±{facts_max:.2f}); the filler row"
            + (" and z run" if "z" in columns else " runs")
            + " past, at the end colour (hover for their values)"
        )
    extra.append("right panel: the right value read back, less anything mixed in")
    if any(spread_coinciding(held, offset=HELD_SPREAD)[1].values()):
        extra.append(f"answers that read back alike are drawn {HELD_SPREAD * 100:.0f} points apart (hover: values)")
    story_key(story, normaliser="z" in columns, extra=" · ".join(extra))


def story_key(story, *, normaliser: bool = False, extra: str = "") -> None:
    """The one-line key under a story chart: what ‖, …, a→b (and z, ch i) mean, and anything the chart clips."""
    st.caption("Key: " + " · ".join(p for p in (story.key_line(normaliser=normaliser), extra) if p) + ".")


def gate_controls(page: str, *, per_channel: bool = False) -> tuple[float, float]:
    """The story's gate: α on every ordinary token and α at the topic switch (per channel: every channel but the
    long-lived fact's). Defaults: keep everything, wipe at the switch."""
    a, b = st.columns(2)
    keep = a.slider(
        "Gate α on every token",
        0.0,
        1.0,
        1.0,
        0.01,
        bind="query-params",
        key=f"{page}_keep",
        help="1 keeps the state as it is between writes; below 1 everything fades a little at every token.",
    )
    where = " (every channel but the long-lived fact's)" if per_channel else ""
    switch = b.slider(
        f"Gate α at the topic switch ‖{where}",
        0.0,
        1.0,
        0.0,
        0.01,
        bind="query-params",
        key=f"{page}_switch",
        help="What a trained gate does at a change of topic: 0 wipes, 1 keeps.",
    )
    return keep, switch


def code_excerpts(excerpts) -> None:
    """Lines of running code, each block under the file, function and line numbers it was cut from."""
    for excerpt in excerpts:
        st.caption(f"`{excerpt.where}`")
        st.code(excerpt.text, language="python")


def equation_panel(stage_key: str) -> None:
    """The stage's update with the change from the previous stage marked, beside the lines of code that make it."""
    eq = equation(stage_key)
    left, right = st.columns([2, 3])
    with left:
        st.markdown(eq.text)
        st.caption(f"New in this stage (marked): {eq.change}.")
    with right:
        code_excerpts(eq.excerpts())
