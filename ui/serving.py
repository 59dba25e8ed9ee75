"""What ``serve.py`` (the hosted demo's start) does before the server answers, so the first visitor waits less.

- It pays costs Streamlit pays once per process, on the first visitor's first script run (``warm_first_run``).
- It prepares a page shell that loads plotly.js from the start (``static_dir_with_chart_import``). Streamlit's
  frontend otherwise fetches plotly.js only when a page's first chart arrives: a 4.7 MB chunk that takes about 1.5 s
  to evaluate on one core of a small CPU. Every page of this app has charts, so the shell preloads that chunk with
  the frontend and imports it as soon as the frontend has loaded. The work then overlaps the websocket handshake and
  the server's script run, instead of following them. Measured on 2 cores: the home page's first chart 0.5 s sooner
  (median of 6 cold starts).
"""

from __future__ import annotations

import atexit
import inspect
import re
import shutil
import tempfile
from pathlib import Path

CHART_CHUNK_GLOB = "PlotlyChart.*.js"  # Streamlit's lazily loaded chart component, plotly.js bundled in
MARKER = "lineage: chart import"
# One static import at the head of a bundled chunk: `import{a as b}from"./x.js";` or `import"./x.js";`
_STATIC_IMPORT = re.compile(r'\s*import\s*(?:[\w$*{}\s,]+?\s*from\s*)?"\./([\w.$-]+\.js)";?')


def warm_first_run() -> None:
    """Pay, now, what the first script run of the process would pay.

    - Streamlit's first element of a process calls ``inspect.stack()`` to tell a REPL from ``streamlit run``. The
      first call maps the file of every loaded module (about 0.2 s with torch loaded); later calls reuse that map.
    - ``st.set_page_config``'s favicon imports ``PIL.Image`` (0.05 s).
    """
    inspect.stack()
    import PIL.Image  # noqa: F401


def chart_chunk(static_dir: Path) -> str | None:
    """The file name of Streamlit's chart chunk under ``static_dir/static/js``; None unless exactly one matches."""
    found = sorted(p.name for p in (static_dir / "static" / "js").glob(CHART_CHUNK_GLOB))
    return found[0] if len(found) == 1 else None


def static_imports(source: str) -> list[str]:
    """The files a bundled chunk imports statically (the run of import statements at its head), in order."""
    found, pos = [], 0
    while match := _STATIC_IMPORT.match(source, pos):
        found.append(match.group(1))
        pos = match.end()
    return found


def page_shell_with_chart_import(html: str, chunk: str, imports: list[str]) -> str:
    """Streamlit's ``index.html``, changed to load ``chunk`` (which statically imports ``imports``) from the start.

    - A ``modulepreload`` link for the chunk and for each of its imports the page does not preload already: the
      browser fetches and parses them alongside the frontend, instead of discovering them one round trip at a time.
    - A module script that imports the chunk. The chunk imports the frontend's entry module, so the browser evaluates
      it right after the frontend: while the websocket opens and the server runs the page, not after the page's
      first chart arrives.

    Paths are relative, as Streamlit's own tags are, so they work under any base URL and from any page's deep link.
    """
    if "</head>" not in html:
        raise ValueError("Streamlit's index.html has no </head>: cannot add the chart import")
    links = [
        f'<link rel="modulepreload" crossorigin href="./static/js/{name}">\n  '
        for name in [chunk, *imports]
        if f"/{name}" not in html
    ]
    script = f'<script type="module">/* {MARKER} */ import("./static/js/{chunk}")</script>\n  '
    return html.replace("</head>", "".join(links) + script + "</head>", 1)


def static_dir_with_chart_import(source: Path, target: Path) -> bool:
    """Fill the empty folder ``target`` with Streamlit's static folder ``source``, but a page shell that imports the
    chart chunk early. Everything but ``index.html`` is a symbolic link into ``source``. Returns False, leaving
    ``target`` empty, when this Streamlit has no single chart chunk (a layout this code does not know)."""
    chunk = chart_chunk(source)
    if chunk is None:
        return False
    imports = static_imports((source / "static" / "js" / chunk).read_text(encoding="utf-8"))
    html = page_shell_with_chart_import((source / "index.html").read_text(encoding="utf-8"), chunk, imports)
    for entry in source.iterdir():
        if entry.name != "index.html":
            (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    (target / "index.html").write_text(html, encoding="utf-8")
    return True


def static_dir_for_serving() -> Path | None:
    """A temporary folder serving Streamlit's static files, with a page shell that imports the chart chunk early
    (removed when the process exits), or None when Streamlit's layout is not the one expected. ``serve.py`` points
    the server at it before the server starts; with None it serves Streamlit's own folder, and only the early import
    is lost."""
    from streamlit import file_util

    target = Path(tempfile.mkdtemp(prefix="lineage-static-"))
    atexit.register(shutil.rmtree, target, ignore_errors=True)
    if not static_dir_with_chart_import(Path(file_util.get_static_dir()), target):
        return None
    return target
