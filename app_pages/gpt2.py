"""GPT-2 without a cache: to produce each new token, the layer runs again over the whole prefix."""

from __future__ import annotations

import streamlit as st

from lineage import plots
from lineage.plots.story_chart import recompute_story_chart
from lineage.teach import claims, stage_runs
from lineage.teach.story import MIN_T, story_for
from ui.caps import caps
from ui.controls import cap_note, capped_slider, controls_row, step_control, written_length_note
from ui.display import chart, what_to_notice
from ui.running import run_or_stop
from ui.session import seed
from ui.stage_page import open_stage_page
from ui.story import (
    inputs_choice,
    show_claim,
    story_input,
    story_key,
    story_only,
    written_link,
)

top = open_stage_page("gpt2")

cap = caps()
inputs = inputs_choice("gpt2")
written = story_input() if inputs == "story" else None
a, b, c = controls_row(3, caps=[cap_note("T", cap.T), cap_note("Heads", cap.heads), cap_note("Head dim", cap.head_dim)])
T = capped_slider(a, "Tokens to generate T", MIN_T, cap.T, 32, key="gpt2_T", name="T")
if written is not None:
    T = len(written.tokens)
    a.caption(written_length_note(T))
n_heads = capped_slider(b, "Heads", 1, cap.heads, 4, key="gpt2_heads", name="Heads", help="GPT-2 124M has 12.")
head_dim = capped_slider(
    c, "Head dim", 2, cap.head_dim, 16, key="gpt2_head_dim", name="Head dim", help="GPT-2 124M uses 64."
)


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def live(T: int, n_heads: int, head_dim: int, seed: int, inputs: str, written: str = "") -> dict:
    if inputs == "story":
        story = story_for(T, written=written)
        run = claims.run_softmax_story(story, n_heads, head_dim, seed)
        return dict(run=run, story=story, claim=claims.gpt2_claim(run, story))
    return dict(run=stage_runs.run_softmax(T, n_heads, head_dim, seed, block_size=min(8, T)), story=None, claim=None)


out = run_or_stop(live, T, n_heads, head_dim, seed(), inputs, written_link() if written else "")
run, story = out["run"], out["story"]
cost = run.cost

st.subheader("The live run")
st.markdown(
    f"One causal self-attention layer (d_model = {n_heads} × {head_dim} = {n_heads * head_dim}) generates {T} tokens "
    "twice: once recomputing everything at every step, once with a KV cache. The row counts come from the loops "
    "themselves, not from a formula."
)
m1, m2, m4 = st.columns(3)
m1.metric("Q/K/V rows projected, no cache", f"{run.rows_recompute:,}", help="Counted by decode_recompute.")
m2.metric("Q/K/V rows projected, with a cache", f"{run.rows_cached:,}")
speedup = run.seconds["recompute"] / run.seconds["cached"]
m4.metric(
    "time, no cache / cache" + ("" if speedup >= 1.5 else " (noise at this size)"),
    f"{run.seconds['recompute'] * 1e3:.1f} / {run.seconds['cached'] * 1e3:.1f} ms",
    help="Wall time of one generation of all T tokens each way. "
    + (
        f"The cache is {speedup:.1f}× faster here."
        if speedup >= 1.5
        else f"At T = {T} the two times are within noise of each other ({speedup:.2f}×): the row counts, not these "
        "timings, are the evidence at this size."
    ),
)
st.caption(f"Computed live ({run.device}).")

step = step_control("gpt2", T)
with top:
    if story is not None:
        show_claim(out["claim"])
        drawn = recompute_story_chart(run, story, start=step)
        chart(drawn.fig, key="gpt2_story", alt=drawn.alt, export_name="gpt2_story")
        story_key(story)
    else:
        story_only()
        chart(
            plots.attention_growth(
                run.trace.attn, start=step, title="Head 0's attention: one new query row per generated token"
            ),
            key="gpt2_attention",
            alt="Animated causal attention matrix of head 0, one query row added per generated token.",
            export_name="gpt2_attention",
        )
    st.caption(
        f"Checked: recomputing and caching give the same outputs to {run.err_recompute:.1e} (relative RMS); "
        f"{run.device}."
    )
chart(
    plots.recompute_cost(
        cost.position,
        (cost.rows_recompute, cost.rows_cached),
        (cost.flops_recompute, cost.flops_cached),
        title="Work to generate each token",
    ),
    key="gpt2_cost",
    alt="Rows and FLOPs per generated token against context length, without and with a cache.",
)

what_to_notice(
    [
        "Each frame adds one row: the newest query's weights over every key so far. The rows above it never change, "
        "yet without a cache every one of them is computed again at every step.",
        f"The rows projected per token grow in a straight line with N, so the {T} tokens here cost "
        f"{run.rows_recompute:,} rows instead of {run.rows_cached}: doubling the text quadruples the work.",
        "The two generations agree to float precision: recomputing buys nothing but time. Keeping the keys and "
        "values instead is the KV cache, the next stage.",
    ]
)
