"""The chunked form's compiled code (``chunk_steps.cpp``, which includes ``anchored_products.cpp``), built on first use.

:func:`lineage.ops.recurrence.chunk_memory` is the readable form, in the papers' steps, and the one autograd
differentiates. On a CPU, where nothing records gradients (the app's live runs, ``verify``, the benchmark,
evaluation), it hands its steps 2–5 to :func:`chunk_steps`: the same steps chunk by chunk, each head's chunks in one
C++ loop, with the products as register tiles of vectors and every chunk's matrices in the first-level cache. At the
sizes users run (chunks of 32 steps, head size 64) the Python steps spend most of their time starting a few dozen small
tensor operations per span of chunks and running a Python loop over the chunks, not multiplying. Measured with
``python -m lineage bench`` (B = 1, H = 4, T = 4,096, 1 thread of a 2-core Intel Xeon, g++ 12), back to back with
``--native python``: Gated DeltaNet 20.9-21.2 → 8.6 ms, KDA 36.0-36.8 → 10.5-10.6 ms, Mamba-2 11.9-13.6 → 4.9-5.1 ms,
GLA 22.4-23.1 → 6.4-6.6 ms, Gated DeltaNet-2 41.5-41.6 → 12.0-12.9 ms: 2.4-3.5x, the Python form's overhead, not
arithmetic (72-89% of the same run's batched matrix products, against 18-36%). Where the Python steps run without
autograd (``recurrence.NATIVE_CHUNKS`` off), their per-channel products (step 2) still come from here: :func:`anchored`,
the levels of ``recurrence.anchored_products``. The results agree with the Python forms to rounding;
``tests/test_chunk_steps.py`` and ``tests/test_native.py`` hold them to it.

The library is compiled once per source, compiler and CPU, with the C++ compiler named by ``CXX`` (else ``c++``,
``g++`` or ``clang++`` on the PATH), into ``LINEAGE_NATIVE_CACHE`` (else ``$XDG_CACHE_HOME/attention-lineage``, else
``~/.cache/attention-lineage``, else the temporary directory): about three seconds with g++ 12. With ``-fopenmp`` where
the compiler takes it, so that with several threads the compiled steps split the heads over OpenMP's threads, the ones
torch runs on (:func:`_workers`). Without a compiler, or when it fails, the Python forms run and :func:`status` says
why; nothing else changes.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch

from lineage.device import cpu_model

# one translation unit: chunk_steps.cpp includes anchored_products.cpp (both are hashed into the library's key)
SOURCE = Path(__file__).with_name("chunk_steps.cpp")
INCLUDED = (Path(__file__).with_name("anchored_products.cpp"),)
CACHE_ENV = "LINEAGE_NATIVE_CACHE"
# -march=native first (the vectors this CPU has); a compiler that refuses it (some Clang builds for ARM) gets the rest
# -fopenmp: chunk_steps runs its parts on OpenMP's threads (those torch runs on, where both load one libgomp)
FLAG_SETS = (("-O3", "-march=native", "-fopenmp"), ("-O3", "-march=native"), ("-O3", "-fopenmp"), ("-O3",))
COMMON_FLAGS = ("-std=c++17", "-shared", "-fPIC")
COMPILE_TIMEOUT_S = 120
_DTYPES = {  # the library's functions for each dtype (per-channel products, chunk steps, decays), and its scalar type
    torch.float32: ("anchored_products_f32", "chunk_steps_f32", "decay_factors_f32", ctypes.c_float),
    torch.float64: ("anchored_products_f64", "chunk_steps_f64", "decay_factors_f64", ctypes.c_double),
}


@dataclass(frozen=True)
class Status:
    """Whether the compiled loop is in use, and what a reader is told: the compiler and flags, or why not."""

    available: bool
    detail: str


# The process that imported this module: the only one whose OpenMP threads chunk_steps uses. OpenMP's threads do not
# survive a fork, and a forked child that enters a parallel region after its parent used OpenMP hangs there (libgomp's
# behaviour, torch's own work included at more than one thread): a forked child runs its parts on a pool of its own.
IMPORTED_IN = os.getpid()

# Set by python_form() for the current thread or task only: another session's runs keep the compiled loop
_forced_python = contextvars.ContextVar("lineage_native_python_form", default=False)


@functools.cache
def _pool(parts: int) -> ThreadPoolExecutor:
    """The threads that run the parts of a call split ``parts`` ways, made once per process and size."""
    return ThreadPoolExecutor(max_workers=parts, thread_name_prefix="lineage-native")


def _after_fork_in_child() -> None:
    """A forked process (a sweep's worker) has none of its parent's threads: a pool it inherited would take work and
    never run it. It makes its own; the loaded library stays valid."""
    _pool.cache_clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def find_compiler() -> str | None:
    """The C++ compiler: ``CXX`` if set (a name on the PATH or a path), else the first of c++, g++, clang++."""
    named = os.environ.get("CXX", "").strip()
    if named:
        return shutil.which(named)
    return next((found for name in ("c++", "g++", "clang++") if (found := shutil.which(name))), None)


def cache_dir() -> Path:
    """Where compiled libraries are kept (see the module's docstring); the first of the candidates that is writable."""
    named = os.environ.get(CACHE_ENV, "").strip()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    candidates = [Path(named)] if named else []
    candidates += [Path(xdg) / "attention-lineage"] if xdg else []
    candidates += [Path.home() / ".cache" / "attention-lineage", Path(tempfile.gettempdir()) / "attention-lineage"]
    for path in candidates:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK):
            return path
    raise OSError(f"no writable directory for the compiled library among {[str(p) for p in candidates]}")


def _compiler_version(compiler: str) -> str:
    run = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30, check=False)
    return (run.stdout.splitlines() or [Path(compiler).name])[0].strip()


def _build(compiler: str) -> tuple[Path, tuple[str, ...], str]:
    """Compile the source (or find it compiled): the library's path, the flags it was built with, the compiler's
    version line. Raises RuntimeError with the compiler's first error line when every flag set fails."""
    version, source = _compiler_version(compiler), b"\0".join(p.read_bytes() for p in (SOURCE, *INCLUDED))
    error = ""
    # keyed by the CPU too: a library built for one CPU's vectors must not run on another's
    cpu = f"{cpu_model()} {platform.machine()}"
    for flags in FLAG_SETS:
        key = hashlib.sha256(b"\0".join([source, version.encode(), " ".join(flags).encode(), cpu.encode()]))
        library = cache_dir() / f"lineage-native-{key.hexdigest()[:16]}.so"
        if library.exists():
            return library, flags, version
        # built under a name of its own, then moved into place: two processes building at once never load half a file
        fd, partial = tempfile.mkstemp(suffix=".so", dir=library.parent)
        os.close(fd)
        command = [compiler, *flags, *COMMON_FLAGS, str(SOURCE), "-o", partial]
        run = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
        if run.returncode == 0:
            os.replace(partial, library)
            return library, flags, version
        Path(partial).unlink(missing_ok=True)  # a linker that failed may have removed it already
        error = next((line for line in run.stderr.splitlines() if "error" in line), run.stderr.strip()[:200])
    raise RuntimeError(error or "the compiler failed without a message")


def _load() -> tuple[ctypes.CDLL | None, Status]:
    compiler = find_compiler()
    if compiler is None:
        named = os.environ.get("CXX", "").strip()
        why = f"CXX={named!r} is not a program on the PATH" if named else "no C++ compiler (c++, g++, clang++)"
        return None, Status(False, f"Python form: {why}; install g++ or clang++, or set CXX")
    try:
        path, flags, version = _build(compiler)
        lib = ctypes.CDLL(str(path))
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return None, Status(False, f"Python form: the C++ build failed ({exc})")
    pointer = ctypes.c_void_p
    lib.lineage_openmp.restype, lib.lineage_openmp.argtypes = ctypes.c_int, []
    for products, steps, decays, scalar in _DTYPES.values():
        fn = getattr(lib, products)
        fn.restype = None
        fn.argtypes = [pointer] * 4 + [ctypes.c_int64, ctypes.c_int, ctypes.c_int, scalar] + [pointer] * 4
        fn = getattr(lib, steps)
        fn.restype = None
        fn.argtypes = [pointer] * 8 + [ctypes.c_int64] * 3 + [ctypes.c_int] * 4 + [scalar] * 3 + [pointer] * 2
        fn.argtypes += [ctypes.c_int]
        fn = getattr(lib, decays)
        fn.restype = None
        fn.argtypes = [pointer, ctypes.c_int64, scalar, scalar, pointer]
    return lib, Status(True, f"compiled C++ ({version}, {' '.join(flags)})")


@functools.cache
def _loaded() -> tuple[ctypes.CDLL | None, Status]:
    """The library and its status, looked for once per process (:func:`reset` forgets them)."""
    return _load()


def _library() -> ctypes.CDLL | None:
    return _loaded()[0]


def status() -> Status:
    """Whether the compiled code (:func:`chunk_steps`, :func:`anchored`) runs in this process (building it if it has
    not been tried yet)."""
    return _loaded()[1]


def reset() -> None:
    """Forget the loaded library and its status, so the next call looks for a compiler again (for tests)."""
    _loaded.cache_clear()


@contextlib.contextmanager
def python_form() -> Iterator[None]:
    """Inside this block, in this thread or task only, the Python forms run where the compiled code would: for timing
    one against the other (``python -m lineage bench --native python``) without touching other sessions' runs."""
    token = _forced_python.set(True)
    try:
        yield
    finally:
        _forced_python.reset(token)


def forced_python() -> bool:
    """Whether :func:`python_form` is in force here."""
    return _forced_python.get()


def usable(k: torch.Tensor, rows: tuple[torch.Tensor, ...]) -> bool:
    """Whether :func:`anchored` can take these inputs: one or two rows, and what :func:`steps_usable` asks."""
    return len(rows) in (1, 2) and steps_usable(k)


def _workers(Z: int) -> int:
    """How many parts the work is split into (chunks for :func:`anchored`, heads for :func:`chunk_steps`): torch's
    intra-op threads (the compiled loop runs on one thread a call, and ctypes lets go of the GIL during it), at most
    one part per chunk or head. :func:`chunk_steps` runs its parts on OpenMP's threads where the library is built
    with ``-fopenmp`` (with torch's libgomp already loaded, the same threads torch runs on); elsewhere, and for
    :func:`anchored`, the parts run on a pool of threads of their own, beside torch's OpenMP threads, which spin a
    while after torch's own parallel work before they sleep. At 2 threads of a 2-core Intel Xeon, the compiled steps
    of Gated DeltaNet (T = 4,096) right after a torch reduction took 3.9-4.1 ms on OpenMP's threads and 7.5-7.6 ms on
    the pool (the op in the pool's case 7.7 ms, 4.7 ms with ``OMP_WAIT_POLICY=PASSIVE``)."""
    return max(1, min(torch.get_num_threads(), Z))


def _in_parts(run: Callable[[int, int], None], n: int) -> None:
    """``run(start, end)`` over [0, n) in :func:`_workers` parts, on the pool's threads when there are several."""
    parts = _workers(n)
    if parts == 1:
        run(0, n)
        return
    bounds = [n * p // parts for p in range(parts + 1)]
    list(_pool(parts).map(run, bounds[:-1], bounds[1:]))


def anchored(
    k: torch.Tensor, alpha: torch.Tensor, rows: tuple[torch.Tensor, ...], cut: float
) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """The compiled :func:`lineage.ops.recurrence.anchored_products` (check :func:`usable` first).

    Args: k [Z, C, K]; alpha = e^g with the strong-gate knob applied (``recurrence.decay_factors``) [Z, C, K]; rows:
    one or two left factors [Z, C, K]; cut: the knob's cut (``recurrence.flush_cut``), 0 for none.
    Returns the products, each [Z, C, C] and 0 above the diagonal, the decays from the chunk's start and to its end,
    each [Z, C, K]. No autograd: the inputs' gradients are not recorded.
    """
    lib = _library()
    Z, C, K = k.shape
    k, alpha, *rows = (x.detach().contiguous() for x in (k, alpha, *rows))
    products = [k.new_empty(Z, C, C) for _ in rows]
    from_start, to_end = torch.empty_like(k), torch.empty_like(k)
    fn = getattr(lib, _DTYPES[k.dtype][0])

    def run(z0: int, z1: int) -> None:
        def at(x: torch.Tensor | None) -> int | None:
            return None if x is None else x[z0:z1].data_ptr()

        x1, A1 = (rows[1], products[1]) if len(rows) == 2 else (None, None)
        inputs, outputs = (at(k), at(alpha), at(rows[0]), at(x1)), (at(products[0]), at(A1), at(from_start), at(to_end))
        fn(*inputs, z1 - z0, C, K, cut, *outputs)

    _in_parts(run, Z)
    return products, from_start, to_end


def steps_usable(x: torch.Tensor) -> bool:
    """Whether :func:`chunk_steps` can take inputs like ``x``: on a CPU, in fp32 or fp64, outside
    :func:`python_form`, and a library."""
    where = x.device.type == "cpu" and x.dtype in _DTYPES
    return where and not _forced_python.get() and _library() is not None


def _check_steps(q, k, v, g, beta, S0, erase, write) -> None:
    """The shapes and dtypes :func:`chunk_steps` reads (the compiled loop trusts them): a ValueError naming the first
    that is wrong and what it must be."""
    BH, N, C, K = q.shape
    V = v.shape[-1]
    want = {
        "k": (k, (BH, N, C, K)),
        "v": (v, (BH, N, C, V)),
        "g": (g, (BH, N, C, 1 if g is not None and g.shape[-1] == 1 else K)),
        "beta": (beta, (BH, N, C)),
        "S0": (S0, (BH, K, V)),
        "erase": (erase, (BH, N, C, K)),
        "write": (write, (BH, N, C, V)),
    }
    for name, (x, shape) in want.items():
        if x is not None and (tuple(x.shape) != shape or x.dtype != q.dtype or x.device != q.device):
            raise ValueError(
                f"chunk_steps: {name} must be {q.dtype} on {q.device} with shape {list(shape)} (from q "
                f"[B·H, N, C, K] = {list(q.shape)}), got {x.dtype} on {x.device} with shape {list(x.shape)}"
            )
    if (erase is None) != (write is None) or (beta is not None and erase is not None):
        raise ValueError("chunk_steps: give beta (the delta rule), or erase and write (Gated DeltaNet-2), or none")


def chunk_steps(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None,
    beta: torch.Tensor | None,
    S0: torch.Tensor,
    scale: float,
    floor: float,
    cut: float,
    erase: torch.Tensor | None = None,
    write: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Steps 2–5 of :func:`lineage.ops.recurrence.chunk_memory`, compiled (check :func:`steps_usable` first).

    Args: q, k [B·H, N, C, K]; v [B·H, N, C, V]; g the log-decays ≤ 0, [B·H, N, C, 1] (one per head and step) or
    [B·H, N, C, K] (per channel), or None (no gate), made decay factors in the loop as ``recurrence.decay_factors``
    makes them: e^max(g, floor), 0 at most ``cut`` (``recurrence._log_floor`` and ``recurrence.flush_cut``);
    beta [B·H, N, C] for the delta rule, None for an additive write; S0 [B·H, K, V], the incoming state; scale: the
    read scale; erase [B·H, N, C, K] and write [B·H, N, C, V]: Gated DeltaNet-2's gates in place of beta
    (:mod:`lineage.ops.gated_deltanet2`).
    Returns o [B·H, N, C, V] and the final state [B·H, K, V]. No autograd: the inputs' gradients are not recorded.
    """
    lib = _library()
    BH, N, C, K = q.shape
    V = v.shape[-1]
    _check_steps(q, k, v, g, beta, S0, erase, write)
    gate = 0 if g is None else 1 if g.shape[-1] == 1 else 2
    q, k, v, S0 = (x.detach().contiguous() for x in (q, k, v, S0))
    g, beta, erase, write = (None if x is None else x.detach().contiguous() for x in (g, beta, erase, write))
    o, S = v.new_empty(BH, N, C, V), S0.new_empty(BH, K, V)
    fn = getattr(lib, _DTYPES[q.dtype][1])
    pointers = [None if x is None else x.data_ptr() for x in (q, k, v, g, beta, erase, write, S0)]

    def run(h0: int, h1: int, parts: int = 1) -> None:
        fn(*pointers, h0, h1, N, C, K, V, gate, scale, floor, cut, o.data_ptr(), S.data_ptr(), parts)

    if lib.lineage_openmp() and os.getpid() == IMPORTED_IN:  # the parts on OpenMP's threads, from one call
        run(0, BH, _workers(BH))
    else:
        _in_parts(run, BH)
    return o, S


def decay_factors(g: torch.Tensor, floor: float, cut: float) -> torch.Tensor:
    """The decay factors :func:`chunk_steps` makes from log-decays inside its loop, e^max(g, floor) with every factor
    at most ``cut`` set to 0, for any g on a CPU in fp32 or fp64 (check :func:`steps_usable`): to hold the compiled
    exponential to ``recurrence.decay_factors``."""
    g = g.detach().contiguous()
    alpha = torch.empty_like(g)
    getattr(_library(), _DTYPES[g.dtype][2])(g.data_ptr(), g.numel(), floor, cut, alpha.data_ptr())
    return alpha
