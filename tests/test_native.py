"""The compiled per-channel products (lineage.ops.native, anchored_products.cpp) against the Python form they speed up:
the same products and decays to rounding at every gate strength, chunk length and head size; the chunked ops through
them against the recurrence; and the ways the library can be missing, each said and each falling back to Python."""

from __future__ import annotations

import multiprocessing
import os

import pytest
import torch
import torch.nn.functional as F

from lineage.inputs import CHANNEL_WIPES, GATE_STRENGTHS, GateDraw
from lineage.ops import native, recurrence
from lineage.ops.gla import gla
from lineage.ops.kda import kda
from tests.util import threads_that_ran_compiled

STRENGTHS = {draw.label: draw for draw in (*GATE_STRENGTHS, CHANNEL_WIPES)}
# rounding of a sum of K products of numbers near 1 (fp32's ε 1.2e-7, fp64's 2.2e-16), with room for K = 64
TOLERANCE = {torch.float32: 2e-6, torch.float64: 1e-14}


@pytest.fixture(scope="module", autouse=True)
def compiled():
    """Every test here needs the library; a machine that cannot build it fails, it does not skip (scripts/test.sh
    installs g++ where it can)."""
    native.reset()
    state = native.status()
    assert state.available, f"the compiled products are not available: {state.detail}"
    yield
    native.reset()


def chunk_inputs(Z, C, K, draw: GateDraw, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(Z, C, K, generator=gen, dtype=torch.float64)
    k = F.normalize(torch.randn(Z, C, K, generator=gen, dtype=torch.float64), dim=-1)
    g = draw.draw((1, Z, C, K), gen, torch.float64)[0]
    return q.to(dtype), k.to(dtype), g.to(dtype)


def python_form(k, g, *rows, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(recurrence, "NATIVE_ANCHORS", False)
        return recurrence.anchored_products(k, g, *rows)


def assert_same(compiled, python, dtype):
    """The decays bit for bit (the same products of factors in the same order, flushed alike), the products to
    rounding (their sums run in another order)."""
    (d1, products1), (d2, products2) = compiled, python
    for a, b in [(d1.from_start, d2.from_start), (d1.to_end, d2.to_end), (d1.chunk, d2.chunk)]:
        assert torch.equal(a, b)
    for a, b in zip(products1, products2, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert torch.isfinite(a).all()
        scale = b.abs().max().clamp_min(1.0)
        assert (a - b).abs().max() <= TOLERANCE[dtype] * scale, (a - b).abs().max()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("strength", list(STRENGTHS))
@pytest.mark.parametrize(("C", "K"), [(32, 64), (20, 64), (64, 32), (16, 6), (7, 16)])
@pytest.mark.parametrize("rows", [1, 2])
def test_the_compiled_products_are_the_python_forms(dtype, strength, C, K, rows, monkeypatch):
    q, k, g = chunk_inputs(12, C, K, STRENGTHS[strength], dtype)
    args = (q, k)[:rows]
    called = []
    with monkeypatch.context() as patch:
        real = native.anchored
        patch.setattr(native, "anchored", lambda *a: called.append(1) or real(*a))
        with torch.no_grad():
            fast = recurrence.anchored_products(k, g, *args)
    assert called, "the compiled loop did not run"
    assert_same(fast, python_form(k, g, *args, monkeypatch=monkeypatch), dtype)
    for A in fast[1]:
        assert torch.equal(A, A.tril()), "a product above the diagonal: a future key"
    cut = recurrence.flush_cut(dtype)
    for decay in (fast[0].from_start, fast[0].to_end):
        assert not ((decay > 0) & (decay <= cut)).any(), "a decay under the strong-gate knob's cut was kept"


def test_a_wipe_gives_exact_zeros_and_no_later_gate_reaches_an_earlier_pair(monkeypatch):
    q, k, g = chunk_inputs(4, 32, 64, GATE_STRENGTHS[2], torch.float32)
    g[:, 10] = -float("inf")  # every channel wiped at step 10 of every chunk
    with torch.no_grad():
        decay, (A_qk,) = recurrence.anchored_products(k, g, q)
        assert (decay.from_start[:, 10:] == 0).all() and (decay.to_end[:, :10] == 0).all()
        assert (A_qk[:, 10:, :10] == 0).all()  # nothing written before the wipe is read after it
        later = g.clone()
        later[:, 20:] = -5.0  # change only the gates after step 19
        _, (A_later,) = recurrence.anchored_products(k, later, q)
    assert torch.equal(A_qk[:, :20, :20], A_later[:, :20, :20])


def test_splitting_the_chunks_across_threads_changes_no_bit():
    q, k, g = chunk_inputs(37, 32, 64, GATE_STRENGTHS[3], torch.float32)
    alpha = recurrence.decay_factors(g)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = native.anchored(k, alpha, (q, k), recurrence.flush_cut(torch.float32))
        torch.set_num_threads(2)
        assert native._workers(37) == 2
        two = native.anchored(k, alpha, (q, k), recurrence.flush_cut(torch.float32))
    finally:
        torch.set_num_threads(before)
    for a, b in zip((*one[0], one[1], one[2]), (*two[0], two[1], two[2]), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("op", ["kda", "gla"])
@pytest.mark.parametrize("strength", ["logσ(x)/0.25", "logσ(x)/1 + 5% channel wipes", "logσ(x)/1 + 5% wipes"])
def test_the_chunked_ops_through_the_compiled_loop_are_the_recurrence(op, strength, monkeypatch):
    gen = torch.Generator().manual_seed(3)
    B, H, T, K, V = 1, 2, 83, 64, 16  # T not a multiple of the chunk
    q = F.normalize(torch.randn(B, H, T, K, generator=gen, dtype=torch.float64), dim=-1)
    k = F.normalize(torch.randn(B, H, T, K, generator=gen, dtype=torch.float64), dim=-1)
    v = torch.randn(B, H, T, V, generator=gen, dtype=torch.float64)
    g = STRENGTHS[strength].draw((B, H, T, K), gen, torch.float64)
    beta = torch.rand(B, H, T, generator=gen, dtype=torch.float64)
    S0 = torch.randn(B, H, K, V, generator=gen, dtype=torch.float64)
    run = {
        "kda": lambda mode: kda(q, k, v, g, beta, initial_state=S0, output_final_state=True, mode=mode),
        "gla": lambda mode: gla(q, k, v, g, initial_state=S0, output_final_state=True, mode=mode),
    }[op]
    called = []
    real = native.anchored
    monkeypatch.setattr(native, "anchored", lambda *a: called.append(1) or real(*a))
    monkeypatch.setattr(recurrence, "NATIVE_CHUNKS", False)  # the Python steps, with the compiled products in step 2
    with torch.no_grad():
        (o, S), (o_ref, S_ref) = run("chunk"), run("recurrent")
    assert called
    assert torch.allclose(o, o_ref, rtol=0, atol=1e-10) and torch.allclose(S, S_ref, rtol=0, atol=1e-10)


def test_gradients_take_the_python_form(monkeypatch):
    q, k, g = chunk_inputs(4, 32, 16, GATE_STRENGTHS[2], torch.float64)
    monkeypatch.setattr(native, "anchored", lambda *a: pytest.fail("the compiled loop ran while autograd recorded"))
    decay, (A,) = recurrence.anchored_products(k, g.requires_grad_(), q)
    (A.sum() + decay.from_start.sum()).backward()
    assert g.grad is not None and torch.isfinite(g.grad).all()


def test_a_missing_compiler_is_said_and_the_python_form_runs(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    native.reset()
    try:
        state = native.status()
        assert not state.available
        assert "CXX='no-such-compiler-xyz' is not a program on the PATH" in state.detail
        q, k, g = chunk_inputs(3, 16, 8, GATE_STRENGTHS[1], torch.float64)
        with torch.no_grad():
            out = recurrence.anchored_products(k, g, q, k)
        assert_same(out, python_form(k, g, q, k, monkeypatch=monkeypatch), torch.float64)
    finally:
        monkeypatch.delenv("CXX")
        native.reset()


def test_a_failed_build_is_said_with_the_compilers_error(monkeypatch, tmp_path):
    broken = tmp_path / "broken.cpp"
    broken.write_text("int main( {\n")
    monkeypatch.setattr(native, "SOURCE", broken)
    monkeypatch.setenv(native.CACHE_ENV, str(tmp_path / "cache"))
    native.reset()
    try:
        state = native.status()
        assert not state.available and state.detail.startswith("Python form: the C++ build failed (")
        assert "error" in state.detail
        assert list((tmp_path / "cache").iterdir()) == []  # no half-built library left behind
    finally:
        native.reset()


def test_a_flag_set_that_fails_at_link_time_falls_back_to_the_next(monkeypatch, tmp_path):
    # a compiler without an OpenMP runtime (clang without libomp) fails -fopenmp when it links, and the linker removes
    # the half-written output: the build goes on to the next flag set, without OpenMP
    real = native.find_compiler()
    fake = tmp_path / "cxx-without-openmp"
    fake.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = -fopenmp ] && out=1; done\n'
        'if [ -n "$out" ]; then while [ "$#" -gt 0 ]; do [ "$1" = -o ] && rm -f "$2"; shift; done; '
        'echo "ld: cannot find -lomp" >&2; exit 1; fi\n'
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    monkeypatch.setenv(native.CACHE_ENV, str(tmp_path / "cache"))
    native.reset()
    try:
        state = native.status()
        assert state.available and "-fopenmp" not in state.detail and "-O3" in state.detail
        assert native._library().lineage_openmp() == 0
        assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".so"]  # the library, no half-built file
    finally:
        native.reset()


def test_the_library_is_built_once_into_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(native.CACHE_ENV, str(tmp_path))
    native.reset()
    try:
        assert native.status().available
        built = list(tmp_path.iterdir())
        assert len(built) == 1 and built[0].name.startswith("lineage-native-") and built[0].suffix == ".so"
        stamp = built[0].stat().st_mtime_ns
        native.reset()
        assert native.status().available and "-O3" in native.status().detail
        assert list(tmp_path.iterdir()) == built and built[0].stat().st_mtime_ns == stamp  # found, not rebuilt
    finally:
        native.reset()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is a POSIX call")
def test_a_forked_process_runs_the_split_loop_with_threads_of_its_own():
    # the parent's pool has threads; a forked child must not hand its parts to that pool's (absent) threads
    q, k, g = chunk_inputs(8, 32, 64, GATE_STRENGTHS[1], torch.float32)
    alpha, cut = recurrence.decay_factors(g), recurrence.flush_cut(torch.float32)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        expected = native.anchored(k, alpha, (q,), cut)[0][0]  # the parent's pool now exists
        context = multiprocessing.get_context("fork")
        with context.Pool(1) as pool:
            result = pool.apply_async(_products_in_child, (k, alpha, q, cut)).get(timeout=60)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(result, expected)


def _products_in_child(k, alpha, q, cut):
    torch.set_num_threads(2)
    return native.anchored(k, alpha, (q,), cut)[0][0]


def test_the_python_form_asked_for_in_one_thread_leaves_the_others_compiled(monkeypatch):
    q, k, g = chunk_inputs(2, 16, 16, GATE_STRENGTHS[1], torch.float32)

    def products():
        with torch.no_grad():
            recurrence.anchored_products(k, g, q)

    assert threads_that_ran_compiled(monkeypatch, "anchored", products) == ["other-session"]
