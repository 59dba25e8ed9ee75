"""What each page of the static site carries: the app's first screen on the default story, as plain data.

Every number and figure here comes from the functions the app's pages call (:mod:`lineage.teach` runs and says,
:mod:`lineage.plots` draws), with the pages' default settings; nothing is computed a second way.
``tests/test_site.py`` runs each app page in Streamlit's AppTest and compares its figures and numbers with these.

A page is a :class:`Screen`: blocks in order (Markdown text, a claim, a key number, a figure, a table, code), each
a small frozen dataclass, so the renderer (:mod:`lineage.site.build`) writes them and the tests read them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from lineage import plots, stages
from lineage.measure import footprints
from lineage.plots.present import PROJECTION, projecting
from lineage.plots.story import decode_ratio_curves
from lineage.plots.story_chart import ALT as STORY_ALT
from lineage.plots.story_chart import cache_story_chart, recompute_story_chart
from lineage.plots.story_chart import story_chart as plotted_story_chart
from lineage.plots.vocabulary import figure_problems
from lineage.teach import claims, ledger, overview, units
from lineage.teach.equations import equation
from lineage.teach.story import story_for

# The stage pages' default sizes (ui.controls.size_controls and the softmax pages' sliders) and shared seed
# (ui.session.DEFAULT_SEED): the site shows the first screen a visitor sees before touching a control.
STORY_T = 32
STATE_K = STATE_V = 8
SOFTMAX_HEADS, SOFTMAX_HEAD_DIM = 4, 16
KV_BLOCK = 8
SEED = 0


# ---- blocks ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    markdown: str  # rendered with raw HTML escaped (lineage.site.build)
    prose: bool = False  # narrative: folded in the presenter view, as the app's ui.display.prose
    small: bool = False  # a caption


@dataclass(frozen=True)
class Claim:
    claim: str
    label: str = ""  # the number's meaning ("" when the story cannot test the claim)
    shown: str = ""
    verdict: str = ""
    compare: str = ""
    holds: bool = True
    missing: str = ""


@dataclass(frozen=True)
class Metric:
    label: str
    shown: str


@dataclass(frozen=True)
class Figure:
    key: str  # the app's chart key: the test pairs figures by it
    fig: go.Figure
    alt: str
    projected: go.Figure | None = None  # the same figure at projector sizes (lineage.plots.present)


@dataclass(frozen=True)
class Table:
    rows: tuple[dict[str, str], ...]  # Markdown cells, first row's keys are the header


@dataclass(frozen=True)
class Code:
    where: str
    text: str


@dataclass(frozen=True)
class Banner:
    solved: str
    cost: str
    byline: str


Block = Text | Claim | Metric | Figure | Table | Code | Banner


@dataclass(frozen=True)
class Screen:
    slug: str  # the app's url_path ("home" is index.html)
    title: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)
    live_note: str = ""  # what of this page needs the live app ("" for none)

    def figures(self) -> list[Figure]:
        return [b for b in self.blocks if isinstance(b, Figure)]


# ---- helpers shared by the stage pages ----------------------------------------------------------------------------


def _decoded(obj):
    """Plotly's typed arrays ({"dtype", "bdata", "shape"}) as numpy arrays, anywhere in a figure's JSON."""
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
            shape = obj.get("shape")
            if shape:
                arr = arr.reshape([int(n) for n in str(shape).split(",")] if isinstance(shape, str) else list(shape))
            return arr
        return {k: _decoded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decoded(v) for v in obj]
    return obj


def plain(fig: go.Figure) -> dict:
    """The figure as the browser receives it (its JSON), arrays decoded: what the vocabulary checks read."""
    return _decoded(json.loads(pio.to_json(fig, validate=False, engine="json")))


def _figure(key: str, build: Callable[[], go.Figure], alt: str) -> Figure:
    """The figure drawn for a screen and, from the same call, at projector sizes (the app's presenter mode). A figure
    that breaks the house vocabulary (:func:`lineage.plots.vocabulary.figure_problems`) stops the build."""
    with projecting(PROJECTION):
        projected = build()
    fig = build()
    for drawn in (fig, projected):
        if problems := figure_problems(plain(drawn)):
            raise ValueError(f"figure {key!r} breaks the visual vocabulary: {'; '.join(problems)}")
    return Figure(key, fig, alt, projected)


def claim_block(claim: claims.StageClaim) -> Claim:
    if not claim.testable:
        return Claim(claim.claim, missing=claim.missing)
    return Claim(claim.claim, claim.label, claim.shown, claim.verdict, claim.compare, claim.holds)


def banner(stage_key: str) -> Banner:
    s = stages.stage(stage_key)
    return Banner(s.problem_solved, s.cost_introduced, f"{s.representative} · {s.year} · [{s.paper}]({s.url})")


def equation_blocks(stage_key: str) -> list[Block]:
    eq = equation(stage_key)
    out: list[Block] = [Text(eq.text), Text(f"New in this stage (marked): {eq.change}.", small=True)]
    out += [Code(e.where, e.text) for e in eq.excerpts()]
    return out


def story_chart(stage_key: str, run, story, *, start: int, normaliser: bool = False) -> list[Block]:
    """The story chart and its key line (lineage.plots.story_chart, as ui.story.story_chart draws them)."""

    def build() -> go.Figure:
        return plotted_story_chart(run, story, start=start, normaliser=normaliser).fig

    key = plotted_story_chart(run, story, start=start, normaliser=normaliser).key
    return [_figure(f"{stage_key}_story", build, STORY_ALT), Text(key, small=True)]


def checked_line(run) -> Text:
    return Text(
        f"Checked against the reference loop: chunked form {run.err_chunk:.1e}, T × T form {run.err_parallel:.1e} "
        f"(relative RMS difference); {run.device}.",
        small=True,
    )


# ---- the stage pages ----------------------------------------------------------------------------------------------


def _linear_run(stage_key: str):
    """The default story's run and claim of a linear-memory stage page: its run at the pages' default knobs and the
    claim its unit proves (lineage.teach.units.stage_claim, which the pages call); the hybrid's needle as its page."""
    if stage_key == "hybrid":
        story = story_for(STORY_T, claims.HYBRID_STATE_K, STATE_V)
        run = claims.run_story("kda", story, claims.Knobs(alpha_switch=1.0), repeats=1)
        return run, story, claims.hybrid_claim(claims.hybrid_needle(story, run), story)
    story = story_for(STORY_T, STATE_K, STATE_V)
    run = claims.run_story(stage_key, story, units.DEFAULT_KNOBS)
    return run, story, units.stage_claim(stage_key, run, story)


def _softmax_blocks(stage_key: str) -> list[Block]:
    """GPT-2's and the KV cache's first screen: the claim, the story chart, its key line (and GPT-2's check)."""
    story = story_for(STORY_T)
    if stage_key == "gpt2":
        run = claims.run_softmax_story(story, SOFTMAX_HEADS, SOFTMAX_HEAD_DIM, SEED)
        claim, drawn = claims.gpt2_claim(run, story), recompute_story_chart
    else:
        run = claims.run_softmax_story(story, SOFTMAX_HEADS, SOFTMAX_HEAD_DIM, SEED, block_size=KV_BLOCK)
        claim, drawn = claims.kv_cache_claim(run, story), cache_story_chart
    chart = drawn(run, story, start=story.T - 1)
    blocks: list[Block] = [
        claim_block(claim),
        _figure(f"{stage_key}_story", lambda: drawn(run, story, start=story.T - 1).fig, chart.alt),
        Text(chart.key, small=True),
    ]
    if stage_key == "gpt2":  # the GPT-2 page checks its two generations under the chart; the KV cache page later
        blocks.append(
            Text(
                f"Checked: recomputing and caching give the same outputs to {run.err_recompute:.1e} (relative RMS); "
                f"{run.device}.",
                small=True,
            )
        )
    return blocks


STAGE_LIVE = "Your own story, the sliders (sizes, gates, β), random inputs, the timings and the run at real size"


def stage_screen(stage_key: str) -> Screen:
    s = stages.stage(stage_key)
    blocks: list[Block] = [banner(stage_key)]
    if not s.in_grid and stage_key != "hybrid":
        blocks += _softmax_blocks(stage_key)
    else:
        run, story, claim = _linear_run(stage_key)
        blocks.append(claim_block(claim))
        blocks += story_chart(stage_key, run, story, start=story.T - 1, normaliser=stage_key == "linear_attention")
        blocks.append(checked_line(run))
    if prose := units.unit(stage_key).prose:
        blocks.append(Text(prose, prose=True))
    blocks += equation_blocks(stage_key)
    return Screen(stage_key, s.title, tuple(blocks), live_note=STAGE_LIVE)


def gated_deltanet2_screen() -> Screen:
    """The stage after the article (app_pages/gated_deltanet2.py at its defaults: lineage.teach.after_article on the
    default story, the overwrite erasing fully and writing at half strength)."""
    from lineage.teach import after_article

    n = after_article.NARRATIVE
    run = after_article.run_on_story(STORY_T, STATE_K, STATE_V, 1.0, 0.5)
    claim, lines, step = after_article.erase_write_claim(run), after_article.old_and_new_over_time(run), run.story.T - 1
    key = run.story.overwrite.key
    blocks: list[Block] = [
        Banner(
            n.problem_solved,
            n.cost_introduced,
            f"{n.representative} · 2026 · [{after_article.PAPER}]({after_article.URL})",
        ),
        Text(
            "**After the article.** The article's lineage ends at KDA and the Kimi hybrid; this stage came later. "
            + after_article.WHY
        ),
        claim_block(claim),
        _figure(
            "gated_deltanet2_reads",
            lambda: plots.over_time(
                lines,
                title=f"What {key} reads back: the old value and the new, step by step",
                y_title="share of the answer",
                step=step,
                styles=plots.mechanism_styles(after_article.old_and_new_lines(run)),
            ),
            f"Lines of how much of each value the key {key} reads back at every step, for Gated DeltaNet-2 and KDA.",
        ),
        _figure(
            "gated_deltanet2_state",
            lambda: plots.state_animation(
                {"Gated DeltaNet-2 S_t": run.states, f"KDA S_t (β = {run.write:g} at the overwrite)": run.kda_states},
                title="The state, token by token (one colour scale)",
                start=step,
            ),
            "Animated heatmaps of the Gated DeltaNet-2 and KDA states side by side, one frame per token.",
        ),
        Text(
            f"Checked against the reference loop: chunked form {run.err_chunk:.1e} (relative RMS difference).",
            small=True,
        ),
    ]
    return Screen(
        "gated_deltanet2",
        after_article.TITLE,
        tuple(blocks),
        live_note="The erase and write gates, your own story",
    )


# ---- home, the ledger, memory & cost, the labs ---------------------------------------------------------------------


def home_screen() -> Screen:
    """Home's first chart and its caption, the lineage table and the parameter ratio (lineage.teach.overview, which
    app_pages/home.py reads too)."""
    memory = overview.memory_overview()

    def build() -> go.Figure:
        return plots.memory_by_stage(
            memory.seq_lens,
            memory.per_stage,
            notes=memory.notes,
            baseline=memory.baseline,
            title=overview.CHART_TITLE,
        )

    ratio = overview.ratio_section()
    table = Table(tuple({k: str(v) for k, v in row.items()} for row in overview.lineage_rows()))
    blocks: list[Block] = [
        Text(
            "From GPT-2 (2019) to the Kimi Linear hybrid (2025), the big changes to attention were changes to memory: "
            "what a model keeps about the text so far, how it updates it, what it lets fade, and how it reads it "
            "back. Each stage below fixed one problem of the stage before and paid for it with a new one. This site "
            "shows each stage on the app's default story, computed when the site was built.",
            prose=True,
        ),
        Text("## Memory against context length, every stage"),
        _figure("home_memory", build, overview.CHART_ALT),
        Text(memory.caption, small=True),
        Text("## The lineage"),
        table,
        Text(f"## {ratio.heading}"),
        *(Metric(label, value) for label, value, _ in ratio.metrics),
        Text(ratio.text, prose=True),
        Text(ratio.caption, small=True),
    ]
    return Screen("home", "Attention Lineage", tuple(blocks))


def ledger_screen(page_link: Callable[[str], str], page_title: Callable[[str], str]) -> Screen:
    """The claims ledger at its defaults (Kimi Linear's own schedule, 1M tokens, batch 1), as app_pages/ledger.py;
    each row's page linked by its title in the site's navigation."""
    from lineage import schedules

    schedule = schedules.KIMI_LINEAR_SCHEDULE
    context, batch = overview.LEDGER_CONTEXTS[-1], 1  # the page's defaults: Kimi Linear's own schedule, batch 1
    rows = ledger.ledger(schedule, context, batch)
    counts = overview.verdict_counts(rows)
    decode = overview.decode_ratios(schedule, context, batch)

    def build() -> go.Figure:
        return decode_ratio_curves(
            decode.batches,
            decode.ratios,
            paper=overview.PAPER_DECODE,
            ceiling=decode.ceiling,
            title="Bandwidth floor: all-MLA over the hybrid, by batch",
        )

    blocks: list[Block] = [
        Text(
            "Every number the article states, with the app's value: computed from a cited config, computed on the "
            "story, or quoted with its source where the app cannot compute it. Here at the app's defaults: Kimi "
            f"Linear's own schedule, {context:,} tokens, batch {batch}.",
            small=True,
        ),
        Metric("verified", str(counts["verified"])),
        Metric("differs (the app says why)", str(counts["differs"])),
        Metric("quoted only (with source)", str(counts["quoted only"])),
        Table(tuple(ledger.table_cells(r, page_title(r.page), page_link(r.page)) for r in rows)),
        Text("## Where “6× decode at 1M” comes from"),
        _figure(
            "ledger_decode_ratio",
            build,
            "Decode-time ratio of all-MLA over the hybrid against batch size, rising towards the cache ratio, "
            "below 6×.",
        ),
        Text(
            f"At {context:,} tokens and batch {batch}, the floor gives **{decode.at:.2f}×**; no batch takes it past "
            f"**{decode.ceiling:.2f}×**, below the paper's 6× ({ledger.KIMI_PAPER}, abstract)."
        ),
    ]
    return Screen("ledger", "Claims ledger", tuple(blocks), live_note="Other schedules, contexts and batches")


def memory_cost_screen() -> Screen:
    """Memory & cost for the real model configs (the custom model left out: it is what a visitor types)."""
    dtype = list(footprints.DTYPE_BYTES)[1]  # the page's default dtype (its selectbox's index 1)
    series = overview.bytes_held(list(footprints.MODELS.values()), dtype)
    million = 2**20
    rows = []
    for spec in footprints.MODELS.values():
        fp = footprints.footprint(spec, million, dtype)
        rows.append(
            {
                "model": spec.name,
                "held": plots.format_bytes(fp.total_bytes),
            }
        )

    def build() -> go.Figure:
        return plots.cache_vs_length(
            overview.MEMORY_COST_SEQ_LENS,
            series,
            gpu_memory=overview.gpu_memory(),
            mark_len=million,
            title=f"Bytes held while decoding one sequence ({dtype}), 1 to {million:,} tokens",
        )

    blocks: list[Block] = [
        Text(
            "While a model writes, every softmax-attention layer keeps a key and a value for every token so far — the "
            "KV cache — so its memory grows with every token; a linear-memory layer keeps a state of fixed size. "
            "Every size below is computed from the models' published configurations.",
            prose=True,
        ),
        _figure(
            "memory_cost_chart",
            build,
            "Log-log lines of bytes held against context length for each model, with the memory of three GPUs as "
            "flat dotted lines: the softmax models rise as straight lines, Kimi Linear starts flat and bends up.",
        ),
        Text(
            "Dotted lines: the whole memory of one GPU — a model's weights need room there too. The dashed vertical "
            "line is the table's context length.",
            small=True,
        ),
        Text(f"## At {million:,} tokens ({dtype})"),
        Table(tuple(rows)),
    ]
    return Screen(
        "memory_cost",
        "Memory & cost",
        tuple(blocks),
        live_note="Your own model, other dtypes and lengths, this machine's measured bandwidth",
    )


def _learned_blocks(block) -> list[Block]:
    """One block of the Learned memory page's recorded part (:mod:`lineage.plots.learned_memory`) as the site's."""
    from lineage.plots import learned_memory as learned

    if isinstance(block, learned.Heading):
        return [Text(f"## {block.text}")]
    if isinstance(block, learned.Line):
        return [Text(block.markdown)]
    if isinstance(block, (learned.Caption, learned.Note)):
        return [Text(block.text, small=True)]
    if isinstance(block, learned.Chart):
        return [_figure(block.key, block.draw, block.alt)]
    if isinstance(block, learned.Details):  # folded in the app, written out here
        return [Text(f"**{block.summary}**"), Text(block.markdown, small=True)]
    raise TypeError(f"no site block for {type(block).__name__}")


def learned_memory_screen() -> Screen:
    """The Learned memory page's recorded part as the app shows it (lineage.plots.learned_memory): the headline, the
    page's prose, the capacity record (data/learned_memory_capacity.jsonl and its GPU part), then the first recorded
    sweep (data/learned_memory_sweep.jsonl), each with its charts and the sentences computed from it."""
    from lineage.plots import learned_memory as learned
    from lineage.train import findings

    page = learned.recorded_page(learned.read(findings.RECORD), findings.read_capacity(), learned.grids())
    blocks: list[Block] = []
    if point := page.headline:
        blocks += [Claim(point.claim), Metric(point.label, point.shown)]
    blocks.append(Text(learned.INTRO, prose=True))
    blocks += [site_block for block in page.blocks() for site_block in _learned_blocks(block)]
    return Screen(
        "learned_memory",
        "Learned memory",
        tuple(blocks),
        live_note="Live training of any mechanism, and re-running a recorded point",
    )


def memory_lab_screen() -> Screen:
    """Every lab experiment at its default settings (lineage.lab.run_all): the comparison and each summary."""
    from lineage import lab

    report = lab.run_all()
    numbers = lab.comparison_table(report)
    formats = lab.people_formats(numbers)
    header = [numbers.index.name or "mechanism", *map(str, numbers.columns)]
    rows = []
    for name, row in numbers.iterrows():
        cells = [str(name)] + [formats[c](row[c]) if c in formats else str(row[c]) for c in numbers.columns]
        rows.append(dict(zip(header, cells, strict=True)))
    blocks: list[Block] = [
        Text(
            "The same stream for every mechanism, five experiments: overwrite, capacity, topic switch, retention and "
            "a needle. Recorded at the lab's default settings when the site was built.",
            prose=True,
        ),
        Text("## All mechanisms, all experiments"),
        Table(tuple(rows)),
    ]
    charts = (
        (
            "overwrite",
            "lab_overwrite_blend",
            plots.overwrite_blend,
            report.overwrite,
            "The overwrite's blend of v1 and v2",
        ),
        ("capacity", "lab_capacity_chart", plots.capacity_curves, report.capacity, "Recall error against pairs stored"),
        ("topic switch", "lab_topic_chart", plots.topic_switch_figure, report.topic_switch, "Topic A kept after B"),
        ("retention", "lab_retention_chart", plots.retention_figure, report.retention, "Long-lived against recent"),
        ("needle", "lab_needle_chart", plots.needle_curves, report.needle, "The needle's error as pairs follow it"),
    )
    for name, key, builder, result, alt in charts:
        blocks += [
            Text(f"## {name[0].upper()}{name[1:]}"),
            _figure(key, lambda builder=builder, result=result: builder(result), alt),
            Text(lab.summary(result)),
        ]
    return Screen(
        "memory_lab", "Memory lab", tuple(blocks), live_note="Every slider of every experiment, and your own stream"
    )
