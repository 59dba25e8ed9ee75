"""The KV cache page (app_pages/kv_cache.py): follows its controls, animates as the house rules say, and prints
exactly what ``lineage`` computes for the same inputs (the cache's bytes, the bytes moved, the tiles visited)."""

from __future__ import annotations

import numpy as np
import torch

from lineage.ops.io_cost import standard_attention_io_bytes, tiled_attention_io_bytes
from lineage.ops.kv_cache import KVCache
from lineage.teach import stage_runs
from tests.app.util import assert_fixed_colour_range, figure, frames_z, metrics, rerun, run_page


def cache_nbytes(n_heads: int, head_dim: int, T: int) -> int:
    cache = KVCache(1, n_heads, head_dim, head_dim)
    cache.append(torch.zeros(1, n_heads, T, head_dim), torch.zeros(1, n_heads, T, head_dim))
    return cache.nbytes


def test_kv_cache_page():
    at = run_page("kv_cache", kv_cache_inputs="random")
    run = stage_runs.run_softmax(32, 4, 16, 0, block_size=8)
    shown = metrics(at)
    assert shown["layer's cache after 32 tokens"] == f"{cache_nbytes(4, 16, 32):,} bytes" == "16,384 bytes"
    assert shown["one head's cache"] == f"{cache_nbytes(1, 16, 32):,} bytes"
    assert shown["tiled vs standard output"] == f"{run.err_tiled:.1e}"
    assert shown["bytes moved, standard"] == f"{standard_attention_io_bytes(32, 16).total:,}"
    assert shown["bytes moved, tiled"] == f"{tiled_attention_io_bytes(32, 16, block_size=8).total:,}"
    growth = figure(at, "Head 0's cache")
    assert len(growth["frames"]) == 32
    assert_fixed_colour_range(growth)
    np.testing.assert_allclose(frames_z(growth, 0)[-1], run.trace.keys.T, rtol=1e-6)
    traffic = figure(at, "Bytes in head 0's cache")
    np.testing.assert_array_equal(traffic["data"][0]["y"], run.trace.cache_bytes)
    tiles = figure(at, "Online softmax")
    assert len(tiles["frames"]) == len(run.tiled.q_block) == 10  # 4 query blocks: 1 + 2 + 3 + 4 tiles
    assert_fixed_colour_range(tiles)

    at.slider(key="kv_cache_T").set_value(24)
    at.slider(key="kv_cache_heads").set_value(2)
    at.select_slider(key="kv_cache_block").set_value(16)
    rerun(at)
    assert metrics(at)["layer's cache after 24 tokens"] == f"{cache_nbytes(2, 16, 24):,} bytes"
    assert len(figure(at, "Head 0's cache")["frames"]) == 24
    assert len(figure(at, "Online softmax")["frames"]) == 3  # blocks of 16 over 24 tokens: 1 + 2 tiles
    assert metrics(at)["bytes moved, tiled"] == f"{tiled_attention_io_bytes(24, 16, block_size=16).total:,}"

    at.query_params["kv_cache_step"] = "2"
    rerun(at)
    assert figure(at, "Head 0's cache")["layout"]["sliders"][0]["active"] == 2
