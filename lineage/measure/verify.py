"""``python -m lineage verify``: every mechanism, every mode, against its reference, in fp64.

The mechanisms are those of the table (:mod:`lineage.mechanisms`): each linear one runs through its op in its bare form
(the op's ``bare`` arguments: no feature map, no normaliser) and is compared with the reference recurrence for its write
rule and gate; the softmax op with its standard form. Each case draws random inputs (seeded,
:func:`lineage.inputs.draw_inputs`: the tensors the mechanism's op contract names, in its shapes), runs the op in every
mode and reports the relative RMS error (:func:`lineage.numerics.rel_rms`) of outputs and final states. Two checks add
what is particular to one mechanism: normalised ELU+1 linear attention against its explicit quadratic form, and Mamba-2
in its own SSD symbols. Gated DeltaNet-2, the stage after the article, is checked beside the table (its op takes erase
and write gates, which the table's inputs do not draw yet): its forms against its loop, and its loop with both gates
tied to β against KDA's reference. Cases include odd lengths, non-zero initial states, strong decay (g = −8 per
step), channels mixing weak and very strong decay, and a full wipe (g = −inf). The chunked mode runs at C = 16 and
C = 7: neither divides T = 45 (the tail is padded), and 7 is no power of two (the anchored decayed products of
``recurrence.decayed_products`` pad the chunk); one path serves every case. The one-screen chunked form
(``recurrence.chunk_memory_minimal``) is checked the same way, wipes aside. ``--device cuda`` runs every op on a GPU:
the inputs are drawn on the CPU (the same numbers on every device) and moved there, still in fp64.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lineage.inputs import RANDOM_GATE, draw_inputs, random_inputs
from lineage.mechanisms import Mechanism, linear_mechanisms, mechanism
from lineage.numerics import rel_rms
from lineage.ops.kda import kda
from lineage.ops.linear_attention import NORMALIZER_EPS, linear_attention
from lineage.ops.mamba2 import mamba2_ssd
from lineage.ops.recurrence import chunk_memory_minimal, recurrent_memory

TOLERANCE = 1e-10  # relative RMS, fp64
MODES = ("recurrent", "chunk", "parallel")


@dataclass(frozen=True)
class Check:
    mechanism: str
    case: str
    mode: str
    error: float  # max of the output and final-state relative RMS errors

    @property
    def ok(self) -> bool:
        return self.error <= TOLERANCE


SIZES = {"B": 2, "H": 2, "T": 45, "K": 8, "V": 6}  # verify's sizes: T = 45 is a multiple of neither chunk size


def _on(dev: torch.device, *tensors: torch.Tensor):
    """The tensors, drawn on the CPU, on the device the checks run on."""
    return tuple(t.to(dev) for t in tensors)


def _inputs(gen: torch.Generator, dev: torch.device):
    """q, k, v, β and an initial state at verify's sizes: :func:`random_inputs`."""
    x = random_inputs(*SIZES.values(), gen)
    return _on(dev, x["q"], x["k"], x["v"], x["beta"], x["initial_state"])


def _case_inputs(m: Mechanism, gen: torch.Generator, case: str, dev: torch.device) -> dict:
    """One case's inputs of ``m``'s op (:func:`lineage.inputs.draw_inputs`), its log-gate drawn for the case."""
    x = draw_inputs(m.op_contract, SIZES, gen, gate=lambda shape, gen: _gates(gen, case, shape))
    return {name: None if t is None else t.to(dev) for name, t in x.items()}


def _gates(gen: torch.Generator, case: str, shape: tuple[int, ...]) -> torch.Tensor:
    """The log-gate of one case: random (``lineage.inputs.RANDOM_GATE``), strong decay, mixed channels, or random
    with one step wiped in every head."""
    if case == "strong decay":
        return torch.full(shape, -8.0, dtype=torch.float64)
    if case == "mixed channels":  # some channels decay by e^-30 per step, others barely: decays 100s of decades apart
        g = -torch.rand(shape, generator=gen, dtype=torch.float64) * 0.1
        if len(shape) == 4:
            g[..., ::2] = -30.0
        return g
    g = RANDOM_GATE.draw(shape, gen, dtype=torch.float64)
    if case == "wipe":
        g[:, :, shape[2] // 2] = -float("inf")
    return g


CASES = ("random", "strong decay", "mixed channels", "wipe")


def _linear_family(gen: torch.Generator, dev: torch.device) -> list[Check]:
    """Each linear mechanism of the table, in each mode, against its reference loop: recurrent_memory with its rule
    and gate, or the entry's own (``Mechanism.reference``: Gated DeltaNet-2's erase and write gates)."""
    out = []
    for m in linear_mechanisms():
        for case in CASES if m.takes("g") else ("random",):
            x = _case_inputs(m, gen, case, dev)
            q, k, v, g, b, S0 = (x[name] for name in ("q", "k", "v", "g", "beta", "initial_state"))
            own = {u.name: x[u.name] for u in m.unit_gates}  # tensors of its contract beside g and β
            ref_o, ref_S = m.reference_call(q, k, v, g, b, initial_state=S0, output_final_state=True, **own)
            for mode in MODES:
                for C in (16, 7) if mode == "chunk" else (64,):
                    o, S = m.call(
                        q,
                        k,
                        v,
                        g,
                        b,
                        initial_state=S0,
                        output_final_state=True,
                        mode=mode,
                        chunk_size=C,
                        **m.bare,
                        **own,
                    )
                    label = f"{mode} C={C}" if mode == "chunk" else mode
                    out.append(Check(m.key, case, label, max(rel_rms(o, ref_o), rel_rms(S, ref_S))))
    return out


def _chunk_minimal(gen: torch.Generator, dev: torch.device) -> list[Check]:
    """The one-screen chunked form (recurrence.chunk_memory_minimal) for each write rule and gate, against the loop.
    Not for wipes: its direct e^{G_i − G_j} is undefined after an α = 0 inside the chunk (its docstring says why); not
    for a mechanism with a reference of its own, whose tensors the shared recurrence does not take."""
    out = []
    for m in linear_mechanisms():
        if m.reference is not None:
            continue
        for case in [c for c in CASES if c != "wipe"] if m.takes("g") else ("random",):
            x = _case_inputs(m, gen, case, dev)
            q, k, v, g, b, S0 = (x[name] for name in ("q", "k", "v", "g", "beta", "initial_state"))
            ref_o, ref_S = recurrent_memory(q, k, v, g, b, rule=m.rule, initial_state=S0, output_final_state=True)
            for C in (16, 7):
                o, S = chunk_memory_minimal(q, k, v, g, b, rule=m.rule, initial_state=S0, chunk_size=C)
                out.append(Check(m.key, case, f"minimal C={C}", max(rel_rms(o, ref_o), rel_rms(S, ref_S))))
    return out


def _linear_attention(gen: torch.Generator, dev: torch.device) -> list[Check]:
    """Normalised ELU+1 linear attention against the explicit quadratic form φ(Q)φ(K)ᵀV / φ(Q)φ(K)ᵀ1."""
    q, k, v, _, _ = _inputs(gen, dev)
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    scores = (fq @ fk.transpose(-2, -1)).tril()  # (B, H, T, T), causal
    eps = NORMALIZER_EPS * q.shape[-1] ** 0.5  # the op adds eps after scaling φ(q) by K ** -0.5
    ref = (scores @ v) / (scores.sum(-1, keepdim=True) + eps)
    out = []
    for mode in MODES:
        o, _ = linear_attention(q, k, v, mode=mode, chunk_size=16)
        out.append(Check("linear_attention", "elu1 normalised", mode, rel_rms(o, ref)))
    return out


def _mamba2_ssd(gen: torch.Generator, dev: torch.device) -> list[Check]:
    """Mamba-2 in its own symbols against the scalar-gated recurrence with the mapping done by hand."""
    B, H, T, P, N = 2, 4, 45, 6, 8
    x = torch.randn(B, H, T, P, generator=gen, dtype=torch.float64)
    dt = F.softplus(torch.randn(B, H, T, generator=gen, dtype=torch.float64))
    A = -torch.rand(H, generator=gen, dtype=torch.float64) - 0.1
    Bm = torch.randn(B, 2, T, N, generator=gen, dtype=torch.float64)  # 2 groups shared by 4 heads
    Cm = torch.randn(B, 2, T, N, generator=gen, dtype=torch.float64)
    x, dt, A, Bm, Cm = _on(dev, x, dt, A, Bm, Cm)
    ref_o, ref_S = recurrent_memory(
        Cm.repeat_interleave(2, 1),
        Bm.repeat_interleave(2, 1),
        x * dt[..., None],
        A[None, :, None] * dt,
        rule="additive",
        scale=1.0,
        output_final_state=True,
    )
    out = []
    for mode in MODES:
        o, S = mamba2_ssd(x, dt, A, Bm, Cm, output_final_state=True, mode=mode, chunk_size=16)
        out.append(Check("mamba2", "SSD symbols", mode, max(rel_rms(o, ref_o), rel_rms(S, ref_S))))
    return out


def _softmax(gen: torch.Generator, dev: torch.device) -> list[Check]:
    """Softmax attention's recurrent (KV cache) and chunked (tiled online softmax) forms against the standard form."""
    q, k, v, _, _ = _inputs(gen, dev)
    op = mechanism("softmax").op
    ref, _ = op(q, k, v, mode="parallel")
    out = []
    for mode, C in (("recurrent", 64), ("chunk", 16), ("chunk", 7)):
        o, _ = op(q, k, v, mode=mode, chunk_size=C)
        out.append(Check("softmax", "random", f"{mode} C={C}" if mode == "chunk" else mode, rel_rms(o, ref)))
    return out


def _gate_bound(gen: torch.Generator, dev: torch.device) -> list[Check]:
    """KDA with Kimi K3's gate bound (``gate_lower_bound=-5``) in each mode, against the loop on fla's bounded gate
    ``lower_bound · sigmoid(x)`` written out here, for g = lower_bound · softplus(x): strong gates, one step wiped."""
    q, k, v, beta, S0 = _inputs(gen, dev)
    bound = -5.0
    x = 3 * torch.randn(q.shape, generator=gen, dtype=torch.float64).to(dev)
    x[:, :, q.shape[2] // 2] = float("inf")  # a wipe asked for (g = -inf): the bound keeps e^-5 of the state
    g_ref = bound * torch.sigmoid(x)
    ref_o, ref_S = recurrent_memory(q, k, v, g_ref, beta, rule="delta", initial_state=S0, output_final_state=True)
    bounded = dict(initial_state=S0, output_final_state=True, gate_lower_bound=bound)
    out = []
    for mode, C in (("recurrent", 64), ("chunk", 16), ("chunk", 7), ("parallel", 64)):
        o, S = kda(q, k, v, bound * F.softplus(x), beta, mode=mode, chunk_size=C, **bounded)
        label = f"{mode} C={C}" if mode == "chunk" else mode
        out.append(Check("kda", "bound -5", label, max(rel_rms(o, ref_o), rel_rms(S, ref_S))))
    return out


def _gated_deltanet2(gen: torch.Generator, dev: torch.device) -> list[Check]:
    """Gated DeltaNet-2's loop (its table entry's reference, against which :func:`_linear_family` checks its chunked
    and T×T forms) with both gates tied to β, against KDA's reference, the package's recurrence: the reduction the
    paper states, in each gate case. It checks the loop itself against a second, independent implementation."""
    out = []
    m = mechanism("gated_deltanet2")
    for case in CASES:
        x = _case_inputs(m, gen, case, dev)
        q, k, v, g, S0 = (x[name] for name in ("q", "k", "v", "g", "initial_state"))
        beta = torch.rand(q.shape[:3], generator=gen, dtype=torch.float64).to(dev)
        kw = dict(initial_state=S0, output_final_state=True)
        kda_o, kda_S = recurrent_memory(q, k, v, g, beta, rule="delta", per_channel=True, **kw)
        tied = {u.name: beta[..., None].expand_as(x[u.name]).contiguous() for u in m.unit_gates}
        o, S = m.reference(q, k, v, g, tied["erase"], tied["write"], **kw)
        out.append(Check("gated_deltanet2", case, "tied = KDA", max(rel_rms(o, kda_o), rel_rms(S, kda_S))))
    return out


def run_verify(seed: int = 0, device: torch.device | str = "cpu") -> list[Check]:
    """Every check, its ops run on ``device`` (the inputs drawn on the CPU from ``seed``, the same on any device)."""
    gen, dev = torch.Generator().manual_seed(seed), torch.device(device)
    checks = []
    for part in (_linear_family, _chunk_minimal, _linear_attention, _mamba2_ssd, _softmax, _gate_bound):
        checks += part(gen, dev)
    return checks + _gated_deltanet2(gen, dev)


def format_checks(checks: list[Check]) -> str:
    rows = [f"{'mechanism':<18} {'case':<15} {'mode':<12} {'rel. RMS error':>15}  result"]
    for c in checks:
        rows.append(f"{c.mechanism:<18} {c.case:<15} {c.mode:<12} {c.error:>15.2e}  {'ok' if c.ok else 'FAIL'}")
    failed = sum(not c.ok for c in checks)
    rows.append(f"{len(checks) - failed} passed, {failed} failed (tolerance {TOLERANCE:.0e}, fp64)")
    return "\n".join(rows)
