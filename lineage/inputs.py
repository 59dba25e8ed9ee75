"""Inputs for the linear-memory mechanisms, one recipe per purpose, and the one way to run a mechanism on them.

Every q, k, v, g, β the package draws comes from one of these recipes, chosen by what the numbers are for:

* checking one form against another, and timing the forms: :func:`random_inputs` (``python -m lineage bench``), and
  :func:`draw_inputs`, the same numbers kept to what one mechanism's op takes (``python -m lineage verify``, the tests
  through ``tests.util.make_inputs``);
* a gate of a given strength: :class:`GateDraw` (the benchmark's strengths, :data:`RANDOM_GATE` of verify and the
  tests, :func:`layer_inputs`' gate);
* inputs as a layer feeds its op, at any size: :func:`layer_inputs` (the real-size runs of
  :mod:`lineage.teach.real_size`, the KDA step of :mod:`lineage.measure.bench_decode`);
* a stage page's demo, its gates set by explicit rules: :func:`rule_inputs` with a :class:`GateRule` (the stage
  pages, :mod:`lineage.teach.stage_runs`).

The story's inputs are not drawn: :func:`lineage.teach.story.story_tensors` builds them from the story's own keys,
values and gates (the claims, :mod:`lineage.teach.claims`).

Which tensors an op takes and their shapes are the mechanism's op contract (``Mechanism.op_contract``): every recipe
asks the entry (``m.takes("g")``, ``m.input_shape("g", sizes)``) instead of working it out from the rule and gate.

Each recipe draws from a ``torch.Generator`` it is given (or seeds its own), never from torch's global one, in a
fixed order, so a seed gives the same numbers every time (verify and the benchmark are reproducible to the bit).

Running a mechanism for display goes through one function, :func:`run_mechanism`: the table's
:meth:`lineage.mechanisms.Mechanism.call` (the public op, its checks and its presets), or the reference loop with a
:class:`lineage.ops.recurrence.MemoryTrace` where a page draws every state (the one thing the op does not return).
:func:`as_recurrence` maps q, k, v as the op hands them to the shared recurrence (the feature map, the normaliser's
column), for the runs that show the recurrence's own state. The stage pages (``stage_runs.run_stage``), the story
(``claims.run_story`` through it, ``claims.trace_story``), the real-size runs (``real_size.run_at_scale``) and the
Memory lab (``lab.run_mechanisms``, every cue a head of one call) are built on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lineage import checks
from lineage.mechanisms import Mechanism, OpInput
from lineage.ops.linear_attention import recurrence_inputs

# The layers' gate at real size: log σ(x) divided by a normaliser of 16 (Yang et al. 2024, arXiv 2312.06635; fla's
# gate_logit_normalizer), so α = σ(x)^(1/16) sits near 1 as in a trained layer. Undivided, α = σ(N(0, 1)) averages
# 0.5 and every state forgets all but its last few tokens.
GATE_DIVISOR = 16.0


# ---------------------------------------------------------------------------------------------------------------
# Checking forms against each other, and timing them
# ---------------------------------------------------------------------------------------------------------------


def random_inputs(
    B: int, H: int, T: int, K: int, V: int, gen: torch.Generator, *, dtype: torch.dtype = torch.float64
) -> dict[str, torch.Tensor]:
    """Random inputs at given sizes for checking one form of an op against another (verify, the tests) and for
    timing the forms (the benchmark): one set serves every linear mechanism (:meth:`Mechanism.call` passes β only
    to the delta rule). The gate is drawn after them, by :class:`GateDraw`, from the same generator or another.

    Drawn in ``dtype`` on the generator's device, in this order: q ~ N(0, 1) [B, H, T, K]; k [B, H, T, K], N(0, 1)
    rows L2-normalised (as the layers feed the delta rule: I − β k kᵀ is then a contraction); v ~ N(0, 1)
    [B, H, T, V]; β ~ U[0, 1) [B, H, T]; an initial state ~ N(0, 1) [B, H, K, V].

    Returns a dict with q, k, v, beta and initial_state.
    """

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=dtype, device=gen.device)

    q = normal(B, H, T, K)
    k = F.normalize(normal(B, H, T, K), dim=-1)
    v = normal(B, H, T, V)
    beta = torch.rand(B, H, T, generator=gen, dtype=dtype, device=gen.device)
    return {"q": q, "k": k, "v": v, "beta": beta, "initial_state": normal(B, H, K, V)}


# ---------------------------------------------------------------------------------------------------------------
# A gate of a given strength
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateDraw:
    """A random log-gate of a given strength: g = log σ(x + shift) / normaliser with x ~ N(0, 1), then g = −inf (a
    wipe) at ``wipe_fraction`` of the positions.

    normaliser 16, 4, 1, 0.25 give a mean log-α of about −0.05, −0.2, −0.8, −3.2 per step (the benchmark's
    strengths; 16 is :data:`GATE_DIVISOR`, a trained layer's); shift 2 gives α mostly between 0.7 and 0.99 (verify's
    and the tests' random gates).
    """

    normaliser: float = 1.0
    wipe_fraction: float = 0.0
    shift: float = 0.0
    wipe_channels: bool = False  # wipe single (position, channel) entries of a per-channel gate, not whole positions

    @property
    def label(self) -> str:
        base = f"logσ(x{self.shift:+g})" if self.shift else "logσ(x)"
        base += f"/{self.normaliser:g}"
        wipes = " channel wipes" if self.wipe_channels else " wipes"
        return base + (f" + {self.wipe_fraction:.0%}{wipes}" if self.wipe_fraction else "")

    def draw(self, shape: tuple[int, ...], gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """A log-gate of ``shape`` ([B, H, T] or [B, H, T, K]) in ``dtype``, on the generator's device; a wipe erases
        every channel of its position, and every (batch, head) has the same number of them, at random places."""
        x = torch.randn(shape, generator=gen, dtype=dtype, device=gen.device)
        g = F.logsigmoid(x + self.shift if self.shift else x) / self.normaliser
        B, H, T = shape[:3]
        if self.wipe_channels:
            if len(shape) != 4:
                raise ValueError(f"channel wipes need a per-channel gate shape [B, H, T, K], got {list(shape)}")
            wiped = torch.rand(shape, generator=gen, device=gen.device) < self.wipe_fraction
            return g.masked_fill(wiped, float("-inf"))
        wiped = round(self.wipe_fraction * T)
        if wiped:
            positions = torch.rand(B, H, T, generator=gen, device=gen.device).argsort(dim=-1)[..., :wiped]
            mask = torch.zeros(B, H, T, dtype=torch.bool, device=gen.device).scatter_(-1, positions, True)
            g = g.masked_fill(mask.view(B, H, T, *([1] * (len(shape) - 3))), float("-inf"))
        return g


RANDOM_GATE = GateDraw(shift=2.0)  # the checks' random gate (verify, the tests): α mostly between 0.7 and 0.99
# The strengths real models' gates have, from mild (a trained layer's, n = 16) to fast forgetting (n = 0.25, α ≈ 0.04
# a step) and wipes: the benchmark's rows (lineage.measure.bench) and the chunked form's numerics tests, one recipe.
GATE_STRENGTHS = (GateDraw(16), GateDraw(4), GateDraw(1), GateDraw(0.25), GateDraw(1, 0.05))
CHANNEL_WIPES = GateDraw(1, 0.05, wipe_channels=True)  # per-channel gates only: single channels wiped (the tests')


def draw_inputs(
    contract: Sequence[OpInput],
    sizes: dict[str, int],
    gen: torch.Generator,
    *,
    gate: Callable[[tuple[int, ...], torch.Generator], torch.Tensor] | None = None,
    dtype: torch.dtype = torch.float64,
) -> dict[str, torch.Tensor | None]:
    """The checking inputs of an op (:func:`random_inputs`, then its log-gate), kept to what its op contract
    (``Mechanism.op_contract``, or ``default_op_inputs(rule, gate)`` for a cell of the grid) takes: ``sizes`` has B, H,
    T, K and V.

    ``gate(shape, gen)`` draws the log-gate in the shape the contract gives (default :data:`RANDOM_GATE` in
    ``dtype``), from the same generator after the rest, and only when the op takes one. So the numbers are those of
    :func:`random_inputs` whatever the mechanism, and a tensor the op does not take is None.

    A unit gate of the contract (``OpInput.unit``: Gated DeltaNet-2's erase and write) is drawn U[0, 1) in its shape,
    after the log-gate, and returned under its name.

    Returns a dict with q, k, v, g, beta (None where the op takes no such tensor), initial_state and any unit gates.
    """
    takes = {x.name: x for x in contract}
    unknown = {name for name, x in takes.items() if not x.unit} - {"q", "k", "v", "g", "beta"}
    if unknown:
        raise ValueError(
            f"draw_inputs draws q, k, v, g, beta and unit gates; the contract also names {sorted(unknown)}"
        )
    x = random_inputs(sizes["B"], sizes["H"], sizes["T"], sizes["K"], sizes["V"], gen, dtype=dtype)
    if gate is None:

        def gate(shape, gen):
            return RANDOM_GATE.draw(shape, gen, dtype=dtype)

    x["g"] = gate(takes["g"].shape(sizes), gen) if "g" in takes else None
    if "beta" not in takes:
        x["beta"] = None
    # after the gate, so the numbers before it are every op's
    return x | draw_unit_gates([u for u in contract if u.unit], sizes, gen, dtype=dtype)


def draw_unit_gates(
    gates: Sequence[OpInput], sizes: dict[str, int], gen: torch.Generator, *, dtype: torch.dtype = torch.float64
) -> dict[str, torch.Tensor]:
    """Unit gates (``OpInput.unit``: Gated DeltaNet-2's erase and write) for checking and timing: U[0, 1) in their
    shapes at ``sizes``, in order, from ``gen`` on its device."""
    return {u.name: torch.rand(u.shape(sizes), generator=gen, dtype=dtype, device=gen.device) for u in gates}


# ---------------------------------------------------------------------------------------------------------------
# Inputs as a layer feeds its op
# ---------------------------------------------------------------------------------------------------------------


def layer_inputs(m: Mechanism, H: int, T: int, K: int, gen: torch.Generator, *, state: bool = False) -> dict:
    """Inputs shaped and ranged as ``m``'s layer hands them to its op, at any size (a real-size run, one decoding
    step): batch 1, H heads of K = V channels, fp32 on the generator's device.

    Drawn in this order: q, k, v ~ N(0, 1) [1, H, T, K], q and k L2-normalised where the layer normalises them
    (``LayerOptions.l2norm``); the gate, ``GateDraw(GATE_DIVISOR)`` per head [1, H, T] or per key channel
    [1, H, T, K]; β = sigmoid(N(0, 1)) [1, H, T] for the delta rule; any unit gates of its contract (Gated
    DeltaNet-2's erase and write), sigmoid(N(0, 1)) in their shapes; with ``state``, a state ~ N(0, 1/K) [1, H, K, K].

    Returns a dict with q, k, v, g (None without a gate), beta (None where the op takes none), the unit gates by name
    and, with ``state``, initial_state.
    """
    for name, value in (("heads", H), ("T", T), ("K", K)):
        checks.positive_int(name, value)

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=torch.float32, device=gen.device)

    sizes = {"B": 1, "H": H, "T": T, "K": K, "V": K}
    q, k, v = normal(1, H, T, K), normal(1, H, T, K), normal(1, H, T, K)
    if m.layer.l2norm:
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    g = GateDraw(GATE_DIVISOR).draw(m.input_shape("g", sizes), gen) if m.takes("g") else None
    beta = torch.sigmoid(normal(*m.input_shape("beta", sizes))) if m.takes("beta") else None
    x = {"q": q, "k": k, "v": v, "g": g, "beta": beta}
    for u in m.unit_gates:  # a layer's σ(W x), one gate vector per token: erase [1, H, T, K], write [1, H, T, V]
        x[u.name] = torch.sigmoid(normal(*u.shape(sizes)))
    if state:
        x["initial_state"] = normal(1, H, K, K) / math.sqrt(K)
    return x


# ---------------------------------------------------------------------------------------------------------------
# A stage page's demo: gates set by explicit rules
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateRule:
    """How a stage page sets gates and write strengths (all explicit, none learned).

    A scalar gate holds α_t near ``alpha`` (jittered by ``alpha_jitter``); a per-channel gate spreads the channels'
    α evenly from ``alpha`` (channel 0, the slowest to forget) down to ``alpha_min`` (the fastest).
    """

    alpha: float = 0.9  # α of a scalar gate, or of the slowest channel
    alpha_min: float = 0.9  # α of the fastest channel (per-channel gates); = alpha makes all channels equal
    alpha_jitter: float = 0.0  # random spread of logit(α) over time steps
    beta: float | None = 0.5  # write strength of the delta rule; None draws β_t = sigmoid(N(0, 1))


def rule_inputs(m: Mechanism, T: int, K: int, V: int, seed: int, rule: GateRule = GateRule()) -> tuple:
    """A stage page's inputs, gates set by ``rule``: q, k, v [1, 1, T, ·], g ([1, 1, T] per head, [1, 1, T, K] per
    channel, or None), beta ([1, 1, T] or None), all fp32 on the CPU.

    Drawn from ``seed`` in this order whatever the mechanism and the rule, so the same seed gives the same q, k, v
    on every stage page (pages compare like for like) and a rule with the gate off (α = 1) turns a gated stage into
    its ungated neighbour exactly: q, k, v ~ N(0, 1), then the jitter of the gate's logit and the noise of a random
    β, both N(0, 1). Keys and queries are L2-normalised where the layer does it (``LayerOptions.l2norm``); linear
    attention gets raw q, k (its feature map is applied later, :func:`as_recurrence`).
    """
    for name in ("alpha", "alpha_min"):
        a = getattr(rule, name)
        if not 0.0 <= a <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {a}")
    if rule.beta is not None and not 0.0 <= rule.beta <= 1.0:
        raise ValueError(f"beta must lie in [0, 1] (or None for random), got {rule.beta}")
    gen = torch.Generator().manual_seed(int(seed))
    q = torch.randn(1, 1, T, K, generator=gen)
    k = torch.randn(1, 1, T, K, generator=gen)
    v = torch.randn(1, 1, T, V, generator=gen)
    jitter = torch.randn(1, 1, T, K, generator=gen)
    beta_noise = torch.randn(1, 1, T, generator=gen)
    if m.layer.l2norm:  # as its layer feeds its op (the delta rule's layers: I − β k kᵀ stays a contraction)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    g = None
    if m.takes("g"):
        per_channel = m.input_dims("g")[-1] == "K"
        base = torch.linspace(rule.alpha, rule.alpha_min, K) if per_channel else torch.full((K,), rule.alpha)
        spread = jitter if per_channel else jitter[..., :1]
        logit = torch.logit(base.clamp(1e-6, 1 - 1e-6)) + rule.alpha_jitter * spread
        alpha = torch.sigmoid(logit)
        alpha = torch.where(base >= 1.0, 1.0, torch.where(base <= 0.0, 0.0, alpha))  # keep exact 0 and 1
        g = torch.log(alpha)  # −inf where α = 0: a wipe
        g = g if per_channel else g[..., 0]
    beta = None
    if m.writes_with_strength:  # β, or the unit gates that are β on every channel (Gated DeltaNet-2: then KDA)
        shape = (1, 1, T)
        beta = torch.sigmoid(beta_noise) if rule.beta is None else torch.full(shape, float(rule.beta))
    return q, k, v, g, beta


# ---------------------------------------------------------------------------------------------------------------
# Running a mechanism for display
# ---------------------------------------------------------------------------------------------------------------


def as_recurrence(m: Mechanism, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, feature_map: str | None = None):
    """q, k, v as ``m``'s op hands them to the shared recurrence: its feature map on q and k (``feature_map``, when
    given, replaces the layer's: a page may offer another φ), and a column of ones after the values where the layer
    keeps the normaliser (the state's last column then accumulates z). Unchanged for a mechanism with neither.

    Run on the result with ``run_mechanism(..., bare=True)`` or ``trace=True``, the state is the recurrence's own.
    """
    phi = (feature_map or m.layer.feature_map) if m.layer.feature_map is not None else "identity"
    if phi == "identity" and not m.layer.normalize:
        return q, k, v
    return recurrence_inputs(q, k, v, phi, m.layer.normalize)


def run_mechanism(
    m: Mechanism,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    *,
    bare: bool = False,
    trace: bool = False,
    **kwargs,
):
    """Run the linear mechanism ``m`` once on its inputs, for display: the one path of the stage pages, the story,
    the real-size runs and the Memory lab.

    By default through :meth:`lineage.mechanisms.Mechanism.call`: the public op with its checks and its presets
    (linear attention's feature map and normaliser), ``g`` and ``beta`` passed where ``m`` takes them; ``kwargs``
    go to the op (``mode``, ``chunk_size``, ``scale``, ``initial_state``, ``output_final_state``). Returns (o, S).

    Args:
        bare: the op as the bare shared recurrence (its table entry's ``bare`` arguments: no feature map, no
            normaliser), on inputs already mapped by :func:`as_recurrence` (a stage page, whose output then carries
            the normaliser's column) or on raw ones (the lab's S = Σ k vᵀ).
        trace: the reference loop (:meth:`lineage.mechanisms.Mechanism.reference_call`: the shared recurrence with
            the rule and gate of ``m``, or the entry's own loop), recording every state: what the op cannot return.
            Returns (o, S, MemoryTrace). It runs the recurrence itself, so it takes the recurrence's inputs
            (:func:`as_recurrence`), as ``bare`` does.
    """
    if not m.is_linear:
        raise ValueError(f"{m.key!r} is not a linear-memory mechanism; its op has another signature")
    if trace:
        return m.reference_call(q, k, v, g, beta, trace=True, **kwargs)
    return m.call(q, k, v, g, beta, **(dict(m.bare) | kwargs if bare else kwargs))
