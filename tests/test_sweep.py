"""The sweep: a grid file becomes independent points, every finished point is appended at once, a second run
resumes, and a local process pool and Ray produce the same results point for point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lineage.__main__ import main
from lineage.train import sweep

ROOT = Path(__file__).resolve().parents[1]

# Two mechanisms × two learning rates at one tiny size, plus a second block (another front end, one impossible
# size): 5 points that train in well under a second each.
TINY_GRID = {
    "about": "the test grid",
    "blocks": [
        {
            "mixers": ["softmax", "deltanet"], "pairs": [2], "lengths": [16], "widths": [16], "lrs": [0.001, 0.003],
            "seeds": [0], "vocab": 16, "heads": 2, "batch": 8, "steps": 4, "eval_every": 2, "target": 1.0,
        },
        {
            "mixers": ["deltanet"], "front_ends": ["none"], "pairs": [2, 8], "lengths": [16], "widths": [16],
            "lrs": [0.001], "seeds": [1], "vocab": 16, "heads": 2, "batch": 8, "steps": 4, "eval_every": 2,
            "target": 1.0,
        },
    ],
}  # fmt: skip


@pytest.fixture
def grid(tmp_path):
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(TINY_GRID))
    return path


def test_a_grid_file_becomes_its_cross_product_without_repeats_or_impossible_points(grid):
    points, skipped = sweep.points_of(sweep.read_grid(grid))
    assert skipped == 1  # 8 pairs do not fit in 16 tokens
    described = [(p.model["mixer"], p.model["front_end"], p.train["lr"], p.seed) for p in points]
    assert described == [
        ("softmax", "conv", 0.001, 0), ("softmax", "conv", 0.003, 0),
        ("deltanet", "conv", 0.001, 0), ("deltanet", "conv", 0.003, 0),
        ("deltanet", "none", 0.001, 1),
    ]  # fmt: skip
    assert len({p.key for p in points}) == 5
    again, _ = sweep.points_of(sweep.read_grid(grid) * 2)
    assert [p.key for p in again] == [p.key for p in points], "a point in two blocks is trained once"


def test_a_block_with_patience_gives_its_points_a_new_key_and_without_it_the_first_records_keys_stay():
    """Patience came after the first record: off (0), it is left out of a point's key, so that record's points keep
    theirs and a resumed sweep skips them; on, it sets the point apart."""
    block = TINY_GRID["blocks"][0] | {"mixers": ["deltanet"], "lrs": [0.001]}
    (off,), _ = sweep.points_of([sweep.Block.from_dict(block)])
    (on,), _ = sweep.points_of([sweep.Block.from_dict(block | {"patience": 5, "min_delta": 0.02})])
    assert on.train["patience"] == 5 and on.train["min_delta"] == 0.02 and off.train["patience"] == 0
    before = {k: v for k, v in off.train.items() if k not in ("patience", "min_delta")}
    assert off.key == sweep.Point(off.task, off.model, before, off.seed).key != on.key
    first = [json.loads(line)["key"] for line in (ROOT / "data" / "learned_memory_sweep.jsonl").open()]
    cpu, _ = sweep.points_of(sweep.read_grid(ROOT / "data" / "learned_memory_grid_cpu.json"))
    assert set(first) <= {p.key for p in cpu}, "the first record still resumes"


@pytest.mark.parametrize(
    "content, match",
    [
        ({"mixers": ["softmax"], "colour": "red"}, "unknown key\\(s\\) colour; allowed: task, mixers"),
        ({"lrs": 0.001}, "block.lrs must be a non-empty list, got 0.001"),
        ({"blocks": [], "about": ""}, "'blocks' must be a non-empty list"),
        ({"blocks": [{"seeds": []}]}, "blocks\\[0\\].seeds must be a non-empty list"),
        ({"blocks": [{}], "notes": 1}, "unknown key\\(s\\) notes; allowed: blocks, about"),
    ],
)
def test_bad_grid_files_say_what_is_wrong_and_what_is_allowed(tmp_path, content, match):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ValueError, match=match):
        sweep.read_grid(path)


def test_a_missing_or_broken_grid_file_is_named(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        sweep.read_grid(tmp_path / "none.json")
    (tmp_path / "b.json").write_text("{")
    with pytest.raises(ValueError, match="is not JSON"):
        sweep.read_grid(tmp_path / "b.json")


def test_results_are_appended_as_points_finish_and_a_second_run_resumes(grid, tmp_path):
    points, _ = sweep.points_of(sweep.read_grid(grid))
    out = tmp_path / "r.jsonl"
    results = sweep.Results.open(out)
    seen = []

    def on_finish(point, result, n):
        seen.append(n)
        assert len(out.read_text().splitlines()) == n, "each point is on disk before the next is reported"

    ran = sweep.sweep(points[:3], results, sweep.run_info("test", "local"), workers=1, on_finish=on_finish)
    assert ran == 3 and seen == [1, 2, 3]
    with out.open("a") as f:
        f.write('{"key": "torn')  # a crash in the middle of a write
    resumed = sweep.Results.open(out)
    assert resumed.torn == 1 and set(resumed.done) == {p.key for p in points[:3]}
    assert sweep.sweep(points, resumed, sweep.run_info("test", "local"), workers=2) == 2
    lines = sweep.read_results(out)
    assert sorted(r["key"] for r in lines) == sorted(p.key for p in points)
    for r in lines:
        p = next(p for p in points if p.key == r["key"])
        assert r["result"]["model"] == p.model and r["result"]["train"] == p.train and r["result"]["seed"] == p.seed


def test_a_local_pool_and_ray_give_the_same_results_point_for_point(grid, tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional requirement (requirements-dev.txt)")
    points, _ = sweep.points_of(sweep.read_grid(grid))
    local, ray = sweep.Results.open(tmp_path / "local.jsonl"), sweep.Results.open(tmp_path / "ray.jsonl")
    sweep.sweep(points, local, sweep.run_info("test", "local"), workers=2)
    sweep.sweep(points, ray, sweep.run_info("test", "ray"), use_ray=True, workers=2)
    a, b = sweep.read_results(local.path), sweep.read_results(ray.path)
    assert len(a) == len(b) == len(points)
    by_key = {r["key"]: r["result"] for r in b}
    for r in a:
        other = by_key[r["key"]]
        assert r["result"]["loss"] == other["loss"], "1 thread per point: bit for bit on one machine"
        assert r["result"]["eval_accuracy"] == other["eval_accuracy"]


def test_the_command_runs_a_grid_and_a_second_run_only_resumes(grid, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert main(["sweep", str(grid), "--out", str(out), "--workers", "2"]) == 0
    err = capsys.readouterr().err
    assert "5 point(s) in the grid (1 impossible ones left out), 0 already in" in err
    assert "at most about" in err and "s a step" in err and "[5/5]" in err
    lines = sweep.read_results(out)
    assert len(lines) == 5 and all(r["run"]["command"].startswith("python -m lineage sweep") for r in lines)
    assert main(["sweep", str(grid), "--out", str(out)]) == 0
    assert "5 already in" in capsys.readouterr().err
    assert len(sweep.read_results(out)) == 5


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--out", "/no/such/folder/r.jsonl"],
            "--out '/no/such/folder/r.jsonl': the folder '/no/such/folder' does not",
        ),
        (["--out", "{tmp}"], "is a directory"),
        (["--out", "{tmp}/r.jsonl", "--workers", "0"], "--workers must be ≥ 1, got 0"),
        (["--out", "{tmp}/r.jsonl", "--ray", "10.0.0.1:6379", "--workers", "2"], "--workers applies only on this"),
        (["--out", "{tmp}/r.jsonl", "--device", "gpu0"], "--device='gpu0' is not a device name; use cpu, cuda, cuda:N"),
        (["--out", "{tmp}/r.jsonl", "--ray", "--device", "cpu"], "--device applies only on this machine's pool"),
    ]
    + (
        []
        if torch.cuda.is_available()
        else [(["--out", "{tmp}/r.jsonl", "--device", "cuda"], "--device='cuda' but CUDA is not available")]
    ),
)
def test_the_command_refuses_bad_requests_before_any_work(grid, tmp_path, capsys, extra, message):
    argv = ["sweep", str(grid), *[x.format(tmp=tmp_path) for x in extra]]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1], err


def test_a_dry_run_lists_the_points_and_trains_nothing(grid, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert main(["sweep", str(grid), "--out", str(out), "--dry-run"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == "softmax (conv) mqar 2 pairs, T 16, width 16, lr 0.001, seed 0" and len(listed) == 5
    assert out.read_text() == ""


def test_stopping_the_command_keeps_every_finished_point_and_says_so(grid, tmp_path):
    """SIGTERM (or Ctrl-C) while points are in flight: the finished ones stay in the file, the message counts them,
    and the same command resumes from there."""
    import signal
    import subprocess
    import sys
    import time

    slow = json.loads(grid.read_text())
    slow["blocks"][1]["steps"] = 100_000  # the last point never finishes on its own
    grid.write_text(json.dumps(slow))
    out = tmp_path / "r.jsonl"
    argv = [sys.executable, "-m", "lineage", "sweep", str(grid), "--out", str(out), "--workers", "1"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(sweep.read_results(out) if out.exists() else []) < 4:
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert f"interrupted: 4 of 5 finished point(s) kept in {out}. Run the same command to resume." in err
    assert len(sweep.read_results(out)) == 4 and "Traceback" not in err


def test_a_points_device_is_where_it_trains_and_not_part_of_its_key(grid, monkeypatch):
    """``--device`` reaches the training call; the key leaves it out, so a record names its device in each result
    and is kept in a file of its own rather than told apart by key."""
    on_cpu, _ = sweep.points_of(sweep.read_grid(grid))
    on_gpu, _ = sweep.points_of(sweep.read_grid(grid), device="cuda")
    assert [p.key for p in on_cpu] == [p.key for p in on_gpu]
    assert {p.device for p in on_cpu} == {"cpu"} and {p.device for p in on_gpu} == {"cuda"}
    asked = []

    def fake_train(task, model, cfg, *, seed, device):
        asked.append(device)
        raise RuntimeError("stop here")

    monkeypatch.setattr("lineage.train.loop.train", fake_train)
    with pytest.raises(RuntimeError, match="stop here"):
        sweep.run_point(on_gpu[0])
    assert asked == ["cuda"]
