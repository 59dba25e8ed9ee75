"""Attention Lineage — the Streamlit entry point: `streamlit run app.py`."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st
import torch

from ui import first_chart, limits, links, player
from ui.nav import DEFAULT_PAGE, DEFAULT_URL_PATH, HOME_ALIAS, NAV_EXPANDED, PAGES, SECTIONS, entry_for
from ui.presenter import presenter_requested, presenter_setup
from ui.running import BUSY_TEXT
from ui.session import seed_from_link, sidebar_controls
from ui.tour import tour_nav

ROOT = Path(__file__).parent

# Many visitors share one process on the hosted demo, and the live runs are small: one torch thread per run keeps
# sessions from fighting over the cores. Set LINEAGE_THREADS to use more on a machine of your own.
torch.set_num_threads(max(1, int(os.environ.get("LINEAGE_THREADS", "1"))))

st.set_page_config(
    page_title="Attention Lineage",
    page_icon=str(ROOT / "assets" / "favicon.png"),
    layout="wide",
    initial_sidebar_state="collapsed" if presenter_requested() else "auto",
)

sections: dict[str, list] = {name: [] for name in SECTIONS}
for entry in PAGES:
    default = entry.url_path == DEFAULT_PAGE
    sections[entry.section].append(
        st.Page(
            str(ROOT / entry.file),
            title=entry.title,
            icon=entry.icon,
            url_path=DEFAULT_URL_PATH if default else entry.url_path,
            default=default,
        )
    )
    if default:  # the same page, hidden, at /home (see ui.nav.HOME_ALIAS)
        sections[entry.section].append(
            st.Page(str(ROOT / entry.file), title=entry.title, url_path=HOME_ALIAS, visibility="hidden")
        )
page = st.navigation({name: pages for name, pages in sections.items() if pages}, expanded=NAV_EXPANDED)
entry = entry_for(page.url_path)
with st.sidebar:  # draws nothing: opens a page that was switched to at its top (ui.player)
    player.shell(entry.url_path if entry else page.url_path)

first_chart.start_run()  # the session's first run of home draws up to its first chart (ui.first_chart)
# At the top of the page: what the link or a typed value asked for that the page cannot use. Taken before any widget.
links.link_values(st.container())
# The shared seed and presenter mode hold before the page runs; their controls are drawn after it (sidebar_controls)
seed_from_link()
presenter_setup()

try:
    with limits.heavy_slot(limits.PAGES):  # at most a few page scripts at once in the process (ui.limits)
        page.run()
        if entry is not None:
            tour_nav(entry.url_path)  # every page but Home ends with Previous / Next (ui.nav.tour)
except limits.ServerBusy:
    st.error(BUSY_TEXT)
sidebar_controls()
links.report()
