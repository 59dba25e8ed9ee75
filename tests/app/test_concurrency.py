"""Many visitors at once: one process serves every session of the hosted demo.

* Every ``st.cache_data`` / ``st.cache_resource`` is bounded (``max_entries`` and ``ttl``), read from the sources.
* Nothing shared between sessions is written: the modules imported once per process (``ui``, ``lineage``) keep
  no mutable global that their functions write to, and no page or helper writes into an imported module.
* The live runs leave torch's global random generator alone (it is shared by every session's thread).
* Eight and more sessions run at once, in threads, on the same and on different pages with different seeds and
  sizes: each sees exactly what it sees when it runs alone, and sessions with different seeds see different numbers.
"""

from __future__ import annotations

import ast
import importlib
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import MagicMock

import numpy as np
import pytest
import streamlit as st
import torch
from streamlit.components.v2.component_manager import BidiComponentManager
from streamlit.runtime import Runtime
from streamlit.runtime.caching.storage.dummy_cache_storage import MemoryCacheStorageManager
from streamlit.runtime.dataframe_source_manager import DataframeSourceManager
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.runtime.scriptrunner import magic
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import app_test as app_test_module
from streamlit.testing.v1.util import patch_config_options

from lineage import lab, schedules
from lineage.models import hybrid
from lineage.teach import stage_runs
from tests.app.util import ROOT, TIMEOUT
from ui import limits, results, running
from ui.story import INPUTS

# ---- the sources: bounded caches, no shared state written ----------------------------------------------------------

PAGE_SOURCES = sorted([ROOT / "app.py", *(ROOT / "app_pages").glob("*.py"), *(ROOT / "ui").glob("*.py")])
# imported once per process, so their module globals are shared by every session (a page script, and app.py, run
# afresh in a new module at every rerun: their globals belong to that one run)
SHARED_SOURCES = sorted([*(ROOT / "ui").glob("*.py"), *(ROOT / "lineage").rglob("*.py")])
ALL_SOURCES = sorted(set(PAGE_SOURCES) | set(SHARED_SOURCES))

CACHE_DECORATORS = {"cache_data", "cache_resource"}
REQUIRED_CACHE_ARGS = {"max_entries", "ttl"}
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter", "bytearray"}
MUTATORS = {
    "append", "extend", "insert", "remove", "pop", "popitem", "clear", "add", "discard", "update", "setdefault",
    "sort", "reverse", "__setitem__", "__delitem__", "intersection_update", "difference_update",
    "symmetric_difference_update", "appendleft", "extendleft", "popleft",
}  # fmt: skip


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def cache_kind(node: ast.AST) -> str | None:
    """ "cache_data" / "cache_resource" for ``st.cache_data``, ``streamlit.cache_data`` or a bare imported name."""
    if isinstance(node, ast.Attribute) and node.attr in CACHE_DECORATORS:
        return node.attr
    if isinstance(node, ast.Name) and node.id in CACHE_DECORATORS:
        return node.id
    return None


def module_dicts(tree: ast.Module) -> dict[str, set[str]]:
    """Module-level ``NAME = dict(a=…, …)`` or ``NAME = {"a": …}``: the keys, for ``**NAME`` in a decorator."""
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
                out[stmt.targets[0].id] = {kw.arg for kw in value.keywords if kw.arg}
            elif isinstance(value, ast.Dict):
                out[stmt.targets[0].id] = {k.value for k in value.keys if isinstance(k, ast.Constant)}
    return out


def unbounded_caches(path: Path) -> list[str]:
    """Every cache decorator or call in ``path`` that lacks ``max_entries`` or ``ttl`` (or sets one to None)."""
    tree = parse(path)
    dicts = module_dicts(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [
                f"{rel(path)}:{d.lineno} @{cache_kind(d)} without arguments on {node.name}()"
                for d in node.decorator_list
                if cache_kind(d)
            ]
        if isinstance(node, ast.Call) and cache_kind(node.func):
            given = set()
            for kw in node.keywords:
                if kw.arg is None:  # **NAME: a module-level dict of the options
                    name = kw.value.id if isinstance(kw.value, ast.Name) else None
                    given |= dicts.get(name, set())
                elif not (isinstance(kw.value, ast.Constant) and kw.value.value is None):
                    given.add(kw.arg)
            missing = REQUIRED_CACHE_ARGS - given
            if missing:
                found.append(f"{rel(path)}:{node.lineno} {cache_kind(node.func)} without {', '.join(sorted(missing))}")
    return found


def test_the_scan_sees_every_page_and_helper():
    names = {rel(p) for p in PAGE_SOURCES}
    assert {"app.py", "ui/display.py", "ui/controls.py", "app_pages/memory_lab.py"} <= names
    from ui.nav import PAGES

    assert {entry.file for entry in PAGES} <= names
    assert "lineage/plots/core.py" in {rel(p) for p in SHARED_SOURCES}


def test_every_cache_is_bounded():
    found = [problem for path in ALL_SOURCES for problem in unbounded_caches(path)]
    assert not found, "caches must set max_entries and ttl (many sessions share them):\n" + "\n".join(found)


def test_the_cache_scan_catches_unbounded_caches(tmp_path):
    bad = tmp_path / "page.py"
    bad.write_text(
        "import streamlit as st\n"
        "OPTS = dict(max_entries=4)\n"
        "@st.cache_data\n"
        "def a(): ...\n"
        "@st.cache_data(ttl=60)\n"
        "def b(): ...\n"
        "@st.cache_resource(**OPTS)\n"
        "def c(): ...\n"
        "@st.cache_data(max_entries=None, ttl=60)\n"
        "def d(): ...\n"
        "@st.cache_data(max_entries=8, ttl=60)\n"
        "def ok(): ...\n"
    )
    found = unbounded_caches(bad)
    assert len(found) == 4, found
    assert not any("ok()" in f for f in found)


def is_mutable_value(node: ast.AST) -> bool:
    if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return name in MUTABLE_CALLS
    return False


def module_level_mutables(tree: ast.Module) -> set[str]:
    """The names a module binds at top level to a mutable container (list, dict, set, …)."""
    mutable = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and is_mutable_value(stmt.value):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            mutable |= {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}
    return mutable


def imported_modules(tree: ast.Module) -> dict[str, types.ModuleType]:
    """Names bound to modules by the imports of a file (``import x``, ``from pkg import mod``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = importlib.import_module(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    out[top] = importlib.import_module(top)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parent = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(parent, alias.name, None)
                if isinstance(value, types.ModuleType):
                    out[alias.asname or alias.name] = value
    return out


def imported_mutables(tree: ast.Module) -> set[str]:
    """Names a file imports (``from m import NAME``) that are mutable containers living in another module."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parent = importlib.import_module(node.module)
            for alias in node.names:
                if isinstance(getattr(parent, alias.name, None), (dict, list, set, bytearray)):
                    out.add(alias.asname or alias.name)
    return out


def locally_bound(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = func.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    bound = {a.arg for a in params if a is not None}
    declared_global = {n for node in ast.walk(func) if isinstance(node, ast.Global) for n in node.names}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in declared_global:
            bound.add(node.id)
    return bound


def written_base(node: ast.AST) -> ast.AST | None:
    """For a write ``X[…] = …``, ``del X[…]``, ``X.attr = …`` or a call ``X.append(…)``: the X written into."""
    if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        return node.func.value
    return None


def shared_writes(path: Path, *, shared: bool) -> list[str]:
    """Writes into state every session shares: ``global`` rebinding and writes into module-level containers in the
    functions of a ``shared`` module, and (in any file) writes into an imported module or an imported container."""
    tree = parse(path)
    mutable = module_level_mutables(tree)
    modules = imported_modules(tree)
    foreign = imported_mutables(tree)
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    in_functions = {id(n) for f in functions for n in ast.walk(f)}
    top_level = [n for n in ast.walk(tree) if id(n) not in in_functions]
    for func, nodes in [(None, top_level)] + [(f, list(ast.walk(f))) for f in functions]:
        local = locally_bound(func) if func is not None else set()
        for node in nodes:
            where = f"{rel(path)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Global) and shared and func is not None:
                found.append(f"{where} rebinds module globals {node.names} in {func.name}()")
            base = written_base(node)
            if base is None:
                continue
            if isinstance(base, ast.Name):
                if base.id in foreign and base.id not in local:
                    found.append(f"{where} writes into {base.id}, imported from another module")
                elif shared and func is not None and base.id in mutable and base.id not in local:
                    found.append(f"{where} writes into the module-level {base.id} in {func.name}()")
                elif base.id in modules and base.id not in local and isinstance(node, (ast.Attribute, ast.Subscript)):
                    found.append(f"{where} sets an attribute of the module {base.id}")
            elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
                owner = base.value.id
                if owner in modules and owner not in local and not _is_streamlit_state(base):
                    found.append(f"{where} writes into {owner}.{base.attr}, a global of another module")
    return found


def _is_streamlit_state(node: ast.Attribute) -> bool:
    """``st.session_state`` / ``st.query_params``: per session, not shared."""
    return node.attr in ("session_state", "query_params")


def test_no_state_shared_between_sessions_is_written():
    found = [problem for path in ALL_SOURCES for problem in shared_writes(path, shared=path in SHARED_SOURCES)]
    assert not found, "state shared by every session is written:\n" + "\n".join(found)


def test_the_state_scan_catches_shared_writes(tmp_path):
    source = """
import os
import streamlit as st
from lineage.measure import footprints
from lineage.measure.footprints import MODELS
SEEN = []
COUNT = 0
def remember(x):
    SEEN.append(x)  # bad: a module-level list, written by a function
def bump():
    global COUNT  # bad: a module global rebound
    COUNT += 1
def patch():
    footprints.MODELS["mine"] = None  # bad: another module's dict
    MODELS.pop("gpt2")  # bad: the same dict, imported by name
    footprints.MAX_SEQ_LEN = 1  # bad: another module's constant
    os.environ.update(X="1")  # bad: the process's environment
def fine(seen):
    SEEN = []
    SEEN.append(seen)  # a local of the same name
    st.session_state.x = 1  # per session
    st.query_params["present"] = "1"  # per session
"""
    bad = tmp_path / "helper.py"
    bad.write_text(source)
    found = shared_writes(bad, shared=True)
    expected = [i for i, line in enumerate(source.splitlines(), start=1) if "# bad" in line]
    assert sorted(int(f.split(":")[1].split()[0]) for f in found) == expected, found


# ---- torch's global generator: shared by every session's thread ----------------------------------------------------

LIVE_RUNS = {
    "run_stage": lambda: stage_runs.run_stage("kda", T=8, K=4, V=4, seed=1, repeats=1),
    "run_softmax": lambda: stage_runs.run_softmax(T=8, n_heads=2, head_dim=4, seed=1),
    "chunk_size_sweep": lambda: stage_runs.chunk_size_sweep(T=8, D=4, seed=1, repeats=1),
    "decode_trace": lambda: hybrid.decode_trace(hybrid.HybridConfig(schedule=schedules.periodic_schedule(2, 2)), 3, 1),
    "lab": lambda: lab.capacity(lab.LabSettings(d_k=4, seed=1), n_max=6, trials=1),
}


@pytest.mark.parametrize("run", LIVE_RUNS.values(), ids=LIVE_RUNS.keys())
def test_live_runs_leave_the_global_generators_alone(run):
    torch_state, numpy_state = torch.random.get_rng_state(), np.random.get_state()
    run()
    assert torch.equal(torch.random.get_rng_state(), torch_state), "a live run drew from torch's global generator"
    after = np.random.get_state()
    assert after[0] == numpy_state[0] and np.array_equal(after[1], numpy_state[1]) and after[2:] == numpy_state[2:]


def test_a_softmax_run_in_another_session_does_not_change_a_seeded_stack():
    """The hybrid page seeds torch's global generator (under a lock) to build its stack. A GPT-2 or KV-cache run in
    another session used to build its layer with the default initialisers, drawing from that same generator in the
    middle: the stack's weights, and so the page's numbers, changed with what other visitors were doing."""
    config = hybrid.HybridConfig(schedule=schedules.periodic_schedule(4, 2))
    reference = [p.detach().clone() for p in hybrid.seeded_stack(config, 3).parameters()]

    def softmax_runs(stop: float) -> int:
        n = 0
        while time.perf_counter() < stop or n == 0:
            stage_runs.run_softmax(T=8, n_heads=2, head_dim=4, seed=n)
            n += 1
        return n

    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(softmax_runs, time.perf_counter() + 0.5)
        changed = 0
        for _ in range(10):
            stack = hybrid.seeded_stack(config, 3)
            changed += not all(torch.equal(a, b) for a, b in zip(reference, stack.parameters(), strict=True))
        assert other.result() > 0
    assert changed == 0, f"{changed} of 10 stacks built while another session ran differed from the reference"


# ---- many sessions at once ----------------------------------------------------------------------------------------


@contextmanager
def one_server():
    """One runtime for every session, as ``streamlit run`` has.

    AppTest installs a fresh mock runtime for each run and removes it when the run ends (``Runtime._instance``,
    process-wide), so AppTests running at once in threads would pull the runtime from under each other. Here all of
    them share one, built as AppTest builds its own; their per-run swaps land on a stand-in class.

    The server also has one script cache, which parses each page under a lock; every AppTest has its own. Parsing in
    many threads at once trips a race in CPython 3.11's AST constructor ("SystemError: AST constructor recursion
    depth mismatch", python/cpython#106905), so here too scripts are parsed one at a time.
    """
    runtime = MagicMock(spec=Runtime)
    runtime.media_file_mgr = MediaFileManager(MemoryMediaFileStorage("/mock/media"))
    runtime.dataframe_source_mgr = DataframeSourceManager()
    runtime.cache_storage_manager = MemoryCacheStorageManager()
    components = BidiComponentManager()
    components.discover_and_register_components(start_file_watching=False)
    runtime.bidi_component_registry = components

    class PerRunRuntime(Runtime):
        """Receives AppTest's per-run ``_instance`` assignments."""

    parse_lock, add_magic = threading.Lock(), magic.add_magic

    def add_magic_one_at_a_time(code: str, script_path: str):
        with parse_lock:
            return add_magic(code, script_path)

    saved = app_test_module.Runtime
    with patch_config_options({"global.appTest": True}):
        Runtime._instance = runtime
        app_test_module.Runtime = PerRunRuntime
        magic.add_magic = add_magic_one_at_a_time
        try:
            yield
        finally:
            magic.add_magic = add_magic
            app_test_module.Runtime = saved
            Runtime._instance = None


# (page, URL query parameters): same page with different seeds, same seed with different sizes, two identical
# sessions, and different pages — each session opens its own deep link.
RANDOM = INPUTS["random"]  # random inputs: the seed draws them (the story's are the same for every seed)
SESSIONS = [
    ("deltanet", {"seed": 1, "deltanet_T": 16, "deltanet_inputs": RANDOM}),
    ("deltanet", {"seed": 2, "deltanet_T": 16, "deltanet_inputs": RANDOM}),
    ("deltanet", {"seed": 1, "deltanet_T": 12, "deltanet_beta": 0.9, "deltanet_inputs": RANDOM}),
    ("kda", {"seed": 1, "kda_T": 16, "kda_K": 4, "kda_inputs": RANDOM}),
    ("kda", {"seed": 2, "kda_T": 16, "kda_K": 4, "kda_inputs": RANDOM}),
    ("gpt2", {"seed": 1, "gpt2_T": 12, "gpt2_heads": 2}),
    ("gpt2", {"seed": 2, "gpt2_T": 12, "gpt2_heads": 2}),
    ("gpt2", {"seed": 1, "gpt2_T": 12, "gpt2_heads": 2}),
    ("hybrid", {"seed": 1, "hybrid_T": 6, "hybrid_layers": 4}),
    ("hybrid", {"seed": 2, "hybrid_T": 6, "hybrid_layers": 4}),
    ("memory_lab", {"seed": 1, "lab_d_k": 4, "lab_capacity_n": 8}),
    ("memory_lab", {"seed": 2, "lab_d_k": 4, "lab_capacity_n": 8}),
]
TIMED_CHARTS = {"deltanet_timing"}  # measured wall times: they differ from run to run by nature
SEED_FREE_CHARTS = {"hybrid"}  # bytes held per layer: the same whatever the random weights


def open_link(url_path: str, params: dict, barrier=None) -> AppTest:
    """A fresh session opening ``/<url_path>?<params>``: the shell's first run, then the page."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.run()
    if barrier is not None:
        barrier.wait(timeout=TIMEOUT)  # every session starts its page at the same moment
    at.switch_page(f"app_pages/{url_path}.py")
    at.run()
    assert not at.exception, f"{url_path} {params}: {[e.value for e in at.exception]}"
    assert not at.error, f"{url_path} {params}: {[e.value for e in at.error]}"
    return at


def shown(at: AppTest) -> dict:
    """What a session's page displays, less the wall-clock times it measured."""
    return {
        "charts": {chart.key: chart.proto.spec for chart in at.get("plotly_chart") if chart.key not in TIMED_CHARTS},
        "metrics": [(m.label, m.value) for m in at.metric if not m.value.endswith(" ms")],
        "markdown": [m.value for m in at.markdown],
        "tables": [df.value.to_json() for df in at.dataframe],
    }


def test_simultaneous_sessions_see_only_their_own_results():
    with one_server():
        st.cache_data.clear()  # every session computes, at once
        barrier = threading.Barrier(len(SESSIONS))
        with ThreadPoolExecutor(len(SESSIONS)) as pool:
            futures = [pool.submit(open_link, page, params, barrier) for page, params in SESSIONS]
            together = [shown(f.result()) for f in futures]
        st.cache_data.clear()  # and again, one at a time
        alone = [shown(open_link(page, params)) for page, params in SESSIONS]

    for (page, params), mine, reference in zip(SESSIONS, together, alone, strict=True):
        assert mine["charts"], f"{page} {params} drew no chart"
        for part in mine:
            assert mine[part] == reference[part], f"{page} {params}: its {part} differ from the same session alone"
    for i, (page, params) in enumerate(SESSIONS):
        for j, (other_page, other) in enumerate(SESSIONS[:i]):
            if page == other_page and {**params, "seed": 0} == {**other, "seed": 0} and params != other:
                if page in SEED_FREE_CHARTS:
                    continue
                assert together[i]["charts"] != together[j]["charts"], f"{page}: seeds {other} and {params} agree"


# ---- the process-wide limit on heavy runs, and results no client can clear -------------------------------------------


def test_the_limiter_runs_at_most_its_slots_at_once_and_tells_the_rest_they_wait():
    limiter = limits.HeavyRunLimiter(2)
    lock, running, most, told = threading.Lock(), [0], [0], []

    def one_run(_) -> None:
        with limiter.slot(on_wait=lambda r, w, s: told.append((r, w))):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.3)
            with lock:
                running[0] -= 1

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one_run, range(8)))
    assert most[0] == 2, f"{most[0]} runs at once with 2 slots"
    assert told and all(r == 2 and w >= 1 for r, w in told), told[:5]
    assert limiter.counts() == (0, 0)


def test_the_limiter_gives_up_after_its_longest_wait_and_is_reentrant():
    limiter = limits.HeavyRunLimiter(1)
    with limiter.slot():
        with limiter.slot():  # the same thread: no second slot, no deadlock
            assert limiter.counts() == (1, 0)
        with ThreadPoolExecutor(1) as pool:
            other = pool.submit(lambda: limiter.slot(max_wait_s=0.3).__enter__())
            with pytest.raises(limits.ServerBusy):
                other.result(timeout=10)
    assert limiter.counts() == (0, 0)


def test_a_released_slot_serves_another_thread_and_comes_back():
    # a trainer gives its page slot back while it trains, so that the other visitors' pages are not queued behind it
    limiter = limits.HeavyRunLimiter(1, what="page")

    def another_page(max_wait_s: float) -> bool:
        with limiter.slot(max_wait_s=max_wait_s):
            return True

    with ThreadPoolExecutor(1) as pool:
        with limiter.slot():
            with limiter.released():
                assert limiter.counts() == (0, 0)
                assert pool.submit(another_page, 0.5).result(timeout=10)  # served while the slot is given back
            assert limiter.counts() == (1, 0)  # taken again once the block ends
            with pytest.raises(limits.ServerBusy):
                pool.submit(another_page, 0.3).result(timeout=10)
        assert limiter.counts() == (0, 0)
        with limiter.released():  # a thread that holds no slot: nothing to give back
            assert limiter.counts() == (0, 0)


def test_one_visitor_trains_at_a_time_and_the_wait_says_what_for():
    assert limits.TRAINING.slots == 1 and limits.TRAINING is not limits.PAGES
    text = limits.waiting_text(1, 2, 4.0, limiter=limits.TRAINING)
    assert "1 training run in progress" in text and "at most 1 at a time" in text and "2 waiting" in text


def test_a_page_whose_run_cannot_get_a_slot_says_the_server_is_busy(monkeypatch):
    monkeypatch.setattr(limits, "MAX_WAIT_S", 0.5)
    held, release = threading.Barrier(limits.LIMITER.slots + 1), threading.Event()

    def hold() -> None:
        with limits.LIMITER.slot():
            held.wait(timeout=10)
            release.wait(timeout=60)

    with ThreadPoolExecutor(limits.LIMITER.slots) as pool:
        for _ in range(limits.LIMITER.slots):
            pool.submit(hold)
        held.wait(timeout=10)
        try:
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
            at.query_params["seed"] = "424242"  # a run no cache holds
            at.run()
            at.switch_page("app_pages/kda.py")
            at.run()
        finally:
            release.set()
    assert not at.exception
    assert any(e.value == running.BUSY_TEXT for e in at.error), [e.value for e in at.error]


def test_stored_results_survive_a_cache_clear_and_run_once_per_interval():
    store = results.ResultStore(keep_s=60, rerun_s=0.5, max_entries=2)
    calls = []

    def run() -> int:
        time.sleep(0.2)
        calls.append(1)
        return len(calls)

    with ThreadPoolExecutor(4) as pool:  # four visitors press Run together: one run, the same result for all
        got = list(pool.map(lambda _: store.measure(("cpu", "tiny"), run).value, range(4)))
    assert got == [1, 1, 1, 1] and store.runs == 1
    st.cache_data.clear()
    st.cache_resource.clear()  # what any client's clear-cache message does
    assert store.get(("cpu", "tiny")).value == 1 and store.measure(("cpu", "tiny"), run).value == 1
    assert 0 < store.next_run_in_s(("cpu", "tiny")) <= 0.5
    time.sleep(0.6)
    assert store.measure(("cpu", "tiny"), run).value == 2 and store.runs == 2  # a new run once the interval is over
    store.measure(("cpu", "standard"), run)
    store.measure(("gpu", "tiny"), run)
    assert store.get(("cpu", "tiny")) is None and len(store._results) == 2  # bounded: the oldest went first
