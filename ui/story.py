"""The top of every stage page: the claim, the number that proves it (computed from the run), the main chart.

A stage page opens a slot right under its header (:func:`top_slot`), reads its controls, runs, then fills the slot
with :func:`show_claim` and its main chart — so the claim and the chart stand first on the page (and on the first
screen in presenter mode) although the controls that feed them come later in the script.
"""

from __future__ import annotations

import streamlit as st

from lineage.claims import StageClaim, held_over_time, step_sentences
from lineage.equations import equation
from lineage.plots.story import story_memory
from ui.classroom import chart

INPUTS = {"story": "the story (named facts)", "random": "random vectors"}


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


def show_claim(claim: StageClaim) -> None:
    """The claim in one sentence, its number as a large metric, and whether it holds here (computed)."""
    st.markdown(f"**{claim.claim}**")
    number, verdict = st.columns([1, 2], vertical_alignment="center")
    number.metric(claim.label, claim.shown, help=claim.compare)
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
        f"(relative RMS difference), on {run.device}."
    )


def story_chart(stage_key: str, run, story, *, start: int, value_labels: list[str] | None = None) -> None:
    """The page's main chart: the state as a fact table over the story, with the held answers, the step marker and
    the step's sentence all in the animation's frames."""
    chart(
        story_memory(
            run.states,
            row_labels=story.row_labels,
            column_labels=value_labels or story.column_labels,
            step_labels=story.labels,
            sentences=step_sentences(run, story),
            held=held_over_time(run, story),
            start=start,
        ),
        key=f"{stage_key}_story",
        alt="Animated state of the memory over the story, rows named by keys and columns by values, beside the share "
        "of each query's answer the memory holds after every step.",
        export_name=f"{stage_key}_story",
    )


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
