"""DeltaNet: read what the memory holds at the key, then write only the correction — and train it in chunks."""

from __future__ import annotations

import streamlit as st

from lineage import plots
from lineage.teach import claims, stage_runs, units
from lineage.teach.equations import chunked_delta
from lineage.teach.story import story_for
from ui.display import chart
from ui.running import run_or_stop
from ui.session import seed
from ui.stage_page import close_stage_page, live_run, open_stage_page, stage_controls
from ui.story import code_excerpts, written_link

COMPARE_BETAS = (0.1, 0.5, 1.0)  # the write strengths drawn beside the chosen one

top = open_stage_page("deltanet")

inputs, written, (T, K, V) = stage_controls("deltanet")
left, right = st.columns(2)
beta = left.slider(
    "Write strength β",
    0.0,
    1.0,
    1.0,
    0.05,
    bind="query-params",
    key="deltanet_beta",
    help="The fraction of the gap between v_old and v_t that each write closes. β = 0 writes nothing.",
)
chunk_choices = [2**i for i in range(T.bit_length()) if 2**i <= T]
chunk_size = right.select_slider(
    "Chunk size C of the chunked form",
    options=chunk_choices,
    value=min(16, chunk_choices[-1]),
    bind="query-params",
    key="deltanet_chunk",
    help=f"Powers of two up to T = {T}.",
)


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def live(T: int, K: int, V: int, seed: int, beta: float, chunk_size: int, inputs: str, written: str = "") -> dict:
    if inputs == "story":
        story = story_for(T, K, V, written)
        run = claims.run_story("deltanet", story, claims.Knobs(beta=beta), chunk_size=chunk_size)
        claim = units.stage_claim("deltanet", run, story, claims.Knobs(beta=beta))
    else:
        story, claim = None, None
        run = stage_runs.run_stage("deltanet", T, K, V, seed, stage_runs.GateRule(beta=beta), chunk_size=chunk_size)
    before, after = stage_runs.write_gaps(run)
    return dict(
        run=run,
        story=story,
        claim=claim,
        by_age=stage_runs.recall(run).by_age,
        gap_before=before,
        gap_after=after,
        mixing=stage_runs.mixing_matrix(run),
    )


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def compared(T: int, K: int, V: int, seed: int) -> dict:
    """Recall by age of the lines drawn beside the chosen β: the same whatever β is chosen, so kept apart from
    :func:`live` and not run again when only β moves."""
    by_age = {}
    for b in COMPARE_BETAS:
        other = stage_runs.run_stage("deltanet", T, K, V, seed, stage_runs.GateRule(beta=b), repeats=1)
        by_age[f"DeltaNet, β = {b:g}"] = stage_runs.recall(other).by_age
    additive = stage_runs.run_stage("linear_attention", T, K, V, seed, repeats=1)
    by_age["linear attention (adds only)"] = stage_runs.recall(additive).by_age
    return by_age


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def timing(T: int, D: int, seed: int) -> stage_runs.ChunkSweep:
    return stage_runs.chunk_size_sweep(T, D, seed)


out = run_or_stop(live, T, K, V, seed(), beta, chunk_size, inputs, written_link() if written else "")
run = out["run"]
yours = f"DeltaNet, β = {beta:g}"
by_age = {f"{yours} (yours)": out["by_age"]}  # a compared β equal to yours is drawn once, as yours
by_age |= {name: curve for name, curve in run_or_stop(compared, T, K, V, seed()).items() if name != yours}

about = (
    "The recurrence runs step by step and records, at every step, what the memory returned for k_t, the "
    "correction it wrote and the state after it. Keys are unit vectors, as DeltaNet's layer makes them."
)
step = live_run(top, "deltanet", out, T, about=about)

chart(
    plots.delta_rule_steps(
        run.k,
        run.trace.read[0, 0],
        run.v,
        run.trace.delta[0, 0],
        run.states,
        start=step,
        title="The delta rule, token by token",
    ),
    key="deltanet_steps",
    alt="Animated delta rule: the value read at the key, the target, the correction, the write and the state.",
    export_name="deltanet_steps",
)

st.subheader("What β does")
st.markdown(
    "Every key stored is read back from every later state, and the error is averaged by how long ago the pair was "
    "written. Same inputs for every line."
)
chart(
    plots.recall_by_age(
        by_age,
        mechanisms={name: "linear_attention" if name.startswith("linear") else "deltanet" for name in by_age},
        emphasis=next(iter(by_age)),
        title="Recall error by the age of the pair",
    ),
    key="deltanet_beta_chart",
    alt="Recall error against the age of a stored pair, for several write strengths and for linear attention.",
)

st.subheader("Training it in parallel: the chunked form")
st.markdown(
    f"""
Cut the sequence into chunks of C = {chunk_size} steps. Inside a chunk, the delta rule's C small updates can be
gathered into one (the WY representation: a C × C triangular solve turns the keys and β into corrected values), and
the chunk's outputs then come from a masked C × C attention over its own corrected values — all rows at once.
Everything from earlier chunks arrives only through the state S handed over at the chunk boundary, one matrix
product per chunk. The animation below takes the same outputs apart that way, chunk by chunk.
"""
)
code_excerpts(chunked_delta())
chart(
    plots.chunk_schedule(out["mixing"], chunk_size, title=f"The chunked form, C = {chunk_size}, chunk by chunk"),
    key="deltanet_chunks",
    alt="Animated chunks: the part of each output computed inside its chunk and the part carried by the state.",
    export_name="deltanet_chunks",
)
st.markdown(
    f"The chunked form with C = {chunk_size} matches the recurrence to a relative {run.err_chunk:.1e}. Its cost "
    "per head is about 2LD² for the state hand-offs plus 2LCD inside the chunks (L = T tokens, D = K = V), so FLOPs "
    "rise with C. The bars are measured now, on this device, with D = K; the line is the model."
)
sweep = run_or_stop(timing, T, K, seed())
chart(
    plots.chunk_timing(
        sweep.chunk_sizes,
        sweep.seconds,
        sweep.model_flops,
        chosen=chunk_size,
        title="Chunk size: measured time against the FLOP model",
    ),
    key="deltanet_timing",
    alt="Measured time of the chunked form for each chunk size, beside the FLOP model that rises with C.",
)
st.caption(f"Median wall time of several calls per chunk size, T = {sweep.T}, D = {sweep.D} ({sweep.device}).")

close_stage_page(
    "deltanet",
    [
        "Read, target, correction: the write is the difference between what the memory returns and what it "
        "should return, so a value it already holds costs nothing to write again.",
        "The state stays bounded: an overwrite replaces part of what was there instead of adding on top, unlike "
        "linear attention's state, which keeps growing.",
        "β trades the new against the old: at β = 1 the newest pair reads back exactly and older pairs are pushed "
        "out sooner; small β keeps more of the past but stores nothing sharply. Adding only (linear attention) "
        "blurs every pair alike.",
        "In the chunk animation, the left panel is parallel work inside each chunk; the right panel is everything "
        "that had to wait for the state of the chunk before. Bigger chunks move work from right to left.",
        "The FLOP model rises with C, but at small sizes the measured time is dominated by the sequential hand-offs "
        "(T / C of them): FLOPs are not the only cost. On GPUs, C = 64 is the usual choice.",
    ],
)
