"""What a recorded sweep (:mod:`lineage.train.sweep`) shows, computed from its results: each setting's best learning
rate with every seed's accuracy and their spread, and the Learned memory page's sentences, each naming its evidence.

A *setting* is one mechanism and front end at one task size and width; the sweep trains it at several learning
rates and seeds. As in Zoology (Arora et al. 2023), a setting is reported at its best learning rate: the one with the
highest mean held-out accuracy over its seeds (ties: fewer mean steps). A point that stopped at its step or time
budget before the target is a *budget* point, and every sentence that rests on one says so, as it says when a
result rests on one seed. A budget point whose held-out accuracy was still rising when the budget ran out (by
:func:`lineage.train.loop.stopped_rising`, with its own patience or, for a record trained without one,
:data:`lineage.train.loop.STILL_RISING`) is *still rising*: its accuracy is a lower bound, and is drawn as such.

Two records: the first (:data:`RECORD`, 4 and 8 pairs at 32 tokens, with the front-end ablation) and the capacity
record (:data:`CAPACITY_RECORD`): one model size for every mechanism, pairs from well inside to well past what its
fixed state holds, each point trained to its target or until its accuracy stopped rising. The page's headline and its
sentences about who falls where, and what the delta rule and the gates buy, are computed from the capacity record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# The recorded reference sweep the Learned memory page and the ledger read (python -m lineage sweep
# data/learned_memory_grid_cpu.json --out data/learned_memory_sweep.jsonl); absent where the package is installed alone
DATA = Path(__file__).resolve().parents[2] / "data"
RECORD = DATA / "learned_memory_sweep.jsonl"
# The capacity record (python -m lineage sweep data/learned_memory_capacity_grid.json --out
# data/learned_memory_capacity.jsonl --workers 1), the part of its grid a 2-core CPU records; the rest of the grid and
# its larger settings are the cluster grid's capacity blocks (data/learned_memory_grid.json)
CAPACITY_RECORD = DATA / "learned_memory_capacity.jsonl"
CAPACITY_GRID = DATA / "learned_memory_capacity_grid.json"
CLUSTER_GRID = DATA / "learned_memory_grid.json"
# The capacity record's part a lent GPU recorded (python -m lineage sweep data/learned_memory_capacity_gpu_grid.json
# --out data/learned_memory_capacity_gpu.jsonl --device cuda --workers 14): the same model, task and stopping rule,
# for the mechanisms, pair counts, width and seed the CPU's part leaves out; points of the cluster grid too
CAPACITY_GPU_RECORD = DATA / "learned_memory_capacity_gpu.jsonl"
CAPACITY_GPU_GRID = DATA / "learned_memory_capacity_gpu_grid.json"


def capacity_parts() -> tuple[tuple[Path, Path], ...]:
    """The capacity record's parts, the CPU's first: each part's record file and the grid file its command runs. The
    one list of them (read when asked, so a test can point a record elsewhere); a third part is one more pair here."""
    return (CAPACITY_RECORD, CAPACITY_GRID), (CAPACITY_GPU_RECORD, CAPACITY_GPU_GRID)


def capacity_records() -> tuple[Path, ...]:
    """The capacity record's files, in the order of :func:`capacity_parts`."""
    return tuple(record for record, _ in capacity_parts())


def capacity_grids() -> tuple[Path, ...]:
    """The grid files of the capacity record's parts, in the order of :func:`capacity_parts`."""
    return tuple(grid for _, grid in capacity_parts())


def read_capacity(paths: Sequence[Path] | None = None) -> list[dict]:
    """The capacity record's finished points: every file of :func:`capacity_records` (or ``paths``) that this copy
    has, one after the other. Each point's result names the device it trained on, and its run the grid file."""
    from lineage.train.sweep import read_results

    return [r for path in (capacity_records() if paths is None else paths) if path.exists() for r in read_results(path)]


MQAR_SOURCES = {
    "zoology": "Zoology (Arora et al. 2023, arXiv 2312.04927)",
    "deltanet": "DeltaNet (Yang et al. 2024, arXiv 2406.06484)",
    "kimi": "the Kimi Linear report (arXiv 2510.26692, §5.1, Figure 4b)",
}
TIE = 0.02  # accuracies this close count as equal
PLATEAU = 0.1  # within this of 1/pairs, a point is on the "one of the values" plateau
HOLDS = 0.9  # a mechanism holds a number of pairs while its mean accuracy there is at least this


@dataclass(frozen=True)
class Setting:
    mixer: str
    front_end: str
    task: str
    n_pairs: int
    seq_len: int
    width: int


@dataclass(frozen=True)
class Summary:
    """One setting at its best learning rate: every seed's final accuracy, steps and why it stopped."""

    setting: Setting
    lrs: tuple[float, ...]  # the learning rates tried
    lr: float  # the best of them
    seeds: tuple[int, ...]
    accuracies: tuple[float, ...]  # final held-out accuracy per seed, at the best lr
    steps: tuple[int, ...]
    stopped: tuple[str, ...]  # "target" | "max_steps" | "max_seconds" per seed
    max_steps: int
    carried: dict  # numbers one layer carries (lineage.models.lm.LMConfig.carried)
    chance: float
    rising: tuple[bool, ...] = ()  # per seed: stopped at its budget while its accuracy was still rising

    @property
    def mean(self) -> float:
        return sum(self.accuracies) / len(self.accuracies)

    @property
    def low(self) -> float:
        return min(self.accuracies)

    @property
    def high(self) -> float:
        return max(self.accuracies)

    @property
    def solved(self) -> bool:
        """Every seed reached the target."""
        return all(s == "target" for s in self.stopped)

    @property
    def budget(self) -> bool:
        """Some seed stopped short of the target: at its step or time budget, or on a plateau."""
        return not self.solved

    @property
    def still_rising(self) -> bool:
        """Some seed hit its budget while its accuracy was still rising: the mean is a lower bound."""
        return any(self.rising)

    def state_size(self) -> int:
        """Numbers one layer holds at the end of a sequence: fixed state, normaliser, conv cache, and a growing cache
        over the whole sequence (the x axis of Zoology's accuracy-against-state-size plots)."""
        c = self.carried
        return c["state"] + c["normaliser"] + c["conv"] + c["per_token"] * self.setting.seq_len

    def evidence(self) -> str:
        """The numbers behind a claim about this setting: accuracy over the seeds, lr, steps, budget hits."""
        seeds = len(self.seeds)
        if seeds == 1:
            acc = f"{self.mean:.1%}"
        elif self.low == self.high:
            acc = f"{self.mean:.1%} (all {seeds} seeds)"
        else:
            acc = f"{self.mean:.1%} (seeds {self.low:.1%}–{self.high:.1%})"
        steps = (
            f"{min(self.steps):,}" if min(self.steps) == max(self.steps) else f"{min(self.steps):,}–{max(self.steps):,}"
        )
        lr = (
            f"best of lr {', '.join(f'{x:g}' for x in self.lrs)}: {self.lr:g}"
            if len(self.lrs) > 1
            else f"lr {self.lr:g}"
        )
        notes = [lr, f"{steps} steps"]
        of = f"of {seeds} seed" + ("" if seeds == 1 else "s")
        if plateau := sum(s == "plateau" for s in self.stopped):
            notes.append(f"{plateau} {of} stopped rising short of the target")
        if hit := sum(s in ("max_steps", "max_seconds") for s in self.stopped):
            notes.append(f"{hit} {of} hit the {self.max_steps:,}-step budget")
        if rising := sum(self.rising):
            notes.append(f"{rising} of them still rising")
        if seeds == 1:
            notes.append("one seed")
        return f"{acc}; {', '.join(notes)}"


def in_sentence(name: str) -> str:
    """A mixer's title (``lineage.models.lm.mixer_title``) inside a sentence: a common noun's capital lowered ("Linear
    attention" → "linear attention", "No mixing (control)" → "no mixing (control)"), a name's kept (DeltaNet, Mamba-2,
    KDA, Gated DeltaNet, Hybrid (KDA + MLA): a single word, or a capital after the first word)."""
    first, _, rest = name.partition(" ")
    if rest and first[1:].islower() and not any(c.isupper() for c in rest):
        return name[0].lower() + name[1:]
    return name


def label(s: Setting, title) -> str:
    """``title(mixer)`` with the front end when it is not the default ("softmax − conv")."""
    return title(s.mixer) + {"conv": "", "none": " − conv", "paper": " (paper's front end)"}[s.front_end]


def summarise(results: Iterable[dict]) -> list[Summary]:
    """One :class:`Summary` per setting of ``results`` (TrainResult dicts), at its best learning rate."""
    from lineage.train.tasks import TaskConfig

    groups: dict[Setting, dict[float, list[dict]]] = {}
    for r in results:
        t, m = r["task"], r["model"]
        s = Setting(m["mixer"], m.get("front_end", "paper"), t["task"], t["n_pairs"], t["seq_len"], m["d_model"])
        groups.setdefault(s, {}).setdefault(r["train"]["lr"], []).append(r)
    out = []
    for s, by_lr in groups.items():

        def score(lr: float, by_lr=by_lr) -> tuple[float, float]:
            rs = by_lr[lr]
            return (sum(r["accuracy"] for r in rs) / len(rs), -sum(r["steps"] for r in rs) / len(rs))

        lr = max(by_lr, key=score)
        rs = sorted(by_lr[lr], key=lambda r: r["seed"])
        out.append(
            Summary(
                setting=s,
                lrs=tuple(sorted(by_lr)),
                lr=lr,
                seeds=tuple(r["seed"] for r in rs),
                accuracies=tuple(r["accuracy"] for r in rs),
                steps=tuple(r["steps"] for r in rs),
                stopped=tuple(r["stopped"] for r in rs),
                max_steps=max(r["train"]["max_steps"] for r in rs),
                carried=rs[0].get("carried") or {},
                chance=TaskConfig(**rs[0]["task"]).chance,
                rising=tuple(was_rising(r) for r in rs),
            )
        )
    return sorted(out, key=lambda x: (x.setting.front_end != "conv", x.setting.width, x.setting.n_pairs))


def was_rising(result: dict) -> bool:
    """Whether a point stopped at its step or time budget while its held-out accuracy was still rising, judged by
    its own patience and rise, or :data:`lineage.train.loop.STILL_RISING` where it trained without one. A point
    without a stored curve is not judged (False)."""
    from lineage.train.loop import STILL_RISING, stopped_rising

    curve = result.get("eval_accuracy") or []
    if result["stopped"] not in ("max_steps", "max_seconds") or not curve:
        return False
    patience = result["train"].get("patience") or STILL_RISING[0]
    min_delta = (
        result["train"].get("min_delta", STILL_RISING[1]) if result["train"].get("patience") else STILL_RISING[1]
    )
    return not stopped_rising(curve, patience, min_delta)


def main_width(summaries: Sequence[Summary]) -> int:
    """The width most settings were trained at (the pairs axis is drawn there)."""
    widths = [x.setting.width for x in summaries]
    return max(set(widths), key=lambda w: (widths.count(w), w))


def by_pairs(summaries: Sequence[Summary], front_end: str = "conv") -> list[Summary]:
    """The pairs axis: settings with ``front_end`` at the main width, by mechanism then pairs."""
    w = main_width(summaries)
    return [x for x in summaries if x.setting.front_end == front_end and x.setting.width == w]


def by_width(summaries: Sequence[Summary], n_pairs: int) -> list[Summary]:
    """The capacity axis: conv settings at ``n_pairs``, over every width recorded."""
    return [x for x in summaries if x.setting.front_end == "conv" and x.setting.n_pairs == n_pairs]


def capacity_pairs(summaries: Sequence[Summary]) -> int | None:
    """The number of pairs recorded at more than one width (the capacity axis), the largest such; None if none."""
    widths: dict[int, set[int]] = {}
    for x in summaries:
        if x.setting.front_end == "conv":
            widths.setdefault(x.setting.n_pairs, set()).add(x.setting.width)
    multi = [n for n, ws in widths.items() if len(ws) > 1]
    return max(multi) if multi else None


def solved_sentences(summaries: Sequence[Summary], title) -> list[str]:
    """Per mechanism on the pairs axis: where it reached the target on every seed, and where it fell short."""
    out = []
    rows: dict[str, list[Summary]] = {}
    for x in by_pairs(summaries):
        rows.setdefault(x.setting.mixer, []).append(x)
    for mixer, xs in rows.items():
        xs = sorted(xs, key=lambda x: x.setting.n_pairs)
        parts = [f"{x.setting.n_pairs} pairs: {x.evidence()}" for x in xs]
        solved = [x.setting.n_pairs for x in xs if x.solved]
        head = (
            f"**{title(mixer)}** reached the target on every seed at {', '.join(map(str, solved))} pairs"
            if solved
            else f"**{title(mixer)}** did not reach the target on every seed at any recorded size"
        )
        out.append(f"{head} — " + "; ".join(parts) + ".")
    return out


def most_learned(summaries: Sequence[Summary], title) -> str:
    """Who learned most at the hardest size every mechanism was recorded at, with the evidence."""
    rows = by_pairs(summaries)
    if not rows:
        return ""
    mixers = {x.setting.mixer for x in rows}
    if len(mixers) < 2:
        return ""
    shared = [
        n
        for n in {x.setting.n_pairs for x in rows}
        if {x.setting.mixer for x in rows if x.setting.n_pairs == n} == mixers
    ]
    if not shared:
        return ""
    n = max(shared)
    at = sorted((x for x in rows if x.setting.n_pairs == n), key=lambda x: (-x.mean, sum(x.steps)))
    best = at[0]
    tied = [x for x in at if best.mean - x.mean <= TIE]
    if len(tied) > 1:
        names = [in_sentence(title(x.setting.mixer)) for x in tied]
        who = ", ".join(names[:-1]) + " and " + names[-1]
        fastest = min(tied, key=lambda x: sum(x.steps) / len(x.steps))
        return (
            f"At {n} pairs, the hardest size every mechanism was recorded at, {who} are within {TIE:.0%} of each "
            f"other ({best.mean:.1%} at best); {in_sentence(title(fastest.setting.mixer))} got there in the fewest "
            f"steps ({fastest.evidence()})."
        )
    name = in_sentence(title(best.setting.mixer))
    return f"At {n} pairs, the hardest size every mechanism was recorded at, {name} learned most: {best.evidence()}."


def ablations(summaries: Sequence[Summary]) -> list[tuple[Summary, Summary]]:
    """(with the convolution, without it) for every setting the record has both ways: same mechanism, pairs, length
    and width."""
    conv = {
        (x.setting.mixer, x.setting.n_pairs, x.setting.seq_len, x.setting.width): x
        for x in summaries
        if x.setting.front_end == "conv"
    }
    return [
        (conv[k], x)
        for x in summaries
        if x.setting.front_end == "none"
        and (k := (x.setting.mixer, x.setting.n_pairs, x.setting.seq_len, x.setting.width)) in conv
    ]


def front_end_sentences(summaries: Sequence[Summary], title) -> list[str]:
    """Each ablation: the same mechanism and size with and without the convolution, from the record."""
    out = []
    for with_conv, x in ablations(summaries):
        s = x.setting
        plateau = abs(x.mean - 1 / s.n_pairs) < PLATEAU and not x.solved
        out.append(
            f"**{label(s, title)}** at {s.n_pairs} pairs: {x.evidence()}"
            + (f" — on the 1/{s.n_pairs} plateau" if plateau else "")
            + f"; with the convolution: {with_conv.evidence()}."
        )
    return out


@dataclass(frozen=True)
class Headline:
    """The page's first claim: a sentence, the number that proves it, and what the number is."""

    claim: str
    label: str
    shown: str


def headline(summaries: Sequence[Summary], title) -> Headline | None:
    """The record's point in one sentence and one number: the front end's effect where the record has an ablation
    (the largest drop from a mechanism with the convolution to the same mechanism without it), else who learned
    most. None for a record with neither."""
    pairs = ablations(summaries)
    if pairs:
        with_conv, without = max(pairs, key=lambda p: p[0].mean - p[1].mean)
        s = without.setting
        dropped = [(c, w) for c, w in pairs if c.mean - w.mean > TIE]

        def names(xs: list[str]) -> str:
            return xs[0] if len(xs) == 1 else f"{', '.join(xs[:-1])} and {xs[-1]}"

        if not dropped:
            return Headline(
                f"With or without the short convolution on q, k and v, {title(s.mixer)} learned MQAR alike here "
                f"({s.n_pairs} pairs, {s.seq_len} tokens, width {s.width}, the recorded sweep).",
                f"{title(s.mixer)} with → without the convolution",
                f"{with_conv.mean:.1%} → {without.mean:.1%}",
            )
        with_it = names([f"{title(c.setting.mixer)} {c.mean:.1%}" for c, _ in dropped])
        without_it = names([f"{title(w.setting.mixer)} {w.mean:.1%}" for _, w in dropped])
        claim = (
            f"The front end decides this task: with the same short convolution on q, k and v, {with_it}; "
            f"without it, {without_it}, near the 1/{s.n_pairs} of answering with one of the values at random "
            f"(MQAR, {s.n_pairs} pairs, {s.seq_len} tokens, width {s.width}, the recorded sweep)."
        )
        return Headline(
            claim,
            f"{title(s.mixer)} with → without the convolution",
            f"{with_conv.mean:.1%} → {without.mean:.1%}",
        )
    ranked = sorted(summaries, key=lambda x: -x.mean)
    if not ranked:
        return None
    top = ranked[0]
    s = top.setting
    return Headline(
        f"In the recorded sweep, {label(s, title)} learned most on MQAR at {s.n_pairs} pairs.",
        f"{label(s, title)}, {s.n_pairs} pairs",
        f"{top.mean:.0%}",
    )


def plateau_sentence(summaries: Sequence[Summary], title) -> str:
    """Settings that ended on the "one of the values" plateau (accuracy near 1/pairs, short of the target)."""
    near = [x for x in summaries if not x.solved and abs(x.mean - 1 / x.setting.n_pairs) < PLATEAU]
    if not near:
        return ""
    said = ", ".join(f"{label(x.setting, title)} at {x.setting.n_pairs} pairs ({x.mean:.0%})" for x in near)
    return (
        f"On the plateau when the budget ran out: {said}. Accuracy near 1/N for N pairs means the model answers "
        "with one of the values in the context but not the one bound to the queried key; these points say the "
        "budget ran out, not that the memory did."
    )


def _at_shared_pairs(a: Sequence[Summary], b: Sequence[Summary]) -> tuple[list[int], list[tuple[Summary, Summary]]]:
    """The pair counts both mechanisms' rows have, and their rows side by side at each."""
    shared = sorted({x.setting.n_pairs for x in a} & {x.setting.n_pairs for x in b})
    at = [(next(x for x in a if x.setting.n_pairs == n), next(x for x in b if x.setting.n_pairs == n)) for n in shared]
    return shared, at


def paper_checks(summaries: Sequence[Summary], title) -> list[str]:
    """Each paper's MQAR finding, checked against the record at the matched (conv) front end, with the evidence."""
    rows = by_pairs(summaries)
    by: dict[str, list[Summary]] = {}
    for x in rows:
        by.setdefault(x.setting.mixer, []).append(x)
    lines = []

    def verdict(agree: bool, xs: Sequence[Summary]) -> str:
        caveats = []
        if any(len(x.seeds) == 1 for x in xs):
            caveats.append("rests on one seed")
        if any(x.budget for x in xs):
            caveats.append("some of these points hit the budget")
        tail = f" ({'; '.join(caveats)})" if caveats else ""
        return f"this record {'agrees' if agree else '**disagrees**'}{tail}"

    if "softmax" in by:
        xs = by["softmax"]
        agree = all(x.solved for x in xs)
        here = "; ".join(f"{x.setting.n_pairs} pairs {x.evidence()}" for x in xs)
        lines.append(
            f"{MQAR_SOURCES['zoology']}: attention solves MQAR at every size it tests. Here, softmax with the "
            f"matched front end: {here} — {verdict(agree, xs)}."
        )
    if "deltanet" in by and "linear_attention" in by:
        shared, pairs = _at_shared_pairs(by["deltanet"], by["linear_attention"])
        agree = all(a.mean > b.mean + TIE or (a.solved and not b.solved) for a, b in pairs)
        here = "; ".join(
            f"{n} pairs: DeltaNet {a.mean:.0%}, linear attention {b.mean:.0%}"
            for n, (a, b) in zip(shared, pairs, strict=True)
        )
        lines.append(
            f"{MQAR_SOURCES['deltanet']}: on MQAR the delta rule beats additive linear attention. Here: {here} — "
            f"{verdict(agree, [x for p in pairs for x in p])}."
        )
    if "kda" in by and "gated_deltanet" in by:
        shared, pairs = _at_shared_pairs(by["kda"], by["gated_deltanet"])
        agree = all(a.mean >= b.mean - TIE for a, b in pairs)
        here = "; ".join(
            f"{n} pairs: KDA {a.mean:.0%} in {sum(a.steps) / len(a.steps):.0f} steps, Gated DeltaNet {b.mean:.0%} in "
            f"{sum(b.steps) / len(b.steps):.0f}"
            for n, (a, b) in zip(shared, pairs, strict=True)
        )
        lines.append(
            f"{MQAR_SOURCES['kimi']}: KDA is at least as accurate as Gated DeltaNet on MQAR, and converges faster at "
            f"long contexts (its runs: 256–2,048 tokens, up to 20,000 steps; these are far shorter). Here: {here} — "
            f"{verdict(agree, [x for p in pairs for x in p])}."
        )
    return lines


def capacity_sentence(summaries: Sequence[Summary], title) -> str:
    """What the capacity axis shows: each mechanism's accuracy as its state shrinks, at one number of pairs."""
    n = capacity_pairs(summaries)
    if n is None:
        return ""
    rows: dict[str, list[Summary]] = {}
    for x in by_width(summaries, n):
        rows.setdefault(x.setting.mixer, []).append(x)
    parts = []
    for mixer, xs in rows.items():
        xs = sorted(xs, key=lambda x: x.setting.width)
        parts.append(
            f"{in_sentence(title(mixer))} "
            + ", ".join(f"{x.mean:.0%} at width {x.setting.width} ({x.state_size():,} numbers)" for x in xs)
        )
    budget = sum(x.budget for xs in rows.values() for x in xs)
    return (
        f"At {n} pairs, narrowing the model shrinks every layer's memory: "
        + "; ".join(parts)
        + "."
        + (
            f" {budget} of these settings hit the budget on some seed, so a low point there may be a plateau."
            if budget
            else ""
        )
        + _cache_fails_too(rows, title)
    )


def _cache_fails_too(rows: dict[str, list[Summary]], title) -> str:
    """Where the cache (softmax, whose memory holds every pair) also fails at a width, a fixed state's drop there
    is not evidence that the state ran out of room: the narrow model as a whole did not learn in the budget."""
    cache = {x.setting.width: x for x in rows.get("softmax", [])}
    widths = sorted(w for w, x in cache.items() if not x.solved)
    fixed = [m for m in rows if m != "softmax" and any(x.setting.width in widths for x in rows[m])]
    if not widths or not fixed:
        return ""
    at, falls = ", ".join(str(w) for w in widths), ", ".join(f"{cache[w].mean:.0%}" for w in widths)
    return (
        f" At width {at} {in_sentence(title('softmax'))} fails too ({falls}), though "
        "its cache keeps every pair: there the whole narrow model did not learn within the budget, so the fixed "
        "states' drops at that width do not show them running out of room."
    )


def memory_caption(summaries: Sequence[Summary], title) -> str:
    """What one layer of each recorded model carries, by part, at the main width — the state-size caption."""
    rows = [x for x in by_pairs(summaries) if x.carried]
    if not rows:
        return ""
    seen: dict[str, Summary] = {}
    for x in rows:
        seen.setdefault(x.setting.mixer, x)
    parts = []
    for mixer, x in seen.items():
        c, T = x.carried, x.setting.seq_len
        bits = []
        if c["state"]:
            bits.append(f"{c['state']:,} of state")
        if c["normaliser"]:
            bits.append(f"{c['normaliser']:,} of normaliser")
        if c["per_token"]:
            bits.append(f"a cache of {c['per_token']:,} per token ({c['per_token'] * T:,} at {T} tokens)")
        if c["conv"]:
            bits.append(f"{c['conv']:,} of convolution cache")
        parts.append(f"{in_sentence(title(mixer))} {' + '.join(bits)} = {x.state_size():,}")
    width = rows[0].setting.width
    return f"Numbers one layer carries from token to token at width {width}: " + "; ".join(parts) + "."


def on_plateau(results: Iterable, n_pairs: int) -> list:
    """The TrainResults (of one MQAR task with ``n_pairs``) that ended short of the target near 1/``n_pairs``."""
    return [r for r in results if not r.solved and abs(r.accuracy - 1 / n_pairs) < PLATEAU]


# ---- the capacity record: who falls where, and what the write rule and the gates buy ------------------------------

# (mechanism, the one it adds to, what it adds): each step of the table whose both ends a record may hold
STEPS = (
    ("deltanet", "linear_attention", "the delta rule"),
    ("mamba2", "linear_attention", "a scalar gate on the additive write"),
    ("gla", "linear_attention", "per-channel gates on the additive write"),
    ("gated_deltanet", "deltanet", "a scalar gate on the delta rule"),
    ("kda", "gated_deltanet", "per-channel gates over one gate per head"),
)


def _rows(summaries: Sequence[Summary]) -> dict[str, list[Summary]]:
    """The pairs axis (matched front end, main width) by mechanism, each sorted by pairs (none for no summaries)."""
    rows: dict[str, list[Summary]] = {}
    if not summaries:
        return rows
    for x in sorted(by_pairs(summaries), key=lambda x: x.setting.n_pairs):
        rows.setdefault(x.setting.mixer, []).append(x)
    return rows


def _notes(xs: Sequence[Summary], title) -> list[str]:
    """The caveats of a claim resting on ``xs`` that states no evidence of its own: still-rising budget points (named
    as ``title`` names them), one seed. A sentence that gives each setting's evidence has them there already."""
    notes = []
    widths = len({x.setting.width for x in xs}) > 1  # a claim across widths names each point's

    def named(ys: Sequence[Summary]) -> str:
        return ", ".join(
            f"{in_sentence(title(y.setting.mixer))} at {y.setting.n_pairs} pairs"
            + (f" and width {y.setting.width}" if widths else "")
            for y in ys
        )

    if rising := [x for x in xs if x.still_rising]:
        notes.append(f"still rising when the budget ran out: {named(rising)}, so those are lower bounds")
    if single := [x for x in xs if len(x.seeds) == 1]:
        notes.append("rests on one seed" if len(single) == len(xs) else f"one seed only: {named(single)}")
    return notes


def falls_at(xs: Sequence[Summary]) -> tuple[Summary | None, Summary | None]:
    """A mechanism's row (sorted by pairs): the largest size it holds (mean ≥ :data:`HOLDS`, every smaller size
    held too) and the first size it does not; None where there is none."""
    held = None
    for x in xs:
        if x.mean < HOLDS:
            return held, x
        held = x
    return held, None


def falls_sentences(summaries: Sequence[Summary], title) -> list[str]:
    """Per mechanism, where its accuracy leaves the top: the most pairs it holds and where it falls, with the
    evidence (seeds' spread, steps, why each stopped)."""
    out = []
    for mixer, xs in _rows(summaries).items():
        held, fell = falls_at(xs)
        name = f"**{title(mixer)}**"
        if fell is None:
            out.append(f"{name} holds every recorded size, up to {xs[-1].setting.n_pairs} pairs: {xs[-1].evidence()}.")
            continue
        where = (
            f"holds {held.setting.n_pairs} pairs ({held.mean:.0%}) and falls at {fell.setting.n_pairs}"
            if held
            else f"holds none of the recorded sizes; at {fell.setting.n_pairs} pairs"
        )
        out.append(f"{name} {where}: {fell.evidence()}.")
    return out


def separated(a: Summary, b: Summary) -> bool:
    """Every seed of one setting above every seed of the other: the record tells them apart (one seed is a range of
    one point)."""
    return a.low > b.high or b.low > a.high


def step_sentences(summaries: Sequence[Summary], title) -> list[str]:
    """What each step of the table buys on this record: the mechanism against the one it adds to, at the size where
    they differ most with their seeds apart (:func:`separated`); where the seeds overlap at every size, that the
    record does not tell them apart; where they tie, that they tie; with both sides' evidence."""
    rows = _rows(summaries)
    out = []
    for new, old, what in STEPS:
        if new not in rows or old not in rows:
            continue
        shared, pairs = _at_shared_pairs(rows[new], rows[old])
        if not shared:
            continue
        apart = [(a, b) for a, b in pairs if separated(a, b) and abs(a.mean - b.mean) > TIE]
        a, b = max(apart or pairs, key=lambda p: abs(p[0].mean - p[1].mean))
        n, gap = a.setting.n_pairs, a.mean - b.mean
        if abs(gap) <= TIE:
            verdict = f"buys nothing measurable here: within {TIE:.0%} at every recorded size"
        elif not apart:
            verdict = (
                f"buys nothing this record can separate ({abs(gap) * 100:.0f} points {'up' if gap > 0 else 'down'} "
                f"on the mean at {n} pairs, the seeds overlapping at every recorded size)"
            )
        elif gap > 0:
            verdict = f"buys {gap * 100:.0f} points at {n} pairs"
        else:
            verdict = f"costs {-gap * 100:.0f} points at {n} pairs"
        out.append(
            f"{what.capitalize()} ({in_sentence(title(new))} over {in_sentence(title(old))}) {verdict}: "
            f"{in_sentence(title(new))} {a.evidence()}; {in_sentence(title(old))} {b.evidence()}."
        )
    return out


def ran_out_of_room(summaries: Sequence[Summary]) -> list[tuple[Summary, Summary, Summary]]:
    """(wider, narrower, the cache at the narrower width) for each fixed state that holds a number of pairs at one
    width and falls at a narrower one while softmax's cache still holds there: a state running out of room, with the
    model otherwise able to learn the task at that width. Largest drop first."""
    n = capacity_pairs(summaries)
    if n is None:
        return []
    at = {(x.setting.mixer, x.setting.width): x for x in by_width(summaries, n)}
    out = []
    for (mixer, wide), x in at.items():
        for (other, narrow), y in at.items():
            cache = at.get(("softmax", narrow))
            holds = cache is not None and cache.mean >= HOLDS
            if other == mixer != "softmax" and narrow < wide and holds and x.mean >= HOLDS > y.mean:
                out.append((x, y, cache))
    return sorted(out, key=lambda t: t[1].mean - t[0].mean)


def capacity_headline(summaries: Sequence[Summary], title) -> Headline | None:
    """The capacity record in one sentence and one number: a fixed state that runs out of room when the model is
    narrowed while the cache holds (:func:`ran_out_of_room`), else, at the most pairs every recorded mechanism was
    trained at, the cache (softmax) against the best and worst fixed state. None without softmax and a fixed state."""
    if fell := ran_out_of_room(summaries):
        x, y, cache = fell[0]
        n, name = x.setting.n_pairs, title(x.setting.mixer)
        claim = (
            f"Shrink the state and it runs out of room: at {n} pairs in {x.setting.seq_len} tokens, "
            f"{in_sentence(name)} holds them when a layer carries {x.state_size():,} numbers ({x.mean:.0%}, "
            f"width {x.setting.width}) and falls with {y.state_size():,} ({y.mean:.0%}, width {y.setting.width}), "
            f"while softmax's cache, which grows with the sequence, still holds at that width ({cache.mean:.0%}). "
            "From the capacity record" + "".join(f"; {note}" for note in _notes([x, y, cache], title)) + "."
        )
        return Headline(
            claim, f"{name}, {n} pairs: width {x.setting.width} → {y.setting.width}", f"{x.mean:.0%} → {y.mean:.0%}"
        )
    rows = _rows(summaries)
    if "softmax" not in rows or len(rows) < 2:
        return None
    shared = set.intersection(*({x.setting.n_pairs for x in xs} for xs in rows.values()))
    if not shared:
        return None
    n = max(shared)
    at = {m: next(x for x in xs if x.setting.n_pairs == n) for m, xs in rows.items()}
    cache = at.pop("softmax")
    ranked = sorted(at.values(), key=lambda x: -x.mean)
    best, worst = ranked[0], ranked[-1]
    s = cache.setting
    where = "; ".join(
        [
            f"MQAR, {n} pairs in {s.seq_len} tokens, width {s.width}, the capacity record",
            *_notes(ranked + [cache], title),
        ]
    )

    def steps(x: Summary) -> str:
        return f"{sum(x.steps) / len(x.steps):,.0f} steps"

    fixed = ", ".join(f"{in_sentence(title(x.setting.mixer))} {x.mean:.0%} in {steps(x)}" for x in ranked)
    if cache.mean >= HOLDS and best.mean < cache.mean - TIE:
        claim = (
            f"At the same width, softmax's cache holds all {n} pairs ({cache.mean:.0%} in {steps(cache)}) while every "
            "fixed state "
            f"falls short: {fixed} ({where})."
        )
    elif cache.mean >= HOLDS:
        claim = (
            f"At {n} pairs the best fixed state keeps up with softmax's cache, given the steps: softmax "
            f"{cache.mean:.0%} in {steps(cache)}, {fixed} "
            f"({where})."
        )
    else:
        claim = (
            f"At {n} pairs even softmax's cache, which keeps every pair, reached only {cache.mean:.0%}: this model did "
            f"not learn that size in its budget, so the fixed states' {fixed} do not show them running out of room "
            f"({where})."
        )
    return Headline(
        claim,
        f"{n} pairs: softmax → best fixed state ({title(best.setting.mixer)}) → worst",
        f"{cache.mean:.0%} → {best.mean:.0%} → {worst.mean:.0%}",
    )


def capacity_rows(summaries: Sequence[Summary]) -> tuple[int | None, list[Summary]]:
    """Zoology's picture: at the most pairs every mechanism was recorded at, every setting there (each width a point
    of its mechanism's line), for accuracy against the numbers a layer carries."""
    rows = _rows(summaries)
    if not rows:
        return None, []
    shared = set.intersection(*({x.setting.n_pairs for x in xs} for xs in rows.values()))
    if not shared:
        return None, []
    n = max(shared)
    return n, by_width(summaries, n)


def rising_lines(rows: Sequence[Summary], x_of) -> dict[str, list[bool]]:
    """Per line of :func:`sweep_lines` (same keys, same order): whether each point has a seed that hit its budget
    while still rising, so the chart can draw it as a lower bound."""
    out: dict[str, list[bool]] = {}
    for x in sorted(rows, key=x_of):
        key = x.setting.mixer + ("" if x.setting.front_end == "conv" else f"/{x.setting.front_end}")
        out.setdefault(key, []).append(x.still_rising)
    return out


def repo_relative(command: str) -> str:
    """A recorded command with its absolute paths to the repository's data/ (the recording checkout's) written from
    the repository's root, as the commands run here: the same command however its session spelt the path."""
    return " ".join(
        "data/" + word.split("/data/", 1)[1] if word.startswith("/") and "/data/" in word else word
        for word in command.split(" ")
    )


def grid_of(command: str) -> str:
    """The grid file a recorded sweep command ran, as written from the repository's root."""
    words = repo_relative(command).split(" ")
    return words[words.index("sweep") + 1] if "sweep" in words[:-1] else "?"


def capacity_caption(results: Sequence[dict], grid_points: Mapping[str, int], cluster_points: int) -> str:
    """Where the capacity record's points come from, one sentence per grid file it ran (each device's part): how
    many of that grid's points, which machine and device, sessions and load, the command that resumes it; then the
    stopping rule and what is left for the cluster grid. ``grid_points``: each grid file's size, by its name as the
    commands write it (a grid missing there counts its recorded points)."""
    parts: dict[str, list[dict]] = {}
    for r in results:
        parts.setdefault(grid_of(r["run"]["command"]), []).append(r)
    said = [_record_part(grid, rs, grid_points.get(grid, len(rs))) for grid, rs in parts.items()]
    train = results[0]["result"]["train"]
    return (
        " ".join(said)
        + f" Each point trains until {train['target_accuracy']:.0%} held-out accuracy, or until none of its last "
        f"{train['patience']} evaluations (every {train['eval_every']} steps) is {train['min_delta'] * 100:.0f} point "
        f"above the best before them, or {train['max_steps']:,} steps. The cluster grid "
        f"(data/learned_memory_grid.json, {cluster_points:,} points in all) adds more seeds, learning rates and "
        "widths; of its points only those above are drawn."
    )


def _record_part(grid: str, results: Sequence[dict], grid_points: int) -> str:
    """One grid file's part of the capacity record in a sentence (:func:`capacity_caption`)."""
    sessions = sorted({r["run"]["started"]: r["run"] for r in results}.items())
    commands = list(dict.fromkeys(repo_relative(r["run"]["command"]) for r in results))
    run = sessions[0][1]
    runners = " and ".join(dict.fromkeys(r["run"]["runner"] for r in results))
    first = results[0]["result"]
    devices = " and ".join(dict.fromkeys(r["result"]["device"] for r in results))
    torches = " and ".join(dict.fromkeys(r["result"]["torch_version"] for r in results))
    load = run["load_average"][0]
    shared = ": other work shared the machine" if load > 0.75 * run["cpu_count"] else ""
    left = grid_points - len(results)
    rest = (
        f" The other {left} points of that grid were not run in the time this record had; the same command resumes it."
        if left > 0
        else ""
    )
    return (
        f"{len(results)} points of the {grid_points} in {grid}, recorded on {run['machine']} ({run['cpu_count']} "
        f"cores, {runners}, {first['threads']} torch thread per point, load average {load:.1f} when it started"
        f"{shared}), device {devices}, torch {torches}, in {len(sessions)} session"
        f"{'s' if len(sessions) != 1 else ''} from {sessions[0][0]}, with "
        + " and ".join(f"`{c}`" for c in commands)
        + f".{rest}"
    )


def ledger_sentence(capacity: Sequence[dict], first: Sequence[dict], title) -> str:
    """The ledger's KDA row: what per-channel gates bought on the capacity record (KDA against Gated DeltaNet), or,
    without it, who learned most on the first record; empty when neither says anything."""
    if capacity:
        summaries = summarise(r["result"] for r in capacity)
        said = [line for line in step_sentences(summaries, title) if line.startswith("Per-channel gates over")]
        if said:
            return f" Small trained models, on the Learned memory page (MQAR, its capacity record): {said[0]}"
    if first:
        said = most_learned(summarise(r["result"] for r in first), title)
        if said:
            return f" Small trained models, on the Learned memory page (MQAR, its recorded sweep): {said}"
    return ""


def pointer_sentence(capacity: Sequence[dict], title) -> str:
    """One sentence for the tour and the home page: where the fixed states fell on the capacity record, against the
    cache (the page's headline); empty without one."""
    point = capacity_headline(summarise(r["result"] for r in capacity), title)
    return "" if point is None else point.claim


def capacity_pointer(paths: Sequence[Path] | None = None) -> str:
    """:func:`pointer_sentence` of the capacity record on disk (:func:`read_capacity`), mechanisms named as the
    Learned memory page names them; empty where this copy has no record."""
    from lineage.models.lm import mixer_title

    return pointer_sentence(results, mixer_title) if (results := read_capacity(paths)) else ""


# ---- the Learned memory page's words and sentences, apart from the page so they can be tested ----------------------

FRONT_END_TITLES = {
    "conv": "the same short convolution on q, k, v for every mixer",
    "none": "no convolution for any mixer (the ablation)",
}
# the same choices as the page's select shows them, short enough for its box on a 1280 px slide in presenter mode
FRONT_END_CHOICES = {"conv": "short conv on q, k, v", "none": "none (the ablation)"}
PLATEAU_TEXT = (
    "Every mixer first learns to guess *one of the values* in the context — accuracy near 1/N for N pairs — and sits "
    "there until it can bind each value to the key just before it. The short convolution hands every position the "
    "previous tokens, so with it that step comes early; without it the model must learn it from the position "
    "embedding, which can take thousands of steps."
)


def sweep_lines(rows: Sequence[Summary], x_of, title) -> tuple[dict, dict, dict]:
    """Chart lines from summaries: key -> (x, mean accuracy), key -> (lowest, highest seed), key -> name. A setting
    without the convolution gets its own line (key ``mixer/none``)."""
    points: dict[str, tuple[list, list]] = {}
    spread: dict[str, tuple[list, list]] = {}
    names: dict[str, str] = {}
    for x in sorted(rows, key=x_of):
        key = x.setting.mixer + ("" if x.setting.front_end == "conv" else f"/{x.setting.front_end}")
        names[key] = label(x.setting, title)
        points.setdefault(key, ([], []))
        spread.setdefault(key, ([], []))
        points[key][0].append(x_of(x))
        points[key][1].append(x.mean)
        spread[key][0].append(x.low)
        spread[key][1].append(x.high)
    return points, spread, names


def record_caption(results: Sequence[dict], n_settings: int, cpu: int, whole: int) -> str:
    """Where the record comes from: how many points of which grid, the sessions, the machine and its load, the
    commands. ``results`` are the record's lines; ``cpu`` and ``whole`` the sizes of the CPU grid and the whole grid."""
    sessions = sorted({r["run"]["started"]: r["run"] for r in results}.items())
    commands = list(dict.fromkeys(r["run"]["command"] for r in results))
    first = results[0]["result"]
    run = sessions[0][1]
    rest = (
        f" The other {cpu - len(results)} were not run: the time this record had ran out (the same command resumes)."
        if cpu > len(results)
        else ""
    )
    return (
        f"{len(results)} recorded points ({n_settings} setting{'s' if n_settings != 1 else ''}, each the best "
        f"of its learning rates over its seeds) of the {cpu} in data/learned_memory_grid_cpu.json, the part of the "
        f"whole grid (data/learned_memory_grid.json, {whole:,} points, for a cluster) meant for a 2-core CPU.{rest} "
        f"Run in {len(sessions)} session{'s' if len(sessions) != 1 else ''} from {sessions[0][0]} on {run['machine']} "
        f"({run['cpu_count']} cores, {run['runner']}, {first['threads']} torch thread per point, load average "
        f"{run['load_average'][0]:.1f} at the start: other work shared the machine), torch {first['torch_version']}, "
        "with " + " and ".join(f"`{c}`" for c in commands) + "."
    )


def point_label(result: dict, title) -> str:
    """One recorded point in the re-run picker: mechanism and front end, size, width, learning rate, seed, result."""
    m, t = result["model"], result["task"]
    front = label(Setting(m["mixer"], m["front_end"], "", 0, 0, 0), title)
    return (
        f"{front}, {t['n_pairs']} pairs, width {m['d_model']}, lr {result['train']['lr']:g}, seed {result['seed']} "
        f"({result['accuracy']:.0%})"
    )


def live_sentence(results: dict, chance: float, title) -> str:
    """What a live training press reached, mechanism by mechanism, against chance (``results``: mixer -> result)."""
    best = max(results.values(), key=lambda r: r.accuracy)
    return (
        " ".join(
            f"{title(m)}: {r.accuracy:.1%} after {r.steps} steps ({r.wall_seconds:.1f} s"
            + (f", reached the {r.train['target_accuracy']:.0%} target)." if r.solved else ").")
            for m, r in results.items()
        )
        + f" Chance is {chance:.1%}; "
        + (
            f"{title(best.mixer)} learned most."
            if best.accuracy >= 2 * chance
            else "none is clear of chance yet: more steps, or fewer pairs."
        )
    )


def rerun_sentence(again, picked, steps: int, where: str, n_same: int, same: bool) -> str:
    """A recorded point trained again here (``again``) against its record (``picked``), over their first ``n_same``
    training losses; ``steps`` is how far the cap let it go, ``where`` the device."""
    cut = "" if steps == picked.steps else f" (the first {steps} of its {picked.steps} steps: the cap here)"
    return (
        f"Re-run{cut}: held-out accuracy **{again.accuracy:.1%}** after {again.steps} steps in "
        f"{again.wall_seconds:.1f} s on {where}; recorded {picked.accuracy:.1%} after {picked.steps} steps. "
        + (
            f"The training losses of all {n_same} steps match the recorded ones."
            if same
            else f"The training losses differ from the recorded ones within the first {n_same} steps: another CPU or "
            "torch build rounds some matrix products differently, and training amplifies that."
        )
    )


def channel_gates_sentence(alpha) -> str:
    """A learned per-channel gate (``alpha``: [T, K], one head) in words: its slowest and fastest channel."""
    mean = alpha.mean(0)
    slow, fast = int(mean.argmax()), int(mean.argmin())
    return (
        f"Its gates are one per key channel: channel {slow} keeps {alpha[:, slow].mean():.2f} of its row per "
        f"token on average, channel {fast} only {alpha[:, fast].mean():.2f} — learned, not set."
    )


def training_problems(steps: int, seconds: float, chosen: Sequence[str], caps) -> list[str]:
    """Why a press of Train is refused, against the device's training caps (``caps``: steps, seconds, mechanisms)."""
    problems = []
    if steps > caps.steps:
        problems.append(f"{steps:,} steps asked for; the cap here is {caps.steps:,}")
    if seconds > caps.seconds:
        problems.append(f"{seconds:.0f} s per mechanism asked for; the cap here is {caps.seconds:.0f} s")
    if len(chosen) > caps.mechanisms:
        problems.append(f"{len(chosen)} mechanisms chosen; one press trains at most {caps.mechanisms}")
    if not chosen:
        problems.append("no mechanism chosen")
    return problems
