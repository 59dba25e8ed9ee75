"""The start (serve.py, ui.serving), and what the app needs of Streamlit: its public API only.

- serve.py refuses a taken port before importing anything heavy; otherwise it imports the heavy modules and pays the
  first run's once-per-process costs before the server answers.
- No module the app imports names a private Streamlit module, and the app serves every page with the private names
  it once patched removed from Streamlit.
- Streamlit is pinned (requirements.txt) to the release the tests ran on, and each Streamlit bug the app works around
  has a test here that fails once the bug is fixed upstream, so the workaround can go.
"""

from __future__ import annotations

import ast
import importlib
import math
import os
import re
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import streamlit

from tests.app.util import ROOT, run_page
from ui import serving
from ui.nav import PAGES

BROWSER = ROOT / "ui" / "browser.py"  # not the app: drives a server from outside (tests/e2e, scripts/), as the frontend
APP_SOURCES = sorted(
    p
    for p in [ROOT / "app.py", ROOT / "serve.py", *(ROOT / "app_pages").glob("*.py"), *(ROOT / "ui").glob("*.py")]
    if p != BROWSER
)


# ---- the port, before anything heavy -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["--server.port", "8600"], {}, (8600, "0.0.0.0")),
        (["--server.port=8601", "--server.address=127.0.0.1"], {}, (8601, "127.0.0.1")),
        (["--server.port", "1", "--server.port", "8602"], {}, (8602, "0.0.0.0")),  # the last one wins, as in click
        ([], {"STREAMLIT_SERVER_PORT": "8603"}, (8603, "0.0.0.0")),
        ([], {}, None),  # left to Streamlit, which moves on to a free port by itself
        (["--server.port", "http"], {}, None),  # Streamlit's own option check reports that
    ],
)
def test_requested_port_reads_the_command_line_and_the_environment(argv, env, expected):
    assert serving.requested_port(argv, env) == expected


def test_a_taken_port_is_named_and_a_free_one_is_not():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        problem = serving.port_problem(port, "127.0.0.1")
        assert problem is not None and str(port) in problem and "--server.port" in problem
    assert serving.port_problem(port, "127.0.0.1") is None  # released


def test_serve_py_refuses_a_taken_port_at_once_without_importing_torch():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        t0 = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "serve.py",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        seconds = time.monotonic() - t0
    assert done.returncode != 0
    assert f"port {port}" in done.stderr and "--server.port" in done.stderr, done.stderr[-500:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "torch" not in imported and "streamlit" not in imported and "ui.serving" in imported
    assert seconds < 10, f"{seconds:.1f} s to refuse a taken port"  # torch alone takes longer on this machine


def test_import_heavy_modules_imports_what_every_page_needs():
    code = "import sys; from ui.serving import import_heavy_modules; import_heavy_modules(); print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(ast.literal_eval(done.stdout.strip()))
    assert set(serving.HEAVY_MODULES) <= loaded
    assert {"sympy", "pandas", "plotly.graph_objects", "lineage.plots"} <= loaded


def test_warm_first_run_fills_the_module_map_streamlit_walks_and_builds_the_compiled_code(tmp_path):
    # in a fresh interpreter, as serve.py runs it: the preload maps some modules by itself, so this module's own file
    # is mapped already (a plain inspect.stack() here would stop early and map none of the rest); the compiled code
    # of the chunked form is built before the first visitor asks for it
    code = (
        "import inspect, sys; from ui.serving import import_heavy_modules, warm_first_run; import_heavy_modules(); "
        "warm_first_run(); before = len(inspect._filesbymodname); "
        "exec(compile('import inspect; inspect.stack()', 'app.py', 'exec')); "  # a frame of the app's script
        "print(before, len(inspect._filesbymodname) - before)"
    )
    env = {**os.environ, "LINEAGE_NATIVE_CACHE": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    mapped, newly = map(int, done.stdout.split())
    assert mapped > 2000  # every loaded module with a file (torch, sympy, pandas, streamlit, …)
    assert newly == 0  # the first element's inspect.stack() in the app's script has nothing left to map
    assert [p.name.startswith("lineage-native-") and p.suffix == ".so" for p in tmp_path.iterdir()] == [True]


def test_freeze_preloaded_takes_the_preloaded_heap_out_of_the_collectors_walks():
    # in a fresh interpreter: freezing this test process would change every later test's garbage collection
    code = (
        "import gc; from ui.serving import freeze_preloaded, import_heavy_modules; import_heavy_modules(); "
        "before = len(gc.get_objects()); frozen = freeze_preloaded(); print(before, frozen, len(gc.get_objects()))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    before, frozen, walked = map(int, done.stdout.split())
    assert frozen > 100_000 and frozen >= 0.9 * before  # the preloaded modules' objects, nearly all of them
    assert walked < 0.01 * before  # what a collection still walks afterwards


def test_serve_py_freezes_after_the_preload_and_before_streamlit_starts():
    calls = [
        node.func.id
        for node in ast.walk(ast.parse((ROOT / "serve.py").read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    assert calls.index("import_heavy_modules") < calls.index("warm_first_run") < calls.index("freeze_preloaded")


# ---- Streamlit's public API only ----------------------------------------------------------------------------------


def streamlit_imports(path: Path) -> list[str]:
    """Every ``streamlit...`` module a source imports (``import x`` and ``from x import y``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "streamlit"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "streamlit":
            found.append(node.module)
    return found


def test_the_app_imports_streamlit_itself_and_nothing_under_it():
    found = {str(p.relative_to(ROOT)): streamlit_imports(p) for p in APP_SOURCES}
    assert found["app.py"] == ["streamlit"]  # the scan sees the app's own import
    private = {path: mods for path, mods in found.items() if any(m != "streamlit" for m in mods)}
    assert not private, f"modules of Streamlit that are not its public API: {private}"
    assert 'entry_points(group="console_scripts", name="streamlit")' in (ROOT / "serve.py").read_text()
    # ui/browser.py, left out of the scan, speaks Streamlit's websocket protocol; the app never imports it
    imports_browser = re.compile(
        r"^\s*(from ui\.browser import|import ui\.browser|from ui import [^\n]*\bbrowser\b)", re.M
    )
    users = [str(p.relative_to(ROOT)) for p in APP_SOURCES if imports_browser.search(p.read_text())]
    assert not users, f"the app must not import ui.browser (the browser tests' and scripts' harness): {users}"


def test_the_import_scan_catches_a_private_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import streamlit as st\nfrom streamlit.elements.widgets.number_input import NumberInputSerde\n")
    assert streamlit_imports(bad) == ["streamlit", "streamlit.elements.widgets.number_input"]


# What earlier versions of the app patched or imported: hidden from the app for the test below.
PRIVATE_NAMES = {
    "streamlit.elements.widgets.number_input": {"NumberInputSerde"},
    "streamlit.file_util": {"get_static_dir"},
}


def hiding(names: set[str]) -> type:
    """A module class whose attributes ``names`` are gone for anyone who asks (``from m import x``, ``m.x``), as after
    a release that moved them. Streamlit's own functions still find them: they read their module's globals directly."""

    def __getattribute__(self, name):
        if name in names:
            raise AttributeError(f"module {types.ModuleType.__getattribute__(self, '__name__')!r} has no {name!r}")
        return types.ModuleType.__getattribute__(self, name)

    return type("Hidden", (types.ModuleType,), {"__getattribute__": __getattribute__})


@pytest.fixture
def without_private_names(monkeypatch):
    for module, names in PRIVATE_NAMES.items():
        monkeypatch.setattr(importlib.import_module(module), "__class__", hiding(names))
    for module in [m for m in sys.modules if m == "ui" or m.startswith("ui.")]:
        monkeypatch.delitem(sys.modules, module)  # imported afresh, with the names gone


def test_the_hidden_names_are_gone_for_an_importer(without_private_names):
    for module, names in PRIVATE_NAMES.items():
        for name in names:
            with pytest.raises(ImportError):
                exec(f"from {module} import {name}", {})


@pytest.mark.parametrize("entry", PAGES, ids=[e.url_path for e in PAGES])
def test_every_page_serves_with_the_private_names_removed(without_private_names, entry):
    at = run_page(entry.url_path, seed=3)  # fails on any exception
    assert not at.error, [e.value for e in at.error]
    assert at.title
    if entry.stage:  # the tools and labs draw once asked (Run benchmark, Train)
        assert at.get("plotly_chart"), entry.url_path


# ---- the pin, and one test per workaround of a Streamlit bug ---------------------------------------------------------


def pinned(name: str) -> str:
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    match = re.search(rf"^{re.escape(name)}==([\w.]+)", text, flags=re.MULTILINE)
    assert match, f"requirements.txt does not pin {name} to one release"
    return match.group(1)


def test_streamlit_is_the_pinned_release():
    assert streamlit.__version__ == pinned("streamlit"), (
        "Streamlit is not the release the tests ran on: run them on this one, check every workaround test below, "
        "then move the pin"
    )


def test_workaround_integer_inputs_streamlit_raises_on_an_infinite_url_integer():
    """The bug behind ``ui.controls.whole_number_input`` and the unbound seed: Streamlit 1.67 converts an integer number
    input's URL value with ``int()`` and does not catch the OverflowError that ``inf`` raises, so ``?seed=inf`` broke
    every page at the sidebar. When this test fails, Streamlit refuses such values itself, and the integer inputs may
    be Streamlit's integer inputs again (bound to the URL), once the typed-value check below also holds."""
    from streamlit.elements.widgets.number_input import NumberInputSerde
    from streamlit.proto.NumberInput_pb2 import NumberInput as NumberInputProto

    serde = NumberInputSerde(value=0, data_type=NumberInputProto.INT, min_value=0, max_value=1)
    with pytest.raises(OverflowError):
        serde.deserialize(math.inf)


# ---- the container ------------------------------------------------------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def ignore_lines(name: str) -> set[str]:
    text = (ROOT / name).read_text(encoding="utf-8")
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}


def test_dockerignore_mirrors_gitignore_and_leaves_out_virtual_environments():
    docker = ignore_lines(".dockerignore")
    assert ignore_lines(".gitignore") <= docker, ignore_lines(".gitignore") - docker
    assert {".venv/", "venv/", ".git", "tests/"} <= docker


def test_dockerfile_is_pinned_copies_with_chown_checks_health_and_starts_as_the_readme_does():
    steps = dockerfile()
    (base,) = [args for op, args in steps if op == "FROM"]
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", base), f"the base image is not pinned to a release: {base}"
    runs = " ".join(args for op, args in steps if op == "RUN")
    assert "-c requirements.lock" in runs and "chown -R" not in runs  # a recursive chown copies every file again
    # a C++ compiler, so the per-channel products run compiled (lineage/ops/native.py), in the image's Debian release
    assert re.search(r"apt-get install -y --no-install-recommends g\+\+ ", runs), runs
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    torch_pin = re.search(r'"torch==([\w.]+)"', runs).group(1)
    assert f"torch=={torch_pin}\n" in lock and "streamlit==" + pinned("streamlit") in lock
    copies = [args for op, args in steps if op == "COPY"]
    assert any(args.startswith("--chown=") and args.endswith(" . .") for args in copies), copies
    (health,) = [args for op, args in steps if op == "HEALTHCHECK"]
    assert "--start-period=" in health and "/_stcore/health" in health
    (cmd,) = [args for op, args in steps if op == "CMD"]
    assert cmd.startswith('["python", "serve.py"') and "8501" in cmd
    assert ("EXPOSE", "8501") in steps
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "python serve.py" in readme and "app_port: 8501" in readme


def test_the_lock_pins_every_runtime_requirement():
    lock = {line.split("==")[0].lower() for line in ignore_lines("requirements.lock")}
    wanted = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    names = {re.split(r"[<>=!~ ;]", w, maxsplit=1)[0].lower() for w in wanted if w}
    assert names <= lock, names - lock
