"""Page machinery shared by every page: the shared seed, stage headers, code from source, caps, notes."""

from __future__ import annotations

import inspect

import streamlit as st

from lineage import stages
from lineage.device import device_info

SEED_KEY = "seed"


def seed() -> int:
    """The seed chosen in the sidebar (shared by all pages)."""
    return int(st.session_state.get(SEED_KEY, 0))


def device_label() -> str:
    return device_info().label


def stage_header(stage_key: str) -> stages.Stage:
    """Title, paper, and the stage's one problem solved and one cost introduced."""
    s = stages.stage(stage_key)
    st.title(s.title)
    st.caption(f"{s.representative} · {s.year} · [{s.paper}]({s.url})")
    solved, cost = st.columns(2)
    solved.success(f"**Problem solved.** {s.problem_solved}.")
    cost.warning(f"**Cost introduced.** {s.cost_introduced}.")
    return s


def show_code(*objects, title: str = "The code that runs") -> None:
    """Show the real source of functions/classes from ``lineage`` (read at run time, so it cannot drift)."""
    with st.expander(title, expanded=False):
        for obj in objects:
            st.caption(f"`{obj.__module__}.{obj.__qualname__}`")
            st.code(inspect.getsource(obj), language="python")


def what_to_notice(points: list[str]) -> None:
    st.subheader("What to notice")
    st.markdown("\n".join(f"- {p}" for p in points))


def cap_note(name: str, cap: int) -> str:
    """The text shown next to a capped control."""
    return f"{name} is capped at {cap:,} on {device_info().type} (so every run stays fast for everyone)."
