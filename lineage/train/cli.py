"""``python -m lineage train``: its arguments, and the command that trains one model per mechanism (or times a
training step of each) with a progress bar, writing every finished model to one JSON file.

The loop it runs is :func:`lineage.train.loop.sweep`; ``python -m lineage sweep`` (grids, seeds, Ray) is
:mod:`lineage.train.sweep`, parsed in :mod:`lineage.__main__` beside this.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, replace

import torch

from lineage.cli import check_writable, duration, in_flags, int_list, interrupted, interruptible, refuse
from lineage.models.lm import CONTROLS, FRONT_ENDS, MIXERS, LMConfig
from lineage.train.loop import SweepPoint, TrainConfig, TrainResult, model_for, sweep, sweep_points, training_throughput
from lineage.train.sweep import step_seconds
from lineage.train.tasks import TASKS, TaskConfig

TRAIN_HELP = """\
Train one small model per mechanism on a synthetic task and write every curve, with its full config, seed, device,
torch version and wall time, as JSON. With --pairs (MQAR) or --lengths the sweep is the Zoology-style grid: every
mechanism at every number of key-value pairs (at --seq-len), then at every sequence length (at --n-pairs), all at
one model size, so one state size. Each point stops at --target held-out accuracy, when its accuracy stops rising
(--patience), or at --steps or --seconds. The total time this allows is printed before the first model trains; the
JSON is rewritten after every finished model, so Ctrl-C keeps them. For learning-rate grids, seeds, widths and Ray:
python -m lineage sweep."""


def add_train_parser(sub) -> None:
    """The ``train`` subcommand's arguments (defaults from the configs' own defaults)."""
    t, m, c = TaskConfig(), LMConfig(), TrainConfig()
    p = sub.add_parser(
        "train",
        help="train small models of every mechanism on a recall task (MQAR, palindrome, stack)",
        description=TRAIN_HELP,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--task", choices=TASKS, default=t.task)
    p.add_argument(
        "--mixers", default="all", help=f"'all' ({', '.join(MIXERS)}) or a comma list; also {', '.join(CONTROLS)}"
    )
    p.add_argument(
        "--front-end",
        choices=FRONT_ENDS,
        default=m.front_end,
        help="conv: the same short convolution on q, k, v for every mixer; none: for no mixer; paper: each paper's",
    )
    p.add_argument("--out", metavar="PATH", help="write the results as JSON here (rewritten after every model)")
    p.add_argument("--pairs", type=int_list, default=[], help="MQAR: sweep these numbers of pairs, e.g. 4,8,16")
    p.add_argument("--lengths", type=int_list, default=[], help="sweep these sequence lengths, e.g. 32,64,128")
    p.add_argument("--vocab", type=int, default=t.vocab_size, help="task vocabulary")
    p.add_argument("--seq-len", type=int, default=t.seq_len, help="sequence length (the pairs sweep's)")
    p.add_argument("--n-pairs", type=int, default=t.n_pairs, help="MQAR pairs (the lengths sweep's)")
    p.add_argument("--n-stacks", type=int, default=t.n_stacks, help="stack task: number of stacks")
    p.add_argument("--d-model", type=int, default=m.d_model)
    p.add_argument("--layers", type=int, default=m.n_layers)
    p.add_argument("--heads", type=int, default=m.n_heads)
    p.add_argument("--lr", type=float, default=c.lr)
    p.add_argument("--batch", type=int, default=c.batch_size)
    p.add_argument("--steps", type=int, default=c.max_steps, help="cap on training steps per point")
    p.add_argument("--seconds", type=float, default=c.max_seconds, help="cap on wall seconds per point")
    p.add_argument("--target", type=float, default=c.target_accuracy, help="stop at this held-out accuracy")
    p.add_argument("--eval-every", type=int, default=c.eval_every)
    p.add_argument(
        "--patience",
        type=int,
        default=c.patience,
        help="stop once this many evaluations in a row rose less than --min-delta above the best before (0: never)",
    )
    p.add_argument(
        "--min-delta", type=float, default=c.min_delta, help="--patience: the rise that counts (0.01 = 1 point)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1: bit-reproducible runs)")
    p.add_argument(
        "--throughput",
        action="store_true",
        help="instead of training: tokens/s of one training step, chunked vs recurrent form, for each mixer",
    )
    p.add_argument("--repeats", type=int, default=5, help="--throughput: timed steps per form (median)")
    p.add_argument(
        "--baseline",
        metavar="DIR",
        help="--throughput: also time the training step of the package in DIR (another checkout, e.g. from "
        "`git worktree add DIR HEAD~1`), interleaved with this one's, and print this one's speed-up over it",
    )


def _bar(done: float, width: int = 24) -> str:
    filled = int(round(width * min(max(done, 0.0), 1.0)))
    return "█" * filled + "·" * (width - filled)


def _mixers(text: str) -> list[str]:
    """The --mixers list: 'all' or comma-separated names, at least one, each a mixer or a control."""
    if text.strip() == "all":
        return list(MIXERS)
    names = [x.strip() for x in text.split(",") if x.strip()]
    allowed = MIXERS + CONTROLS
    if not names:
        raise ValueError(f"--mixers names no mechanism: give 'all' or a comma list of {', '.join(allowed)}")
    if bad := [x for x in names if x not in allowed]:
        raise ValueError(f"--mixers: unknown {', '.join(map(repr, bad))}; allowed: all, {', '.join(allowed)}")
    return list(dict.fromkeys(names))


def _refuse_inapplicable(args, parser, argv: Sequence[str]) -> None:
    """Options typed where they do nothing are refused rather than silently ignored."""
    argv = list(argv)
    if args.task != "mqar":
        refuse(parser, argv, ("--pairs", "--n-pairs"), "with --task mqar")
    if args.task != "stack":
        refuse(parser, argv, ("--n-stacks",), "with --task stack")
    if args.throughput:
        when_training = ("--out", "--steps", "--seconds", "--target", "--eval-every", "--patience", "--min-delta")
        refuse(parser, argv, (*when_training, "--seed"), "when training")
    else:
        refuse(parser, argv, ("--repeats", "--baseline"), "with --throughput")


def _write_json(path: str, payload: dict) -> None:
    """Replace ``path`` with ``payload`` in one step (a crash leaves the last complete file, never half of one)."""
    tmp = f"{path}.partial"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=1)
    os.replace(tmp, path)


def _configs(args) -> tuple[list[SweepPoint], LMConfig, TrainConfig]:
    """The points, model and training settings ``args`` describe (ValueError naming the flag when one is bad)."""
    if args.threads < 1 or args.repeats < 1:
        raise ValueError(f"--threads and --repeats must be ≥ 1, got {args.threads} and {args.repeats}")
    mixers = _mixers(args.mixers)
    if args.out:
        check_writable(args.out, "--out")
    task = TaskConfig(args.task, args.vocab, args.seq_len, args.n_pairs, args.n_stacks)
    points = sweep_points(mixers, task=task, pairs=args.pairs, lengths=args.lengths)
    model_cfg = LMConfig(
        mixer=mixers[0],
        vocab_size=args.vocab,
        max_len=max(p.task.seq_len for p in points),
        d_model=args.d_model,
        n_layers=args.layers,
        n_heads=args.heads,
        front_end=args.front_end,
    )
    cfg = TrainConfig(
        lr=args.lr,
        batch_size=args.batch,
        max_steps=args.steps,
        max_seconds=args.seconds,
        target_accuracy=args.target,
        eval_every=args.eval_every,
        patience=args.patience,
        min_delta=args.min_delta,
    )
    return points, model_cfg, cfg


def run_train_command(args, parser, argv: Sequence[str]) -> int:
    """Run the sweep ``args`` describe, with a progress bar on stderr; write the JSON to ``args.out`` after every
    finished model, so an interrupted run keeps what it finished."""
    _refuse_inapplicable(args, parser, argv)
    try:
        points, model_cfg, cfg = _configs(args)
    except ValueError as exc:
        parser.error(in_flags(str(exc)))
    torch.set_num_threads(args.threads)
    if args.throughput:
        try:
            return _print_throughput(points, model_cfg, cfg, args.repeats, args.baseline)
        except ValueError as exc:
            parser.error(in_flags(str(exc)))
    print(f"timing one training step of each of the {len(points)} model(s) …", file=sys.stderr, flush=True)
    full = sum(
        min(
            cfg.max_seconds,
            cfg.max_steps
            * step_seconds(p.task.to_dict(), model_for(p, model_cfg).to_dict(), asdict(cfg), args.threads),
        )
        for p in points
    )
    print(
        f"{len(points)} model(s) to train, each until {cfg.target_accuracy:.0%} held-out accuracy"
        + (f", {cfg.patience} evaluations without a rise of {cfg.min_delta:.0%}" if cfg.patience else "")
        + f", {cfg.max_steps:,} steps or {cfg.max_seconds:.0f} s: at most about {duration(full)} in all at the step "
        "times measured just now (a model that reaches the target or stops rising stops sooner)"
        + (f"; each finished model is written to {args.out} at once" if args.out else "; nothing is saved (no --out)"),
        file=sys.stderr,
        flush=True,
    )
    payload = _payload(args, argv)
    on_start, progress, finished = _reporters(args, payload, len(points), cfg.max_steps)
    try:
        with interruptible():
            sweep(
                points,
                model_cfg,
                cfg,
                seed=args.seed,
                device="cpu",
                on_start=on_start,
                progress=progress,
                on_finish=finished,
            )
    except KeyboardInterrupt:
        where = args.out if args.out else "no file (no --out was given)"
        print(interrupted(len(payload["runs"]), len(points), where, "The model in training was lost."), file=sys.stderr)
        return 130
    payload["complete"] = True
    if args.out:
        _write_json(args.out, payload)
    return 0


def _payload(args, argv: Sequence[str]) -> dict:
    """The JSON file's head: the command, date, machine and its load; ``runs`` fills as models finish."""
    return {
        "command": "python -m lineage " + shlex.join(argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": "cpu",
        "machine": f"{platform.machine()}, {platform.system()}",
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "torch_version": torch.__version__,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "complete": False,
        "runs": [],
    }


def _reporters(args, payload: dict, n_points: int, max_steps: int):
    """(on_start, progress, on_finish) for :func:`lineage.train.loop.sweep`: the progress bar on stderr, one line
    per finished model on stdout, and the JSON rewritten after each."""
    tty = sys.stderr.isatty()
    started, current = time.perf_counter(), {"i": 0, "label": ""}

    def on_start(i: int, point: SweepPoint) -> None:
        t = point.task
        size = f"pairs={t.n_pairs} " if t.task == "mqar" else ""
        current.update(i=i, label=f"{point.mixer} {size}T={t.seq_len}")

    def progress(step: int, loss: float, acc: float) -> None:
        done = (current["i"] + step / max_steps) / n_points
        line = (
            f"{_bar(done)} {current['i'] + 1}/{n_points} {current['label']:<32} step {step:>5} loss {loss:6.3f} "
            f"acc {acc:5.3f}  {time.perf_counter() - started:6.0f}s"
        )
        print(f"\r{line}" if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)

    def finished(result: TrainResult) -> None:
        if tty:
            print(file=sys.stderr)
        size = f"pairs {result.task['n_pairs']:>3}" if result.task["task"] == "mqar" else ""
        print(
            f"{result.mixer:<17} {size} T {result.task['seq_len']:>4}  acc {result.accuracy:5.3f}  steps "
            f"{result.steps:>5}  {result.stopped:<11} {result.wall_seconds:7.1f} s",
            flush=True,
        )
        payload["runs"].append(result.to_dict())
        payload["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        payload["wall_seconds"] = round(time.perf_counter() - started, 1)
        if args.out:
            _write_json(args.out, payload)

    return on_start, progress, finished


def _print_throughput(
    points: Sequence[SweepPoint], model_cfg: LMConfig, cfg: TrainConfig, repeats: int, baseline: str | None = None
) -> int:
    """One line per point: training tokens per second in the chunked and the recurrent form, and their ratio; with a
    ``baseline`` checkout, its tokens per second (timed in the same rounds) and the chunked form's speed-up over it."""
    print(
        f"training step of {cfg.batch_size} sequences, d_model {model_cfg.d_model}, {model_cfg.n_layers} layers, "
        f"{model_cfg.n_heads} heads; {torch.get_num_threads()} thread(s) of {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}; median of {repeats} interleaved steps per form"
        + (f"; baseline: the package in {baseline}" if baseline else "")
    )
    head = f"{'mixer':<17} {'T':>5} {'chunk tok/s':>12} {'recurrent tok/s':>16} {'chunk/recurrent':>16}"
    print(head + (f" {'baseline tok/s':>15} {'chunk/baseline':>15}" if baseline else ""))
    for p in points:
        mcfg = replace(model_cfg, mixer=p.mixer, max_len=max(model_cfg.max_len, p.task.seq_len))
        rates = training_throughput(p.task, mcfg, cfg, repeats=repeats, device="cpu", baseline=baseline)
        line = (
            f"{p.mixer:<17} {p.task.seq_len:>5} {rates['chunk']:>12,.0f} {rates['recurrent']:>16,.0f} "
            f"{rates['chunk'] / rates['recurrent']:>15.2f}×"
        )
        if baseline:
            line += f" {rates['baseline']:>15,.0f} {rates['chunk'] / rates['baseline']:>14.2f}×"
        print(line, flush=True)
    return 0
