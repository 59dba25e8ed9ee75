"""Gated DeltaNet-2, after the article: KDA's one β split into an erase gate and a write gate."""

from __future__ import annotations

import streamlit as st

from lineage import plots
from lineage.teach import after_article, units
from ui.controls import size_controls, step_control
from ui.display import chart, prose, show_code, what_to_notice
from ui.real_size import real_size_section
from ui.running import run_or_stop
from ui.story import equation_panel, show_claim, story_input, story_key, written_link

n = after_article.NARRATIVE
st.title(after_article.TITLE)
st.caption(f"{n.representative} · 2026 · [{after_article.PAPER}]({after_article.URL})")
st.info(
    "**After the article.** The article's lineage ends at KDA and the Kimi hybrid; this stage came later. "
    + after_article.WHY,
    icon=":material/update:",
)
solved, cost = st.columns(2)
solved.success(f"**Problem solved.** {n.problem_solved}.")
cost.warning(f"**Cost introduced.** {n.cost_introduced}.")
top = st.container()
unit = units.unit("gated_deltanet2")
prose(unit.prose)
equation_panel("gated_deltanet2")
show_code(*unit.code, title=unit.code_title)

written = story_input()
T, K, V = size_controls("gated_deltanet2", written=written)
a, b = st.columns(2)
erase = a.slider(
    "Erase gate b at the overwrite",
    0.0,
    1.0,
    1.0,
    0.05,
    bind="query-params",
    key="gated_deltanet2_erase",
    help="How much of the old value at the overwritten key is taken out (every key channel alike).",
)
write = b.slider(
    "Write gate w at the overwrite",
    0.0,
    1.0,
    0.5,
    0.05,
    bind="query-params",
    key="gated_deltanet2_write",
    help="How much of the new value is written (every value channel alike). KDA beside it writes with β = w.",
)
st.markdown(
    "Every other token writes with both gates open (b = w = 1, which is KDA at β = 1); only the overwrite's gates "
    "move. Beside it KDA runs with β = w at the overwrite: the same write, and an erase as strong as the write."
)


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def on_story(T: int, K: int, V: int, erase: float, write: float, written: str = "") -> dict:
    run = after_article.run_on_story(T, K, V, erase, write, written=written)
    lines, styles = (
        after_article.old_and_new_over_time(run),
        plots.mechanism_styles(after_article.old_and_new_lines(run)),
    )
    return dict(run=run, claim=after_article.erase_write_claim(run), lines=lines, styles=styles)


out = run_or_stop(on_story, T, K, V, erase, write, written_link() if written else "")
run, claim = out["run"], out["claim"]
st.subheader("The live run")
step = step_control("gated_deltanet2", run.story.T)
with top:  # the claim and the picture that proves it, on the first screen (as every stage page opens)
    show_claim(claim)
    if out["lines"]:
        q = run.story.overwrite
        chart(
            plots.over_time(
                out["lines"],
                title=f"What {q.key} reads back: the old value and the new, step by step",
                y_title="share of the answer",
                step=step,
                styles=out["styles"],
            ),
            key="gated_deltanet2_reads",
            alt=f"Lines of how much of each value the key {q.key} reads back at every step, for Gated DeltaNet-2 "
            "and KDA.",
        )
chart(
    plots.state_animation(
        {"Gated DeltaNet-2 S_t": run.states, f"KDA S_t (β = {run.write:g} at the overwrite)": run.kda_states},
        title="The state, token by token (one colour scale)",
        start=step,
    ),
    key="gated_deltanet2_state",
    alt="Animated heatmaps of the Gated DeltaNet-2 and KDA states side by side, one frame per token.",
    export_name="gated_deltanet2_state",
)
story_key(run.story)
st.caption(f"Checked against the reference loop: chunked form {run.err_chunk:.1e} (relative RMS difference).")

real_size_section("gated_deltanet2")

notice = [
    "Set both gates to the same value: Gated DeltaNet-2 and KDA hold the same state at every step, because with "
    "b = w = β the two recurrences are one.",
    "Close the write gate with the erase open (b = 1, w = 0): the overwritten key reads back nothing at all. KDA at "
    "β = 0 keeps the old value whole; it cannot erase without writing.",
    "Open the write gate with the erase closed (b = 0, w = 1): the key reads back old + new, the additive blend of "
    "linear attention and GLA. Erase and write are two decisions, and this page moves them apart.",
    "What it costs does not show on one token: two gate vectors per token and head to compute and train, and an "
    "erase that can stretch the state when b differs across the key's channels.",
]
what_to_notice(notice)
