"""The shared recurrence: recurrent ⇄ chunk ⇄ parallel for all six (rule × gate) cells, strong decay, wipes, traces.

The inputs come from ``tests.util.make_inputs``, the one seeded recipe of every linear-memory test file.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re

import pytest
import torch

from lineage.ops import recurrence
from lineage.ops.recurrence import chunk_memory, chunk_memory_minimal, recurrent_memory, run_memory
from tests.util import CELLS, DTYPE_NAME, GATED_STAGES, MODES, STAGE_CELL, assert_close, make_inputs


def run(x, *, rule, mode, chunk_size=64, **kw):
    """run_memory on a make_inputs dict, always returning the final state."""
    return run_memory(
        x["q"],
        x["k"],
        x["v"],
        x["g"],
        x["beta"],
        rule=rule,
        mode=mode,
        chunk_size=chunk_size,
        initial_state=x["initial_state"],
        output_final_state=True,
        **kw,
    )


# ---- 1. recurrent ⇄ chunk ⇄ parallel ----------------------------------------------------------------------

# (B, H, T, C): T not a multiple of C, C ∈ {1, 3, 16, 64, T}, T = 1, and one T that C divides.
SHAPES = [(2, 3, 37, 1), (2, 3, 37, 3), (2, 3, 37, 16), (2, 3, 37, 64), (2, 3, 37, 37), (1, 2, 1, 1), (1, 2, 1, 64)]
SHAPES += [(1, 2, 48, 16)]
EQUIVALENCE_CASES = [
    pytest.param(rule, gate, B, H, T, C, dtype, id=f"{rule}-{gate}-B{B}-H{H}-T{T}-C{C}-{DTYPE_NAME[dtype]}")
    for (rule, gate), (B, H, T, C), dtype in itertools.product(CELLS, SHAPES, (torch.float64, torch.float32))
]


@pytest.mark.parametrize("rule, gate, B, H, T, C, dtype", EQUIVALENCE_CASES)
def test_chunk_and_parallel_equal_recurrence(rule, gate, B, H, T, C, dtype):
    x = make_inputs(B, H, T, rule=rule, gate=gate, dtype=dtype)
    o_ref, S_ref = run(x, rule=rule, mode="recurrent")
    for mode in ("chunk", "parallel"):
        o, S = run(x, rule=rule, mode=mode, chunk_size=C)
        assert o.dtype == dtype and S.dtype == dtype
        assert_close(o, o_ref, what=f"{mode} output")
        assert_close(S, S_ref, what=f"{mode} final state")


# ---- 5. strong decay, wipes -----------------------------------------------------


@pytest.mark.parametrize("stage", GATED_STAGES)
def test_strong_decay_chunk_is_finite_and_equals_recurrence(stage):
    # g = −8 every step: a chunk of 64 spans exp(−512), far below fp32's smallest normal number, so any
    # exp(G_i)·exp(−G_j) factorisation would overflow; only differences on the masked triangle survive.
    rule, gate = STAGE_CELL[stage]
    x = make_inputs(1, 1, 4096, 16, 16, rule=rule, gate=gate, dtype=torch.float32, state=False)
    x["g"] = torch.full_like(x["g"], -8.0)
    o_ref, S_ref = run(x, rule=rule, mode="recurrent")
    o, S = run(x, rule=rule, mode="chunk", chunk_size=64)
    assert torch.isfinite(o).all() and torch.isfinite(S).all()
    assert_close(o, o_ref, what="chunk output")
    assert_close(S, S_ref, what="chunk final state")


GRAD_CASES = [
    pytest.param(rule, gate, strong, id=f"{rule}-{gate}{'-strong' if strong else ''}")
    for (rule, gate), strong in itertools.product(CELLS, (False, True))
    if gate != "none" or not strong
]


@pytest.mark.parametrize("rule, gate, strong", GRAD_CASES)
def test_chunk_gradients_equal_the_recurrence_gradients(rule, gate, strong):
    # The layers are nn.Modules meant to be trained: autograd through the chunked form (its in-place block writes,
    # the triangular inverse, the hand-off between chunks) must give the reference's gradients for every input.
    B, H, T, K, V = 1, 2, 29, 8, 6
    x = make_inputs(B, H, T, K, V, rule=rule, gate=gate)
    if strong:  # −80 per step over the first 15 steps: chunks 0 and 1 span e^−640 and e^−560 (0 even in fp64)
        first = (torch.arange(T) < 15).to(torch.float64).view(1, 1, T, *([1] * (x["g"].dim() - 3)))
        x["g"] = x["g"] - 80.0 * first
    leaves = {name: t.clone().requires_grad_(True) for name, t in x.items() if t is not None}
    gen = torch.Generator().manual_seed(1)
    w_o = torch.randn(B, H, T, V, generator=gen, dtype=torch.float64)
    w_S = torch.randn(B, H, K, V, generator=gen, dtype=torch.float64)
    grads = {}
    for mode in ("recurrent", "chunk"):
        o, S = run({**x, **leaves}, rule=rule, mode=mode, chunk_size=8)
        loss = (o * w_o).sum() + (S * w_S).sum()
        grads[mode] = dict(zip(leaves, torch.autograd.grad(loss, list(leaves.values())), strict=True))
    for name in leaves:
        assert torch.isfinite(grads["chunk"][name]).all(), f"d/d{name} is not finite"
        assert_close(grads["chunk"][name], grads["recurrent"][name], what=f"d loss / d {name}")


WIPE_CASES = [
    pytest.param(stage, mode, dtype, id=f"{stage}-{mode}-{DTYPE_NAME[dtype]}")
    for stage, mode, dtype in itertools.product(GATED_STAGES, MODES, (torch.float32, torch.float64))
]


@pytest.mark.parametrize("stage, mode, dtype", WIPE_CASES)
def test_minus_inf_gate_wipes_the_state(stage, mode, dtype):
    rule, gate = STAGE_CELL[stage]
    s = 9  # the wiped step, in the middle of the third chunk of 4
    x = make_inputs(1, 2, 20, rule=rule, gate=gate, dtype=dtype)
    x["g"][:, :, s] = -torch.inf
    # write nothing at the wipe step (β = 0, or k = 0 for the additive rule), so the state after it is empty
    if rule == "delta":
        x["beta"][:, :, s] = 0.0
    else:
        x["k"][:, :, s] = 0.0
    upto = {name: None if t is None or name == "initial_state" else t[:, :, : s + 1] for name, t in x.items()}
    upto["initial_state"] = x["initial_state"]
    _, S_wiped = run(upto, rule=rule, mode=mode, chunk_size=4)
    if mode == "recurrent":
        assert torch.count_nonzero(S_wiped) == 0, f"max |S| = {S_wiped.abs().max().item():.3e} after the wipe"
    else:
        assert S_wiped.abs().max() <= 1e-30
    o, _ = run(x, rule=rule, mode=mode, chunk_size=4)
    fresh = {name: None if t is None or name == "initial_state" else t[:, :, s:] for name, t in x.items()}
    o_fresh, _ = run(fresh, rule=rule, mode=mode, chunk_size=4)
    assert_close(o[:, :, s:], o_fresh, what="outputs after the wipe vs a fresh run")
    assert torch.isfinite(o).all()


# ---- 7. traces --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule, gate", CELLS, ids=[f"{r}-{g}" for r, g in CELLS])
def test_trace_records_what_the_recurrence_did(rule, gate):
    B, H, T, K, V = 2, 2, 7, 4, 3
    x = make_inputs(B, H, T, K, V, rule=rule, gate=gate)
    scale = 0.7
    o, S, tr = recurrent_memory(
        x["q"],
        x["k"],
        x["v"],
        x["g"],
        x["beta"],
        rule=rule,
        scale=scale,
        initial_state=x["initial_state"],
        output_final_state=True,
        trace=True,
    )
    states, decay, read, delta, output = (
        torch.from_numpy(a) for a in (tr.states, tr.decay, tr.read, tr.delta, tr.output)
    )
    assert states.shape == (B, H, T, K, V) and decay.shape == (B, H, T, K)
    assert read.shape == delta.shape == output.shape == (B, H, T, V)
    assert_close(output, o, what="trace.output")
    assert_close(states[:, :, -1], S, what="trace.states[-1]")
    g = torch.zeros(B, H, T) if x["g"] is None else x["g"]
    expected_decay = torch.exp(g if g.dim() == 4 else g[..., None]).expand(B, H, T, K)
    assert_close(decay, expected_decay, what="trace.decay")
    expected_delta = x["v"] if rule == "additive" else x["beta"][..., None] * (x["v"] - read)
    assert_close(delta, expected_delta, what="trace.delta")
    # Each recorded step is consistent with the one before: S' = Diag(α) S_{t−1}, read = S'ᵀk, S_t = S' + k uᵀ.
    previous = torch.cat([x["initial_state"][:, :, None], states[:, :, :-1]], dim=2)  # (B, H, T, K, V)
    decayed = decay[..., None] * previous
    assert_close(read, torch.einsum("bhtkv,bhtk->bhtv", decayed, x["k"]), what="trace.read")
    assert_close(states, decayed + x["k"][..., None] * delta[..., None, :], what="trace.states")
    assert_close(output, torch.einsum("bhtkv,bhtk->bhtv", states, scale * x["q"]), what="o_t = S_tᵀ(scale q_t)")


# ---- the one-screen chunked form ---------------------------------------------------------------------------------


@pytest.mark.parametrize("C", [16, 5], ids=["C16", "C5"])
@pytest.mark.parametrize(("rule", "gate"), CELLS, ids=[f"{r}-{g}" for r, g in CELLS])
def test_the_minimal_chunked_form_is_the_loop_and_the_fast_form(rule, gate, C):
    """chunk_memory_minimal (the papers' steps on one screen) gives the loop's outputs and final state, and so the fast
    chunk_memory's: the readable form and the fast one compute the same thing."""
    x = make_inputs(rule=rule, gate=gate)
    ref_o, ref_S = recurrent_memory(**x, rule=rule, output_final_state=True)
    o, S = chunk_memory_minimal(**x, rule=rule, chunk_size=C)
    assert_close(o, ref_o, torch.float64)
    assert_close(S, ref_S, torch.float64)
    fast_o, fast_S = run_memory(**x, rule=rule, mode="chunk", chunk_size=C, output_final_state=True)
    assert_close(o, fast_o, torch.float64)
    assert_close(S, fast_S, torch.float64)


def test_the_minimal_chunked_form_fits_on_one_screen():
    """About forty lines of body, the numbered steps 1–5 in order, each once."""
    source = inspect.getsource(chunk_memory_minimal)
    body = source.split('"""')[2].strip().splitlines()
    assert len(body) <= 45, len(body)
    steps = [line.strip()[:4] for line in body if line.strip()[:3] in {f"# {n}" for n in "12345"}]
    assert steps == ["# 1.", "# 2.", "# 3.", "# 4.", "# 5."], steps


def _numbered_steps(source: str) -> list[str]:
    return re.findall(r"^\s*# (\d)\.", source, flags=re.MULTILINE)


def test_the_fast_chunked_form_reads_its_steps_in_order_in_one_function():
    """chunk_memory's steps 1–5 each appear once, in order, in chunk_memory itself, numbered as chunk_memory_minimal's;
    no other function of recurrence.py numbers steps, and the speed knob is labelled as such."""
    fast, minimal = inspect.getsource(chunk_memory), inspect.getsource(chunk_memory_minimal)
    assert _numbered_steps(fast) == _numbered_steps(minimal) == list("12345")
    source = inspect.getsource(recurrence)
    numbered = {
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and _numbered_steps(ast.get_source_segment(source, node) or "")
    }
    assert numbered == {"chunk_memory", "chunk_memory_minimal"}, numbered
    assert "# Speed knob" in fast


def test_G_means_the_cumulative_log_decay_throughout():
    """In recurrence.py G is only ever a cumulative sum of the log-decay g (as in the papers), never a width."""
    tree = ast.parse(inspect.getsource(recurrence))
    assigned = [
        ast.unparse(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "G" for t in node.targets)
    ]
    assert assigned and all("cumsum(" in value for value in assigned), assigned


def test_the_docstrings_credit_the_anchor_and_name_the_minimal_form():
    doc = recurrence.__doc__ or ""
    for text in (doc, chunk_memory.__doc__ or ""):
        assert "fla/ops/kda/chunk_intra.py" in text and "applied recursively" in text
    for text in (doc, chunk_memory.__doc__ or "", chunk_memory_minimal.__doc__ or ""):
        assert "minus the anchors and the speed knobs" in " ".join(text.split())


def test_a_wipe_is_why_the_fast_form_anchors_its_decays():
    """A wipe (α = 0) inside a chunk leaves the direct e^{G_i − G_j} undefined (−∞ + ∞): the minimal form returns NaN,
    as its docstring says, where chunk_memory's anchored products give the loop's answer."""
    x = make_inputs(rule="delta", gate="channel")
    x["g"][:, :, 10] = -float("inf")
    ref_o, _ = recurrent_memory(**x, rule="delta", output_final_state=True)
    minimal_o, _ = chunk_memory_minimal(**x, rule="delta", chunk_size=16)
    fast_o, _ = run_memory(**x, rule="delta", mode="chunk", chunk_size=16)
    assert torch.isnan(minimal_o).any()
    assert_close(fast_o, ref_o, torch.float64)
