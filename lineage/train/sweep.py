"""The sweep: a grid of training points, each an independent job, appended to one results file as it finishes.

A grid file (JSON) holds one block, or a list of blocks (``{"blocks": [...], "about": "what this grid is"}``);
each block is a cross product

    mechanisms × front ends × pairs × lengths × widths × learning rates × seeds

at one task, vocabulary, depth, head count, batch and training budget (:class:`Block`; every key is optional and
defaults to the field's default). A point whose task is impossible (MQAR needs 4·pairs ≤ length and
2·pairs + 2 ≤ vocabulary) is left out, and the count of those is said. The union of the blocks, without repeats, is
the grid.

Each point trains one model (:func:`lineage.train.loop.train`) and appends one line to a JSON Lines results file the
moment it finishes: the point's key, its :class:`~lineage.train.loop.TrainResult`, and how it was run (command, date,
machine, runner). Nothing else is ever written to the file, so a crash loses at most the points in flight, and
running the same command again skips every point already in the file (resuming). Points run on a local process
pool sized to the machine (:func:`run_local`), or as Ray tasks on a cluster (:func:`run_ray`) — the same points,
the same function, the same file: Zoology's own launcher sends its sweeps to Ray the same way. Neither schedules
anything itself: a pool or Ray hands out the points.

Each point runs with a fixed number of torch threads (1 by default), so on a CPU its losses are bit-for-bit the
same whichever runner ran it, and a test checks exactly that. ``--device cuda`` runs the local pool's points on a GPU
instead (the same weights and batches, drawn on the CPU; each result names its device); neither the device nor the
threads are part of a point's key, so a record of one device is kept in a file of its own.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from lineage.cli import duration

SWEEP_FORMAT = 1  # the results file's line format


@dataclass(frozen=True)
class Block:
    """One cross product of the grid. Lists are the axes; the rest is shared by every point of the block."""

    task: str = "mqar"  # "mqar" | "palindrome" | "stack"
    mixers: tuple[str, ...] = ("softmax", "deltanet")  # LM mixers (lineage.models.lm.MIXERS); a grid file names its own
    front_ends: tuple[str, ...] = ("conv",)  # lineage.models.lm.FRONT_ENDS: "conv" for every mixer, "none", "paper"
    pairs: tuple[int, ...] = (4,)  # MQAR key–value pairs (other tasks: leave at one value)
    lengths: tuple[int, ...] = (32,)  # tokens per sequence
    widths: tuple[int, ...] = (64,)  # d_model; every linear layer's state is heads × (width / heads)²
    lrs: tuple[float, ...] = (1e-3, 3e-3)  # AdamW peak learning rates; a point is reported at the best (as Zoology)
    seeds: tuple[int, ...] = (0, 1)  # model weights and data stream
    vocab: int = 64  # task vocabulary
    n_stacks: int = 4  # the stack task's stacks
    layers: int = 2
    heads: int = 4
    batch: int = 64
    steps: int = 1000  # budget: training steps per point …
    seconds: float = 600.0  # … and wall seconds per point
    target: float = 0.99  # stop early at this held-out accuracy
    eval_every: int = 25
    patience: int = 0  # … or once this many evaluations rose < min_delta above the best before (0: never)
    min_delta: float = 0.01  # the rise in accuracy that counts as still learning (TrainConfig.min_delta)

    @classmethod
    def from_dict(cls, d: dict, where: str = "block") -> Block:
        """A block from a grid file's JSON object; unknown keys and wrong types are named."""
        if not isinstance(d, dict):
            raise ValueError(f"{where} must be a JSON object, got {type(d).__name__}")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(known)}")
        out = {}
        for name, value in d.items():
            if isinstance(known[name].default, tuple):
                if not isinstance(value, list) or not value:
                    raise ValueError(f"{where}.{name} must be a non-empty list, got {value!r}")
                value = tuple(value)
            out[name] = value
        return cls(**out)


def read_grid(path: str | os.PathLike) -> list[Block]:
    """The blocks of a grid file: one object, or ``{"blocks": [object, …]}``."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"grid file {str(path)!r} does not exist") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"grid file {str(path)!r} is not JSON: {exc}") from None
    if isinstance(data, dict) and "blocks" in data:
        if extra := sorted(set(data) - {"blocks", "about"}):
            raise ValueError(f"grid file {str(path)!r}: unknown key(s) {', '.join(extra)}; allowed: blocks, about")
        blocks = data["blocks"]
        if not isinstance(blocks, list) or not blocks:
            raise ValueError(f"grid file {str(path)!r}: 'blocks' must be a non-empty list")
        return [Block.from_dict(b, f"blocks[{i}]") for i, b in enumerate(blocks)]
    return [Block.from_dict(data)]


@dataclass(frozen=True)
class Point:
    """One training run: everything :func:`lineage.train.loop.train` needs, as plain dicts (picklable, JSON-able)."""

    task: dict
    model: dict
    train: dict
    seed: int
    threads: int = 1
    device: str = "cpu"  # where it trains: "cpu", "cuda", "cuda:1", ...

    @property
    def key(self) -> str:
        """A stable name for the point: a hash of its task, model, training settings and seed (not its threads nor
        its device).
        Settings added to training after a record was made (:data:`ADDED_SETTINGS`) count only when switched on, so
        that record's points keep their keys and a resumed sweep still skips them."""
        train = self.train
        if all(train.get(k, off) == off for k, off in ADDED_SETTINGS.items()):
            train = {k: v for k, v in train.items() if k not in ADDED_SETTINGS and k != "min_delta"}
        text = json.dumps([self.task, self.model, train, self.seed], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# Training settings that came after the first record (data/learned_memory_sweep.jsonl), with the value that switches
# each off; min_delta only tunes patience, so it is left out of a key with it
ADDED_SETTINGS = {"patience": 0}


def points_of(blocks: Sequence[Block], threads: int = 1, device: str = "cpu") -> tuple[list[Point], int]:
    """Every valid point of the blocks, in order and without repeats, and how many impossible ones were left out."""
    from lineage.models.lm import LMConfig
    from lineage.train.loop import TrainConfig
    from lineage.train.tasks import TaskConfig

    out: dict[str, Point] = {}
    skipped = 0
    for b in blocks:
        train = TrainConfig(
            lr=b.lrs[0], batch_size=b.batch, max_steps=b.steps, max_seconds=b.seconds, target_accuracy=b.target,
            eval_every=b.eval_every, patience=b.patience, min_delta=b.min_delta,
        )  # fmt: skip
        for mixer in b.mixers:
            for front in b.front_ends:
                for T in b.lengths:
                    for n in b.pairs:
                        try:
                            task = TaskConfig(b.task, b.vocab, T, n, b.n_stacks)
                        except ValueError:
                            skipped += 1
                            continue
                        for width in b.widths:
                            model = LMConfig(
                                mixer=mixer, vocab_size=b.vocab, max_len=T, d_model=width, n_layers=b.layers,
                                n_heads=b.heads, front_end=front,
                            )  # fmt: skip
                            for lr in b.lrs:
                                cfg = asdict(TrainConfig(**{**asdict(train), "lr": float(lr)}))
                                for seed in b.seeds:
                                    p = Point(task.to_dict(), model.to_dict(), cfg, int(seed), threads, device)
                                    out.setdefault(p.key, p)
    return list(out.values()), skipped


def run_point(point: Point) -> dict:
    """Train the point on its device with its thread count; its result as a dict (the job a pool or Ray runs)."""
    import torch

    from lineage.models.lm import LMConfig
    from lineage.train.loop import TrainConfig, train
    from lineage.train.tasks import TaskConfig

    torch.set_num_threads(point.threads)
    result = train(
        TaskConfig(**point.task),
        LMConfig(**point.model),
        TrainConfig(**point.train),
        seed=point.seed,
        device=point.device,
    )
    return result.to_dict()


@dataclass
class Results:
    """The results file: one JSON object per line, one line per finished point."""

    path: Path
    done: dict[str, dict] = field(default_factory=dict)  # key -> line
    torn: int = 0  # lines that could not be read (a write cut off by a crash)

    @classmethod
    def open(cls, path: str | os.PathLike) -> Results:
        """Read what the file holds (nothing if it does not exist), after checking it can be appended to."""
        path = Path(path)
        if path.is_dir():
            raise ValueError(f"--out {str(path)!r} is a directory; give a file path such as results.jsonl")
        if not path.parent.is_dir():
            raise ValueError(f"--out {str(path)!r}: the folder {str(path.parent)!r} does not exist")
        try:
            with path.open("a"):
                pass
        except OSError as exc:
            raise ValueError(f"--out {str(path)!r} cannot be written: {exc.strerror}") from None
        out = cls(path)
        text = path.read_text()
        if text and not text.endswith("\n"):  # a write cut off by a crash: end its line, so the next one is whole
            with path.open("a") as f:
                f.write("\n")
        for line in text.splitlines():
            try:
                record = json.loads(line)
                out.done[record["key"]] = record
            except (json.JSONDecodeError, KeyError, TypeError):
                out.torn += 1
        return out

    def append(self, record: dict) -> None:
        """Append one finished point: one write of one line, flushed to disk before the next point is awaited."""
        with self.path.open("a") as f:
            f.write(json.dumps(record, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.done[record["key"]] = record


def read_results(path: str | os.PathLike) -> list[dict]:
    """The finished points of a results file, in the order they finished (unreadable lines left out)."""
    out = []
    for line in Path(path).read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "result" in record:
            out.append(record)
    return out


def run_info(command: str, runner: str) -> dict:
    """How a session of the sweep ran, stored with each of its points."""
    return {
        "command": command,
        "runner": runner,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.system()}",
        "cpu_count": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


Finished = Callable[[Point, dict], None]


def run_local(points: Sequence[Point], workers: int, on_finish: Finished) -> None:
    """Run the points on a pool of ``workers`` processes, calling ``on_finish`` as each one finishes."""
    import concurrent.futures as cf
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter per worker: no torch state forked mid-run
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(run_point, p): p for p in points}
        try:
            for future in cf.as_completed(futures):
                on_finish(futures[future], future.result())
        except BaseException:  # Ctrl-C (or a failed point): drop the queue and stop the points in flight
            pool.shutdown(wait=False, cancel_futures=True)
            for worker in multiprocessing.active_children():
                worker.terminate()
            raise


def run_ray(points: Sequence[Point], address: str | None, on_finish: Finished, *, num_cpus: int | None = None) -> None:
    """Run the points as Ray tasks (one CPU per thread of a point) on the cluster at ``address`` — or, with None,
    on a Ray instance started on this machine with ``num_cpus`` CPUs — calling ``on_finish`` as each finishes."""
    try:
        import ray
    except ImportError:
        raise ValueError("--ray needs Ray: pip install ray (requirements-dev.txt lists it)") from None
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, num_cpus=None if address else num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(run_point)
        pending = {remote.options(num_cpus=p.threads).remote(p): p for p in points}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                on_finish(pending.pop(ref), ray.get(ref))
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started_here:
            ray.shutdown()


def sweep(
    points: Sequence[Point],
    results: Results,
    info: dict,
    *,
    workers: int = 1,
    ray_address: str | None = None,
    use_ray: bool = False,
    on_finish: Callable[[Point, dict, int], None] | None = None,
) -> int:
    """Run every point not yet in ``results``, appending each as it finishes. Returns how many were run.

    ``on_finish(point, result, finished so far)`` is called after each point is on disk.
    """
    todo = [p for p in points if p.key not in results.done]
    count = {"n": 0}

    def finished(point: Point, result: dict) -> None:
        results.append(
            {"format": SWEEP_FORMAT, "key": point.key, "threads": point.threads, "run": info, "result": result}
        )
        count["n"] += 1
        if on_finish is not None:
            on_finish(point, result, count["n"])

    if not todo:
        return 0
    if use_ray:
        run_ray(todo, ray_address, finished, num_cpus=workers)
    else:
        run_local(todo, workers, finished)
    return count["n"]


def default_workers(threads: int = 1) -> int:
    """A pool sized to the machine: the CPUs this process may use, divided by each point's threads."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus // threads)


MAX_CALIBRATED = 24  # model shapes timed before a sweep starts; a grid with more gets the caps' bound only


def step_seconds(task: dict, model: dict, train: dict, threads: int = 1, steps: int = 2, device: str = "cpu") -> float:
    """Seconds of one training step of this shape on this machine now: the median of ``steps`` steps after one
    warm-up step (:func:`lineage.train.loop.train_step`, the step training takes, which waits for its loss)."""
    import statistics
    import time

    import torch

    from lineage.models.lm import LM, LMConfig
    from lineage.train.loop import TrainConfig, optimiser, train_step
    from lineage.train.tasks import TaskConfig, make_batch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        lm = LM(LMConfig(**model), 0).to(device)
        opt, sched = optimiser(lm, TrainConfig(**train))
        batch = make_batch(TaskConfig(**task), train["batch_size"], 0)
        tokens, targets = batch.tokens.to(device), batch.targets.to(device)
        times = []
        for _ in range(steps + 1):
            start = time.perf_counter()
            train_step(lm, opt, sched, tokens, targets)
            times.append(time.perf_counter() - start)
        return statistics.median(times[1:])
    finally:
        torch.set_num_threads(before)


def estimate(points: Sequence[Point], workers: int) -> str:
    """The up-front estimate: how many points, and the wall time they take on ``workers`` workers if every point ran
    to its step budget, at step times measured here just now (each shape timed once), or the caps' bound."""
    if not points:
        return "nothing to run"

    def shape(p: Point) -> str:  # what a step's time depends on
        return json.dumps([p.task, p.model, p.train["batch_size"], p.threads, p.device], sort_keys=True)

    shapes: dict[str, Point] = {}
    for p in points:
        shapes.setdefault(shape(p), p)
    cap = sum(p.train["max_seconds"] for p in points) / workers
    budget = max(p.train["max_steps"] for p in points)
    head = f"{len(points)} point(s) to run, each until its target or its budget ({budget:,} steps at most)"
    if len(shapes) > MAX_CALIBRATED:
        return f"{head}: at most {duration(cap)} on {workers} worker(s) by the time caps ({len(shapes)} shapes)"
    per_shape = {k: step_seconds(p.task, p.model, p.train, p.threads, device=p.device) for k, p in shapes.items()}
    full = sum(min(p.train["max_seconds"], p.train["max_steps"] * per_shape[shape(p)]) for p in points)
    return (
        f"{head}: at most about {duration(full / workers)} on {workers} worker(s) if every point used its whole "
        f"budget, at the step times measured just now ({min(per_shape.values()):.2f}–{max(per_shape.values()):.2f} "
        "s a step); points that reach their target stop sooner"
    )


def describe(point: Point) -> str:
    """One point in a line: mechanism, front end, task size, width, learning rate, seed."""
    t, m = point.task, point.model
    size = f"{t['n_pairs']} pairs, " if t["task"] == "mqar" else ""
    return (
        f"{m['mixer']} ({m['front_end']}) {t['task']} {size}T {t['seq_len']}, width {m['d_model']}, "
        f"lr {point.train['lr']:g}, seed {point.seed}"
    )


def outcome(result: dict) -> str:
    """How a finished point ended, in a few words."""
    acc, steps, why, secs = (result[k] for k in ("accuracy", "steps", "stopped", "wall_seconds"))
    return f"{acc:.1%} after {steps:,} steps ({why}), {secs:.0f} s"
