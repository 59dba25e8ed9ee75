"""The chunked form's steps 2–5 compiled (lineage.ops.native.chunk_steps, chunk_steps.cpp) against the Python steps
they speed up and against the recurrence: every gate kind and write rule (Gated DeltaNet-2's gates too), every gate
strength of the benchmark's recipe (lineage.inputs) and per-channel wipes, fp32 and fp64, chunk lengths that do and
do not divide T, head sizes that are and are not whole vectors; no causality leak; the same bits however the heads
are split over threads; its exponential against torch's; and every case that must take the Python steps instead."""

from __future__ import annotations

import multiprocessing
import os

import pytest
import torch
import torch.nn.functional as F

from lineage.inputs import CHANNEL_WIPES, GATE_STRENGTHS, GateDraw
from lineage.ops import native, recurrence
from lineage.ops.gated_deltanet2 import gated_deltanet2
from lineage.ops.kda import kda
from tests.util import threads_that_ran_compiled

STRENGTHS = {draw.label: draw for draw in GATE_STRENGTHS}
PER_CHANNEL_STRENGTHS = {draw.label: draw for draw in (*GATE_STRENGTHS, CHANNEL_WIPES)}
# (T, K, V, C): the benchmark's head size with T not a multiple of C; head sizes that are no whole number of vectors
# (the scalar tails of every product); a chunk length that is not a power of two (the anchors pad it); C of 7
SHAPES = [(83, 64, 64, 32), (100, 8, 6, 16), (50, 32, 48, 20), (45, 16, 16, 7)]
# against the Python steps (sums in another order): a few units of rounding; against the recurrence: verify's 1e-10
# in fp64 and the relative RMS of 1e-4 in fp32
TO_PYTHON = {torch.float32: 2e-6, torch.float64: 1e-13}
TO_RECURRENCE = {torch.float32: 1e-4, torch.float64: 1e-10}


@pytest.fixture(scope="module", autouse=True)
def compiled():
    """Every test here needs the library; a machine that cannot build it fails, it does not skip."""
    native.reset()
    state = native.status()
    assert state.available, f"the compiled steps are not available: {state.detail}"
    yield
    native.reset()


@pytest.fixture
def counted(monkeypatch):
    """How many times the compiled steps ran."""
    calls = []
    real = native.chunk_steps
    monkeypatch.setattr(native, "chunk_steps", lambda *a: calls.append(1) or real(*a))
    return calls


def inputs(T, K, V, gate: str, draw: GateDraw | None, dtype, rule: str, seed=0, B=2, H=2):
    gen = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, H, T, K, generator=gen, dtype=torch.float64), dim=-1)
    k = F.normalize(torch.randn(B, H, T, K, generator=gen, dtype=torch.float64), dim=-1)
    v = torch.randn(B, H, T, V, generator=gen, dtype=torch.float64)
    beta = torch.rand(B, H, T, generator=gen, dtype=torch.float64) if rule == "delta" else None
    S0 = torch.randn(B, H, K, V, generator=gen, dtype=torch.float64)
    g = None if gate == "none" else draw.draw((B, H, T) if gate == "scalar" else (B, H, T, K), gen, torch.float64)
    cast = [None if x is None else x.to(dtype) for x in (q, k, v, g, beta, S0)]
    return cast


def run(q, k, v, g, beta, S0, rule, C, **kw):
    per_channel = None if g is None else g.dim() == 4
    with torch.no_grad():
        return recurrence.chunk_memory(
            q,
            k,
            v,
            g,
            beta,
            rule=rule,
            initial_state=S0,
            output_final_state=True,
            chunk_size=C,
            per_channel=per_channel,
            **kw,
        )


def python_steps(*args, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(recurrence, "NATIVE_CHUNKS", False)
        return run(*args)


def relative_rms(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def cases():
    for gate, strengths in (("none", {"none": None}), ("scalar", STRENGTHS), ("channel", PER_CHANNEL_STRENGTHS)):
        for label, draw in strengths.items():
            yield pytest.param(gate, draw, id=f"{gate}-{label}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("rule", ["additive", "delta"])
@pytest.mark.parametrize(("gate", "draw"), list(cases()))
@pytest.mark.parametrize(("T", "K", "V", "C"), SHAPES, ids=lambda x: str(x))
def test_the_compiled_steps_are_the_python_steps_and_the_recurrence(
    T, K, V, C, gate, draw, rule, dtype, counted, monkeypatch
):
    q, k, v, g, beta, S0 = inputs(T, K, V, gate, draw, dtype, rule)
    o, S = run(q, k, v, g, beta, S0, rule, C)
    assert counted, "the compiled steps did not run"
    assert o.shape == v.shape and o.dtype == dtype and S.shape == S0.shape
    assert torch.isfinite(o).all() and torch.isfinite(S).all()
    o_py, S_py = python_steps(q, k, v, g, beta, S0, rule, C, monkeypatch=monkeypatch)
    assert relative_rms(o, o_py) <= TO_PYTHON[dtype] and relative_rms(S, S_py) <= TO_PYTHON[dtype]
    with torch.no_grad():
        o_ref, S_ref = recurrence.recurrent_memory(
            q,
            k,
            v,
            g,
            beta,
            rule=rule,
            initial_state=S0,
            output_final_state=True,
            per_channel=None if g is None else g.dim() == 4,
        )
    if dtype == torch.float64:
        assert torch.allclose(o, o_ref, rtol=0, atol=TO_RECURRENCE[dtype])
        assert torch.allclose(S, S_ref, rtol=0, atol=TO_RECURRENCE[dtype])
    else:
        assert relative_rms(o, o_ref) <= TO_RECURRENCE[dtype] and relative_rms(S, S_ref) <= TO_RECURRENCE[dtype]


@pytest.mark.parametrize("rule", ["additive", "delta"])
@pytest.mark.parametrize(("gate", "draw"), list(cases()))
def test_no_output_depends_on_a_later_step(gate, draw, rule, counted):
    # change every input after step t (keys, values, gates, write strengths): no output up to t moves by a single bit
    T, K, V, C, t = 96, 32, 16, 32, 40  # t inside the second chunk
    q, k, v, g, beta, S0 = inputs(T, K, V, gate, draw, torch.float32, rule, seed=1)
    before = run(q, k, v, g, beta, S0, rule, C)[0]
    gen = torch.Generator().manual_seed(2)
    later = [None if x is None else x.clone() for x in (q, k, v, g, beta)]
    for x in later:
        if x is not None:
            x[:, :, t + 1 :] = torch.rand(x[:, :, t + 1 :].shape, generator=gen) * (-3.0 if x is later[3] else 1.0)
    after = run(*later, S0, rule, C)[0]
    assert len(counted) == 2
    assert torch.equal(before[:, :, : t + 1], after[:, :, : t + 1])
    assert not torch.equal(before[:, :, t + 1 :], after[:, :, t + 1 :])


def test_a_wipe_erases_the_state_for_every_later_step(counted):
    # g = −∞ at step s of every head: the state entering s + 1 is exactly what step s writes alone
    T, K, V, C, s = 70, 16, 16, 16, 37
    q, k, v, g, beta, S0 = inputs(T, K, V, "channel", GATE_STRENGTHS[2], torch.float64, "delta", seed=4)
    g[:, :, s] = -float("inf")
    o, S = run(q, k, v, g, beta, S0, "delta", C)
    # the same run from step s with a zero state: the wipe left nothing from before it
    tail = [x[:, :, s:] for x in (q, k, v, g, beta)]
    o_tail, S_tail = run(*tail, torch.zeros_like(S0), "delta", C)
    assert counted
    assert torch.allclose(o[:, :, s:], o_tail, rtol=0, atol=1e-12) and torch.allclose(S, S_tail, rtol=0, atol=1e-12)


@pytest.mark.parametrize("gate", ["scalar", "channel"])
def test_splitting_the_heads_across_threads_changes_no_bit(gate, counted):
    q, k, v, g, beta, S0 = inputs(77, 64, 32, gate, GATE_STRENGTHS[3], torch.float32, "delta", seed=5, B=3, H=3)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = run(q, k, v, g, beta, S0, "delta", 32)
        torch.set_num_threads(2)
        assert native._workers(9) == 2
        two = run(q, k, v, g, beta, S0, "delta", 32)
    finally:
        torch.set_num_threads(before)
    assert len(counted) == 2
    assert torch.equal(one[0], two[0]) and torch.equal(one[1], two[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
def test_the_compiled_decay_factors_are_the_exponential_to_an_ulp(dtype):
    floor, cut = recurrence._log_floor(dtype), recurrence.flush_cut(dtype)
    spread = torch.linspace(1.2 * floor, 0.0, 50_021, dtype=torch.float64)  # 50,021: not a whole number of vectors
    edges = torch.tensor([-float("inf"), -0.0, 0.0, -1e-30, floor, floor + 1e-3, -1.0, -88.0], dtype=torch.float64)
    g = torch.cat([spread, edges]).to(dtype)
    alpha = native.decay_factors(g, floor, cut)
    exact = torch.exp(g.double().clamp_min(floor))
    ulp = torch.finfo(dtype).eps
    kept = exact > cut * (1 + 4 * ulp)
    assert ((alpha.double()[kept] - exact[kept]).abs() / exact[kept]).max() <= 1.5 * ulp
    assert (alpha[exact < cut * (1 - 4 * ulp)] == 0).all()  # under the strong-gate knob's cut: exactly 0
    assert alpha[-8] == 0 and alpha[-7] == 1 and alpha[-6] == 1  # −∞ wipes; −0 and 0 keep everything
    ref = recurrence.decay_factors(g)
    assert ((alpha - ref).abs() <= 2 * ulp * ref).all()


def _fails(*args):
    pytest.fail("the compiled steps ran")


@pytest.mark.parametrize(
    "case", ["gradients recorded", "NATIVE_CHUNKS off", "FLUSH_DECAYS off", "python_form asked for", "no library"]
)
def test_the_python_steps_run_where_the_compiled_ones_must_not(case, monkeypatch):
    q, k, v, g, beta, S0 = inputs(40, 16, 16, "channel", GATE_STRENGTHS[1], torch.float64, "delta", seed=6)
    expected, _ = python_steps(q, k, v, g, beta, S0, "delta", 16, monkeypatch=monkeypatch)
    monkeypatch.setattr(native, "chunk_steps", _fails)
    if case == "NATIVE_CHUNKS off":
        monkeypatch.setattr(recurrence, "NATIVE_CHUNKS", False)
    elif case == "FLUSH_DECAYS off":  # the compiled loop always flushes: the knob off is the Python steps' to honour
        monkeypatch.setattr(recurrence, "FLUSH_DECAYS", False)
    elif case == "no library":
        monkeypatch.setattr(native, "_library", lambda: None)
    if case == "gradients recorded":
        q = q.clone().requires_grad_()
        o, _ = recurrence.chunk_memory(q, k, v, g, beta, rule="delta", initial_state=S0, chunk_size=16)
        o.sum().backward()
        assert q.grad is not None and torch.isfinite(q.grad).all()
        o = o.detach()
    elif case == "python_form asked for":
        with native.python_form():
            o, _ = run(q, k, v, g, beta, S0, "delta", 16)
    else:
        o, _ = run(q, k, v, g, beta, S0, "delta", 16)
    assert torch.allclose(o, expected, rtol=0, atol=1e-12)


def test_the_python_steps_asked_for_in_one_thread_leave_the_others_compiled(monkeypatch):
    q, k, v, g, beta, S0 = inputs(40, 16, 16, "scalar", GATE_STRENGTHS[1], torch.float32, "delta", seed=7)
    ran = threads_that_ran_compiled(monkeypatch, "chunk_steps", lambda: run(q, k, v, g, beta, S0, "delta", 16))
    assert ran == ["other-session"]


def gated_deltanet2_inputs(T, K, V, gate: str, draw: GateDraw, dtype, seed=0, B=2, H=2):
    q, k, v, g, _, S0 = inputs(T, K, V, gate, draw, dtype, "additive", seed=seed, B=B, H=H)
    gen = torch.Generator().manual_seed(seed + 100)
    erase = torch.rand(B, H, T, K, generator=gen, dtype=torch.float64).to(dtype)
    write = torch.rand(B, H, T, V, generator=gen, dtype=torch.float64).to(dtype)
    return q, k, v, g, erase, write, S0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize(("gate", "draw"), [c for c in cases() if c.values[0] != "none"])
@pytest.mark.parametrize(("T", "K", "V", "C"), SHAPES, ids=lambda x: str(x))
def test_gated_deltanet2_through_the_compiled_steps_is_its_python_steps_and_its_loop(
    T, K, V, C, gate, draw, dtype, counted, monkeypatch
):
    # the erase gate on the key products' left rows and the write gate on the values, β moved inside (no diag(β))
    q, k, v, g, erase, write, S0 = gated_deltanet2_inputs(T, K, V, gate, draw, dtype)
    kw = {"initial_state": S0, "output_final_state": True}
    with torch.no_grad():
        o, S = gated_deltanet2(q, k, v, g, erase, write, chunk_size=C, **kw)
        assert counted, "the compiled steps did not run"
        with monkeypatch.context() as patch:
            patch.setattr(recurrence, "NATIVE_CHUNKS", False)
            o_py, S_py = gated_deltanet2(q, k, v, g, erase, write, chunk_size=C, **kw)
        o_ref, S_ref = gated_deltanet2(q, k, v, g, erase, write, mode="recurrent", **kw)
    assert torch.isfinite(o).all() and torch.isfinite(S).all()
    assert relative_rms(o, o_py) <= TO_PYTHON[dtype] and relative_rms(S, S_py) <= TO_PYTHON[dtype]
    if dtype == torch.float64:
        assert torch.allclose(o, o_ref, rtol=0, atol=TO_RECURRENCE[dtype])
        assert torch.allclose(S, S_ref, rtol=0, atol=TO_RECURRENCE[dtype])
    else:
        assert relative_rms(o, o_ref) <= TO_RECURRENCE[dtype] and relative_rms(S, S_ref) <= TO_RECURRENCE[dtype]


def test_gated_deltanet2_with_tied_gates_is_kda_through_the_compiled_steps(counted):
    # b = w = β·1 is KDA term by term: the two compiled paths (β outside, β inside) agree to rounding
    q, k, v, g, beta, S0 = inputs(83, 64, 32, "channel", GATE_STRENGTHS[3], torch.float64, "delta", seed=8)
    erase, write = beta[..., None].expand(*k.shape).contiguous(), beta[..., None].expand(*v.shape).contiguous()
    with torch.no_grad():
        o2, S2 = gated_deltanet2(q, k, v, g, erase, write, initial_state=S0, output_final_state=True)
        o1, S1 = kda(q, k, v, g, beta, initial_state=S0, output_final_state=True)
    assert len(counted) == 2
    assert torch.allclose(o1, o2, rtol=0, atol=1e-12) and torch.allclose(S1, S2, rtol=0, atol=1e-12)


def _step_inputs():
    gen = torch.Generator().manual_seed(9)
    return {
        "q": torch.randn(4, 3, 8, 16, generator=gen),
        "k": torch.randn(4, 3, 8, 16, generator=gen),
        "v": torch.randn(4, 3, 8, 12, generator=gen),
        "g": -torch.rand(4, 3, 8, 16, generator=gen),
        "beta": torch.rand(4, 3, 8, generator=gen),
        "S0": torch.zeros(4, 16, 12),
    }


def _steps(x, **gates):
    return native.chunk_steps(x["q"], x["k"], x["v"], x["g"], x["beta"], x["S0"], 0.25, -30.0, 1e-13, **gates)


@pytest.mark.parametrize(
    ("name", "wrong", "message"),
    [
        ("k", lambda x: x[:, :, :-1], r"k must be torch.float32 on cpu with shape \[4, 3, 8, 16\]"),
        ("v", lambda x: x.double(), r"v must be torch.float32 on cpu with shape \[4, 3, 8, 12\]"),
        ("g", lambda x: x[..., :5], r"g must be torch.float32 on cpu with shape \[4, 3, 8, 16\]"),
        ("beta", lambda x: x[:2], r"beta must be torch.float32 on cpu with shape \[4, 3, 8\]"),
        ("S0", lambda x: x.mT, r"S0 must be torch.float32 on cpu with shape \[4, 16, 12\]"),
    ],
)
def test_the_compiled_steps_refuse_shapes_they_would_misread(name, wrong, message):
    x = _step_inputs()
    assert torch.isfinite(_steps(x)[0]).all()  # the right shapes run
    x[name] = wrong(x[name])
    with pytest.raises(ValueError, match=message):
        _steps(x)


def test_the_compiled_steps_take_one_kind_of_write():
    x = _step_inputs()
    erase, write = torch.rand(4, 3, 8, 16), torch.rand(4, 3, 8, 12)
    for gates in ({"erase": erase, "write": write}, {"erase": erase}):  # beta and GDN-2's gates; an erase alone
        with pytest.raises(ValueError, match="give beta .the delta rule., or erase and write .Gated DeltaNet-2."):
            _steps(x, **gates)
    assert torch.isfinite(_steps({**x, "beta": None}, erase=erase, write=write)[0]).all()


def test_the_parts_run_alike_on_openmps_threads_and_on_a_pool(monkeypatch, tmp_path):
    # the library built with -fopenmp (the first flag set, where the compiler takes it) runs its parts on OpenMP's
    # threads; built without, on native's pool: the same heads, the same bits
    q, k, v, g, beta, S0 = inputs(50, 64, 32, "channel", GATE_STRENGTHS[2], torch.float32, "delta", seed=10, B=2, H=3)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        openmp = run(q, k, v, g, beta, S0, "delta", 16)
        assert bool(native._library().lineage_openmp()) == ("-fopenmp" in native.status().detail)
        monkeypatch.setattr(native, "FLAG_SETS", (native.FLAG_SETS[0][:2],))  # the same vectors, no -fopenmp
        monkeypatch.setenv(native.CACHE_ENV, str(tmp_path))
        native.reset()
        assert native.status().available and native._library().lineage_openmp() == 0
        pools = []
        real = native._pool
        monkeypatch.setattr(native, "_pool", lambda parts: pools.append(parts) or real(parts))
        pooled = run(q, k, v, g, beta, S0, "delta", 16)
    finally:
        torch.set_num_threads(before)
        native.reset()
    assert pools == [2]
    assert torch.equal(openmp[0], pooled[0]) and torch.equal(openmp[1], pooled[1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is a POSIX call")
def test_a_forked_process_runs_the_compiled_steps_on_threads_of_its_own():
    # a child forked from a parent that ran OpenMP regions has none of its threads, and would hang in its own first
    # region: it runs its parts on a pool of its own (native.IMPORTED_IN)
    q, k, v, g, beta, S0 = inputs(64, 32, 16, "scalar", GATE_STRENGTHS[1], torch.float32, "delta", seed=11)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        expected = run(q, k, v, g, beta, S0, "delta", 16)[0]  # the parent's threads now exist
        with multiprocessing.get_context("fork").Pool(1) as pool:
            result = pool.apply_async(_steps_in_child, (q, k, v, g, beta, S0)).get(timeout=60)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(result, expected)


def _steps_in_child(q, k, v, g, beta, S0):
    torch.set_num_threads(2)
    return run(q, k, v, g, beta, S0, "delta", 16)[0]
