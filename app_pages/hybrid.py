"""The hybrid: mostly KDA layers with a periodic MLA (softmax) layer — Kimi Linear, and Kimi K3 after it."""

from __future__ import annotations

import streamlit as st

from lineage import plots, schedules
from lineage.measure import footprints
from lineage.models import hybrid
from lineage.plots.story import crossover
from lineage.teach import claims, ledger
from lineage.teach.story import story_for
from ui.caps import caps
from ui.controls import cap_note, cap_notes, capped_slider, step_control
from ui.display import chart, show_code, stage_header, what_to_notice
from ui.running import run_or_stop
from ui.session import seed
from ui.story import claim_slot, equation_panel, story_input, top_slot, written_link

K3 = footprints.MODELS["kimi-k3"]
K3_PARAMS, K3_ARTICLE = footprints.PARAMETER_FACTS["kimi-k3"], footprints.PARAMETER_FACTS["kimi-k3-article"]
KIMI = footprints.MODELS["kimi-linear-48b"]
CONTEXTS = [2**p for p in range(8, 21)]  # 256 … 1,048,576 tokens (Kimi Linear's and K3's released context)
LIVE_LAYER_CAP = KIMI.n_layers  # as deep as Kimi Linear 48B
PRESETS = {  # the schedules the page offers: a small custom stack, and the two released hybrids with their shapes
    "custom": "MLA every N layers (a small stack)",
    "kimi": f"{KIMI.name}: {KIMI.n_layers} layers, MLA at {ledger.positions(KIMI.layers_of('mla'))}",
    "k3": f"{K3.name}: {K3.n_layers} layers, MLA at {ledger.positions(K3.layers_of('mla'))}",
}


def counts(spec: footprints.ModelSpec) -> str:
    """'20 KDA + 7 MLA (MLA at 4, 8, 12, 16, 20, 24, 27)', from a spec's layer kinds."""
    mla = spec.layers_of("mla")
    return f"{spec.n_layers - len(mla)} KDA + {len(mla)} MLA (MLA at {ledger.positions(mla)})"


DECODE_T = 24  # tokens the live decode opens at, where the stack's layers × tokens cap allows


def decode_fits(n_layers: int) -> int:
    """The most tokens a stack of ``n_layers`` may decode live on this device (layers × tokens is capped)."""
    return caps().hybrid_layer_tokens // n_layers


def fit_decode_to_preset() -> None:
    """On a change of preset: a token count the new stack may not decode is lowered to the most it may (Kimi K3's 93
    layers decode 6 tokens where Kimi Linear's 27 decode 24), so choosing a released model shows its decode instead
    of a refusal. A count typed past the cap for the same stack is still refused, and says so."""
    n_layers = {"kimi": KIMI.n_layers, "k3": K3.n_layers}.get(st.session_state.get("hybrid_schedule"))
    if n_layers is not None and st.session_state.get("hybrid_T", DECODE_T) > decode_fits(n_layers):
        st.session_state["hybrid_T"] = max(4, decode_fits(n_layers))


def mix(spec: footprints.ModelSpec) -> str:
    """'20:7', KDA to MLA layers, from a spec's layer kinds."""
    return f"{len(spec.layers_of('kda'))}:{len(spec.layers_of('mla'))}"


stage_header("hybrid")
top = top_slot()


@st.cache_data(max_entries=4, ttl=3600, show_spinner=False)
def needle(T: int, written: str = "") -> dict:
    """The story with a KDA state too small for its keys (no switch): the state blurs a fact the cache finds."""
    story = story_for(T, claims.HYBRID_STATE_K, 8, written)
    run = claims.run_story("kda", story, claims.Knobs(alpha_switch=1.0), repeats=1)
    return dict(story=story, run=run, claim=claims.hybrid_claim(claims.hybrid_needle(story, run), story))


written = story_input()
story_out = run_or_stop(needle, 32, written_link() if written else "")
claim_slot(top, "hybrid", story_out, step=story_out["story"].T - 1)
st.markdown(
    f"""
A KDA layer's memory is a fixed set of matrices. That is why it is cheap, and also its limit: squeeze a long
context into a fixed size and exact details — a name, a number, a line of code seen long ago — blur together.
Softmax attention keeps every token and finds any of them exactly, but its cache grows with the context.

Kimi Linear ([arXiv 2510.26692](https://arxiv.org/abs/2510.26692)) keeps both. The paper calls its mix 3:1
KDA to MLA; the released 48B model has {counts(KIMI)}, so {mix(KIMI)}, not strictly 3:1. MLA, DeepSeek's
multi-head latent attention, is softmax attention that caches one compressed vector and one small shared key per
token, instead of a key and a value for every head. Most layers then hold a constant amount, and only about a
quarter of them hold a cache that grows. The paper reports *“{footprints.KIMI_PAPER_CLAIM.text}”* against full MLA.

Kimi K3 follows the same plan at scale. Its configuration, as public inference-simulator and llama.cpp threads
quote it (secondary sources, listed under the schedule below), has {counts(K3)}: MLA every fourth layer and again
at the last, so the two top layers are both MLA and the mix is {mix(K3)}, not strictly 3:1. Its parameters:
{K3_PARAMS.parameters / 1e12:g}T as stated with its config, which the article rounds to
{K3_ARTICLE.parameters / 1e12:g}T (both secondary sources).
"""
)
equation_panel("hybrid")
show_code(schedules.periodic_schedule, hybrid.HybridStack.forward, hybrid.decode_trace)

st.subheader("The schedule")
preset = st.radio(
    "Layers",
    list(PRESETS),
    format_func=PRESETS.get,
    horizontal=True,
    bind="query-params",
    key="hybrid_schedule",
    on_change=fit_decode_to_preset,
)
if preset == "custom":
    a, b = st.columns(2)
    n_layers = capped_slider(
        a, "Number of layers", 2, LIVE_LAYER_CAP, 8, key="hybrid_layers", name="Layers", why="Kimi Linear's depth"
    )
    a.caption(f"Up to {LIVE_LAYER_CAP} layers, {KIMI.name}'s depth.")
    every = b.slider(
        "MLA every N layers",
        1,
        12,
        4,
        bind="query-params",
        key="hybrid_every",
        help=f"N = 4 is 3 KDA : 1 MLA, the ratio Kimi Linear's paper names (its 48B model has {mix(KIMI)}, "
        f"Kimi K3 {mix(K3)}).",
    )
    schedule = run_or_stop(hybrid.periodic_schedule, n_layers, every)
    spec = footprints.kimi_linear_spec(schedule)
    shown = spec.name  # its name counts the layers already
else:
    spec = K3 if preset == "k3" else KIMI
    schedule = spec.layer_kinds
    shown = f"{spec.name}, {len(schedule)} layers"
chart(
    plots.layer_schedule_strip(schedule, title=f"Where the MLA layers sit: {shown}"),
    key="hybrid_schedule_strip",
    alt="A strip of cells, one per layer: MLA layers (a cache that grows) in one colour with their positions, KDA "
    "layers (a fixed state) in another.",
)
if preset == "k3":
    st.caption(
        "Kimi K3's config as others quote it (secondary sources) — layers: "
        + "; ".join(schedules.KIMI_K3_SOURCES[key] for key in ("layers", "kda", "full_rank", "unconfirmed"))
        + "."
    )

sizes = "Kimi Linear's" if preset != "k3" else "Kimi K3's"
st.subheader(f"What each layer holds, at {sizes} sizes")
context = st.select_slider(
    "Context length (tokens)",
    CONTEXTS,
    value=2**17,
    format_func=lambda n: f"{n:,}",
    bind="query-params",
    key="hybrid_context",
)
fp = footprints.footprint(spec, context)
saving = ledger.hybrid_saving(spec, context)
mha = ledger.hybrid_saving(spec, context, against="mha")
a, b, c, d = st.columns(4)
a.metric("held by the whole stack", plots.format_bytes(fp.total_bytes), help=f"{fp.total_bytes:,} bytes ({fp.dtype})")
b.metric("of which cache (grows)", plots.format_bytes(fp.kv_cache_bytes), help=f"{fp.kv_cache_bytes:,} bytes")
for col, cut in ((c, saving), (d, mha)):
    col.metric(
        f"saved against {ledger.BASELINES[cut.against]}, {ledger.SAVING_TOTAL}",
        f"−{cut.total:.1%}",
        help=f"Same depth with {ledger.BASELINES[cut.against].removeprefix('all-')} in every layer ({cut.where}). "
        f"{ledger.SAVING_CACHE}: −{cut.cache:.1%}.",
    )
base = footprints.all_mha(spec)
st.markdown(
    f"Against the same {spec.n_layers} layers all MLA the hybrid saves **{saving.text()}**: only its "
    f"{saving.n_mla} MLA layers cache. Against {spec.n_layers} layers of plain multi-head attention, each caching a "
    f"key and a value for {base.n_heads} heads of {base.head_dim} ({2 * base.n_heads * base.head_dim:,} numbers per "
    f"token instead of MLA's {spec.kv_lora_rank} + {spec.rope_dim}), it saves **{mha.text()}**."
)
chart(
    plots.per_layer_bars(
        [layer.kind for layer in fp.per_layer],
        [layer.kv_cache_bytes for layer in fp.per_layer],
        [layer.state_bytes for layer in fp.per_layer],
        title=f"{spec.name}: bytes per layer at {context:,} tokens ({fp.dtype})",
    ),
    key="hybrid_footprint",
    alt="Bars per layer: MLA layers hold a cache that grows with the context, KDA layers a fixed state.",
)
st.caption(f"Shapes from {spec.source}.")

st.subheader("A small hybrid, decoding live")
cap = caps()
fits = decode_fits(len(schedule))  # the most tokens this stack may decode
T = capped_slider(
    st, "Tokens to decode", 4, cap.T, max(4, min(DECODE_T, fits)), key="hybrid_T", name="The number of tokens"
)
cap_notes(
    [
        cap_note("The number of tokens", cap.T)
        + f" The decode runs on the CPU, so layers × tokens is capped at {cap.hybrid_layer_tokens:,} too: up to "
        f"{min(fits, cap.T)} tokens through these {len(schedule)} layers."
    ]
)
config = hybrid.HybridConfig(schedule=schedule)
st.markdown(
    f"Width {config.d_model}, {config.n_heads} heads of {config.head_dim}; MLA caches {config.kv_lora_rank} + "
    f"{config.rope_dim} numbers per token, in float32. Random weights, random inputs (seed {seed()}): the point is "
    "the memory, not the words."
)


@st.cache_data(max_entries=16, ttl=3600, show_spinner="Decoding token by token…")
def live(schedule: tuple[str, ...], T: int, seed: int) -> hybrid.HybridDecode:
    return hybrid.decode_trace(hybrid.HybridConfig(schedule=schedule), T, seed)


if fits < T:
    st.error(
        f"Can't decode {T} tokens through {len(schedule)} layers here: layers × tokens is capped at "
        f"{cap.hybrid_layer_tokens:,} (so every run stays fast for everyone). Decode at most {fits} tokens, or use "
        "fewer layers."
    )
else:
    trace = run_or_stop(live, schedule, T, seed())
    step = step_control("hybrid", T, label="Decode step t")
    chart(
        plots.decode_bytes_animation(schedule, trace.bytes, title="Bytes each layer holds while decoding", start=step),
        key="hybrid_decode",
        alt="Animated bars, one per layer, one frame per decoded token: MLA bars grow, KDA bars stay level.",
        export_name="hybrid_decode",
    )
    chart(
        plots.bytes_by_layer_and_time(schedule, trace.bytes, title="The same, every layer at every step"),
        key="hybrid_bytes",
        alt="Heatmap of bytes held, layers by tokens decoded: MLA rows brighten to the right, KDA rows stay flat.",
    )
    st.caption(
        f"Checked: decoding token by token gives the outputs of one full pass to {trace.max_err_vs_full:.1e} (largest "
        "absolute difference): the caches and states carry exactly what a full pass sees."
    )
    if {"mla", "kda"} <= set(schedule):
        cross = claims.crossover_extension(trace.bytes, schedule)
        st.subheader("Where the caches outgrow the states")
        st.markdown(
            f"In this stack an MLA layer caches **{cross.mla_per_token:,} bytes per token** and a KDA layer holds "
            f"**{cross.kda_state:,} bytes** whatever the length, so the cache passes the state at "
            f"**{cross.crossing:,.0f} tokens** — beyond the {T} decoded live, so the dashed lines are computed from "
            f"the measured bytes per token, not decoded. At Kimi Linear's sizes the crossing is at "
            f"{cross.kimi_crossing:,.0f} tokens."
        )
        chart(
            crossover(
                cross.tokens,
                cross.measured,
                cross.extended_tokens,
                cross.extended,
                crossing=cross.crossing,
                title="One layer's bytes: measured while decoding, computed beyond",
            ),
            key="hybrid_crossover",
            alt="Bytes per layer against tokens on log axes: the MLA cache line rises and crosses the flat KDA state.",
        )


what_to_notice(
    [
        "The KDA bars are full from the first token and never move; the MLA bars start small and grow by the same "
        "amount with every token. Memory that grows is confined to the MLA layers.",
        "A fixed state is not free: slide the context length down to a few hundred tokens and a KDA layer holds "
        "more than an MLA layer. A little further up the cache overtakes it, and from then on only the cache grows.",
        "Decoding token by token with caches and states gives the same outputs as one pass over the whole "
        "sequence: nothing the layers need is lost between steps.",
    ]
)
