"""Command line: ``python -m lineage verify``, ``python -m lineage bench [ops|decode] [--json PATH]``,
``python -m lineage train --task mqar --mixers all --out results.json`` and
``python -m lineage sweep GRID.json --out results.jsonl [--workers N | --ray [ADDRESS]]`` and
``python -m lineage site --out site/ [--app-url URL]``."""

from __future__ import annotations

import argparse
import json
import sys

# What each command does, in the list ``python -m lineage --help`` prints (the commands' own --help says the rest)
SUMMARIES = {
    "bench": "time the chunked vs recurrent forms at every gate strength, or the decode step",
    "train": "train small models of every mechanism on a recall task (MQAR, palindrome, stack)",
    "sweep": "train a grid of points (learning rates, seeds, widths, …) on a process pool or Ray, resumably",
    "site": "write the lecture as a static site (every tour page, its charts animated in the browser, no Python)",
}


def _add_train_parser(sub) -> None:
    from lineage.train.cli import add_train_parser

    add_train_parser(sub)


def main(argv: list[str] | None = None) -> int:
    typed = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m lineage", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="max error of every mechanism and mode against its reference (fp64)")
    v.add_argument("--seed", type=int, default=0)
    v.add_argument(
        "--device", default="cpu", metavar="NAME", help="where the ops run: cpu (default), cuda, cuda:N, mps"
    )
    # Only the command given gets its options: their defaults come from modules that import torch (seconds), which
    # the list of commands (python -m lineage --help) does not need.
    command = next((word for word in typed if not word.startswith("-")), None)
    for name, build in (
        ("bench", _add_bench_parser),
        ("train", _add_train_parser),
        ("sweep", _add_sweep_parser),
        ("site", _add_site_parser),
    ):
        if name == command:
            build(sub)
        else:
            sub.add_parser(name, help=SUMMARIES[name])
    args = parser.parse_args(typed)

    if args.command == "verify":
        from lineage.device import parse_device
        from lineage.measure.verify import format_checks, run_verify

        try:
            device = parse_device(args.device, "--device")
        except ValueError as exc:
            sub.choices["verify"].error(str(exc))
        if device.type == "mps":
            sub.choices["verify"].error("--device mps: verify runs in fp64, which MPS does not have; use cpu or cuda")
        checks = run_verify(args.seed, device)
        print(f"device {device}")
        print(format_checks(checks))
        return 0 if all(c.ok for c in checks) else 1

    if args.command == "train":
        from lineage.train.cli import run_train_command

        return run_train_command(args, sub.choices["train"], typed)

    if args.command == "sweep":
        return _sweep(args, sub.choices["sweep"], typed)

    if args.command == "site":
        return _site(args, sub.choices["site"])

    return _bench(args, sub.choices["bench"], typed)


SITE_HELP = """\
Write the lecture as a static site into --out: the home page, every stage of the tour, the claims ledger, Memory &
cost, the Memory lab's and Learned memory's recorded results and a page on what needs the live app. Every chart and
number comes from the functions the app calls, on its default story; the figures animate in the browser (one shared
plotly.min.js, no other host). Copy the folder to any static host, or open index.html from disk."""


def _add_site_parser(sub) -> None:
    s = sub.add_parser("site", help=SUMMARIES["site"], description=SITE_HELP)
    s.add_argument("--out", metavar="DIR", required=True, help="the folder to write (new, empty, or an earlier site)")
    s.add_argument(
        "--app-url",
        metavar="URL",
        default=None,
        help="where the live app runs (http[s]://…); the pages link to it. Without it they say `python serve.py`",
    )


def _site(args, parser: argparse.ArgumentParser) -> int:
    import time

    from lineage.site import build

    try:
        build.check_app_url(args.app_url)
        build.check_out(args.out)
    except ValueError as exc:
        parser.error(str(exc))
    import torch

    torch.set_num_threads(1)  # the story runs are tiny; one thread also keeps their last bits the same on any machine
    started = time.perf_counter()
    built = build.build(args.out, args.app_url)
    print(built.report())
    print(f"built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


SWEEP_HELP = """\
Train every point of a grid file (mechanisms × front ends × pairs × lengths × widths × learning rates × seeds; see
lineage/train/sweep.py and data/learned_memory_grid.json) as an independent job, appending each finished point to one
JSON
Lines file the moment it finishes. Running the same command again skips the points already in the file, so a crash
or Ctrl-C loses only the points in flight. Points run on a local process pool sized to the machine, or with --ray on
a Ray cluster (pip install ray): --ray alone starts Ray on this machine, --ray ADDRESS joins a running cluster."""


def _add_sweep_parser(sub) -> None:
    s = sub.add_parser(
        "sweep",
        help=SUMMARIES["sweep"],
        description=SWEEP_HELP,
    )
    s.add_argument("grid", metavar="GRID", help='the grid file (JSON): one block, or {"blocks": [...]}')
    s.add_argument("--out", metavar="PATH", required=True, help="the results file (JSON Lines), appended to")
    s.add_argument("--workers", type=int, default=None, help="local pool size (default: CPUs / --threads)")
    s.add_argument("--threads", type=int, default=1, help="torch threads per point (default 1: bit-reproducible runs)")
    s.add_argument(
        "--device",
        default="cpu",
        metavar="NAME",
        help="where the local pool's points train: cpu (default), cuda, cuda:N or mps; the workers share it",
    )
    s.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run the points as Ray tasks: alone, on a Ray instance started here; with ADDRESS, on that cluster",
    )
    s.add_argument("--dry-run", action="store_true", help="list the points and the time they may take, run nothing")


def _sweep(args, parser: argparse.ArgumentParser, typed: list[str]) -> int:
    import shlex

    from lineage.cli import in_flags, interrupted, interruptible, refuse
    from lineage.train import sweep

    if args.ray:
        refuse(parser, typed, ("--workers",), "on this machine's pool or a Ray instance started here (not ADDRESS)")
    if args.ray is not None:
        refuse(parser, typed, ("--device",), "on this machine's pool: Ray tasks train on their node's CPU")
    try:
        from lineage.device import parse_device

        device = str(parse_device(args.device, "--device"))
        if args.threads < 1:
            raise ValueError(f"--threads must be ≥ 1, got {args.threads}")
        if args.workers is not None and args.workers < 1:
            raise ValueError(f"--workers must be ≥ 1, got {args.workers}")
        blocks = sweep.read_grid(args.grid)
        points, skipped = sweep.points_of(blocks, args.threads, device)
        if not points:
            raise ValueError(f"grid file {args.grid!r} has no valid point ({skipped} impossible tasks left out)")
        results = sweep.Results.open(args.out)
    except ValueError as exc:
        parser.error(in_flags(str(exc)))
    workers = args.workers or sweep.default_workers(args.threads)
    todo = [p for p in points if p.key not in results.done]
    runner = "ray " + (args.ray or "(started here)") if args.ray is not None else f"local pool of {workers}"
    print(
        f"{len(points)} point(s) in the grid ({skipped} impossible ones left out), {len(points) - len(todo)} already "
        f"in {args.out}"
        + (f" ({results.torn} unreadable line(s) ignored)" if results.torn else "")
        + "; "
        + sweep.estimate(todo, workers if args.ray is None or not args.ray else 1)
        + f"; runner: {runner}",
        file=sys.stderr,
        flush=True,
    )
    if args.dry_run:
        for p in todo:
            print(sweep.describe(p))
        return 0
    info = sweep.run_info("python -m lineage " + shlex.join(typed), runner)

    def finished(point, result: dict, n: int) -> None:
        print(f"[{n}/{len(todo)}] {sweep.describe(point)}: {sweep.outcome(result)}", file=sys.stderr, flush=True)

    try:
        with interruptible():
            use_ray = args.ray is not None
            sweep.sweep(
                points,
                results,
                info,
                workers=workers,
                use_ray=use_ray,
                ray_address=args.ray or None,
                on_finish=finished,
            )
    except KeyboardInterrupt:
        kept = sum(p.key in results.done for p in points)
        print(interrupted(kept, len(points), args.out, "Run the same command to resume."), file=sys.stderr)
        return 130
    except ValueError as exc:
        parser.error(str(exc))
    return 0


BENCH_HELP = """\
ops (default): every linear-memory op, chunked and recurrent, at gate strengths g = log σ(x) / n for n in
16, 4, 1, 0.25 and with 5% wipes; GFLOP/s against the FLOP model and a same-run torch.bmm baseline. At the
defaults (B=1 H=4 T=4096 K=V=64, 1 thread: 27 cells, 15 rounds) it took 27 s on a quiet 2-core CPU (load average
0.7), most of it the recurrent loops; expect under a minute, longer on a slower or busier machine. Progress and
an estimate of the time left go to stderr. decode: one decoding step of a KV cache against a KDA state as the
context grows (about 10 s at the standard budget)."""


def _add_bench_parser(sub) -> None:
    from lineage.measure.bench import NATIVE_FORMS, BenchConfig
    from lineage.measure.bench_decode import BUDGETS

    d = BenchConfig()
    b = sub.add_parser(
        "bench",
        help=SUMMARIES["bench"],
        description=BENCH_HELP,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    b.add_argument("what", nargs="?", choices=("ops", "decode"), default="ops", help="which benchmark")
    b.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    b.add_argument("--threads", type=int, default=d.threads, help="torch intra-op threads (reported in the header)")
    b.add_argument(
        "--budget",
        choices=tuple(BUDGETS),
        default="standard",
        help="decode: how many contexts and repeats (lineage.measure.bench_decode.BUDGETS)",
    )
    ops = b.add_argument_group("ops")
    for name in ("B", "H", "T", "K", "V"):
        ops.add_argument(f"--{name}", type=int, default=getattr(d, name), help=f"{name} of the inputs")
    ops.add_argument(
        "--chunk-size",
        type=int,
        default=d.chunk_size,
        help="chunk length C of the chunked form (default: the device's, 32 on a CPU and 64 on a GPU)",
    )
    ops.add_argument("--dtype", choices=("fp32", "bf16", "fp64"), default=d.dtype, help="dtype of the inputs")
    ops.add_argument(
        "--normalisers",
        type=float,
        nargs="+",
        default=list(d.normalisers),
        metavar="N",
        help="gate strengths: g = log σ(x) / N for each N",
    )
    ops.add_argument(
        "--wipe-fraction",
        type=float,
        default=d.wipe_fraction,
        help=f"share of positions wiped (g = -inf) in the extra gates at N = {d.wipe_normaliser:g}; 0: none",
    )
    ops.add_argument("--repeats", type=int, default=d.repeats, help="timed runs of the chunked form (median)")
    ops.add_argument(
        "--recurrent-repeats", type=int, default=d.recurrent_repeats, help="timed runs of the recurrent form (median)"
    )
    ops.add_argument(
        "--recurrent-T",
        type=int,
        default=None,
        help="time the recurrent form on this prefix of T and scale its time by T / recurrent-T (said in the output)",
    )
    ops.add_argument(
        "--native",
        choices=NATIVE_FORMS,
        default=d.native,
        help="the chunked form on a CPU: its steps 2-5 compiled C++ (lineage.ops.native) or the Python form",
    )


def _bench(args, parser: argparse.ArgumentParser, typed: list[str]) -> int:
    from lineage.cli import check_writable, refuse

    if args.what == "decode":
        ops_only = ("--B", "--H", "--T", "--K", "--V", "--chunk-size", "--dtype", "--normalisers", "--wipe-fraction")
        timing = ("--repeats", "--recurrent-repeats", "--recurrent-T", "--native")
        refuse(parser, typed, (*ops_only, *timing), "with bench ops")
    else:
        refuse(parser, typed, ("--budget",), "with bench decode")
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    if args.json:
        try:
            check_writable(args.json, "--json")
        except ValueError as exc:
            parser.error(str(exc))
    import torch

    def report(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.what == "decode":
        from lineage.measure.bench_decode import format_table, run_decode_benchmark, to_json

        threads_before = torch.get_num_threads()
        torch.set_num_threads(args.threads)
        try:
            result = run_decode_benchmark(args.budget, progress=lambda frac, msg: report(f"[{frac:4.0%}] {msg}"))
        finally:
            torch.set_num_threads(threads_before)
        print(format_table(result))
        payload = to_json(result)
    else:
        from lineage.measure.bench import BenchConfig, format_result, run_bench

        try:
            cfg = BenchConfig(
                B=args.B,
                H=args.H,
                T=args.T,
                K=args.K,
                V=args.V,
                chunk_size=args.chunk_size,
                dtype=args.dtype,
                threads=args.threads,
                repeats=args.repeats,
                recurrent_repeats=args.recurrent_repeats,
                recurrent_T=args.recurrent_T,
                normalisers=tuple(args.normalisers),
                wipe_fraction=args.wipe_fraction,
                native=args.native,
            )
        except (TypeError, ValueError) as exc:
            parser.error(str(exc))
        result = run_bench(cfg, progress=report)
        if not result.cells:
            report("interrupted before any cell was timed: nothing to report")
            return 130
        print(format_result(result))
        payload = result.to_json()
        if not result.complete:
            where = f" in {args.json}" if args.json else ""
            report(
                f"interrupted: {len(result.cells)} of {result.planned} cells timed, {result.rounds} of "
                f"{result.planned_rounds} rounds, kept{where} (marked incomplete)"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2)
    return 0 if payload.get("complete", True) else 130


if __name__ == "__main__":
    sys.exit(main())
