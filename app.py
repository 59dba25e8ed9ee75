"""Attention Lineage — the Streamlit entry point: `streamlit run app.py`."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st
import torch

from ui.classroom import presenter_requested, presenter_toggle
from ui.common import SEED_KEY, device_label
from ui.nav import PAGES, SECTIONS

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
    sections[entry.section].append(
        st.Page(
            str(ROOT / entry.file),
            title=entry.title,
            icon=entry.icon,
            url_path=entry.url_path,
            default=entry.url_path == "home",
        )
    )
page = st.navigation({name: pages for name, pages in sections.items() if pages})

with st.sidebar:
    st.caption(device_label())
    st.number_input(
        "Seed (shared by all pages)",
        min_value=0,
        max_value=2**31 - 1,
        value=0,
        step=1,
        key=SEED_KEY,
        bind="query-params",
    )
    presenter_toggle()

page.run()
