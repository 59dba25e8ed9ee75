"""The ledger (lineage.teach.ledger): rows computed from their inputs, verdicts computed from what the row tests,
quoted rows cite, rows keyword-only; and the FLOP counter its cost rows use, against torch's own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import lineage
from lineage import schedules
from lineage.measure import flops
from lineage.measure.flops import count_flops
from lineage.models.lm import mixer_title
from lineage.ops import native
from lineage.teach import ledger
from lineage.train.sweep import read_results


def test_ledger_rows_are_computed_from_their_inputs():
    rows = {r.number.split(" (")[0]: r for r in ledger.ledger()}
    cut = rows["KV cache, hybrid vs all-MLA"]
    assert cut.verdict == "verified" and "74.1%" in cut.app
    every_other = schedules.periodic_schedule(27, 2)
    changed = {r.number.split(" (")[0]: r for r in ledger.ledger(schedule=every_other)}
    assert changed["KV cache, hybrid vs all-MLA"].app != cut.app
    assert changed["KV cache, hybrid vs all-MLA"].verdict == "differs"
    for r in ledger.ledger():
        assert r.verdict in ("verified", "differs", "quoted only") and r.page
        if r.how == "quoted" or r.verdict == "quoted only":
            assert r.source  # every quoted row says where it comes from


def test_decode_ratio_rises_with_batch_and_stays_below_six():
    r = ledger.decode_ratio(np.array([1, 16, 1 << 20]), ledger.ONE_M)
    assert np.all(np.diff(r) > 0) and 2.0 < r[0] < 3.0 and r[-1] < 27 / 7 + 0.01
    assert ledger.decode_ratio(1, 1024) < r[0]  # at a short context the weights dominate even more


def test_a_row_is_written_with_its_field_names():
    fields = {f.name: "x" for f in dataclasses.fields(ledger.LedgerRow)}
    assert ledger.LedgerRow(**fields).verdict == "x"
    with pytest.raises(TypeError):
        ledger.LedgerRow(*fields.values())  # positional rows are refused: eight strings in a row are easy to swap


def test_every_computed_verdict_follows_its_test(monkeypatch):
    """Swap the counted growth for one where softmax grows linearly and the chunked form quadratically: the two cost
    rows must turn to "differs" (their verdicts are computed, not typed)."""
    rows = {r.number: r for r in ledger.ledger()}
    cost, chunk = rows["Attention cost, softmax → linear"], rows["Chunked delta rule cost"]
    assert cost.verdict == chunk.verdict == "verified"
    wrong = ledger.CountedGrowth(n=8, d=4, softmax=(10, 20), linear=(10, 20), chunk_delta=(10, 40))
    monkeypatch.setattr(ledger, "counted_growth", lambda: wrong)
    rows = {r.number: r for r in ledger.ledger()}
    assert rows["Attention cost, softmax → linear"].verdict == "differs"
    assert rows["Chunked delta rule cost"].verdict == "differs"
    assert "2.00×" in rows["Attention cost, softmax → linear"].why  # the counted growth is said on the row


def test_the_counted_growth_is_quadratic_for_softmax_and_linear_for_the_rest():
    counted = ledger.counted_growth()
    assert counted.softmax[1] == 4 * counted.softmax[0]
    assert counted.linear[1] == 2 * counted.linear[0]
    assert counted.chunk_delta[1] == 2 * counted.chunk_delta[0]
    assert counted.quadratic_to_linear and counted.chunk_linear


def _ops(T: int = 128, H: int = 2, D: int = 32):
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, H, T, D, generator=gen) for _ in range(3))
    beta = torch.rand(1, H, T, generator=gen)
    g = -torch.rand(1, H, T, D, generator=gen)
    return {
        "softmax": lambda: lineage.softmax_attention(q, k, v, mode="parallel"),
        "linear attention": lambda: lineage.linear_attention(q, k, v, mode="chunk", chunk_size=32),
        "deltanet": lambda: lineage.deltanet(q, k, v, beta, mode="chunk", chunk_size=32),
        "kda": lambda: lineage.kda(q, k, v, g, beta, mode="chunk", chunk_size=32),
        "gla": lambda: lineage.gla(q, k, v, g, mode="chunk", chunk_size=32),
    }


@pytest.mark.parametrize("name", list(_ops()))
def test_the_flop_counter_agrees_with_torch(name, monkeypatch):
    """torch's counter (seconds to start, so the app does not use it) counts the same products; it leaves out the
    triangular solves, which ours counts, so those are set aside for the comparison. Both watch the Python steps: ours
    asks for them itself (the compiled loop's products are out of any mode's sight), theirs is given them here."""
    from torch.utils.flop_counter import FlopCounterMode

    fn = _ops()[name]
    with native.python_form(), FlopCounterMode(display=False) as theirs:
        fn()
    assert not native.forced_python()
    monkeypatch.delitem(flops._COUNTERS, torch.linalg.solve_triangular)
    assert count_flops(fn) == theirs.get_total_flops() > 0


def test_the_flop_counter_counts_a_known_product_and_refuses_what_it_cannot_count():
    a, b = torch.ones(3, 4, 5), torch.ones(5, 6)
    assert count_flops(lambda: a @ b) == 2 * 3 * 4 * 5 * 6
    assert count_flops(lambda: torch.einsum("ij,jk->ik", a[0], b)) == 2 * 4 * 5 * 6
    assert count_flops(lambda: a + 1) == 0
    with pytest.raises(ValueError, match="'...'"):
        count_flops(lambda: torch.einsum("...j,jk->...k", a, b))


def test_the_kda_row_says_what_the_learned_memory_record_shows(tmp_path):
    """The row's sentence is computed from the record the Learned memory page reads; without a record it is left out
    rather than typed."""
    from lineage.train import findings

    said = ledger._learned_memory_sentence()
    assert said.startswith(" Small trained models, on the Learned memory page")
    capacity = [r for path in findings.capacity_records() if path.exists() for r in read_results(path)]
    assert said == findings.ledger_sentence(capacity, read_results(findings.RECORD), mixer_title)
    summaries = findings.summarise(r["result"] for r in read_results(findings.RECORD))
    first = ledger._learned_memory_sentence(capacity=[tmp_path / "absent.jsonl"])
    assert findings.most_learned(summaries, mixer_title) in first  # the page's own names and sentence
    assert ledger._learned_memory_sentence(tmp_path / "absent.jsonl", [tmp_path / "absent.jsonl"]) == ""
