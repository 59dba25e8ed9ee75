"""Multi-head Latent Attention (MLA): softmax attention whose cache is a low-rank latent.

Paper: DeepSeek-AI 2024, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model"
(arXiv 2405.04434), §2.1; reused by DeepSeek-V3 (arXiv 2412.19437) and, without positional encoding, as the
softmax layer of Kimi Linear (arXiv 2510.26692).

Per token x_t (d_model), with r = kv_lora_rank and R = rope_dim:

    c_kv   = RMSNorm(W_dkv x_t)                      [r]          the latent: shared by every head
    k_rope = RoPE(W_kr x_t)                          [R]          one rotated key part, shared by every head
    k_nope = W_uk c_kv                               [H, nope]    per-head keys, up-projected from the latent
    v      = W_uv c_kv                               [H, V]       per-head values, up-projected from the latent
    q      = [q_nope, RoPE(q_rope)] = W_q x_t        [H, nope+R]  (or W_uq RMSNorm(W_dq x_t) with q_lora_rank)
    k      = [k_nope, k_rope]                        [H, nope+R]
    o      = W_o · softmax_attention(q, k, v)        scale = (nope + R) ** -0.5

What it saves: the cache holds only c_kv and k_rope, r + R numbers per token per layer (DeepSeek-V3: 512 + 64 =
576), where multi-head attention with 128 heads of width 128 would hold 2·128·128 = 32,768 — about 57× more.

What it costs: the up-projections W_uk, W_uv (extra FLOPs per cached token unless absorbed, below), and RoPE must
be decoupled. A rotation R_t sits between q and k, so q_nopeᵀ W_uk c_kv could not fold W_uk into the query if the
rotation were applied to k_nope; hence the separate, shared k_rope carrying all position information.

Weight absorption (how decoding runs here): scores and outputs never need per-head keys or values,

    q_nopeᵀ k_nope = (W_ukᵀ q_nope)ᵀ c_kv              o_h = Σ_s p_s W_uv c_kv,s = W_uv (Σ_s p_s c_kv,s)

so decoding against the cache is multi-query attention (Hkv = 1) over latent keys [c_kv, k_rope] (r + R wide) and
latent values c_kv, with the per-head queries W_ukᵀ q_nope; W_uv is applied to the r-wide result afterwards.
The prefill (no past tokens) runs the explicit form above; the tests check the two agree.

NoPE (Kimi Linear): ``use_rope=False`` skips the rotation — the model learns position from causality (and, in
the hybrid, from its KDA layers). The R-wide part of the key still exists and is still cached, unrotated.

Layout: x [B, T, d_model]; heads [B, H, T, D]. Weight names follow DeepSeek-V3's ``model.py``.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from lineage import checks
from lineage.ops.kv_cache import KVCache, SequenceBuffer
from lineage.ops.softmax import softmax_attention

__all__ = ["MLA", "MLACache", "rope"]


def rope(x: torch.Tensor, positions: torch.Tensor, *, theta: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (Su et al. 2021, RoFormer, arXiv 2104.09864).

    Channel pair (i, i + D/2) of the token at position n is rotated by the angle n · θ^(−2i/D) (the half-split
    pairing of GPT-NeoX and Llama), so (R_m q) · (R_n k) depends on m − n only.

    Args:
        x: [..., T, D], D even.
        positions: [T] integer positions.

    Returns:
        [..., T, D], same dtype as x.
    """
    D = x.shape[-1]
    if D % 2:
        raise ValueError(f"rope needs an even last dimension to pair channels, got x of shape {tuple(x.shape)}")
    if positions.shape != (x.shape[-2],):
        raise ValueError(f"positions must have shape [T] = ({x.shape[-2]},) as in x, got {tuple(positions.shape)}")
    # angles in fp64: at positions ~1e5 fp32 loses the low bits of n · θ^(−2i/D)
    inv_freq = theta ** (-torch.arange(0, D // 2, dtype=torch.float64, device=x.device) * 2 / D)  # (D/2,)
    angles = positions.to(torch.float64)[:, None] * inv_freq[None, :]  # (T, D/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : D // 2], x[..., D // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class MLACache:
    """MLA's cache: the latent c_kv [B, N, r] and the shared key part k_rope [B, N, R], nothing else.

    Stored side by side in one doubling buffer [B, N, r + R], so ``latent`` (the absorbed-form key) is a view.
    """

    def __init__(
        self,
        batch: int,
        kv_lora_rank: int,
        rope_dim: int,
        *,
        dtype: torch.dtype = torch.float32,
        device=None,
        capacity: int = 16,
    ):
        checks.positive_int("batch", batch)
        checks.positive_int("kv_lora_rank", kv_lora_rank)
        self.kv_lora_rank, self.rope_dim = kv_lora_rank, rope_dim
        self._buf = SequenceBuffer(
            (batch, 0, kv_lora_rank + rope_dim), 1, dtype=dtype, device=device, capacity=capacity
        )

    @property
    def batch(self) -> int:
        return self._buf.data.shape[0]

    @property
    def length(self) -> int:
        """N, the number of tokens held."""
        return self._buf.length

    @property
    def capacity(self) -> int:
        return self._buf.capacity

    @property
    def latent(self) -> torch.Tensor:
        """[B, N, r + R] = [c_kv, k_rope], a view."""
        return self._buf.data

    @property
    def c_kv(self) -> torch.Tensor:
        """[B, N, r], a view."""
        return self.latent[..., : self.kv_lora_rank]

    @property
    def k_rope(self) -> torch.Tensor:
        """[B, N, R], a view (already rotated when the layer uses RoPE)."""
        return self.latent[..., self.kv_lora_rank :]

    @property
    def nbytes(self) -> int:
        """Bytes held for the filled part: N × (r + R) × B × element size."""
        return self._buf.nbytes

    def append(self, c_kv: torch.Tensor, k_rope: torch.Tensor) -> None:
        """Add n tokens: c_kv [B, n, r], k_rope [B, n, R]."""
        for name, x, d in (("c_kv", c_kv, self.kv_lora_rank), ("k_rope", k_rope, self.rope_dim)):
            if not isinstance(x, torch.Tensor) or x.dim() != 3 or (x.shape[0], x.shape[2]) != (self.batch, d):
                got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
                raise ValueError(f"{name} must have shape [B, n, {d}] with B = {self.batch}, got {got}")
        if c_kv.shape[1] != k_rope.shape[1]:
            n_c, n_r = c_kv.shape[1], k_rope.shape[1]
            raise ValueError(f"c_kv and k_rope must hold the same number of tokens, got {n_c} and {n_r}")
        self._buf.append(torch.cat([c_kv, k_rope], dim=-1))

    def clone(self) -> MLACache:
        cache = MLACache.__new__(MLACache)
        cache.kv_lora_rank, cache.rope_dim, cache._buf = self.kv_lora_rank, self.rope_dim, self._buf.clone()
        return cache

    def __repr__(self) -> str:
        return (
            f"MLACache(B={self.batch}, N={self.length}, r={self.kv_lora_rank}, R={self.rope_dim}, nbytes={self.nbytes})"
        )


class MLA(nn.Module):
    """Multi-head Latent Attention layer (DeepSeek-V2 §2.1), causal.

    Args (defaults: a small demo layer; DeepSeek-V3 is 128 heads, nope 128, rope 64, v 128, r 512, q rank 1536):
        d_model: model width.
        n_heads: H.
        head_dim_nope: per-head query/key width without position information.
        head_dim_rope: R, the decoupled (shared) rotary key width; 0 drops it. Must be even when ``use_rope``.
        v_head_dim: per-head value width.
        kv_lora_rank: r, width of the cached latent c_kv — the knob that sets the cache size.
        q_lora_rank: None projects queries directly; an int adds DeepSeek's low-rank query path (saves
            activation memory in training, not cache).
        use_rope: False is NoPE (Kimi Linear): the R-wide key part is cached but not rotated.
        rope_theta: RoPE base.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        head_dim_nope: int = 16,
        head_dim_rope: int = 8,
        v_head_dim: int = 16,
        kv_lora_rank: int = 32,
        q_lora_rank: int | None = None,
        use_rope: bool = True,
        rope_theta: float = 10000.0,
    ):
        super().__init__()
        for name, x in (
            ("d_model", d_model),
            ("n_heads", n_heads),
            ("head_dim_nope", head_dim_nope),
            ("v_head_dim", v_head_dim),
            ("kv_lora_rank", kv_lora_rank),
        ):
            checks.positive_int(name, x)
        if isinstance(head_dim_rope, bool) or not isinstance(head_dim_rope, int):
            raise TypeError(f"head_dim_rope must be an int >= 0, got {type(head_dim_rope).__name__} {head_dim_rope!r}")
        if head_dim_rope < 0:
            raise ValueError(f"head_dim_rope must be an int >= 0, got {head_dim_rope}")
        if use_rope and head_dim_rope % 2:
            raise ValueError(f"head_dim_rope must be even for RoPE (channels rotate in pairs), got {head_dim_rope}")
        if q_lora_rank is not None:
            checks.positive_int("q_lora_rank", q_lora_rank)
        self.d_model, self.n_heads = d_model, n_heads
        self.head_dim_nope, self.head_dim_rope, self.v_head_dim = head_dim_nope, head_dim_rope, v_head_dim
        self.kv_lora_rank, self.q_lora_rank = kv_lora_rank, q_lora_rank
        self.use_rope, self.rope_theta = use_rope, rope_theta
        qk_dim = head_dim_nope + head_dim_rope
        self.scale = qk_dim**-0.5
        if q_lora_rank is None:
            self.wq = nn.Linear(d_model, n_heads * qk_dim, bias=False)
        else:
            self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)  # W_dq
            self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
            self.wq_b = nn.Linear(q_lora_rank, n_heads * qk_dim, bias=False)  # W_uq
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + head_dim_rope, bias=False)  # [W_dkv; W_kr]
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, n_heads * (head_dim_nope + v_head_dim), bias=False)  # [W_uk; W_uv]
        self.wo = nn.Linear(n_heads * v_head_dim, d_model, bias=False)

    @property
    def cache_numbers_per_token(self) -> int:
        """Numbers cached per token: r + R (multi-head attention would cache H · (nope + R + v))."""
        return self.kv_lora_rank + self.head_dim_rope

    def _up_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """W_uk [H, nope, r] and W_uv [H, v, r]."""
        w = self.wkv_b.weight.view(self.n_heads, self.head_dim_nope + self.v_head_dim, self.kv_lora_rank)
        return w[:, : self.head_dim_nope], w[:, self.head_dim_nope :]

    def forward(
        self, x: torch.Tensor, cache: MLACache | None = None, use_cache: bool = False
    ) -> tuple[torch.Tensor, MLACache | None]:
        """x [B, T, d_model] → y [B, T, d_model], causal.

        With ``cache`` (or ``use_cache=True``, which starts one), the new tokens' c_kv and k_rope are appended
        in place and the cache is returned. With past tokens in the cache, attention runs in the absorbed form
        over the latents; otherwise in the explicit per-head form.
        """
        checks.tensor("x", x, rank=3)
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape [B, T, d_model] with d_model = {self.d_model}, got {tuple(x.shape)}")
        B, T, _ = x.shape
        H, nope, R, r = self.n_heads, self.head_dim_nope, self.head_dim_rope, self.kv_lora_rank
        if cache is not None:
            if not isinstance(cache, MLACache):
                raise TypeError(f"cache must be an MLACache or None, got {type(cache).__name__}")
            if (cache.batch, cache.kv_lora_rank, cache.rope_dim) != (B, r, R):
                raise ValueError(
                    f"cache must hold (B, kv_lora_rank, rope_dim) = {(B, r, R)}, got "
                    f"{(cache.batch, cache.kv_lora_rank, cache.rope_dim)}"
                )
        N = cache.length if cache is not None else 0

        # 1. queries: [q_nope, q_rope] per head
        q = self.wq(x) if self.q_lora_rank is None else self.wq_b(self.q_norm(self.wq_a(x)))
        q = q.view(B, T, H, nope + R).transpose(1, 2)  # (B, H, T, nope + R)
        q_nope, q_rope = q[..., :nope], q[..., nope:]
        # 2. the latent and the shared rope key: all that will be cached
        c_kv, k_rope = self.wkv_a(x).split([r, R], dim=-1)  # (B, T, r), (B, T, R)
        c_kv = self.kv_norm(c_kv)
        if self.use_rope:
            positions = torch.arange(N, N + T, device=x.device)
            q_rope, k_rope = (
                rope(q_rope, positions, theta=self.rope_theta),
                rope(k_rope, positions, theta=self.rope_theta),
            )
        W_uk, W_uv = self._up_weights()

        if N == 0:
            # 3a. explicit form: up-project per-head keys and values, then ordinary multi-head attention
            k_nope = torch.einsum("hdr,btr->bhtd", W_uk, c_kv)  # (B, H, T, nope)
            v = torch.einsum("hvr,btr->bhtv", W_uv, c_kv)  # (B, H, T, v)
            k = torch.cat([k_nope, k_rope[:, None].expand(B, H, T, R)], dim=-1)  # (B, H, T, nope + R)
            with checks.values_checked():  # projections of the checked x
                o, _ = softmax_attention(torch.cat([q_nope, q_rope], dim=-1), k, v, scale=self.scale, mode="parallel")
        else:
            # 3b. absorbed form: MQA over latents. q_lat = [W_ukᵀ q_nope, q_rope], keys [c_kv, k_rope], values c_kv
            q_lat = torch.cat([torch.einsum("bhtd,hdr->bhtr", q_nope, W_uk), q_rope], dim=-1)  # (B, H, T, r + R)
            k_lat = torch.cat([c_kv, k_rope], dim=-1)[:, None]  # (B, 1, T, r + R)
            # the cache's buffers are passed as views; softmax_attention concatenates them with the new tokens (one
            # copy of r + R numbers per cached token per step, where a fused decoding kernel would read in place)
            past = KVCache.from_tensors(cache.latent[:, None], cache.c_kv[:, None])
            with checks.values_checked():  # projections of the checked x, and the cache's own contents
                o_lat, _ = softmax_attention(
                    q_lat, k_lat, c_kv[:, None], scale=self.scale, initial_state=past, mode="parallel"
                )
            o = torch.einsum("bhtr,hvr->bhtv", o_lat, W_uv)  # (B, H, T, v)

        if cache is None and use_cache:
            cache = MLACache(B, r, R, dtype=c_kv.dtype, device=x.device)
        if cache is not None:
            cache.append(c_kv, k_rope)
        y = self.wo(o.transpose(1, 2).reshape(B, T, H * self.v_head_dim))  # (B, T, d_model)
        return y, cache

    def state_nbytes(self, cache: MLACache | None) -> int:
        """Bytes this layer's cache holds: N × (r + R) × B × element size (0 without a cache)."""
        return 0 if cache is None else cache.nbytes
