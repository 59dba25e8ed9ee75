"""Footprints: the bytes a model holds and reads while it generates — KV cache, recurrent state, weights.

Every number here is computed from a model's published configuration; none is typed in. A softmax layer
keeps a cache that grows by a fixed amount per token of context; a linear-memory layer (linear attention,
DeltaNet, Mamba-2, Gated DeltaNet, KDA) keeps a state whose size does not depend on the context length.

Per layer and per sequence, in *numbers* (multiply by the bytes of the dtype):

    mha              cache  2 · H · D per token              (a key and a value for every head)
    gqa              cache  2 · H_kv · D per token           (heads share H_kv key/value heads)
    mla              cache  (kv_lora_rank + rope_dim) per token
                            (DeepSeek-V2/V3: one compressed latent plus one shared RoPE key; the per-head keys
                            and values are re-expanded from it, so that is all a decoder must keep)
    linear-memory    state  H_lin · K · V                    (the matrix S of every head; fixed)
                     conv   (kernel − 1) · H_lin · (2K + V)  (short causal convolutions over q, k and v remember
                            their last kernel − 1 inputs; DeltaNet, Gated DeltaNet, KDA and Mamba-2 use them)
                     plain linear attention also keeps its normaliser z = Σ φ(k_t): H_lin · K more numbers

For Kimi Linear 48B-A3B (20 KDA + 7 MLA layers, KDA 32 heads × 128, kernel 4) that is 7 × 576 cache numbers
per token, 20 × 32 × 128 × 128 state numbers and 20 × 3 × (3 × 32 × 128) conv numbers, whatever the length.

Choices, stated once:

- ``read_bytes_per_token`` is what one decoding step must read from memory *for the sequence*: the whole KV
  cache plus the whole state. The weights are a separate field, ``weight_bytes_per_token`` (parameters that
  take part in one token — all of a dense model, the activated ones of a mixture of experts), because they
  are shared by every sequence in a batch and because they are only known for some models; add the two for a
  batch-1 decoding bound.
- The cache and the weights are stored in ``dtype``. The recurrent state may be kept wider (fla's kernels
  return it in fp32): ``state_dtype`` defaults to ``dtype``. Convolution caches hold recent activations and
  use ``dtype``.
- The conv cache counts the kernel − 1 inputs a causal convolution needs; some implementations (fla's
  ``ShortConvolution``, mlx-lm) allocate a buffer of the full kernel width instead.
- Mamba-2 shares its B and C projections across heads in groups; counting them per head, as here, is an
  upper bound on its conv cache.
- Bytes are bytes; GPU capacities and bandwidths use the vendors' decimal gigabytes (10^9).

Sources: nanoGPT ``model.py`` (``from_pretrained``) for GPT-2; meta-llama/llama3 ``params.json`` and
``model.py`` for Llama-3-8B; deepseek-ai/DeepSeek-V3 ``inference/configs/config_671B.json`` for DeepSeek-V3;
the Kimi Linear ``config.json`` as quoted in pytorch/torchtitan ``experiments/kimi_linear`` and mlx-lm
``models/kimi_linear.py``; Kimi Linear, arXiv 2510.26692 (https://arxiv.org/abs/2510.26692); Kimi K3's
``config.json`` as quoted in public inference-simulator and llama.cpp threads (``lineage.schedules.KIMI_K3_CONFIG``,
each value's source in ``KIMI_K3_SOURCES``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from lineage import stages
from lineage.checks import positive_int
from lineage.mechanisms import linear_mechanisms
from lineage.schedules import (  # the layer kinds the catalogue sizes, Kimi Linear's schedule and Kimi K3's config
    KIMI_K3_CONFIG,
    KIMI_K3_SOURCES,
    KIMI_LINEAR_SCHEDULE,
    LAYER_KINDS,
    LINEAR_KINDS,
    layer_schedule,
)

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}

# layers with a short causal convolution on q, k, v
CONV_KINDS = tuple(m.layer_kind for m in linear_mechanisms() if m.layer.conv)
# layers that keep a normaliser z_t = Σ φ(k_s) beside S (normalised linear attention, Katharopoulos et al.)
NORMALIZER_KINDS = tuple(m.layer_kind for m in linear_mechanisms() if m.layer.normalize)

# 2**31 tokens (two billion) is far past any served context, so a larger value is a typo; it also keeps every
# byte count of a realistic model well inside int64 for the plotting arrays.
MAX_SEQ_LEN = 2**31

# The largest custom model (custom_spec) accepted: far past any released one (Llama 3 405B has 126 layers and 128
# heads; head dims reach 256), small enough that every byte count stays exact in an int64 at MAX_SEQ_LEN tokens and
# a footprint, one entry per layer, takes a millisecond. (A billion layers would first need a billion-entry list.)
CUSTOM_LIMITS = {"n_layers": 512, "n_heads": 512, "n_kv_heads": 512, "head_dim": 1024}


# ---------------------------------------------------------------------------------------------------------
# Specs
# ---------------------------------------------------------------------------------------------------------


def _dtype(name: str, value) -> str:
    if value not in DTYPE_BYTES:
        raise ValueError(f"{name} must be one of {', '.join(repr(d) for d in DTYPE_BYTES)}, got {value!r}")
    return value


def _optional_positive(name: str, value) -> None:
    if value is not None:
        positive_int(name, value)


# The spec fields a layer kind cannot be sized without.
_REQUIRED_DIMS = {"mla": ("kv_lora_rank", "rope_dim")}
_REQUIRED_DIMS.update({kind: ("linear_heads", "linear_key_dim", "linear_value_dim") for kind in LINEAR_KINDS})
_REQUIRED_DIMS.update({kind: (*_REQUIRED_DIMS[kind], "conv_kernel") for kind in CONV_KINDS})


@dataclass(frozen=True)
class DenseWeights:
    """What a dense transformer's parameter count needs beyond the attention shapes.

    Attributes:
        d_ff: hidden width of the MLP.
        mlp: "gelu" (two matrices, GPT-2) or "swiglu" (three matrices: gate, up, down; Llama).
        norm: "layernorm" (weight and bias) or "rmsnorm" (weight only); two per block plus a final one.
        bias: whether every linear layer has a bias (GPT-2) or none does (Llama).
        tied_embeddings: the output head reuses the token embedding (GPT-2) or has its own matrix (Llama).
        learned_positions: rows of a learned position embedding (GPT-2's 1024); None for RoPE models.
    """

    d_ff: int
    mlp: str
    norm: str
    bias: bool
    tied_embeddings: bool
    learned_positions: int | None = None

    def __post_init__(self):
        positive_int("d_ff", self.d_ff)
        _optional_positive("learned_positions", self.learned_positions)
        if self.mlp not in ("gelu", "swiglu"):
            raise ValueError(f"mlp must be 'gelu' or 'swiglu', got {self.mlp!r}")
        if self.norm not in ("layernorm", "rmsnorm"):
            raise ValueError(f"norm must be 'layernorm' or 'rmsnorm', got {self.norm!r}")


@dataclass(frozen=True)
class ModelSpec:
    """The shapes that decide a model's memory while decoding, with where they come from.

    A spec validates itself on construction (and on ``dataclasses.replace``): every size is an int >= 1,
    ``n_heads`` is a multiple of ``n_kv_heads``, every entry of ``layer_kinds`` is one of ``LAYER_KINDS``, and
    the dimensions a layer kind needs (MLA ranks, linear-layer heads and dims) are present.

    Attributes:
        name: display name.
        n_layers: number of blocks.
        d_model: residual width.
        n_heads, n_kv_heads, head_dim: softmax attention heads, key/value heads (GQA; equal for MHA) and the
            width of one head. "mha" layers cache every head; "gqa" layers cache ``n_kv_heads``.
        layer_kinds: one of ``LAYER_KINDS`` per block, first block first (see ``layer_schedule``).
        dtype: the dtype the cache and weights are stored in by default.
        kv_lora_rank, rope_dim: MLA's latent width and its decoupled RoPE key width (needed for "mla").
        linear_heads, linear_key_dim, linear_value_dim: H_lin, K and V of the linear-memory layers.
        conv_kernel: width of the short causal convolution (1 = none); used by ``CONV_KINDS``.
        vocab_size: tokenizer size, where known.
        weights: dense-transformer layout for an exact parameter count; None where it is not determined.
        params_nominal, active_params_nominal: total and per-token parameter counts as the model's authors
            state them, for models whose count is not computed here (mixtures of experts).
        context_len: the longest context the released model supports, where its config states it.
        source: where the numbers come from.
        notes: anything a reader should know when comparing.
    """

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    layer_kinds: tuple[str, ...]
    dtype: str = "bf16"
    kv_lora_rank: int | None = None
    rope_dim: int | None = None
    linear_heads: int | None = None
    linear_key_dim: int | None = None
    linear_value_dim: int | None = None
    conv_kernel: int | None = None
    vocab_size: int | None = None
    weights: DenseWeights | None = None
    params_nominal: int | None = None
    active_params_nominal: int | None = None
    context_len: int | None = None
    source: str = ""
    notes: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        # d_model last: custom_spec derives it from n_heads · head_dim, so their errors must come first
        for name in ("n_layers", "n_heads", "n_kv_heads", "head_dim", "d_model"):
            positive_int(name, getattr(self, name))
        if self.n_kv_heads > self.n_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must be <= n_heads ({self.n_heads})")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be divisible by n_kv_heads ({self.n_kv_heads}): "
                "each key/value head serves an equal group of query heads"
            )
        if isinstance(self.layer_kinds, str):
            raise TypeError(
                f"layer_kinds must be a sequence with one kind per layer, got the string {self.layer_kinds!r}; "
                "custom_spec accepts a single kind for every layer"
            )
        object.__setattr__(self, "layer_kinds", tuple(self.layer_kinds))
        if len(self.layer_kinds) != self.n_layers:
            raise ValueError(
                f"layer_kinds must have one entry per layer (n_layers = {self.n_layers}), "
                f"got {len(self.layer_kinds)} entries"
            )
        for i, kind in enumerate(self.layer_kinds):
            if kind not in LAYER_KINDS:
                raise ValueError(f"layer_kinds[{i}] must be one of {', '.join(LAYER_KINDS)}, got {kind!r}")
        _dtype("dtype", self.dtype)
        for name in (
            "kv_lora_rank",
            "rope_dim",
            "linear_heads",
            "linear_key_dim",
            "linear_value_dim",
            "conv_kernel",
            "vocab_size",
            "params_nominal",
            "active_params_nominal",
            "context_len",
        ):
            _optional_positive(name, getattr(self, name))
        for kind in dict.fromkeys(self.layer_kinds):
            for name in _REQUIRED_DIMS.get(kind, ()):
                if getattr(self, name) is None:
                    raise ValueError(f"{name} is required because layer_kinds contains {kind!r}, got None")
        if self.weights is not None and not isinstance(self.weights, DenseWeights):
            raise TypeError(f"weights must be a DenseWeights or None, got {type(self.weights).__name__}")
        if self.weights is not None and self.vocab_size is None:
            raise ValueError("vocab_size is required when weights is given (the embedding is vocab_size × d_model)")

    def layers_of(self, kind: str) -> tuple[int, ...]:
        """1-based positions of the layers of ``kind`` (the convention of the papers' configs)."""
        return tuple(i + 1 for i, k in enumerate(self.layer_kinds) if k == kind)


def llama_ffn_dim(dim: int, multiple_of: int, ffn_dim_multiplier: float | None) -> int:
    """The SwiGLU hidden width that Llama's ``model.py`` derives from ``params.json``.

    Start from 4·dim, take 2/3 of it (SwiGLU has three matrices, so this keeps the parameter count of a
    4·dim two-matrix MLP), scale by ``ffn_dim_multiplier``, round up to a multiple of ``multiple_of``.
    """
    hidden = int(2 * (4 * dim) / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


_KIMI_KDA, _KIMI_MLA = KIMI_LINEAR_SCHEDULE.count("kda"), KIMI_LINEAR_SCHEDULE.count("mla")

MODELS: dict[str, ModelSpec] = {
    "gpt2": ModelSpec(
        name="GPT-2 124M",
        n_layers=12,
        d_model=768,
        n_heads=12,
        n_kv_heads=12,
        head_dim=768 // 12,
        layer_kinds=("mha",) * 12,
        vocab_size=50257,
        weights=DenseWeights(
            d_ff=4 * 768, mlp="gelu", norm="layernorm", bias=True, tied_embeddings=True, learned_positions=1024
        ),
        context_len=1024,
        source="nanoGPT model.py (from_pretrained: n_layer 12, n_head 12, n_embd 768, vocab 50257, block 1024)",
        notes="Released in fp32; bf16 here so that every model is compared in the same dtype.",
    ),
    "llama3-8b": ModelSpec(
        name="Llama-3-8B",
        n_layers=32,
        d_model=4096,
        n_heads=32,
        n_kv_heads=8,
        head_dim=4096 // 32,
        layer_kinds=("gqa",) * 32,
        vocab_size=128256,
        weights=DenseWeights(
            d_ff=llama_ffn_dim(4096, multiple_of=1024, ffn_dim_multiplier=1.3),
            mlp="swiglu",
            norm="rmsnorm",
            bias=False,
            tied_embeddings=False,
        ),
        context_len=8192,
        source="meta-llama/llama3 params.json (dim 4096, n_layers 32, n_heads 32, n_kv_heads 8, "
        "multiple_of 1024, ffn_dim_multiplier 1.3, vocab 128256) and model.py (FFN width); "
        "8192-token context per Meta's model card",
        notes="Grouped-query attention: 32 query heads share 8 key/value heads, a quarter of the MHA cache.",
    ),
    "deepseek-v3": ModelSpec(
        name="DeepSeek-V3",
        n_layers=61,
        d_model=7168,
        n_heads=128,
        n_kv_heads=128,
        head_dim=128 + 64,  # qk_nope_head_dim + qk_rope_head_dim: the query/key width of one head
        layer_kinds=("mla",) * 61,
        kv_lora_rank=512,
        rope_dim=64,
        vocab_size=129280,
        params_nominal=671_000_000_000,
        active_params_nominal=37_000_000_000,
        source="deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json (n_layers 61, dim 7168, n_heads 128, "
        "kv_lora_rank 512, qk_rope_head_dim 64, vocab 129280); 671B total / 37B activated per the "
        "DeepSeek-V3 technical report, arXiv 2412.19437",
        notes="Every layer is MLA. A mixture of experts (256 routed + 1 shared, 8 active), so its parameter "
        "count is the authors' nominal figure, not computed here.",
    ),
    "kimi-linear-48b": ModelSpec(
        name="Kimi Linear 48B-A3B",
        n_layers=27,
        d_model=2304,
        n_heads=32,
        n_kv_heads=32,
        head_dim=128 + 64,  # qk_nope_head_dim + qk_rope_head_dim
        layer_kinds=KIMI_LINEAR_SCHEDULE,
        kv_lora_rank=512,
        rope_dim=64,
        linear_heads=32,
        linear_key_dim=128,
        linear_value_dim=128,
        conv_kernel=4,
        vocab_size=163840,
        params_nominal=48_000_000_000,
        active_params_nominal=3_000_000_000,
        context_len=1_048_576,
        source="Kimi Linear config.json as quoted in pytorch/torchtitan experiments/kimi_linear and mlx-lm "
        "models/kimi_linear.py (27 layers, hidden 2304, full_attn_layers 4,8,12,16,20,24,27, KDA 32 heads "
        "× 128, short conv 4, MLA kv_lora_rank 512, qk_rope_head_dim 64, max_position_embeddings 1048576); "
        "48B total / 3B activated per Kimi Linear, arXiv 2510.26692",
        notes=f"{_KIMI_KDA} KDA + {_KIMI_MLA} MLA layers (the paper's 3:1 is approximate: {_KIMI_KDA}:{_KIMI_MLA} is "
        f"about {_KIMI_KDA / _KIMI_MLA:.2g}:1). Its MLA uses no positional encoding (NoPE) but keeps the 64-wide "
        "shared key in the cache layout, so each MLA layer still caches 512 + 64 numbers.",
    ),
}


def kimi_k3_spec(config: dict = KIMI_K3_CONFIG) -> ModelSpec:
    """Kimi K3 sized from its config dict (``lineage.schedules.KIMI_K3_CONFIG``), every field read from it.

    ``head_dim`` is the KDA head width: the quoted config gives no per-head width for the MLA layers (they cache the
    latent, not heads), so it only sizes the all-MHA comparison (``all_mha``): 96 heads of 128.
    """
    c = config
    return ModelSpec(
        name="Kimi K3",
        n_layers=c["num_hidden_layers"],
        d_model=c["hidden_size"],
        n_heads=c["num_attention_heads"],
        n_kv_heads=c["num_attention_heads"],
        head_dim=c["kda_head_dim"],
        layer_kinds=layer_schedule(c["num_hidden_layers"], "kda", {"mla": c["full_attn_layers"]}),
        kv_lora_rank=c["kv_lora_rank"],
        rope_dim=c["qk_rope_head_dim"],
        linear_heads=c["kda_num_heads"],
        linear_key_dim=c["kda_head_dim"],
        linear_value_dim=c["kda_head_dim"],
        conv_kernel=c["short_conv_kernel_size"],
        params_nominal=c["total_params"],
        active_params_nominal=c["activated_params"],
        context_len=c["max_position_embeddings"],
        source=f"{KIMI_K3_SOURCES['layers']}; {KIMI_K3_SOURCES['kda']}; {KIMI_K3_SOURCES['params']} "
        "(secondary sources: the config as others quote it)",
        notes=f"{len(c['full_attn_layers'])} MLA + {c['num_hidden_layers'] - len(c['full_attn_layers'])} KDA layers: "
        "MLA every fourth layer and again at the last, so the final two layers are both MLA and the ratio is not "
        f"strictly 3:1. NoPE MLA caching {c['kv_lora_rank']} + {c['qk_rope_head_dim']} numbers per token, as Kimi "
        "Linear's.",
    )


MODELS["kimi-k3"] = kimi_k3_spec()


def check_custom_sizes(n_layers: int, n_heads: int, n_kv_heads: int, head_dim: int) -> None:
    """Each size an int in [1, ``CUSTOM_LIMITS[name]``]; a ValueError (TypeError for a non-int) names the field."""
    sizes = {"n_layers": n_layers, "n_heads": n_heads, "n_kv_heads": n_kv_heads, "head_dim": head_dim}
    for name, value in sizes.items():
        positive_int(name, value, maximum=CUSTOM_LIMITS[name])


def custom_spec(
    n_layers: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    layer_kinds: str | Sequence[str],
    dtype: str = "bf16",
    *,
    d_model: int | None = None,
    kv_lora_rank: int = 512,
    rope_dim: int = 64,
    linear_heads: int | None = None,
    linear_key_dim: int | None = None,
    linear_value_dim: int | None = None,
    conv_kernel: int = 4,
    name: str = "custom",
) -> ModelSpec:
    """A spec a user builds in the app, validated like every other.

    Args:
        n_layers, n_heads, n_kv_heads, head_dim: ints in [1, ``CUSTOM_LIMITS``]; ``n_heads`` a multiple of
            ``n_kv_heads``.
        layer_kinds: one kind for every layer (a string) or one per layer; kinds from ``LAYER_KINDS``.
        dtype: one of ``DTYPE_BYTES``.
        d_model: defaults to ``n_heads * head_dim``.
        kv_lora_rank, rope_dim: MLA widths; DeepSeek-V3's 512 and 64 by default.
        linear_heads, linear_key_dim, linear_value_dim: linear-layer H, K, V; default to the softmax heads'.
        conv_kernel: short-convolution width (1 = none); 4 as in DeltaNet, Mamba-2 and KDA.

    Raises:
        ValueError naming the field for zero, negative or over-limit sizes, ``n_kv_heads`` > ``n_heads``,
        ``n_heads`` not divisible by ``n_kv_heads``, an unknown layer kind or an unknown dtype.
    """
    check_custom_sizes(n_layers, n_heads, n_kv_heads, head_dim)
    kinds = (layer_kinds,) * n_layers if isinstance(layer_kinds, str) else tuple(layer_kinds)
    return ModelSpec(
        name=name,
        n_layers=n_layers,
        d_model=n_heads * head_dim if d_model is None else d_model,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        layer_kinds=kinds,
        dtype=dtype,
        kv_lora_rank=kv_lora_rank,
        rope_dim=rope_dim,
        linear_heads=n_heads if linear_heads is None else linear_heads,
        linear_key_dim=head_dim if linear_key_dim is None else linear_key_dim,
        linear_value_dim=head_dim if linear_value_dim is None else linear_value_dim,
        conv_kernel=conv_kernel,
        source="user-defined in the app",
    )


def all_mla(spec: ModelSpec | str) -> ModelSpec:
    """The same stack with every layer MLA: the baseline Kimi Linear's paper compares against."""
    spec = _resolve(spec)
    if spec.kv_lora_rank is None or spec.rope_dim is None:
        raise ValueError(f"spec {spec.name!r} has no MLA widths (kv_lora_rank, rope_dim) to build an all-MLA stack")
    return replace(spec, name=f"{spec.name} (all MLA)", layer_kinds=("mla",) * spec.n_layers)


def all_mha(spec: ModelSpec | str) -> ModelSpec:
    """The same stack with every layer plain multi-head attention (``n_heads`` heads of ``head_dim`` cached)."""
    spec = _resolve(spec)
    return replace(spec, name=f"{spec.name} (all MHA)", n_kv_heads=spec.n_heads, layer_kinds=("mha",) * spec.n_layers)


def _resolve(spec: ModelSpec | str) -> ModelSpec:
    if isinstance(spec, str):
        if spec not in MODELS:
            raise ValueError(f"spec must be a ModelSpec or one of {', '.join(repr(k) for k in MODELS)}, got {spec!r}")
        return MODELS[spec]
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"spec must be a ModelSpec or a key of MODELS, got {type(spec).__name__}")
    return spec


def _seq_len(n) -> int:
    positive_int("seq_len", n)
    if n > MAX_SEQ_LEN:
        raise ValueError(f"seq_len must be <= MAX_SEQ_LEN = {MAX_SEQ_LEN:,} (2**31), got {n:,}")
    return n


# ---------------------------------------------------------------------------------------------------------
# Footprint
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerFootprint:
    """One layer's share of a ``Footprint`` (bytes, for the whole batch)."""

    index: int  # 0-based position in the stack
    kind: str
    kv_cache_bytes: int
    recurrent_state_bytes: int
    conv_state_bytes: int
    state_bytes: int  # recurrent + conv


@dataclass(frozen=True)
class Footprint:
    """Memory one batch of sequences holds, and reads per decoding step, at ``seq_len`` tokens of context.

    Attributes:
        kv_cache_bytes: cache of the softmax layers; grows linearly with ``seq_len``.
        kv_cache_bytes_per_token: how much ``kv_cache_bytes`` grows per token of context.
        recurrent_state_bytes: the state matrices S of the linear-memory layers; independent of ``seq_len``.
        conv_state_bytes: short-convolution caches of those layers; independent of ``seq_len``.
        state_bytes: recurrent + conv.
        total_bytes: kv cache + state (the weights are not included).
        read_bytes_per_token: bytes read to generate one more token for every sequence of the batch: the
            whole cache plus the whole state (= ``total_bytes``; every byte of it is read once per step).
        weight_bytes: all parameters in ``dtype``; None where the parameter count is not known.
        weight_bytes_per_token: the parameters one token passes through, in ``dtype`` (all of a dense model,
            the activated ones of a mixture of experts); read once per step whatever the batch. None if unknown.
        weights_note: how the weight figures were obtained.
        per_layer: one ``LayerFootprint`` per layer.
    """

    name: str
    seq_len: int
    batch: int
    dtype: str
    state_dtype: str
    kv_cache_bytes: int
    kv_cache_bytes_per_token: int
    recurrent_state_bytes: int
    conv_state_bytes: int
    state_bytes: int
    total_bytes: int
    read_bytes_per_token: int
    weight_bytes: int | None
    weight_bytes_per_token: int | None
    weights_note: str
    per_layer: tuple[LayerFootprint, ...] = field(repr=False)


def _layer_numbers(spec: ModelSpec, kind: str) -> tuple[int, int, int]:
    """(cache numbers per token, recurrent-state numbers, conv-state numbers) of one layer of ``kind``."""
    if kind == "mha":
        return 2 * spec.n_heads * spec.head_dim, 0, 0
    if kind == "gqa":
        return 2 * spec.n_kv_heads * spec.head_dim, 0, 0
    if kind == "mla":
        return spec.kv_lora_rank + spec.rope_dim, 0, 0
    H, K, V = spec.linear_heads, spec.linear_key_dim, spec.linear_value_dim
    recurrent = H * K * V
    if kind in NORMALIZER_KINDS:
        recurrent += H * K  # the normaliser z_t = Σ φ(k_s) of Katharopoulos et al. is state too
    # A causal conv of width W mixes the current input with the W - 1 before it, on q (K), k (K) and v (V).
    conv = (spec.conv_kernel - 1) * H * (2 * K + V) if kind in CONV_KINDS else 0
    return 0, recurrent, conv


def footprint(
    spec: ModelSpec | str,
    seq_len: int,
    dtype: str | None = None,
    *,
    state_dtype: str | None = None,
    batch: int = 1,
) -> Footprint:
    """KV cache, recurrent state and per-token reads of ``spec`` holding ``seq_len`` tokens of context.

    Args:
        spec: a ``ModelSpec`` or a key of ``MODELS`` ("gpt2", "llama3-8b", "deepseek-v3", "kimi-linear-48b").
        seq_len: tokens in the cache, 1 <= seq_len <= ``MAX_SEQ_LEN``.
        dtype: storage dtype of cache and weights, one of ``DTYPE_BYTES``; defaults to ``spec.dtype`` (bf16).
        state_dtype: storage dtype of the recurrent state; defaults to ``dtype`` (fla keeps it in fp32).
        batch: sequences decoded together; cache and state scale with it, the weights do not.

    Returns:
        A ``Footprint`` (all sizes in bytes).
    """
    spec = _resolve(spec)
    _seq_len(seq_len)
    positive_int("batch", batch)
    dtype = _dtype("dtype", spec.dtype if dtype is None else dtype)
    state_dtype = _dtype("state_dtype", dtype if state_dtype is None else state_dtype)
    cache_b, state_b = DTYPE_BYTES[dtype], DTYPE_BYTES[state_dtype]

    per_layer, kv_per_token = [], 0
    for i, kind in enumerate(spec.layer_kinds):
        kv_n, recurrent_n, conv_n = _layer_numbers(spec, kind)
        kv_per_token += batch * kv_n * cache_b
        recurrent, conv = batch * recurrent_n * state_b, batch * conv_n * cache_b
        per_layer.append(LayerFootprint(i, kind, batch * seq_len * kv_n * cache_b, recurrent, conv, recurrent + conv))

    kv_cache = sum(layer.kv_cache_bytes for layer in per_layer)
    recurrent = sum(layer.recurrent_state_bytes for layer in per_layer)
    conv = sum(layer.conv_state_bytes for layer in per_layer)
    state = recurrent + conv
    params, active, note = _weights(spec)
    return Footprint(
        name=spec.name,
        seq_len=seq_len,
        batch=batch,
        dtype=dtype,
        state_dtype=state_dtype,
        kv_cache_bytes=kv_cache,
        kv_cache_bytes_per_token=kv_per_token,
        recurrent_state_bytes=recurrent,
        conv_state_bytes=conv,
        state_bytes=state,
        total_bytes=kv_cache + state,
        read_bytes_per_token=kv_cache + state,
        weight_bytes=None if params is None else params * cache_b,
        weight_bytes_per_token=None if active is None else active * cache_b,
        weights_note=note,
        per_layer=tuple(per_layer),
    )


@dataclass(frozen=True)
class CacheCurve:
    """Bytes held against context length, ready to plot (int64 arrays of one length)."""

    name: str
    seq_lens: np.ndarray
    kv_cache_bytes: np.ndarray
    state_bytes: np.ndarray
    total_bytes: np.ndarray


def kv_cache_curve(
    spec: ModelSpec | str,
    seq_lens: Sequence[int] | np.ndarray,
    dtype: str | None = None,
    *,
    state_dtype: str | None = None,
    batch: int = 1,
) -> CacheCurve:
    """``footprint`` over many context lengths at once: the cache is linear in N, the state flat."""
    lens = np.asarray(seq_lens)
    if lens.ndim != 1 or lens.size == 0 or not np.issubdtype(lens.dtype, np.integer):
        raise ValueError(f"seq_lens must be a non-empty 1-D sequence of ints, got {lens.dtype} of shape {lens.shape}")
    if lens.min() < 1 or lens.max() > MAX_SEQ_LEN:
        raise ValueError(
            f"seq_lens must lie in [1, MAX_SEQ_LEN = {MAX_SEQ_LEN:,}], got [{int(lens.min()):,}, {int(lens.max()):,}]"
        )
    one = footprint(spec, 1, dtype, state_dtype=state_dtype, batch=batch)
    if one.kv_cache_bytes_per_token * int(lens.max()) + one.state_bytes > np.iinfo(np.int64).max:
        raise ValueError(f"spec {one.name!r} at {int(lens.max()):,} tokens needs more bytes than an int64 holds")
    lens = lens.astype(np.int64)
    kv = lens * one.kv_cache_bytes_per_token
    state = np.full_like(lens, one.state_bytes)
    return CacheCurve(one.name, lens, kv, state, kv + state)


def reduction_vs_all_mla(
    spec: ModelSpec | str, seq_len: int, dtype: str | None = None, *, state_dtype: str | None = None
) -> float:
    """Fraction of per-sequence memory (cache + state) saved against the same depth with every layer MLA.

    For Kimi Linear the cache alone shrinks by exactly 1 − 7/27 (7 of 27 layers still cache); the fixed
    KDA state takes back a sliver of that, less and less as the context grows. Compare ``KIMI_PAPER_CLAIM``.
    """
    fp = footprint(spec, seq_len, dtype, state_dtype=state_dtype)
    baseline = footprint(all_mla(spec), seq_len, dtype, state_dtype=state_dtype)
    return 1 - fp.total_bytes / baseline.total_bytes


@dataclass(frozen=True)
class Claim:
    """A sentence from a source, quoted with where it comes from."""

    text: str
    source: str


KIMI_PAPER_CLAIM = Claim(
    text="up to 75% less KV cache, up to 6× decoding throughput at 1M context",
    source="Kimi Linear, arXiv 2510.26692 (abstract), against full MLA",
)


# ---------------------------------------------------------------------------------------------------------
# Hardware
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuPreset:
    """Memory capacity and bandwidth of one accelerator, from its vendor's datasheet (decimal GB)."""

    name: str
    memory_bytes: int
    bandwidth_bytes_per_s: float
    source: str


GPU_PRESETS: dict[str, GpuPreset] = {
    "rtx-4090": GpuPreset(
        "RTX 4090", 24 * 10**9, 1008e9, "NVIDIA Ada Lovelace architecture whitepaper: 24 GB GDDR6X, 1008 GB/s"
    ),
    "a100-80gb-sxm": GpuPreset(
        "A100 80GB SXM", 80 * 10**9, 2039e9, "NVIDIA A100 Tensor Core GPU datasheet: 80 GB HBM2e, 2,039 GB/s (SXM)"
    ),
    "h100-sxm": GpuPreset("H100 SXM", 80 * 10**9, 3350e9, "NVIDIA H100 Tensor Core GPU datasheet: 80 GB, 3.35 TB/s"),
    "h200": GpuPreset("H200", 141 * 10**9, 4800e9, "NVIDIA H200 Tensor Core GPU datasheet: 141 GB HBM3e, 4.8 TB/s"),
}


def decode_time_lower_bound(bytes_read, bandwidth_bytes_per_s: float):
    """Seconds per decoding step if memory bandwidth were the only limit: bytes read / bandwidth.

    Decoding one token reads every byte of cache, state and active weights once and does little arithmetic
    per byte, so no implementation on that hardware can be faster than this.

    Args:
        bytes_read: bytes read per step, a number >= 0 or an array of them (e.g. a ``CacheCurve`` column
            plus ``weight_bytes_per_token``).
        bandwidth_bytes_per_s: memory bandwidth, > 0 (e.g. ``GPU_PRESETS["h100-sxm"].bandwidth_bytes_per_s``).

    Returns:
        Seconds, a float or an array shaped like ``bytes_read``.
    """
    if isinstance(bandwidth_bytes_per_s, bool) or not isinstance(bandwidth_bytes_per_s, (int, float)):
        raise TypeError(f"bandwidth_bytes_per_s must be a number, got {type(bandwidth_bytes_per_s).__name__}")
    if not (bandwidth_bytes_per_s > 0 and math.isfinite(bandwidth_bytes_per_s)):
        raise ValueError(f"bandwidth_bytes_per_s must be a positive finite number, got {bandwidth_bytes_per_s}")
    if isinstance(bytes_read, np.ndarray):
        if bytes_read.size and not (np.all(np.isfinite(bytes_read)) and bytes_read.min() >= 0):
            raise ValueError("bytes_read must be finite and >= 0 everywhere")
        return bytes_read / bandwidth_bytes_per_s
    if isinstance(bytes_read, bool) or not isinstance(bytes_read, (int, float)):
        raise TypeError(f"bytes_read must be a number or a numpy array, got {type(bytes_read).__name__}")
    if not (bytes_read >= 0 and math.isfinite(bytes_read)):
        raise ValueError(f"bytes_read must be a finite number >= 0, got {bytes_read}")
    return bytes_read / bandwidth_bytes_per_s


# ---------------------------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------------------------


def parameter_count(spec: ModelSpec | str) -> int | None:
    """Exact parameter count of a dense softmax transformer, from its config; None where not determined.

    Counted: token embedding (vocab × d), learned positions if any, per block two norms, the q/k/v/o
    projections (k and v sized by the key/value heads), the MLP, biases if the model has them; a final norm;
    the output head unless tied to the embedding. GPT-2 gives 124,439,808 (nanoGPT prints 123.65M because
    ``get_num_params`` leaves out the position embedding by default).

    Mixtures of experts, MLA and linear-memory layers are not counted (``spec.params_nominal`` carries the
    authors' figure for those).
    """
    spec = _resolve(spec)
    w = spec.weights
    if w is None or any(kind not in ("mha", "gqa") for kind in spec.layer_kinds):
        return None
    d, hd = spec.d_model, spec.head_dim
    norm = 2 * d if w.norm == "layernorm" else d  # LayerNorm has a weight and a bias, RMSNorm a weight only
    blocks = 0
    for kind in spec.layer_kinds:
        q_out = spec.n_heads * hd
        kv_out = (spec.n_heads if kind == "mha" else spec.n_kv_heads) * hd
        attn = d * q_out + 2 * d * kv_out + q_out * d
        # GELU MLP: up (d -> d_ff) and down; SwiGLU adds a gate of the same shape as up.
        mlp = (2 if w.mlp == "gelu" else 3) * d * w.d_ff
        if w.bias:
            attn += q_out + 2 * kv_out + d
            mlp += (1 if w.mlp == "gelu" else 2) * w.d_ff + d
        blocks += 2 * norm + attn + mlp
    embeddings = spec.vocab_size * d + (w.learned_positions or 0) * d
    head = 0 if w.tied_embeddings else spec.vocab_size * d
    return embeddings + blocks + norm + head


def _weights(spec: ModelSpec) -> tuple[int | None, int | None, str]:
    """(total parameters, parameters per token, how they are known)."""
    exact = parameter_count(spec)
    if exact is not None:
        return exact, exact, "computed from the config; a dense model reads every weight per token"
    if spec.params_nominal is not None or spec.active_params_nominal is not None:
        return spec.params_nominal, spec.active_params_nominal, "nominal counts as stated by the authors"
    return None, None, "not determined from the config"


@dataclass(frozen=True)
class ParameterFact:
    """A parameter count with how it is known ("computed from the config" or "secondary source")."""

    model: str
    parameters: int
    how: str
    source: str


PARAMETER_FACTS: dict[str, ParameterFact] = {
    "gpt2": ParameterFact(
        "GPT-2 124M", parameter_count(MODELS["gpt2"]), "computed from the config", MODELS["gpt2"].source
    ),
    "kimi-k3": ParameterFact(
        "Kimi K3",
        KIMI_K3_CONFIG["total_params"],
        "stated with its config (secondary source)",
        KIMI_K3_SOURCES["params"],
    ),
    "kimi-k3-article": ParameterFact(
        "Kimi K3",
        2_800_000_000_000,
        "quoted by the article (secondary source)",
        "the dev.to article (31 Jul 2026), citing K3's technical report, arXiv 2607.24653",
    ),
}

GPT2_NOMINAL_PARAMS = 124_000_000  # the "124M" in GPT-2's name


@dataclass(frozen=True)
class LineageRatio:
    """How many GPT-2s fit in Kimi K3: K3's config count (2.78T) and the article's (2.8T), each over GPT-2's nominal
    124M (the article's arithmetic) and over its exact count from its config."""

    k3_config: int
    k3_article: int
    gpt2_exact: int
    gpt2_nominal: int

    @property
    def config_to_nominal(self) -> float:  # 2.78T / 124M
        return self.k3_config / self.gpt2_nominal

    @property
    def config_to_exact(self) -> float:  # 2.78T / 124,439,808
        return self.k3_config / self.gpt2_exact

    @property
    def article_to_nominal(self) -> float:  # 2.8T / 124M: the article's 22,580
        return self.k3_article / self.gpt2_nominal

    @property
    def article_to_exact(self) -> float:  # 2.8T / 124,439,808
        return self.k3_article / self.gpt2_exact

    def arithmetic(self, k3: int, gpt2: int) -> str:
        """One division written out: '2.78T / 124M = 22,419.4'."""
        gpt2_text = f"{gpt2 / 1e6:g}M" if gpt2 == self.gpt2_nominal else f"{gpt2:,}"
        return f"{k3 / 1e12:g}T / {gpt2_text} = {k3 / gpt2:,.1f}"

    @property
    def note(self) -> str:
        return (
            f"{self.arithmetic(self.k3_config, self.gpt2_nominal)} with K3's config count; the article's 22,580 is "
            f"{self.arithmetic(self.k3_article, self.gpt2_nominal)}, truncated. Over GPT-2's exact count: "
            f"{self.config_to_exact:,.0f} and {self.article_to_exact:,.0f}. Both K3 counts are from secondary sources."
        )


def lineage_ratio() -> LineageRatio:
    """Kimi K3's parameters (its config's 2.78T and the article's 2.8T, both secondary) over GPT-2's.

    2.8e12 / 124e6 = 22,580.6, the article's 22,580 truncated; 2.78e12 / 124e6 = 22,419.4. Over GPT-2's 124,439,808
    counted from its config: 22,501 and 22,340.
    """
    return LineageRatio(
        k3_config=PARAMETER_FACTS["kimi-k3"].parameters,
        k3_article=PARAMETER_FACTS["kimi-k3-article"].parameters,
        gpt2_exact=PARAMETER_FACTS["gpt2"].parameters,
        gpt2_nominal=GPT2_NOMINAL_PARAMS,
    )


def kimi_linear_spec(schedule: Sequence[str]) -> ModelSpec:
    """Kimi Linear 48B's layer shapes stacked by another schedule, for :func:`footprint`.

    The shapes are those of ``MODELS["kimi-linear-48b"]``: KDA 32 heads × 128 × 128 with a short conv of 4, MLA
    caching 512 + 64 numbers per token. ``kimi_linear_spec(KIMI_LINEAR_SCHEDULE)`` is that spec itself; for any
    other schedule the parameter counts are dropped, since they belong to the released 27-layer model only.
    """
    spec = MODELS["kimi-linear-48b"]
    schedule = tuple(schedule)
    if schedule == spec.layer_kinds:
        return spec
    n_mla = schedule.count("mla")
    return replace(
        spec,
        name=f"Kimi Linear shapes, {len(schedule)} layers ({n_mla} MLA)",
        n_layers=len(schedule),
        layer_kinds=schedule,
        params_nominal=None,
        active_params_nominal=None,
        notes="Kimi Linear 48B's per-layer shapes with a user-chosen schedule; not a released model.",
    )


# One shared layer shape for comparing stages on the home page: GPT-2's attention width (12 heads × 64).
COMPARE_LAYER = dict(n_heads=12, head_dim=64)


def memory_per_layer(stage_key: str, seq_lens, *, dtype: str = "bf16") -> np.ndarray:
    """Bytes one layer of this stage holds while decoding at each context length (a GPT-2-wide layer).

    Softmax stages hold a KV cache (GPT-2 without cache rebuilds the same keys and values every step, so its
    working set is the same size — it just recomputes it); linear stages hold a fixed state; the hybrid is the
    mean over its layer schedule (one MLA layer in every ``stages.HYBRID_EVERY``).
    """
    s = stages.stage(stage_key)
    spec = custom_spec(
        n_layers=len(s.layer_kinds),
        n_heads=COMPARE_LAYER["n_heads"],
        n_kv_heads=COMPARE_LAYER["n_heads"],
        head_dim=COMPARE_LAYER["head_dim"],
        layer_kinds=s.layer_kinds,
        dtype=dtype,
        name=s.title,
    )
    curve = kv_cache_curve(spec, np.asarray(seq_lens), dtype)
    return np.asarray(curve.total_bytes, dtype=np.float64) / len(s.layer_kinds)
