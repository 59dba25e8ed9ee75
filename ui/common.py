"""Page machinery shared by every page: the shared seed, stage headers, code from source, caps, notes."""

from __future__ import annotations

import inspect

import streamlit as st

from lineage import demo, stages
from lineage.device import device_info
from ui import links
from ui.classroom import controls_row, prose

SEED_KEY = "seed"
DEFAULT_SEED = 0
SEED_RANGE = (0, 2**31 - 1)  # what torch.Generator.manual_seed takes, and fits every int type on the way


def seed_control() -> None:
    """The shared seed in the sidebar, read from and written to the URL's ``seed`` by this code.

    The number input is not bound to the URL: the value a link gives is parsed here (an integer in SEED_RANGE), so
    a bad one is reported on the page and the default used. The input takes any number, so what a visitor types
    reaches this code too and is checked the same way (the browser's own bounds would hold an out-of-range value on
    screen while the page computed with the previous one).
    """
    if SEED_KEY not in st.session_state:  # the session's first run: the link decides
        given = st.query_params.get(SEED_KEY)
        value, problem = links.whole_number(given, *SEED_RANGE) if given is not None else (DEFAULT_SEED, None)
        if problem:
            links.notice(f"The link's seed `{links.shown(given)}` is not used: {problem}. Using seed {DEFAULT_SEED}.")
        st.session_state[SEED_KEY] = float(DEFAULT_SEED if problem else value)
    # No value= here: session state holds it (a float input without bounds, so every typed number arrives here)
    typed = st.number_input("Seed (shared by all pages)", step=1.0, format="%.0f", key=SEED_KEY)
    value, problem = links.whole_number(typed, *SEED_RANGE)
    if problem:
        links.notice(f"Seed `{links.shown(typed)}` is not used: {problem}. Using seed {DEFAULT_SEED}.")
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


def stage_header(stage_key: str) -> stages.Stage:
    """Title, paper, and the stage's one problem solved and one cost introduced."""
    s = stages.stage(stage_key)
    st.title(s.title)
    st.caption(f"{s.representative} · {s.year} · [{s.paper}]({s.url})")
    solved, cost = st.columns(2)
    solved.success(f"**Problem solved.** {s.problem_solved}.")
    cost.warning(f"**Cost introduced.** {s.cost_introduced}.")
    return s


def show_code(*objects, title: str = "The code that runs") -> None:
    """Show the real source of functions/classes from ``lineage`` (read at run time, so it cannot drift)."""
    with st.expander(title, expanded=False):
        for obj in objects:
            st.caption(f"`{obj.__module__}.{obj.__qualname__}`")
            st.code(inspect.getsource(obj), language="python")


def what_to_notice(points: list[str]) -> None:
    st.subheader("What to notice")
    prose("\n".join(f"- {p}" for p in points), label="Read what to notice")


def cap_note(name: str, cap: int) -> str:
    """The text shown next to a capped control."""
    return f"{name} is capped at {cap:,} on {device_info().type} (so every run stays fast for everyone)."


MEASURED_BANDWIDTH_KEY = "measured_bandwidth"  # set by the Live benchmark page, offered by Memory & cost


def remember_measured_bandwidth(bytes_per_s: float, label: str) -> None:
    """Share a memory bandwidth measured live on this device with the other pages of this session."""
    st.session_state[MEASURED_BANDWIDTH_KEY] = (float(bytes_per_s), label)


def measured_bandwidth() -> tuple[float, str] | None:
    """The bandwidth measured on the Live benchmark page in this session, as (bytes per second, where), or None."""
    return st.session_state.get(MEASURED_BANDWIDTH_KEY)


def run_or_stop(fn, *args, **kwargs):
    """Call into ``lineage``; a ValueError (bad sizes, bad knobs) is shown as a message and ends the page there."""
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        st.error(f"Can't run this: {exc}")
        st.stop()


def caps() -> demo.Caps:
    """The live device's caps (CPU small, GPU larger): every page takes its controls' maxima from here."""
    return demo.caps()


def size_controls(prefix: str, *, T: int = 32, K: int = 8, V: int = 8) -> tuple[int, int, int]:
    """Sequence length and head dims of a stage page, with their caps shown beside them."""
    cap = caps()
    a, b, c = controls_row(3, caps=[cap_note("T", cap.T), cap_note("K", cap.state_dim), cap_note("V", cap.state_dim)])
    T = a.slider("Sequence length T", 4, cap.T, T, bind="query-params", key=f"{prefix}_T")
    K = b.slider("Key dim K (rows of the state)", 2, cap.state_dim, K, bind="query-params", key=f"{prefix}_K")
    V = c.slider("Value dim V (columns of the state)", 2, cap.state_dim, V, bind="query-params", key=f"{prefix}_V")
    return T, K, V


def live_run_report(run) -> None:
    """Where a ``lineage.demo.StageRun`` ran, and how closely its fast forms match the step-by-step reference."""
    a, b, c = st.columns(3)
    a.metric(
        "chunked form vs recurrence",
        f"{run.err_chunk:.1e}",
        help="Largest |chunked − recurrent| over the largest |recurrent| output.",
    )
    b.metric(
        "T×T form vs recurrence",
        f"{run.err_parallel:.1e}",
        help="Largest |parallel − recurrent| over the largest |recurrent| output.",
    )
    ms = {form: f"{s * 1e3:.2f} ms" for form, s in run.seconds.items()}
    c.metric(
        "chunked form, one run",
        ms["chunk"],
        help=f"Median wall time; recurrent {ms['recurrent']}, T×T {ms['parallel']}.",
    )
    st.caption(f"Computed live ({run.device}).")


def run_or_error(fn, *args, **kwargs):
    """Call into ``lineage``; a ValueError is shown as a message and None returned, so the rest of the page still
    runs (unlike :func:`run_or_stop`, for pages whose sections are independent)."""
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        st.error(f"Can't run this: {exc}")
        return None
