"""The parts the stage pages share, run per stage: their opening, and a linear-memory stage's close.

A stage page (``app_pages/<stage>.py``) reads top to bottom: :func:`open_stage_page` (the header, the slot its claim
and story chart fill once the run is done, the stage's prose, its equation beside the code, the code's source; every
stage with prose in its unit: the softmax stages and the six linear ones), then its own controls, run and figures,
then, on a linear-memory stage, :func:`close_stage_page` (the stage "at real size", what to notice). What each
part says comes from the stage's unit (:func:`lineage.teach.units.unit`): its prose, the code it shows, its equation.
"""

from __future__ import annotations

from lineage.teach.units import unit
from ui.display import prose, show_code, stage_header, what_to_notice
from ui.real_size import real_size_section
from ui.story import equation_panel, top_slot


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
