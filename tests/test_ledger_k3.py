"""The ledger's Kimi K3 rows: the title's ratio with K3's config count beside the article's, K3's layers and linear
share from its config (lineage.schedules.KIMI_K3_CONFIG), each verdict computed from the value it tests."""

from __future__ import annotations

import dataclasses

import pytest

from lineage import schedules
from lineage.measure import footprints
from lineage.teach import ledger

K3 = schedules.KIMI_K3_CONFIG


def _rows() -> dict[str, ledger.LedgerRow]:
    return {r.number: r for r in ledger.ledger()}


def test_the_title_ratio_is_shown_with_both_counts_and_its_arithmetic():
    rows = _rows()
    article = rows["GPT-2s in one Kimi K3 (the article's count)"]
    config = rows["GPT-2s in one Kimi K3 (its config's count)"]
    assert article.article == config.article == "22,580×"
    assert article.verdict == "verified" and f"2.8T / 124M = {2.8e12 / 124e6:,.1f}" in article.app
    assert f"2.78T / 124M = {K3['total_params'] / 124e6:,.1f}" in config.app
    assert config.verdict == "differs"  # 22,419, not 22,580
    assert config.app.startswith(f"{int(K3['total_params'] / 124e6):,}×")


def test_the_config_ratio_verdict_follows_the_count(monkeypatch):
    """Give K3 the article's 2.8T as its config count: the row's verdict turns to verified."""
    fact = dataclasses.replace(footprints.PARAMETER_FACTS["kimi-k3"], parameters=2_800_000_000_000)
    monkeypatch.setitem(footprints.PARAMETER_FACTS, "kimi-k3", fact)
    assert _rows()["GPT-2s in one Kimi K3 (its config's count)"].verdict == "verified"


def test_k3_layer_rows_are_counted_on_the_config():
    rows = _rows()
    n, n_mla = K3["num_hidden_layers"], len(K3["full_attn_layers"])
    layers, share = rows["Kimi K3's layers"], rows["Kimi K3's linear share"]
    assert layers.app.startswith(f"{n} layers: {n - n_mla} KDA, {n_mla} MLA at 4, 8, …, 92, 93")
    assert layers.verdict == "quoted only" and layers.source  # the article gives no count
    assert f"{n - n_mla} of {n} layers KDA = {(n - n_mla) / n:.1%}" in share.app and "not strictly 3:1" in share.app
    assert share.verdict == "verified"  # 74.2%, within two points of the article's 75%
    cache = rows["Kimi K3's KV cache at 1M, vs all-MLA"]
    assert f"−{1 - n_mla / n:.1%} {ledger.SAVING_CACHE}" in cache.app


def test_k3_share_verdict_follows_the_schedule(monkeypatch):
    """A K3 with MLA every other layer is half linear: the share row must say it differs from the article's 75%."""
    halved = dict(K3, full_attn_layers=tuple(range(2, 94, 2)))
    monkeypatch.setitem(footprints.MODELS, "kimi-k3", footprints.kimi_k3_spec(halved))
    rows = _rows()
    assert rows["Kimi K3's linear share"].verdict == "differs"
    assert rows["Kimi K3's KV cache at 1M, vs all-MLA"].verdict == "differs"


def test_hybrid_saving_against_all_mha_is_larger_and_named():
    mla = ledger.hybrid_saving("kimi-k3", ledger.ONE_M)
    mha = ledger.hybrid_saving("kimi-k3", ledger.ONE_M, against="mha")
    assert (mla.against, mha.against) == ("mla", "mha")
    assert mha.cache > mla.cache and mha.total > mla.total
    per_token_mha = 2 * K3["num_attention_heads"] * K3["kda_head_dim"]
    per_token_mla = K3["kv_lora_rank"] + K3["qk_rope_head_dim"]
    assert 1 - mha.cache == pytest.approx((1 - mla.cache) * per_token_mla / per_token_mha, rel=1e-12)
