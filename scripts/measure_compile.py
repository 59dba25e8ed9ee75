"""Whether ``torch.compile`` pays for the Learned memory training step on this machine's CPU: the step at the
capacity record's settings, eager against compiled (the same weights, the same batch), timed in interleaved rounds of
one run, one torch thread, in CPU seconds of the timing thread; writes the record given by --out
(data/learned_memory_compile_epyc.json: a 2-core AMD EPYC).

    python scripts/measure_compile.py --out data/learned_memory_compile_epyc.json

The compiled step is ``torch.compile`` of the model (the default inductor backend, which writes C++ for a CPU) under
``lineage.checks.values_checked``, so the value scans that would break its graph do not run in either step; the loss,
backward and AdamW are the package's own (``lineage.train.loop``). The first compiled step, compilation included, is
timed apart, with inductor's cache in a fresh folder (``TORCHINDUCTOR_CACHE_DIR``, set here unless given), so that it
counts the compilation a first run pays. Both steps start from one set of weights, so their first losses must agree:
the script says how closely.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

FRESH_CACHE = "TORCHINDUCTOR_CACHE_DIR" not in os.environ  # a cache folder given is used as it is
if FRESH_CACHE:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")  # before torch reads it

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lineage import checks  # noqa: E402
from lineage.device import cpu_model  # noqa: E402
from lineage.models.lm import LM, LMConfig, lm_loss  # noqa: E402
from lineage.train.loop import TrainConfig, optimiser  # noqa: E402
from lineage.train.tasks import IGNORE, TaskConfig, make_batch  # noqa: E402

MIXERS = ("softmax", "linear_attention", "deltanet", "gated_deltanet", "kda")
SETTINGS = dict(seq_len=64, n_pairs=16, d_model=64, n_layers=2, n_heads=8, batch=64)  # the capacity record's


def stepper(mixer: str, compiled: bool, batch):
    """One training step of a fresh model (seed 0) as a call returning its loss, and the seconds its first call took."""
    s = SETTINGS
    model = LM(LMConfig(mixer, 64, s["seq_len"], s["d_model"], s["n_layers"], s["n_heads"]), 0)
    opt, sched = optimiser(model, TrainConfig())
    forward = torch.compile(model) if compiled else model

    def step() -> float:
        with checks.values_checked():
            loss = lm_loss(forward(batch.tokens), batch.targets, IGNORE)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        return loss.item()

    start = time.perf_counter()
    first = step()
    return step, first, time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=5, help="timed steps per form per round (median)")
    p.add_argument("--mixers", nargs="+", default=list(MIXERS), choices=MIXERS)
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    torch.set_num_threads(1)
    s = SETTINGS
    batch = make_batch(TaskConfig("mqar", 64, s["seq_len"], s["n_pairs"]), s["batch"], 0)
    loads = [os.getloadavg()[0]]
    rows = {}
    for mixer in args.mixers:
        (eager, loss_eager, _), (compiled, loss_compiled, compile_s) = (stepper(mixer, c, batch) for c in (False, True))
        times: dict[str, list[float]] = {"eager": [], "compiled": []}
        for _ in range(args.rounds):
            for form, step in (("eager", eager), ("compiled", compiled)):
                for _ in range(args.repeats):
                    start = time.thread_time()
                    step()
                    times[form].append(time.thread_time() - start)
        loads.append(os.getloadavg()[0])
        ms = {form: 1e3 * statistics.median(t) for form, t in times.items()}
        rows[mixer] = {
            "eager_ms": ms["eager"],
            "compiled_ms": ms["compiled"],
            "compiled_over_eager": ms["compiled"] / ms["eager"],
            "first_compiled_step_s": compile_s,
            "first_loss_relative_difference": abs(loss_compiled - loss_eager) / abs(loss_eager),
        }
        r = rows[mixer]
        print(
            f"{mixer:<17} eager {r['eager_ms']:6.1f} ms  compiled {r['compiled_ms']:6.1f} ms  "
            f"compiled/eager {r['compiled_over_eager']:.2f}  first compiled step {compile_s:.0f} s  "
            f"first losses differ by {r['first_loss_relative_difference']:.1e}",
            flush=True,
        )
    print(
        f"training step, {SETTINGS}: CPU ms of the timing thread, 1 torch thread, median of {args.rounds} rounds × "
        f"{args.repeats} steps; {os.cpu_count()} cores ({cpu_model()}), torch {torch.__version__}, "
        f"load average {min(loads):.1f}–{max(loads):.1f}"
    )
    if args.out:
        record = {
            "command": "python scripts/measure_compile.py " + " ".join(sys.argv[1:]),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "settings": SETTINGS,
            "threads": 1,
            "cpu_count": os.cpu_count(),
            "cpu_model": cpu_model(),
            "torch_version": torch.__version__,
            "inductor_cache": "fresh" if FRESH_CACHE else "given",
            "load_average": [round(x, 2) for x in loads],
            "unit": "ms of CPU time of the timing thread per training step (median)",
            "mixers": rows,
        }
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
