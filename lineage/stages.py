"""The lineage as data: the stage table that the home page's table, grid, chart and tour are built from.

Each stage records the problem it solved and the cost it introduced (one of each, the thread of the whole
story), its paper, how its memory behaves as the context grows, and — for the linear-memory stages — its cell in
the write-rule × gate grid of :mod:`lineage.ops.recurrence`.

What a stage says about its mechanism (title, year, paper, write rule, gate, layer kind) comes from the table of
mechanisms (:mod:`lineage.mechanisms`): every mechanism with a narrative of its own there is one stage here, in the
table's order. Only the stages that are not one mechanism are written in this module: GPT-2 and the KV cache
(two ways to run softmax attention) and the hybrid (KDA and MLA layers together).

A stage's story (representative, summary, problem solved, cost introduced, transition) is a
:class:`lineage.mechanisms.Narrative`, defined once there: :class:`Stage` extends it with the stage's facts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from lineage import schedules
from lineage.mechanisms import GATES, MECHANISMS, Mechanism, Narrative, mechanism, write_rules


@dataclass(frozen=True, kw_only=True)
class Stage(Narrative):
    """A row of the stage table: its narrative (the fields of :class:`lineage.mechanisms.Narrative`) and its facts."""

    key: str  # the stage's key: page slug and table key
    title: str
    year: int
    paper: str  # citation with arXiv id
    url: str
    mechanisms: tuple[str, ...]  # the mechanisms (keys of lineage.mechanisms) this stage runs
    layer_kinds: tuple[str, ...]  # one layer schedule of lineage.schedules kinds: this stage's memory per layer
    rule: str | None = None  # a write rule's key (lineage.mechanisms.write_rules) for the linear-memory family
    gate: str | None = None  # "none" | "scalar" | "channel"
    label: str = ""  # its short name (the navigation's): its mechanism's label, else its title
    after_article: bool = False  # it came after the article's lineage (listed after the hybrid; its page says so)

    def __post_init__(self):
        object.__setattr__(self, "label", self.label or self.title)

    @property
    def heading(self) -> str:
        """Its name as its page's heading and its navigation entry give it: the label, marked where the stage came
        after the article ("Gated DeltaNet-2 (after the article)")."""
        return self._marked(self.label)

    @property
    def listed_title(self) -> str:
        """Its title as the lineage table and the site's pages list it: marked like :attr:`heading`."""
        return self._marked(self.title)

    def _marked(self, name: str) -> str:
        return f"{name} ({AFTER_ARTICLE})" if self.after_article else name

    @property
    def in_grid(self) -> bool:
        return self.rule is not None


AFTER_ARTICLE = "after the article"  # how a stage after the article's lineage is marked (Stage.heading)

_SOFTMAX, _KDA, _MLA = mechanism("softmax"), mechanism("kda"), mechanism("mla")

GPT2 = Stage(
    key="gpt2",
    title="GPT-2 (recompute)",
    representative="GPT-2 124M",
    year=2019,
    paper="Radford et al., Language Models are Unsupervised Multitask Learners (OpenAI, 2019); "
    "attention from Vaswani et al., arXiv 1706.03762",
    url=_SOFTMAX.url,
    summary="Nothing kept: every step recomputes keys and values of the whole prefix",
    problem_solved="Softmax attention: any token can look up any earlier token exactly",
    cost_introduced="Generating token N recomputes N keys and values: total work grows as N²",
    mechanisms=(_SOFTMAX.key,),
    layer_kinds=(_SOFTMAX.layer_kind,),
    transition="Start here: exact attention, and a model that forgets nothing because it keeps nothing.",
)

KV_CACHE = Stage(
    key="kv_cache",
    title="KV cache",
    representative="GPT-2 + KV cache (every decoder since)",
    year=2019,
    paper="Standard autoregressive decoding; FlashAttention aside: Dao et al., arXiv 2205.14135",
    url="https://arxiv.org/abs/2205.14135",
    summary="Full cache of every key and value: grows by one entry per token",
    problem_solved="No recomputation: each new token computes one key and one value",
    cost_introduced="The cache grows linearly with context and every step reads all of it (memory bandwidth)",
    mechanisms=(_SOFTMAX.key,),
    layer_kinds=(_SOFTMAX.layer_kind,),
    transition="Recomputing the prefix is wasteful: keep the keys and values instead.",
)

HYBRID_EVERY = 4  # the home page's hybrid: one MLA layer in every four (the 3 KDA : 1 MLA Kimi Linear's paper names)

HYBRID = Stage(
    key="hybrid",
    title="Hybrid (Kimi Linear / K3)",
    representative="Kimi Linear 48B-A3B; Kimi K3 (secondary source)",
    year=2025,
    paper="Kimi Linear, arXiv 2510.26692 (the paper's 3 KDA : 1 MLA; its 48B model "
    f"{schedules.KIMI_LINEAR_SCHEDULE.count(_KDA.layer_kind)} : {schedules.KIMI_LINEAR_SCHEDULE.count(_MLA.layer_kind)}"
    f"); Kimi K3 {schedules.KIMI_K3_SCHEDULE.count(_KDA.layer_kind)} KDA : "
    f"{schedules.KIMI_K3_SCHEDULE.count(_MLA.layer_kind)} MLA per its config "
    "as others quote it (secondary sources)",
    url=_KDA.url,
    summary="KDA layers with a periodic MLA (softmax) layer: mostly fixed state, a small growing cache",
    problem_solved="Exact retrieval where it matters, fixed-size memory everywhere else",
    cost_introduced="The MLA layers' cache still grows with context (about a quarter of an all-MLA stack)",
    mechanisms=(_KDA.key, _MLA.key),
    layer_kinds=schedules.periodic_schedule(HYBRID_EVERY, HYBRID_EVERY, base=_KDA.layer_kind, kind=_MLA.layer_kind),
    transition="A fixed state loses exact details past capacity. Keep a few softmax layers to retrieve them.",
)


def _mechanism_stage(m: Mechanism) -> Stage:
    """The stage of a mechanism that introduces one of its own: its narrative and facts from the table."""
    return Stage(
        **asdict(m.narrative),
        key=m.key,
        title=m.title,
        year=m.year,
        paper=m.paper,
        url=m.url,
        mechanisms=(m.key,),
        layer_kinds=(m.layer_kind,),
        rule=m.rule,
        gate=m.gate,
        label=m.label,
        after_article=m.after_article,
    )


def all_stages() -> tuple[Stage, ...]:
    """Every stage in the order of the lineage: the softmax stages, one per mechanism with a narrative, the hybrid,
    then the stages that came after the article (whose lineage ends at the hybrid), in the table's order."""
    own = [_mechanism_stage(m) for m in MECHANISMS.values() if m.narrative is not None]
    return (
        GPT2,
        KV_CACHE,
        *(s for s in own if not s.after_article),
        HYBRID,
        *(s for s in own if s.after_article),
    )


GRID_GATES = GATES  # the grid's columns, in order


def grid_rules() -> tuple[str, ...]:
    """The grid's rows: every write rule of :func:`lineage.mechanisms.write_rules`, in its order."""
    return tuple(write_rules())


def stage(stage_key: str) -> Stage:
    """Look a stage up by its key, with a message listing the keys when it is unknown."""
    by_key = {s.key: s for s in all_stages()}
    if stage_key not in by_key:
        raise ValueError(f"stage must be one of {', '.join(map(repr, by_key))}, got {stage_key!r}")
    return by_key[stage_key]


def grid() -> dict[tuple[str, str], tuple[Stage, ...]]:
    """The write-rule × gate grid of the linear-memory family: (rule, gate) -> every stage in that cell, in the
    lineage's order, for every cell of :func:`grid_rules` × :data:`GRID_GATES` (an empty cell holds ``()``).

    Two stages in one cell (a successor such as Gated DeltaProduct shares Gated DeltaNet's rule and gate) are both
    kept: nothing is dropped."""
    cells: dict[tuple[str, str], tuple[Stage, ...]] = {(r, g): () for r in grid_rules() for g in GRID_GATES}
    for s in all_stages():
        if s.in_grid:
            cells[(s.rule, s.gate)] += (s,)
    return cells


_NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven")
_NUMBER_WORDS += ("twelve",)


def count_words(n: int) -> str:
    """A count as a sentence writes it: "six" up to twelve, digits above."""
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else f"{n:,}"


def grid_title(cells: dict[tuple[str, str], tuple[Stage, ...]]) -> str:
    """The home page's heading over the grid, counted from it: "One recurrence, six cells" (the stages too, when a
    cell holds more than one: "One recurrence, six cells, seven stages")."""
    filled = [in_cell for in_cell in cells.values() if in_cell]
    n_stages = sum(len(in_cell) for in_cell in filled)
    title = f"One recurrence, {count_words(len(filled))} cells"
    return title + (f", {count_words(n_stages)} stages" if n_stages != len(filled) else "")
