"""Layer schedules: which kind of layer sits at each depth of a stack.

A schedule is a tuple of layer kinds, bottom to top. The kinds are the mechanisms' own (``Mechanism.layer_kind`` in
:mod:`lineage.mechanisms`: "mha" for softmax attention, "mla", and one per linear-memory mechanism) plus "gqa"
(softmax attention with shared key/value heads, which only the cost catalogue sizes). The models
(:mod:`lineage.models.hybrid`, :mod:`lineage.models.lm`) build a stack from a schedule; the cost catalogue
(:mod:`lineage.measure.footprints`) sizes one; the stages (:mod:`lineage.stages`) name theirs. All three read the
schedules here, so the models never import the cost catalogue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lineage.checks import positive_int
from lineage.mechanisms import linear_mechanisms

# Layer kinds, the linear ones from the table of mechanisms (lineage.mechanisms) as it stands at import.
LINEAR_KINDS = tuple(m.layer_kind for m in linear_mechanisms())  # keep a fixed state
# keep a cache that grows with the context: the softmax mechanisms' kinds, and "gqa" (MHA with shared K/V heads)
SOFTMAX_KINDS = ("mha", "gqa", "mla")
LAYER_KINDS = SOFTMAX_KINDS + LINEAR_KINDS

KIMI_LINEAR_MLA_LAYERS = (4, 8, 12, 16, 20, 24, 27)  # 1-based, config.json "full_attn_layers"

# Kimi K3's text model, as its config.json (moonshotai/Kimi-K3, text_config) is quoted in public threads: secondary
# sources, named per value in KIMI_K3_SOURCES. Everything the app says about K3's size is computed from this dict.
KIMI_K3_CONFIG = {
    "num_hidden_layers": 93,
    "full_attn_layers": (*range(4, 93, 4), 93),  # quoted as [4, 8, 12, …, 92, 93]: 24 MLA layers, the last two adjacent
    "hidden_size": 7168,
    "num_attention_heads": 96,  # the MLA layers' heads
    "kda_num_heads": 96,
    "kda_head_dim": 128,  # K = V = 128
    "short_conv_kernel_size": 4,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "max_position_embeddings": 1_048_576,
    "gate_lower_bound": -5.0,
    "total_params": 2_780_000_000_000,
    "activated_params": 104_200_000_000,
}
KIMI_K3_SOURCES = {
    "layers": "inference-sim/inference-sim issue #1635 quoting config.json text_config.linear_attn_config "
    "(93 layers; full_attn_layers [4, 8, 12, …, 92, 93], 24 entries; 69 kda_layers; short_conv_kernel_size 4, "
    "use_full_rank_gate true, gate_lower_bound −5.0; MLA caches kv_lora_rank + qk_rope_head_dim = 512 + 64); "
    "ggml-org/llama.cpp PR #26185 (print_info of the converted model: n_layer 93, n_embd 7168, n_head 96, "
    "n_ctx_train 1048576, a KV head only at layers 4, 8, …, 92, 93)",
    "kda": "KDA 96 heads × 128: NVIDIA-NeMo/Megatron-Bridge PR #5130 (A_log: 96 active heads) and vllm-project/vllm "
    "PR #50855 (one recurrent state is 0.75 MiB per layer on 8 GPUs: 96 × 128 × 128 fp32 numbers ÷ 8)",
    "unconfirmed": "q_lora_rank 1536 was not found as a number in the threads read (lablup/mlxcel issue #1334 only "
    "says the MLA layers use a q-LoRA); it sizes a weight, not the cache, so nothing here uses it",
    "gate": "gate_lower_bound −5.0 with g = lower_bound · sigmoid(·): inference-sim issue #1635 (config), "
    "pwilkin/llama.cpp PR #22 ('The real K3 config sets gate_lower_bound = -5.0'), fla-org/flash-linear-attention "
    "fla/ops/kda/gate.py (naive_kda_lowerbound_gate)",
    "params": "2.78T total / 104.2B activated: the K3 technical report's Table 1 (arXiv 2607.24653) as quoted in "
    "public research notes, and NVIDIA-NeMo/Automodel PR #3792 ('the 2.78T hybrid MoE'); Moonshot's announcement "
    "and the article round it to 2.8T",
    "why_bound": "why a bound: MoonshotAI/FlashKDA PR #7 (its kernel 'materializes exp(-g)', so it fails on an "
    "unbounded gate) and issue #3 ('Kimi Linear Has no Lower Bound'); public notes on K3's report: lower-bounded "
    "decay 'so all causal tiles use dense tensor-core matmuls'",
    "full_rank": "use_full_rank_gate true is quoted from the config (inference-sim issue #1635); lablup/mlxcel issue "
    "#1334 and notes on the report read it as the KDA *output* gate turned full-rank, while the decay gate is the "
    "bounded one: the sources disagree on which gate 'full-rank' names",
}


def layer_schedule(n_layers: int, base: str, at: Mapping[str, Iterable[int]] | None = None) -> tuple[str, ...]:
    """A per-layer kind schedule: ``base`` everywhere except the 1-based positions listed in ``at``.

    ``layer_schedule(27, "kda", {"mla": (4, 8, 12, 16, 20, 24, 27)})`` is Kimi Linear 48B's stack.
    """
    positive_int("n_layers", n_layers)
    for name, kind in (("base", base), *((f"at key {k!r}", k) for k in at or {})):
        if kind not in LAYER_KINDS:
            raise ValueError(f"{name} must be a layer kind, one of {', '.join(map(repr, LAYER_KINDS))}, got {kind!r}")
    kinds = [base] * n_layers
    for kind, positions in (at or {}).items():
        for p in positions:
            if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= n_layers:
                raise ValueError(f"at[{kind!r}] positions must be 1-based ints in [1, {n_layers}], got {p!r}")
            kinds[p - 1] = kind
    return tuple(kinds)


def periodic_schedule(
    n_layers: int, every: int = 4, *, base: str = "kda", kind: str = "mla", include_last: bool = False
) -> tuple[str, ...]:
    """Every ``every``-th layer (1-based: every, 2·every, ...) is ``kind``, the rest ``base``.

    ``every=4`` (the defaults) is KDA with MLA every fourth layer, 3 KDA : 1 MLA. ``include_last`` also makes the
    final layer ``kind``, as in Kimi Linear 48B, whose 27 layers put MLA at 4, 8, ..., 24 and at 27 (20 KDA : 7 MLA),
    and Kimi K3, whose 93 put it at 4, 8, ..., 92 and 93 (69 KDA : 24 MLA): neither is strictly 3:1.
    """
    positive_int("n_layers", n_layers)
    positive_int("every", every)
    positions = list(range(every, n_layers + 1, every))
    if include_last and n_layers not in positions:
        positions.append(n_layers)
    return layer_schedule(n_layers, base, {kind: positions})


# Kimi Linear 48B-A3B's 27 layers, built once: MLA at KIMI_LINEAR_MLA_LAYERS, KDA elsewhere.
KIMI_LINEAR_SCHEDULE = layer_schedule(27, "kda", {"mla": KIMI_LINEAR_MLA_LAYERS})

# Kimi K3's 93 layers: MLA at KIMI_K3_CONFIG["full_attn_layers"], KDA elsewhere.
KIMI_K3_SCHEDULE = layer_schedule(
    KIMI_K3_CONFIG["num_hidden_layers"], "kda", {"mla": KIMI_K3_CONFIG["full_attn_layers"]}
)
