"""The first chart first: a session's first run of the home page draws up to its first chart and stops; the browser
asks for the rest once that chart is drawn.

Why. In a fresh browser tab the first Plotly chart waits for plotly.js, a 4.7 MB chunk that Streamlit's frontend
fetches when the first chart arrives and then evaluates for about 0.7 s of the browser's main thread (2 cores).
Everything else a run draws meanwhile brings its own code: the sidebar's seed input and presenter switch, the page
links of the stage grid, the metrics — some 25 more chunks. The browser fetched and ran them in the same window, and
the chart waited 0.3–0.5 s longer for it (`scripts/measure_cold_start.py`, against a bare app of a title and one
chart). Holding the rest back until the chart is drawn removes that wait, and the whole page is complete no later than
before (it is the same work, in another order).

How, by public means only:

- ``start_run`` (top of app.py) notes whether this run is the session's first.
- ``defer_rest`` (the home page, after its first chart): on the first run it mounts a small ``st.components.v2``
  component and ends the run (``st.stop()``, so app.py's sidebar controls wait too). The component's script runs in
  the page: it watches the document until plotly.js has drawn a chart (``.js-plotly-plot .main-svg``, plotly.js's
  own class names) or ``FALLBACK_MS`` have passed; once the browser is then idle it sets a trigger value, which
  Streamlit answers with a rerun. That rerun is not the session's first, so the whole page is drawn.
- Any later run draws everything, trigger or not; so does a Streamlit without ``st.components.v2`` (logged once).
"""

from __future__ import annotations

import functools
import logging

import streamlit as st

from ui import links

RUNS_KEY = "_runs_started"  # session state: how many runs this session has started (1 during its first)
PROBE_KEY = "_first_chart_probe"
COMPONENT_NAME = "attention_lineage_first_chart"
PROBE_HTML = '<span data-lineage-probe="first-chart" hidden></span>'  # gone once the page is complete (tests wait)
FALLBACK_MS = 5000  # the rest comes after this long even if no chart is ever drawn (plotly.js failed to load)

PROBE_JS = f"""
export default function ({{ setTriggerValue }}) {{
  const drawn = () => document.querySelector(".js-plotly-plot .main-svg") !== null;
  let done = false;
  let timer = null;
  const observer = new MutationObserver(() => {{ if (drawn()) finish(); }});
  function finish() {{
    if (done) return;
    done = true;
    observer.disconnect();
    clearTimeout(timer);
    // once the browser is idle: plotly.js has finished drawing and the frame is painted (Safari: a short delay)
    const send = () => setTriggerValue("drawn", true);
    if (window.requestIdleCallback) requestIdleCallback(send, {{ timeout: 1000 }});
    else setTimeout(send, 100);
  }}
  timer = setTimeout(finish, {FALLBACK_MS});
  if (drawn()) finish();
  else observer.observe(document.body, {{ childList: true, subtree: true }});
  return () => {{ observer.disconnect(); clearTimeout(timer); }};
}}
"""

log = logging.getLogger(__name__)


def start_run() -> None:
    """At the top of app.py, before anything is drawn: count this run, so that the page can tell the session's first."""
    st.session_state[RUNS_KEY] = st.session_state.get(RUNS_KEY, 0) + 1


def is_first_run() -> bool:
    return st.session_state.get(RUNS_KEY) == 1


@functools.cache  # once per process: a component is registered once, by name
def probe():
    """The component's mount function; None if this Streamlit has no usable components v2 (then nothing waits)."""
    try:
        return st.components.v2.component(COMPONENT_NAME, html=PROBE_HTML, js=PROBE_JS, isolate_styles=False)
    except Exception as exc:  # an older or changed Streamlit: draw every page in one go instead
        log.warning("ui.first_chart: st.components.v2 is not usable (%s); pages are drawn in one go", exc)
        return None


def defer_rest() -> None:
    """Call right after the page's first chart: on the session's first run, end the run here until the browser has
    drawn that chart (see the module's docstring). Otherwise, and when the component cannot be made, do nothing."""
    if not is_first_run():
        return
    mount = probe()
    if mount is None:
        return
    mount(key=PROBE_KEY, on_drawn_change=_drawn)
    links.report(complete=False)  # what the link asked for that this part of the page could not use
    links.carry_over()  # and the rerun that completes the page says it again, with the rest
    st.stop()


def _drawn() -> None:
    """The trigger's callback: nothing to do, the rerun it causes is the point."""
