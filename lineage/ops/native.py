"""The per-channel gate's decayed products as compiled C++ (``anchored_products.cpp``), built on first use.

:func:`lineage.ops.recurrence.anchored_products` is the readable form and the one autograd differentiates. On a CPU,
where nothing records gradients, it hands the same levels to :func:`anchored`, which runs them as one C++ loop per
chunk: at the sizes users run (chunks of 32 steps, head size 64), the Python form spends most of its time starting
some sixty small tensor operations a span, not on arithmetic. Measured on 1 thread of a 2-core Intel Xeon (torch
2.13): a span of 64 chunks with both of KDA's rows took 1.8 ms in Python and 0.55–0.7 ms here (0.45 ms of it the
loop itself); KDA's chunked form at T = 4,096 (``python -m lineage bench``, against ``--anchors python``) 25.2–26.0
against 35.3–36.0 ms, GLA's 15.7–16.3 against 22.3–22.9 ms. The results agree to rounding; ``tests/test_native.py``
holds them to the Python form.

The library is compiled once per source, compiler and CPU, with the C++ compiler named by ``CXX`` (else ``c++``,
``g++`` or ``clang++`` on the PATH), into ``LINEAGE_NATIVE_CACHE`` (else ``$XDG_CACHE_HOME/attention-lineage``, else
``~/.cache/attention-lineage``, else the temporary directory): about half a second with g++ 12. Without a compiler, or
when it fails, the Python form runs and :func:`status` says why; nothing else changes.
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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch

from lineage.device import cpu_model

SOURCE = Path(__file__).with_name("anchored_products.cpp")
CACHE_ENV = "LINEAGE_NATIVE_CACHE"
# -march=native first (the vectors this CPU has); a compiler that refuses it (some Clang builds for ARM) gets the rest
FLAG_SETS = (("-O3", "-march=native"), ("-O3",))
COMMON_FLAGS = ("-std=c++17", "-shared", "-fPIC")
COMPILE_TIMEOUT_S = 120
_DTYPES = {  # the library's function for each dtype, and its scalar type
    torch.float32: ("anchored_products_f32", ctypes.c_float),
    torch.float64: ("anchored_products_f64", ctypes.c_double),
}


@dataclass(frozen=True)
class Status:
    """Whether the compiled loop is in use, and what a reader is told: the compiler and flags, or why not."""

    available: bool
    detail: str


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
    version, source = _compiler_version(compiler), SOURCE.read_bytes()
    error = ""
    for flags in FLAG_SETS:
        # keyed by the CPU too: a library built for one CPU's vectors must not run on another's
        cpu = f"{cpu_model()} {platform.machine()}"
        key = hashlib.sha256(b"\0".join([source, version.encode(), " ".join(flags).encode(), cpu.encode()]))
        library = cache_dir() / f"anchored_products-{key.hexdigest()[:16]}.so"
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
        os.unlink(partial)
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
    for name, scalar in _DTYPES.values():
        fn = getattr(lib, name)
        fn.restype = None
        fn.argtypes = [pointer] * 4 + [ctypes.c_int64, ctypes.c_int, ctypes.c_int, scalar] + [pointer] * 4
    return lib, Status(True, f"compiled C++ ({version}, {' '.join(flags)})")


@functools.cache
def _loaded() -> tuple[ctypes.CDLL | None, Status]:
    """The library and its status, looked for once per process (:func:`reset` forgets them)."""
    return _load()


def _library() -> ctypes.CDLL | None:
    return _loaded()[0]


def status() -> Status:
    """Whether :func:`anchored` runs compiled code in this process (building it if it has not been tried yet)."""
    return _loaded()[1]


def reset() -> None:
    """Forget the loaded library and its status, so the next call looks for a compiler again (for tests)."""
    _loaded.cache_clear()


@contextlib.contextmanager
def python_form() -> Iterator[None]:
    """Inside this block, in this thread or task only, the Python form runs where the compiled loop would: for timing
    one against the other (``python -m lineage bench --anchors python``) without touching other sessions' runs."""
    token = _forced_python.set(True)
    try:
        yield
    finally:
        _forced_python.reset(token)


def forced_python() -> bool:
    """Whether :func:`python_form` is in force here."""
    return _forced_python.get()


def usable(k: torch.Tensor, rows: tuple[torch.Tensor, ...]) -> bool:
    """Whether :func:`anchored` can take these inputs: on a CPU, in fp32 or fp64, one or two rows, and a library."""
    where = k.device.type == "cpu" and k.dtype in _DTYPES and len(rows) in (1, 2)
    return where and not _forced_python.get() and _library() is not None


def _workers(Z: int) -> int:
    """How many parts the chunks are split into: torch's intra-op threads (the compiled loop runs on one thread a
    call, and ctypes lets go of the GIL during it), at most one part per chunk."""
    return max(1, min(torch.get_num_threads(), Z))


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

    parts = _workers(Z)
    if parts == 1:
        run(0, Z)
    else:
        bounds = [Z * p // parts for p in range(parts + 1)]
        list(_pool(parts).map(run, bounds[:-1], bounds[1:]))
    return products, from_start, to_end
