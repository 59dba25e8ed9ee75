"""The guided tour: every page in order (``ui.nav.tour``), Previous / Next under each page with the transition line
and keyboard shortcuts, and the home page's Start. A stop of the tour keeps presenter mode and the seed."""

from __future__ import annotations

import streamlit as st

from ui.nav import DEFAULT_PAGE, PageEntry, neighbours, transition
from ui.presenter import PRESENT_KEY, presenter_mode


def _switch_to(entry: PageEntry) -> None:
    """Open another page of the tour. Its query string is replaced, not cleared: st.switch_page's default clears it,
    which Streamlit refuses (an exception, and no switch) once any widget-bound parameter is in the URL. The next page
    keeps what the whole session shares: presenter mode and the seed."""
    shared = {key: st.query_params[key] for key in ("seed",) if key in st.query_params}
    st.switch_page(entry.file, query_params=shared | ({PRESENT_KEY: "1"} if presenter_mode() else {}))


def start_tour() -> None:
    """Open the first stop of the tour after Home (the home page's Start button)."""
    _switch_to(neighbours(DEFAULT_PAGE)[1])


def tour_nav(url_path: str) -> None:
    """Previous / next stop of the tour (ui.nav.tour: every page, stages, ledger, labs, tools, then home again), with
    the transition line, as buttons with keyboard shortcuts. app.py draws it under every page but Home (whose Start
    button is its Next)."""
    prev, nxt = neighbours(url_path)
    if url_path == DEFAULT_PAGE or (prev is None and nxt is None):
        return
    st.divider()
    prev_col, next_col = st.columns(2)
    if prev is not None and prev_col.button(
        f"← Previous: {prev.title}", key="tour_prev", shortcut="Shift+P", help="Previous stop (Shift+P)"
    ):
        _switch_to(prev)
    if nxt is not None:
        next_col.markdown(f"*{transition(nxt)}*")
        if next_col.button(
            f"Next: {nxt.title} →", key="tour_next", type="primary", shortcut="Shift+N", help="Next stop (Shift+N)"
        ):
            _switch_to(nxt)
