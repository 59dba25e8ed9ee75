"""GLA: Mamba-2's additive memory with one gate per key channel instead of one per head."""

from __future__ import annotations

import streamlit as st

from lineage import plots
from lineage.teach import claims, stage_runs, units
from lineage.teach.story import story_for
from ui.display import chart
from ui.running import run_or_stop
from ui.session import seed
from ui.stage_page import close_stage_page, live_run, open_stage_page, stage_controls
from ui.story import (
    gate_controls,
    held_rows,
    written_link,
)

top = open_stage_page("gla")

inputs, written, (T, K, V) = stage_controls("gla")
if inputs == "story":
    keep, switch = gate_controls("gla", per_channel=True)
    st.markdown(
        f"On the story every channel keeps α = {keep:g} on ordinary tokens. At the topic switch ‖ every channel closes "
        f"to α = {switch:g} except the long-lived fact's ({held_rows(written)}), which keeps α = {keep:g}: the channel "
        "a trained per-channel gate would learn to hold. Mamba-2, the comparison, has one gate for the whole head."
    )
else:
    st.markdown("Here the channels' gates are spread evenly from the slowest α (row 0) to the fastest (the last row).")
    a, b, c = st.columns(3)
    alpha = a.slider("α of the slowest channel (row 0)", 0.0, 1.0, 0.99, 0.01, bind="query-params", key="gla_alpha")
    alpha_min = b.slider(
        "α of the fastest channel (last row)", 0.0, 1.0, 0.5, 0.01, bind="query-params", key="gla_alpha_min"
    )
    jitter = c.slider(
        "How much α varies from token to token",
        0.0,
        3.0,
        0.0,
        0.1,
        bind="query-params",
        key="gla_jitter",
        help="Spread of logit(α) over steps and channels: a stand-in for gates computed from each token.",
    )


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def live(T: int, K: int, V: int, seed: int, alpha: float, alpha_min: float, jitter: float) -> stage_runs.StageRun:
    return stage_runs.run_stage(
        "gla", T, K, V, seed, stage_runs.GateRule(alpha=alpha, alpha_min=alpha_min, alpha_jitter=jitter)
    )


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def on_story(T: int, K: int, V: int, keep: float, switch: float, written: str = "") -> dict:
    """GLA on the story, beside Mamba-2 with the same gate values in one scalar per head."""
    story = story_for(T, K, V, written)
    knobs = claims.Knobs(alpha_keep=keep, alpha_switch=switch)
    run = claims.run_story("gla", story, knobs)
    return dict(
        run=run,
        story=story,
        claim=units.stage_claim("gla", run, story, knobs),
        mix=claims.overwrite_mix(run, story) if story.overwrite else None,
    )


if inputs == "story":
    out = run_or_stop(on_story, T, K, V, keep, switch, written_link() if written else "")
else:
    out = {"run": run_or_stop(live, T, K, V, seed(), alpha, alpha_min, jitter)}
run = out["run"]
gates = run.trace.decay[0, 0]  # [T, K]: α_t of every key channel

step = live_run(top, "gla", out, T)
chart(
    plots.gates_by_channel(gates, title="One gate per key channel, at every step"),
    key="gla_gates",
    alt="Heatmap of α for every key channel (rows) at every step (columns), on a 0 to 1 scale.",
)
chart(
    plots.state_animation({"S_t": run.states}, gate=gates, title="The state, token by token", start=step),
    key="gla_state",
    alt="Animated heatmap of the state, one frame per token, beside the column of gates that scales its rows.",
    export_name="gla_state",
)

if inputs == "story":
    claim, story = out["claim"], out["story"]
    notice = []
    if claim.testable:
        long = story.long_lived[0]
        topic_a = ", ".join(f.key for f in claims.topic_a_facts(story))
        notice.append(
            f"At the switch ‖ topic A's rows ({topic_a}) close while row *{long.key}* stays open: {claim.shown} of "
            f"{long.key} → {long.expected} is read back at the end. {claim.compare}."
        )
    notice.append(
        "Set the gate at the switch to 1: nothing closes, and GLA on the story holds what Mamba-2 with its gate open "
        "holds."
    )
    if story.overwrite is not None:
        notice.append(
            f"Writes only ever add: {story.overwrite.key}'s row holds both its values, {out['mix']}. Nothing here "
            "replaces the value stored under a key — that is what the delta rule of DeltaNet, Gated DeltaNet and KDA "
            "adds."
        )
else:
    notice = [
        "Rows with a small α flicker: they show mostly the last token or two. Rows with α near 1 change slowly and "
        "pile up the whole history.",
        "Set both sliders to the same α (and the variation to 0): every row fades alike and GLA is Mamba-2 again.",
        "Writes only ever add. Nothing here replaces the value stored under a key — that is what the delta rule "
        "of DeltaNet, Gated DeltaNet and KDA adds.",
    ]
close_stage_page("gla", notice)
