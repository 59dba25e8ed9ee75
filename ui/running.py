"""Calling into ``lineage`` from a page, and ending a page early. A call takes a heavy-run slot (``ui.limits``); a
ValueError (bad sizes, bad knobs) or a server too busy to give a slot becomes a message. A page ends early through
:func:`stop_page`, never a bare ``st.stop()``: the sidebar's controls and the link's report come first."""

from __future__ import annotations

import streamlit as st

from ui import limits, links
from ui.session import sidebar_controls

BUSY_TEXT = "The server is busy with other visitors' runs: try again in a minute."


def run_or_stop(fn, *args, **kwargs):
    """Call into ``lineage`` in a heavy-run slot (``ui.limits``); a ValueError (bad sizes, bad knobs) is shown as a
    message and ends the page there, and so does a wait for a slot that lasts too long."""
    try:
        with limits.heavy_slot():
            return fn(*args, **kwargs)
    except ValueError as exc:
        st.error(f"Can't run this: {exc}")
    except limits.ServerBusy:
        st.error(BUSY_TEXT)
    stop_page()


def run_or_error(fn, *args, **kwargs):
    """Call into ``lineage``; a ValueError is shown as a message and None returned, so the rest of the page still
    runs (unlike :func:`run_or_stop`, for pages whose sections are independent)."""
    try:
        with limits.heavy_slot():
            return fn(*args, **kwargs)
    except ValueError as exc:
        st.error(f"Can't run this: {exc}")
        return None
    except limits.ServerBusy:
        st.error(BUSY_TEXT)
        return None


def stop_page() -> None:
    """End the page here (after an error message): the sidebar's controls and the link report, then ``st.stop()``."""
    sidebar_controls()
    links.report(complete=False)  # nothing can be drawn after st.stop()
    st.stop()
