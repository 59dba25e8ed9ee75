"""A page's controls: size sliders capped per device (the cap said beside them; a link asking for more gets the cap,
and the page says so), whole numbers typed or linked, compact rows of controls with their caps noted once, and the
step control of the page's animations. Every maximum comes from ``ui.caps.caps()``."""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from lineage.device import device_info
from lineage.teach import story
from lineage.units import format_bytes
from ui import links, player
from ui.caps import Cost, caps
from ui.presenter import CAPS_NOTE_KEY, presenter_mode


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


def controls_row(spec: int | Sequence[float], *, caps: Sequence[str] = ()) -> list:
    """One compact row of controls (``st.columns(spec)``, small gaps, aligned at the bottom), with the caps of those
    controls noted once (:func:`cap_notes`). Fill the returned columns with the widgets."""
    columns = st.columns(spec, gap="small", vertical_alignment="bottom")
    cap_notes(caps)
    return columns


REASON = "so every run stays fast for everyone"  # why every cap is there: said once in a line of caps
_REASON_SAID = re.compile(r"(?:\s*\(|,\s*|\s+)" + re.escape(REASON) + r"\)?")


def without_reason(note: str) -> str:
    """A cap note without its reason (:data:`REASON`): "T is capped at 64 on cpu." """
    return _REASON_SAID.sub("", note)


def joined_caps(notes: Sequence[str]) -> str:
    """Cap notes as one line, their shared reason (:data:`REASON`) said once, by the last note that gives it."""
    giving = [i for i, n in enumerate(notes) if REASON in n]
    return " ".join(n if not giving or i == giving[-1] else without_reason(n) for i, n in enumerate(notes))


def cap_notes(notes: Sequence[str]) -> None:
    """The caps of a page's controls as one line: under the row of controls normally, and in presenter mode once per
    page — every later call adds its notes to the line the first call placed, instead of a line under every row."""
    notes = [n for n in notes if n]
    if not notes:
        return
    if not presenter_mode():
        st.caption(joined_caps(notes))
        return
    note = st.session_state.get(CAPS_NOTE_KEY)
    if note is None:
        note = st.session_state[CAPS_NOTE_KEY] = {"slot": st.empty(), "notes": []}
    note["notes"] += [n for n in notes if n not in note["notes"]]
    note["slot"].caption(joined_caps(note["notes"]))


def cap_note(name: str, cap: int) -> str:
    """The text shown next to a capped control."""
    return f"{name} is capped at {cap:,} on {device_info().type} ({REASON})."


def run_cost_note(what: str, cost: Cost, budget: Cost) -> str:
    """The text beside a control whose run is capped by its measured cost (``ui.caps``)."""
    return (
        f"{what}: about {format_bytes(cost.bytes)} and {cost.seconds:.2f} s; one run may take up to "
        f"{format_bytes(budget.bytes)} and "
        f"{budget.seconds:.1f} s on {device_info().type} (measured costs, `ui/caps.py`), {REASON}."
    )


def capped_slider(
    container, label: str, lo: int, cap: int, default: int, *, key: str, name: str, why: str | None = None, **kwargs
) -> int:
    """A size slider bound to the URL, whose maximum is a cap (``why``: which; default this device's): a link asking
    for more gets the cap, and the page says so (``ui.links.clamp_to_range``) instead of silently showing the
    default."""
    links.clamp_to_range(key, lo, cap, name=name, why=why or f"the cap on {device_info().type}")
    return container.slider(label, lo, cap, default, bind="query-params", key=key, **kwargs)


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
    step, _ = links.whole_number(st.query_params.get(key, last), 0, last)
    # in session state under the URL's name, as a control's value is: ui.links judges a link's value against it
    st.session_state[key] = last if step is None else step
    player.step_buttons(key, label=label, key=f"_{key}_buttons")  # the app's own state: "_" (ui.links)
    return st.session_state[key]
