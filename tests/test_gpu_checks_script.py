"""scripts/gpu_checks.sh, the one script a lent GPU machine runs, tried on this CPU with the steps a test can afford:
verify and a one-point sweep. Each step's output lands in $OUT/log.txt with its exit code, the record is copied to
$OUT, and a failed step fails the script at the end without stopping the steps after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lineage.train import sweep

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_checks.sh"
TINY = {"mixers": ["softmax"], "pairs": [2], "lengths": [16], "widths": [16], "lrs": [0.003], "seeds": [0]}
TINY |= {"batch": 8, "steps": 4, "eval_every": 2, "seconds": 60}


def run_script(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps(TINY))
    settings = dict(
        DEVICE="cpu",
        PYTHON=sys.executable,
        OUT=str(tmp_path / "out"),
        RECORD=str(tmp_path / "record.jsonl"),
        GRID=str(grid),
        STEPS="verify sweep",
        SWEEP_WORKERS="1",
        TOTAL_SECONDS="240",
    )
    return subprocess.run(
        ["bash", str(SCRIPT)],
        cwd=ROOT,
        env={**os.environ, **settings, **env},
        capture_output=True,
        text=True,
        timeout=400,
    )


def test_the_script_logs_each_step_and_copies_the_record_out(tmp_path):
    done = run_script(tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    log = (tmp_path / "out" / "log.txt").read_text()
    assert "== verify (limit 60 s): " in log and " passed, 0 failed (tolerance 1e-10, fp64)" in log
    assert "device cpu" in log.splitlines()
    assert "== bench" not in log, "only the steps named in STEPS"
    steps = log.splitlines()[-1]
    assert steps.startswith("steps (name, exit, seconds): verify 0 ") and " sweep 0 " in steps, steps
    (line,) = sweep.read_results(tmp_path / "out" / "record.jsonl")
    assert line["result"]["device"] == "cpu" and line["result"]["model"]["mixer"] == "softmax"
    assert "--device cpu --workers 1" in line["run"]["command"]


def test_a_failed_step_fails_the_script_after_the_steps_that_follow_it(tmp_path):
    """A device this machine lacks fails verify; the sweep after it still runs (and fails on the same device)."""
    done = run_script(tmp_path, DEVICE="cuda:99")
    assert done.returncode == 1
    log = (tmp_path / "out" / "log.txt").read_text()
    assert "--device='cuda:99' but" in log.split("== sweep")[0], "verify's own message"
    assert "--device='cuda:99' but" in log.split("== sweep")[1], "the sweep ran after verify failed"
    assert log.splitlines()[-1] == "failed: verify sweep"
