"""The Learned memory page's recorded part, composed once for the app (``app_pages/learned_memory.py``) and the static
site (:mod:`lineage.site`): the headline, then the capacity record (:func:`lineage.train.findings.read_capacity`)
and the first recorded sweep (:data:`lineage.train.findings.RECORD`), each as blocks in page order — headings,
sentences, captions and the charts of :func:`lineage.plots.accuracy_sweep` with their keys and alt texts.

Every sentence is one of :mod:`lineage.train.findings`, computed from the records; this module only says which goes
where. The app draws the blocks with Streamlit, the site writes them as HTML, so the two show the same page. What
needs a live session (re-running a recorded point, training here) stays in the app's page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import plotly.graph_objects as go

from lineage.plots.training import accuracy_sweep, mixer_title
from lineage.train import findings, sweep
from lineage.train.tasks import TaskConfig

INTRO = """
Every other page sets the gates and β by hand. Here small language models learn them. Each model is the same
GPT-2-style stack — token and position embeddings, two pre-norm blocks, an MLP, an output head — with one mechanism
of the lineage as its token mixer, built from the layers the stage pages run, with gates and β computed from the
data as in the papers. They are trained with AdamW on **multi-query associative recall** (MQAR, from the Zoology
paper, Arora et al. 2023, and used by the DeltaNet paper): key–value pairs, then the keys again, and the model must
answer each with its value. A fixed-size state has to hold every pair at once; a KV cache just keeps them all.
As in Zoology, every mixer gets the **same front end** — a short convolution on q, k and v — so no mechanism wins by
its front end alone; the ablation takes it off.
"""

NO_RECORD = (
    "No recorded sweep is stored with this copy of the app (data/learned_memory_sweep.jsonl). "
    "`python -m lineage sweep data/learned_memory_grid_cpu.json --out data/learned_memory_sweep.jsonl` "
    "makes one."
)

CPU_GRID = findings.DATA / "learned_memory_grid_cpu.json"  # the part of the cluster grid the first sweep ran


# ---- blocks ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    text: str  # a section's heading (the app's subheader)


@dataclass(frozen=True)
class Line:
    markdown: str  # one sentence, or one bullet ("- …")


@dataclass(frozen=True)
class Caption:
    text: str  # Markdown, small, under what it describes


@dataclass(frozen=True)
class Chart:
    key: str  # the app's chart key (the site pairs its figures with the app's by it)
    title: str  # the figure's title, as drawn
    alt: str
    draw: Callable[[], go.Figure]  # builds the figure; called again under a projection for presenter sizes


@dataclass(frozen=True)
class Details:
    summary: str  # folded in the app (an expander), written out on the site
    markdown: str


@dataclass(frozen=True)
class Note:
    text: str  # what this copy lacks, and how to make it


Block = Heading | Line | Caption | Chart | Details | Note


@dataclass(frozen=True)
class Grids:
    """How many points each grid file holds: the captions say how much of its grid a record ran."""

    capacity: Mapping[str, int]  # the grids of the capacity record's parts this copy has, by the name their commands
    # give them (data/learned_memory_capacity_grid.json, …_capacity_gpu_grid.json), in the order of the parts
    cpu: int  # data/learned_memory_grid_cpu.json; 0 where absent
    cluster: int  # data/learned_memory_grid.json; 0 where absent


@dataclass(frozen=True)
class RecordedPage:
    """The page's recorded part in order: the headline (under the title, before the page's prose), the capacity
    record's section (empty without the record), the first sweep's section (a :class:`Note` without it)."""

    headline: findings.Headline | None
    capacity: tuple[Block, ...]
    first: tuple[Block, ...]

    def blocks(self) -> tuple[Block, ...]:
        return self.capacity + self.first

    def charts(self) -> list[Chart]:
        return [b for b in self.blocks() if isinstance(b, Chart)]


# ---- reading the records ---------------------------------------------------------------------------------------------


def read(path: str | Path) -> list[dict]:
    """The record at ``path`` (its finished points), or nothing where this copy has none."""
    return sweep.read_results(path) if Path(path).exists() else []


def grid_size(path: str | Path) -> int | None:
    """How many points the grid file at ``path`` holds; None where this copy lacks it."""
    return len(sweep.points_of(sweep.read_grid(path))[0]) if Path(path).exists() else None


def grids(size: Callable[[Path], int | None] = grid_size) -> Grids:
    """The sizes of the grid files: the capacity record's parts' (:func:`lineage.train.findings.capacity_grids`), the
    first sweep's and the cluster's, each by ``size`` (the app passes one that caches: the cluster grid takes seconds to
    expand)."""
    parts = {f"data/{path.name}": size(path) for path in findings.capacity_grids()}
    capacity = {name: n for name, n in parts.items() if n is not None}
    return Grids(capacity, size(CPU_GRID) or 0, size(findings.CLUSTER_GRID) or 0)


# ---- the page ----------------------------------------------------------------------------------------------------


def recorded_page(recorded: Sequence[dict], capacity: Sequence[dict], sizes: Grids) -> RecordedPage:
    """The page's recorded part from the first sweep's lines (``recorded``) and the capacity record's
    (``capacity``), as :func:`lineage.train.sweep.read_results` returns them. The headline is the capacity record's
    (:func:`lineage.train.findings.capacity_headline`), or without one the first sweep's."""
    first_summaries = findings.summarise(r["result"] for r in recorded)
    capacity_summaries = findings.summarise(r["result"] for r in capacity)
    point = findings.capacity_headline(capacity_summaries, mixer_title) or findings.headline(
        first_summaries, mixer_title
    )
    return RecordedPage(
        point,
        capacity_section(capacity, capacity_summaries, sizes) if capacity else (),
        first_section(recorded, first_summaries, sizes) if recorded else (Note(NO_RECORD),),
    )


def _sweep_chart(key: str, alt: str, rows: Sequence[findings.Summary], x_of, **drawn) -> Chart:
    """A chart of :func:`lineage.plots.accuracy_sweep` over ``rows``: one line per mechanism (and front end), each
    point a setting at ``x_of(setting)`` with its seeds' spread; ``drawn``: the builder's other arguments."""
    points, spread, names = findings.sweep_lines(rows, x_of, mixer_title)
    return Chart(key, drawn["title"], alt, partial(accuracy_sweep, points, spread=spread, names=names, **drawn))


def _pairs(x: findings.Summary) -> int:
    return x.setting.n_pairs


def _bullets(lines: Sequence[str]) -> list[Line]:
    return [Line(f"- {line}") for line in lines]


def capacity_section(results: Sequence[dict], summaries: Sequence[findings.Summary], sizes: Grids) -> tuple[Block, ...]:
    """The capacity record: accuracy against pairs at one model size, and against the numbers a layer carries
    (Zoology's picture), with who falls where and what the write rule and the gates buy, all from the record."""
    rows = findings.by_pairs(summaries)
    T, width = rows[0].setting.seq_len, findings.main_width(summaries)
    blocks: list[Block] = [
        Heading("Running out of room: one model size, more and more pairs"),
        _sweep_chart(
            "learned_memory_capacity_pairs",
            "Held-out accuracy against the number of key-value pairs at one model size, one line per mechanism.",
            rows,
            _pairs,
            x_title="key–value pairs",
            title=f"MQAR at {T} tokens, width {width}: the capacity record",
            chance=rows[0].chance,
            dodge=0.06,
            rising=findings.rising_lines(rows, _pairs),
        ),
        Caption(
            "Each point: the best learning rate, the mean of its seeds (bars: lowest to highest seed); an open "
            "triangle: a seed hit its step budget while still rising, so the point is a lower bound."
        ),
        *_bullets(findings.falls_sentences(summaries, mixer_title)),
        Line("**What each step of the lineage buys here:**"),
        *_bullets(findings.step_sentences(summaries, mixer_title)),
    ]
    n, at_n = findings.capacity_rows(summaries)
    if n is not None:
        state = findings.Summary.state_size
        blocks.append(
            _sweep_chart(
                "learned_memory_capacity_state",
                "Held-out accuracy against the numbers one layer carries, one point per mechanism and width.",
                at_n,
                state,
                x_title="numbers one layer carries (log scale)",
                title=f"MQAR, {n} pairs: accuracy against the numbers one layer carries",
                log_x=True,
                rising=findings.rising_lines(at_n, state),
            )
        )
        if said := findings.capacity_sentence(summaries, mixer_title):
            blocks.append(Line(said))
    blocks += [
        Caption(findings.memory_caption(summaries, mixer_title)),
        Caption(findings.capacity_caption(results, sizes.capacity, sizes.cluster)),
    ]
    return tuple(blocks)


def first_section(results: Sequence[dict], summaries: Sequence[findings.Summary], sizes: Grids) -> tuple[Block, ...]:
    """The first recorded sweep: accuracy against pairs (best learning rate, seeds' spread, the ablation), against
    state size, the sentences computed from it, where it came from and every setting's evidence."""
    title = mixer_title
    task = results[0]["result"]["task"]
    blocks: list[Block] = [
        Heading("The first recorded sweep: accuracy against the number of pairs, with and without the front end"),
        _sweep_chart(
            "learned_memory_pairs",
            "Held-out accuracy against the number of key-value pairs for each mechanism, from the recorded sweep.",
            findings.by_pairs(summaries) + findings.by_pairs(summaries, "none"),
            _pairs,
            x_title="key–value pairs",
            title=f"MQAR at {task['seq_len']} tokens, width {findings.main_width(summaries)}",
            chance=TaskConfig(**task).chance,
            dodge=0.06,
        ),
        Caption(
            "Each point: the best learning rate, the mean of its seeds (bars: lowest to highest seed); dotted: without "
            "the convolution; the lines are drawn a little apart along x so that equal points stay visible (hover for "
            "the true values); the dotted line along the foot: chance."
        ),
        Caption(findings.memory_caption(summaries, title)),
        *_bullets(findings.solved_sentences(summaries, title)),
    ]
    if said := findings.most_learned(summaries, title):
        blocks.append(Line(said))
    blocks += _bullets(findings.front_end_sentences(summaries, title))
    if said := findings.plateau_sentence(summaries, title):
        blocks.append(Line(said))
    blocks.append(Line("**What the papers found, against this record:**"))
    blocks += _bullets(findings.paper_checks(summaries, title))
    if (n := findings.capacity_pairs(summaries)) is not None:
        blocks += [
            _sweep_chart(
                "learned_memory_capacity",
                "Held-out accuracy against the numbers one layer carries, one line per mechanism, from the sweep.",
                findings.by_width(summaries, n),
                findings.Summary.state_size,
                x_title="numbers one layer carries (log scale)",
                title=f"{n} pairs: accuracy against the memory one layer carries",
                log_x=True,
            ),
            Line(findings.capacity_sentence(summaries, title)),
        ]
    blocks += [
        Caption(findings.record_caption(results, len(summaries), sizes.cpu, sizes.cluster)),
        Details("Each recorded setting: learning rates, seeds, steps, why each stopped", _settings(summaries)),
    ]
    return tuple(blocks)


def _settings(summaries: Sequence[findings.Summary]) -> str:
    """One bullet per recorded setting: its size, the evidence at its best learning rate, how each seed stopped."""
    return "\n".join(
        f"- {findings.label(x.setting, mixer_title)}, {x.setting.n_pairs} pairs, {x.setting.seq_len} tokens, width "
        f"{x.setting.width}: {x.evidence()}; seeds {', '.join(map(str, x.seeds))} stopped {', '.join(x.stopped)}"
        for x in summaries
    )
