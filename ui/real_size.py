"""The "At real size" section of every linear-memory stage page: the stage's op at real head dims and lengths.

One call per page (``real_size_section(stage_key)``, before what to notice). The run itself is
:func:`lineage.teach.real_size.run_at_scale`, on the live device, at sizes up to that device's caps (``ui.caps``:
``scale_T``,
``scale_head_dims``, ``scale_heads``). It starts when the visitor turns it on: at the caps it is the heaviest run a
stage page offers, and a page that opens without it costs what it did before.
"""

from __future__ import annotations

import streamlit as st

from lineage import plots
from lineage.device import device_info
from lineage.teach import real_size
from ui.caps import caps
from ui.controls import cap_note, capped_slider, controls_row
from ui.display import chart, prose
from ui.running import run_or_error
from ui.session import seed

T_STEP = 256  # the T slider's step and smallest value: whole chunks on every device (32 on a CPU, 64 on a GPU)


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def _run(stage_key: str, T: int, K: int, heads: int, seed: int) -> real_size.ScaleRun:
    return real_size.run_at_scale(stage_key, T, K, heads, seed)


def head_dims_note(dims: tuple[int, ...]) -> str:
    """The caption beside the head-dim choice: what this device offers."""
    allowed = " or ".join(f"{d}" for d in dims)
    return f"K = V is {allowed} on {device_info().type} (the device's caps)."


def real_size_section(stage_key: str) -> None:
    """Controls for a run of ``stage_key`` at real size and, once turned on, what can be drawn of it."""
    m = real_size.linear_mechanism(stage_key)
    cap = caps()
    st.subheader("At real size")
    prose(
        f"""
The animations above draw every cell of a small state. A real layer has heads of 64 to 128 channels and reads tens
of thousands of tokens. Here {m.label}'s own op runs in its chunked form at such sizes on this device
({cap.scale_heads} heads, K = V up to {max(cap.scale_head_dims)}, up to {cap.scale_T:,} tokens). Its inputs are drawn
from the page's seed, not set by the controls above: {real_size.inputs_text(stage_key)}
"""
    )
    on, T, K = _controls(stage_key, cap)
    if not on:
        st.caption(f"Turn on **Run at real size** to run {m.label} over {T:,} tokens here.")
        return
    run = run_or_error(_run, stage_key, T, K, cap.scale_heads, seed())
    if run is None:
        return
    _metrics(run)
    _figures(stage_key, run)


def _controls(stage_key: str, cap) -> tuple[bool, int, int]:
    """The section's toggle, its T slider and its head-dim choice: (on, T, K)."""
    left, middle, right = controls_row(
        3, caps=[cap_note("Real-size T", cap.scale_T), head_dims_note(cap.scale_head_dims)]
    )
    on = left.toggle(
        "Run at real size",
        key=f"{stage_key}_scale_run",
        bind="query-params",
        help="The heaviest run of the page: it starts only when asked.",
    )
    T = capped_slider(
        middle,
        "Tokens T",
        T_STEP,
        cap.scale_T,
        cap.scale_T,
        key=f"{stage_key}_scale_T",
        name="Real-size T",
        step=T_STEP,
    )
    K = right.radio(
        "Head dim K = V",
        cap.scale_head_dims,
        index=len(cap.scale_head_dims) - 1,
        horizontal=True,
        key=f"{stage_key}_scale_head_dim",
        bind="query-params",
    )
    return on, T, K


def _metrics(run: real_size.ScaleRun) -> None:
    """The run's time, throughput, state and the cache it spares, and the checks it passed."""
    a, b, c, d = st.columns(4)
    a.metric(
        "one call of the op",
        f"{run.seconds * 1e3:,.1f} ms",
        help=f"Wall time of one call over all {run.T:,} tokens and {run.H} heads (median of {run.repeats}), chunk "
        f"length {run.chunk_size}.",
    )
    b.metric("tokens per second", f"{run.tokens_per_s:,.0f}", help="T over the wall time of one call.")
    c.metric(
        "state kept, all heads",
        plots.format_bytes(run.state_bytes),
        help=f"{run.H} × {run.K} × {run.state_V} numbers of 4 bytes (fp32): the same after any number of tokens.",
    )
    d.metric(
        f"KV cache of {run.T:,} tokens",
        plots.format_bytes(run.kv_cache_bytes),
        help=f"{run.H} heads × {run.T:,} tokens × (K + V = {run.K + run.V}) numbers of 4 bytes: a softmax layer's "
        f"cache at the same sizes, {run.kv_cache_bytes / run.state_bytes:,.0f}× the state.",
    )
    st.caption(
        f"Computed live ({run.device}), seed {run.seed}. Checks: run segment by segment from the returned state, the "
        f"final state matches one call over the whole sequence to {run.err_segments:.1e}; the traced recurrence "
        f"matches the op's state after step {run.n_first - 1} to {run.err_first:.1e} (relative)."
    )


def _figures(stage_key: str, run: real_size.ScaleRun) -> None:
    """What can be drawn of the run: the first steps exactly, the whole run one point per segment."""
    n = run.segment_ends.size
    st.markdown(
        f"**What is drawn.** Exactly: every cell of head 0's state over the first {run.n_first} steps. Summarised: "
        f"the whole run, one point per segment of {run.segment:,} tokens ({n} points for {run.T:,} steps, "
        f"{run.T / n:,.0f}× fewer): the state's norm after each segment, each key row's norm (head 0), and the mean "
        "and largest output norm over each segment (head 0)."
    )
    chart(
        plots.state_animation(
            {"S_t, head 0": run.first_states},
            gate=run.first_decay,
            title=f"The first {run.n_first} steps exactly (head 0, K = {run.K})",
        ),
        key=f"{stage_key}_scale_first",
        alt=f"Animated heatmap of head 0's state over the first {run.n_first} steps of the real-size run.",
    )
    if run.state_V > run.V:
        st.caption(f"The state's last column (column {run.V}) is the normaliser z, fed by a value of 1.")
    ends = run.segment_ends
    chart(
        plots.run_summary(
            ends,
            {f"head {h}": run.state_norm[h] for h in range(run.H)},
            title=f"‖S‖ after every {run.segment:,} tokens, each head",
            y_title="‖S‖ (Frobenius)",
        ),
        key=f"{stage_key}_scale_norms",
        alt="Lines of each head's state norm over the whole run, one point per segment.",
    )
    chart(
        plots.state_rows_over_run(
            ends, run.row_norms, title=f"Each key row of head 0's state after every {run.segment:,} tokens"
        ),
        key=f"{stage_key}_scale_rows",
        alt="Heatmap of the norm of each key row of head 0's state (rows) after each segment (columns).",
    )
    chart(
        plots.run_summary(
            ends,
            {"mean ‖o_t‖ over the segment": run.output_mean, "largest ‖o_t‖ in the segment": run.output_max},
            title=f"Output norm, head 0, over every {run.segment:,} tokens",
            y_title="‖o_t‖",
        ),
        key=f"{stage_key}_scale_outputs",
        alt="Lines of the mean and largest output norm of head 0 over each segment of the run.",
    )
