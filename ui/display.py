"""What a page shows, the house way: the stage header, the narrative, charts (export, alt text, offline animations),
tables, the code that runs, and what to notice. Each follows presenter mode (``ui.presenter``)."""

from __future__ import annotations

import html
import inspect
import math
from collections.abc import Callable, Mapping

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from lineage import stages
from ui.presenter import presenter_mode


def stage_header(stage_key: str) -> stages.Stage:
    """Title, paper, and the stage's one problem solved and one cost introduced."""
    s = stages.stage(stage_key)
    st.title(s.title)
    st.caption(f"{s.representative} · {s.year} · [{s.paper}]({s.url})")
    solved, cost = st.columns(2)
    solved.success(f"**Problem solved.** {s.problem_solved}.")
    cost.warning(f"**Cost introduced.** {s.cost_introduced}.")
    return s


def prose(body: str, *, label: str = "Read the explanation") -> None:
    """A page's narrative (Markdown). In presenter mode it folds into a closed expander, so the slide holds the title,
    the key number and the chart, and the words are one click away; otherwise it is shown as it is."""
    if presenter_mode():
        with st.expander(label):
            st.markdown(body)
    else:
        st.markdown(body)


def what_to_notice(points: list[str]) -> None:
    st.subheader("What to notice")
    prose("\n".join(f"- {p}" for p in points), label="Read what to notice")


def code(text: str) -> None:
    """Python source in a code block. In presenter mode its lines wrap: a code block scrolls sideways, and on a
    projector a line cut at the block's edge is lost to the room, with the shape or equation comment at its end (the
    equation panel's column is 1,048 px at 1920 and 664 px at 1280, its lines up to 1,486 px)."""
    st.code(text, language="python", wrap_lines=presenter_mode())


def show_code(*objects, title: str = "The code that runs") -> None:
    """Show the real source of functions/classes from ``lineage`` (read at run time, so it cannot drift)."""
    with st.expander(title, expanded=False):
        for obj in objects:
            st.caption(f"`{obj.__module__}.{obj.__qualname__}`")
            code(inspect.getsource(obj))


def standalone_html(fig: go.Figure, title: str) -> bytes:
    """The figure as one offline HTML file (plotly.js inlined), ready to open from disk and play."""
    html = fig.to_html(
        include_plotlyjs=True, full_html=True, auto_play=False, config={"displaylogo": False, "responsive": True}
    )
    return html.replace("<head>", f"<head><title>{title} — Attention Lineage</title>", 1).encode("utf-8")


def chart(fig: go.Figure, *, key: str, alt: str, export_name: str | None = None) -> None:
    """Show a Plotly figure the house way: PNG/SVG export from the toolbar, alt text, and — for animations — a
    download of the animation as a standalone offline HTML file.

    In presenter mode the figure is already at projector sizes: ``ui.presenter.presenter_setup`` turns the projection
    of :mod:`lineage.plots.present` on for the run, and the builders apply it to their dicts as they build (scaling a
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
    for name, row in zip(df.index, df.to_dict("records"), strict=True):  # iterrows would make a row's ints floats
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


def markdown_table(rows: list[dict[str, object]]) -> str:
    """A Markdown table of ``rows`` (one dict per row; the first row's keys are the header), for ``st.markdown``.

    The home page shows its table this way rather than with ``st.table``: a table element makes the browser load
    and parse Streamlit's Arrow machinery (about 1 MB of JavaScript) while the page's first chart is still waiting
    for plotly.js, on the same main thread. Pipes and backslashes in cells are escaped, line breaks flattened.
    """
    if not rows:
        raise ValueError("markdown_table needs at least one row")

    def cell(x: object) -> str:
        return str(x).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    header = list(rows[0])
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(row[h]) for h in header) + " |" for row in rows]
    return "\n".join(lines)
