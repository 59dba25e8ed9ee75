"""The parts the stage pages share, run per stage: their opening, and a linear-memory stage's close.

A stage page (``app_pages/<stage>.py``) reads top to bottom: :func:`open_stage_page` (the header, the slot its claim
and story chart fill once the run is done, the stage's prose, its equation beside the code, the code's source; every
stage with prose in its unit: the softmax stages and the six linear ones), then, on a linear-memory stage, its
controls (:func:`stage_controls`, then its own), its run, :func:`live_run` (the heading, the step control, the claim in
the top slot), its own figures, and :func:`close_stage_page` (the stage "at real size", what to notice). What each
part says comes from the stage's unit (:func:`lineage.teach.units.unit`): its prose, the code it shows, its equation.
"""

from __future__ import annotations

import streamlit as st

from lineage.teach.units import unit
from ui.controls import size_controls, step_control
from ui.display import prose, show_code, stage_header, what_to_notice
from ui.real_size import real_size_section
from ui.story import claim_slot, equation_panel, inputs_choice, story_input, top_slot


def open_stage_page(stage_key: str):
    """The top of a stage's page; returns the slot (``ui.story.top_slot``) its claim goes in."""
    u = unit(stage_key)
    stage_header(stage_key)
    top = top_slot()
    prose(u.prose)
    equation_panel(stage_key)
    show_code(*u.code, title=u.code_title)
    return top


def close_stage_page(stage_key: str, notice: list[str]) -> None:
    """The end of a linear-memory stage's page: the stage at a real model's size, then what to notice."""
    real_size_section(stage_key)
    what_to_notice(notice)


def stage_controls(stage_key: str) -> tuple[str, object, tuple[int, int, int]]:
    """The controls every linear-memory stage page opens with: the inputs (the story or random ones), the written
    story's box when the story is chosen, and the sizes. Returns (inputs, the written story or None, (T, K, V))."""
    inputs = inputs_choice(stage_key)
    written = story_input() if inputs == "story" else None
    return inputs, written, size_controls(stage_key, written=written)


def live_run(top, stage_key: str, out: dict, T: int, *, about: str = "", **claim_options) -> int:
    """The live run's heading (and what the run records, ``about``), the step control, and the claim with its story
    chart put in the page's top slot (``ui.story.claim_slot``, with ``claim_options``). Returns the step shown."""
    st.subheader("The live run")
    if about:
        st.markdown(about)
    step = step_control(stage_key, T)
    claim_slot(top, stage_key, out, step=step, **claim_options)
    return step
