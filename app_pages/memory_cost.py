"""Memory & cost: the bytes a model holds while decoding, for real configs, and the time floor bandwidth sets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from lineage import plots, schedules
from lineage.measure import footprints
from lineage.teach import ledger, overview
from ui.controls import whole_number_input
from ui.display import chart, prose, what_to_notice
from ui.display import table as show_table
from ui.session import measured_bandwidth

SEQ_LENS = overview.MEMORY_COST_SEQ_LENS  # 1 token to 1M = 2^20
KIMI = "kimi-linear-48b"
HYBRIDS = (KIMI, "kimi-k3")  # the released hybrids, each against the same depth all MLA and all MHA
MILLION = 2**20  # Kimi Linear's and Kimi K3's context, the "1M" of the paper
MEASURED = "measured"  # the bandwidth option filled in by the Live benchmark page

st.title("Memory & cost")
top = st.container()  # the page's claim and its numbers, filled once the controls below have been read
prose(
    """
While a model writes, every **softmax-attention** layer keeps a key and a value for every token so far — the
KV cache — so its memory grows by a fixed number of bytes with every token. A **linear-memory** layer (DeltaNet,
Mamba-2, KDA, …) keeps a state of fixed size instead. To produce one more token the model must read all of that
memory once, and for each cached number it reads it does about two floating-point operations (a multiply and an
add). A processor can do far more arithmetic than that in the time it takes to fetch a byte, so it spends the step
waiting on memory: **the bottleneck isn't compute, it's memory bandwidth.** The fastest a step can possibly be is
*bytes read ÷ bandwidth*.

Every size below is computed from the models' published configurations (sources at the bottom); GPU capacities
and bandwidths come from the vendors' datasheets, or from this machine, measured on the Live benchmark page.
"""
)


# ---- controls ----------------------------------------------------------------------------------------------

left, middle, right = st.columns(3)
dtype = left.selectbox(
    "Cache dtype (every model)", list(footprints.DTYPE_BYTES), index=1, bind="query-params", key="memory_cost_dtype"
)
seq_len = whole_number_input(
    middle, "Context length for the table (tokens)", key="memory_cost_len", default=MILLION, step=1024
)
# (bytes/s, the option's words, where the number comes from): the option stays short enough for its select on a
# 1280 px slide; the table's heading names the source
bandwidths = {
    key: (p.bandwidth_bytes_per_s, f"{p.name}: {p.bandwidth_bytes_per_s / 1e9:,.0f} GB/s", "datasheet")
    for key, p in footprints.GPU_PRESETS.items()
}
measured = measured_bandwidth()
if measured is not None:
    rate, where = measured
    bandwidths[MEASURED] = (rate, f"this machine: {rate / 1e9:,.1f} GB/s", f"measured live, {where}")
bandwidth_key = right.selectbox(
    "Memory bandwidth",
    list(bandwidths),
    index=list(bandwidths).index("h100-sxm"),
    format_func=lambda k: bandwidths[k][1],
    bind="query-params",
    key="memory_cost_bandwidth",
)
bandwidth, bandwidth_name, bandwidth_source = bandwidths[bandwidth_key]
bandwidth_label = f"{bandwidth_name} ({bandwidth_source})"
right.caption(
    "GPU bandwidths from the vendors' datasheets. Run the Live benchmark page to add this machine's, measured."
    if measured is None
    else "GPU bandwidths from the vendors' datasheets; this machine's measured on the Live benchmark page."
)

st.subheader("Your own model")
limits = footprints.CUSTOM_LIMITS
st.caption(
    "Sizes must be whole numbers ≥ 1, and the heads must split evenly over the KV heads. Linear-memory layers use "
    "the same heads and head dim; MLA layers cache DeepSeek-V3's 512 + 64 numbers per token. Capped at "
    f"{limits['n_layers']:,} layers, {limits['n_heads']:,} heads and a head dim of {limits['head_dim']:,} (past any "
    "released model; every byte count stays exact), and at a context of "
    f"{footprints.MAX_SEQ_LEN:,} tokens."
)
c = st.columns(7)
custom_args = (
    whole_number_input(c[0], "Layers (n_layers)", key="memory_cost_layers", default=32),
    whole_number_input(c[1], "Heads (n_heads)", key="memory_cost_heads", default=32),
    whole_number_input(c[2], "KV heads (n_kv_heads)", key="memory_cost_kv_heads", default=8),
    whole_number_input(c[3], "Head dim (head_dim)", key="memory_cost_head_dim", default=128),
    c[4].selectbox(
        "Layer kind",
        schedules.LAYER_KINDS,
        index=schedules.LAYER_KINDS.index("kda"),
        bind="query-params",
        key="memory_cost_kind",
    ),
    c[5].selectbox(
        "Softmax kind", schedules.SOFTMAX_KINDS, index=1, bind="query-params", key="memory_cost_softmax_kind"
    ),
    whole_number_input(c[6], "Softmax every N layers (0 = none)", key="memory_cost_every", default=4, lo=0),
)


def custom_model(n_layers, n_heads, n_kv_heads, head_dim, kind, softmax_kind, every) -> footprints.ModelSpec:
    """The user's spec: ``kind`` everywhere, ``softmax_kind`` at every ``every``-th layer (none if 0)."""
    footprints.check_custom_sizes(n_layers, n_heads, n_kv_heads, head_dim)  # before a schedule of n_layers entries
    kinds = kind if every == 0 else schedules.periodic_schedule(n_layers, every, base=kind, kind=softmax_kind)
    return footprints.custom_spec(n_layers, n_heads, n_kv_heads, head_dim, kinds)


try:
    custom = custom_model(*custom_args)
except ValueError as exc:
    st.error(f"Your model is left out of the chart and table: {exc}")
    custom_args = None
else:
    st.caption(f"Layers: {' '.join(k.upper() for k in custom.layer_kinds)}")


TABLE_LABELS = {  # short headers, so the table fits the width of the page (1440 px and up) without scrolling
    "KV cache (bytes)": "KV cache",
    "state (bytes)": "state",
    "read per token (bytes)": "read / token",
    "floor, cache + state (ms/token)": "floor, ms/token",
    "weights read per token (bytes)": "weights / token",
    "floor incl. weights, batch 1 (ms/token)": "floor incl. weights",
    "released context (tokens)": "released context",
}
TABLE_HELP = {
    "read per token (bytes)": "Cache + state read to decode one token of one sequence.",
    "floor, cache + state (ms/token)": "Bytes read per token ÷ bandwidth: no decoder on this memory is faster.",
    "weights read per token (bytes)": "Weights read per decoding step (MoE: the activated ones); shared by a batch.",
    "floor incl. weights, batch 1 (ms/token)": "(cache + state + weights) ÷ bandwidth, for one sequence.",
}


def human_bytes(n) -> str:
    return "" if n is None or pd.isna(n) else plots.format_bytes(n)


def human_ms(v) -> str:
    """A time floor in ms to three figures, kept when they end in zero (22.0, 11.5, 2.53), whole from 100 up."""
    if v is None or pd.isna(v):
        return ""
    return f"{v:,.0f}" if v >= 100 else f"{v:#.3g}"


def human_tokens(n) -> str:
    """A context length as models name it (powers of two): 1,048,576 -> "1M", 163,840 -> "160K"."""
    if n is None or pd.isna(n):
        return ""
    for unit, size in (("M", 2**20), ("K", 2**10)):
        if n >= size and n % (size // 1024 or 1) == 0:
            return f"{n / size:,.4g}{unit}"
    return f"{int(n):,}"


# ---- one cached call per view --------------------------------------------------------------------------------


def specs(custom: tuple | None) -> dict[str, footprints.ModelSpec]:
    out = dict(footprints.MODELS)
    if custom is not None:
        out["custom"] = custom_model(*custom)
    return out


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def curves(dtype: str, custom: tuple | None) -> dict[str, np.ndarray]:
    """Cache + state bytes at every length of SEQ_LENS, per model."""
    return overview.bytes_held(list(specs(custom).values()), dtype)


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def at_length(dtype: str, seq_len: int, custom: tuple | None, bandwidth: float) -> dict:
    """The table, per-layer bytes and Kimi Linear's reduction at ``seq_len`` tokens."""
    rows, layers = [], {}
    for spec in specs(custom).values():
        fp = footprints.footprint(spec, seq_len, dtype)
        floor_s = footprints.decode_time_lower_bound(fp.read_bytes_per_token, bandwidth)
        with_weights = (
            None
            if fp.weight_bytes_per_token is None
            else footprints.decode_time_lower_bound(fp.read_bytes_per_token + fp.weight_bytes_per_token, bandwidth)
        )
        rows.append(
            {
                "model": spec.name,
                "KV cache (bytes)": fp.kv_cache_bytes,
                "state (bytes)": fp.state_bytes,
                "read per token (bytes)": fp.read_bytes_per_token,
                "held": plots.format_bytes(fp.total_bytes),
                "floor, cache + state (ms/token)": floor_s * 1e3,
                "weights read per token (bytes)": fp.weight_bytes_per_token,
                "floor incl. weights, batch 1 (ms/token)": None if with_weights is None else with_weights * 1e3,
                "released context (tokens)": spec.context_len,
            }
        )
        layers[spec.name] = (
            [layer.kind for layer in fp.per_layer],
            np.array([layer.kv_cache_bytes for layer in fp.per_layer]),
            np.array([layer.state_bytes for layer in fp.per_layer]),
        )
    table = pd.DataFrame(rows)
    # integer columns with gaps (weights or context not known) stay integers, shown blank where missing
    for column in ("weights read per token (bytes)", "released context (tokens)"):
        table[column] = table[column].astype("Int64")
    savings = {
        key: dict(
            mla=ledger.hybrid_saving(key, seq_len, dtype),
            mla_1m=ledger.hybrid_saving(key, MILLION, dtype),
            mha=ledger.hybrid_saving(key, seq_len, dtype, against="mha"),
        )
        for key in HYBRIDS
    }
    return dict(table=table, layers=layers, savings=savings, kimi=savings[KIMI]["mla"])


def hybrid_section(spec: footprints.ModelSpec, saving: dict, seq_len: int, at_million: bool) -> None:
    """One hybrid's savings against all-MLA (cache only; cache and states, here and at 1M) and against all-MHA."""
    mla, mla_1m, mha = saving["mla"], saving["mla_1m"], saving["mha"]
    a, b, c, d = st.columns(4)
    a.metric(f"{spec.name}: saved against all-MLA, {ledger.SAVING_CACHE} (any length)", f"{mla.cache:.1%}")
    b.metric(f"{spec.name}: saved against all-MLA, {ledger.SAVING_TOTAL}, {seq_len:,} tokens", f"{mla.total:.1%}")
    if not at_million:
        c.metric(
            f"{spec.name}: saved against all-MLA, {ledger.SAVING_TOTAL}, {MILLION:,} tokens", f"{mla_1m.total:.1%}"
        )
    d.metric(f"{spec.name}: saved against all-MHA, {ledger.SAVING_TOTAL}, {seq_len:,} tokens", f"{mha.total:.1%}")
    mla_layers = spec.layers_of("mla")
    st.markdown(
        f"**{spec.name}**, computed from its config: {len(mla_layers)} of {spec.n_layers} layers still cache (MLA at "
        f"layers {ledger.positions(mla_layers)}), so its cache is {len(mla_layers)}/{spec.n_layers} of the all-MLA "
        f"one; the KDA layers' fixed state takes back a little, less as the context grows. All-MHA caches a key and a "
        f"value for each of its {spec.n_heads} heads of {spec.head_dim} in every layer."
    )


# ---- the chart ---------------------------------------------------------------------------------------------

try:
    view = at_length(dtype, int(seq_len), custom_args, float(bandwidth))
except ValueError as exc:
    st.error(f"Context length for the table: {exc}")
    view = None

series = curves(dtype, custom_args)
chart(
    plots.cache_vs_length(
        SEQ_LENS,
        series,
        gpu_memory=overview.gpu_memory(),
        mark_len=int(seq_len) if view is not None else None,
        title=f"Bytes held while decoding one sequence ({dtype}), 1 to {MILLION:,} tokens",
    ),
    key="memory_cost_chart",
    alt="Log-log lines of bytes held against context length for each model, with the memory of three GPUs as "
    "flat dotted lines: the softmax models rise as straight lines, Kimi Linear starts flat and bends up.",
)
st.caption(
    "Hover a line for the exact bytes. Dotted lines: the whole memory of one GPU — a model's weights need room "
    "there too. The dashed vertical line is the table's context length."
)

# ---- the table, the floor and Kimi Linear's claim ----------------------------------------------------------------

if view is not None:
    st.subheader(f"At {int(seq_len):,} tokens, read at {bandwidth_label}")
    table = view["table"]
    # Human units in the cells (the exact counts stay the table's values: copy a cell, or see them below)
    shown = {c: human_bytes for c in table.columns if "bytes" in c}
    shown |= {c: human_ms for c in table.columns if "ms/token" in c}
    shown["released context (tokens)"] = human_tokens
    exact = {c: (lambda v: f"{int(v):,} bytes") for c in shown if "bytes" in c}  # on hover, in presenter mode
    show_table(
        table,
        key="memory_cost_table",
        formats=shown,
        exact=exact,
        labels=TABLE_LABELS,
        column_config={c: st.column_config.Column(label, help=TABLE_HELP.get(c)) for c, label in TABLE_LABELS.items()},
    )
    with st.expander("The same table with exact byte counts"):
        st.dataframe(
            table,
            hide_index=True,
            column_config={c: st.column_config.NumberColumn(format="localized") for c in shown if "bytes" in c},
        )
    st.caption(
        "Floor = bytes read ÷ bandwidth: no implementation on that memory can decode a token faster. The cache and "
        "state are per sequence; the weights are read once per step for the whole batch (dense models: every "
        "weight; mixtures of experts: the activated ones, as their authors state them). Contexts beyond a model's "
        "released context are extrapolations of its config."
    )

    st.subheader("The hybrids against the same stack with MLA, or plain MHA, in every layer")
    at_million = int(seq_len) == MILLION  # then the table's length is the million the paper speaks of: one number
    for key in HYBRIDS:
        hybrid_section(footprints.MODELS[key], view["savings"][key], int(seq_len), at_million)
    st.markdown(
        f"Kimi Linear's paper says: *“{footprints.KIMI_PAPER_CLAIM.text}”* — {footprints.KIMI_PAPER_CLAIM.source}. "
        "The article says the same of K3 (“KDA's KV cache is only 25% of full attention's”); K3's own count of "
        "caching layers, from its config, is above."
    )
    kimi_spec = footprints.MODELS[KIMI]

    names = list(view["layers"])
    chosen = st.selectbox(
        "Bytes per layer of",
        names,
        index=names.index(kimi_spec.name),
        bind="query-params",
        key="memory_cost_layer_model",
    )
    kinds, cache_b, state_b = view["layers"][chosen]
    chart(
        plots.per_layer_bars(kinds, cache_b, state_b, title=f"{chosen}: bytes per layer at {int(seq_len):,} tokens"),
        key="memory_cost_layers_chart",
        alt=f"Stacked bars, one per layer of {chosen}: the cache each caching layer holds and the fixed state of the "
        "others.",
    )

# ---- the claim, on the first screen ----------------------------------------------------------------------------

if view is not None:
    by_name = view["table"].set_index("model")
    llama_name, kimi_name = footprints.MODELS["llama3-8b"].name, footprints.MODELS[KIMI].name
    with top:
        st.markdown(
            "**A softmax model's memory grows with every token it reads; a hybrid that keeps a fixed state in most "
            f"layers holds a fraction of it — and every decoded token has to read all of it.** At {int(seq_len):,} "
            f"tokens ({dtype}):"
        )
        k3_name = footprints.MODELS["kimi-k3"].name
        m1, m2, m3, m4 = st.columns(4)
        m1.metric(f"{llama_name}: held per sequence", human_bytes(by_name.loc[llama_name, "read per token (bytes)"]))
        m2.metric(f"{kimi_name}: held per sequence", human_bytes(by_name.loc[kimi_name, "read per token (bytes)"]))
        m3.metric(
            f"{kimi_name} against all-MLA, {ledger.SAVING_CACHE}",
            f"−{view['kimi'].cache:.1%}",
            help=f"{ledger.SAVING_TOTAL}: −{view['kimi'].total:.1%} at {int(seq_len):,} tokens.",
        )
        m4.metric(f"{k3_name}: held per sequence", human_bytes(by_name.loc[k3_name, "read per token (bytes)"]))

# ---- sources ---------------------------------------------------------------------------------------------------

st.subheader("Where the numbers come from")
lines = [f"- **{s.name}**: {s.source}. {s.notes}" for s in footprints.MODELS.values()]
if custom_args is not None:
    lines.append(f"- **custom**: {custom.source}.")
lines += [f"- **{p.name}**: {p.source}." for p in footprints.GPU_PRESETS.values()]
st.markdown("\n".join(lines))

kimi_one = footprints.footprint(KIMI, 1, dtype)
kimi_mla = len(footprints.MODELS[KIMI].layers_of("mla"))
k3_one = footprints.footprint("kimi-k3", 1, dtype)
notice = [
    "The softmax models are straight lines of slope one on log-log axes: double the context, double the cache.",
    f"Kimi Linear's line starts flat — its KDA state ({plots.format_bytes(kimi_one.state_bytes)}) dominates — and "
    f"bends up where its {kimi_mla} MLA layers' cache catches up with that state, at about "
    f"{kimi_one.state_bytes / kimi_one.kv_cache_bytes_per_token:,.0f} tokens.",
    f"Kimi K3's line has the same shape, higher: {len(footprints.MODELS['kimi-k3'].layers_of('kda'))} KDA layers "
    f"hold {plots.format_bytes(k3_one.state_bytes)} whatever the length, and its "
    f"{len(footprints.MODELS['kimi-k3'].layers_of('mla'))} MLA layers' cache passes that at about "
    f"{k3_one.state_bytes / k3_one.kv_cache_bytes_per_token:,.0f} tokens; at {MILLION:,} it holds "
    f"{plots.format_bytes(footprints.footprint('kimi-k3', MILLION, dtype).total_bytes)} per sequence ({dtype}).",
    "GQA (Llama-3-8B) and MLA (DeepSeek-V3) shrink what each cached token costs, which moves the line down without "
    "changing its slope; replacing cached layers by fixed-state ones (Kimi Linear, your hybrid) moves it down by the "
    "share of layers replaced, once the context is long.",
]
if view is not None:
    table = view["table"].set_index("model")
    llama = table.loc[footprints.MODELS["llama3-8b"].name]
    notice.append(
        f"At {int(seq_len):,} tokens Llama-3-8B holds {plots.format_bytes(llama['read per token (bytes)'])} per "
        f"sequence; reading it at {bandwidth / 1e9:,.0f} GB/s takes at least "
        f"{llama['floor, cache + state (ms/token)']:.3g} ms per token, before a single weight is read."
    )
what_to_notice(notice)
