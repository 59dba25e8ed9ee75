"""What ``serve.py`` (the README's start and the container's) does before the server answers.

- It refuses a port that is taken before anything heavy is imported (``port_problem``): a second server on a busy
  port says so at once instead of after ten seconds of importing torch.
- It pays the costs Streamlit pays once per process, on the first visitor's first script run (``warm_first_run``),
  and imports what every page needs (``HEAVY_MODULES``), so the first visitor waits for neither.
- It then freezes what it imported out of the garbage collector's sight (``freeze_preloaded``): a full collection
  of the preloaded heap took 0.18 s, during which the server answers nobody.

Streamlit's frontend loads plotly.js (a 4.7 MB chunk) only when a page's first chart arrives. Starting it earlier by
public means (a blank chart sent first on a session's first run, removed after the page ran) was measured with
scripts/measure_cold_start.py, interleaved with the same start without it, on 2 cores: 3.67 s against 3.76 s and
4.31 s against 3.50 s to the first chart (medians of 5): no gain, so the app does not do it. What helps is the
other way round: holding back what would compete with plotly.js until the chart is drawn (``ui.first_chart``).

Everything here goes through public interfaces: the command line the user gave, the standard library's sockets,
``inspect`` and ``importlib``, Pillow's and Plotly's own. Nothing in Streamlit is replaced or rewritten.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import os
import socket

# The Content-Security-Policy a host can send in front of the app (README, "Deploying"): scripts, styles, images, fonts
# and connections from the app's own origin only, so that a slip that let a visitor's text become Markdown again could
# still load nothing from outside (no tracking image, no outside script). Streamlit's frontend needs inline styles,
# inline and eval'd scripts (its components and Plotly), blob: workers and data: images and fonts, and its websocket.
# Nothing in the app depends on it; tests/e2e/test_links_browser.py serves every page under it.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval' blob:; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self' ws: wss:; worker-src 'self' blob:; "
    "frame-src 'self' blob: data:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'"
)

DEFAULT_PORT = 8501  # Streamlit's
DEFAULT_ADDRESS = "0.0.0.0"  # what Streamlit binds when no address is given
WARM_UP_FILE = "<ui.serving warm-up>"  # the file name of code that is no module (warm_first_run)

# What the app's first script run imports, heaviest first (about 2.5 s on one core of a small CPU, torch most of it).
# torch.fx's symbolic shapes: Module.to_empty, on the softmax pages, pulls in sympy (0.5 s).
HEAVY_MODULES = (
    "torch",
    "torch.fx.experimental.symbolic_shapes",
    "numpy",
    "pandas",
    "plotly.graph_objects",
    "lineage.teach.stage_runs",
    "lineage.plots",
    "ui.display",
    "ui.controls",
    "ui.running",
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

    - Streamlit's first element of a process calls ``inspect.stack()`` to tell a REPL from ``streamlit run``. For a
      frame of the app's script, which is no module, ``inspect.getmodule`` maps the file of every loaded module not
      mapped yet: 1,600 of them after the preload, 0.06–0.07 s, before the first visitor's title could be sent. Asking
      it once here, for code that is no module either, builds that map now; later calls map only modules loaded since.
      (A plain ``inspect.stack()`` here would not: this module's own file is mapped already, so it stops early.)
    - ``st.set_page_config``'s favicon opens it with Pillow, whose first image loads its format plugins
      (``PIL.Image.preinit``, 0.01 s).
    - The first chart's figure is written as JSON by plotly.io, which imports its JSON machinery on first use (0.06 s).
    - The chunked form's compiled code (``lineage.ops.native``) is built for this machine's CPU, or found built in the
      cache: about 3 s the first time on a machine, which the first visitor of a page with a chunked run would wait for.
    """
    from lineage.ops import native

    native.status()
    from PIL import Image

    Image.preinit()
    import plotly.graph_objects as go

    go.Figure(go.Scatter(x=[0.0], y=[0.0])).to_json()
    inspect.getmodule(compile("", WARM_UP_FILE, "exec"))  # last: after every import above


def freeze_preloaded() -> int:
    """Move every object alive now — the preloaded modules', which live as long as the server — into the garbage
    collector's permanent generation (``gc.freeze``, the standard library's tool for preloaded servers), and return
    how many there are.

    After the preload some 295,000 objects are tracked, and a full collection walks them all: 0.18 s measured (2
    cores), on the server's one event loop, so a collection that falls while a visitor's page loads holds up the
    plotly.js chunk and every message of that page. Frozen, they are never walked again (a full collection: under
    1 ms). Interleaved cold starts, 5 rounds, under load: first chart 2.69 s frozen against 2.93 s not (bare app 2.52).
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
