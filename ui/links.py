"""Values that reach a page from outside its widgets — a link's query parameters, a typed number — and what the page
says about those it cannot use. Nothing a visitor gives is dropped silently.

A control bound to the URL (``bind="query-params"``) takes a link's value when it is one of the control's values;
otherwise Streamlit drops it and the control shows its default. ``app.py`` takes the link's values before the page
runs (``link_values``) and, after it, reports every one the page did not use (``report``): a name no control of the
page has, or a value its control refused. A page that stops early reports first (``ui.running.run_or_stop``). Size
controls clamp an over-cap value to the cap before the control is made (``clamp_to_range``) and say so. All of it goes
through public Streamlit: ``st.query_params`` and ``st.session_state``.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Iterable

import streamlit as st

log = logging.getLogger(__name__)

NOTICES_KEY = "_link_notices"  # this run's notices (session state: every session has its own)
RUN_KEY = "_link_run"  # this run's link values, where to report them, and whether it has
CARRIED_KEY = "_link_carried"  # what a run that ended early hands to the next (carry_over)
JUDGED_KEY = "_link_judged"  # names of the app's own session state a link carried, already reported this session
OVERSIZED_KEY = "_link_oversized"  # the message for a link past Streamlit's limits, said on the next run
SIZE_CHECKED_KEY = "_link_size_checked"
# Not reported: the seed is checked by ui.session (seed_from_link) and the story by ui.story (story_from_link); embed
# and embed_options are Streamlit's own, which it acts on itself (they hide the app's chrome when it is embedded) and
# which no widget can be bound to.
NOT_CONTROLS = frozenset({"seed", "story", "embed", "embed_options"})
MAX_MESSAGES = 12  # link notices shown at the top of a page; the rest are counted in one more line
SHOWN_CHARS = 40  # of a value quoted back to the visitor (quote)


def quote(value: object) -> str:
    """Text a visitor controls — a link's key or value, a typed number, a line of a story — as Markdown that shows it
    exactly as text, for every message that echoes it. Use it for all such text, and nothing else.

    The text goes in a code span whose fence is one backtick longer than the longest run of backticks inside it, so
    nothing in it can close the span: no link, image, autolink, HTML, emphasis or Streamlit directive in the text is
    ever interpreted (CommonMark: a code span ends only at a backtick run of the fence's length). Characters that are
    not printable (line breaks, tabs, direction overrides) become ``�``, so the span cannot be split either. Text over
    SHOWN_CHARS characters is cut, and the message says how long it was, so a 500 kB link cannot flood the page.
    """
    text = str(value)
    if not text:
        return "(empty)"
    shown = "".join(ch if ch.isprintable() else "\ufffd" for ch in text[:SHOWN_CHARS])
    cut = len(text) > SHOWN_CHARS
    if cut:
        shown = shown[: SHOWN_CHARS - 1] + "…"
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    # One space inside each end, which CommonMark strips, so a ` at an end stays text; it strips none from all spaces
    pad = "" if not shown.strip(" ") else " "
    span = f"{fence}{pad}{shown}{pad}{fence}"
    return f"{span} (shortened; {len(text):,} characters in all)" if cut else span


def whole_number(value: object, lo: int | None = None, hi: int | None = None) -> tuple[int | None, str | None]:
    """(the integer, None) when ``value`` — a number or its text — is a whole number in [lo, hi]; else (None, why).

    Text in scientific notation counts when it is exact (``"1e3"`` is 1,000): a visitor types it, a browser sends it.
    """
    allowed = _range_text(lo, hi)
    if isinstance(value, bool) or value is None:
        return None, f"it must be {allowed}"
    number: float | int
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        try:
            number = int(text) if isinstance(value, str) and text.lstrip("+-").isdigit() else float(text)
        except (ValueError, OverflowError):
            return None, f"it is not a number; it must be {allowed}"
    if isinstance(number, float):
        if not math.isfinite(number) or not number.is_integer():
            return None, f"it must be {allowed}"
        number = int(number)
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        return None, f"it must be {allowed}"
    return number, None


def _range_text(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"a whole number from {lo:,} to {hi:,}"
    if lo is not None:
        return f"a whole number ≥ {lo:,}"
    return "a whole number"


def notice(text: str) -> None:
    """Keep a message about a value this run could not use, for ``report`` to show at the top of the page. Any text a
    visitor controls goes into ``text`` through :func:`quote`."""
    st.session_state.setdefault(NOTICES_KEY, []).append(text)


def not_linked(*keys: str) -> None:
    """Declare controls of this page that a link cannot set (not bound to the URL, e.g. a choice among things this
    session trained): a link value for one is reported as not used, never counted as used."""
    run = st.session_state.get(RUN_KEY)
    if run is not None:
        run["not_linked"].update(keys)


def link_values(where) -> dict[str, str]:
    """Start a run: the link's query parameters that no control of this session has taken yet (its first run on a
    page), remembered with the container ``where`` (at the top of the page) that ``report`` fills. Call before the
    page's widgets.

    A name that is not a control's — the app's own session-state names start with ``_`` — is judged once a session,
    though session state holds it: a link cannot set session state, and must not be able to hide a value behind it.
    """
    carried = st.session_state.pop(CARRIED_KEY, None) or {"requested": {}, "notices": []}
    judged = st.session_state.setdefault(JUDGED_KEY, set())
    fresh = {
        key: value
        for key, value in st.query_params.to_dict().items()
        if key not in st.session_state or (key.startswith("_") and key not in judged)
    }
    requested = {**carried["requested"], **fresh}
    st.session_state[NOTICES_KEY] = list(carried["notices"])
    oversized = st.session_state.pop(OVERSIZED_KEY, None)
    if oversized:
        notice(oversized)
    st.session_state[RUN_KEY] = {
        "requested": requested,
        "where": where,
        "reported": False,
        "clamped": set(carried.get("clamped", ())),
        "not_linked": set(),
    }
    return requested


def carry_over() -> None:
    """Before a run that ends early so that the next completes the page (``ui.first_chart``): hand that run this
    run's link values and notices, to be judged and said as if they had come with it (by then a control has taken
    its link value, and a clamp is said only on a control's first run)."""
    run = st.session_state.get(RUN_KEY)
    if run is not None:
        notices = list(st.session_state.get(NOTICES_KEY, []))
        st.session_state[CARRIED_KEY] = {
            "requested": dict(run["requested"]),
            "notices": notices,
            "clamped": set(run["clamped"]),
        }


def clamp_to_range(key: str, lo: float, hi: float, *, name: str, why: str) -> None:
    """Before the control ``key`` is made: a link value for it past [lo, hi] is clamped to the nearer end, and said.

    Streamlit would drop such a value and show the default; a link that asks for more than the cap means "as much as
    allowed". Only on the control's first run in the session (later its own value wins), and only for numbers.
    """
    given = st.query_params.get(key)
    if given is None or key in st.session_state:
        return
    try:
        number = float(given)
    except (ValueError, OverflowError):
        return  # not a number: Streamlit drops it and ``report`` says so
    if math.isnan(number) or lo <= number <= hi:
        return
    clamped = lo if number < lo else hi
    st.session_state[key] = type(lo)(clamped)
    run = st.session_state.get(RUN_KEY)
    if run is not None:
        run["clamped"].add(key)
    notice(
        f"The link's {quote(key)} = {quote(given)} is past the allowed {lo:,}–{hi:,}: {name} is set to {clamped:,} "
        f"({why})."
    )


def _same(given: str, value: object) -> bool:
    """Whether a URL text ``given`` means ``value`` (the control's value): how Streamlit writes values to URLs."""
    if isinstance(value, bool):
        text = given.strip().lower()
        return text in ("1", "true", "yes", "on") if value else text in ("0", "false", "no", "off")
    if isinstance(value, int | float):
        try:
            return float(given) == float(value)
        except (ValueError, OverflowError):
            return False
    if isinstance(value, list | tuple):
        return False
    return given == str(value)


def unused(requested: dict[str, str], controls: Iterable[str] | None = None) -> list[str]:
    """Messages for the link values in ``requested`` that the page did not use, after it ran.

    A value is used when its control holds it (numbers and switches), or, for a choice, when Streamlit kept it in the
    URL (it removes a value it refuses, and one equal to the default). A control not bound to the URL ignores links
    (:func:`not_linked`), so a link value for it is reported too; so is a name of the app's own session state (they
    start with ``_``). ``controls``: keys that are controls (default: every key in session state, where Streamlit
    keeps each widget's value under its key).
    """
    keys = set(st.session_state.keys()) if controls is None else set(controls)
    run = st.session_state.get(RUN_KEY) or {}
    clamped, unlinked = run.get("clamped", set()), run.get("not_linked", set())
    messages = []
    for key, given in requested.items():
        if key in NOT_CONTROLS:
            continue
        if key not in keys or key.startswith("_"):
            messages.append(f"{quote(key)} in the link is not a setting of this page; it is ignored.")
            continue
        if key in unlinked:
            messages.append(
                f"The link's {quote(key)} = {quote(given)} is not used: that control cannot be set by a link."
            )
            continue
        value = st.session_state[key]
        # A number or a switch is used when the control holds it. A choice shows its label in the URL, which this
        # code cannot see, so it is used when Streamlit kept it there (Streamlit removes a value it refuses).
        if _same(given, value) or (not isinstance(value, bool | int | float) and st.query_params.get(key) == given):
            continue
        if key in clamped:
            continue  # clamped, and already said
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        messages.append(
            f"The link's {quote(key)} = {quote(given)} is not one of that control's values (out of its range, or not "
            f"one of its choices): it shows {quote(value)} instead."
        )
    return messages


def report(*, complete: bool = True) -> None:
    """Show, at the top of the page, every notice of this run and every link value the page did not use; once a run.
    At most MAX_MESSAGES of them, and a line that counts the rest, so a link of a thousand names cannot flood the page.

    ``complete=False`` before the page stops early (``st.stop()`` lets nothing be drawn after it): only the controls
    made so far are judged, and a name no control has taken yet is not called unknown.
    """
    run = st.session_state.get(RUN_KEY)
    if run is None or run["reported"]:
        return
    run["reported"] = True
    requested = run["requested"]
    if not complete:
        requested = {key: value for key, value in requested.items() if key in st.session_state}
    messages = list(dict.fromkeys([*st.session_state.get(NOTICES_KEY, []), *unused(requested)]))  # each said once
    for text in messages[:MAX_MESSAGES]:
        run["where"].warning(text, icon=":material/link_off:")
    if len(messages) > MAX_MESSAGES:
        run["where"].warning(
            f"… and {len(messages) - MAX_MESSAGES:,} more values in the link or typed are not used (not listed).",
            icon=":material/link_off:",
        )
    if complete:
        st.session_state.setdefault(JUDGED_KEY, set()).update(key for key in requested if key.startswith("_"))
    if not st.query_params:
        _check_link_size(run["where"])


# ---- a link past Streamlit's limits ------------------------------------------------------------------------------
# Streamlit ignores a whole query string longer than 512 Ki characters or of more than 1,000 parameters, with a line
# in the server's log only: the page would open with its defaults and not a word. Its limits, as this app's own
# constants (tests/app/test_links.py checks they still match Streamlit's). Only the browser still sees such a
# link, so a small component there measures it and tells the server, which says so at the top of the page.
LINK_MAX_CHARS = 512 * 1024
LINK_MAX_FIELDS = 1000
SIZE_CHECK_KEY = "_link_size_check"
SIZE_CHECK_JS = """
export default function ({ data, setTriggerValue }) {
  const query = window.location.search.replace(/^\\?/, "");
  if (!query) return;
  const chars = query.length;
  const fields = query.split("&").length;
  if (chars > data.max_chars || fields > data.max_fields) setTriggerValue("oversized", { chars, fields });
}
"""


@functools.cache  # once per process: a component is registered once, by name
def _size_check():
    try:
        return st.components.v2.component("attention_lineage_link_size", html="", js=SIZE_CHECK_JS)
    except Exception as exc:  # an older or changed Streamlit: no check, the rest of the report stands
        log.warning("ui.links: st.components.v2 is not usable (%s); oversized links are not reported", exc)
        return None


def _check_link_size(where) -> None:
    """When this session's page has no link values: whether the browser's link had some that Streamlit ignored."""
    mount = _size_check()
    if mount is not None and not st.session_state.get(SIZE_CHECKED_KEY):
        with where:
            mount(
                key=SIZE_CHECK_KEY,
                data={"max_chars": LINK_MAX_CHARS, "max_fields": LINK_MAX_FIELDS},
                on_oversized_change=_oversized,
            )


def _oversized() -> None:
    """The component's trigger: the link was past Streamlit's limits; said at the top of the page this run causes."""
    size = (st.session_state.get(SIZE_CHECK_KEY) or {}).get("oversized") or {}
    st.session_state[SIZE_CHECKED_KEY] = True
    st.session_state[OVERSIZED_KEY] = oversized_text(int(size.get("chars", 0)), int(size.get("fields", 0)))


def oversized_text(chars: int, fields: int) -> str:
    return (
        f"This link is too long to read ({chars:,} characters, {fields:,} parameters; the most is "
        f"{LINK_MAX_CHARS:,} characters and {LINK_MAX_FIELDS:,} parameters): none of its settings is used, and the "
        "page shows its defaults."
    )
