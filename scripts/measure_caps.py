"""What the app's heavy live runs really cost — peak extra memory and wall time — at the sizes the caps allow.

    python scripts/measure_caps.py                 # one torch thread, as the served app runs; prints the table
    python scripts/measure_caps.py --json artifacts/caps.json
    python scripts/measure_caps.py --scale         # only the stage pages' "At real size" runs (at this device's caps;
                                                   # on a GPU with its peak GPU memory)

Memory is the process's peak resident set above what it held before the run (Linux: the peak, VmHWM, is reset
through /proc/self/clear_refs before each run), so it counts torch's and numpy's buffers alike. Time is the median
of ``--repeats`` runs. The numbers in ``ui/caps.py`` come from this script; its fitted cost model of the Memory lab's
capacity experiment too (least squares on trials·N²·(1, d_k, N), the shape of its outputs and attention rows).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import statistics
from pathlib import Path

import numpy as np
import torch

from lineage import lab, schedules
from lineage.device import get_device
from lineage.measure.timing import repeat_times
from lineage.mechanisms import linear_mechanisms
from lineage.models import hybrid
from lineage.teach import real_size, stage_runs
from ui import caps as app_caps

ROOT = Path(__file__).resolve().parents[1]
MB = 2**20
LIBC = ctypes.CDLL("libc.so.6")  # glibc: malloc_trim


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def release_freed_memory() -> None:
    """Collect garbage and hand freed heap memory back to the OS, so the resident set is what is live."""
    gc.collect()
    LIBC.malloc_trim(0)


def measure(fn, repeats: int) -> tuple[float, float]:
    """(peak extra MB over the resident set before the run, median seconds) of ``fn()``."""
    fn()  # first-call costs (lazy imports) are not the run's
    release_freed_memory()
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    before = _status_kb("VmRSS")
    # the one timer (lineage.measure.timing); each run starts from the same resident set (the release is untimed)
    times = repeat_times(lambda _: fn(), get_device(), repeats, warmup=0, setup=release_freed_memory)
    return (_status_kb("VmHWM") - before) / 1024, statistics.median(times)


def scale_runs(repeats: int) -> dict[str, dict]:
    """Every linear-memory stage's "At real size" run at this device's caps (its largest T and head dim), and at the
    next T up on a CPU (to show where the budget is crossed). On a GPU, the peak GPU memory of each run as well."""
    cap, kind, device = app_caps.caps(), app_caps.device_kind(), get_device()
    K = max(cap.scale_head_dims)
    lengths = (cap.scale_T, 2 * cap.scale_T) if device.type == "cpu" else (cap.scale_T,)
    results = {}
    for T in lengths:
        for m in linear_mechanisms():
            run = lambda m=m, T=T: real_size.run_at_scale(m.key, T, K, cap.scale_heads)  # noqa: E731
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            mb, s = measure(run, repeats)
            name = f"real size {m.key} T={T} K=V={K} heads={cap.scale_heads} ({kind} caps, {device.type})"
            results[name] = {"mb": round(mb, 1), "seconds": round(s, 3)}
            if device.type == "cuda":
                results[name]["device_mb"] = round(torch.cuda.max_memory_allocated(device) / MB, 1)
            print(f"  {name}: {results[name]}", flush=True)
    return results


def capacity_grid(repeats: int) -> list[dict]:
    rows = []
    for d_k in (8, 16, 32):
        for n in (32, 64, 96):
            for trials in (1, 2, 4):
                settings = lab.LabSettings(d_k=d_k)
                mb, s = measure(lambda: lab.capacity(settings, n_max=n, trials=trials), repeats)  # noqa: B023
                rows.append({"d_k": d_k, "n": n, "trials": trials, "mb": round(mb, 1), "seconds": round(s, 3)})
                print(f"  capacity d_k={d_k:>2} N={n:>2} streams={trials}: {mb:7.1f} MB {s:6.3f} s", flush=True)
    return rows


def fit(rows: list[dict], target: str) -> list[float]:
    """Least-squares coefficients c of target ≈ trials·N²·(c0 + c1·d_k + c2·N), non-negative by construction of the
    data (checked)."""
    a = np.array([[r["trials"] * r["n"] ** 2 * f for f in (1, r["d_k"], r["n"])] for r in rows], dtype=float)
    b = np.array([r[target] for r in rows], dtype=float)
    coef, *_ = np.linalg.lstsq(a, b, rcond=None)
    return [float(c) for c in coef]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--scale", action="store_true", help="only the stage pages' real-size runs")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, {args.threads} torch thread(s), load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("the stage pages' runs at real size (ui.real_size), at this device's caps:")
    scale_results = scale_runs(args.repeats)
    if args.scale:
        load = os.getloadavg()
        print(f"load after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            summary = {"cpus": os.cpu_count(), "threads": args.threads, "load": load, "runs": scale_results}
            args.json.write_text(json.dumps(summary, indent=2))
        return 0

    runs = {}
    for device_kind, (T, D, HD) in {"cpu": (64, 16, 16), "gpu": (64, 32, 32)}.items():
        runs[f"stage kda T={T} K=V={D} ({device_kind} caps)"] = lambda T=T, D=D: stage_runs.run_stage("kda", T, D, D)
        runs[f"softmax T={T} heads=12 head_dim={HD} ({device_kind} caps)"] = lambda T=T, HD=HD: stage_runs.run_softmax(
            T, 12, HD
        )
    runs["hybrid decode, Kimi Linear 27 layers × 24 tokens"] = lambda: hybrid.decode_trace(
        hybrid.HybridConfig(schedule=schedules.KIMI_LINEAR_SCHEDULE), 24
    )
    runs["memory lab, every experiment at its defaults (d_k=16)"] = lambda: lab.run_all(lab.LabSettings(d_k=16))
    results = {}
    for name, fn in runs.items():
        mb, s = measure(fn, args.repeats)
        results[name] = {"mb": round(mb, 1), "seconds": round(s, 3)}
        print(f"  {name}: {mb:.1f} MB, {s:.3f} s", flush=True)
    print("memory lab capacity experiment (7 mechanisms):")
    grid = capacity_grid(args.repeats)
    model = {"mb": fit(grid, "mb"), "seconds": fit(grid, "seconds")}
    print(f"fit: MB ≈ trials·N²·({model['mb'][0]:.3g} + {model['mb'][1]:.3g}·d_k + {model['mb'][2]:.3g}·N)")
    print(
        f"     s  ≈ trials·N²·({model['seconds'][0]:.3g} + {model['seconds'][1]:.3g}·d_k + {model['seconds'][2]:.3g}·N)"
    )
    worst = max(
        abs(
            r["mb"]
            - sum(c * f for c, f in zip(model["mb"], (1, r["d_k"], r["n"]), strict=True)) * r["trials"] * r["n"] ** 2
        )
        for r in grid
    )
    print(f"largest miss of the memory fit: {worst:.1f} MB")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "cpus": os.cpu_count(),
                    "threads": args.threads,
                    "load": load,
                    "runs": results | scale_results,
                    "capacity_grid": grid,
                    "capacity_model": model,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
