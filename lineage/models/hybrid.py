"""The hybrid: mostly KDA layers, with a softmax (MLA) layer every few layers — Kimi Linear, and K3 after it.

Kimi Linear (arXiv 2510.26692) interleaves KDA and MLA layers at what its paper calls 3:1; its 48B-A3B
configuration has 27 layers with MLA at layers 4, 8, 12, 16, 20, 24 and 27 (1-based) and KDA elsewhere: 20 KDA to
7 MLA. KDA layers keep a fixed-size state; MLA layers keep a latent cache that grows with the context — about a
quarter of the layers, and a small cache per layer, so the whole model's cache is about a quarter of an all-MLA
stack's. Kimi K3 keeps the same idea at 93 layers, MLA at 4, 8, …, 92 and 93 (69 KDA to 24 MLA, from its config as
others quote it: ``lineage.schedules.KIMI_K3_CONFIG``): linear layers for bulk processing, periodic softmax layers
for exact retrieval.

:class:`HybridStack` builds a GPT-2 style stack of pre-norm blocks from a schedule such as
``("kda", "kda", "kda", "mla", …)`` and decodes token by token, reporting each layer's cache bytes as it goes.
Schedules come from :func:`lineage.schedules.periodic_schedule` (and ``KIMI_LINEAR_SCHEDULE`` there); a layer
kind is any mechanism's ``layer_kind`` in :mod:`lineage.mechanisms` ("mha" for softmax attention).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from lineage import checks
from lineage.mechanisms import layer_kinds, layer_mechanism
from lineage.models.layers import Block, ConvSelfAttention, LinearMemoryMixer, MixerConfig
from lineage.models.mla import MLA
from lineage.ops.softmax import CausalSelfAttention
from lineage.schedules import periodic_schedule


@dataclass(frozen=True)
class HybridConfig:
    schedule: tuple[str, ...] = periodic_schedule(4)  # one kind per layer, bottom to top: KDA, KDA, KDA, MLA
    d_model: int = 64  # residual width
    n_heads: int = 4  # heads of every mixer
    head_dim: int = 16  # K = V of the linear layers; nope/value width of MLA
    kv_lora_rank: int = 16  # MLA's cached latent width (Kimi Linear: 512)
    rope_dim: int = 8  # MLA's decoupled key width (Kimi Linear: 64, NoPE)
    vocab_size: int = 0  # 0: the stack maps embeddings to embeddings (no token embedding or head)
    conv: bool | None = None  # short conv on q, k, v of the linear and "mha" layers; None: each mechanism's own


class HybridStack(nn.Module):
    """A stack of pre-norm blocks whose mixers follow ``config.schedule``."""

    def __init__(self, config: HybridConfig = HybridConfig()):
        super().__init__()
        if not config.schedule:
            raise ValueError("schedule must name at least one layer")
        kinds = layer_kinds()
        for i, kind in enumerate(config.schedule):
            if kind not in kinds:
                raise ValueError(f"schedule[{i}] must be one of {', '.join(map(repr, kinds))}, got {kind!r}")
        self.config = config
        D, H, Dh = config.d_model, config.n_heads, config.head_dim
        mixer_cfg = MixerConfig(d_model=D, n_heads=H, head_k=Dh, head_v=Dh, conv=config.conv)
        blocks = []
        for kind in config.schedule:
            m = layer_mechanism(kind)
            if m.is_linear:
                mixer = LinearMemoryMixer(m.key, mixer_cfg)
            elif kind == "mla":  # Kimi Linear's MLA is NoPE: no rotary position encoding
                mixer = MLA(
                    D,
                    H,
                    head_dim_nope=Dh,
                    head_dim_rope=config.rope_dim,
                    v_head_dim=Dh,
                    kv_lora_rank=config.kv_lora_rank,
                    use_rope=False,
                )
            elif kind == "mha":
                mixer = ConvSelfAttention(D, H) if config.conv else CausalSelfAttention(D, H)
            else:
                raise ValueError(f"schedule names {kind!r}, a softmax-family layer kind that has no layer here")
            blocks.append(Block(mixer, D))
        self.blocks = nn.ModuleList(blocks)
        self.ln_f = nn.LayerNorm(D)

    def forward(self, x: torch.Tensor, caches: Sequence | None = None, use_cache: bool = False):
        """x: [B, T, d_model]. Returns (y [B, T, d_model], per-layer caches or None)."""
        checks.tensor("x", x, rank=3)
        if caches is not None and len(caches) != len(self.blocks):
            raise ValueError(f"caches must have one entry per layer ({len(self.blocks)}), got {len(caches)}")
        keep = use_cache or caches is not None
        new = []
        with checks.values_checked():  # x was checked above; each layer's input is computed from it
            for i, block in enumerate(self.blocks):
                x, c = block(x, cache=None if caches is None else caches[i], use_cache=keep)
                new.append(c)
        return self.ln_f(x), (new if keep else None)


# Layer initialisers draw from torch's global generator; sessions of the app run in threads, so seeding it
# and building a model must not interleave with another session doing the same.
_SEED_LOCK = threading.Lock()


def seeded_stack(config: HybridConfig, seed: int) -> HybridStack:
    """The same weights for the same (config, seed), whatever else runs; the global RNG is left as it was."""
    with _SEED_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return HybridStack(config).eval()


def cache_nbytes(cache) -> int:
    """Bytes one layer's decoding memory holds (KV cache, MLA latent cache, or recurrent state)."""
    return 0 if cache is None else int(cache.nbytes)


@dataclass
class HybridDecode:
    """Per-layer memory while decoding token by token: bytes[t, layer] after t + 1 tokens."""

    schedule: tuple[str, ...]
    bytes: np.ndarray  # [T, n_layers]
    outputs: np.ndarray  # [T, d_model] of batch element 0
    max_err_vs_full: float  # decoded outputs against one full forward pass


def decode_trace(config: HybridConfig, T: int, seed: int = 0) -> HybridDecode:
    """Build a seeded stack, decode T random embeddings one at a time, and record every layer's bytes."""
    checks.positive_int("T", T)
    model = seeded_stack(config, seed)
    x = torch.randn(1, T, config.d_model, generator=torch.Generator().manual_seed(int(seed)))
    rows, outs, caches = [], [], None
    with torch.no_grad():
        full, _ = model(x)
        for t in range(T):
            y, caches = model(x[:, t : t + 1], caches=caches, use_cache=True)
            outs.append(y[0, 0])
            rows.append([cache_nbytes(c) for c in caches])
        decoded = torch.stack(outs)
    return HybridDecode(
        schedule=config.schedule,
        bytes=np.asarray(rows, dtype=np.int64),
        outputs=decoded.numpy(),
        max_err_vs_full=float((decoded - full[0]).abs().max()),
    )
