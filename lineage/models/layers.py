"""Token mixers as drop-in layers of a GPT-2 style pre-norm block.

    x = x + mixer(ln_1(x))
    x = x + mlp(ln_2(x))

:class:`LinearMemoryMixer` wraps any of the six linear-memory ops with the projections, short causal
convolutions, feature maps, gates and output gate their papers use — and no math of its own: the
recurrence lives in :mod:`lineage.ops.recurrence`. Every mixer has the same interface,
``forward(x, cache=None, use_cache=False) -> (y, cache)``, so a model can decode one token at a time with its
own cache/state, and ``cache.nbytes`` says how much memory that cache holds.

The KDA layer follows the Kimi Linear paper (arXiv 2510.26692): q, k = L2Norm(Swish(ShortConv(W x))),
v = Swish(ShortConv(W x)), g = −exp(A_log)·softplus(W↑ W↓ x + dt_bias) per channel, β = sigmoid(W_β x), and
the output o ← RMSNorm(o) ⊙ sigmoid(W_g↑ W_g↓ x) before the output projection. The other mechanisms take the
same skeleton with their own choices: each mechanism's ``layer`` options in :mod:`lineage.mechanisms` (short
convolution, L2-normalised q and k, output gate, how the gate is computed, feature map) decide every branch here,
and its write rule and gate kind decide which of g and β the op receives. ``MixerConfig.conv`` can override the
short convolution, so that every mechanism — softmax too, through :class:`ConvSelfAttention` — has the same front
end, as Zoology's comparisons give every mixer (:mod:`lineage.models.lm`'s ``front_end``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from lineage import checks
from lineage.mechanisms import linear_mechanisms
from lineage.ops.softmax import CausalSelfAttention, softmax_attention


@dataclass(frozen=True)
class MixerConfig:
    d_model: int = 64  # residual width
    n_heads: int = 4  # heads; each has its own K×V state
    head_k: int = 16  # key dim K: rows of the state (capacity grows with K)
    head_v: int = 16  # value dim V: columns of the state
    conv_size: int = 4  # short causal conv kernel (Kimi Linear: 4); cached as conv_size − 1 past inputs
    gate_rank: int = 16  # low rank of the per-channel gate / output gate projections (W↑ W↓)
    chunk_size: int | None = None  # chunk length of the chunked form; None: recurrence.default_chunk_size
    conv: bool | None = None  # short conv on q, k, v: None keeps the mechanism's own (its layer options); a bool
    # gives every mechanism the same front end, as Zoology's comparisons do


class ShortConv(nn.Module):
    """Depthwise causal 1-D convolution over time; decoding keeps the last ``size − 1`` inputs."""

    def __init__(self, channels: int, size: int):
        super().__init__()
        self.size = size
        self.weight = nn.Parameter(torch.randn(channels, size) / math.sqrt(size))

    def forward(self, x: torch.Tensor, past: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """x: [B, T, D]; past: [B, size − 1, D] or None (zeros). Returns (y [B, T, D], new past)."""
        B, T, D = x.shape
        if past is None:
            past = x.new_zeros(B, self.size - 1, D)
        full = torch.cat([past.to(x.dtype), x], dim=1)  # (B, size − 1 + T, D)
        w = self.weight.to(x.dtype)
        # y_t = Σ_i w_i · full_{t+i}: one shifted slice per tap, summed in tap order (what unfold-then-sum computes,
        # without a strided [B, T, D, size] window tensor, the slow path of a training step on a CPU)
        y = full[:, :T] * w[:, 0]
        for i in range(1, self.size):
            y = y + full[:, i : i + T] * w[:, i]
        return y, full[:, full.shape[1] - (self.size - 1) :]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


@dataclass
class MemoryState:
    """A linear-memory layer's decoding state: the recurrent state S plus the short-conv caches."""

    S: torch.Tensor | None = None  # (B, H, K, V) — or (B, H, K, V + 1) for normalised linear attention
    conv: dict[str, torch.Tensor] = field(default_factory=dict)  # "q" | "k" | "v" -> (B, size − 1, channels)
    length: int = 0  # tokens consumed

    @property
    def nbytes(self) -> int:
        """Bytes held: fixed in the sequence length, unlike a KV cache."""
        tensors = ([self.S] if self.S is not None else []) + list(self.conv.values())
        return sum(t.numel() * t.element_size() for t in tensors)

    @property
    def recurrent_nbytes(self) -> int:
        return 0 if self.S is None else self.S.numel() * self.S.element_size()


class LinearMemoryMixer(nn.Module):
    """A linear-memory token mixer for one mechanism of the lineage.

    ``mechanism`` is the mechanism's key (one of :func:`linear_mechanisms`); ``self.entry`` is its entry in the table,
    whose attributes (write rule, gate, layer options) decide every branch of the layer.
    """

    def __init__(self, mechanism: str, config: MixerConfig | None = None):
        super().__init__()
        linear = {m.key: m for m in linear_mechanisms()}
        if mechanism not in linear:
            raise ValueError(
                f"mechanism must be a linear-memory mechanism, one of {', '.join(map(repr, linear))}, got {mechanism!r}"
            )
        cfg = config or MixerConfig()
        for name in ("d_model", "n_heads", "head_k", "head_v", "conv_size", "gate_rank"):
            checks.positive_int(name, getattr(cfg, name))
        if cfg.chunk_size is not None:
            checks.positive_int("chunk_size", cfg.chunk_size)
        self.mechanism, self.entry, self.cfg = mechanism, linear[mechanism], cfg
        self.options = lay = self.entry.layer
        self.conv = lay.conv if cfg.conv is None else cfg.conv
        H, K, V, D = cfg.n_heads, cfg.head_k, cfg.head_v, cfg.d_model
        self.q_proj = nn.Linear(D, H * K, bias=False)
        self.k_proj = nn.Linear(D, H * K, bias=False)
        self.v_proj = nn.Linear(D, H * V, bias=False)
        self.o_proj = nn.Linear(H * V, D, bias=False)
        if self.conv:
            self.convs = nn.ModuleDict(
                {n: ShortConv(c, cfg.conv_size) for n, c in (("q", H * K), ("k", H * K), ("v", H * V))}
            )
        if self.entry.takes("beta"):  # its op takes a write strength (the op contract): the layer computes one
            self.b_proj = nn.Linear(D, H, bias=True)
        width = {"K": K, "V": V}
        # its op's unit gates (Gated DeltaNet-2's erase and write, one vector per token): σ(W x) each, as β is σ(W x)
        self.unit_projs = nn.ModuleDict(
            {u.name: nn.Linear(D, H * width[u.dims[-1]], bias=True) for u in self.entry.unit_gates}
        )
        if self.entry.gate == "scalar":  # Mamba-2 style: Δ = softplus(W x + dt_bias), log α = −exp(A_log) Δ
            self.a_proj = nn.Linear(D, H, bias=False)
            self.A_log = nn.Parameter(torch.log(torch.empty(H).uniform_(1, 16)))
            self.dt_bias = nn.Parameter(_dt_bias_init(H))
        elif self.entry.gate == "channel":  # low-rank W↑ W↓ x, one decay per key channel
            self.g_down = nn.Linear(D, cfg.gate_rank, bias=False)
            self.g_up = nn.Linear(cfg.gate_rank, H * K, bias=False)
            if lay.gate_form == "softplus":
                self.A_log = nn.Parameter(torch.log(torch.empty(H).uniform_(1, 16)))
                self.dt_bias = nn.Parameter(_dt_bias_init(H * K))
        if lay.output_gate != "none":
            self.o_norm = RMSNorm(V)
            self.og_down = nn.Linear(D, cfg.gate_rank, bias=False)
            self.og_up = nn.Linear(cfg.gate_rank, H * V, bias=True)

    def _heads(self, x: torch.Tensor, d: int) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.cfg.n_heads, d).transpose(1, 2)  # (B, H, T, d)

    def step_size(self, x: torch.Tensor) -> torch.Tensor:
        """Mamba-2's Δ = softplus(W x + dt_bias): [B, H, T] (scalar-gated mechanisms only)."""
        return F.softplus(self.a_proj(x) + self.dt_bias).transpose(1, 2)

    def gates(self, x: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The log-gate g ([B, H, T] or [B, H, T, K]) and β ([B, H, T]) this layer computes from x [B, T, D]."""
        m, K = self.entry, self.cfg.head_k
        g = beta = None
        if m.gate == "scalar":
            g = -torch.exp(self.A_log)[:, None] * self.step_size(x)  # (B, H, T): log α = A·Δ
        elif m.gate == "channel":
            raw = self.g_up(self.g_down(x))  # (B, T, H·K)
            if self.options.gate_form == "softplus":  # Kimi Linear: −exp(A_log)·softplus(W↑W↓x + dt_bias), A per head
                A = torch.exp(self.A_log).repeat_interleave(K)
                g = -A * F.softplus(raw + self.dt_bias)
            else:  # GLA: log σ(W↑W↓x) / τ with τ = 16 keeps decays near 1 at initialisation
                g = F.logsigmoid(raw) / 16.0
            g = self._heads(g, K)
        if m.takes("beta"):
            beta = torch.sigmoid(self.b_proj(x)).transpose(1, 2)  # (B, H, T)
        return g, beta

    def unit_gates(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Its op's unit gates by name (:attr:`lineage.mechanisms.Mechanism.unit_gates`), each σ(W x) as [B, H, T,
        K or V]; empty for every op that takes β or nothing."""
        width = {"K": self.cfg.head_k, "V": self.cfg.head_v}
        return {
            u.name: self._heads(torch.sigmoid(self.unit_projs[u.name](x)), width[u.dims[-1]])
            for u in self.entry.unit_gates
        }

    def forward(self, x: torch.Tensor, cache: MemoryState | None = None, use_cache: bool = False, mode: str = "chunk"):
        """x: [B, T, d_model]. With a cache (or use_cache) the state continues across calls (decoding).

        Returns (y [B, T, d_model], MemoryState or None).
        """
        checks.tensor("x", x, rank=3)
        if x.shape[-1] != self.cfg.d_model:
            raise ValueError(f"x must have shape [B, T, d_model={self.cfg.d_model}], got {tuple(x.shape)}")
        lay, H, K, V = self.options, self.cfg.n_heads, self.cfg.head_k, self.cfg.head_v
        new = MemoryState(length=(cache.length if cache else 0) + x.shape[1])
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, T, H·K), (B, T, H·K), (B, T, H·V)
        if self.conv:
            past = cache.conv if cache else {}
            (q, new.conv["q"]), (k, new.conv["k"]), (v, new.conv["v"]) = (
                self.convs[n](t, past.get(n)) for n, t in (("q", q), ("k", k), ("v", v))
            )
            q, k, v = F.silu(q), F.silu(k), F.silu(v)
        q, k, v = self._heads(q, K), self._heads(k, K), self._heads(v, V)  # (B, H, T, ·)
        if lay.l2norm:
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        g, beta = self.gates(x)
        if x.shape[1] == 1 and mode == "chunk":  # a decode step is one step of the recurrence: no chunk to batch
            mode = "recurrent"
        kw = dict(
            initial_state=cache.S if cache else None, output_final_state=True, mode=mode, chunk_size=self.cfg.chunk_size
        )
        if lay.feature_map is not None:
            kw.update(feature_map=lay.feature_map, normalize=lay.normalize)
        if lay.step_scaled_values:  # Mamba-2's SSD symbols: C = q, B = k, x·Δ = v, A·Δ = g, read scale 1
            v, kw["scale"] = v * self.step_size(x)[..., None], 1.0
        with checks.values_checked():  # q, k, v, g, β are computed from the checked x: no second scan
            o, S = self.entry.call(q, k, v, g, beta, **self.unit_gates(x), **kw)
        if lay.output_gate != "none":
            gate = self._heads(self.og_up(self.og_down(x)), V)
            gate = torch.sigmoid(gate) if lay.output_gate == "sigmoid" else F.silu(gate)
            o = self.o_norm(o) * gate
        y = self.o_proj(o.transpose(1, 2).reshape(x.shape[0], x.shape[1], H * V))
        if not (use_cache or cache is not None):
            return y, None
        new.S = S
        return y, new


class ConvSelfAttention(CausalSelfAttention):
    """GPT-2's causal self-attention with the linear layers' front end: a short causal convolution, then Swish, on
    each of q, k, v before the softmax. It hands every position its previous tokens, the step MQAR needs to bind a
    value to its key, which plain attention must otherwise learn from position embeddings. Training only (full
    sequences): its decoding state would be the KV cache plus the convolutions' last ``conv_size − 1`` inputs.
    """

    def __init__(self, d_model: int, n_heads: int, conv_size: int = 4):
        super().__init__(d_model, n_heads)
        checks.positive_int("conv_size", conv_size)
        self.convs = nn.ModuleDict({n: ShortConv(d_model, conv_size) for n in ("q", "k", "v")})

    def forward(self, x: torch.Tensor, cache=None, use_cache: bool = False):
        """x [B, T, d_model] → (y [B, T, d_model], None)."""
        if cache is not None or use_cache:
            raise ValueError("ConvSelfAttention runs whole sequences only: cache must be None and use_cache False")
        checks.tensor("x", x, rank=3)
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape [B, T, d_model] with d_model = {self.d_model}, got {tuple(x.shape)}")
        B, T, _ = x.shape
        H, hd = self.n_heads, self.head_dim
        q, k, v = (
            F.silu(self.convs[n](t, None)[0])
            for n, t in zip("qkv", self.c_attn(x).split(self.d_model, -1), strict=True)
        )
        q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
        with checks.values_checked():  # q, k, v are computed from the checked x
            o, _ = softmax_attention(q, k, v, mode="parallel")
        return self.c_proj(o.transpose(1, 2).reshape(B, T, self.d_model)), None


def _dt_bias_init(n: int) -> torch.Tensor:
    """Inverse-softplus of Δ drawn log-uniformly in [1e-3, 1e-1], as in Mamba's initialisation."""
    dt = torch.exp(torch.empty(n).uniform_(math.log(1e-3), math.log(1e-1)))
    return dt + torch.log(-torch.expm1(-dt))


class MLP(nn.Module):
    def __init__(self, d_model: int, expansion: int = 4):
        super().__init__()
        self.fc = nn.Linear(d_model, expansion * d_model)
        self.proj = nn.Linear(expansion * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    """GPT-2's pre-norm residual block with a pluggable token mixer."""

    def __init__(self, mixer: nn.Module, d_model: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.mixer = mixer
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(self, x: torch.Tensor, cache=None, use_cache: bool = False):
        h, cache = self.mixer(self.ln_1(x), cache=cache, use_cache=use_cache)
        x = x + h
        x = x + self.mlp(self.ln_2(x))
        return x, cache
