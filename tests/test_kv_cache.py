"""The KV cache: amortised O(1) growth, what it holds, its byte counts, and its checks."""

from __future__ import annotations

import math

import pytest
import torch

from lineage.ops.kv_cache import KVCache


def test_kv_cache_grows_geometrically_and_holds_what_was_appended():
    B, Hkv, K, V, n = 2, 3, 4, 5, 300
    cache = KVCache(B, Hkv, K, V, dtype=torch.float32, capacity=2)
    k = torch.randn(B, Hkv, n, K)
    v = torch.randn(B, Hkv, n, V)
    capacities = [cache.capacity]
    for t in range(n):
        cache.append(k[:, :, t : t + 1], v[:, :, t : t + 1])
        if cache.capacity != capacities[-1]:
            capacities.append(cache.capacity)
    assert all(b >= 2 * a for a, b in zip(capacities, capacities[1:], strict=False))
    assert len(capacities) - 1 <= math.ceil(math.log2(n / 2)), "reallocations must be logarithmic in n"
    assert cache.capacity < 2 * n
    assert torch.equal(cache.keys, k) and torch.equal(cache.values, v)
    # N tokens × Hkv heads × (K + V) numbers × B sequences × 4 bytes
    assert cache.nbytes == n * Hkv * (K + V) * B * 4
    assert cache.nbytes == (cache.keys.numel() + cache.values.numel()) * 4
    assert cache.reserved_nbytes == cache.capacity * Hkv * (K + V) * B * 4


def test_kv_cache_multi_token_append_clone_and_from_tensors():
    k, v = torch.randn(1, 2, 7, 4, dtype=torch.float64), torch.randn(1, 2, 7, 3, dtype=torch.float64)
    cache = KVCache.from_tensors(k[:, :, :3], v[:, :, :3])
    copy = cache.clone()
    cache.append(k[:, :, 3:], v[:, :, 3:])
    assert cache.length == 7 and copy.length == 3
    assert torch.equal(cache.keys, k) and torch.equal(copy.values, v[:, :, :3])
    assert cache.nbytes == 7 * 2 * (4 + 3) * 1 * 8


def test_kv_cache_append_rejects_wrong_shapes():
    cache = KVCache(1, 2, 4, 4)
    with pytest.raises(ValueError, match="k_t"):
        cache.append(torch.randn(1, 3, 1, 4), torch.randn(1, 2, 1, 4))
    with pytest.raises(ValueError, match="v_t"):
        cache.append(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 5))
    with pytest.raises(ValueError, match="same number of tokens"):
        cache.append(torch.randn(1, 2, 2, 4), torch.randn(1, 2, 1, 4))
