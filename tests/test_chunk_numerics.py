"""The chunked form at every gate strength real models use: values, gradients, causality, finiteness.

Gates are drawn from the one recipe of strengths (``lineage.inputs.GATE_STRENGTHS``, the benchmark's rows too):
logsigmoid(N(0, 1)) / n for n ∈ {16, 4, 1, 0.25} (mean log-decay per step from about −0.05 to about −3.2) and 5%
wiped positions (g = −inf); per-channel gates also with 5% of single channels wiped
(``lineage.inputs.CHANNEL_WIPES``); beyond the recipe, g = 0 exactly and log-decays down to −1e4 per step. Each case
runs every length in LENGTHS and every chunk size in CHUNK_SIZES against the reference loop, through both forms of
the chunked form's steps 2–5 (the ``steps`` fixture): compiled, where nothing records gradients
(``lineage.ops.native.chunk_steps``), and the Python steps; a test of the Python steps' own parts is marked
``python_steps`` and runs through them only.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

import lineage.ops.recurrence as recurrence
from lineage.inputs import CHANNEL_WIPES, GATE_STRENGTHS, GateDraw, draw_inputs
from lineage.mechanisms import linear_mechanisms
from lineage.ops.recurrence import chunk_memory, parallel_memory, recurrent_memory, unit_lower_inverse
from tests.util import CELLS, DTYPE_NAME, assert_close


def pytest_generate_tests(metafunc):
    forms = ["python"] if metafunc.definition.get_closest_marker("python_steps") else ["compiled", "python"]
    metafunc.parametrize("steps", forms, indirect=True)


@pytest.fixture(autouse=True)
def steps(request, monkeypatch):
    """Steps 2–5 compiled (recurrence.NATIVE_CHUNKS, the default) or in Python, for every test of this module."""
    monkeypatch.setattr(recurrence, "NATIVE_CHUNKS", request.param == "compiled")
    return request.param


LENGTHS = (1, 15, 63, 64, 65, 300)
CHUNK_SIZES = (1, 3, 16, 64, None)  # None: one chunk as long as the sequence


def strength_name(d: GateDraw) -> str:
    """A short test id for a draw: n16, n0.25, n1-5%wipes, n1-5%channel-wipes."""
    wipes = "" if not d.wipe_fraction else f"-{d.wipe_fraction:.0%}{'channel-' if d.wipe_channels else ''}wipes"
    return f"n{d.normaliser:g}{wipes}"


DRAWS = {strength_name(d): d for d in (*GATE_STRENGTHS, CHANNEL_WIPES)}
GATE_STRENGTH_NAMES = (*DRAWS, "zero", "down_to_-1e4")


def draw_gate(shape, strength: str, gen: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    """A log-gate of the given strength (see the module docstring), drawn in fp64 and cast."""
    if strength in DRAWS:
        g = DRAWS[strength].draw(tuple(shape), gen, torch.float64)
    elif strength == "zero":
        g = torch.zeros(*shape, dtype=torch.float64)
    else:  # anything from no decay to −1e4 per step, log-uniform in magnitude
        g = -(10.0 ** (torch.rand(*shape, generator=gen, dtype=torch.float64) * 8 - 4))
    return g.to(dtype)


def inputs(rule, gate, strength, T, *, B=1, H=2, K=6, V=5, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    q, k, v = randn(B, H, T, K), randn(B, H, T, K), randn(B, H, T, V)
    if rule == "delta":
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    g_shape = {"none": None, "scalar": (B, H, T), "channel": (B, H, T, K)}[gate]
    g = None if g_shape is None else draw_gate(g_shape, strength, gen)
    beta = torch.rand(B, H, T, generator=gen, dtype=torch.float64) if rule == "delta" else None
    S0 = 0.5 * randn(B, H, K, V)
    x = {"q": q, "k": k, "v": v, "g": g, "beta": beta, "initial_state": S0}
    return {name: None if t is None else t.to(dtype) for name, t in x.items()}


def forward(x, *, rule, mode, chunk_size=64):
    args = (x["q"], x["k"], x["v"], x["g"], x["beta"])
    kw = {"rule": rule, "initial_state": x["initial_state"], "output_final_state": True}
    if mode == "recurrent":
        return recurrent_memory(*args, **kw)
    if mode == "parallel":
        return parallel_memory(*args, **kw)
    return chunk_memory(*args, chunk_size=chunk_size, **kw)


def case_id(rule, gate, strength, dtype=None):
    return "-".join([rule, gate] + ([strength] if gate != "none" else []) + ([DTYPE_NAME[dtype]] if dtype else []))


STRENGTH_CASES = [
    (rule, gate, strength)
    for (rule, gate), strength in itertools.product(CELLS, GATE_STRENGTH_NAMES)
    if (gate != "none" or strength == "n16")  # an ungated cell has no strength to sweep
    and (gate == "channel" or not (strength in DRAWS and DRAWS[strength].wipe_channels))  # a channel needs channels
]


@pytest.mark.parametrize(
    "rule, gate, strength, dtype",
    [
        pytest.param(*case, dtype, id=case_id(*case, dtype))
        for case, dtype in itertools.product(STRENGTH_CASES, (torch.float64, torch.float32))
    ],
)
def test_chunk_and_parallel_equal_the_reference_at_every_strength_length_and_chunk_size(rule, gate, strength, dtype):
    for T in LENGTHS:
        x = inputs(rule, gate, strength, T, dtype=dtype, seed=T)
        o_ref, S_ref = forward(x, rule=rule, mode="recurrent")
        results = {f"chunk C={C or T}": forward(x, rule=rule, mode="chunk", chunk_size=C or T) for C in CHUNK_SIZES}
        results["parallel"] = forward(x, rule=rule, mode="parallel")
        for name, (o, S) in results.items():
            assert torch.isfinite(o).all() and torch.isfinite(S).all(), f"T={T} {name}: not finite"
            assert_close(o, o_ref, what=f"T={T} {name} output")
            assert_close(S, S_ref, what=f"T={T} {name} final state")


def gradients(x, *, rule, mode, chunk_size=None, seed=1):
    """d loss / d every input that can carry a gradient, for loss = Σ o ⊙ w_o + Σ S_T ⊙ w_S with seeded weights."""
    leaves = {name: t.clone().requires_grad_(True) for name, t in x.items() if t is not None}
    o, S = forward({**x, **leaves}, rule=rule, mode=mode, chunk_size=chunk_size)
    gen = torch.Generator().manual_seed(seed)
    w_o, w_S = torch.randn(o.shape, generator=gen, dtype=o.dtype), torch.randn(S.shape, generator=gen, dtype=S.dtype)
    return dict(zip(leaves, torch.autograd.grad((o * w_o).sum() + (S * w_S).sum(), list(leaves.values())), strict=True))


@pytest.mark.parametrize("rule, gate, strength", [pytest.param(*case, id=case_id(*case)) for case in STRENGTH_CASES])
def test_chunk_gradients_equal_the_reference_at_every_strength(rule, gate, strength):
    # every input that can carry a gradient, g and β and the initial state included; fp64
    for T in LENGTHS:
        x = inputs(rule, gate, strength, T, K=4, V=3, seed=T)
        reference = gradients(x, rule=rule, mode="recurrent")
        for C in CHUNK_SIZES:
            for name, got in gradients(x, rule=rule, mode="chunk", chunk_size=C or T).items():
                assert torch.isfinite(got).all(), f"T={T} C={C or T}: d/d{name} is not finite"
                assert_close(got, reference[name], what=f"T={T} C={C or T}: d loss / d {name}")


@pytest.mark.parametrize("rule, gate, strength", [pytest.param(*case, id=case_id(*case)) for case in STRENGTH_CASES])
def test_future_inputs_change_no_past_output(rule, gate, strength):
    # fp32, where rounding could carry a future gate into a past output (the bug class of fla issue #1240: an
    # anchor after the query). Outputs up to t must be bitwise unchanged when anything after t changes: queries and
    # values by a factor of 1000, keys (unit keys for the delta rule, whose writes must stay contractions), gates
    # of another strength, β flipped to 1 − β.
    T, t = 200, 100
    x = inputs(rule, gate, strength, T, K=16, V=8, dtype=torch.float32)
    other = inputs(rule, gate, "n0.25" if strength != "n0.25" else "n16", T, K=16, V=8, dtype=torch.float32, seed=9)
    later = {"q": 1e3 * other["q"], "k": other["k"], "v": 1e3 * other["v"], "g": other["g"]}
    later["beta"] = None if x["beta"] is None else 1 - x["beta"]
    for C in (16, 64, T):
        o, _ = forward(x, rule=rule, mode="chunk", chunk_size=C)
        assert torch.isfinite(o).all()
        for name in ("q", "k", "v", "g", "beta"):
            if x[name] is None:
                continue
            future = dict(x)
            future[name] = torch.cat([x[name][:, :, : t + 1], later[name][:, :, t + 1 :]], dim=2)
            o_future, _ = forward(future, rule=rule, mode="chunk", chunk_size=C)
            assert torch.isfinite(o_future).all(), f"C={C}: changing {name} after t made outputs non-finite"
            assert torch.equal(o_future[:, :, : t + 1], o[:, :, : t + 1]), (
                f"C={C}: changing {name} after step {t} changed outputs at steps ≤ {t} by up to "
                f"{(o_future[:, :, : t + 1] - o[:, :, : t + 1]).abs().max().item():.3e}"
            )


@pytest.mark.parametrize("stage_pair", [("scalar", "delta"), ("scalar", "additive"), ("channel", "delta")])
def test_a_zero_gate_equals_the_ungated_cell(stage_pair):
    # Gated DeltaNet with g = 0 is DeltaNet; Mamba-2 with g = 0 is linear attention's (unnormalised) recurrence;
    # KDA with g = 0 is DeltaNet. (Equal to rounding: the ungated hand-off sums its chunks in another order.)
    gate, rule = stage_pair
    x = inputs(rule, gate, "zero", 130, dtype=torch.float32)
    o_gated, S_gated = forward(x, rule=rule, mode="chunk")
    o_plain, S_plain = forward({**x, "g": None}, rule=rule, mode="chunk")
    assert_close(o_gated, o_plain, what=f"{gate} gate g = 0 vs no gate, {rule} rule")
    assert_close(S_gated, S_plain, what=f"{gate} gate g = 0 vs no gate, {rule} rule, final state")


@pytest.mark.parametrize("n", [1, 5, 16, 17, 64, 100])
def test_unit_lower_inverse_is_the_inverse(n):
    gen = torch.Generator().manual_seed(n)
    # entries of the size β·kᵢ·kⱼ takes for unit keys; the diagonal and upper part are noise that must be ignored
    L = torch.randn(3, n, n, generator=gen, dtype=torch.float64) / n**0.5
    inverse = unit_lower_inverse(L)
    unit = torch.eye(n, dtype=torch.float64) + L.tril(-1)
    assert_close(inverse @ unit, torch.eye(n, dtype=torch.float64).expand(3, n, n), what="inverse · matrix")
    assert torch.equal(inverse.triu(1), torch.zeros_like(inverse)), "the inverse is not lower triangular"


@pytest.mark.python_steps
@pytest.mark.parametrize("slab", [1, 3, 1000])
@pytest.mark.parametrize("rule, gate", [("delta", "channel"), ("additive", "scalar"), ("additive", "none")])
def test_slab_size_changes_nothing_but_speed(slab, rule, gate, monkeypatch):
    # Spans of 1, 2 (3 // H) or all 19 chunks carry the state from span to span. The same products run in batches of
    # another size, which BLAS may round differently in the last bit: equal to fp32 rounding, not bitwise.
    x = inputs(rule, gate, "n1", 300, dtype=torch.float32)
    o, S = forward(x, rule=rule, mode="chunk", chunk_size=16)
    monkeypatch.setattr(recurrence, "CPU_SLAB", slab)
    o_slab, S_slab = forward(x, rule=rule, mode="chunk", chunk_size=16)
    assert_close(o_slab, o, tol=1e-6, what="output")
    assert_close(S_slab, S, tol=1e-6, what="final state")


@pytest.mark.python_steps
def test_many_heads_take_one_span_while_autograd_records_and_spans_of_one_chunk_otherwise(monkeypatch):
    cpu = torch.device("cpu")
    slab = recurrence.CPU_SLAB * torch.get_num_threads()
    assert recurrence.span_chunks(cpu, 9, slab + 1, recording=True) == 9  # a training batch: one span
    assert recurrence.span_chunks(cpu, 9, slab + 1, recording=False) == 1  # inference: bounded temporaries
    assert recurrence.span_chunks(cpu, 9, 1, recording=True) == slab  # few heads: the slab, recording or not
    assert recurrence.span_chunks(torch.device("cuda"), 9, slab + 1) == 9
    seen = []
    real = recurrence.span_chunks
    monkeypatch.setattr(recurrence, "span_chunks", lambda *a: seen.append(a[-1]) or real(*a))
    monkeypatch.setattr(recurrence, "CPU_SLAB", 1)  # 2 heads are past a slab of 1 chunk a thread
    x = inputs("delta", "channel", "n1", 50, dtype=torch.float32)
    leaves = {n: t.clone().requires_grad_() for n, t in x.items() if t is not None}
    with torch.no_grad():
        o_spans, S_spans = forward(leaves, rule="delta", mode="chunk", chunk_size=8)  # spans of one chunk
    o, S = forward(leaves, rule="delta", mode="chunk", chunk_size=8)  # recording: one span of all 7 chunks
    assert seen == [False, True]
    assert_close(o, o_spans, tol=1e-6, what="output")
    assert_close(S, S_spans, tol=1e-6, what="final state")
    gen = torch.Generator().manual_seed(4)
    go, gS = torch.randn(o.shape, generator=gen), torch.randn(S.shape, generator=gen)
    grads = torch.autograd.grad((o * go).sum() + (S * gS).sum(), list(leaves.values()))
    ref = {n: t.detach().double().requires_grad_() for n, t in x.items() if t is not None}
    o_ref, S_ref = forward(ref, rule="delta", mode="recurrent")
    want = torch.autograd.grad((o_ref * go.double()).sum() + (S_ref * gS.double()).sum(), list(ref.values()))
    for name, a, b in zip(leaves, grads, want, strict=True):
        assert_close(a.double(), b, tol=1e-5, what=f"∂{name}")


@pytest.mark.parametrize("rule, gate", [("delta", "channel"), ("additive", "scalar")])
def test_the_default_chunk_size_is_the_devices(rule, gate):
    assert recurrence.default_chunk_size("cpu") == 32 and recurrence.default_chunk_size(torch.device("cuda")) == 64
    x = inputs(rule, gate, "n1", 100, dtype=torch.float32)
    o, S = forward(x, rule=rule, mode="chunk", chunk_size=32)
    o_default, S_default = chunk_memory(
        x["q"], x["k"], x["v"], x["g"], x["beta"], rule=rule, initial_state=x["initial_state"], output_final_state=True
    )
    assert torch.equal(o_default, o) and torch.equal(S_default, S)


def subnormal_share(x: torch.Tensor) -> float:
    """The share of x's entries that are subnormal: non-zero and below the dtype's smallest normal number."""
    return ((x != 0) & (x.abs() < torch.finfo(x.dtype).tiny)).double().mean().item()


@pytest.mark.python_steps
@pytest.mark.parametrize("gate", ["scalar", "channel"])
def test_fast_forgetting_gates_leave_no_subnormal_decay_in_the_chunked_form(gate, monkeypatch):
    # At n = 0.25 (α ≈ 0.04 a step) the decays across a chunk of 32 reach e^-100, below fp32's smallest normal
    # number: the strong-gate knob flushes them to 0, so no decay or decayed product is subnormal (the CPU's slow path)
    x = inputs("delta", gate, "n0.25", 256, K=16, V=8, dtype=torch.float32)
    seen = []
    real = recurrence.decayed_products

    def spy(*args):
        decay, products = real(*args)
        seen.extend([decay.from_start, decay.to_end, decay.chunk, *products])
        return decay, products

    monkeypatch.setattr(recurrence, "decayed_products", spy)
    forward(x, rule="delta", mode="chunk", chunk_size=32)
    assert seen and max(map(subnormal_share, seen)) == 0.0
    seen.clear()
    monkeypatch.setattr(recurrence, "FLUSH_DECAYS", False)  # the knob off: the same run has them, so the test can fail
    forward(x, rule="delta", mode="chunk", chunk_size=32)
    assert max(map(subnormal_share, seen)) > 0.01


@pytest.mark.python_steps
@pytest.mark.parametrize("gate", ["scalar", "channel"])
def test_fast_forgetting_gates_leave_no_subnormal_in_the_delta_rules_transform(gate, monkeypatch):
    # The WY/UT transform's inverse multiplies decays along chains of keys (entry i, j sums products over every path
    # j → … → i), so kept decays of ∛tiny or more still compound below fp32's smallest normal number; the knob sets
    # the inverse's entries below the cut to 0 at every block, and U, W = T_ut (V, K ⊙ e^G) stay normal with them.
    # (Left in, they made Gated DeltaNet's chunked form 3× slower at n = 0.25 on an Intel Xeon, its slowest strength.)
    x = inputs("delta", gate, "n0.25", 512, K=32, V=16, dtype=torch.float32)
    seen = []
    real_inverse, real_transform = recurrence.unit_lower_inverse, recurrence.ut_transform

    def inverse_spy(M):
        out = real_inverse(M)
        seen.append(out)
        return out

    def transform_spy(*args):
        U, W = real_transform(*args)
        seen.extend([U, W])
        return U, W

    monkeypatch.setattr(recurrence, "unit_lower_inverse", inverse_spy)
    monkeypatch.setattr(recurrence, "ut_transform", transform_spy)
    forward(x, rule="delta", mode="chunk", chunk_size=32)
    assert len(seen) > 2 and max(map(subnormal_share, seen)) == 0.0
    seen.clear()
    monkeypatch.setattr(recurrence, "FLUSH_DECAYS", False)  # the knob off: the same run has them, so the test can fail
    forward(x, rule="delta", mode="chunk", chunk_size=32)
    assert max(map(subnormal_share, seen)) > 0.0


@pytest.mark.parametrize("rule, gate", [("delta", "scalar"), ("delta", "channel"), ("additive", "channel")])
@pytest.mark.parametrize("strength", ["n0.25", "n1-5%wipes"])
def test_the_flush_changes_outputs_only_by_rounding(rule, gate, strength, monkeypatch):
    x = inputs(rule, gate, strength, 300, K=16, V=8, dtype=torch.float32)
    o, S = forward(x, rule=rule, mode="chunk", chunk_size=32)
    monkeypatch.setattr(recurrence, "FLUSH_DECAYS", False)
    o_raw, S_raw = forward(x, rule=rule, mode="chunk", chunk_size=32)
    assert_close(o, o_raw, tol=1e-6, what="output, flushed vs not")
    assert_close(S, S_raw, tol=1e-6, what="final state, flushed vs not")


SCALAR_STRENGTHS = [name for name in GATE_STRENGTH_NAMES if name not in DRAWS or not DRAWS[name].wipe_channels]


@pytest.mark.parametrize("strength", SCALAR_STRENGTHS)
def test_the_two_decay_schemes_agree_on_a_scalar_gate(strength):
    # A scalar gate repeated on every channel is a per-channel gate: the segment sums and the anchored products must
    # give the same decays and products for it, wipes included (C = 32: five levels of anchors; C = 7 pads the chunk)
    gen = torch.Generator().manual_seed(3)
    for C in (32, 7):
        q, k = (torch.randn(40, C, 6, generator=gen, dtype=torch.float64) for _ in range(2))
        g = draw_gate((1, 40, C), strength, gen)[0, :, :, None]  # [Z, C, 1]
        by_sums = recurrence.segment_sum_products(k, g, q, k)
        by_anchors = recurrence.anchored_products(k, g.expand(-1, -1, 6), q, k)
        for name in ("from_start", "to_end", "chunk"):
            a, b = getattr(by_sums[0], name), getattr(by_anchors[0], name)
            torch.testing.assert_close(a.expand_as(b), b, rtol=1e-12, atol=1e-300, msg=f"{name} at C={C}")
        for a, b in zip(by_sums[1], by_anchors[1], strict=True):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14, msg=f"products at C={C}")


@pytest.mark.python_steps
@pytest.mark.parametrize("m", [m for m in linear_mechanisms() if m.chunk_decays is not None], ids=lambda m: m.key)
def test_each_gated_mechanism_runs_the_decay_scheme_its_table_entry_names(m, monkeypatch):
    called = []
    for name in ("segment_sum_products", "anchored_products"):
        real = getattr(recurrence, name)

        def spy(*args, _real=real, _name=name):
            called.append(_name)
            return _real(*args)

        monkeypatch.setattr(recurrence, name, spy)
    sizes = {"B": 1, "H": 2, "T": 40, "K": 8, "V": 8}
    x = draw_inputs(m.op_contract, sizes, torch.Generator().manual_seed(0))
    m.call(**x, chunk_size=16)
    assert called and set(called) == {m.chunk_decays.__name__}, (m.key, called)


@pytest.mark.parametrize("strength", ["n1", "n0.25", "n1-5%channel-wipes"])
def test_anchored_products_are_the_same_with_and_without_autograd(strength, monkeypatch):
    # without autograd the level factors are updated in place; with it, on copies (the backward keeps them): one answer
    # (the Python form both times: a CPU without autograd runs the compiled loop, which tests/test_native.py checks)
    monkeypatch.setattr(recurrence, "NATIVE_ANCHORS", False)
    gen = torch.Generator().manual_seed(5)
    q, k = (torch.randn(24, 32, 6, generator=gen, dtype=torch.float64) for _ in range(2))
    g = draw_gate((1, 24, 32, 6), strength, gen)[0]
    with torch.no_grad():
        plain = recurrence.anchored_products(k, g, q, k)
    tracked = recurrence.anchored_products(k.requires_grad_(), g, q, k)
    assert all(t.grad_fn is not None for t in tracked[1])
    for a, b in zip(
        (*plain[1], plain[0].from_start, plain[0].to_end),
        (*tracked[1], tracked[0].from_start, tracked[0].to_end),
        strict=True,
    ):
        assert torch.equal(a, b.detach())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_decay_factors_are_the_flushed_exponential_at_every_log_decay(dtype):
    # raising g to just below the cut's log before exp (off exp's slow underflow path) changes no factor
    g = torch.cat([-torch.logspace(-6, 4, 2001, dtype=torch.float64), torch.tensor([0.0, -float("inf")])]).to(dtype)
    assert torch.equal(recurrence.decay_factors(g), recurrence.flush_decays(torch.exp(g)))
    assert recurrence.decay_factors(g)[-1] == 0 and recurrence.decay_factors(g)[-2] == 1
    g = g.clone().requires_grad_()
    recurrence.decay_factors(g).sum().backward()
    expected = torch.where(recurrence.flush_decays(torch.exp(g.detach())) > 0, torch.exp(g.detach()), 0.0)
    assert torch.equal(g.grad, expected)  # the gradient of e^g where kept, 0 where flushed


def test_the_kept_masks_made_in_an_inference_run_still_serve_autograd():
    # the segment sums' 0/1 masks are kept once per size: a page's inference run may make them first, and a training
    # step's backward must still be able to save them (an inference tensor cannot be saved for backward)
    recurrence._lower_ones.cache_clear()
    gen = torch.Generator().manual_seed(9)
    k = torch.randn(3, 12, 4, generator=gen, dtype=torch.float64)
    g = -torch.rand(3, 12, 1, generator=gen, dtype=torch.float64)
    with torch.inference_mode():
        _, (plain,) = recurrence.segment_sum_products(k, g, k)
    g.requires_grad_()
    _, (tracked,) = recurrence.segment_sum_products(k, g, k)
    tracked.sum().backward()
    assert torch.equal(plain, tracked.detach()) and g.grad is not None and g.grad.abs().sum() > 0
