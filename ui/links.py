"""Values that reach a page from outside its widgets — a link's query parameters, a typed number — and what the page
says about those it cannot use. Nothing a visitor gives is dropped silently.

A control bound to the URL (``bind="query-params"``) takes a link's value when it is one of the control's values;
otherwise Streamlit drops it and the control shows its default. ``app.py`` takes the link's values before the page
runs (``link_values``) and, after it, reports every one the page did not use (``report``): a name no control of the
page has, or a value its control refused. A page that stops early reports first (``ui.common.run_or_stop``). Size
controls clamp an over-cap value to the cap before the control is made (``clamp_to_range``) and say so. All of it goes
through public Streamlit: ``st.query_params`` and ``st.session_state``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import streamlit as st

NOTICES_KEY = "_link_notices"  # this run's notices (session state: every session has its own)
RUN_KEY = "_link_run"  # this run's link values, where to report them, and whether it has
CARRIED_KEY = "_link_carried"  # what a run that ended early hands to the next (carry_over)
NOT_CONTROLS = frozenset({"seed", "embed", "embed_options"})  # the seed is checked by ui.common; embed: Streamlit's
SHOWN_CHARS = 40  # of a value quoted back to the visitor


def shown(value: object) -> str:
    """A value as quoted in a message: printable, at most SHOWN_CHARS characters."""
    text = "".join(ch if ch.isprintable() else "�" for ch in str(value))
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


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
    """Keep a message about a value this run could not use, for ``report`` to show at the top of the page."""
    st.session_state.setdefault(NOTICES_KEY, []).append(text)


def link_values(where) -> dict[str, str]:
    """Start a run: the link's query parameters that no control of this session has taken yet (its first run on a
    page), remembered with the container ``where`` (at the top of the page) that ``report`` fills. Call before the
    page's widgets."""
    carried = st.session_state.pop(CARRIED_KEY, None) or {"requested": {}, "notices": []}
    fresh = {key: value for key, value in st.query_params.to_dict().items() if key not in st.session_state}
    requested = {**carried["requested"], **fresh}
    st.session_state[NOTICES_KEY] = list(carried["notices"])
    st.session_state[RUN_KEY] = {"requested": requested, "where": where, "reported": False}
    return requested


def carry_over() -> None:
    """Before a run that ends early so that the next completes the page (``ui.first_chart``): hand that run this
    run's link values and notices, to be judged and said as if they had come with it (by then a control has taken
    its link value, and a clamp is said only on a control's first run)."""
    run = st.session_state.get(RUN_KEY)
    if run is not None:
        notices = list(st.session_state.get(NOTICES_KEY, []))
        st.session_state[CARRIED_KEY] = {"requested": dict(run["requested"]), "notices": notices}


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
    notice(
        f"The link's `{shown(key)}={shown(given)}` is past the allowed {lo:,}–{hi:,}: {name} is set to {clamped:,} "
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
    URL (it removes a value it refuses, and one equal to the default). A control not bound to the URL ignores links,
    so a link value for it is reported too. ``controls``: keys that are controls (default: every key in
    session state, where Streamlit keeps each widget's value under its key).
    """
    keys = set(st.session_state.keys()) if controls is None else set(controls)
    messages = []
    for key, given in requested.items():
        if key in NOT_CONTROLS or key.startswith("_"):
            continue
        if key not in keys:
            messages.append(f"`{shown(key)}` in the link is not a setting of this page; it is ignored.")
            continue
        value = st.session_state[key]
        # A number or a switch is used when the control holds it. A choice shows its label in the URL, which this
        # code cannot see, so it is used when Streamlit kept it there (Streamlit removes a value it refuses).
        if _same(given, value) or (not isinstance(value, bool | int | float) and st.query_params.get(key) == given):
            continue
        if any(f"`{shown(key)}=" in n for n in st.session_state.get(NOTICES_KEY, [])):
            continue  # clamped, and already said
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        messages.append(
            f"The link's `{shown(key)}={shown(given)}` is not one of that control's values (out of its range, or not "
            f"one of its choices): it shows {shown(value)} instead."
        )
    return messages


def report(*, complete: bool = True) -> None:
    """Show, at the top of the page, every notice of this run and every link value the page did not use; once a run.

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
    for text in dict.fromkeys([*st.session_state.get(NOTICES_KEY, []), *unused(requested)]):  # each said once
        run["where"].warning(text, icon=":material/link_off:")
