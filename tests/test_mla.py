"""MLA: RoPE, the latent cache, absorbed decoding == explicit forward, NoPE, bad input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lineage.models.mla import MLA, MLACache, rope
from lineage.ops.softmax import decode_cached
from tests.util import assert_close

D_MODEL, HEADS = 32, 4

# MLA configurations: (kwargs, id)
CONFIGS = [
    ({}, "rope8-r32"),
    ({"use_rope": False}, "nope8-r32"),
    ({"head_dim_rope": 0}, "rope0-r32"),
    ({"q_lora_rank": 12, "kv_lora_rank": 16, "head_dim_rope": 4}, "qlora12-rope4-r16"),
    ({"v_head_dim": 8, "head_dim_nope": 12}, "v8-nope12"),
]


def make_layer(seed=0, dtype=torch.float64, **kwargs):
    torch.manual_seed(seed)
    return MLA(D_MODEL, HEADS, **kwargs).to(dtype)


def explicit_reference(layer: MLA, x: torch.Tensor) -> torch.Tensor:
    """MLA as DeepSeek-V2 writes it (per-head keys and values up-projected), attention by torch's SDPA."""
    B, T, _ = x.shape
    H, nope, R, r = layer.n_heads, layer.head_dim_nope, layer.head_dim_rope, layer.kv_lora_rank
    q = layer.wq(x) if layer.q_lora_rank is None else layer.wq_b(layer.q_norm(layer.wq_a(x)))
    q = q.view(B, T, H, nope + R).transpose(1, 2)
    latent = layer.wkv_a(x)
    c_kv, k_rope = layer.kv_norm(latent[..., :r]), latent[..., r:]
    kv = layer.wkv_b(c_kv).view(B, T, H, nope + layer.v_head_dim).transpose(1, 2)
    k_nope, v = kv[..., :nope], kv[..., nope:]
    q_nope, q_rope = q[..., :nope], q[..., nope:]
    if layer.use_rope:
        pos = torch.arange(T)
        q_rope, k_rope = rope(q_rope, pos), rope(k_rope, pos)
    k = torch.cat([k_nope, k_rope[:, None].expand(B, H, T, R)], dim=-1)
    o = F.scaled_dot_product_attention(torch.cat([q_nope, q_rope], -1), k, v, is_causal=True, scale=layer.scale)
    return layer.wo(o.transpose(1, 2).reshape(B, T, -1))


def test_rope_rotates_by_relative_position():
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 8, generator=gen, dtype=torch.float64), torch.randn(1, 8, generator=gen, dtype=torch.float64)
    pos = torch.tensor

    def score(m, n):
        return (rope(q, pos([m])) * rope(k, pos([n]))).sum()

    assert torch.allclose(score(7, 3), score(104, 100), atol=1e-12), "scores depend on m − n only"
    assert not torch.allclose(score(7, 3), score(7, 4), atol=1e-3)
    x = torch.randn(2, 5, 8, generator=gen, dtype=torch.float64)
    rotated = rope(x, torch.arange(5))
    assert torch.allclose(rotated.norm(dim=-1), x.norm(dim=-1), atol=1e-12), "a rotation keeps the norm"
    assert torch.equal(rope(x[:, :1], torch.tensor([0])), x[:, :1]), "position 0 is the identity"
    with pytest.raises(ValueError, match="even"):
        rope(torch.randn(3, 5), torch.arange(3))
    with pytest.raises(ValueError, match="positions"):
        rope(torch.randn(3, 4), torch.arange(4))


@pytest.mark.parametrize("kwargs", [c[0] for c in CONFIGS], ids=[c[1] for c in CONFIGS])
def test_forward_matches_explicit_reference(kwargs):
    layer = make_layer(**kwargs)
    x = torch.randn(2, 11, D_MODEL, dtype=torch.float64)
    with torch.no_grad():
        y, cache = layer(x)
        assert cache is None
        assert_close(y, explicit_reference(layer, x))


@pytest.mark.parametrize("kwargs", [c[0] for c in CONFIGS], ids=[c[1] for c in CONFIGS])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
def test_cached_decoding_equals_full_forward(kwargs, dtype):
    layer = make_layer(dtype=dtype, **kwargs)
    B, T = 2, 13
    x = torch.randn(B, T, D_MODEL, dtype=dtype)
    with torch.no_grad():
        y, _ = layer(x)
        y_dec, cache = decode_cached(layer, x)  # step 0 explicit, steps 1.. absorbed over the latent cache
        assert_close(y_dec, y, dtype)
        y1, c = layer(x[:, :6], use_cache=True)  # prefill, then a multi-token chunk against the cache
        y2, c = layer(x[:, 6:], cache=c)
        assert_close(torch.cat([y1, y2], 1), y, dtype)
    r, R = layer.kv_lora_rank, layer.head_dim_rope
    assert cache.length == T
    # N tokens × (kv_lora_rank + rope_dim) numbers × B sequences × element size
    assert cache.nbytes == T * (r + R) * B * x.element_size() == layer.state_nbytes(cache)
    assert layer.cache_numbers_per_token == r + R
    # what is cached is the latent itself: c_kv = RMSNorm(W_dkv x)
    latent = layer.wkv_a(x).detach()
    assert_close(cache.c_kv, layer.kv_norm(latent[..., :r]).detach(), dtype)
    if not layer.use_rope and R:
        assert_close(cache.k_rope, latent[..., r:], dtype)


def test_nope_differs_from_rope_and_sees_the_past_as_a_set():
    x = torch.randn(1, 9, D_MODEL, dtype=torch.float64)
    shuffled = torch.cat([x[:, :8][:, torch.randperm(8, generator=torch.Generator().manual_seed(1))], x[:, 8:]], 1)
    with torch.no_grad():
        rope_layer, nope_layer = make_layer(use_rope=True), make_layer(use_rope=False)
        y_rope, y_nope = rope_layer(x)[0], nope_layer(x)[0]
        assert (y_rope - y_nope).abs().max() > 1e-3, "the rotation must change the output"
        # without positions the last token sees its past as an unordered set; with RoPE order matters
        assert_close(nope_layer(shuffled)[0][:, -1], y_nope[:, -1])
        assert (rope_layer(shuffled)[0][:, -1] - y_rope[:, -1]).abs().max() > 1e-6


def test_causality():
    layer = make_layer()
    x = torch.randn(2, 12, D_MODEL, dtype=torch.float64)
    x2 = x.clone()
    x2[:, 7:] += torch.randn_like(x2[:, 7:])
    with torch.no_grad():
        y, _ = layer(x)
        y2, _ = layer(x2)
    assert_close(y2[:, :7], y[:, :7])
    assert (y2[:, 7:] - y[:, 7:]).abs().max() > 1e-3


def test_cache_grows_geometrically_and_is_far_smaller_than_mha():
    cache = MLACache(1, 16, 4, dtype=torch.float32, capacity=1)
    capacities = {cache.capacity}
    for _ in range(100):
        cache.append(torch.randn(1, 1, 16), torch.randn(1, 1, 4))
        capacities.add(cache.capacity)
    assert sorted(capacities) == [2**i for i in range(8)]
    clone = cache.clone()
    cache.append(torch.randn(1, 1, 16), torch.randn(1, 1, 4))
    assert clone.length == 100 and cache.length == 101
    with pytest.raises(ValueError, match="k_rope must have shape"):
        cache.append(torch.randn(1, 1, 16), torch.randn(1, 1, 5))
    layer = make_layer()
    mha_numbers = layer.n_heads * (layer.head_dim_nope + layer.head_dim_rope + layer.v_head_dim)
    assert layer.cache_numbers_per_token < mha_numbers


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kv_lora_rank": 0}, "kv_lora_rank"),
        ({"head_dim_rope": 3}, "head_dim_rope must be even"),
        ({"head_dim_rope": -2}, "head_dim_rope must be an int >= 0"),
        ({"q_lora_rank": 0}, "q_lora_rank"),
        ({"v_head_dim": 0}, "v_head_dim"),
    ],
    ids=["rank0", "rope-odd", "rope-negative", "qrank0", "v0"],
)
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MLA(D_MODEL, HEADS, **kwargs)


def test_odd_rope_dim_is_fine_without_rope():
    layer = make_layer(use_rope=False, head_dim_rope=3)
    x = torch.randn(1, 5, D_MODEL, dtype=torch.float64)
    with torch.no_grad():
        assert_close(decode_cached(layer, x)[0], layer(x)[0])


def test_bad_input():
    layer = make_layer()
    with pytest.raises(ValueError, match="x must have rank 3"):
        layer(torch.randn(4, D_MODEL, dtype=torch.float64))
    with pytest.raises(ValueError, match="d_model"):
        layer(torch.randn(1, 4, D_MODEL + 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="x contains NaN"):
        layer(torch.full((1, 4, D_MODEL), float("nan"), dtype=torch.float64))
    with pytest.raises(TypeError, match="cache must be an MLACache"):
        layer(torch.randn(1, 4, D_MODEL, dtype=torch.float64), cache=object())
    with pytest.raises(ValueError, match="cache must hold"):
        layer(torch.randn(1, 4, D_MODEL, dtype=torch.float64), cache=MLACache(1, 8, 8, dtype=torch.float64))
