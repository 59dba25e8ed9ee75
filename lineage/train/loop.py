"""Train a small LM (:mod:`lineage.models.lm`) on a synthetic task (:mod:`lineage.train.tasks`), seeded and
reproducible.

AdamW with a linear warm-up, a fresh batch every step from a seeded generator (the task is infinite), and a fixed
held-out batch scored every ``eval_every`` steps. Training stops at the first of: the held-out accuracy reaching
``target_accuracy``, the accuracy no longer rising (``patience``: see :func:`stopped_rising`), ``max_steps``,
``max_seconds`` of wall time, or ``cancel()`` returning True. On the CPU the same seed gives the same loss at every
step, bit for bit (same torch version, same thread count).

:func:`train_step` is the one training step: training, the throughput measure (:func:`training_throughput`) and the
sweep's up-front estimate (:func:`lineage.train.sweep.step_seconds`) all run it, with the optimiser of
:func:`optimiser`.

:func:`train` returns a :class:`TrainResult` with the whole curve and everything needed to re-run it: the task
and model configs, the training settings, seed, device, torch version, thread count and wall time.
:func:`sweep` trains one model per (task, mixer) and is what ``python -m lineage train`` runs
(its command line: :mod:`lineage.train.cli`).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from lineage import checks
from lineage.device import device_info, get_device
from lineage.measure.timing import Timed, interleaved_medians
from lineage.mechanisms import linear_mechanisms
from lineage.models.lm import LM, LMConfig, forms, lm_loss, loss_and_accuracy
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
    patience: int = 0  # … or once the last `patience` evaluations rose < min_delta above the best before (0: never)
    min_delta: float = 0.01  # the rise, in accuracy (0.01 = one point), that counts as still learning

    def __post_init__(self):
        for name in ("warmup", "batch_size", "max_steps", "eval_every", "eval_size"):
            checks.positive_int(name, getattr(self, name))
        if not (isinstance(self.patience, int) and self.patience >= 0):
            raise ValueError(
                f"patience must be an integer ≥ 0 (evaluations; 0: never stop early), got {self.patience!r}"
            )
        if not 0.0 < self.min_delta < 1.0:
            raise ValueError(f"min_delta must be in (0, 1) (accuracy, 0.01 = one point), got {self.min_delta}")
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
    stopped: str  # "target" | "plateau" | "max_steps" | "max_seconds" | "cancelled"
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

# Patience (evaluations) and rise that judge whether a point trained without a patience of its own (the first record,
# before ``patience`` existed) was still learning when its budget ran out: the capacity record's own rule
# (data/learned_memory_capacity_grid.json: patience 10, min_delta 0.01)
STILL_RISING = (10, 0.01)


def stopped_rising(accuracies: Sequence[float], patience: int, min_delta: float) -> bool:
    """Whether held-out accuracy has stopped rising: none of the last ``patience`` evaluations is ``min_delta`` or
    more above the best one before them. False while fewer than ``patience`` + 1 evaluations exist (and for
    ``patience`` 0). The rule is on the best so far, so one noisy low evaluation neither stops nor restarts it."""
    if patience <= 0 or len(accuracies) <= patience:
        return False
    return max(accuracies[-patience:]) < max(accuracies[:-patience]) + min_delta


def optimiser(
    model: torch.nn.Module, cfg: TrainConfig
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (betas 0.9, 0.98) with decoupled weight decay on matrices only (projections, embeddings; not norms,
    biases, A_log, dt_bias), and its linear warm-up from 0 to ``cfg.lr`` over ``cfg.warmup`` steps. The update runs
    on all parameters at once (``foreach``: the same numbers, bit for bit, as one parameter at a time, in a third of
    the time on a CPU, where a small model has dozens of small parameters)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98), foreach=True)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup))


def train_step(model: LM, opt: torch.optim.Optimizer, sched, tokens: torch.Tensor, targets: torch.Tensor) -> float:
    """One training step on one batch: loss, backward, AdamW, warm-up. Returns the training loss."""
    loss = lm_loss(model(tokens), targets, IGNORE)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    return loss.item()


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
    opt, sched = optimiser(model, cfg)
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
        result.loss.append(train_step(model, opt, sched, batch.tokens.to(dev), batch.targets.to(dev)))
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
            if stopped_rising(result.eval_accuracy, cfg.patience, cfg.min_delta):
                result.stopped = "plateau"
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
# matched front end, lr 3e-3, to 90% held-out accuracy within the page's 45 s cap (tests/test_learned_live.py trains
# softmax, DeltaNet and linear attention to it; `python -m lineage train --throughput --seq-len 16 --n-pairs 2` times
# a step of each).
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
        mcfg = model_for(point, model_cfg)
        results.append(train(point.task, mcfg, cfg, seed=seed, device=device, progress=progress, cancel=cancel))
        if on_finish is not None:
            on_finish(results[-1])
        if results[-1].stopped == "cancelled":
            break
    return results


def model_for(point: SweepPoint, model_cfg: LMConfig) -> LMConfig:
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
    baseline: str | None = None,
) -> dict[str, float]:
    """Tokens per second of one training step (:func:`train_step`: forward, backward, AdamW, warm-up) of one batch,
    with the linear layers in their chunked form and in their step-by-step recurrent form: medians of ``repeats``
    steps each, timed in interleaved rounds by the package's one timer (:mod:`lineage.measure.timing`).

    With ``baseline`` (the folder of another checkout, which holds ``lineage/``), a third entry: the same training step
    run by that checkout's code in a process of its own (:func:`baseline_steps`), timed in the same rounds, so that a
    shared machine's drift hits both alike and their ratio is a fair comparison.
    """
    checks.positive_int("repeats", repeats)
    dev = get_device() if device is None else torch.device(device)
    batch = make_batch(task, cfg.batch_size, 0)
    tokens, targets = batch.tokens.to(dev), batch.targets.to(dev)

    def step_in(mode: str) -> Callable[[], None]:
        model = LM(model_cfg, 0).to(dev)
        opt, sched = optimiser(model, cfg)

        def step() -> None:
            with forms(model, mode):
                train_step(model, opt, sched, tokens, targets)

        return step

    timed = {mode: Timed(step_in(mode), repeats) for mode in ("chunk", "recurrent")}
    if baseline is None:
        seconds = interleaved_medians(timed, dev)
    else:
        if dev.type != "cpu":
            raise ValueError(f"baseline runs on the CPU only, got device {dev.type!r}")
        with baseline_steps(baseline, task, model_cfg, cfg) as other:
            seconds = interleaved_medians({**timed, "baseline": Timed(other, repeats)}, dev)
    return {mode: tokens.numel() / s for mode, s in seconds.items()}


@contextmanager
def baseline_steps(tree: str, task: TaskConfig, model_cfg: LMConfig, cfg: TrainConfig) -> Iterator[Callable[[], None]]:
    """A training step of the package in the folder ``tree`` (another checkout), as a call: each call has a process
    of its own (:mod:`lineage.train.baseline_worker`, started once, with this process's thread count) run one step of
    ``model_cfg`` on a batch of ``task`` with ``cfg``'s optimiser, and returns when it is done.

    Raises ValueError naming the folder when it holds no package or its code cannot build this model.
    """
    if not (Path(tree) / "lineage" / "__init__.py").is_file():
        raise ValueError(f"baseline {tree!r} must be a folder that holds the package (lineage/__init__.py)")
    spec = dict(task=task.to_dict(), model=model_cfg.to_dict(), train=asdict(cfg), threads=torch.get_num_threads())
    worker = Path(__file__).with_name("baseline_worker.py")
    with tempfile.TemporaryFile("w+") as errors:  # a file, not a pipe: a chatty worker can never block on it
        root = str(Path(tree).resolve())
        proc = subprocess.Popen(
            [sys.executable, str(worker), root, json.dumps(spec)],
            env={**os.environ, "PYTHONPATH": root},  # DIR's package first, before the installed one
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )

        def failed(what: str) -> ValueError:
            proc.stdin.close()
            proc.wait(timeout=60)
            errors.seek(0)
            last = errors.read().strip().splitlines()
            return ValueError(f"baseline {tree!r} {what}: {last[-1] if last else 'no message'}")

        def step() -> None:
            proc.stdin.write("step\n")
            proc.stdin.flush()
            if proc.stdout.readline().strip() != "done":
                raise failed("stopped during a training step")

        try:
            ready = proc.stdout.readline().split(maxsplit=1)
            if not ready or ready[0] != "ready":
                raise failed("could not run this training step")
            if not Path(ready[1].strip()).resolve().is_relative_to(root):  # the worker must run DIR's code
                proc.stdin.close()
                proc.wait(timeout=60)
                raise ValueError(f"baseline {tree!r}: the worker imported lineage from {ready[1].strip()}, not from it")
            yield step
        finally:
            if not proc.stdin.closed:
                proc.stdin.close()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
