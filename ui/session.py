"""What a visitor's session shares across pages, and the sidebar that holds it: the shared seed (taken from the link
before the page, its input drawn after it), the device, presenter mode's toggle, and the memory bandwidth measured on
the Live benchmark, which Memory & cost offers."""

from __future__ import annotations

import os

import streamlit as st

from lineage.device import device_info
from ui import links
from ui.presenter import presenter_toggle
from ui.story import story_from_link, story_to_link

SEED_KEY = "seed"
SEED_LABEL = "Seed (shared by all pages)"  # the sidebar's seed input
SEED_LINK_PROBLEM_KEY = "_seed_link_problem"  # a bad seed in the link, said until a seed is picked
DEFAULT_SEED = 0
SEED_RANGE = (0, 2**31 - 1)  # what torch.Generator.manual_seed takes, and fits every int type on the way


def seed_from_link() -> None:
    """Before the page runs: on the session's first run the link's ``seed`` (parsed here, an integer in SEED_RANGE)
    becomes the shared seed, or the default with a notice naming the bad value; later the control's own value holds.
    The control itself is drawn after the page (:func:`sidebar_controls`). The link's written story is read here too,
    beside the seed (``ui.story.story_from_link``)."""
    story_from_link()
    if SEED_KEY not in st.session_state:  # the session's first run: the link decides
        given = st.query_params.get(SEED_KEY)
        value, problem = links.whole_number(given, *SEED_RANGE) if given is not None else (DEFAULT_SEED, None)
        if problem:  # said on every page until the visitor picks a seed
            st.session_state[SEED_LINK_PROBLEM_KEY] = (
                f"The link's seed {links.quote(given)} is not used: {problem}. Using seed {DEFAULT_SEED}."
            )
        st.session_state[SEED_KEY] = float(DEFAULT_SEED if problem else value)
    if st.session_state.get(SEED_KEY) != DEFAULT_SEED:
        st.session_state.pop(SEED_LINK_PROBLEM_KEY, None)
    if SEED_LINK_PROBLEM_KEY in st.session_state:
        links.notice(st.session_state[SEED_LINK_PROBLEM_KEY])


def seed_control() -> None:
    """The shared seed's number input, which writes the URL's ``seed``.

    The number input is not bound to the URL: the value a link gives is parsed by :func:`seed_from_link`, so a bad
    one is reported on the page and the default used. The input takes any number, so what a visitor types reaches
    this code too and is checked the same way (the browser's own bounds would hold an out-of-range value on screen
    while the page computed with the previous one).
    """
    if SEED_KEY not in st.session_state:  # a page run without app.py (tests); app.py took the link before the page
        seed_from_link()
    # No value= here: session state holds it (a float input without bounds, so every typed number arrives here)
    typed = st.number_input(SEED_LABEL, step=1.0, format="%.0f", key=SEED_KEY)
    value, problem = links.whole_number(typed, *SEED_RANGE)
    if problem:
        links.notice(f"Seed {links.quote(typed)} is not used: {problem}. Using seed {DEFAULT_SEED}.")
    current = DEFAULT_SEED if problem else value
    if current == DEFAULT_SEED:
        if SEED_KEY in st.query_params:
            del st.query_params[SEED_KEY]
    elif st.query_params.get(SEED_KEY) != str(current):
        st.query_params[SEED_KEY] = str(current)


def seed() -> int:
    """The seed chosen in the sidebar (shared by all pages); the default while what was entered is not a seed."""
    value, problem = links.whole_number(st.session_state.get(SEED_KEY, DEFAULT_SEED), *SEED_RANGE)
    return DEFAULT_SEED if problem else value


def device_label() -> str:
    return device_info().label


def sidebar_controls() -> None:
    """The sidebar's controls — the device, the shared seed, presenter mode.

    app.py draws them after the page, so that a visitor's first chart is not queued behind the JavaScript of the
    sidebar's widgets (the browser fetches a widget's code when the widget arrives, from the same server as
    plotly.js); their state is set before the page (:func:`seed_from_link`, ``ui.presenter.presenter_setup``). A
    page that stops early draws them instead, just before it stops (``ui.running.stop_page``): Streamlit forgets the
    value of a widget a run leaves out. ``st.stop()`` ends the run there, so app.py's call after the page never comes
    too. The one run without them is a session's first run of home (``ui.first_chart``): no widget has a value to
    lose yet, and the rerun that completes the page draws them.
    """
    with st.sidebar:
        st.caption(device_label())
        seed_control()
        presenter_toggle()
        site_link()
    story_to_link()  # the written story every stage page runs, kept in the URL on every page like the seed


SITE_URL_ENV = "LINEAGE_SITE_URL"  # where the lecture's static site is published (python -m lineage site), if anywhere


def site_link() -> None:
    """A link to the lecture as a static site, where the host has published one (``$LINEAGE_SITE_URL``, http or
    https); nothing otherwise."""
    url = os.environ.get(SITE_URL_ENV, "").strip()
    if url.startswith(("https://", "http://")):
        st.link_button("The lecture as a static site", url, help="Every page of the tour, no Python behind it")


MEASURED_BANDWIDTH_KEY = "_measured_bandwidth"  # set by the Live benchmark page, offered by Memory & cost


def remember_measured_bandwidth(bytes_per_s: float, label: str) -> None:
    """Share a memory bandwidth measured live on this device with the other pages of this session."""
    st.session_state[MEASURED_BANDWIDTH_KEY] = (float(bytes_per_s), label)


def measured_bandwidth() -> tuple[float, str] | None:
    """The bandwidth measured on the Live benchmark page in this session, as (bytes per second, where), or None."""
    return st.session_state.get(MEASURED_BANDWIDTH_KEY)
