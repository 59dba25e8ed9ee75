"""Gated DeltaNet-2, after the article: KDA's one β split into an erase gate and a write gate."""

from __future__ import annotations

import streamlit as st

from lineage import plots
from lineage.ops.gated_deltanet2 import gated_deltanet2, gated_ut_transform, recurrent_gated_deltanet2
from lineage.teach import after_article
from ui.controls import size_controls, step_control
from ui.display import chart, prose, show_code, what_to_notice
from ui.running import run_or_stop
from ui.story import show_claim, story_input, story_key, written_link

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
prose(
    """
KDA edits its memory with one number per token, β. The same β sets how much of the old value at the key is erased
and how much of the new value is written, so after a write the key reads back a blend: (1 − β)·old + β·new. Gated
DeltaNet-2 (NVIDIA, 2026) splits β in two, each a vector: an erase gate b on the key axis and a write gate w on the
value axis, with KDA's per-channel decay kept as it was:

S_t = (I − k_t (b_t ⊙ k_t)ᵀ) Diag(α_t) S_{t−1} + k_t (w_t ⊙ v_t)ᵀ

With a unit key the read after the step is S'ᵀ((1 − b) ⊙ k) + w ⊙ v: a token can erase an association without
writing a new one, replace it however weakly it writes, or add without erasing. Set b = w = β and it is KDA again,
term by term (checked to rounding in `tests/test_gated_deltanet2.py`). The chunked form is KDA's with β moved inside
the WY/UT transform: the erase gate rides on one side of the key products, the write gate on the values, so the work
per chunk is KDA's. What it costs is in the layer: K + V gate numbers per token and head instead of one, and an erase
matrix that is no longer symmetric — with an uneven b it can stretch the state along some direction, which KDA's
I − β k kᵀ never does with a unit key.
"""
)
show_code(recurrent_gated_deltanet2, title="The reference loop")
show_code(gated_ut_transform, gated_deltanet2, title="The chunked form's transform and the whole op")

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
    return dict(run=run, claim=after_article.erase_write_claim(run), lines=after_article.old_and_new_over_time(run))


out = run_or_stop(on_story, T, K, V, erase, write, written_link() if written else "")
run, claim = out["run"], out["claim"]
with top:
    show_claim(claim)

st.subheader("The live run")
step = step_control("gated_deltanet2", run.story.T)
if out["lines"]:
    q = run.story.overwrite
    chart(
        plots.over_time(
            out["lines"],
            title=f"What {q.key} reads back: the old value and the new, step by step",
            y_title="share of the answer",
            step=step,
        ),
        key="gated_deltanet2_reads",
        alt=f"Lines of how much of each value the key {q.key} reads back at every step, for Gated DeltaNet-2 and KDA.",
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
