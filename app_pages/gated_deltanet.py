"""Gated DeltaNet: decay the memory (Mamba-2's gate), then write only the correction (DeltaNet's delta rule)."""

from __future__ import annotations

import streamlit as st

from lineage import plots
from lineage.teach import claims, stage_runs, units
from lineage.teach.story import story_for
from ui.display import chart
from ui.running import run_or_stop
from ui.session import seed
from ui.stage_page import close_stage_page, live_run, open_stage_page, stage_controls
from ui.story import gate_controls, written_link

top = open_stage_page("gated_deltanet")

inputs, written, (T, K, V) = stage_controls("gated_deltanet")
if inputs == "story":
    keep, switch = gate_controls("gated_deltanet")
    beta = st.slider("Write strength β", 0.0, 1.0, 1.0, 0.05, bind="query-params", key="gated_deltanet_beta")
else:
    a, b, c = st.columns(3)
    alpha = a.slider(
        "Gate α (typical value)",
        0.0,
        1.0,
        0.9,
        0.01,
        bind="query-params",
        key="gated_deltanet_alpha",
        help="α = 1 is DeltaNet (no decay at all); α = 0 wipes the state before every write.",
    )
    jitter = b.slider(
        "How much α varies from token to token",
        0.0,
        3.0,
        1.0,
        0.1,
        bind="query-params",
        key="gated_deltanet_jitter",
        help="Spread of logit(α_t) over the steps. At exactly α = 0 or α = 1 it has no effect.",
    )
    beta = c.slider("Write strength β", 0.0, 1.0, 1.0, 0.05, bind="query-params", key="gated_deltanet_beta")
    random_beta = c.checkbox("β varies from token to token", bind="query-params", key="gated_deltanet_random_beta")


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def live(T: int, K: int, V: int, seed: int, alpha: float, jitter: float, beta: float | None) -> dict:
    run = stage_runs.run_stage(
        "gated_deltanet", T, K, V, seed, stage_runs.GateRule(alpha=alpha, alpha_jitter=jitter, beta=beta)
    )
    return dict(run=run, retention=stage_runs.retention(run.g)[:, :, 0])


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def ungated(T: int, K: int, V: int, seed: int, beta: float | None) -> dict:
    """DeltaNet on the same tokens: it has no gate, so it is kept apart from :func:`live` and not run again when only
    the gate's sliders move."""
    return dict(
        deltanet_states=stage_runs.run_stage(
            "deltanet", T, K, V, seed, stage_runs.GateRule(beta=beta), repeats=1
        ).states
    )


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def on_story(T: int, K: int, V: int, keep: float, switch: float, beta: float, written: str = "") -> dict:
    story = story_for(T, K, V, written)
    knobs = claims.Knobs(beta=beta, alpha_keep=keep, alpha_switch=switch)
    run = claims.run_story("gated_deltanet", story, knobs)
    deltanet = claims.run_story("deltanet", story, knobs)
    return dict(
        run=run,
        story=story,
        claim=units.stage_claim("gated_deltanet", run, story, knobs, against=deltanet),
        topic_a=claims.topic_a_held(run, story) if claims.can_forget(story) else None,
        long_held=claims.long_fact_held(run, story) if story.long_lived else None,
        error=claims.overwrite_error(run, story) if story.overwrite else None,
        mix=claims.overwrite_mix(run, story) if story.overwrite else None,
        retention=stage_runs.retention(run.g)[:, :, 0],
        deltanet_states=deltanet.states,
    )


beta_rule = None if inputs == "story" or random_beta else beta
if inputs == "story":
    out = run_or_stop(on_story, T, K, V, keep, switch, beta, written_link() if written else "")
else:
    out = run_or_stop(live, T, K, V, seed(), alpha, jitter, beta_rule) | run_or_stop(
        ungated, T, K, V, seed(), beta_rule
    )
run, retention = out["run"], out["retention"]
gate = run.trace.decay[0, 0][:, 0]  # α_t, one per step

step = live_run(top, "gated_deltanet", out, T)
chart(
    plots.over_time(
        {"α_t (keep)": gate, "β_t (write strength)": run.beta},
        title="Gate and write strength at every step",
        y_title="value",
        y_range=(0.0, 1.05),
        height=300,
    ),
    key="gated_deltanet_gates",
    alt="Two lines over the steps: the gate α_t and the write strength β_t, both between 0 and 1.",
)
chart(
    plots.retention_map(retention, title="How much of each write the gates leave, t steps later"),
    key="gated_deltanet_retention",
    alt="Heatmap: rows are the step an item was written, columns the steps since; colour is the share left.",
)
st.caption(
    "Row x, column t: αₓ₊₁ ⋯ αₓ₊ₜ, the decay alone. The delta rule can also overwrite an item when a similar "
    "key comes along; that is not counted here. Blank cells lie past the end of the sequence."
)
chart(
    plots.state_animation(
        {"Gated DeltaNet S_t": run.states, "DeltaNet S_t (same tokens, no gate)": out["deltanet_states"]},
        title="The state, token by token (one colour scale)",
        start=step,
    ),
    key="gated_deltanet_state",
    alt="Animated heatmaps of the Gated DeltaNet and DeltaNet states side by side, one frame per token.",
    export_name="gated_deltanet_state",
)

if inputs == "story":
    story = out["story"]
    notice = []
    if out["topic_a"] is not None and story.long_lived:
        long = story.long_lived[0]
        notice.append(
            f"At the switch ‖ (step {story.switch_step}) the one gate clears the whole memory: {out['topic_a']:.0%} "
            f"of topic A is read back at the end, and {out['long_held']:.0%} of {long.key} → {long.expected} — one "
            "number per head cannot keep one fact and drop the rest (KDA can)."
        )
    if story.overwrite is not None:
        notice.append(
            f"In the same run {story.overwrite.key} is edited: {story.overwritten_value} replaced by "
            f"{story.overwrite.expected}, the answer {out['mix']} (error {out['error']:.3f}). Forgetting and editing, "
            "in one memory."
        )
    notice += [
        "Slide the gate on every token below 1: every fact fades between writes, the oldest most; the retention "
        "map below shows by how much. Set the gate at the switch to 1: nothing is cleared, and the two states are "
        "identical — Gated DeltaNet is DeltaNet.",
    ]
else:
    notice = [
        "With α varying, the rows of the retention map differ: an item written just before a small gate loses "
        "most of itself at once, one written just after it does not. Information written at different times "
        "fades at different speeds.",
        "Slide α to 1: every cell of the map is 1 and the two states are identical — Gated DeltaNet is DeltaNet. "
        "Slide it to 0: only lag 0 survives, and the state holds just the latest write.",
        "The gate is still one number for the whole head, so every row of the state fades alike. KDA gives each "
        "key channel its own.",
    ]
close_stage_page("gated_deltanet", notice)
