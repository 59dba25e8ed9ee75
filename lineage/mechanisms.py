"""The one table of mechanisms: every memory mechanism of the lineage, defined once.

Each entry says what a mechanism *is* — its paper, its write rule, its gate, what its layer puts around the
recurrence, its colour, the stage it belongs to (with that stage's narrative, if the stage is its own) and its
public op — so that the stage table, layers, hybrid schedules, verification, benchmark, Memory lab, footprints,
plots and pages derive from it instead of repeating it. Adding a mechanism is its op and one entry here; a stage of
its own adds its equation, its unit and its page (docs/ARCHITECTURE.md, "Adding things", counts the files). (A
mechanism's key, a stage's key, a layer kind and an LM mixer are told apart in docs/ARCHITECTURE.md, "Words".)

The linear-memory family is one recurrence (:mod:`lineage.ops.recurrence`) and two choices, which give the grid:

    write rule \\ gate   none               scalar (per head)     channel (per key channel)
    additive            linear attention   Mamba-2               GLA
    delta               DeltaNet           Gated DeltaNet        KDA

The softmax family ("softmax": GPT-2's multi-head attention, "mla": DeepSeek's latent cache) has no write rule:
it keeps every key and value instead of folding them into a state.

Two more tables sit beside the mechanisms, each a definition per entry that every consumer reads:

* the **write rules** (:func:`write_rules`, :class:`WriteRule`): what a rule writes per step, its FLOP terms in the
  chunked form, the marker and dash its mechanisms' lines carry, its row on the home page's grid;
* the **op contract** (:class:`OpInput`, :attr:`Mechanism.op_contract`): which tensors a mechanism's op takes after
  ``q, k, v`` and their shapes, derived from its gate and rule (``g`` if it has a gate, ``beta`` if its rule takes
  a write strength: the package convention) unless an entry states its own. :meth:`Mechanism.call` passes exactly
  those, :meth:`Mechanism.input_shape` gives their shapes and :func:`lineage.inputs.draw_inputs` draws them, so a
  caller can run any linear mechanism from one set of inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType

import torch

from lineage.ops.deltanet import deltanet
from lineage.ops.gated_deltanet import gated_deltanet
from lineage.ops.gated_deltanet2 import gated_deltanet2, recurrent_gated_deltanet2
from lineage.ops.gla import gla
from lineage.ops.kda import kda
from lineage.ops.linear_attention import linear_attention
from lineage.ops.mamba2 import mamba2
from lineage.ops.recurrence import anchored_products, recurrent_memory, segment_sum_products
from lineage.ops.softmax import softmax_attention

GATES = ("none", "scalar", "channel")
OUTPUT_GATES = ("none", "swish", "sigmoid")
# How a layer computes its log-gate from x, by gate kind (see lineage.models.layers.LinearMemoryMixer.gates):
GATE_FORMS = {
    "none": ("none",),
    "scalar": ("softplus",),  # Mamba-2: g = −exp(A_log) · softplus(W x + dt_bias), one per head
    "channel": ("logsigmoid", "softplus"),  # GLA: log σ(W↑W↓x) / 16; KDA: −exp(A_log) · softplus(W↑W↓x + dt_bias)
}
# How the chunked form builds a gate kind's decays inside a chunk (lineage.ops.recurrence.decayed_products), each the
# scheme its decays allow: a scalar gate's are one C×C matrix summed exactly from segment sums; a per-channel gate's
# cannot leave the channel sum and are built through anchors, level by level. No gate: the causal mask is the decay.
CHUNK_DECAYS = {"none": None, "scalar": segment_sum_products, "channel": anchored_products}


# ---------------------------------------------------------------------------------------------------------------
# Write rules
# ---------------------------------------------------------------------------------------------------------------


def _additive_step(S: torch.Tensor, k_t: torch.Tensor, v_t: torch.Tensor, beta_t: torch.Tensor | None) -> torch.Tensor:
    """S_t = S' + k_t v_tᵀ"""
    return S + k_t[..., :, None] * v_t[..., None, :]


def _delta_step(S: torch.Tensor, k_t: torch.Tensor, v_t: torch.Tensor, beta_t: torch.Tensor | None) -> torch.Tensor:
    """S_t = S' + β_t k_t (v_t − S'ᵀ k_t)ᵀ"""
    read = torch.einsum("...kv,...k->...v", S, k_t)  # what the memory holds at k_t before the write
    return S + beta_t[..., None, None] * k_t[..., :, None] * (v_t - read)[..., None, :]


def _additive_flops(C: int, K: int, V: int) -> dict[str, int]:
    """An additive write adds no term to the chunked form: it writes the values themselves."""
    return {}


def _delta_flops(C: int, K: int, V: int) -> dict[str, int]:
    """The delta rule's terms per chunk: the WY/UT transform and the values it corrects."""
    return {
        "A_kk": 2 * C * C * K,
        "solve": C * (C * C - 1) // 3,
        "U = T V": 2 * C * C * V,
        "W = T (K ⊙ e^G)": 2 * C * C * K,
        "W S": 2 * C * K * V,
    }


@dataclass(frozen=True)
class WriteRule:
    """A write rule of the linear-memory family: how a step writes into the state, and what every consumer of a
    rule needs to know about it, so that a new rule is one definition in :func:`write_rules`.

    A rule's row on the home page's grid is its place in :func:`write_rules`. Its math in the three forms lives in
    :mod:`lineage.ops.recurrence`, which takes its ``key``; ``step`` is the same write on one step, the reference the
    tests hold the recurrence to.
    """

    key: str  # the name the recurrence takes (``rule=``) and Mechanism.rule holds
    name: str  # how a sentence or the grid's row names it: "additive", "delta"
    equation: str  # the write on one step, as the pages write it
    gloss: str  # what it does, in a few words (the home page's sentence on the grid)
    takes_beta: bool  # its op takes a write strength β [B, H, T] after the gate
    step: Callable  # (S' [..., K, V], k_t [..., K], v_t [..., V], β_t [...] or None) -> S_t [..., K, V]
    write_flops: Callable[[int, int, int], dict[str, int]]  # (C, K, V) -> {term: FLOPs of one chunk} it adds
    marker: str  # the marker of its mechanisms' lines on every chart (lineage.plots.palette)
    lab_dash: str  # the dash of its mechanisms' lines in the Memory lab (lineage.plots.lab)

    def __post_init__(self):
        if not self.key.isidentifier():
            raise ValueError(f"a write rule's key must be a Python identifier, got {self.key!r}")


_RULES = (
    WriteRule(
        key="additive",
        name="additive",
        equation="S_t = S' + k_t v_tᵀ",
        gloss="S += k vᵀ",
        takes_beta=False,
        step=_additive_step,
        write_flops=_additive_flops,
        marker="circle",
        lab_dash="dot",
    ),
    WriteRule(
        key="delta",
        name="delta",
        equation="S_t = S' + β_t k_t (v_t − S'ᵀ k_t)ᵀ",
        gloss="read the value at k first and write only the correction",
        takes_beta=True,
        step=_delta_step,
        write_flops=_delta_flops,
        marker="diamond",
        lab_dash="solid",
    ),
)
_BASE_RULES: Mapping[str, WriteRule] = MappingProxyType({r.key: r for r in _RULES})
_EXTRA_RULES: ContextVar[Mapping[str, WriteRule]] = ContextVar("registered_rules", default=MappingProxyType({}))


def write_rules() -> Mapping[str, WriteRule]:
    """Every write rule by key, in the grid's row order (the rules above, plus any :func:`registered_rule` added)."""
    extra = _EXTRA_RULES.get()
    return MappingProxyType({**_BASE_RULES, **extra}) if extra else _BASE_RULES


def write_rule(rule: str) -> WriteRule:
    """The definition of write rule ``rule``, with a message listing the rules when it is unknown."""
    rules = write_rules()
    if rule not in rules:
        raise ValueError(f"rule must be one of {', '.join(map(repr, rules))}, got {rule!r}")
    return rules[rule]


@contextmanager
def registered_rule(rule: WriteRule) -> Iterator[WriteRule]:
    """Put a new write rule in the table of rules for a ``with`` block (tests: every consumer of a rule meets it)."""
    if not isinstance(rule, WriteRule):
        raise TypeError(f"rule must be a WriteRule, got {type(rule).__name__}")
    if rule.key in write_rules():
        raise ValueError(f"a write rule named {rule.key!r} is already in the table")
    token = _EXTRA_RULES.set(MappingProxyType({**_EXTRA_RULES.get(), rule.key: rule}))
    try:
        yield rule
    finally:
        _EXTRA_RULES.reset(token)


# ---------------------------------------------------------------------------------------------------------------
# The op contract: which tensors an op takes, and their shapes
# ---------------------------------------------------------------------------------------------------------------

DIMS = ("B", "H", "T", "K", "V")  # batch, heads, steps, key width, value width: the package's; an op may name more
GATE_DIMS = {"none": None, "scalar": ("B", "H", "T"), "channel": ("B", "H", "T", "K")}  # the log-gate g, by gate


@dataclass(frozen=True)
class OpInput:
    """One positional tensor of a mechanism's op: its name and its shape, as named dimensions: those of :data:`DIMS`,
    or one of the op's own (Gated DeltaProduct's keys per token, say "N"), which the caller's sizes then give."""

    name: str  # "q", "k", "v", "g", "beta", … (the op's parameter)
    dims: tuple[str, ...]  # e.g. ("B", "H", "T", "K")
    # A write strength along a channel axis, with values in [0, 1] (Gated DeltaNet-2's erase and write gates): drawn
    # as σ(N(0, 1)), computed by a layer as σ(W x), and, where a caller has only one write strength β per token (the
    # story, the Memory lab), β on every channel — the delta rule's β made a vector, so the op is KDA there.
    unit: bool = False

    def __post_init__(self):
        if not self.dims or not all(isinstance(d, str) and d.isidentifier() for d in self.dims):
            raise ValueError(f"{self.name}: dims must be dimension names such as {DIMS}, got {self.dims!r}")

    def shape(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """The shape at ``sizes`` (a mapping with every dimension this input has: {"B": 2, "H": 3, …})."""
        missing = [d for d in self.dims if d not in sizes]
        if missing:
            raise ValueError(f"{self.name} is {'×'.join(self.dims)}: sizes lack {', '.join(missing)}")
        return tuple(int(sizes[d]) for d in self.dims)


QKV = (OpInput("q", ("B", "H", "T", "K")), OpInput("k", ("B", "H", "T", "K")), OpInput("v", ("B", "H", "T", "V")))


def default_op_inputs(rule: str | None, gate: str) -> tuple[OpInput, ...]:
    """The package convention: ``q, k, v``, then ``g`` if the gate is on, then ``beta`` if the rule takes it."""
    if rule is None:
        return QKV
    extra = (OpInput("g", GATE_DIMS[gate]),) if GATE_DIMS[gate] else ()
    if write_rule(rule).takes_beta:
        extra += (OpInput("beta", ("B", "H", "T")),)
    return QKV + extra


@dataclass(frozen=True)
class LayerOptions:
    """What a mechanism's layer puts around its recurrence (the papers' choices; no math of its own)."""

    conv: bool = False  # short causal convolution (then Swish) on q, k, v
    l2norm: bool = False  # L2-normalise q and k (keeps I − β k kᵀ a contraction)
    output_gate: str = "none"  # "none" | "swish" | "sigmoid": gate applied after an RMSNorm of the output
    gate_form: str = "none"  # one of GATE_FORMS[gate]: how the log-gate is computed from x
    feature_map: str | None = None  # φ on q and k, applied by the op (linear attention's "elu1"); None: none
    normalize: bool = False  # divide by the normaliser z_tᵀ φ(q_t) (its z is one more column of state)
    step_scaled_values: bool = False  # Mamba-2's discretisation: v ← Δ·v and read scale 1 (C, B, Δx of the SSD)


@dataclass(frozen=True)
class Narrative:
    """What a stage of the lineage tells: the one place its story's fields are defined.

    A mechanism that introduces a stage of its own holds its narrative here (:attr:`Mechanism.narrative`); every
    stage of :mod:`lineage.stages` is a narrative plus the stage's facts (``stages.Stage`` extends this class).
    """

    representative: str  # the model or paper that stands for it
    summary: str  # how memory is stored, in a few words
    problem_solved: str
    cost_introduced: str
    transition: str  # one line leading *into* this stage, for the guided tour


@dataclass(frozen=True)
class Mechanism:
    """One memory mechanism of the lineage.

    Attributes:
        key: the one name used everywhere (pages, layers, footprints, plots, bench, lab).
        title, year, paper (citation with arXiv id), url.
        label: the short name for legends and sentences (default: the title).
        rule: the key of its write rule in :func:`write_rules` ("additive" | "delta") for the linear-memory family;
            None for the softmax family. :attr:`write` is the rule's definition.
        gate: "none" | "scalar" | "channel".
        layer: what its layer puts around the recurrence; None for the softmax family (their layers are
            :class:`lineage.ops.softmax.CausalSelfAttention` and :class:`lineage.models.mla.MLA`).
        colour: hex colour of the mechanism on every chart.
        stage: the key of the stage (a row of :mod:`lineage.stages`) it belongs to.
        narrative: its stage's story, for mechanisms that introduce a stage of their own (``stage == key``); None
            where the stage is written in :mod:`lineage.stages` (the softmax stages, the hybrid).
        op: the public op; None where the mechanism exists only as a layer (MLA).
        bare: keyword arguments that make ``op`` the bare shared recurrence (S += k vᵀ, no feature map, no
            normaliser), so that it can be checked against :func:`lineage.ops.recurrence.recurrent_memory`.
        layer_kind: its layer kind in :mod:`lineage.schedules` (the schedules the models build and the cost
            catalogue sizes): the key, except "mha" for softmax attention, whose footprint kinds are "mha" and
            "gqa"; :func:`layer_mechanism` maps a kind back to its mechanism.
        op_inputs: the op's positional tensors and their shapes (:class:`OpInput`), where they are not the
            package's convention for its rule and gate (empty: :func:`default_op_inputs`). An op that takes them in
            another order or shape states its own here, and every caller follows: they read :attr:`op_contract`.
        reference: the token-by-token loop its op is checked against, with the op's signature (and ``trace=``),
            where that is not the shared recurrence for its rule and gate
            (:func:`lineage.ops.recurrence.recurrent_memory`): an op whose tensors the recurrence does not take.
            :meth:`reference_call` runs whichever applies.
        after_article: its stage came after the article's lineage (which ends at KDA and the hybrid): the stage
            table lists it after the hybrid, and its page says so.
    """

    key: str
    title: str
    year: int
    paper: str
    url: str
    rule: str | None
    gate: str
    colour: str
    stage: str
    layer: LayerOptions | None = None
    narrative: Narrative | None = None
    op: Callable | None = None
    bare: Mapping[str, object] = field(default_factory=dict)
    layer_kind: str = ""
    label: str = ""
    op_inputs: tuple[OpInput, ...] = ()
    reference: Callable | None = None
    after_article: bool = False

    def __post_init__(self):
        if not self.key.isidentifier():
            raise ValueError(f"key must be a Python identifier (it names files and URL paths), got {self.key!r}")
        if self.rule is not None and self.rule not in write_rules():
            rules = ", ".join(map(repr, write_rules()))
            raise ValueError(f"rule must be one of {rules} or None (softmax family), got {self.rule!r}")
        if self.gate not in GATES:
            raise ValueError(f"gate must be one of {GATES}, got {self.gate!r}")
        if not re.fullmatch(r"#[0-9A-Fa-f]{6}", self.colour):
            raise ValueError(f"colour must be a hex colour '#RRGGBB', got {self.colour!r}")
        if (self.rule is None) != (self.layer is None):
            raise ValueError(f"{self.key}: a linear mechanism (rule set) needs layer options, a softmax one has none")
        if self.layer is not None:
            if self.layer.gate_form not in GATE_FORMS[self.gate]:
                raise ValueError(
                    f"{self.key}: layer.gate_form must be one of {GATE_FORMS[self.gate]} for gate {self.gate!r}, "
                    f"got {self.layer.gate_form!r}"
                )
            if self.layer.output_gate not in OUTPUT_GATES:
                raise ValueError(f"{self.key}: layer.output_gate must be one of {OUTPUT_GATES}")
            if self.op is None:
                raise ValueError(f"{self.key}: a linear mechanism needs its op")
        if (self.narrative is not None) != (self.stage == self.key):
            raise ValueError(f"{self.key}: a mechanism has its own narrative exactly when its stage is its own key")
        object.__setattr__(self, "bare", MappingProxyType(dict(self.bare)))
        object.__setattr__(self, "layer_kind", self.layer_kind or self.key)
        object.__setattr__(self, "label", self.label or self.title)
        object.__setattr__(self, "op_inputs", tuple(self.op_inputs))
        if self.op_inputs and tuple(x.name for x in self.op_inputs[:3]) != ("q", "k", "v"):
            raise ValueError(f"{self.key}: op_inputs must start with q, k, v, got {[x.name for x in self.op_inputs]}")

    @property
    def is_linear(self) -> bool:
        """A fixed-size state (the linear-memory family), as opposed to a cache that grows with the context."""
        return self.rule is not None

    @property
    def op_contract(self) -> tuple[OpInput, ...]:
        """Its op's positional tensors and their shapes: :attr:`op_inputs` if the entry states them, else the
        convention for its rule and gate (``q, k, v``, ``g`` if gated, ``beta`` if the rule takes it); empty for a
        mechanism without an op (MLA)."""
        if self.op_inputs:
            return self.op_inputs
        return default_op_inputs(self.rule, self.gate) if self.op is not None else ()

    @property
    def write(self) -> WriteRule | None:
        """Its write rule's definition (None for the softmax family)."""
        return None if self.rule is None else write_rule(self.rule)

    @property
    def chunk_decays(self) -> Callable | None:
        """How its chunked form builds the decays inside a chunk (:data:`CHUNK_DECAYS` by its gate): by segment sums
        for a scalar gate, by anchored products for a gate per channel; None without a gate."""
        return CHUNK_DECAYS[self.gate]

    def takes(self, name: str) -> bool:
        """Whether its op takes the tensor ``name`` ("g", "beta", …) among its positional inputs."""
        return any(x.name == name for x in self.op_contract)

    @property
    def unit_gates(self) -> tuple[OpInput, ...]:
        """Its op's write strengths along a channel axis (:attr:`OpInput.unit`): Gated DeltaNet-2's erase and write."""
        return tuple(x for x in self.op_contract if x.unit)

    @property
    def writes_with_strength(self) -> bool:
        """Whether a caller with one write strength β per token passes it: its op takes β, or unit gates that are β
        on every channel where nothing else sets them (:meth:`call`)."""
        return self.takes("beta") or bool(self.unit_gates)

    def input_dims(self, name: str) -> tuple[str, ...]:
        """The dimensions of the tensor ``name`` its op takes (("B", "H", "T", "K") for a per-channel gate)."""
        for x in self.op_contract:
            if x.name == name:
                return x.dims
        raise ValueError(f"{self.key}'s op takes {', '.join(x.name for x in self.op_contract)}, not {name!r}")

    def input_shape(self, name: str, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """The shape its op expects of ``name`` at ``sizes`` ({"B": 2, "H": 3, "T": 45, "K": 8, "V": 6})."""
        return OpInput(name, self.input_dims(name)).shape(sizes)

    def op_args(self, tensors: Mapping[str, object]) -> list:
        """Its op's positional arguments, in the order of :attr:`op_contract`, picked from ``tensors`` by name
        (None where it is missing: the op says what it expected)."""
        return [tensors.get(x.name) for x in self.op_contract]

    @property
    def additive(self) -> bool:
        """Writes only add (S += k vᵀ): it cannot edit a key's value in place, only blend a new one in."""
        return self.rule == "additive"

    @property
    def keeps_normaliser(self) -> bool:
        """Its state carries the normaliser z as one more value column (normalised linear attention)."""
        return self.layer is not None and self.layer.normalize

    def call(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        g: torch.Tensor | None = None,
        beta: torch.Tensor | None = None,
        **kwargs,
    ):
        """Run this linear mechanism's op with the arguments it takes: ``op(q, k, v, [g], [beta], **kwargs)``.

        The op's positional tensors are those of :attr:`op_contract` (``g`` when the mechanism has a gate, ``beta``
        when its rule takes it; an entry's own contract may name more, passed here by keyword); the rest are ignored,
        so one set of inputs serves every mechanism.
        """
        if not self.is_linear:
            raise ValueError(f"{self.key!r} is not a linear-memory mechanism; its op has another signature")
        return self.op(*self._args(q, k, v, g, beta, kwargs), **kwargs)

    def _args(self, q, k, v, g, beta, kwargs: dict) -> list:
        """The op's positional tensors from g, β and the contract's own tensors in ``kwargs`` (popped from it); a
        unit gate not given is β on every channel of its axis, when β is."""
        names = {x.name for x in self.op_contract}
        more = {n: kwargs.pop(n) for n in list(kwargs) if n in names}  # a contract's own tensors, by keyword
        tensors = {"q": q, "k": k, "v": v, "g": g, "beta": beta} | more
        sizes = {"B": q.shape[0], "H": q.shape[1], "T": q.shape[2], "K": q.shape[3], "V": v.shape[-1]}
        for x in self.unit_gates:
            if tensors.get(x.name) is None and isinstance(beta, torch.Tensor) and beta.dim() == 3:
                tensors[x.name] = beta[..., None].expand(x.shape(sizes))
        return self.op_args(tensors)

    def reference_call(self, q, k, v, g=None, beta=None, *, trace: bool = False, **kwargs):
        """Its reference loop on the op's inputs (as :meth:`call` takes them): :attr:`reference` where the entry
        names one, else the shared recurrence with its rule and gate. ``kwargs``: ``scale``, ``initial_state``,
        ``output_final_state`` (and the contract's own tensors). Returns (o, S), and a MemoryTrace with ``trace``."""
        if not self.is_linear:
            raise ValueError(f"{self.key!r} is not a linear-memory mechanism; it has no recurrence")
        if self.reference is not None:
            return self.reference(*self._args(q, k, v, g, beta, kwargs), trace=trace, **kwargs)
        gated = self.takes("g")
        per_channel = self.input_dims("g")[-1] == "K" if gated else None
        return recurrent_memory(
            q,
            k,
            v,
            g if gated else None,
            beta if self.takes("beta") else None,
            rule=self.rule,
            trace=trace,
            per_channel=per_channel,
            **kwargs,
        )


# Colours: Okabe & Ito's colour-blind-safe qualitative palette (2008), except GLA, whose Okabe–Ito yellow is too pale
# to read as a line on white (Paul Tol's wine instead); tests/test_palette.py checks every pair under simulated
# deuteranopia and protanopia.
_ENTRIES = (
    Mechanism(
        key="softmax",
        title="Softmax attention",
        year=2017,
        paper="Vaswani et al., Attention Is All You Need, arXiv 1706.03762; GPT-2: Radford et al. (OpenAI, 2019)",
        url="https://arxiv.org/abs/1706.03762",
        rule=None,
        gate="none",
        colour="#000000",
        stage="gpt2",
        op=softmax_attention,
        layer_kind="mha",
    ),
    Mechanism(
        key="mla",
        title="MLA (multi-head latent attention)",
        year=2024,
        paper="DeepSeek-AI, DeepSeek-V2, arXiv 2405.04434 (§2.1); the softmax layer of Kimi Linear, arXiv 2510.26692",
        url="https://arxiv.org/abs/2405.04434",
        rule=None,
        gate="none",
        colour="#CC79A7",
        stage="hybrid",
        label="MLA",
    ),
    Mechanism(
        key="linear_attention",
        title="Linear attention",
        year=2020,
        paper="Katharopoulos et al., Transformers are RNNs, arXiv 2006.16236",
        url="https://arxiv.org/abs/2006.16236",
        rule="additive",
        gate="none",
        colour="#E69F00",
        stage="linear_attention",
        layer=LayerOptions(feature_map="elu1", normalize=True),
        narrative=Narrative(
            representative="Linear Transformer (Katharopoulos et al.)",
            summary="Fixed K×V state: S += φ(k) vᵀ",
            problem_solved="Memory no longer grows with the context: O(1) state, O(T) time",
            cost_introduced="Can only add: old associations are never updated, and they interfere",
            transition="The cache grows without bound. Fold the past into a fixed-size matrix instead.",
        ),
        op=linear_attention,
        bare={"feature_map": "identity", "normalize": False},
    ),
    Mechanism(
        key="deltanet",
        title="DeltaNet",
        year=2024,
        paper="Schlag et al., arXiv 2102.11174; Yang et al., Parallelizing Linear Transformers with the Delta Rule "
        "over Sequence Length, arXiv 2406.06484",
        url="https://arxiv.org/abs/2406.06484",
        rule="delta",
        gate="none",
        colour="#56B4E9",
        stage="deltanet",
        layer=LayerOptions(conv=True, l2norm=True, output_gate="swish"),
        narrative=Narrative(
            representative="DeltaNet (Yang et al.)",
            summary="Delta rule: read the value at k, write only the correction",
            problem_solved="Can update: a key's value is replaced instead of blended",
            cost_introduced="Each step depends on the last through Sᵀk; parallel training needs a chunked WY form",
            transition="Linear attention can only add. DeltaNet can update.",
        ),
        op=deltanet,
    ),
    Mechanism(
        key="mamba2",
        title="Mamba-2",
        year=2024,
        paper="Dao & Gu, Transformers are SSMs, arXiv 2405.21060",
        url="https://arxiv.org/abs/2405.21060",
        rule="additive",
        gate="scalar",
        colour="#D55E00",
        stage="mamba2",
        layer=LayerOptions(conv=True, output_gate="swish", gate_form="softplus", step_scaled_values=True),
        narrative=Narrative(
            representative="Mamba-2 / SSD (Dao & Gu)",
            summary="Additive state with a scalar decay per head: S = α S + k vᵀ",
            problem_solved="Can forget in bulk: a data-dependent gate clears old context",
            cost_introduced="One decay rate for the whole head, and writes are still additive",
            transition="DeltaNet edits one key at a time but never clears. Mamba-2 decays the whole memory.",
        ),
        op=mamba2,
    ),
    Mechanism(
        key="gla",
        title="GLA",
        year=2024,
        paper="Yang et al., Gated Linear Attention Transformers with Hardware-Efficient Training, arXiv 2312.06635",
        url="https://arxiv.org/abs/2312.06635",
        rule="additive",
        gate="channel",
        colour="#882255",
        stage="gla",
        layer=LayerOptions(output_gate="swish", gate_form="logsigmoid"),
        narrative=Narrative(
            representative="Gated Linear Attention (Yang et al.)",
            summary="Additive state with a decay per key channel",
            problem_solved="Channels forget at their own rates",
            cost_introduced="Still additive writes; per-channel decay complicates the chunked form",
            transition="A single gate forgets every channel alike. GLA gives each channel its own gate.",
        ),
        op=gla,
    ),
    Mechanism(
        key="gated_deltanet",
        title="Gated DeltaNet",
        year=2025,
        paper="Yang et al., Gated Delta Networks: Improving Mamba2 with Delta Rule, arXiv 2412.06464 (ICLR 2025)",
        url="https://arxiv.org/abs/2412.06464",
        rule="delta",
        gate="scalar",
        colour="#009E73",
        stage="gated_deltanet",
        layer=LayerOptions(conv=True, l2norm=True, output_gate="swish", gate_form="softplus"),
        narrative=Narrative(
            representative="Gated DeltaNet (Yang, Kautz & Hatamizadeh)",
            summary="Decay, then delta-rule write: S = (I − β k kᵀ) α S + β k vᵀ",
            problem_solved="Forgets and updates: α = 1 is DeltaNet, α = 0 wipes",
            cost_introduced="One scalar gate per head: every channel forgets at the same speed",
            transition="Mamba-2 can forget but only adds; DeltaNet updates but never forgets. Do both.",
        ),
        op=gated_deltanet,
    ),
    Mechanism(
        key="kda",
        title="KDA (Kimi Delta Attention)",
        year=2025,
        paper="Kimi Team, Kimi Linear: An Expressive, Efficient Attention Architecture, arXiv 2510.26692",
        url="https://arxiv.org/abs/2510.26692",
        rule="delta",
        gate="channel",
        colour="#0072B2",
        stage="kda",
        layer=LayerOptions(conv=True, l2norm=True, output_gate="sigmoid", gate_form="softplus"),
        narrative=Narrative(
            representative="Kimi Linear (Moonshot AI)",
            summary="Delta rule with a decay per key channel: S = (I − β k kᵀ) Diag(α) S + β k vᵀ",
            problem_solved="Each channel chooses how long to remember: fine-grained forgetting with precise updates",
            cost_introduced="A fixed state still loses exact details past its capacity",
            transition="Gated DeltaNet's single gate becomes a vector: one forgetting rate per channel.",
        ),
        op=kda,
        label="KDA",
    ),
    # After the article (whose lineage ends at KDA and the hybrid): KDA's β split into an erase and a write gate. It
    # shares KDA's cell of the grid (the delta rule, a gate per key channel): with erase = write = β it is KDA, and
    # a caller with one β per token (the story, the Memory lab) runs it so (OpInput.unit).
    Mechanism(
        key="gated_deltanet2",
        title="Gated DeltaNet-2",
        year=2026,
        paper="Hatamizadeh, Choi & Kautz, Gated DeltaNet-2: Decoupling Erase and Write in Linear Attention, "
        "arXiv 2605.22791",
        url="https://arxiv.org/abs/2605.22791",
        rule="delta",
        gate="channel",
        # Paul Tol's dark red from his 12-colour qualitative scheme (GLA's wine is Tol's too): CIEDE2000 ≥ 17 from
        # every other mechanism under normal sight, deuteranopia and protanopia, and ≥ 21 from the cache and state
        # colours (palette.GROWS, palette.FIXED: Tol's indigo, which it first had); tests/test_palette.py and
        # tests/test_one_voice.py check it with the rest
        colour="#661100",
        stage="gated_deltanet2",
        layer=LayerOptions(conv=True, l2norm=True, output_gate="sigmoid", gate_form="softplus"),
        narrative=Narrative(
            representative="Gated DeltaNet-2 (Hatamizadeh, Choi & Kautz, NVIDIA)",
            summary="Erase and write apart: S = (I − k (b ⊙ k)ᵀ) Diag(α) S + k (w ⊙ v)ᵀ",
            problem_solved="Erasing and writing are set apart, per key and per value channel: an old value can go "
            "however weakly the new one is written",
            cost_introduced="Two gate vectors per token instead of one β, and an erase that is no longer symmetric: "
            "unit keys alone no longer keep the state from growing",
            transition="After the article: KDA's one β both erases and writes. Gated DeltaNet-2 splits it in two.",
        ),
        op=gated_deltanet2,
        reference=recurrent_gated_deltanet2,
        op_inputs=QKV
        + (
            OpInput("g", GATE_DIMS["channel"]),
            OpInput("erase", ("B", "H", "T", "K"), unit=True),
            OpInput("write", ("B", "H", "T", "V"), unit=True),
        ),
        after_article=True,
    ),
)


class _Table(Mapping):
    """The table as a read-only mapping: the entries above, plus any put in by :func:`registered` in this context.

    Registrations live in a context variable, not in module state, so a test's extra entry is seen only by the
    thread (and context) that made it, never by another session served by the same process.
    """

    _BASE: Mapping[str, Mechanism] = MappingProxyType({m.key: m for m in _ENTRIES})
    _EXTRA: ContextVar[Mapping[str, Mechanism]] = ContextVar("registered_mechanisms", default=MappingProxyType({}))

    def _current(self) -> Mapping[str, Mechanism]:
        extra = self._EXTRA.get()
        return {**self._BASE, **extra} if extra else self._BASE

    def __getitem__(self, mechanism: str) -> Mechanism:
        return self._current()[mechanism]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())


MECHANISMS: Mapping[str, Mechanism] = _Table()
"""Every mechanism by key, in the order of the lineage (read-only; see :func:`registered`)."""


def mechanism(mechanism: str) -> Mechanism:
    """The entry of ``mechanism`` (a mechanism's key), with a message listing the keys when it is unknown."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(map(repr, MECHANISMS))}, got {mechanism!r}")
    return MECHANISMS[mechanism]


def linear_mechanisms() -> tuple[Mechanism, ...]:
    """The linear-memory family (a fixed-size state), in the order of the lineage."""
    return tuple(m for m in MECHANISMS.values() if m.is_linear)


def softmax_mechanisms() -> tuple[Mechanism, ...]:
    """The softmax family (a cache that grows with the context)."""
    return tuple(m for m in MECHANISMS.values() if not m.is_linear)


def layer_kinds() -> tuple[str, ...]:
    """The one list of layer kinds: every mechanism's (``"mha"`` for softmax attention), in the table's order.

    :mod:`lineage.models.hybrid` builds a layer of each; :mod:`lineage.measure.footprints` sizes each, plus
    ``"gqa"``, softmax attention with shared key/value heads, a cache layout of the same mechanism.
    """
    return tuple(m.layer_kind for m in MECHANISMS.values())


def layer_mechanism(kind: str) -> Mechanism:
    """The mechanism whose layers are of layer kind ``kind`` (softmax attention for ``"mha"``).

    A ValueError listing :func:`layer_kinds` otherwise ("gqa" included: it is a cache layout that only the cost
    catalogue sizes, not a layer the models build).
    """
    by_kind = {m.layer_kind: m for m in MECHANISMS.values()}
    if kind not in by_kind:
        raise ValueError(f"kind must be a layer kind, one of {', '.join(map(repr, by_kind))}, got {kind!r}")
    return by_kind[kind]


def colours() -> dict[str, str]:
    """mechanism -> colour, for every mechanism."""
    return {m.key: m.colour for m in MECHANISMS.values()}


@contextmanager
def registered(entry: Mechanism, *, replace: bool = False) -> Iterator[Mechanism]:
    """Put ``entry`` in the table for the duration of a ``with`` block, then restore the table as it was.

    For tests: a new key shows that everything derived from the table picks a new mechanism up with no other change
    (a real mechanism is an entry of the table above); ``replace=True`` swaps the entry of an existing key, e.g. a
    mechanism with a wrong op, to show that a test catches it.
    """
    if not isinstance(entry, Mechanism):
        raise TypeError(f"entry must be a Mechanism, got {type(entry).__name__}")
    if replace and entry.key not in MECHANISMS:
        raise ValueError(f"replace=True needs a mechanism named {entry.key!r} in the table to replace")
    if not replace and entry.key in MECHANISMS:
        raise ValueError(f"a mechanism named {entry.key!r} is already in the table (pass replace=True to swap it)")
    token = _Table._EXTRA.set(MappingProxyType({**_Table._EXTRA.get(), entry.key: entry}))
    try:
        yield entry
    finally:
        _Table._EXTRA.reset(token)
