"""What the home page, the claims ledger and Memory & cost say around their charts: memory against context length
for every stage (the chart's inputs and its caption), the lineage table's rows, the parameter ratio of Kimi K3 to
GPT-2 (its metrics and its paragraph), the ledger's verdict counts and "6× decode" curves, and Memory & cost's lines
of bytes held.

The app's pages (``app_pages/home.py``, ``app_pages/ledger.py``, ``app_pages/memory_cost.py``) and the static site
(:mod:`lineage.site`) both read these, so the two say the same numbers; the charts themselves are the builders of
:mod:`lineage.plots` on these fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lineage import stages
from lineage.measure import footprints
from lineage.teach import ledger
from lineage.units import format_bytes

CHART_TITLE = "Bytes one layer holds while decoding (log-log)"
CHART_ALT = (
    "Bytes held per layer against context length, labelled at the line ends: GPT-2 and the KV cache grow fastest, "
    "all-MLA grows below them, the hybrid a quarter of all-MLA, and the six fixed-state stages stay flat near 100 kB."
)


@dataclass(frozen=True)
class MemoryOverview:
    """The home chart's inputs (``lineage.plots.memory_by_stage(seq_lens, per_stage, notes=…, baseline=…)``) and the
    caption under it."""

    seq_lens: np.ndarray  # [N] 1 token to 1,048,576 (Kimi Linear's context)
    per_stage: dict[str, np.ndarray]  # stage key -> [N] bytes one layer holds
    notes: dict[str, str]  # stage key -> the note at its line's end
    baseline: tuple[str, str, np.ndarray]  # (name, note, [N] bytes): the same layer with MLA everywhere
    caption: str


def memory_overview() -> MemoryOverview:
    """One layer of every stage at GPT-2's attention width, bf16, against context length; the hybrid's saving is
    measured against the same layer with MLA everywhere (the article's "−75%"), not against GPT-2, whose heads cache
    more per token than MLA does."""
    compare = footprints.COMPARE_LAYER
    seq_lens = np.array([2**i for i in range(21)])
    per_stage = {s.key: footprints.memory_per_layer(s.key, seq_lens) for s in stages.all_stages()}
    all_mla = footprints.custom_spec(
        n_layers=1,
        n_heads=compare["n_heads"],
        n_kv_heads=compare["n_heads"],
        head_dim=compare["head_dim"],
        layer_kinds=("mla",),
        dtype="bf16",
        name="all-MLA",
    )
    mla_bytes = np.asarray(footprints.kv_cache_curve(all_mla, seq_lens, "bf16").total_bytes, dtype=np.float64)
    home_hybrid = footprints.custom_spec(
        n_layers=stages.HYBRID_EVERY,
        n_heads=compare["n_heads"],
        n_kv_heads=compare["n_heads"],
        head_dim=compare["head_dim"],
        layer_kinds=stages.stage("hybrid").layer_kinds,
        dtype="bf16",
        name="hybrid",
    )
    longest = int(seq_lens[-1])
    saving = ledger.hybrid_saving(home_hybrid, longest, "bf16")  # the hybrid line, against the all-MLA line
    n_kda = stages.HYBRID_EVERY - 1
    kimi_saving = ledger.hybrid_saving(footprints.MODELS["kimi-linear-48b"], longest, "bf16")
    fixed = [per_stage[s.key][-1] for s in stages.all_stages() if s.in_grid]
    caption = (
        f"One layer {compare['n_heads']} heads × {compare['head_dim']} wide (GPT-2's attention width), bf16. GPT-2 and "
        "the KV cache keep a key and a value per head per token; the fixed-state stages keep their state (plus a short "
        f"convolution's last inputs where the layer has one), {format_bytes(min(fixed))}–"
        f"{format_bytes(max(fixed))} whatever the context. The hybrid averages {n_kda} KDA layers and one MLA layer, "
        f"and MLA caches {all_mla.kv_lora_rank} + {all_mla.rope_dim} latent numbers per token (DeepSeek's sizes) "
        f"instead of GPT-2's {2 * compare['n_heads'] * compare['head_dim']:,} keys and values: so at 1M it sits "
        f"{per_stage['gpt2'][-1] / per_stage['hybrid'][-1]:.0f}× below GPT-2, of which only the layer ratio is the "
        f"hybrid's saving. Like for like — against the same layers all MLA, at {longest:,} tokens — it saves "
        f"{saving.text()}. Kimi Linear's own schedule ({kimi_saving.n_mla} MLA of {kimi_saving.n_layers} layers, from "
        f"its config.json) saves {kimi_saving.text()}: the article's “−75%”. Computed by "
        "`lineage.measure.footprints.memory_per_layer` and `lineage.measure.footprints`; hover a line for exact bytes."
    )
    return MemoryOverview(
        seq_lens=seq_lens,
        per_stage=per_stage,
        notes={
            "hybrid": f"{n_kda} KDA : 1 MLA layers<br>−{saving.total:.1%} against all-MLA at 1M<br>"
            f"({ledger.SAVING_TOTAL})"
        },
        baseline=("All-MLA, same width", "(the article's −75% baseline)", mla_bytes),
        caption=caption,
    )


def lineage_rows() -> list[dict[str, object]]:
    """The lineage table: one row per stage, in the lineage's order."""
    return [
        {
            "Stage": s.listed_title,  # "Gated DeltaNet-2 (after the article)"
            "Representative": s.representative,
            "Year": s.year,
            "Memory mechanism": s.summary,
            "Problem solved": s.problem_solved,
            "Cost introduced": s.cost_introduced,
        }
        for s in stages.all_stages()
    ]


@dataclass(frozen=True)
class RatioSection:
    """The parameter ratio of Kimi K3 to GPT-2: its heading, its metrics (label, value, help), its paragraph and
    the caption naming the counts' sources."""

    heading: str
    metrics: tuple[tuple[str, str, str], ...]
    text: str
    caption: str


def ratio_section() -> RatioSection:
    ratio = footprints.lineage_ratio()
    gpt2 = footprints.PARAMETER_FACTS["gpt2"]
    k3, k3_article = footprints.PARAMETER_FACTS["kimi-k3"], footprints.PARAMETER_FACTS["kimi-k3-article"]
    return RatioSection(
        heading=f"{int(ratio.article_to_nominal):,} GPT-2s?",  # the article's title; the metrics name both counts
        metrics=(
            ("GPT-2 parameters", f"{gpt2.parameters:,}", f"{gpt2.how}: {gpt2.source}"),
            # a stated count of three significant figures, not a count to the parameter: written as stated (at 48 px
            # in a quarter of a 1280 px slide, 2,780,000,000,000 broke across two lines inside its digits)
            ("Kimi K3 parameters (its config)", f"{k3.parameters / 1e12:g}T", f"{k3.how}: {k3.source}"),
            ("GPT-2s in one Kimi K3 (the article's)", f"{int(ratio.article_to_nominal):,}", ledger.RATIO_NOMINAL),
            ("GPT-2s in one Kimi K3 (its config's)", f"{int(ratio.config_to_nominal):,}", ledger.RATIO_CONFIG),
        ),
        text=f"""
The article this app follows puts **{int(ratio.article_to_nominal):,}** in its title:
{ratio.arithmetic(ratio.k3_article, ratio.gpt2_nominal)}, with the decimals dropped ({ledger.RATIO_NOMINAL}).
K3's configuration is public now, and the count stated with it is {k3.parameters / 1e12:g}T, which the article
rounds to {k3_article.parameters / 1e12:g}T: {ratio.arithmetic(ratio.k3_config, ratio.gpt2_nominal)}, so
**{int(ratio.config_to_nominal):,}**. Over GPT-2's exact {gpt2.parameters:,} parameters, counted from its config,
the two give {ratio.config_to_exact:,.0f} and {ratio.article_to_exact:,.0f}. Either way, parameters are not the story
told here: the mechanisms of memory are.
""",
        caption=f"GPT-2: {gpt2.how}. Kimi K3: **{k3.how}** — {k3.source}. The article's "
        f"{k3_article.parameters / 1e12:g}T: **{k3_article.how}** — {k3_article.source}.",
    )


# ---- the claims ledger ----------------------------------------------------------------------------------------------

LEDGER_CONTEXTS = [2**p for p in range(12, 21)]  # 4,096 … 1,048,576 tokens
LEDGER_BATCHES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096])
VERDICTS = ("verified", "differs", "quoted only")
PAPER_DECODE = 6.0  # the paper's "up to 6× decoding throughput at 1M context"


def verdict_counts(rows: Sequence[ledger.LedgerRow]) -> dict[str, int]:
    """How many of the ledger's rows have each verdict."""
    return {v: sum(r.verdict == v for r in rows) for v in VERDICTS}


@dataclass(frozen=True)
class DecodeRatios:
    """Where "6× decode at 1M" comes from: the bandwidth floor's ratio, all-MLA over the hybrid, against batch at three
    contexts; the most any batch reaches (the cache ratio) and the ratio at the chosen batch."""

    batches: np.ndarray
    ratios: dict[str, np.ndarray]  # context label -> ratio at each batch
    ceiling: float
    at: float


def decode_ratios(schedule: Sequence[str], context: int, batch: int) -> DecodeRatios:
    contexts = (LEDGER_CONTEXTS[0], 2**17, context)
    return DecodeRatios(
        batches=LEDGER_BATCHES,
        ratios={f"{n:,} tokens": ledger.decode_ratio(LEDGER_BATCHES, n, schedule) for n in contexts},
        ceiling=float(ledger.decode_ratio(1e12, context, schedule)),
        at=float(ledger.decode_ratio(batch, context, schedule)),
    )


# ---- memory & cost ------------------------------------------------------------------------------------------------

MEMORY_COST_SEQ_LENS = np.unique(np.round(np.geomspace(1, 2**20, 81)).astype(np.int64))  # 1 token to 1M = 2^20


def bytes_held(specs: Sequence[footprints.ModelSpec], dtype: str) -> dict[str, np.ndarray]:
    """Cache + state bytes at every length of MEMORY_COST_SEQ_LENS, per model (by its name)."""
    return {s.name: footprints.kv_cache_curve(s, MEMORY_COST_SEQ_LENS, dtype).total_bytes for s in specs}


def gpu_memory() -> dict[str, int]:
    """The memory of each GPU preset, the dotted lines of Memory & cost's chart."""
    return {p.name: p.memory_bytes for p in footprints.GPU_PRESETS.values()}
