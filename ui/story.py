"""The top of every stage page: the claim, the number that proves it (computed from the run), the main chart.

A stage page opens a slot right under its header (:func:`top_slot`), reads its controls, runs, then fills the slot
with :func:`show_claim` and its main chart — so the claim and the chart stand first on the page (and on the first
screen in presenter mode) although the controls that feed them come later in the script. A linear-memory stage fills
it with one call, :func:`claim_slot`; the softmax pages draw their own chart beside :func:`show_claim` and
:func:`story_only`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from lineage.plots.story_chart import ALT as STORY_ALT
from lineage.plots.story_chart import key_line
from lineage.plots.story_chart import story_chart as plotted_story_chart
from lineage.teach.claims import StageClaim
from lineage.teach.equations import equation
from lineage.teach.story import FILLER, FILLER_VALUE, SWITCH, scripted_text
from lineage.teach.story_text import MAX_NAME, MAX_TEXT, Problem, WrittenStory, cut_story, parse_story, story_link
from ui import links
from ui.caps import caps
from ui.display import chart, code

INPUTS = {"story": "the story (named facts)", "random": "random vectors"}
# Every term a slide uses, defined once; the glossary beside each claim shows them.
GLOSSARY = {
    SWITCH: "the topic switch: a filler token at which the gated stages' gate closes (what a trained gate would do "
    "at a change of topic).",
    FILLER: f"filler: a token that carries no fact; it writes key {FILLER} → value {FILLER_VALUE}.",
    "S_t": "the memory (state) after token t: a K × V matrix, row = key channel, column = value channel.",
    "φ": "linear attention's feature map, applied to queries and keys (relu, or the paper's elu(x) + 1).",
    "z": "linear attention's normaliser: the running sum of φ(k); every read is divided by z·φ(q).",
    "α": "a gate: the share of the memory kept before a write (1 keeps all, 0 wipes).",
    "β": "the delta rule's write strength: the share of the gap between the stored and the new value closed.",
    "WY": "the WY (or UT) representation: a product of delta-rule updates (I − β k kᵀ) written as one matrix, so a "
    "chunk of them is applied at once (the chunked form).",
    "MLA": "multi-head latent attention (DeepSeek): softmax attention that caches one compressed vector and a small "
    "shared key per token instead of a key and a value per head.",
    "MQAR": "multi-query associative recall (Zoology, Arora et al. 2023): a synthetic task of key–value pairs "
    "followed by queries for them, used to test a memory's recall.",
}


def top_slot():
    """A container right under the page header, filled once the page has run."""
    return st.container()


def inputs_choice(page: str) -> str:
    """The story (default) or random vectors, bound to the URL as ``?<page>_inputs=``."""
    return st.radio(
        "Inputs",
        list(INPUTS),
        format_func=INPUTS.get,
        horizontal=True,
        bind="query-params",
        key=f"{page}_inputs",
        help="The story writes named facts (an overwrite, a topic switch, filler), so rows and steps have names and "
        "the page can test its claim. Random vectors show the same mechanism on unnamed data.",
    )


# ---- a story anyone can write: one form, shared by every stage page (like the seed), and carried by the link -------

STORY_PARAM = "story"  # the link's name for a written story, in its compact form (lineage.teach.story_text.story_link)
WRITTEN_KEY = "_story_written"  # the written story every stage page runs (its link form); absent: the scripted one
INPUT_KEY = "_story_input"  # the form's text (the app's own name: a link cannot set it)
PROBLEMS_KEY = "_story_problems"  # what was wrong with the text last submitted, said until a story is run
LINK_READ_KEY = "_story_link_read"  # the link's story is read once a session, on its first run
LINK_NOTICE_KEY = "_story_link_notice"  # what became of the link's story, said on every page until a story is run
SHOWN_PROBLEMS = 8  # problems listed under the form; the rest are counted
PRESETS = {  # name -> the story's text; "default" is the scripted story every page opens with
    "default": scripted_text(),
    "no switch": "*name = Kim\nAda = Paris\nBo = Rome\n...\nDee = tea\nEve = jazz\n...\nDee = coffee",
    "an overwrite chain": "*name = Kim\nAda = Paris\n|\nDee = tea\n...\nDee = coffee\n...\nDee = milk",
    "more keys than rows": "*name = Kim, Ada = Paris, Bo = Rome, Cy = Oslo, Fay = Lima, Gus = Kyiv\n|\n"
    "Dee = tea, Eve = jazz, Hal = soup, Ivy = rice, Dee = coffee",
    "a key across topics": "*name = Kim\nAda = Paris\nBo = Rome\n|\nAda = Oslo\nDee = tea\nDee = coffee",
}
PRESET_NAMES = {
    "default": "The default story",
    "no switch": "No topic switch",
    "an overwrite chain": "Dee changes three times",
    "more keys than rows": "More keys than the state has rows",
    "a key across topics": "One key in two topics",
}
SYNTAX = f"""
One token per line, or several on a line separated by commas:
`key = value` a fact (a later value for the same key overwrites it) · `*key = value` a long-lived fact ·
`|` the topic switch · `...` filler · `? key` a query read after the last token (without any, every key is asked for
its latest value) · `#` a comment. Keys and values: up to {MAX_NAME} letters, digits, `' . -`; at most
{MAX_TEXT:,} characters in all.
"""
STAND_INS = (
    "Each stage's gates on your story stay the stand-ins they are on the default one: every token keeps α (the gate "
    "on every token), the switch `|` keeps α at the switch, and the per-channel gates (GLA, KDA) hold the long-lived "
    "facts' channels through the switch — what a trained gate would learn, not what one computes. Keys and values "
    "own a state row and column while they fit in K and V; past that they overlap, and the claim says so."
)


def held_rows(written: WrittenStory | None, *, emphasis: bool = True) -> str:
    """The state rows the per-channel gates hold through the switch, the long-lived facts' ("row *name*")."""
    keys = ("name",) if written is None else written.long_lived
    if not keys:
        return "no row: the story has no long-lived fact"
    mark = "*" if emphasis else ""
    return f"row{'s' * (len(keys) > 1)} " + ", ".join(f"{mark}{key}{mark}" for key in keys)


def max_story_tokens() -> int:
    """The most tokens a written story may have: the stage pages' T cap on this device."""
    return caps().T


def written_story() -> WrittenStory | None:
    """The written story the stage pages run now, or None for the scripted one."""
    text = st.session_state.get(WRITTEN_KEY)
    if not text:
        return None
    parsed, _ = parse_story(text, max_tokens=len(text))
    return parsed


def written_link() -> str:
    """The running written story's link form ("" for the scripted story): what a page's cached run takes."""
    return st.session_state.get(WRITTEN_KEY, "")


def _run_text(text: str) -> None:
    """Read ``text``: a story runs from now on; problems are kept to be said, and the last good story keeps running."""
    parsed, problems = parse_story(text, max_tokens=max_story_tokens())
    st.session_state[PROBLEMS_KEY] = problems
    st.session_state.pop(LINK_NOTICE_KEY, None)  # the visitor's own story now: the link's is no longer the news
    if parsed is not None:
        st.session_state[WRITTEN_KEY] = story_link(parsed)


def _submitted() -> None:
    _run_text(st.session_state.get(INPUT_KEY, ""))


def _preset(name: str) -> None:
    st.session_state[INPUT_KEY] = PRESETS[name]
    st.session_state.pop(PROBLEMS_KEY, None)
    st.session_state.pop(LINK_NOTICE_KEY, None)
    if name == "default":
        st.session_state.pop(WRITTEN_KEY, None)  # the scripted story, stretched to the T slider as before
    else:
        _run_text(PRESETS[name])


def problem_lines(problems: list[Problem]) -> list[str]:
    """One line per problem: where, the text as typed (quoted: never Markdown), and what is allowed."""
    lines = []
    for p in problems[:SHOWN_PROBLEMS]:
        where = f"Line {p.line}" if p.line else "The story"
        lines.append(f"- {where}: {links.quote(p.text)} — {p.why}." if p.text else f"- {where}: {p.why}.")
    if len(problems) > SHOWN_PROBLEMS:
        lines.append(f"- … and {len(problems) - SHOWN_PROBLEMS:,} more problems (not listed).")
    return lines


def story_input() -> WrittenStory | None:
    """The form where a class writes its own story, under a stage page's inputs: presets, the text, Run. Every stage
    page shows the same form and runs the same story (session state, and the link's ``story``). Returns the written
    story that runs now, or None for the scripted one."""
    written = written_story()
    # Each page's text area is its own widget: hand it the text the last page's held (or the running story's), so
    # the story reads the same on every page.
    default = written.text() if written is not None else PRESETS["default"]
    st.session_state[INPUT_KEY] = st.session_state.get(INPUT_KEY) or default
    problems = st.session_state.get(PROBLEMS_KEY) or []
    title = "Your own story" + (" (running)" if written is not None else "")
    with st.expander(title, expanded=written is not None or bool(problems)):
        st.markdown(SYNTAX)
        st.caption(STAND_INS)
        columns = st.columns(len(PRESETS))
        for column, name in zip(columns, PRESETS, strict=True):
            column.button(PRESET_NAMES[name], on_click=_preset, args=(name,), width="stretch")
        with st.form("_story_form", border=False):
            st.text_area("The story", key=INPUT_KEY, height=200, max_chars=MAX_TEXT)
            st.form_submit_button("Run this story", on_click=_submitted, type="primary")
        if problems:
            keeps = (
                "the last story that read well keeps running"
                if written is not None
                else "the default story keeps running"
            )
            st.error("\n".join([f"**This story cannot run** ({keeps}):", *problem_lines(problems)]))
        if written is not None:
            st.caption(
                f"Running your story: {len(written.tokens)} tokens, {len(written.keys)} keys, {len(written.values)} "
                "values. Every stage page runs it, and the page's link carries it."
            )
    return written


def story_from_link() -> None:
    """On the session's first run: the link's ``story`` (compact form) becomes the written story every stage page
    runs. A story over a page's caps is cut to them, a story that cannot be read is refused (the scripted one runs),
    and either is said at the top of every page until the visitor runs a story of their own."""
    if not st.session_state.get(LINK_READ_KEY):
        st.session_state[LINK_READ_KEY] = True
        given = st.query_params.get(STORY_PARAM)
        if given is not None:
            _read_link(given)
    if st.session_state.get(LINK_NOTICE_KEY):
        links.notice(st.session_state[LINK_NOTICE_KEY])


def _read_link(given: str) -> None:
    """The link's story: run it, cut to the caps or refused, and what to say about it."""
    text, cut = given, []
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT].rsplit(",", 1)[0]
        cut.append(f"its first {len(text):,} of {len(given):,} characters")
    parsed, problems = parse_story(text, max_tokens=len(text))
    cap = max_story_tokens()
    if parsed is not None and len(parsed.tokens) > cap:
        cut.append(f"its first {cap:,} of {len(parsed.tokens):,} tokens (this device's T cap)")
        parsed = cut_story(parsed, cap)
    if parsed is None:
        shown = problem_lines(problems)[:3] if problems else []
        st.session_state[LINK_NOTICE_KEY] = (
            f"The link's story {links.quote(given)} is not used: it cannot be read. The default story runs.  \n"
            + "  \n".join(line.removeprefix("- ") for line in shown)
        )
        return
    st.session_state[WRITTEN_KEY] = story_link(parsed)
    st.session_state[INPUT_KEY] = parsed.text()
    if cut:
        st.session_state[LINK_NOTICE_KEY] = f"The link's story was cut to the caps: {' and '.join(cut)} are used."


def story_to_link() -> None:
    """After every page: the written story in the URL (``?story=``), or no ``story`` for the scripted one."""
    text = st.session_state.get(WRITTEN_KEY)
    if text:
        if st.query_params.get(STORY_PARAM) != text:
            st.query_params[STORY_PARAM] = text
    elif STORY_PARAM in st.query_params:
        del st.query_params[STORY_PARAM]


def glossary() -> None:
    """A small popover defining every symbol and abbreviation the slides use."""
    with st.popover("Glossary", help="What ‖, …, S_t, φ, z, α, β, WY, MLA and MQAR mean"):
        st.markdown("\n".join(f"- **{term}**: {text}" for term, text in GLOSSARY.items()))


def show_claim(claim: StageClaim) -> None:
    """The claim in one sentence, its number as a large metric, and whether it holds here (computed). On a written
    story that lacks the claim's case, no number: what to add to the story instead."""
    st.markdown(f"**{claim.claim}**")
    if not claim.testable:
        number, verdict = st.columns([1, 2], vertical_alignment="center")
        with number:
            glossary()
        verdict.info(f"**Not tested on this story.** {claim.missing}", icon=":material/edit_note:")
        return
    number, verdict = st.columns([1, 2], vertical_alignment="center")
    with number:
        st.metric(claim.label, claim.shown, help=claim.compare)
        glossary()
    if claim.holds:
        verdict.markdown(f"{claim.verdict}  \n*Compare: {claim.compare}.*")
    else:
        verdict.warning(
            f"**The claim does not hold at these settings.** {claim.verdict}  \n*Compare: {claim.compare}.*"
        )


def checked_line(run) -> None:
    """The verification of a linear-memory run, as one small line (the numbers are not the lesson)."""
    st.caption(
        f"Checked against the reference loop: chunked form {run.err_chunk:.1e}, T × T form {run.err_parallel:.1e} "
        f"(relative RMS difference); {run.device}."
    )


def story_chart(stage_key: str, run, story, *, start: int, normaliser: bool = False) -> None:
    """The page's main chart (``lineage.plots.story_chart``): the state as a fact table over the story, with the held
    answers, the step marker and the step's sentence all in the animation's frames; under it, its key line.
    ``normaliser``: the state has one more column, linear attention's z."""
    drawn = plotted_story_chart(run, story, start=start, normaliser=normaliser)
    chart(drawn.fig, key=f"{stage_key}_story", alt=STORY_ALT, export_name=f"{stage_key}_story")
    st.caption(drawn.key)


STORY_ONLY = "The claim is tested on the story: choose the story as inputs below to see it."


def claim_slot(top, stage_key: str, out: Mapping[str, Any], *, step: int, normaliser: bool = False) -> None:
    """Fill the slot :func:`top_slot` opened under a linear-memory stage page's header, once the page has run. ``out``:
    the page's run, its ``run`` and, on the story, its ``story`` and ``claim``. On the story: the claim
    (:func:`show_claim`) and the story chart at ``step`` (:func:`story_chart`; ``normaliser`` as there); on random
    inputs: that the claim is tested on the story (:func:`story_only`). The run's checked line under either."""
    with top:
        if out.get("story") is not None:
            show_claim(out["claim"])
            story_chart(stage_key, out["run"], out["story"], start=step, normaliser=normaliser)
        else:
            story_only()
        checked_line(out["run"])


def story_only() -> None:
    """In a stage page's top slot on random inputs, where its claim would stand: the claim needs the story."""
    st.info(STORY_ONLY)


def story_key(story, *, normaliser: bool = False, extra: str = "") -> None:
    """The one-line key under a story chart: what ‖, …, a→b (and z, ch i) mean, and anything the chart clips."""
    st.caption(key_line(story, normaliser=normaliser, extra=extra))


def gate_controls(page: str, *, per_channel: bool = False) -> tuple[float, float]:
    """The story's gate: α on every ordinary token and α at the topic switch (per channel: every channel but the
    long-lived fact's). Defaults: keep everything, wipe at the switch."""
    a, b = st.columns(2)
    keep = a.slider(
        "Gate α on every token",
        0.0,
        1.0,
        1.0,
        0.01,
        bind="query-params",
        key=f"{page}_keep",
        help="1 keeps the state as it is between writes; below 1 everything fades a little at every token.",
    )
    where = " (every channel but the long-lived fact's)" if per_channel else ""
    switch = b.slider(
        f"Gate α at the topic switch ‖{where}",
        0.0,
        1.0,
        0.0,
        0.01,
        bind="query-params",
        key=f"{page}_switch",
        help="What a trained gate does at a change of topic: 0 wipes, 1 keeps.",
    )
    return keep, switch


def code_excerpts(excerpts) -> None:
    """Lines of running code, each block under the file, function and line numbers it was cut from."""
    for excerpt in excerpts:
        st.caption(f"`{excerpt.where}`")
        code(excerpt.text)


def equation_panel(stage_key: str) -> None:
    """The stage's update with the change from the previous stage marked, beside the lines of code that make it."""
    eq = equation(stage_key)
    left, right = st.columns([2, 3])
    with left:
        st.markdown(eq.text)
        st.caption(f"New in this stage (marked): {eq.change}.")
    with right:
        code_excerpts(eq.excerpts())
