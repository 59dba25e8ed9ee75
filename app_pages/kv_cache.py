"""The KV cache: keep every key and value, so each new token computes one of each — and the cache grows."""

from __future__ import annotations

import streamlit as st

from lineage import plots
from lineage.measure import footprints
from lineage.ops.softmax import tiled_softmax_attention
from lineage.plots.story_chart import cache_story_chart
from lineage.teach import claims, stage_runs
from lineage.teach.story import MIN_T, story_for
from ui.caps import caps
from ui.controls import cap_note, capped_slider, controls_row, step_control, written_length_note
from ui.display import chart, prose, show_code, what_to_notice
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

top = open_stage_page("kv_cache")

cap = caps()
inputs = inputs_choice("kv_cache")
written = story_input() if inputs == "story" else None
a, b, c = controls_row(3, caps=[cap_note("T", cap.T), cap_note("Heads", cap.heads), cap_note("Head dim", cap.head_dim)])
T = capped_slider(a, "Tokens to generate T", MIN_T, cap.T, 32, key="kv_cache_T", name="T")
if written is not None:
    T = len(written.tokens)
    a.caption(written_length_note(T))
n_heads = capped_slider(b, "Heads", 1, cap.heads, 4, key="kv_cache_heads", name="Heads", help="GPT-2 124M has 12.")
head_dim = capped_slider(
    c, "Head dim", 2, cap.head_dim, 16, key="kv_cache_head_dim", name="Head dim", help="GPT-2 124M uses 64."
)
block_choices = [size for size in (2, 4, 8, 16, 32, 64) if size <= T] or [T]
block_size = st.select_slider(
    "FlashAttention block size (for the aside at the end)",
    options=block_choices,
    value=min(8, block_choices[-1]),
    bind="query-params",
    key="kv_cache_block",
    help="Rows per query block and keys per key block of the tiled form.",
)


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def live(T: int, n_heads: int, head_dim: int, seed: int, block_size: int, inputs: str, written: str = "") -> dict:
    if inputs == "story":
        story = story_for(T, written=written)
        run = claims.run_softmax_story(story, n_heads, head_dim, seed, block_size=block_size)
        # a fixed K × V state of the same head width, in the same fp32: what linear attention keeps instead
        return dict(run=run, story=story, claim=claims.kv_cache_claim(run, story))
    return dict(run=stage_runs.run_softmax(T, n_heads, head_dim, seed, block_size=block_size), story=None, claim=None)


out = run_or_stop(live, T, n_heads, head_dim, seed(), block_size, inputs, written_link() if written else "")
run, story = out["run"], out["story"]
held = run.trace.cache_bytes  # KVCache.nbytes of head 0 after each step

st.subheader("The live run")
st.markdown(
    f"A causal self-attention layer ({n_heads} heads × {head_dim}) decodes {T} tokens, appending to a `KVCache` at "
    "each step. The byte counts are read from the cache itself (`KVCache.nbytes`); the keys and values are fp32."
)
m1, m2, m3 = st.columns(3)
m1.metric(
    f"layer's cache after {T} tokens",
    f"{run.layer_cache_bytes:,} bytes",
    help="KVCache.nbytes of the whole layer, every head.",
)
m2.metric("one head's cache", f"{held[-1]:,} bytes", help="KVCache.nbytes of head 0, the head drawn below.")
m3.metric("growth per token, whole layer", f"{run.layer_cache_bytes // T:,} bytes")
st.caption(f"Computed live ({run.device}).")

step = step_control("kv_cache", T)
with top:
    if story is not None:
        show_claim(out["claim"])
        drawn = cache_story_chart(run, story, start=step)
        chart(drawn.fig, key="kv_cache_story", alt=drawn.alt, export_name="kv_cache_story")
        story_key(story)
    else:
        story_only()
chart(
    plots.kv_cache_growth(
        run.trace.keys,
        run.trace.values,
        run.trace.attn,
        start=step,
        title="Head 0's cache: one key and one value appended per token",
    ),
    key="kv_cache_growth",
    alt="Animated key and value caches of head 0 gaining one column per token, and the new query's weights.",
    export_name="kv_cache_growth",
)
chart(
    plots.cache_traffic(held, title="Bytes in head 0's cache"),
    key="kv_cache_traffic",
    alt="Bytes in head 0's cache after each token, growing linearly, and the total read, growing quadratically.",
)

gpt2 = footprints.MODELS["gpt2"]
full = footprints.footprint("gpt2", gpt2.context_len)
st.markdown(
    f"**At full scale.** {gpt2.name} caches {full.kv_cache_bytes_per_token:,} bytes per token in {full.dtype} "
    f"({gpt2.n_layers} layers × {gpt2.n_heads} heads × {gpt2.head_dim} numbers × 2 for keys and values × 2 bytes). "
    f"Its "
    f"{gpt2.context_len:,}-token context fills {plots.format_bytes(full.kv_cache_bytes)}, and the last token "
    "reads every byte of it."
)
st.caption(f"From the config: {gpt2.source}. Computed by `lineage.measure.footprints.footprint`.")

st.subheader("Aside: FlashAttention makes the same softmax move fewer bytes")
prose(
    """
Standard attention writes the T × T score matrix to slow memory (the GPU's HBM), reads it back for the softmax,
writes the probabilities, and reads them again to mix the values. FlashAttention (Dao et al., 2022) never stores
that matrix. It streams blocks of keys past a block of queries, kept in fast on-chip memory, and fixes the softmax
as it goes: each query row carries a running maximum m and a running sum l of exp(score − m). When a new block
raises the maximum, what was summed so far is rescaled by exp(m_old − m_new), so the final result is exact.

The output is the same softmax attention, to float precision. What changes is traffic: fewer bytes between slow
memory and the chip. Every query still meets every earlier key, so the work stays quadratic in T. FlashAttention
makes the O(N²) algorithm IO-efficient; it does not change it, and it does nothing about the cache growing.
"""
)
show_code(tiled_softmax_attention, title="The tiled form that runs")
io_std, io_tiled = run.tiled.io_standard.total, run.tiled.io_tiled.total
f1, f2, f3 = st.columns(3)
f1.metric(
    "tiled vs standard output",
    f"{run.err_tiled:.1e}",
    help="Largest |tiled − standard| over the largest |standard| output, head 0.",
)
f2.metric("bytes moved, standard", f"{io_std:,}", help="Reads + writes of slow memory, one head, fp32.")
f3.metric("bytes moved, tiled", f"{io_tiled:,}", delta=f"{io_tiled / io_std - 1:.0%}", delta_color="inverse")
st.caption(
    f"T = {T}, head dim {head_dim}, blocks of {block_size}; IO counted by `standard_attention_io_bytes` and "
    f"`tiled_attention_io_bytes` (the FlashAttention paper's model). Computed live ({run.device})."
)
tiled = run.tiled
chart(
    plots.online_softmax(
        run.scores,
        tiled.q_block,
        tiled.k_block,
        tiled.m_steps,
        tiled.l_steps,
        tiled.block_size,
        title="Online softmax, tile by tile (head 0)",
    ),
    key="kv_cache_online_softmax",
    alt="Animated tiles of the score matrix visited block by block, with each row's running max and running sum.",
    export_name="flash_online_softmax",
)
chart(
    plots.io_bytes(
        run.io_seq_lens, run.io_standard, run.io_tiled, title="Bytes moved to and from slow memory, one head"
    ),
    key="kv_cache_io",
    alt="Bytes moved by standard and tiled attention against sequence length, both growing quadratically.",
)

what_to_notice(
    [
        "Each frame appends exactly one key column and one value column; nothing already in the cache is touched "
        "again. That is the whole saving over recomputing.",
        "The cache grows in a straight line, and the bytes read per step grow with it, so the total read over a "
        "generation grows like N². At long context, decoding waits on memory, not on arithmetic.",
        "In the tiled form, m only ever rises and l is rescaled whenever it does; after the last key block of a "
        "row, m and l are exactly the softmax's maximum and normaliser.",
        "Both IO lines climb with the same slope on the log-log chart: FlashAttention divides the bytes by a "
        "constant, it does not change the O(N²) algorithm. Linear attention, next, changes the algorithm.",
    ]
)
