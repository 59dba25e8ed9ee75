"""KDA (Kimi Delta Attention): Gated DeltaNet with one gate per key channel instead of one per head."""

from __future__ import annotations

import streamlit as st

from lineage import plots, schedules
from lineage.teach import claims, gate_bound, stage_runs, units
from lineage.teach.story import story_for
from ui.display import chart, prose
from ui.running import run_or_stop
from ui.session import seed
from ui.stage_page import close_stage_page, live_run, open_stage_page, stage_controls
from ui.story import (
    gate_controls,
    held_rows,
    written_link,
)

top = open_stage_page("kda")

inputs, written, (T, K, V) = stage_controls("kda")
if inputs == "story":
    keep, switch = gate_controls("kda", per_channel=True)
    beta = st.slider("Write strength β", 0.0, 1.0, 1.0, 0.05, bind="query-params", key="kda_beta")
    st.markdown(
        f"On the story every channel keeps α = {keep:g} on ordinary tokens. At the topic switch ‖ every channel closes "
        f"to α = {switch:g} except the long-lived fact's ({held_rows(written)}), which keeps α = {keep:g}. Beside KDA "
        f"runs Gated DeltaNet with the same gate values as one number for the whole head, so its switch closes "
        f"{held_rows(written)} too."
    )
else:
    st.markdown(
        "Here the channels' gates are spread evenly from the slowest α (row 0) to the fastest (the last row). Beside "
        "KDA runs Gated DeltaNet on the same tokens, with one gate set to the channels' mean α — the same forgetting "
        "on average, spent evenly instead of unevenly."
    )
    a, b, c, d = st.columns(4)
    alpha = a.slider("α of the slowest channel (row 0)", 0.0, 1.0, 0.99, 0.01, bind="query-params", key="kda_alpha")
    alpha_min = b.slider(
        "α of the fastest channel (last row)",
        0.0,
        1.0,
        0.5,
        0.01,
        bind="query-params",
        key="kda_alpha_min",
        help="Equal to the slowest channel's α (with no variation): all channels alike, and KDA is Gated DeltaNet.",
    )
    jitter = c.slider(
        "How much α varies from token to token",
        0.0,
        3.0,
        0.0,
        0.1,
        bind="query-params",
        key="kda_jitter",
        help="Spread of logit(α) over steps and channels: a stand-in for gates computed from each token.",
    )
    beta = d.slider("Write strength β", 0.0, 1.0, 1.0, 0.05, bind="query-params", key="kda_beta")


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def live(T: int, K: int, V: int, seed: int, alpha: float, alpha_min: float, jitter: float, beta: float) -> dict:
    rule = stage_runs.GateRule(alpha=alpha, alpha_min=alpha_min, alpha_jitter=jitter, beta=beta)
    scalar = stage_runs.matched_scalar_rule(rule, K)
    run = stage_runs.run_stage("kda", T, K, V, seed, rule)
    gdn = stage_runs.run_stage("gated_deltanet", T, K, V, seed, scalar, repeats=1)
    return dict(
        run=run,
        gdn_states=gdn.states,
        scalar_alpha=scalar.alpha,
        retention=stage_runs.retention(run.g)[0],  # [lag, K]: the write of token 0, per channel
        gdn_retention=stage_runs.retention(gdn.g)[0],
    )


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def on_story(T: int, K: int, V: int, keep: float, switch: float, beta: float, written: str = "") -> dict:
    """KDA on the story, beside Gated DeltaNet with the same gate values in one scalar (the switch closes it for the
    whole head, the long-lived fact's channel included)."""
    story = story_for(T, K, V, written)
    knobs = claims.Knobs(beta=beta, alpha_keep=keep, alpha_switch=switch)
    run = claims.run_story("kda", story, knobs)
    gdn = claims.run_story("gated_deltanet", story, knobs)
    return dict(
        run=run,
        story=story,
        claim=units.stage_claim("kda", run, story, knobs, against=gdn),
        gdn_states=gdn.states,
        error=claims.overwrite_error(run, story) if story.overwrite else None,
        retention=stage_runs.retention(run.g)[0],
        gdn_retention=stage_runs.retention(gdn.g)[0],
    )


if inputs == "story":
    out = run_or_stop(on_story, T, K, V, keep, switch, beta, written_link() if written else "")
else:
    out = run_or_stop(live, T, K, V, seed(), alpha, alpha_min, jitter, beta)
run, retention = out["run"], out["retention"]
gates = run.trace.decay[0, 0]  # [T, K]: α_t of every key channel

step = live_run(top, "kda", out, T)
chart(
    plots.gates_by_channel(gates, title="KDA: one gate per key channel, at every step"),
    key="kda_gates",
    alt="Heatmap of α for every key channel (rows) at every step (columns), on a 0 to 1 scale.",
)
if inputs == "story":
    gdn_name = f"Gated DeltaNet: α = {keep:g} per token, {switch:g} at ‖, all channels alike"
    kda_name = f"KDA: α = {keep:g} per token, {switch:g} at ‖ except {held_rows(written, emphasis=False)}"
    what = f"token 0's write ({out['story'].labels[0]})"
else:
    gdn_name, kda_name = f"Gated DeltaNet: α = {out['scalar_alpha']:.3f} for all", "KDA: α per channel"
    what = "token 0's write"
chart(
    plots.channel_retention(
        {kda_name: retention, gdn_name: out["gdn_retention"]},
        title=f"How much of {what} each channel keeps, t steps later",
    ),
    key="kda_retention",
    alt="Two heatmaps, channels by lag: KDA's rows fade at different speeds, Gated DeltaNet's all alike.",
)
st.caption("The decay alone: α multiplied over the steps since the write. The delta rule may also overwrite it.")
chart(
    plots.state_animation(
        {
            "KDA S_t": run.states,
            f"Gated DeltaNet S_t ({'same gates, one per head' if inputs == 'story' else 'mean α'})": out["gdn_states"],
        },
        title="The state, token by token (one colour scale)",
        start=step,
    ),
    key="kda_state",
    alt="Animated heatmaps of the KDA and Gated DeltaNet states side by side, one frame per token.",
    export_name="kda_state",
)


# ---- Kimi K3's gate bound ----------------------------------------------------------------------------------------
BOUND = schedules.KIMI_K3_CONFIG["gate_lower_bound"]


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def bounded(q, k, v, g, beta, bound: float) -> gate_bound.GateBound:
    return gate_bound.gate_bound_effect(q, k, v, g, beta, bound)


st.subheader("Kimi K3's gate bound")
gb = run_or_stop(bounded, run.q, run.k, run.v, run.g, run.beta, BOUND)
prose(
    f"""
Kimi K3 keeps KDA but bounds its gate: its config sets `gate_lower_bound` {BOUND:g}, and the gate becomes
g = {BOUND:g} · sigmoid(·) (fla's `chunk_kda` with `lower_bound` {BOUND:g}), so no channel's log-decay per token goes
below {BOUND:g}. The smallest α it allows is e^({BOUND:g}) = **{gb.alpha_floor:.4f}**: a wipe now keeps
{gb.alpha_floor:.2%} of the state. That is a numerics decision more than a modelling one. In the chunked form every
decay ratio exp(G_i − G_j) over n steps is then at most e^({-BOUND:g}n), inside fp32's range (up to
e^{gate_bound.FP32_MAX_EXPONENT:.1f}) for n up to {gb.tile_steps} steps, so a kernel can build 16-step tiles (at most
e^{gb.worst_ratio_exponent:g}) from plain matrix products; without a bound a single step can be −∞ and such a ratio
overflows. Here the op keeps taking log-space gates and bounds them itself (`kda(..., gate_lower_bound=...)`).
"""
)
a, b, c = st.columns(3)
a.metric("smallest α on this run, no bound", f"{gb.alpha_min:.4f}")
b.metric(f"smallest α with the bound ({BOUND:g})", f"{gb.alpha_min_bounded:.4f}")
c.metric("largest change the bound makes to any α", f"{gb.alpha_max_change:.4f}")
chart(
    plots.channel_retention(
        {"no bound (Kimi Linear)": gb.retention, f"gate_lower_bound {BOUND:g} (Kimi K3)": gb.retention_bounded},
        title=f"With and without the bound: how much of {what} each channel keeps, t steps later",
    ),
    key="kda_bound_retention",
    alt="Two heatmaps, channels by lag, nearly alike: where the gate closes fully on the left, the right keeps a "
    "sliver.",
)
st.caption(
    f"Checked: the bounded op's chunked form in fp32 equals the fp64 loop on the bounded gate to "
    f"{gb.err_chunk_fp32:.1e} (relative RMS). The bound, from K3's config as others quote it (secondary): "
    f"{schedules.KIMI_K3_SOURCES['gate']}; {schedules.KIMI_K3_SOURCES['why_bound']}."
)

if inputs == "story":
    claim, story = out["claim"], out["story"]
    notice = []
    if claim.testable:
        long = story.long_lived[0]
        if story.facts[0].key == long.key:  # the retention map follows token 0's write
            notice.append(
                f"In KDA's retention map row 0 ({long.key}'s channel) keeps token 0's write through the switch ‖ at "
                f"step {story.switch_step}; every other row drops to α = {switch:g} there. Gated DeltaNet's one gate "
                f"drops every row, {long.key}'s too: {claim.shown} of {long.key} → {long.expected} is read back from "
                f"KDA at the end; {claim.compare}."
            )
        else:
            notice.append(
                f"At the switch ‖ every row but {long.key}'s drops to α = {switch:g}; Gated DeltaNet's one gate drops "
                f"{long.key}'s too: {claim.shown} of {long.key} → {long.expected} is read back from KDA at the end; "
                f"{claim.compare}."
            )
    notice.append("Set the gate at the switch to 1: nothing closes, and KDA and Gated DeltaNet hold the same state.")
    if story.overwrite is not None:
        notice.append(
            f"The delta rule edits as before: {story.overwrite.key}'s answer has error {out['error']:.3f} after "
            f"{story.overwritten_value} was replaced by {story.overwrite.expected}."
        )
    notice.append(
        "What a fixed state cannot do is keep every detail forever. The hybrid keeps a few softmax layers for that."
    )
else:
    notice = [
        "In KDA's retention map the top rows stay bright across the whole sequence while the bottom rows go dark "
        "within a few steps. Gated DeltaNet, with the same mean α, gives every row the same middling fade: its "
        "long memory is shorter than KDA's slow channels, its short memory longer than KDA's fast ones.",
        "Set the fastest channel's α equal to the slowest (with no variation): every row of the gate map is the "
        "same and the two states are identical — KDA with equal gates is Gated DeltaNet.",
        "What a fixed state cannot do is keep every detail forever. The hybrid keeps a few softmax layers for that.",
    ]
close_stage_page("kda", notice)
