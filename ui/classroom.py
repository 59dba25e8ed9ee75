"""For teachers and the hosted demo: presenter mode, the guided tour, step controls, charts with export and alt text.

Presenter mode (sidebar toggle, or ``?present=1`` in the URL) turns each page into slides for the back of a room —
body text 24 px, titles and key numbers (``st.metric``) 48 px, every text in a chart ≥ 18 px, lines ≥ 3 px; the
narrative folds into expanders (:func:`prose`), the caps of the controls into one line per page (:func:`cap_notes`) —
collapses the sidebar (its open button stays) and hides app chrome. The tour walks the lineage pages in order with
one-line transitions and keyboard shortcuts.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from lineage.plots.present import Projection, set_projection
from ui import player
from ui.links import whole_number
from ui.nav import DEFAULT_PAGE, PageEntry, neighbours, transition

PRESENT_KEY = "present"
# Each at least Streamlit's own size (h1 44 px, h2 36 px, body 16 px): presenter mode never shrinks anything.
PRESENTER_PX = {"body": 24, "title": 48, "heading": 36, "metric": 48, "tick": 18, "chart_title": 32, "chart_text": 20}
PROJECTION = Projection(text=PRESENTER_PX["chart_text"], tick=PRESENTER_PX["tick"], title=PRESENTER_PX["chart_title"])

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
/* one compact row of controls */
.stApp div[data-testid="stSlider"] {{ padding-bottom: 0 !important; }}
</style>
"""


# In every mode: a key number's label wraps instead of ending in "…" where its column is narrow (a laptop with the
# sidebar open); the label is the number's meaning, and a cut one says nothing. No "<" anywhere (see above).
_LAYOUT_CSS = """
<style>
.stApp [data-testid="stMetricLabel"], .stApp [data-testid="stMetricLabel"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  height: auto !important;
}
</style>
"""

_CAPS_NOTE = "_classroom_caps_note"  # this run's one caps note in presenter mode: its slot on the page and its notes


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
    st.session_state.pop(_CAPS_NOTE, None)  # a new run, a new page: a new caps note
    # every figure this run builds (lineage.plots) comes out at projector sizes, or not
    set_projection(PROJECTION if presenter_mode() else None)
    with st.sidebar:  # style elements only: they take no room there
        st.html(_LAYOUT_CSS + (_PRESENTER_CSS if presenter_mode() else ""))
    return presenter_mode()


def presenter_toggle() -> bool:
    """The sidebar toggle (drawn by ``ui.common.sidebar_controls``), kept in the URL so links carry it."""
    if PRESENT_KEY not in st.session_state:  # a page run without app.py (tests): the URL decides
        presenter_setup()
    st.toggle(
        "Presenter mode",
        key=PRESENT_KEY,
        on_change=_sync_present_param,
        help="Large type and charts for projecting; also ?present=1 in the URL",
    )
    return presenter_mode()


def prose(body: str, *, label: str = "Read the explanation") -> None:
    """A page's narrative (Markdown). In presenter mode it folds into a closed expander, so the slide holds the title,
    the key number and the chart, and the words are one click away; otherwise it is shown as it is."""
    if presenter_mode():
        with st.expander(label):
            st.markdown(body)
    else:
        st.markdown(body)


def cap_notes(notes: Sequence[str]) -> None:
    """The caps of a page's controls as one line: under the row of controls normally, and in presenter mode once per
    page — every later call adds its notes to the line the first call placed, instead of a line under every row."""
    notes = [n for n in notes if n]
    if not notes:
        return
    if not presenter_mode():
        st.caption(" ".join(notes))
        return
    note = st.session_state.get(_CAPS_NOTE)
    if note is None:
        note = st.session_state[_CAPS_NOTE] = {"slot": st.empty(), "notes": []}
    note["notes"] += [n for n in notes if n not in note["notes"]]
    note["slot"].caption(" ".join(note["notes"]))


def controls_row(spec: int | Sequence[float], *, caps: Sequence[str] = ()) -> list:
    """One compact row of controls (``st.columns(spec)``, small gaps, aligned at the bottom), with the caps of those
    controls noted once (:func:`cap_notes`). Fill the returned columns with the widgets."""
    columns = st.columns(spec, gap="small", vertical_alignment="bottom")
    cap_notes(caps)
    return columns


def standalone_html(fig: go.Figure, title: str) -> bytes:
    """The figure as one offline HTML file (plotly.js inlined), ready to open from disk and play."""
    html = fig.to_html(
        include_plotlyjs=True, full_html=True, auto_play=False, config={"displaylogo": False, "responsive": True}
    )
    return html.replace("<head>", f"<head><title>{title} — Attention Lineage</title>", 1).encode("utf-8")


def chart(fig: go.Figure, *, key: str, alt: str, export_name: str | None = None) -> None:
    """Show a Plotly figure the house way: PNG/SVG export from the toolbar, alt text, and — for animations — a
    download of the animation as a standalone offline HTML file.

    In presenter mode the figure is already at projector sizes: :func:`presenter_setup` turns the projection of
    :mod:`lineage.plots.present` on for the run, and the builders apply it to their dicts as they build (scaling a
    finished figure through Plotly's property API cost ~70 ms an animation on every redraw).
    """
    name = export_name or key
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2},
        "modeBarButtonsToAdd": ["toImage"],
    }
    st.plotly_chart(fig, key=key, config=config, alt=alt, width="stretch")
    if fig.frames:
        st.download_button(
            "Download this animation (offline HTML)",
            data=lambda: standalone_html(fig, name),
            file_name=f"{name}.html",
            mime="text/html",
            key=f"{key}_export",
        )


def html_table(
    df: pd.DataFrame,
    *,
    formats: Mapping[str, Callable[[object], str]] | None = None,
    exact: Mapping[str, Callable[[object], str]] | None = None,
    labels: Mapping[str, str] | None = None,
    index: bool = False,
) -> str:
    """``df`` as an HTML table: cells written by ``formats`` (per column; numbers otherwise to 3 significant
    digits, missing values blank), headers renamed by ``labels``, and every cell of a column in ``exact`` carrying
    that exact form as its hover text. Everything is escaped; the table scrolls inside its own box if too wide."""
    formats, exact, labels = formats or {}, exact or {}, labels or {}

    def text(column: str, value) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        if column in formats:
            return formats[column](value)
        return f"{value:.3g}" if isinstance(value, float) else str(value)

    def cell(column: str, value, tag: str = "td") -> str:
        shown = html.escape(text(column, value))
        if column in exact and shown:
            return f'<{tag} title="{html.escape(exact[column](value))}">{shown}</{tag}>'
        return f"<{tag}>{shown}</{tag}>"

    head = ([f"<th>{html.escape(str(df.index.name or ''))}</th>"] if index else []) + [
        f"<th>{html.escape(labels.get(c, str(c)))}</th>" for c in df.columns
    ]
    rows = []
    for name, row in df.iterrows():
        first = [f"<th>{html.escape(str(name))}</th>"] if index else []
        rows.append("<tr>" + "".join(first + [cell(c, row[c]) for c in df.columns]) + "</tr>")
    return (
        '<div class="lineage-table" style="overflow-x: auto"><table><thead><tr>'
        + "".join(head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


def table(
    df: pd.DataFrame,
    *,
    key: str,
    formats: Mapping[str, Callable[[object], str]] | None = None,
    exact: Mapping[str, Callable[[object], str]] | None = None,
    labels: Mapping[str, str] | None = None,
    index: bool = False,
    column_config: Mapping | None = None,
) -> None:
    """A table the house way. Normally Streamlit's sortable table; in presenter mode an HTML table instead, which the
    presenter sizes reach (the sortable table is drawn on a canvas no style can enlarge), with each ``exact`` cell's
    exact value on hover."""
    if presenter_mode():
        st.markdown(html_table(df, formats=formats, exact=exact, labels=labels, index=index), unsafe_allow_html=True)
        return
    styled = df.style.format(dict(formats or {}), na_rep="", precision=3)
    st.dataframe(styled, hide_index=not index, key=key, width="stretch", column_config=column_config)


def step_control(page: str, n_steps: int, *, label: str = "Step t") -> int:
    """◀ / ▶ buttons (keyboard: J back, K forward) stepping every animation on the page, and the step they open at.

    The page shows the step in one place only, the animations themselves: their slider, the step's sentence and their
    markers all live in the frames, so Play moves everything together and nothing can show another step. The buttons
    and keys run in the browser and move the animations from the frame they show (``ui.player``), as the slider and
    Play do: one step, whichever control moved it. Every move is kept in the URL (?<page>_step=…), so a link opens at
    it and a rerun keeps it; a page opens on its last step. Steps count from 0, like the frame labels and the matrix
    axes. Returns the step the animations open at.
    """
    key = f"{page}_step"
    last = n_steps - 1
    step, _ = whole_number(st.query_params.get(key, last), 0, last)
    # in session state under the URL's name, as a control's value is: ui.links judges a link's value against it
    st.session_state[key] = last if step is None else step
    player.step_buttons(key, label=label, key=f"_{key}_buttons")  # the app's own state: "_" (ui.links)
    return st.session_state[key]


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
