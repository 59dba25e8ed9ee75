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
from lineage.ops.recurrence import layer_chunk_size
from lineage.ops.softmax import CausalSelfAttention, fused_softmax_attention


@dataclass(frozen=True)
class MixerConfig:
    d_model: int = 64  # residual width
    n_heads: int = 4  # heads; each has its own K×V state
    head_k: int = 16  # key dim K: rows of the state (capacity grows with K)
    head_v: int = 16  # value dim V: columns of the state
    conv_size: int = 4  # short causal conv kernel (Kimi Linear: 4); cached as conv_size − 1 past inputs
    gate_rank: int = 16  # low rank of the per-channel gate / output gate projections (W↑ W↓)
    chunk_size: int | None = None  # chunk length of the chunked form; None: recurrence.layer_chunk_size
    conv: bool | None = None  # short conv on q, k, v: None keeps the mechanism's own (its layer options); a bool
    # gives every mechanism the same front end, as Zoology's comparisons do


def causal_conv(x: torch.Tensor, weight: torch.Tensor, past: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Depthwise causal convolution over time: y_t = Σ_i w_i ⊙ full_{t+i}, full = [past, x] (size − 1 + T steps).

    Args: x [B, T, D]; weight [D, size]; past [B, size − 1, D] or None (zeros: the sequence starts here).
    Returns (y [B, T, D], the new past: full's last size − 1 steps).
    """
    size = weight.shape[1]
    taps = weight.to(x.dtype).t()  # (size, D): w_i of every channel
    if past is None:  # the zeros before the sequence stay implicit: nothing to pad, copy or differentiate
        y = _ShiftedSum.apply(x, taps, size - 1)
        full = x if x.shape[1] >= size - 1 else F.pad(x, (0, 0, size - 1 - x.shape[1], 0))
    else:
        full = torch.cat([past.to(x.dtype), x], dim=1)  # (B, size − 1 + T, D)
        y = _ShiftedSum.apply(full, taps, 0)
    return y, full[:, full.shape[1] - (size - 1) :]


# Speed knob, no maths: the short convolution makes one pass over its tensors per tap, forward and backward (twelve in a
# backward of four taps). It runs them on blocks of whole sequences of at most this many bytes a tensor, so that a
# block's input, output and gradients stay in a core's L2 cache from one tap's pass to the next, instead of coming from
# memory again for every tap: a training step's [64, 64, 192] activations are 3 MB, past a core's L2. Forward and
# backward of that convolution, 1 thread of a 2-core Intel Xeon (2 MB of L2 a core), median of 30: 4.8 ms whole,
# 3.0 ms in blocks of 8 sequences (384 KiB), 3.4-3.7 ms in blocks of 4 or 16, 6.8 ms in blocks of one.
CONV_BLOCK_BYTES = 384 * 1024


def _sequence_blocks(n: int, bytes_per_sequence: int) -> list[slice]:
    """Consecutive blocks of the n sequences of a batch, each of at most :data:`CONV_BLOCK_BYTES` (at least one
    sequence a block)."""
    rows = max(1, CONV_BLOCK_BYTES // max(1, bytes_per_sequence))
    return [slice(first, min(n, first + rows)) for first in range(0, n, rows)]


class _ShiftedSum(torch.autograd.Function):
    """y_t = Σ_i taps[i] ⊙ x_{t+i−zeros} with ``zeros`` implicit zero steps before x's first (x_s = 0 for s < 0), and
    its gradients written out: one shifted slice per tap, accumulated in place (what unfold-then-sum computes, without
    a strided [B, T, D, size] window tensor), and a backward of one in-place multiply-add per tap for the input's
    gradient and one product-sum per tap for the weight's, instead of autograd's zero-filled slice gradient for every
    tap and a new tensor per term (on a CPU the front end's costliest part of a training step). Both run on blocks of
    whole sequences (:data:`CONV_BLOCK_BYTES`), each block through every tap before the next.
    """

    @staticmethod
    def _spans(size: int, T: int, zeros: int):
        """(tap i, the output steps it reaches, the input steps it reads) for every tap, the full-length one first."""
        spans = []
        for i in range(size):
            first = max(0, zeros - i)  # tap i reads x_{t+i−zeros}: none before t = zeros − i
            spans.append((i, slice(first, T), slice(first + i - zeros, T + i - zeros)))
        return sorted(spans, key=lambda s: s[1].start)

    @staticmethod
    def forward(ctx, x: torch.Tensor, taps: torch.Tensor, zeros: int) -> torch.Tensor:
        size = taps.shape[0]
        B, T = x.shape[0], x.shape[1] + zeros - size + 1
        taps = taps.contiguous()  # one contiguous row per tap: a strided column multiplies an order slower
        spans = _ShiftedSum._spans(size, T, zeros)
        y = x.new_empty(B, T, x.shape[2])
        for rows in _sequence_blocks(B, x[0].numel() * x.element_size()):
            xb, yb = x[rows], y[rows]
            (i, out, read), *rest = spans
            if out.start == 0:  # the full-length tap writes the block; the others add to it
                torch.mul(xb[:, read], taps[i], out=yb)
            else:
                yb.zero_()
                rest = spans
            for i, out, read in rest:
                yb[:, out].addcmul_(xb[:, read], taps[i])
        ctx.save_for_backward(x, taps)
        ctx.zeros = zeros
        return y

    @staticmethod
    def backward(ctx, grad_y: torch.Tensor):
        x, taps = ctx.saved_tensors
        size = taps.shape[0]
        B, T, D = grad_y.shape
        spans = _ShiftedSum._spans(size, T, ctx.zeros)
        blocks = _sequence_blocks(B, x[0].numel() * x.element_size())
        grad_x = torch.empty_like(x)
        sums = grad_y.new_empty(len(blocks), size, D)  # each block's ∂L/∂w_i, summed over the blocks at the end
        product = grad_y.new_empty(blocks[0].stop * T * D)  # one buffer for the products, each a contiguous [b, n, D]
        for block, rows in enumerate(blocks):
            gy, xb, gx = grad_y[rows], x[rows], grad_x[rows].zero_()
            b = gx.shape[0]
            for i, out, read in spans:
                gx[:, read].addcmul_(gy[:, out], taps[i])  # ∂y_t/∂x_{t+i−zeros} = w_i
                n = out.stop - out.start
                terms = torch.mul(gy[:, out], xb[:, read], out=product[: b * n * D].view(b, n, D))
                torch.sum(terms, (0, 1), out=sums[block, i])  # ∂L/∂w_i = Σ_{b,t} ∂y_t ⊙ x_{t+i−zeros}
        return grad_x, sums.sum(0), None


class ShortConv(nn.Module):
    """Depthwise causal 1-D convolution over time (:func:`causal_conv`); decoding keeps the last ``size − 1`` inputs."""

    def __init__(self, channels: int, size: int):
        super().__init__()
        self.size = size
        self.weight = nn.Parameter(torch.randn(channels, size) / math.sqrt(size))

    def forward(self, x: torch.Tensor, past: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """x: [B, T, D]; past: [B, size − 1, D] or None (zeros). Returns (y [B, T, D], new past)."""
        return causal_conv(x, self.weight, past)


def joint_conv(
    convs: nn.ModuleDict, x: torch.Tensor, widths: dict[str, int], past: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The short convolutions of several projections side by side, as one :func:`causal_conv`: x holds the inputs
    of ``convs[name]`` for each name of ``widths`` along its last axis, ``widths[name]`` channels each, in that order.
    A depthwise convolution treats every channel alone, so this is each convolution run on its own slice.

    Returns (y, same layout as x; the new past of each name). ``past`` maps a name to its [B, size − 1, width]
    inputs; a name it lacks starts from zeros (so does every name when it is empty).
    """
    names = list(widths)
    weight = torch.cat([convs[n].weight for n in names])  # (Σ widths, size)
    joined = None
    if past:
        B, steps = x.shape[0], weight.shape[1] - 1
        joined = torch.cat([past[n] if n in past else x.new_zeros(B, steps, widths[n]) for n in names], dim=-1)
    y, kept = causal_conv(x, weight, joined)
    return y, dict(zip(names, kept.split(list(widths.values()), dim=-1), strict=True))


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
        B, T, _ = x.shape
        keep = use_cache or cache is not None
        new = MemoryState(length=(cache.length if cache else 0) + T)
        # q, k and v in one product: the three projections' weights side by side (each stays its own Linear)
        qkv = F.linear(x, torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight]))  # (B, T, 2HK + HV)
        widths = {"q": H * K, "k": H * K, "v": H * V}
        if self.conv:  # each projection's own short convolution, run side by side as one (joint_conv), then Swish
            qkv, new.conv = joint_conv(self.convs, qkv, widths, cache.conv if cache else {})
            qkv = F.silu(qkv)
        # contiguous heads: every elementwise operation after this (feature maps, norms, gates) runs on one layout
        q, k, v = (
            self._heads(t, d).contiguous() for t, d in zip(qkv.split(list(widths.values()), -1), (K, K, V), strict=True)
        )  # (B, H, T, ·)
        if lay.l2norm:
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        g, beta = self.gates(x)
        if x.shape[1] == 1 and mode == "chunk":  # a decode step is one step of the recurrence: no chunk to batch
            mode = "recurrent"
        chunk_size = self.cfg.chunk_size
        if chunk_size is None and not self.entry.unit_gates:  # ops with unit gates have their own chunked form
            plain = self.entry.rule == "additive" and self.entry.gate == "none"  # linear attention: products only
            chunk_size = layer_chunk_size(x.device, B * H, K, V, products_only=plain)  # 1 (the scan): small states
        kw = dict(initial_state=cache.S if cache else None, output_final_state=keep, mode=mode, chunk_size=chunk_size)
        if lay.feature_map is not None:
            kw.update(feature_map=lay.feature_map, normalize=lay.normalize)
        if lay.step_scaled_values:  # Mamba-2's SSD symbols: C = q, B = k, x·Δ = v, A·Δ = g, read scale 1
            v, kw["scale"] = v * self.step_size(x)[..., None], 1.0
        with checks.values_checked():  # q, k, v, g, β are computed from the checked x: no second scan
            o, S = self.entry.call(q, k, v, g, beta, **self.unit_gates(x), **kw)
        o = o.transpose(1, 2).contiguous()  # (B, T, H, V): the output projection's layout, and the output gate's
        if lay.output_gate != "none":
            gate = self.og_up(self.og_down(x)).view(B, T, H, V)
            gate = torch.sigmoid(gate) if lay.output_gate == "sigmoid" else F.silu(gate)
            o = self.o_norm(o) * gate
        y = self.o_proj(o.view(B, T, H * V))
        if not keep:
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
        H, hd, D = self.n_heads, self.head_dim, self.d_model
        qkv, _ = joint_conv(self.convs, self.c_attn(x), {"q": D, "k": D, "v": D}, {})  # the three convs as one
        # (B, H, T, hd) each, as views of one [B, T, 3, H, hd] tensor (speed: unbind's backward stacks the three
        # gradients straight into that layout; a split of the transposed tensor's concatenates them into the
        # transposed one, which the view back to [B, T, 3·H·hd] must copy)
        q, k, v = (t.transpose(1, 2) for t in F.silu(qkv).view(B, T, 3, H, hd).unbind(2))
        with checks.values_checked():  # q, k, v are computed from the checked x
            o = fused_softmax_attention(q, k, v)
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
