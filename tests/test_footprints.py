"""Memory accounting: hand-checked cache and state sizes, linear/flat growth, parameter counts, validation."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from lineage import schedules
from lineage.measure import footprints
from lineage.measure.footprints import (
    DTYPE_BYTES,
    GPU_PRESETS,
    KIMI_PAPER_CLAIM,
    MAX_SEQ_LEN,
    MODELS,
    PARAMETER_FACTS,
    custom_spec,
    decode_time_lower_bound,
    footprint,
    kv_cache_curve,
    lineage_ratio,
    parameter_count,
    reduction_vs_all_mla,
)
from lineage.schedules import layer_schedule, periodic_schedule

BF16 = 2
ONE_MILLION = 1_000_000


# ---- hand-checked numbers ---------------------------------------------------------------------------------


def test_gpt2_cache_per_token():
    # 2 (K and V) × 12 layers × 768 (12 heads × 64) × 2 bytes
    assert footprint("gpt2", 1).kv_cache_bytes == 2 * 12 * 768 * 2 == 36_864
    assert footprint("gpt2", 1000).kv_cache_bytes == 1000 * 36_864


def test_llama3_8b_cache_per_token():
    # 2 × 32 layers × 8 KV heads × 128 × 2 bytes
    assert footprint("llama3-8b", 1).kv_cache_bytes == 2 * 32 * 8 * 128 * 2 == 131_072


def test_deepseek_v3_mla_cache_per_token():
    # 61 layers × (kv_lora_rank 512 + rope key 64) × 2 bytes
    fp = footprint("deepseek-v3", 1)
    assert fp.kv_cache_bytes == 61 * (512 + 64) * 2
    assert fp.state_bytes == 0


def test_kimi_linear_cache_and_state():
    N = 4096
    fp = footprint("kimi-linear-48b", N)
    assert fp.kv_cache_bytes == N * 7 * 576 * BF16
    assert fp.recurrent_state_bytes == 20 * 32 * 128 * 128 * BF16
    # kernel 4 keeps 3 previous inputs of q, k and v (32 heads × 128 channels each), per KDA layer
    assert fp.conv_state_bytes == 20 * 3 * (3 * 32 * 128) * BF16
    assert fp.state_bytes == fp.recurrent_state_bytes + fp.conv_state_bytes


def test_kimi_linear_schedule():
    spec = MODELS["kimi-linear-48b"]
    assert spec.n_layers == 27
    assert [i + 1 for i, kind in enumerate(spec.layer_kinds) if kind == "mla"] == [4, 8, 12, 16, 20, 24, 27]
    assert spec.layers_of("kda") == tuple(i for i in range(1, 28) if i not in (4, 8, 12, 16, 20, 24, 27))
    assert periodic_schedule(27, 4, include_last=True) == spec.layer_kinds


def test_kimi_reduction_vs_all_mla_at_1m():
    assert reduction_vs_all_mla("kimi-linear-48b", ONE_MILLION) == pytest.approx(1 - 7 / 27, abs=0.01)
    # The cache alone keeps exactly 7 of 27 layers' worth; the fixed KDA state is what moves it off 1 - 7/27.
    kimi = footprint("kimi-linear-48b", ONE_MILLION)
    mla = footprint(footprints.all_mla("kimi-linear-48b"), ONE_MILLION)
    assert Fraction(kimi.kv_cache_bytes, mla.kv_cache_bytes) == Fraction(7, 27)
    assert reduction_vs_all_mla("kimi-linear-48b", ONE_MILLION) < 1 - 7 / 27


def test_reduction_needs_mla_dims():
    with pytest.raises(ValueError, match="kv_lora_rank"):
        reduction_vs_all_mla("gpt2", 1024)


def test_per_layer_breakdown_sums_to_totals():
    fp = footprint("kimi-linear-48b", 1000)
    assert len(fp.per_layer) == 27
    assert sum(layer.kv_cache_bytes for layer in fp.per_layer) == fp.kv_cache_bytes
    assert sum(layer.state_bytes for layer in fp.per_layer) == fp.state_bytes
    for layer in fp.per_layer:
        if layer.kind == "mla":
            assert layer.kv_cache_bytes == 1000 * 576 * BF16 and layer.state_bytes == 0
        else:
            assert layer.kv_cache_bytes == 0 and layer.recurrent_state_bytes == 32 * 128 * 128 * BF16


# ---- growth, dtypes, batch ----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(MODELS))
def test_cache_linear_state_flat(key):
    small, large = footprint(key, 1000), footprint(key, 3000)
    assert large.kv_cache_bytes == 3 * small.kv_cache_bytes > 0
    assert large.kv_cache_bytes == 3000 * small.kv_cache_bytes_per_token
    assert large.state_bytes == small.state_bytes


@pytest.mark.parametrize("key", list(MODELS))
def test_read_bytes_is_cache_plus_state(key):
    fp = footprint(key, 12_345)
    assert fp.read_bytes_per_token == fp.kv_cache_bytes + fp.state_bytes == fp.total_bytes


def test_dtypes_scale_bytes():
    bf16, fp32, fp8 = (footprint("llama3-8b", 100, d) for d in ("bf16", "fp32", "fp8"))
    assert fp32.kv_cache_bytes == 2 * bf16.kv_cache_bytes == 4 * fp8.kv_cache_bytes
    assert DTYPE_BYTES == {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


def test_state_dtype_applies_to_recurrent_state_only():
    bf16 = footprint("kimi-linear-48b", 100)
    wide = footprint("kimi-linear-48b", 100, "bf16", state_dtype="fp32")
    assert wide.recurrent_state_bytes == 20 * 32 * 128 * 128 * 4 == 2 * bf16.recurrent_state_bytes
    assert wide.kv_cache_bytes == bf16.kv_cache_bytes
    assert wide.conv_state_bytes == bf16.conv_state_bytes


def test_batch_scales_cache_and_state_not_weights():
    one, four = footprint("kimi-linear-48b", 100), footprint("kimi-linear-48b", 100, batch=4)
    assert four.kv_cache_bytes == 4 * one.kv_cache_bytes
    assert four.state_bytes == 4 * one.state_bytes
    assert four.weight_bytes_per_token == one.weight_bytes_per_token


def test_curve_matches_footprint():
    lens = [1, 1000, 131_072, ONE_MILLION]
    curve = kv_cache_curve("kimi-linear-48b", lens, "bf16")
    for i, n in enumerate(lens):
        fp = footprint("kimi-linear-48b", n, "bf16")
        assert (curve.kv_cache_bytes[i], curve.state_bytes[i], curve.total_bytes[i]) == (
            fp.kv_cache_bytes,
            fp.state_bytes,
            fp.total_bytes,
        )
    assert curve.kv_cache_bytes.dtype == np.int64


# ---- specs and schedules ------------------------------------------------------------------------------------


def test_mha_caches_all_heads_gqa_caches_kv_heads():
    mha = custom_spec(n_layers=2, n_heads=8, n_kv_heads=2, head_dim=16, layer_kinds="mha")
    gqa = custom_spec(n_layers=2, n_heads=8, n_kv_heads=2, head_dim=16, layer_kinds="gqa")
    assert footprint(mha, 1).kv_cache_bytes == 2 * 2 * 8 * 16 * BF16
    assert footprint(gqa, 1).kv_cache_bytes == 2 * 2 * 2 * 16 * BF16


def test_linear_kinds_state():
    spec = custom_spec(
        n_layers=4, n_heads=4, n_kv_heads=4, head_dim=8, layer_kinds=("linear_attention", "deltanet", "gla", "mamba2")
    )
    layers = footprint(spec, 10, "fp32").per_layer
    H, K, V = 4, 8, 8
    assert layers[0].recurrent_state_bytes == (H * K * V + H * K) * 4  # plus the normaliser z
    assert layers[0].conv_state_bytes == 0
    assert layers[1].conv_state_bytes == 3 * H * (2 * K + V) * 4
    assert layers[2].recurrent_state_bytes == H * K * V * 4 and layers[2].conv_state_bytes == 0
    assert all(layer.kv_cache_bytes == 0 for layer in layers)


def test_layer_schedule():
    assert layer_schedule(5, "gqa", {"mla": [1, 5]}) == ("mla", "gqa", "gqa", "gqa", "mla")
    assert periodic_schedule(8, 4, base="kda", kind="mla") == ("kda",) * 3 + ("mla",) + ("kda",) * 3 + ("mla",)
    with pytest.raises(ValueError, match=r"at\['mla'\]"):
        layer_schedule(5, "gqa", {"mla": [6]})


def test_custom_spec_is_hashable_and_matches_a_preset():
    spec = custom_spec(
        n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128, layer_kinds="gqa", name="my llama", d_model=4096
    )
    assert hash(spec) == hash(dataclasses.replace(spec))
    assert footprint(spec, 777).kv_cache_bytes == footprint("llama3-8b", 777).kv_cache_bytes


GOOD = dict(n_layers=4, n_heads=8, n_kv_heads=2, head_dim=16, layer_kinds="gqa")


@pytest.mark.parametrize(
    "override, field",
    [
        ({"n_layers": 0}, "n_layers"),
        ({"n_heads": -8}, "n_heads"),
        ({"n_kv_heads": 0}, "n_kv_heads"),
        ({"head_dim": 0}, "head_dim"),
        ({"d_model": -1}, "d_model"),
        ({"n_kv_heads": 16}, r"n_kv_heads \(16\) must be <= n_heads \(8\)"),
        ({"n_kv_heads": 3}, r"n_heads \(8\) must be divisible by n_kv_heads \(3\)"),
        ({"layer_kinds": "softmax"}, r"layer_kinds\[0\] must be one of .*'softmax'"),
        ({"layer_kinds": ("gqa", "gqa", "kda", "transformer")}, r"layer_kinds\[3\]"),
        ({"layer_kinds": ("gqa",) * 3}, "one entry per layer"),
        ({"dtype": "int4"}, "dtype must be one of"),
        ({"layer_kinds": "mla", "kv_lora_rank": 0}, "kv_lora_rank"),
        ({"layer_kinds": "mla", "rope_dim": -64}, "rope_dim"),
        ({"layer_kinds": "kda", "linear_heads": 0}, "linear_heads"),
        ({"layer_kinds": "kda", "linear_key_dim": 0}, "linear_key_dim"),
        ({"layer_kinds": "kda", "linear_value_dim": 0}, "linear_value_dim"),
        ({"layer_kinds": "kda", "conv_kernel": 0}, "conv_kernel"),
    ],
    ids=lambda x: x if isinstance(x, str) else "-".join(f"{k}={v}" for k, v in x.items()),
)
def test_custom_spec_rejects(override, field):
    with pytest.raises(ValueError, match=field):
        custom_spec(**{**GOOD, **override})


def test_good_spec_is_accepted():
    assert custom_spec(**GOOD).n_kv_heads == 2


def test_spec_requires_dims_of_its_layer_kinds():
    gpt2 = MODELS["gpt2"]
    with pytest.raises(ValueError, match="linear_heads is required because layer_kinds contains 'kda'"):
        dataclasses.replace(gpt2, layer_kinds=("kda",) * 12)
    with pytest.raises(ValueError, match="kv_lora_rank is required because layer_kinds contains 'mla'"):
        dataclasses.replace(gpt2, layer_kinds=("mla",) * 12)


@pytest.mark.parametrize("key", list(MODELS))
def test_presets_cite_sources(key):
    assert MODELS[key].source and len(MODELS[key].layer_kinds) == MODELS[key].n_layers


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"seq_len": 0}, "seq_len must be >= 1"),
        ({"seq_len": MAX_SEQ_LEN + 1}, "MAX_SEQ_LEN"),
        ({"seq_len": 10, "dtype": "fp64"}, "dtype must be one of"),
        ({"seq_len": 10, "state_dtype": "tf32"}, "state_dtype must be one of"),
        ({"seq_len": 10, "batch": 0}, "batch must be >= 1"),
    ],
    ids=["seq_len-0", "seq_len-too-long", "dtype", "state_dtype", "batch"],
)
def test_footprint_rejects(kwargs, message):
    with pytest.raises(ValueError, match=message):
        footprint("gpt2", **kwargs)


def test_footprint_accepts_max_seq_len_and_rejects_unknown_key():
    assert footprint("gpt2", MAX_SEQ_LEN).kv_cache_bytes == MAX_SEQ_LEN * 36_864
    with pytest.raises(ValueError, match="'gpt-5'"):
        footprint("gpt-5", 10)
    with pytest.raises(ValueError, match="seq_lens must lie in"):
        kv_cache_curve("gpt2", [0, 10])


# ---- parameters ---------------------------------------------------------------------------------------------


def test_gpt2_parameter_count():
    assert parameter_count("gpt2") == 124_439_808
    # nanoGPT's get_num_params() leaves the 1024 × 768 position table out and prints 123.65M.
    assert parameter_count("gpt2") - 1024 * 768 == 123_653_376
    assert PARAMETER_FACTS["gpt2"].parameters == 124_439_808


def test_llama3_8b_parameter_count():
    # FFN width from params.json by model.py's rule: int(1.3 * int(2 * 16384 / 3)) rounded up to 1024s
    assert MODELS["llama3-8b"].weights.d_ff == footprints.llama_ffn_dim(4096, 1024, 1.3) == 14336
    assert parameter_count("llama3-8b") == 8_030_261_248


def test_parameter_count_unknown_for_moe_and_custom():
    assert parameter_count("deepseek-v3") is None
    assert parameter_count("kimi-linear-48b") is None
    assert parameter_count(custom_spec(**GOOD)) is None
    fp = footprint(custom_spec(**GOOD), 10)
    assert fp.weight_bytes is None and fp.weight_bytes_per_token is None


def test_weight_bytes_per_token_is_separate():
    gpt2 = footprint("gpt2", 1024)
    assert gpt2.weight_bytes_per_token == 124_439_808 * BF16
    assert gpt2.read_bytes_per_token == gpt2.kv_cache_bytes  # no state, and weights kept out
    kimi = footprint("kimi-linear-48b", 1024)
    assert kimi.weight_bytes_per_token == 3_000_000_000 * BF16  # nominal 3B activated
    assert "nominal" in kimi.weights_note


def test_lineage_ratio():
    ratio = lineage_ratio()
    k3 = schedules.KIMI_K3_CONFIG["total_params"]
    assert PARAMETER_FACTS["kimi-k3"].parameters == ratio.k3_config == k3
    assert ratio.config_to_nominal == pytest.approx(k3 / 124e6)  # 22,419.4
    assert ratio.config_to_exact == pytest.approx(k3 / 124_439_808)
    assert int(ratio.article_to_nominal) == 22_580  # the article's: 2.8e12 / 124e6 = 22,580.6, truncated
    assert round(ratio.article_to_exact) == 22_501
    assert int(ratio.config_to_nominal) != 22_580  # the config's count does not give the title's number
    assert ratio.arithmetic(k3, 124_000_000) == f"2.78T / 124M = {k3 / 124e6:,.1f}"
    for key in ("kimi-k3", "kimi-k3-article"):
        assert "secondary source" in PARAMETER_FACTS[key].how and PARAMETER_FACTS[key].source


# ---- Kimi K3, from its config ----------------------------------------------------------------------------


K3 = schedules.KIMI_K3_CONFIG


def test_kimi_k3_schedule_is_the_configs():
    spec = MODELS["kimi-k3"]
    assert spec.n_layers == K3["num_hidden_layers"] == len(spec.layer_kinds)
    assert spec.layers_of("mla") == K3["full_attn_layers"]
    assert len(spec.layers_of("kda")) == K3["num_hidden_layers"] - len(K3["full_attn_layers"])
    assert spec.layer_kinds[-2:] == ("mla", "mla")  # MLA every fourth layer and again at the last
    assert spec.layer_kinds == periodic_schedule(K3["num_hidden_layers"], 4, include_last=True)
    assert spec.context_len == K3["max_position_embeddings"] and spec.d_model == K3["hidden_size"]


def test_kimi_k3_cache_and_state_from_the_config():
    N = K3["max_position_embeddings"]
    fp = footprint("kimi-k3", N)
    n_mla = len(K3["full_attn_layers"])
    n_kda = K3["num_hidden_layers"] - n_mla
    H, D = K3["kda_num_heads"], K3["kda_head_dim"]
    assert fp.kv_cache_bytes_per_token == n_mla * (K3["kv_lora_rank"] + K3["qk_rope_head_dim"]) * BF16
    assert fp.kv_cache_bytes == N * fp.kv_cache_bytes_per_token
    assert fp.recurrent_state_bytes == n_kda * H * D * D * BF16
    assert fp.conv_state_bytes == n_kda * (K3["short_conv_kernel_size"] - 1) * H * 3 * D * BF16
    for layer in fp.per_layer:  # per layer: an MLA layer caches, a KDA layer holds its state
        if layer.kind == "mla":
            assert layer.kv_cache_bytes == N * (K3["kv_lora_rank"] + K3["qk_rope_head_dim"]) * BF16
            assert layer.state_bytes == 0
        else:
            assert layer.kv_cache_bytes == 0 and layer.recurrent_state_bytes == H * D * D * BF16
    # vllm PR #50855: one KDA layer's fp32 state is 0.75 MiB per request on each of 8 GPUs
    assert footprint("kimi-k3", 1, state_dtype="fp32").per_layer[0].recurrent_state_bytes / 8 == 0.75 * 2**20


def test_kimi_k3_against_all_mla_and_all_mha():
    N = K3["max_position_embeddings"]
    n_mla, n = len(K3["full_attn_layers"]), K3["num_hidden_layers"]
    fp, mla, mha = (footprint(s, N) for s in ("kimi-k3", footprints.all_mla("kimi-k3"), footprints.all_mha("kimi-k3")))
    assert Fraction(fp.kv_cache_bytes, mla.kv_cache_bytes) == Fraction(n_mla, n)
    assert mha.kv_cache_bytes == N * n * 2 * K3["num_attention_heads"] * K3["kda_head_dim"] * BF16
    assert mla.state_bytes == mha.state_bytes == 0
    assert 1 - fp.total_bytes / mha.total_bytes > 1 - fp.total_bytes / mla.total_bytes > 0.7


def test_kimi_k3_spec_reads_every_value_from_its_config():
    changed = dict(K3, num_hidden_layers=9, full_attn_layers=(4, 8, 9), kda_num_heads=2, total_params=10**12)
    spec = footprints.kimi_k3_spec(changed)
    assert spec.layers_of("mla") == (4, 8, 9) and spec.linear_heads == 2 and spec.params_nominal == 10**12
    assert footprint(spec, 1).recurrent_state_bytes == 6 * 2 * K3["kda_head_dim"] ** 2 * BF16


def test_kimi_claim_cites_paper():
    assert "75%" in KIMI_PAPER_CLAIM.text and "6×" in KIMI_PAPER_CLAIM.text
    assert "2510.26692" in KIMI_PAPER_CLAIM.source


# ---- decode time --------------------------------------------------------------------------------------------


def test_decode_time_lower_bound():
    h100 = GPU_PRESETS["h100-sxm"]
    assert decode_time_lower_bound(3.35e9, h100.bandwidth_bytes_per_s) == pytest.approx(1e-3)
    gpt2 = footprint("gpt2", 1024)
    t = decode_time_lower_bound(gpt2.read_bytes_per_token + gpt2.weight_bytes_per_token, 1e12)
    assert t == pytest.approx((1024 * 36_864 + 124_439_808 * 2) / 1e12)
    arr = decode_time_lower_bound(np.array([0, 4.8e9]), GPU_PRESETS["h200"].bandwidth_bytes_per_s)
    np.testing.assert_allclose(arr, [0.0, 1e-3])


@pytest.mark.parametrize(
    "args, message",
    [((1e9, 0.0), "bandwidth_bytes_per_s"), ((-1, 1e9), "bytes_read"), ((np.array([1.0, -1.0]), 1e9), "bytes_read")],
    ids=["zero-bandwidth", "negative-bytes", "negative-array"],
)
def test_decode_time_rejects(args, message):
    with pytest.raises(ValueError, match=message):
        decode_time_lower_bound(*args)


def test_gpu_presets_have_sources():
    assert GPU_PRESETS["h200"].memory_bytes == 141 * 10**9
    assert GPU_PRESETS["a100-80gb-sxm"].bandwidth_bytes_per_s == 2039e9
    assert all("datasheet" in g.source or "whitepaper" in g.source for g in GPU_PRESETS.values())


def test_kimi_linear_spec_follows_the_schedule():
    assert footprints.kimi_linear_spec(schedules.KIMI_LINEAR_SCHEDULE) is footprints.MODELS["kimi-linear-48b"]
    schedule = schedules.periodic_schedule(6, 3)
    spec = footprints.kimi_linear_spec(schedule)
    layers = footprints.footprint(spec, 1000).per_layer
    assert tuple(layer.kind for layer in layers) == schedule
    assert layers[2].kv_cache_bytes == 1000 * (512 + 64) * 2  # bf16
    assert layers[0].state_bytes == 2 * (32 * 128 * 128 + 3 * 32 * 3 * 128)
    assert spec.params_nominal is None
