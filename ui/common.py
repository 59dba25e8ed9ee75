"""Page machinery shared by every page: the shared seed, stage headers, code from source, caps, notes."""

from __future__ import annotations

import inspect

import streamlit as st

from lineage import stages
from lineage.device import device_info
from lineage.teach import story
from lineage.units import format_bytes
from ui import limits, links
from ui.caps import Caps, Cost
from ui.caps import caps as device_caps
from ui.classroom import controls_row, presenter_toggle, prose
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


def whole_number_input(
    container, label: str, *, key: str, default: int, lo: int | None = None, hi: int | None = None, step: int = 1
) -> int:
    """A whole number typed or linked (``?key=N``) that this code checks: the number, or ``default`` after an error
    that names the control, the value given and what is allowed.

    A float input shown without decimals, not Streamlit's integer input: the browser parses what is typed into an
    integer input itself (``1e12`` becomes 1) and keeps an out-of-range value on screen without sending it, and a
    link's ``inf`` for an integer input raised OverflowError inside Streamlit 1.67. A float input sends every number
    typed, and a link's ``inf`` is refused by Streamlit and reported by ``ui.links``.
    """
    typed = container.number_input(
        label, value=float(default), step=float(step), format="%.0f", key=key, bind="query-params"
    )
    number, problem = links.whole_number(typed, lo, hi)
    if problem:
        container.error(f"{label}: {links.quote(typed)} is not used: {problem}. Using {default:,}.")
        return default
    return number


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


def run_cost_note(what: str, cost: Cost, budget: Cost) -> str:
    """The text beside a control whose run is capped by its measured cost (``ui.caps``)."""
    return (
        f"{what}: about {format_bytes(cost.bytes)} and {cost.seconds:.2f} s; one run may take up to "
        f"{format_bytes(budget.bytes)} and "
        f"{budget.seconds:.1f} s on {device_info().type} (measured costs, `ui/caps.py`), so every run stays fast for "
        "everyone."
    )


MEASURED_BANDWIDTH_KEY = "_measured_bandwidth"  # set by the Live benchmark page, offered by Memory & cost


def remember_measured_bandwidth(bytes_per_s: float, label: str) -> None:
    """Share a memory bandwidth measured live on this device with the other pages of this session."""
    st.session_state[MEASURED_BANDWIDTH_KEY] = (float(bytes_per_s), label)


def measured_bandwidth() -> tuple[float, str] | None:
    """The bandwidth measured on the Live benchmark page in this session, as (bytes per second, where), or None."""
    return st.session_state.get(MEASURED_BANDWIDTH_KEY)


BUSY_TEXT = "The server is busy with other visitors' runs: try again in a minute."


def sidebar_controls() -> None:
    """The sidebar's controls — the device, the shared seed, presenter mode.

    app.py draws them after the page, so that a visitor's first chart is not queued behind the JavaScript of the
    sidebar's widgets (the browser fetches a widget's code when the widget arrives, from the same server as
    plotly.js); their state is set before the page (:func:`seed_from_link`, ``classroom.presenter_setup``). A page
    that stops early draws them instead, just before it stops (:func:`stop_page`): Streamlit forgets the value of a
    widget a run leaves out. ``st.stop()`` ends the run there, so app.py's call after the page never comes too. The
    one run without them is a session's first run of home (``ui.first_chart``): no widget has a value to lose yet,
    and the rerun that completes the page draws them.
    """
    with st.sidebar:
        st.caption(device_label())
        seed_control()
        presenter_toggle()
    story_to_link()  # the written story every stage page runs, kept in the URL on every page like the seed


def stop_page() -> None:
    """End the page here (after an error message): the sidebar's controls and the link report, then ``st.stop()``."""
    sidebar_controls()
    links.report(complete=False)  # nothing can be drawn after st.stop()
    st.stop()


def run_or_stop(fn, *args, **kwargs):
    """Call into ``lineage`` in a heavy-run slot (``ui.limits``); a ValueError (bad sizes, bad knobs) is shown as a
    message and ends the page there, and so does a wait for a slot that lasts too long."""
    try:
        with limits.heavy_slot():
            return fn(*args, **kwargs)
    except ValueError as exc:
        st.error(f"Can't run this: {exc}")
    except limits.ServerBusy:
        st.error(BUSY_TEXT)
    stop_page()


def caps() -> Caps:
    """The live device's caps (CPU small, GPU larger): every page takes its controls' maxima from here."""
    return device_caps()


def size_controls(prefix: str, *, T: int = 32, K: int = 8, V: int = 8, written=None) -> tuple[int, int, int]:
    """Sequence length and head dims of a stage page, with their caps shown beside them. T starts at the story's
    length (its facts, switch and overwrite), so every T the slider offers can tell the story. ``written``: a story
    a visitor wrote (``ui.story.story_input``), which runs at its own length: T is its length, and the page says so."""
    cap = caps()
    a, b, c = controls_row(3, caps=[cap_note("T", cap.T), cap_note("K", cap.state_dim), cap_note("V", cap.state_dim)])
    T = capped_slider(a, "Sequence length T", story.MIN_T, cap.T, T, key=f"{prefix}_T", name="T")
    if written is not None:
        T = len(written.tokens)
        a.caption(written_length_note(T))
    K = capped_slider(b, "Key dim K (rows of the state)", 2, cap.state_dim, K, key=f"{prefix}_K", name="K")
    V = capped_slider(c, "Value dim V (columns of the state)", 2, cap.state_dim, V, key=f"{prefix}_V", name="V")
    return T, K, V


def written_length_note(T: int) -> str:
    """Beside a T slider while a written story runs."""
    return (
        f"Your story runs at its own length, T = {T:,} tokens: the slider applies to the default story and to random "
        "inputs."
    )


def capped_slider(
    container, label: str, lo: int, cap: int, default: int, *, key: str, name: str, why: str | None = None, **kwargs
) -> int:
    """A size slider bound to the URL, whose maximum is a cap (``why``: which; default this device's): a link asking
    for more gets the cap, and the page says so (``ui.links.clamp_to_range``) instead of silently showing the
    default."""
    links.clamp_to_range(key, lo, cap, name=name, why=why or f"the cap on {device_info().type}")
    return container.slider(label, lo, cap, default, bind="query-params", key=key, **kwargs)


def live_run_report(run) -> None:
    """Where a ``lineage.teach.stage_runs.StageRun`` ran, and how closely its fast forms match the step-by-step
    reference."""
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
        with limits.heavy_slot():
            return fn(*args, **kwargs)
    except ValueError as exc:
        st.error(f"Can't run this: {exc}")
        return None
    except limits.ServerBusy:
        st.error(BUSY_TEXT)
        return None
