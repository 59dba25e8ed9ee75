"""Presenter mode: each page as slides for the back of a room (the sidebar's toggle, or ``?present=1`` in the URL).

Body text 24 px, tables 20 px (a table of a dozen columns fits a 1280 px screen), titles and key numbers
(``st.metric``) 48 px, every text in a chart ≥ 18 px, lines ≥ 3 px; the
narrative folds into expanders (``ui.display.prose``), the caps of the controls into one line per page
(``ui.controls.cap_notes``), tables into HTML tables the sizes reach (``ui.display.table``); the sidebar collapses (its
open button stays) and the app's chrome is hidden. app.py sets it up before every page (:func:`presenter_setup`) and
draws the toggle after it (``ui.session.sidebar_controls``).
"""

from __future__ import annotations

import streamlit as st

from lineage.plots.present import Projection, set_projection

PRESENT_KEY = "present"
# Each at least Streamlit's own size (h1 44 px, h2 36 px, body 16 px): presenter mode never shrinks anything.
PRESENTER_PX = {
    "body": 24,
    "table": 20,
    "title": 48,
    "heading": 36,
    "metric": 48,
    "tick": 18,
    "chart_title": 32,
    "chart_text": 20,
}
PROJECTION = Projection(text=PRESENTER_PX["chart_text"], tick=PRESENTER_PX["tick"], title=PRESENTER_PX["chart_title"])
CAPS_NOTE_KEY = "_caps_note"  # this run's one caps note in presenter mode (ui.controls.cap_notes): its slot, its notes

# No "<" anywhere in it, comments included: the browser's HTML sanitiser drops a style element whose text looks like
# markup, and presenter mode would silently do nothing.
_PRESENTER_CSS = f"""
<style>
.stApp, .stApp p, .stApp li, .stApp label, .stApp span, .stApp td, .stApp th,
.stApp div[data-testid="stMarkdownContainer"] {{
  font-size: {PRESENTER_PX["body"]}px !important; color: #000000;
}}
/* a heading's words sit in a span, which the rule above would shrink back to body size */
.stApp h1, .stApp h1 span {{ font-size: {PRESENTER_PX["title"]}px !important; }}
.stApp h2, .stApp h2 span, .stApp h3, .stApp h3 span {{ font-size: {PRESENTER_PX["heading"]}px !important; }}
.stApp code {{ font-size: {PRESENTER_PX["body"] - 4}px !important; }}
/* a slider's value hangs a fixed distance above its thumb: at this size it must grow upwards, not over the thumb */
.stApp div[data-testid="stSliderThumbValue"] {{ top: auto !important; bottom: 100% !important; }}
.stApp div[data-testid="stSlider"] label[data-testid="stWidgetLabel"] {{ margin-bottom: 16px !important; }}
/* hide the chrome but keep the header itself: it holds the button that opens the collapsed sidebar (navigation,
   seed, and the toggle that leaves presenter mode) */
header[data-testid="stHeader"] {{ background: transparent !important; }}
footer, div[data-testid="stToolbarActions"], span[data-testid="stMainMenu"], div[data-testid="stAppDeployButton"],
div[data-testid="stDecoration"] {{
  display: none !important;
}}
.stApp {{ background: #ffffff; }}
/* the page's key numbers: the largest thing on the slide after its title, wrapped rather than cut off */
.stApp div[data-testid="stMetricValue"], .stApp div[data-testid="stMetricValue"] * {{
  font-size: {PRESENTER_PX["metric"]}px !important; line-height: 1.15 !important;
  white-space: normal !important; overflow-wrap: anywhere; text-overflow: clip !important;
}}
.stApp div[data-testid="stMetricValue"] {{ height: auto !important; overflow: visible !important; }}
/* what a control holds (a typed number, a chosen option) reads as large as its label */
.stApp input, .stApp textarea, .stApp div[data-baseweb="select"] div {{
  font-size: {PRESENTER_PX["body"]}px !important;
}}
/* tables a size under the body's, with less padding: the Memory lab's comparison of 12 columns fits 1,120 px */
.stApp td, .stApp th, .stApp td *, .stApp th * {{
  font-size: {PRESENTER_PX["table"]}px !important; padding: 0.35em 0.45em !important;
}}
/* one compact row of controls */
.stApp div[data-testid="stSlider"] {{ padding-bottom: 0 !important; }}
</style>
"""


# In every mode: a key number's label, and a link's (the home page's stage cards, the sidebar's navigation), wraps
# instead of ending in "…" where its column is narrow (a laptop with the sidebar open, a projector); the label is the
# number's meaning or the link's destination, and a cut one says nothing ("Gated DeltaNet-2 (after the article)" is
# wider than the sidebar at 1280 px). No "<" anywhere (see above).
_LAYOUT_CSS = """
<style>
.stApp [data-testid="stMetricLabel"], .stApp [data-testid="stMetricLabel"] *,
.stApp [data-testid="stMain"] [data-testid="stPageLink-NavLink"] *,
.stApp [data-testid="stSidebarNav"] a * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  height: auto !important;
}
/* A link in a table cell (the ledger's "Where" and its sources) breaks between its words, not inside them: a link
   may break anywhere by Streamlit's style, which lets a table squeeze its column to one letter ("Hom" over "e"). The
   ledger names its sources instead of printing their addresses, so no link there is one long word. */
.stApp td a { word-break: normal !important; overflow-wrap: break-word !important; }
</style>
"""


def presenter_requested() -> bool:
    """``?present=1`` (or true/yes/on) in the URL asks for presenter mode when the page first loads."""
    return str(st.query_params.get(PRESENT_KEY, "")).lower() in ("1", "true", "yes", "on")


def presenter_mode() -> bool:
    return bool(st.session_state.get(PRESENT_KEY, False))


def _sync_present_param() -> None:
    if st.session_state.get(PRESENT_KEY):
        st.query_params[PRESENT_KEY] = "1"
    elif PRESENT_KEY in st.query_params:
        del st.query_params[PRESENT_KEY]


def presenter_setup() -> bool:
    """At the start of every run, before the page (app.py): presenter mode from the URL on the session's first run
    (later the toggle's value), the projection of this run's figures, and presenter mode's style."""
    if PRESENT_KEY not in st.session_state:
        st.session_state[PRESENT_KEY] = presenter_requested()
    st.session_state.pop(CAPS_NOTE_KEY, None)  # a new run, a new page: a new caps note
    # every figure this run builds (lineage.plots) comes out at projector sizes, or not
    set_projection(PROJECTION if presenter_mode() else None)
    with st.sidebar:  # style elements only: they take no room there
        st.html(_LAYOUT_CSS + (_PRESENTER_CSS if presenter_mode() else ""))
    return presenter_mode()


def presenter_toggle() -> bool:
    """The sidebar toggle (drawn by ``ui.session.sidebar_controls``), kept in the URL so links carry it."""
    if PRESENT_KEY not in st.session_state:  # a page run without app.py (tests): the URL decides
        presenter_setup()
    st.toggle(
        "Presenter mode",
        key=PRESENT_KEY,
        on_change=_sync_present_param,
        help="Large type and charts for projecting; also ?present=1 in the URL",
    )
    return presenter_mode()
