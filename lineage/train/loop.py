"""Train a small LM (:mod:`lineage.models.lm`) on a synthetic task (:mod:`lineage.train.tasks`), seeded and
reproducible.

AdamW with a linear warm-up, a fresh batch every step from a seeded generator (the task is infinite), and a fixed
held-out batch scored every ``eval_every`` steps. Training stops at the first of: the held-out accuracy reaching
``target_accuracy``, ``max_steps``, ``max_seconds`` of wall time, or ``cancel()`` returning True. On the CPU the
same seed gives the same loss at every step, bit for bit (same torch version, same thread count).

:func:`train` returns a :class:`TrainResult` with the whole curve and everything needed to re-run it: the task
and model configs, the training settings, seed, device, torch version, thread count and wall time.
:func:`sweep` trains one model per (task, mixer) and is what ``python -m lineage train`` runs.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

import torch

from lineage import checks
from lineage.device import device_info, get_device
from lineage.measure.timing import Timed, interleaved_medians
from lineage.mechanisms import linear_mechanisms
from lineage.models.lm import LM, LMConfig, forms, loss_and_accuracy
from lineage.train.tasks import IGNORE, TaskConfig, make_batch

EVAL_SEED_OFFSET = 1_000_003  # the held-out batch's generator: seed + this, apart from the training stream's


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 3e-3  # AdamW peak learning rate (tiny models on MQAR train well at 1e-3 … 1e-2)
    weight_decay: float = 0.1  # AdamW decoupled weight decay, on matrices only (not norms, biases, gates' scalars)
    warmup: int = 20  # steps of linear warm-up from 0 to lr
    batch_size: int = 64  # sequences per step
    max_steps: int = 1000  # stop after this many steps
    max_seconds: float = 120.0  # … or after this much wall time
    target_accuracy: float = 0.99  # … or once the held-out accuracy reaches this (1.0 never stops early)
    eval_every: int = 25  # steps between held-out evaluations (and progress reports)
    eval_size: int = 256  # held-out sequences

    def __post_init__(self):
        for name in ("warmup", "batch_size", "max_steps", "eval_every", "eval_size"):
            checks.positive_int(name, getattr(self, name))
        if not (self.lr > 0 and self.max_seconds > 0 and self.weight_decay >= 0):
            raise ValueError(
                f"lr and max_seconds must be > 0 and weight_decay ≥ 0, got lr = {self.lr}, "
                f"max_seconds = {self.max_seconds}, weight_decay = {self.weight_decay}"
            )
        if not 0.0 < self.target_accuracy <= 1.0:
            raise ValueError(f"target_accuracy must be in (0, 1], got {self.target_accuracy}")


@dataclass
class TrainResult:
    task: dict
    model: dict
    train: dict
    seed: int
    device: str
    torch_version: str
    threads: int
    machine: str
    steps: int  # steps taken
    stopped: str  # "target" | "max_steps" | "max_seconds" | "cancelled"
    wall_seconds: float
    accuracy: float  # held-out accuracy at the end
    best_accuracy: float
    state_numbers: int  # numbers in one linear layer's state (0 for softmax and the control)
    loss: list[float] = field(default_factory=list)  # training loss at every step
    eval_step: list[int] = field(default_factory=list)  # steps at which the held-out batch was scored
    eval_accuracy: list[float] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)
    carried: dict = field(default_factory=dict)  # what one layer carries per sequence, by part (LMConfig.carried)
    cpu_seconds: float = 0.0  # CPU time of the training thread: the wall time on an idle core, whatever the load

    @property
    def mixer(self) -> str:
        return self.model["mixer"]

    @property
    def solved(self) -> bool:
        return self.stopped == "target"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainResult:
        return cls(**d)


Progress = Callable[[int, float, float], None]  # (step, training loss, held-out accuracy) at every evaluation


def _param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """Decay matrices (projections, embeddings); leave vectors and scalars (norms, biases, A_log, dt_bias) alone."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]


def evaluate(model: LM, batch, device: torch.device) -> tuple[float, float]:
    """(loss, accuracy) of ``model`` on ``batch``, without gradients."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        loss, acc = loss_and_accuracy(model(batch.tokens.to(device)), batch.targets.to(device), IGNORE)
    model.train(was_training)
    return float(loss), float(acc)


def train(
    task: TaskConfig,
    model_cfg: LMConfig,
    cfg: TrainConfig = TrainConfig(),
    *,
    seed: int = 0,
    device: torch.device | str | None = None,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    return_model: bool = False,
):
    """Train a fresh model of ``model_cfg`` (weights from ``seed``) on ``task`` (batches from ``seed``).

    Returns a :class:`TrainResult`, or (result, trained model) with ``return_model``.
    """
    if model_cfg.vocab_size < task.vocab_size:
        raise ValueError(f"the model's vocab_size ({model_cfg.vocab_size}) must cover the task's ({task.vocab_size})")
    if model_cfg.max_len < task.seq_len:
        raise ValueError(f"the model's max_len ({model_cfg.max_len}) must cover the task's seq_len ({task.seq_len})")
    dev = get_device() if device is None else torch.device(device)
    info = device_info(dev)
    model = LM(model_cfg, seed).to(dev)
    opt = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup))
    stream = torch.Generator().manual_seed(int(seed))
    held_out = make_batch(task, cfg.eval_size, int(seed) + EVAL_SEED_OFFSET)
    result = TrainResult(
        task=task.to_dict(),
        model=model_cfg.to_dict(),
        train=asdict(cfg),
        seed=int(seed),
        device=info.type if info.type == "cpu" else f"{info.type}: {info.name}",
        torch_version=torch.__version__,
        threads=torch.get_num_threads(),
        machine=f"{platform.machine()}, {platform.system()}",
        steps=0,
        stopped="max_steps",
        wall_seconds=0.0,
        accuracy=0.0,
        best_accuracy=0.0,
        state_numbers=model_cfg.carried()["state"],  # one linear layer's H × K × V; 0 where no layer keeps a state
        carried=model_cfg.carried(),
    )
    start, cpu_start = time.perf_counter(), time.thread_time()
    for step in range(1, cfg.max_steps + 1):
        batch = make_batch(task, cfg.batch_size, stream)
        loss, _ = loss_and_accuracy(model(batch.tokens.to(dev)), batch.targets.to(dev), IGNORE)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        result.loss.append(loss.item())
        result.steps = step
        elapsed = time.perf_counter() - start
        last = step == cfg.max_steps or elapsed >= cfg.max_seconds
        cancelled = cancel is not None and cancel()
        if step % cfg.eval_every == 0 or last or cancelled:
            eval_loss, acc = evaluate(model, held_out, dev)
            result.eval_step.append(step)
            result.eval_accuracy.append(acc)
            result.eval_loss.append(eval_loss)
            result.accuracy, result.best_accuracy = acc, max(result.best_accuracy, acc)
            if progress is not None:
                progress(step, result.loss[-1], acc)
            if acc >= cfg.target_accuracy:
                result.stopped = "target"
                break
        if cancelled:
            result.stopped = "cancelled"
            break
        if elapsed >= cfg.max_seconds:
            result.stopped = "max_seconds"
            break
    result.wall_seconds = time.perf_counter() - start
    result.cpu_seconds = time.thread_time() - cpu_start
    return (result, model) if return_model else result


# The Learned memory page's default live run: MQAR with 2 pairs in 16 tokens, the recorded sweep's model with the
# matched front end, lr 3e-3, to 90% held-out accuracy. With seed 0 on one thread softmax reached it at step 100,
# DeltaNet at 150 and linear attention at 300 (tests/test_learned_live.py trains them); one step took 0.078, 0.108 and
# 0.087 s of CPU time, so about 8, 16 and 26 s each on an idle core, inside the page's 45 s cap. (On the busy 2-core
# machine that measured it, load average 12, the wall time was 10-20 times longer.)
LIVE_TASK = TaskConfig("mqar", vocab_size=64, seq_len=16, n_pairs=2)
LIVE_MODEL = LMConfig(vocab_size=64, max_len=64, d_model=64, n_layers=2, n_heads=4)
LIVE_TRAINING = TrainConfig(lr=3e-3, batch_size=64, max_steps=400, max_seconds=45.0, target_accuracy=0.9)
# the lineage's first three: softmax, then the first two linear memories of the table (additive, then the delta rule)
LIVE_MIXERS = ("softmax", *tuple(m.key for m in linear_mechanisms())[:2])


@dataclass(frozen=True)
class SweepPoint:
    task: TaskConfig
    mixer: str


def sweep_points(
    mixers: Sequence[str], *, task: TaskConfig, pairs: Sequence[int] = (), lengths: Sequence[int] = ()
) -> list[SweepPoint]:
    """The Zoology-style grid: every mixer at every number of pairs (at ``task.seq_len``), then at every sequence
    length (at ``task.n_pairs``). Without ``pairs`` and ``lengths``: every mixer on ``task`` as it is."""
    tasks = [replace(task, n_pairs=n) for n in pairs] + [replace(task, seq_len=T) for T in lengths]
    unique = list(dict.fromkeys(tasks or [task]))  # a point on both axes (n_pairs, seq_len) is trained once
    return [SweepPoint(t, m) for t in unique for m in mixers]


def sweep(
    points: Sequence[SweepPoint],
    model_cfg: LMConfig,
    cfg: TrainConfig = TrainConfig(),
    *,
    seed: int = 0,
    device: torch.device | str | None = None,
    on_start: Callable[[int, SweepPoint], None] | None = None,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    on_finish: Callable[[TrainResult], None] | None = None,
) -> list[TrainResult]:
    """Train one model per point (``model_cfg`` with the point's mixer, sized to cover the point's task);
    ``on_finish`` gets each result as soon as its model is trained."""
    results = []
    for i, point in enumerate(points):
        if on_start is not None:
            on_start(i, point)
        mcfg = _model_for(point, model_cfg)
        results.append(train(point.task, mcfg, cfg, seed=seed, device=device, progress=progress, cancel=cancel))
        if on_finish is not None:
            on_finish(results[-1])
        if results[-1].stopped == "cancelled":
            break
    return results


def _model_for(point: SweepPoint, model_cfg: LMConfig) -> LMConfig:
    """``model_cfg`` with the point's mixer, sized to cover the point's task."""
    return replace(
        model_cfg,
        mixer=point.mixer,
        vocab_size=max(model_cfg.vocab_size, point.task.vocab_size),
        max_len=max(model_cfg.max_len, point.task.seq_len),
    )


def training_throughput(
    task: TaskConfig,
    model_cfg: LMConfig,
    cfg: TrainConfig = TrainConfig(),
    *,
    repeats: int = 5,
    device: torch.device | str | None = None,
) -> dict[str, float]:
    """Tokens per second of one training step (forward, backward, AdamW) of one batch, with the linear layers in
    their chunked form and in their step-by-step recurrent form: medians of ``repeats`` steps each, timed in
    interleaved rounds by the package's one timer (:mod:`lineage.measure.timing`)."""
    checks.positive_int("repeats", repeats)
    dev = get_device() if device is None else torch.device(device)
    batch = make_batch(task, cfg.batch_size, 0)
    tokens, targets = batch.tokens.to(dev), batch.targets.to(dev)

    def step_in(mode: str) -> Callable[[], None]:
        model = LM(model_cfg, 0).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)

        def step() -> None:
            with forms(model, mode):
                loss, _ = loss_and_accuracy(model(tokens), targets, IGNORE)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        return step

    seconds = interleaved_medians({mode: Timed(step_in(mode), repeats) for mode in ("chunk", "recurrent")}, dev)
    return {mode: tokens.numel() / s for mode, s in seconds.items()}


# --- command line: ``python -m lineage train`` ----------------------------------------------------------------------

TRAIN_HELP = """\
Train one small model per mechanism on a synthetic task and write every curve, with its full config, seed, device,
torch version and wall time, as JSON. With --pairs (MQAR) or --lengths the sweep is the Zoology-style grid: every
mechanism at every number of key-value pairs (at --seq-len), then at every sequence length (at --n-pairs), all at
one model size, so one state size. Each point stops at --target held-out accuracy, --steps or --seconds. The total
time this allows is printed before the first model trains; the JSON is rewritten after every finished model, so
Ctrl-C keeps them. For learning-rate grids, seeds, widths and Ray: python -m lineage sweep."""


def add_train_parser(sub) -> None:
    """The ``train`` subcommand's arguments (defaults from the configs' own defaults)."""
    import argparse

    from lineage.cli import int_list
    from lineage.models.lm import CONTROLS, FRONT_ENDS, MIXERS
    from lineage.train.tasks import TASKS

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
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1: bit-reproducible runs)")
    p.add_argument(
        "--throughput",
        action="store_true",
        help="instead of training: tokens/s of one training step, chunked vs recurrent form, for each mixer",
    )
    p.add_argument("--repeats", type=int, default=5, help="--throughput: timed steps per form (median)")


def _bar(done: float, width: int = 24) -> str:
    filled = int(round(width * min(max(done, 0.0), 1.0)))
    return "█" * filled + "·" * (width - filled)


def _mixers(text: str) -> list[str]:
    """The --mixers list: 'all' or comma-separated names, at least one, each a mixer or a control."""
    from lineage.models.lm import CONTROLS, MIXERS

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
    from lineage.cli import refuse

    argv = list(argv)
    if args.task != "mqar":
        refuse(parser, argv, ("--pairs", "--n-pairs"), "with --task mqar")
    if args.task != "stack":
        refuse(parser, argv, ("--n-stacks",), "with --task stack")
    if args.throughput:
        refuse(parser, argv, ("--out", "--steps", "--seconds", "--target", "--eval-every", "--seed"), "when training")
    else:
        refuse(parser, argv, ("--repeats",), "with --throughput")


def _write_json(path: str, payload: dict) -> None:
    """Replace ``path`` with ``payload`` in one step (a crash leaves the last complete file, never half of one)."""
    import json
    import os

    tmp = f"{path}.partial"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=1)
    os.replace(tmp, path)


def run_train_command(args, parser, argv: Sequence[str]) -> int:
    """Run the sweep ``args`` describe, with a progress bar on stderr; write the JSON to ``args.out`` after every
    finished model, so an interrupted run keeps what it finished."""
    import datetime
    import os
    import shlex
    import sys

    from lineage.cli import check_writable, duration, in_flags, interrupted, interruptible
    from lineage.train.sweep import step_seconds

    _refuse_inapplicable(args, parser, argv)
    try:
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
        )
    except ValueError as exc:
        parser.error(in_flags(str(exc)))
    torch.set_num_threads(args.threads)
    if args.throughput:
        return _print_throughput(points, model_cfg, cfg, args.repeats)
    print(f"timing one training step of each of the {len(points)} model(s) …", file=sys.stderr, flush=True)
    full = sum(
        min(
            cfg.max_seconds,
            cfg.max_steps
            * step_seconds(p.task.to_dict(), _model_for(p, model_cfg).to_dict(), asdict(cfg), args.threads),
        )
        for p in points
    )
    print(
        f"{len(points)} model(s) to train, each until {cfg.target_accuracy:.0%} held-out accuracy, {cfg.max_steps:,} "
        f"steps or {cfg.max_seconds:.0f} s: at most about {duration(full)} in all at the step times measured just "
        "now (a model that reaches the target stops sooner)"
        + (f"; each finished model is written to {args.out} at once" if args.out else "; nothing is saved (no --out)"),
        file=sys.stderr,
        flush=True,
    )
    tty = sys.stderr.isatty()
    started, current = time.perf_counter(), {"i": 0, "label": ""}

    def on_start(i: int, point: SweepPoint) -> None:
        t = point.task
        size = f"pairs={t.n_pairs} " if t.task == "mqar" else ""
        current.update(i=i, label=f"{point.mixer} {size}T={t.seq_len}")

    def progress(step: int, loss: float, acc: float) -> None:
        done = (current["i"] + step / cfg.max_steps) / len(points)
        line = (
            f"{_bar(done)} {current['i'] + 1}/{len(points)} {current['label']:<32} step {step:>5} loss {loss:6.3f} "
            f"acc {acc:5.3f}  {time.perf_counter() - started:6.0f}s"
        )
        print(f"\r{line}" if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)

    load_before = os.getloadavg()
    payload = {
        "command": "python -m lineage " + shlex.join(argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": "cpu",
        "machine": f"{platform.machine()}, {platform.system()}",
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "torch_version": torch.__version__,
        "load_average_before": [round(x, 2) for x in load_before],
        "complete": False,
        "runs": [],
    }

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


def _print_throughput(points: Sequence[SweepPoint], model_cfg: LMConfig, cfg: TrainConfig, repeats: int) -> int:
    """One line per point: training tokens per second in the chunked and the recurrent form, and their ratio."""
    import os

    print(
        f"training step of {cfg.batch_size} sequences, d_model {model_cfg.d_model}, {model_cfg.n_layers} layers, "
        f"{model_cfg.n_heads} heads; {torch.get_num_threads()} thread(s) of {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}; median of {repeats} interleaved steps per form"
    )
    print(f"{'mixer':<17} {'T':>5} {'chunk tok/s':>12} {'recurrent tok/s':>16} {'chunk/recurrent':>16}")
    for p in points:
        mcfg = replace(model_cfg, mixer=p.mixer, max_len=max(model_cfg.max_len, p.task.seq_len))
        rates = training_throughput(p.task, mcfg, cfg, repeats=repeats, device="cpu")
        print(
            f"{p.mixer:<17} {p.task.seq_len:>5} {rates['chunk']:>12,.0f} {rates['recurrent']:>16,.0f} "
            f"{rates['chunk'] / rates['recurrent']:>15.2f}×"
        )
    return 0
