"""Softmax attention: parallel ⇄ recurrent ⇄ chunk (tiled), GQA/MQA, the tiled trace, decoding, the layer."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lineage.ops import softmax as softmax_module
from lineage.ops.io_cost import standard_attention_io_bytes
from lineage.ops.kv_cache import KVCache
from lineage.ops.recurrence import default_chunk_size
from lineage.ops.softmax import (
    CausalSelfAttention,
    decode_cached,
    decode_recompute,
    decode_step,
    softmax_attention,
    tiled_softmax_attention,
    trace_softmax,
)
from tests.util import assert_close

MODES = ("parallel", "recurrent", "chunk")
DTYPE_NAME = {torch.float64: "fp64", torch.float32: "fp32"}


def make_qkv(B, H, Hkv, T, K, V, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, K, generator=gen, dtype=dtype)
    k = torch.randn(B, Hkv, T, K, generator=gen, dtype=dtype)
    v = torch.randn(B, Hkv, T, V, generator=gen, dtype=dtype)
    return q, k, v


def reference(q, k, v, *, scale=None, causal=True, past_k=None, past_v=None):
    """The textbook computation in fp64, heads repeated explicitly, one (batch, head) at a time."""
    B, H, T, K = q.shape
    G = H // k.shape[1]
    k = k.double().repeat_interleave(G, dim=1)
    v = v.double().repeat_interleave(G, dim=1)
    N = 0
    if past_k is not None:
        N = past_k.shape[2]
        k = torch.cat([past_k.double().repeat_interleave(G, dim=1), k], dim=2)
        v = torch.cat([past_v.double().repeat_interleave(G, dim=1), v], dim=2)
    scale = K**-0.5 if scale is None else scale
    o = torch.zeros(B, H, T, v.shape[-1], dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            s = q[b, h].double() @ k[b, h].T * scale
            if causal:
                s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(N + 1), float("-inf"))
            o[b, h] = torch.softmax(s, dim=-1) @ v[b, h]
    return o


# (B, H, Hkv, T, K, V, dtype) — odd lengths, T = 1, GQA and MQA
CASES = [
    (2, 4, 4, 37, 16, 8, torch.float64),
    (1, 2, 2, 1, 8, 8, torch.float64),
    (1, 2, 2, 1, 8, 8, torch.float32),
    (2, 4, 2, 37, 16, 8, torch.float64),
    (1, 4, 1, 23, 8, 12, torch.float64),
    (2, 4, 2, 64, 16, 16, torch.float32),
]


def case_id(c):
    B, H, Hkv, T, K, V, dtype = c
    return f"B{B}-H{H}-Hkv{Hkv}-T{T}-K{K}-V{V}-{DTYPE_NAME[dtype]}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("mode", MODES)
def test_modes_match_reference(case, mode):
    B, H, Hkv, T, K, V, dtype = case
    q, k, v = make_qkv(B, H, Hkv, T, K, V, dtype)
    o, state = softmax_attention(q, k, v, mode=mode, chunk_size=16)
    assert o.dtype == dtype and o.shape == (B, H, T, V) and state is None
    assert_close(o, reference(q, k, v).to(dtype), dtype, what=mode)


@pytest.mark.parametrize("block", [1, 3, 16, 64, 37], ids=lambda c: f"C{c}")
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=DTYPE_NAME.get)
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_chunk_equals_parallel_for_every_block_size(block, dtype, causal):
    q, k, v = make_qkv(2, 4, 2, 37, 16, 8, dtype, seed=block)
    o_par, _ = softmax_attention(q, k, v, mode="parallel", causal=causal)
    o_chunk, _ = softmax_attention(q, k, v, mode="chunk", chunk_size=block, causal=causal)
    assert_close(o_chunk, o_par, dtype)
    if causal:
        o_rec, _ = softmax_attention(q, k, v, mode="recurrent", causal=causal)
        assert_close(o_rec, o_par, dtype)


def test_parallel_matches_torch_sdpa_with_gqa():
    q, k, v = make_qkv(2, 6, 2, 29, 16, 16, torch.float64, seed=3)
    o, _ = softmax_attention(q, k, v, scale=0.3, mode="parallel")
    assert_close(o, F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3, enable_gqa=True))


@pytest.mark.parametrize("Hkv", [2, 1], ids=["GQA-Hkv2", "MQA-Hkv1"])
@pytest.mark.parametrize("mode", MODES)
def test_grouped_heads_equal_repeated_heads(Hkv, mode):
    H = 4
    q, k, v = make_qkv(2, H, Hkv, 19, 8, 8, seed=Hkv)
    o, _ = softmax_attention(q, k, v, mode=mode, chunk_size=5)
    G = H // Hkv
    o_rep, _ = softmax_attention(q, k.repeat_interleave(G, 1), v.repeat_interleave(G, 1), mode=mode, chunk_size=5)
    assert_close(o, o_rep)
    if Hkv == 1:
        return
    # and the grouping really is head h -> kv head h // G: a different kv head gives a different output
    o_wrong, _ = softmax_attention(q, k.repeat(1, G, 1, 1), v.repeat(1, G, 1, 1), mode=mode, chunk_size=5)
    assert (o_wrong - o).abs().max() > 1e-3


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("split", [1, 20, 36], ids=lambda t: f"t{t}")
@pytest.mark.parametrize("Hkv", [4, 2], ids=["MHA", "GQA"])
def test_split_with_cache_equals_one_pass(mode, split, Hkv):
    q, k, v = make_qkv(2, 4, Hkv, 37, 8, 6, seed=split)
    o_full, cache_full = softmax_attention(q, k, v, mode=mode, chunk_size=16, output_final_state=True)
    a, b = slice(0, split), slice(split, None)
    o1, cache = softmax_attention(q[:, :, a], k[:, :, a], v[:, :, a], mode=mode, chunk_size=16, output_final_state=True)
    o2, cache2 = softmax_attention(
        q[:, :, b], k[:, :, b], v[:, :, b], mode=mode, chunk_size=16, initial_state=cache, output_final_state=True
    )
    assert_close(torch.cat([o1, o2], dim=2), o_full)
    assert cache.length == split, "initial_state must not be modified"
    assert cache2.length == cache_full.length == 37
    assert torch.equal(cache2.keys, k) and torch.equal(cache2.values, v)


@pytest.mark.parametrize("mode", MODES)
def test_causality(mode):
    t = 11
    q, k, v = make_qkv(1, 2, 2, 25, 8, 8, seed=5)
    o, _ = softmax_attention(q, k, v, mode=mode, chunk_size=4)
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    for x in (q2, k2, v2):
        x[:, :, t + 1 :] += 3.0 * torch.randn_like(x[:, :, t + 1 :])
    o2, _ = softmax_attention(q2, k2, v2, mode=mode, chunk_size=4)
    assert_close(o2[:, :, : t + 1], o[:, :, : t + 1])
    assert (o2[:, :, t + 1 :] - o[:, :, t + 1 :]).abs().max() > 1e-2, "the perturbation must reach later outputs"


def test_decode_step_equals_parallel():
    q, k, v = make_qkv(2, 4, 2, 21, 8, 8, torch.float32, seed=7)
    cache = KVCache(2, 2, 8, 8, dtype=torch.float32, capacity=1)
    outs = [decode_step(q[:, :, t : t + 1], k[:, :, t : t + 1], v[:, :, t : t + 1], cache) for t in range(21)]
    o, _ = softmax_attention(q, k, v, mode="parallel")
    assert_close(torch.cat(outs, dim=2), o, torch.float32)
    assert cache.length == 21


# ---------------------------------------------------------------------------------------------------------------
# The package's op convention: defaults, the device's chunk size, v's dtype; the three mode functions
# ---------------------------------------------------------------------------------------------------------------


def test_defaults_follow_the_package_convention():
    params = inspect.signature(softmax_attention).parameters
    assert params["mode"].default == "chunk"
    assert params["chunk_size"].default is None
    assert params["scale"].default is None and params["initial_state"].default is None
    assert params["output_final_state"].default is False


@pytest.fixture
def tiled_block_sizes(monkeypatch):
    """Record the block size C of every call of the tiled form (the "chunk" mode)."""
    seen, tiled = [], softmax_module._tiled

    def spy(*args, **kwargs):
        seen.append(kwargs["C"])
        return tiled(*args, **kwargs)

    monkeypatch.setattr(softmax_module, "_tiled", spy)
    return seen


def test_default_mode_is_chunk_with_the_devices_chunk_size(tiled_block_sizes):
    q, k, v = make_qkv(2, 4, 2, 45, 8, 8, torch.float32, seed=11)
    o, state = softmax_attention(q, k, v)
    C = default_chunk_size(q.device)
    assert tiled_block_sizes == [C] and C == 32  # the tiled form ran, with the CPU's default
    assert state is None
    o_explicit, _ = softmax_attention(q, k, v, mode="chunk", chunk_size=C)
    assert torch.equal(o, o_explicit)
    assert_close(o, reference(q, k, v).float(), torch.float32)
    softmax_attention(q, k, v, chunk_size=7)
    softmax_attention(q, k, v, mode="parallel")  # no tiling here
    assert tiled_block_sizes == [C, C, 7]


def test_chunk_size_none_follows_the_device(monkeypatch, tiled_block_sizes):
    monkeypatch.setattr(softmax_module, "default_chunk_size", lambda device: 5)
    q, k, v = make_qkv(1, 2, 2, 12, 4, 4, seed=12)
    o, _ = softmax_attention(q, k, v, chunk_size=None)
    assert tiled_block_sizes == [5]
    assert torch.equal(o, softmax_attention(q, k, v, mode="chunk", chunk_size=5)[0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "q_dtype, v_dtype",
    [
        (torch.float32, torch.float64),
        (torch.float64, torch.float32),
        (torch.bfloat16, torch.float32),
        (torch.float32, torch.bfloat16),
    ],
    ids=["q32-v64", "q64-v32", "qbf16-v32", "q32-vbf16"],
)
def test_output_comes_back_in_vs_dtype(mode, q_dtype, v_dtype):
    q, k, v = make_qkv(1, 4, 2, 19, 8, 6, seed=13)
    q, k, v = q.to(q_dtype), k.to(v_dtype), v.to(v_dtype)
    o, _ = softmax_attention(q, k, v, mode=mode, chunk_size=4)
    assert o.dtype == v_dtype and o.shape == (1, 4, 19, 6)
    # computed in fp64 when any input is fp64, else fp32: the only rounding is the inputs' and the final cast
    want = reference(q, k, v).to(v_dtype)
    assert_close(o, want, torch.bfloat16 if torch.bfloat16 in (q_dtype, v_dtype) else torch.float32)
    if v_dtype == torch.float64:
        assert_close(o, want)  # fp64 stays fp64


MODE_FUNCTIONS = {
    "parallel": lambda q, k, v, c, s, C: softmax_module._softmax_parallel(q, k, v, 0.4, True, s, True, c),
    "chunk": lambda q, k, v, c, s, C: softmax_module._softmax_chunk(q, k, v, 0.4, True, s, True, c, C),
    "recurrent": lambda q, k, v, c, s, C: softmax_module._softmax_recurrent(q, k, v, 0.4, s, True, c),
}


@pytest.mark.parametrize("N", [0, 9], ids=["no-cache", "cache9"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=DTYPE_NAME.get)
def test_the_three_mode_functions_agree(N, dtype):
    q, k, v = make_qkv(2, 4, 2, 23, 8, 6, dtype, seed=14 + N)
    past_k, past_v = make_qkv(2, 2, 2, max(N, 1), 8, 6, dtype, seed=99)[1:]
    past = KVCache.from_tensors(past_k[:, :, :N], past_v[:, :, :N]) if N else None
    results = {name: fn(q, k, v, dtype, past, 5) for name, fn in MODE_FUNCTIONS.items()}
    want = reference(q, k, v, scale=0.4, past_k=past_k[:, :, :N] if N else None, past_v=past_v[:, :, :N] if N else None)
    for name, (o, cache) in results.items():
        assert o.dtype == dtype, f"{name} returns the compute dtype; the dispatcher casts"
        assert_close(o, want.to(dtype), dtype, what=name)
        assert_close(o, results["parallel"][0], dtype, what=f"{name} vs parallel")
        assert cache.length == N + 23
        assert torch.equal(cache.keys[:, :, N:], k) and torch.equal(cache.values[:, :, N:], v)
    if past is not None:
        assert past.length == N, "the mode functions must not modify initial_state"
    for name in MODES:  # and the dispatcher returns exactly what its mode function computed
        o, _ = softmax_attention(q, k, v, scale=0.4, initial_state=past, mode=name, chunk_size=5)
        assert torch.equal(o, results[name][0])


# ---------------------------------------------------------------------------------------------------------------
# Tiled trace (and the IO bytes it reports)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", [1, 4, 7, 64], ids=lambda c: f"C{c}")
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_tiled_trace_reproduces_the_softmax_normaliser(block, causal):
    T, K = 29, 8
    q, k, v = make_qkv(2, 2, 1, T, K, 8, seed=block)
    o, trace = tiled_softmax_attention(q, k, v, block_size=block, causal=causal)
    assert_close(o, reference(q, k, v, causal=causal))
    # batch 0, head 0: m is the row max of the masked scaled scores, l the softmax normaliser
    s = q[0, 0] @ k[0, 0].T * K**-0.5
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    row_max = s.max(dim=-1).values
    np.testing.assert_allclose(trace.m_final, row_max.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(trace.l_final, torch.exp(s - row_max[:, None]).sum(-1).numpy(), rtol=1e-12)

    n = math.ceil(T / block)
    pairs = list(zip(trace.q_block.tolist(), trace.k_block.tolist(), strict=True))
    want = [(i, j) for i in range(n) for j in range(n) if j <= i or not causal]
    assert pairs == want
    for i in range(n):
        rows = slice(i * block, min((i + 1) * block, T))
        steps = trace.q_block == i
        m_i, l_i = trace.m_steps[steps][:, : rows.stop - rows.start], trace.l_steps[steps][:, : rows.stop - rows.start]
        assert np.all(np.diff(m_i, axis=0) >= 0), "the running max never decreases"
        np.testing.assert_allclose(m_i[-1], trace.m_final[rows], atol=1e-12)
        np.testing.assert_allclose(l_i[-1], trace.l_final[rows], rtol=1e-12)
        assert np.isnan(trace.m_steps[steps][:, rows.stop - rows.start :]).all(), "rows past T are NaN"


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_tiled_io_matches_the_blocks_the_algorithm_visits(causal):
    T, K, block = 45, 8, 8
    q, k, v = make_qkv(1, 1, 1, T, K, K, torch.float32)
    _, trace = tiled_softmax_attention(q, k, v, block_size=block, causal=causal)
    key_rows = sum(min(block, T - j * block) for j in trace.k_block.tolist())
    expected_reads = (T * K + 2 * K * key_rows) * 4  # Q once, K and V per visited pair
    assert trace.io_tiled.reads == expected_reads
    assert trace.io_tiled.writes == T * K * 4  # O once
    assert trace.io_tiled.total == trace.io_tiled.reads + trace.io_tiled.writes
    assert trace.io_standard == standard_attention_io_bytes(T, K, causal=causal)


# ---------------------------------------------------------------------------------------------------------------
# Decoding trace, recompute, the layer
# ---------------------------------------------------------------------------------------------------------------


def test_trace_softmax_records_rows_outputs_and_cache_bytes():
    q, k, v = make_qkv(2, 3, 3, 17, 8, 6, torch.float32, seed=9)
    tr = trace_softmax(q, k, v)
    o, _ = softmax_attention(q, k, v, mode="parallel")
    T = 17
    np.testing.assert_allclose(tr.outputs, o[0, 0].double().numpy(), atol=1e-5)
    s = q[0, 0].double() @ k[0, 0].double().T * 8**-0.5
    p = torch.softmax(s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")), -1)
    np.testing.assert_allclose(tr.attn, p.numpy(), atol=1e-5)
    assert np.all(tr.attn[np.triu_indices(T, 1)] == 0)
    np.testing.assert_allclose(tr.attn.sum(1), 1, atol=1e-6)
    np.testing.assert_array_equal(tr.keys, k[0, 0].double().numpy())
    np.testing.assert_array_equal(tr.cache_bytes, (np.arange(T) + 1) * (8 + 6) * 4)
    tr2 = trace_softmax(q[0, 0], k[0, 0], v[0, 0])
    np.testing.assert_array_equal(tr2.attn, tr.attn)


def layer_reference(layer, x):
    """The layer's math spelled out with torch's own SDPA."""
    B, T, _ = x.shape
    H, Hkv, hd = layer.n_heads, layer.n_kv_heads, layer.head_dim
    q, k, v = (x @ layer.c_attn.weight.T + layer.c_attn.bias).split([H * hd, Hkv * hd, Hkv * hd], dim=-1)
    q, k, v = (t.view(B, T, -1, hd).transpose(1, 2) for t in (q, k, v))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return o.transpose(1, 2).reshape(B, T, -1) @ layer.c_proj.weight.T + layer.c_proj.bias


@pytest.mark.parametrize("n_kv_heads", [None, 2, 1], ids=["MHA", "GQA", "MQA"])
def test_layer_cached_and_recompute_decoding_equal_full_forward(n_kv_heads):
    torch.manual_seed(0)
    B, T, d, H = 2, 13, 32, 4
    layer = CausalSelfAttention(d, H, n_kv_heads).double()
    x = torch.randn(B, T, d, dtype=torch.float64)
    with torch.no_grad():
        y, none = layer(x)
        assert none is None
        assert_close(y, layer_reference(layer, x))
        y_cached, cache = decode_cached(layer, x)
        assert_close(y_cached, y)
        y_rec, rows = decode_recompute(layer, x)
        assert_close(y_rec, y)
        assert rows == T * (T + 1) // 2
        y1, c = layer(x[:, :5], use_cache=True)
        y2, c = layer(x[:, 5:], cache=c)
        assert_close(torch.cat([y1, y2], 1), y)
    Hkv = n_kv_heads or H
    assert layer.state_nbytes(cache) == T * Hkv * 2 * (d // H) * B * 8 == cache.nbytes
    assert layer.state_nbytes(None) == 0


# ---------------------------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------------------------


def _qkv():
    return make_qkv(1, 4, 2, 5, 8, 8)


@pytest.mark.parametrize(
    "mutate, exc, match",
    [
        (lambda q, k, v: (q[0], k, v), ValueError, "q must have rank 4"),
        (lambda q, k, v: (q, k[0], v), ValueError, "k must have rank 4"),
        (lambda q, k, v: (q[:, :3], k, v), ValueError, "kv heads.*divide"),
        (lambda q, k, v: (q, k[:, :, :4], v), ValueError, "k must have shape"),
        (lambda q, k, v: (q, k, v[:, :, :4]), ValueError, "v must have shape"),
        (lambda q, k, v: (q, k[..., :4], v), ValueError, "k must have shape"),
        (lambda q, k, v: (q, k, v.index_fill(2, torch.tensor([1]), float("nan"))), ValueError, "v contains NaN"),
        (lambda q, k, v: (q.long(), k, v), TypeError, "q must be a floating-point"),
        (lambda q, k, v: (q.numpy(), k, v), TypeError, "q must be a torch.Tensor"),
    ],
    ids=["q-rank", "k-rank", "heads-not-divisible", "T-mismatch", "v-T-mismatch", "K-mismatch", "nan", "int", "numpy"],
)
def test_bad_tensors(mutate, exc, match):
    q, k, v = mutate(*_qkv())
    with pytest.raises(exc, match=match):
        softmax_attention(q, k, v)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"mode": "fast"}, ValueError, "mode"),
        ({"mode": "chunk", "chunk_size": 0}, ValueError, "chunk_size"),
        ({"chunk_size": 2.0}, TypeError, "chunk_size"),
        ({"scale": -1.0}, ValueError, "scale"),
        ({"mode": "recurrent", "causal": False}, ValueError, "causal"),
        ({"causal": 1}, TypeError, "causal"),
        ({"initial_state": torch.zeros(1)}, TypeError, "initial_state"),
        ({"initial_state": KVCache(1, 4, 8, 8)}, ValueError, "initial_state"),
    ],
    ids=[
        "mode",
        "chunk-size-0",
        "chunk-size-float",
        "scale",
        "recurrent-noncausal",
        "causal-int",
        "state-type",
        "state-shape",
    ],
)
def test_bad_options(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        softmax_attention(*_qkv(), **kwargs)


def test_bad_sizes_and_layer_arguments():
    with pytest.raises(ValueError, match="block_size"):
        tiled_softmax_attention(*_qkv(), block_size=0)
    with pytest.raises(ValueError, match="n_heads must divide d_model"):
        CausalSelfAttention(30, 4)
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads"):
        CausalSelfAttention(32, 4, 3)
    layer = CausalSelfAttention(32, 4)
    with pytest.raises(ValueError, match="x must have rank 3"):
        layer(torch.randn(32))
    with pytest.raises(ValueError, match="d_model = 32"):
        layer(torch.randn(1, 3, 16))
    with pytest.raises(ValueError, match="cache"):
        layer(torch.randn(1, 3, 32), cache=KVCache(1, 2, 8, 8))
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        decode_step(*_qkv(), cache=None)
