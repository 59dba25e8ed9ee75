"""IO accounting (FlashAttention §3.2) and GPT-2's recompute cost model: exact counts and how they scale."""

from __future__ import annotations

import numpy as np
import pytest

from lineage.ops.io_cost import recompute_generation_cost, standard_attention_io_bytes, tiled_attention_io_bytes


def quadratic_part(io_of_T, T: int) -> int:
    """For bytes(T) = a·T² + b·T, bytes(2T) − 2·bytes(T) = 2a·T²: the linear (T·D) traffic cancels."""
    return io_of_T(2 * T) - 2 * io_of_T(T)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_io_counts_scale_as_the_paper_says(causal):
    T, D, block = 4096, 64, 64
    std = standard_attention_io_bytes(T, D, causal=causal)
    tiled = tiled_attention_io_bytes(T, D, block_size=block, causal=causal)
    # the saving is ~2·block/D for the full matrix (block = D here: 2×), and more when causal
    assert tiled.total < std.total / (3 if causal else 1.9)
    assert tiled.writes < std.writes / 100, "tiled writes only O, never a T × T matrix"
    assert std.total == 4 * standard_attention_io_bytes(T, D, bytes_per_element=1, causal=causal).total

    def standard(D):
        return lambda T: standard_attention_io_bytes(T, D, causal=causal).total

    assert quadratic_part(standard(D), 2 * T) == 4 * quadratic_part(standard(D), T), "doubling T quadruples S/P"
    assert quadratic_part(standard(2 * D), T) == quadratic_part(standard(D), T), "the T × T part ignores D"


def test_full_tiled_io_grows_as_T_squared_over_block():
    T, D, block = 1024, 64, 64

    def tiled(block):
        return lambda T: tiled_attention_io_bytes(T, D, block_size=block, causal=False).total

    assert quadratic_part(tiled(block), 2 * T) == 4 * quadratic_part(tiled(block), T)
    assert quadratic_part(tiled(block), T) == 2 * quadratic_part(tiled(2 * block), T), "twice the block, half the K/V"


def test_causal_io_is_cheaper_tiled_and_dearer_standard():
    T, D = 2048, 64
    causal = tiled_attention_io_bytes(T, D, block_size=64)
    full = tiled_attention_io_bytes(T, D, block_size=64, causal=False)
    assert causal.total < 0.6 * full.total, "causal tiling skips the blocks above the diagonal"
    assert standard_attention_io_bytes(T, D).total > standard_attention_io_bytes(T, D, causal=False).total


def test_recompute_cost_model():
    n, d = 50, 64
    c = recompute_generation_cost(n, d)
    assert c.rows_recompute.sum() == n * (n + 1) // 2 and c.rows_cached.sum() == n
    assert c.flops_recompute[0] == c.flops_cached[0], "the first token has nothing to recompute"
    assert np.all(c.flops_recompute[1:] > c.flops_cached[1:])
    ratio = c.flops_recompute / c.flops_cached
    assert np.all(np.diff(ratio) > 0), "recompute falls further behind as the context grows"
    per_row_projection = c.flops_cached[0] - 4 * d  # one row, attention over N = 1 key costs 4d
    extra = c.flops_recompute - c.flops_cached
    attn_extra = 4 * d * c.position * (c.position - 1)
    np.testing.assert_array_equal(extra, (c.position - 1) * per_row_projection + attn_extra)
    c2 = recompute_generation_cost(n, d, n_layers=3)
    np.testing.assert_array_equal(c2.flops_recompute, 3 * c.flops_recompute)


def test_bad_sizes():
    with pytest.raises(ValueError, match="T must be >= 1"):
        standard_attention_io_bytes(0, 64)
    with pytest.raises(ValueError, match="block_size"):
        tiled_attention_io_bytes(64, 64, block_size=0)
    with pytest.raises(TypeError, match="causal must be True or False"):
        standard_attention_io_bytes(64, 64, causal=1)
    with pytest.raises(ValueError, match="n_tokens"):
        recompute_generation_cost(0, 64)
