"""The lineage as data: one registry of stages that the home page's table, grid, chart and tour are built from.

Each stage records the problem it solved and the cost it introduced (one of each, the thread of the whole
story), its paper, how its memory behaves as the context grows, and — for the linear-memory stages — its cell in
the write-rule × gate grid of :mod:`lineage.recurrence`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lineage import memory


@dataclass(frozen=True)
class Stage:
    key: str  # page slug and registry key
    title: str
    representative: str
    year: int
    paper: str  # citation with arXiv id
    url: str
    mechanism: str  # how memory is stored, in a few words
    problem_solved: str
    cost_introduced: str
    layer_kind: str  # a kind of lineage.memory, used to compute this stage's memory per layer
    rule: str | None = None  # "additive" | "delta" for the linear-memory family
    gate: str | None = None  # "none" | "scalar" | "channel"
    transition: str = ""  # one line leading *into* this stage, for the guided tour

    @property
    def in_grid(self) -> bool:
        return self.rule is not None


STAGES: tuple[Stage, ...] = (
    Stage(
        key="gpt2",
        title="GPT-2 (recompute)",
        representative="GPT-2 124M",
        year=2019,
        paper="Radford et al., Language Models are Unsupervised Multitask Learners (OpenAI, 2019); "
        "attention from Vaswani et al., arXiv 1706.03762",
        url="https://arxiv.org/abs/1706.03762",
        mechanism="Nothing kept: every step recomputes keys and values of the whole prefix",
        problem_solved="Softmax attention: any token can look up any earlier token exactly",
        cost_introduced="Generating token N recomputes N keys and values: total work grows as N²",
        layer_kind="mha",
        transition="Start here: exact attention, and a model that forgets nothing because it keeps nothing.",
    ),
    Stage(
        key="kv_cache",
        title="KV cache",
        representative="GPT-2 + KV cache (every decoder since)",
        year=2019,
        paper="Standard autoregressive decoding; FlashAttention aside: Dao et al., arXiv 2205.14135",
        url="https://arxiv.org/abs/2205.14135",
        mechanism="Full cache of every key and value: grows by one entry per token",
        problem_solved="No recomputation: each new token computes one key and one value",
        cost_introduced="The cache grows linearly with context and every step reads all of it (memory bandwidth)",
        layer_kind="mha",
        transition="Recomputing the prefix is wasteful: keep the keys and values instead.",
    ),
    Stage(
        key="linear_attention",
        title="Linear attention",
        representative="Linear Transformer (Katharopoulos et al.)",
        year=2020,
        paper="Katharopoulos et al., Transformers are RNNs, arXiv 2006.16236",
        url="https://arxiv.org/abs/2006.16236",
        mechanism="Fixed K×V state: S += φ(k) vᵀ",
        problem_solved="Memory no longer grows with the context: O(1) state, O(T) time",
        cost_introduced="Can only add: old associations are never updated, and they interfere",
        layer_kind="linear",
        rule="additive",
        gate="none",
        transition="The cache grows without bound. Fold the past into a fixed-size matrix instead.",
    ),
    Stage(
        key="deltanet",
        title="DeltaNet",
        representative="DeltaNet (Yang et al.)",
        year=2024,
        paper="Schlag et al., arXiv 2102.11174; Yang et al., Parallelizing Linear Transformers with the Delta Rule "
        "over Sequence Length, arXiv 2406.06484",
        url="https://arxiv.org/abs/2406.06484",
        mechanism="Delta rule: read the value at k, write only the correction",
        problem_solved="Can update: a key's value is replaced instead of blended",
        cost_introduced="Each step depends on the last through Sᵀk; parallel training needs a chunked WY form",
        layer_kind="deltanet",
        rule="delta",
        gate="none",
        transition="Linear attention can only add. DeltaNet can update.",
    ),
    Stage(
        key="mamba2",
        title="Mamba-2",
        representative="Mamba-2 / SSD (Dao & Gu)",
        year=2024,
        paper="Dao & Gu, Transformers are SSMs, arXiv 2405.21060",
        url="https://arxiv.org/abs/2405.21060",
        mechanism="Additive state with a scalar decay per head: S = α S + k vᵀ",
        problem_solved="Can forget in bulk: a data-dependent gate clears old context",
        cost_introduced="One decay rate for the whole head, and writes are still additive",
        layer_kind="mamba2",
        rule="additive",
        gate="scalar",
        transition="DeltaNet edits one key at a time but never clears. Mamba-2 decays the whole memory.",
    ),
    Stage(
        key="gla",
        title="GLA",
        representative="Gated Linear Attention (Yang et al.)",
        year=2024,
        paper="Yang et al., Gated Linear Attention Transformers with Hardware-Efficient Training, arXiv 2312.06635",
        url="https://arxiv.org/abs/2312.06635",
        mechanism="Additive state with a decay per key channel",
        problem_solved="Channels forget at their own rates",
        cost_introduced="Still additive writes; per-channel decay complicates the chunked form",
        layer_kind="gla",
        rule="additive",
        gate="channel",
        transition="A single gate forgets every channel alike. GLA gives each channel its own gate.",
    ),
    Stage(
        key="gated_deltanet",
        title="Gated DeltaNet",
        representative="Gated DeltaNet (Yang, Kautz & Hatamizadeh)",
        year=2025,
        paper="Yang et al., Gated Delta Networks: Improving Mamba2 with Delta Rule, arXiv 2412.06464 (ICLR 2025)",
        url="https://arxiv.org/abs/2412.06464",
        mechanism="Decay, then delta-rule write: S = (I − β k kᵀ) α S + β k vᵀ",
        problem_solved="Forgets and updates: α = 1 is DeltaNet, α = 0 wipes",
        cost_introduced="One scalar gate per head: every channel forgets at the same speed",
        layer_kind="gated_deltanet",
        rule="delta",
        gate="scalar",
        transition="Mamba-2 can forget but only adds; DeltaNet updates but never forgets. Do both.",
    ),
    Stage(
        key="kda",
        title="KDA (Kimi Delta Attention)",
        representative="Kimi Linear (Moonshot AI)",
        year=2025,
        paper="Kimi Team, Kimi Linear: An Expressive, Efficient Attention Architecture, arXiv 2510.26692",
        url="https://arxiv.org/abs/2510.26692",
        mechanism="Delta rule with a decay per key channel: S = (I − β k kᵀ) Diag(α) S + β k vᵀ",
        problem_solved="Each channel chooses how long to remember: fine-grained forgetting with precise updates",
        cost_introduced="A fixed state still loses exact details past its capacity",
        layer_kind="kda",
        rule="delta",
        gate="channel",
        transition="Gated DeltaNet's single gate becomes a vector: one forgetting rate per channel.",
    ),
    Stage(
        key="hybrid",
        title="Hybrid (Kimi Linear / K3)",
        representative="Kimi Linear 48B-A3B; Kimi K3 (secondary source)",
        year=2025,
        paper="Kimi Linear, arXiv 2510.26692 (3 KDA : 1 MLA); K3 per arXiv 2607.24653 as quoted by a secondary article",
        url="https://arxiv.org/abs/2510.26692",
        mechanism="KDA layers with a periodic MLA (softmax) layer: mostly fixed state, a small growing cache",
        problem_solved="Exact retrieval where it matters, fixed-size memory everywhere else",
        cost_introduced="The MLA layers' cache still grows with context (about a quarter of an all-MLA stack)",
        layer_kind="kda",  # per layer; the hybrid's mixture is computed from its schedule
        transition="A fixed state loses exact details past capacity. Keep a few softmax layers to retrieve them.",
    ),
)

STAGE_BY_KEY = {s.key: s for s in STAGES}
GRID_RULES = ("additive", "delta")
GRID_GATES = ("none", "scalar", "channel")


def stage(key: str) -> Stage:
    """Look a stage up by key, with a message listing the keys when it is unknown."""
    if key not in STAGE_BY_KEY:
        raise ValueError(f"stage must be one of {', '.join(map(repr, STAGE_BY_KEY))}, got {key!r}")
    return STAGE_BY_KEY[key]


def grid() -> dict[tuple[str, str], Stage]:
    """The 2×3 grid of the linear-memory family: (rule, gate) -> stage."""
    return {(s.rule, s.gate): s for s in STAGES if s.in_grid}


# One shared layer shape for comparing stages on the home page: GPT-2's attention width (12 heads × 64).
COMPARE_LAYER = dict(n_heads=12, head_dim=64)


def memory_per_layer(stage_key: str, seq_lens, *, dtype: str = "bf16", hybrid_every: int = 4) -> np.ndarray:
    """Bytes one layer of this stage holds while decoding at each context length (a GPT-2-wide layer).

    Softmax stages hold a KV cache (GPT-2 without cache rebuilds the same keys and values every step, so its
    working set is the same size — it just recomputes it); linear stages hold a fixed state; the hybrid is the
    mean over a layer schedule with one MLA layer in every ``hybrid_every``.
    """
    s = stage(stage_key)
    n_layers = hybrid_every if s.key == "hybrid" else 1
    kinds = (("kda",) * (hybrid_every - 1) + ("mla",)) if s.key == "hybrid" else (s.layer_kind,)
    spec = memory.custom_spec(
        n_layers=n_layers,
        n_heads=COMPARE_LAYER["n_heads"],
        n_kv_heads=COMPARE_LAYER["n_heads"],
        head_dim=COMPARE_LAYER["head_dim"],
        layer_kinds=kinds,
        dtype=dtype,
        name=s.title,
    )
    curve = memory.kv_cache_curve(spec, np.asarray(seq_lens), dtype)
    return np.asarray(curve.total_bytes, dtype=np.float64) / n_layers
