"""Measured numbers live in data/, not in docstrings: the record behind the CPU's default chunk length holds it up."""

from __future__ import annotations

import json
import pathlib

import torch

from lineage.ops.recurrence import default_chunk_size

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_cpu_chunk_length_is_the_faster_one_in_its_measured_record():
    record = json.loads((ROOT / "data" / "chunk_size_cpu.json").read_text())
    chosen = str(default_chunk_size(torch.device("cpu")))
    assert record["machine"] and record["command"].startswith("python -m lineage bench")
    for op, by_chunk in record["chunk_ms"].items():
        fastest = min(by_chunk, key=by_chunk.get)
        assert fastest == chosen, f"{op}: the record has C = {fastest} faster than the default {chosen}"
    assert "data/chunk_size_cpu.json" in default_chunk_size.__doc__
    assert " ms" not in default_chunk_size.__doc__, "timings belong in the record, not the docstring"
