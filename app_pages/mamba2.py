"""Mamba-2: one gate per head decays the whole memory before every write; unrolled, it is masked attention."""

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

top = open_stage_page("mamba2")

inputs, written, (T, K, V) = stage_controls("mamba2")
if inputs == "story":
    keep, switch = gate_controls("mamba2")
else:
    left, right = st.columns(2)
    alpha = left.slider(
        "Gate α (typical value)",
        0.0,
        1.0,
        0.9,
        0.01,
        bind="query-params",
        key="mamba2_alpha",
        help="α = 1 switches the gate off.",
    )
    jitter = right.slider(
        "How much α varies from token to token",
        0.0,
        3.0,
        1.0,
        0.1,
        bind="query-params",
        key="mamba2_jitter",
        help="Spread of logit(α_t) over the steps: a stand-in for a gate computed from each token.",
    )


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def live(T: int, K: int, V: int, seed: int, alpha: float, jitter: float) -> dict:
    run = stage_runs.run_stage("mamba2", T, K, V, seed, stage_runs.GateRule(alpha=alpha, alpha_jitter=jitter))
    return dict(
        run=run,
        norms=stage_runs.state_norms(run.states),
        mask=stage_runs.decay_mask(run.g)[:, :, 0],  # one gate per head: every channel has the same mask
        attention=stage_runs.mixing_matrix(run),
    )


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def gate_off(T: int, K: int, V: int, seed: int) -> dict:
    """The same tokens with every α = 1 (and so no jitter either): it does not depend on the gate's sliders, so it is
    kept apart from :func:`live` and not run again when they move."""
    off = stage_runs.run_stage("mamba2", T, K, V, seed, stage_runs.gate_off(stage_runs.GateRule()), repeats=1)
    return dict(states_off=off.states, norms_off=stage_runs.state_norms(off.states))


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def on_story(T: int, K: int, V: int, keep: float, switch: float, written: str = "") -> dict:
    """Mamba-2 on the story, beside the same writes with the gate open (α = 1: linear attention's additive state
    without a feature map)."""
    story = story_for(T, K, V, written)
    knobs = claims.Knobs(alpha_keep=keep, alpha_switch=switch)
    run = claims.run_story("mamba2", story, knobs)
    off = claims.run_story("mamba2", story, claims.Knobs(alpha_keep=1.0, alpha_switch=1.0))
    return dict(
        run=run,
        story=story,
        claim=units.stage_claim("mamba2", run, story, knobs, against=off),
        mix=claims.overwrite_mix(run, story) if story.overwrite else None,
        norms=stage_runs.state_norms(run.states),
        mask=stage_runs.decay_mask(run.g)[:, :, 0],
        attention=stage_runs.mixing_matrix(run),
        states_off=off.states,
        norms_off=stage_runs.state_norms(off.states),
    )


if inputs == "story":
    out = run_or_stop(on_story, T, K, V, keep, switch, written_link() if written else "")
else:
    out = run_or_stop(live, T, K, V, seed(), alpha, jitter) | run_or_stop(gate_off, T, K, V, seed())
run, mask = out["run"], out["mask"]
gate = run.trace.decay[0, 0][:, 0]  # α_t, the same for every channel

step = live_run(top, "mamba2", out, T)

a, b = st.columns(2)
with a:
    chart(
        plots.over_time({"α_t": gate}, title="The gate at every step", y_title="α_t", y_range=(0.0, 1.05), height=300),
        key="mamba2_gate",
        alt="Line chart of the gate α_t at every step, between 0 and 1.",
    )
with b:
    chart(
        plots.over_time(
            {"with the gate": out["norms"], "without (α = 1)": out["norms_off"]},
            title="Size of the state, ‖S_t‖",
            y_title="‖S_t‖ (Frobenius)",
            height=300,
        ),
        key="mamba2_norm",
        alt="Two lines: the state's norm with the gate levels off, without the gate it keeps growing.",
    )
chart(
    plots.state_animation(
        {"S_t with the gate": run.states, "S_t without the gate (α = 1)": out["states_off"]},
        title="The state, token by token (same inputs, one colour scale)",
        start=step,
    ),
    key="mamba2_state",
    alt="Animated heatmaps of the state matrix with and without the gate, one frame per token.",
    export_name="mamba2_state",
)
chart(
    plots.decay_mask_and_attention(mask, out["attention"], title="The same layer as attention"),
    key="mamba2_mask",
    alt="Two T×T lower-triangular heatmaps: the decay mask, fading with distance, and the attention it induces.",
)
st.caption(
    f"Row i: how much of each earlier token j reaches step i. The T×T form — this matrix times the values — gives "
    f"the recurrence's outputs to within {run.err_parallel:.1e} (relative), measured in the run above."
)

if inputs == "story":
    story = out["story"]
    notice = []
    if story.has_switch and story.switch_step > 0:
        s_at = story.switch_step
        notice.append(
            f"At the switch ‖ (step {s_at}) ‖S_t‖ drops from {out['norms'][s_at - 1]:.2f} to "
            f"{out['norms'][s_at]:.2f}: one gate for the head clears every row at once, the long-lived fact's too. "
            f"Without the gate (α = 1) nothing drops: {out['norms_off'][s_at]:.2f}."
        )
    if story.overwrite is not None:
        notice.append(
            f"Mamba-2 forgets but cannot edit: {story.overwrite.key}'s row keeps both its values, {out['mix']}."
        )
    notice += [
        "In the decay mask every row after the switch is dark before it; with the gate on every token below 1, "
        "rows also darken with distance.",
        "The recurrence and the T×T attention form are two ways of computing the same thing — the numbers above "
        "agree to float precision.",
    ]
else:
    notice = [
        "Without the gate the state keeps growing with every write. With it, ‖S_t‖ levels off: old writes fade "
        "about as fast as new ones arrive.",
        "The whole state brightens and fades together — one gate per head. GLA and KDA give each key channel its "
        "own gate.",
        "Row i of the mask is the product of the gates since each earlier token, so it darkens with distance; a "
        "small α at one step darkens, in every later row, everything before that step. At α = 0 only the "
        "diagonal is left: each token sees itself alone.",
        "The recurrence and the T×T attention form are two ways of computing the same thing — the numbers above "
        "agree to float precision.",
    ]
close_stage_page("mamba2", notice)
