"""What ``serve.py`` (the README's start and the container's) does before the server answers.

- It refuses a port that is taken before anything heavy is imported (``port_problem``): a second server on a busy
  port says so at once instead of after ten seconds of importing torch.
- It pays the costs Streamlit pays once per process, on the first visitor's first script run (``warm_first_run``),
  and imports what every page needs (``HEAVY_MODULES``), so the first visitor waits for neither.

And in the app itself, on a session's first run: ``warm_chart_renderer`` sends a blank, tiny Plotly chart before
anything else, and removes it once the page has run. Streamlit's frontend fetches and evaluates plotly.js (a 4.7 MB
chunk, about 1.5 s on one core of a small CPU) only when a page's first chart arrives; this makes that happen while
the page's script is still computing, instead of after it. ``LINEAGE_WARM_CHART=0`` turns it off (to measure it:
scripts/measure_cold_start.py times both).

Everything here goes through public interfaces: the command line the user gave, the standard library's sockets and
``inspect``, ``importlib``, and ``st.empty`` / ``st.plotly_chart``. Nothing in Streamlit is replaced or rewritten.
"""

from __future__ import annotations

import importlib
import inspect
import os
import socket
from collections.abc import Callable

DEFAULT_PORT = 8501  # Streamlit's
DEFAULT_ADDRESS = "0.0.0.0"  # what Streamlit binds when no address is given

# What the app's first script run imports, heaviest first (about 2.5 s on one core of a small CPU, torch most of it).
# torch.fx's symbolic shapes: Module.to_empty, on the softmax pages, pulls in sympy (0.5 s).
HEAVY_MODULES = (
    "torch",
    "torch.fx.experimental.symbolic_shapes",
    "numpy",
    "pandas",
    "plotly.graph_objects",
    "lineage.demo",
    "lineage.plots",
    "ui.classroom",
    "ui.common",
)


def option(argv: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in Streamlit's command line, or None (last one wins)."""
    value = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def requested_port(argv: list[str], environ: dict[str, str] | None = None) -> tuple[int, str] | None:
    """(port, address) the user asked for, on the command line or in Streamlit's environment variables; None when the
    port is left to Streamlit (which then moves to the next free port by itself, so there is nothing to refuse)."""
    environ = os.environ if environ is None else environ
    port = option(argv, "--server.port") or environ.get("STREAMLIT_SERVER_PORT")
    if port is None:
        return None
    address = option(argv, "--server.address") or environ.get("STREAMLIT_SERVER_ADDRESS") or DEFAULT_ADDRESS
    try:
        return int(port), address
    except ValueError:
        return None  # Streamlit's own option parsing reports it


def port_problem(port: int, address: str) -> str | None:
    """Why the server could not listen on ``address:port``, or None when it can (checked by binding it, then letting
    it go). Streamlit sets SO_REUSEADDR on its socket, so this does too: a port in TIME_WAIT is not "taken"."""
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError as exc:
            return f"port {port} on {address} is not available ({exc.strerror or exc}); choose another: --server.port N"
    return None


def import_heavy_modules() -> None:
    """Import what every page imports, so the first visitor's script run does not."""
    for name in HEAVY_MODULES:
        importlib.import_module(name)


def warm_first_run() -> None:
    """Pay, now, what the first script run of the process would pay.

    - Streamlit's first element of a process calls ``inspect.stack()`` to tell a REPL from ``streamlit run``. The
      first call maps the file of every loaded module (about 0.2 s with torch loaded); later calls reuse that map.
    - ``st.set_page_config``'s favicon imports ``PIL.Image`` (0.05 s).
    """
    inspect.stack()
    importlib.import_module("PIL.Image")


WARM_CHART_ENV = "LINEAGE_WARM_CHART"
WARMED_KEY = "_chart_renderer_warmed"  # session state: the session's browser has loaded plotly.js


def warm_chart_renderer() -> Callable[[], None]:
    """On a session's first run, put a blank 10-pixel Plotly chart at the top of the page so that the browser starts
    loading plotly.js now; returns the function that removes it (call it once the page has run). Later runs, and
    ``LINEAGE_WARM_CHART=0``, draw nothing."""
    import plotly.graph_objects as go
    import streamlit as st

    if st.session_state.get(WARMED_KEY) or os.environ.get(WARM_CHART_ENV, "1") == "0":
        return lambda: None
    st.session_state[WARMED_KEY] = True
    slot = st.empty()
    hidden = {"visible": False}
    no_margin = {"l": 0, "r": 0, "t": 0, "b": 0}
    blank = go.Figure(layout={"height": 10, "margin": no_margin, "xaxis": hidden, "yaxis": hidden})
    slot.plotly_chart(blank, config={"staticPlot": True, "displayModeBar": False}, key="warm_chart_renderer")
    return slot.empty
