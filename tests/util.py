"""What the numerical tests share: one comparison helper and one tolerance table, and one seeded recipe for the
inputs of every linear-memory op (``make_inputs`` for a cell of the grid, ``stage_inputs`` for a mechanism)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lineage.mechanisms import linear_mechanisms, mechanism
from lineage.numerics import rel_rms

# Measured: fp64 agreement between forms is ~1e-15; fp32 is ~1e-6 (strong decay ~2e-5). Bounds keep headroom.
TOL = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 5e-3}


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype | None = None, tol=None, what=""):
    """Fail unless relative RMS error is within the tolerance for ``dtype`` (default: expected's dtype)."""
    bound = tol if tol is not None else TOL[dtype or expected.dtype]
    if actual.shape != expected.shape:
        raise AssertionError(f"{what} shape mismatch: {tuple(actual.shape)} vs {tuple(expected.shape)}")
    err = rel_rms(actual, expected)
    assert err <= bound, f"{what} relative RMS error {err:.3e} exceeds {bound:.1e}"


MODES = ("recurrent", "chunk", "parallel")
DTYPE_NAME = {torch.float64: "fp64", torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}

# The grid in lineage/ops/recurrence.py's docstring: every linear mechanism of the table is one (write rule, gate)
# cell of the shared recurrence.
STAGE_CELL = {m.key: (m.rule, m.gate) for m in linear_mechanisms()}
CELLS = list(STAGE_CELL.values())
GATED_STAGES = tuple(m.key for m in linear_mechanisms() if m.gate != "none")


def make_inputs(B=2, H=3, T=37, K=8, V=6, *, rule="additive", gate="none", dtype=torch.float64, state=True, seed=0):
    """Seeded inputs for one (rule, gate) cell, drawn in fp64 and then cast, so every dtype sees the same numbers.

    Keys (and queries) are L2-normalised for the delta rule, so that I − β k kᵀ is a contraction. The log-gate
    is logsigmoid(x + 2): per-step decays mostly between 0.7 and 0.99. β is uniform in [0, 1).

    Returns a dict with q, k [B, H, T, K], v [B, H, T, V], g ([B, H, T] | [B, H, T, K] | None),
    beta ([B, H, T] | None) and initial_state ([B, H, K, V] | None).
    """
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    q, k, v = randn(B, H, T, K), randn(B, H, T, K), randn(B, H, T, V)
    if rule == "delta":
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    g_shape = {"none": None, "scalar": (B, H, T), "channel": (B, H, T, K)}[gate]
    g = None if g_shape is None else F.logsigmoid(randn(*g_shape) + 2.0)
    beta = torch.rand(B, H, T, generator=gen, dtype=torch.float64) if rule == "delta" else None
    S0 = 0.5 * randn(B, H, K, V) if state else None
    inputs = {"q": q, "k": k, "v": v, "g": g, "beta": beta, "initial_state": S0}
    return {name: None if x is None else x.to(dtype) for name, x in inputs.items()}


STAGES = tuple(m.key for m in linear_mechanisms())
# The positional arguments after q, k, v that each op takes: g if it has a gate, beta if it writes with the delta rule.
EXTRA_ARGS = {
    m.key: (("g",) if m.gate != "none" else ()) + (("beta",) if m.rule == "delta" else ()) for m in linear_mechanisms()
}


def stage_inputs(stage, B=2, H=3, T=37, K=8, V=6, *, dtype=torch.float64, state=True, seed=0):
    """make_inputs for a stage's cell. Normalised linear attention carries its normaliser z as an extra value
    column of the state, so its initial state is [B, H, K, V + 1] with z > 0 (the normaliser stays positive)."""
    rule, gate = STAGE_CELL[stage]
    x = make_inputs(B, H, T, K, V, rule=rule, gate=gate, dtype=dtype, state=state, seed=seed)
    if stage == "linear_attention" and state:
        S0 = x["initial_state"]
        x["initial_state"] = torch.cat([S0, S0[..., :1].abs()], dim=-1)
    return x


def call_stage(stage, x, **kw):
    """Call the stage's public op on a stage_inputs dict, returning (o, S_final)."""
    kw = {"initial_state": x["initial_state"], "output_final_state": True} | kw
    return mechanism(stage).op(x["q"], x["k"], x["v"], *(x[name] for name in EXTRA_ARGS[stage]), **kw)
