"""Training tokens per CPU-second of a step at the capacity record's settings, this tree against another checkout
(the commit before a speed-up), in interleaved rounds of one run; writes the record given by --out, with the CPU's
model: data/learned_memory_throughput.json (an earlier 2-core machine, its model not recorded),
data/learned_memory_throughput_xeon.json (a 2-core Intel Xeon) and data/learned_memory_throughput_epyc.json (a 2-core
AMD EPYC) hold the speed-up against ffc7058 on three machines, each for the commit it names. The Xeon's, for 275057e
(the short convolution in blocks that stay in cache, linear attention's chunked form at the record's width, one span
of chunks under autograd): softmax 2.05x, linear attention 2.06x, DeltaNet 2.19x, Gated DeltaNet 2.40x, KDA 2.84x
(medians of 9 rounds; every round 1.98-2.98x). The EPYC's, for an earlier commit (547e5fc, before those): softmax
1.36x, linear attention 1.46x, DeltaNet 1.80x, Gated DeltaNet 1.91x, KDA 2.17x. The softmax step is bound by its
matrix products, the tanh GELU and the CPU's flash attention at head size 8, none of which this tree changed.
torch.compile does not pay for this step on the EPYC: the compiled step is 1.3x (softmax) to 4.9x (linear attention)
slower than eager after 20-112 s of compiling (scripts/measure_compile.py, data/learned_memory_compile_epyc.json).

    git worktree add /tmp/base <commit>
    python scripts/measure_training_throughput.py --base /tmp/base --out data/learned_memory_throughput.json

Each round runs the step in a fresh interpreter of each tree (``PYTHONPATH`` set to that tree), one torch thread,
and times it in CPU seconds of the timing thread (``time.thread_time``): on a 2-core machine shared with other work
the wall time measures the scheduler as much as the step, the CPU time the step. The step is the same in both
trees: forward, cross-entropy, backward, AdamW (the base commit has no ``lineage.train.loop.train_step``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIXERS = ("softmax", "linear_attention", "deltanet", "gated_deltanet", "kda")
SETTINGS = dict(seq_len=64, n_pairs=16, d_model=64, n_layers=2, n_heads=8, batch=64)  # the capacity record's


def tokens_per_cpu_second(repeats: int) -> dict[str, float]:
    """In the tree on sys.path: each mixer's training step, median CPU seconds of ``repeats`` after one warm-up."""
    import time

    import torch

    from lineage.models.lm import LM, LMConfig, loss_and_accuracy
    from lineage.train.tasks import IGNORE, TaskConfig, make_batch

    torch.set_num_threads(1)
    s = SETTINGS
    batch = make_batch(TaskConfig("mqar", 64, s["seq_len"], s["n_pairs"]), s["batch"], 0)
    out = {}
    for mixer in MIXERS:
        cfg = LMConfig(mixer, 64, s["seq_len"], s["d_model"], s["n_layers"], s["n_heads"])
        model = LM(cfg, 0)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        times = []
        for i in range(repeats + 1):
            start = time.thread_time()
            loss, _ = loss_and_accuracy(model(batch.tokens), batch.targets, IGNORE)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if i:
                times.append(time.thread_time() - start)
        out[mixer] = batch.tokens.numel() / statistics.median(times)
    return out


def in_tree(tree: Path, repeats: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", "--repeats", str(repeats)]
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{tree}: {done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def commit(tree: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True).stdout.strip()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", type=Path, help="a checkout of the commit to measure against")
    p.add_argument("--new", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=7, help="timed steps per mixer per round (median)")
    p.add_argument("--out", type=Path)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(tokens_per_cpu_second(args.repeats)))
        return 0
    from lineage.device import cpu_model  # this tree's (a worker may run in a tree without it)

    if args.base is None or not (args.base / "lineage").is_dir():
        p.error("--base must be a checkout of this repository (git worktree add /tmp/base <commit>)")
    rows: dict[str, list[dict]] = {"base": [], "new": []}
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for name, tree in (("base", args.base), ("new", args.new)):
            rows[name].append(in_tree(tree, args.repeats))
        loads.append(os.getloadavg()[0])
    median = {n: {m: statistics.median(r[m] for r in rs) for m in MIXERS} for n, rs in rows.items()}
    print(
        f"training step, {SETTINGS}: tokens per CPU-second, 1 torch thread, median of {args.rounds} interleaved "
        f"rounds; {os.cpu_count()} cores ({cpu_model()}), load average {min(loads):.1f}–{max(loads):.1f}"
    )
    print(f"{'mixer':<17} {'base tok/s':>11} {'new tok/s':>11} {'new/base':>9}")
    for m in MIXERS:
        base, new = median["base"][m], median["new"][m]
        print(f"{m:<17} {base:>11,.0f} {new:>11,.0f} {new / base:>8.2f}×")
    if args.out:
        record = {
            "command": "python scripts/measure_training_throughput.py " + " ".join(sys.argv[1:]),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "base_commit": commit(args.base),
            "new_commit": commit(args.new),
            "settings": SETTINGS,
            "threads": 1,
            "cpu_count": os.cpu_count(),
            "cpu_model": cpu_model(),
            "load_average": [round(x, 2) for x in loads],
            "unit": "training tokens per CPU-second of the timing thread",
            "median": median,
            "rounds": rows,
        }
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
