"""The package's layers, as an import rule the code must keep (docs/ARCHITECTURE.md draws the same picture).

Every module of ``lineage`` belongs to one layer; a module imports only from its own group or from a lower layer.
A new module must be given a place here, so ``ls lineage`` keeps showing the architecture.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lineage"

# group -> layer, lowest first. Groups are the subpackages and the top-level modules.
LAYERS = {  # the table of docs/ARCHITECTURE.md, "Layers and the import rule"
    # 1 conventions: argument checks, error measures, the device, what every command shares
    "checks": 1,
    "numerics": 1,
    "device": 1,
    "cli": 1,
    "units": 1,
    # 2 the ops: the one recurrence, each stage's op, softmax attention, its cache and IO counts
    "ops": 2,
    # 3 the tables: the mechanisms, the layer schedules, the stages, the inputs (in that order: each reads those before)
    "mechanisms": 3.0,
    "schedules": 3.1,
    "stages": 3.2,
    "inputs": 3.3,  # the inputs of the mechanisms by purpose, and the one way to run one for display
    # 4 nn.Modules built from the table
    "models": 4,
    # 5 measured: benchmarks, verification, the cost catalogue; the Memory lab's experiments
    "measure": 5,
    "lab": 5,
    # 6 training, its sweep and its findings; 7 what the pages run and say; 8 the Plotly builders
    "train": 6,
    "teach": 7,
    "plots": 8,
    # 8.5 the static site: a build above the plots and the teaching text (python -m lineage site)
    "site": 8.5,
    # 9 the command line
    "__main__": 9,
}


def group_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "lineage" and len(parts) > 1 else None


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(path: Path) -> set[str]:
    """Every ``lineage`` module a file imports, at top level or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("lineage")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lineage"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}  # `from lineage import stages` is a module
    return {m for m in found if group_of(m) in LAYERS}


def test_every_module_has_a_layer():
    homeless = sorted({group_of(m) for m in modules()} - set(LAYERS) - {None})
    assert not homeless, f"give these a layer in LAYERS (and in docs/ARCHITECTURE.md): {homeless}"


@pytest.mark.parametrize("module", sorted(m for m in modules() if group_of(m)))
def test_imports_go_down_the_layers(module):
    here = group_of(module)
    upward = sorted(
        m for m in imports(modules()[module]) if group_of(m) != here and LAYERS[group_of(m)] >= LAYERS[here]
    )
    assert not upward, f"{module} (layer {LAYERS[here]}) imports from its own layer or above: {upward}"


def test_the_rule_catches_an_upward_import(tmp_path):
    """The scan sees imports in function bodies too, so a lazy upward import is not a way around the rule."""
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from lineage.measure import footprints\n    from lineage import stages\n")
    assert imports(source) == {"lineage.measure", "lineage.measure.footprints", "lineage", "lineage.stages"} - {
        "lineage"
    }
    here = "models"
    assert [m for m in sorted(imports(source)) if LAYERS[group_of(m)] >= LAYERS[here]] == [
        "lineage.measure",
        "lineage.measure.footprints",
    ]


def import_edges(path: Path, known: set[str]) -> set[str]:
    """The ``lineage`` modules a file imports, each as the module Python loads for it: ``from lineage.plots import
    present`` loads lineage.plots.present (its package's __init__ runs first, as for any submodule, which is not an
    edge of its own); ``from lineage.train.loop import train`` loads lineage.train.loop. Function bodies count."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names
            }
    return found & known


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle of ``graph`` (module -> modules it imports) found by a depth-first walk, each as the path
    that closes it (first module repeated at the end)."""
    state: dict[str, str] = {}  # "open" while on the walk's path, "done" after
    found = []

    def walk(module: str, path: list[str]) -> None:
        state[module] = "open"
        for other in sorted(graph.get(module, ())):
            if state.get(other) == "open":
                found.append(path[path.index(other) :] + [other])
            elif other not in state:
                walk(other, [*path, other])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    return found


def test_no_module_of_the_package_imports_itself_round_a_cycle():
    """A cycle (a imports b imports a, at top level or inside a function) makes the import order matter and the
    modules one; every edge must point one way."""
    known = set(modules())
    graph = {name: import_edges(path, known) - {name} for name, path in modules().items()}
    assert not (found := cycles(graph)), f"import cycles: {found}"


def test_the_cycle_check_finds_a_lazy_cycle_and_not_a_package_importing_its_own_parts(tmp_path):
    a, b, c = (tmp_path / f"{n}.py" for n in "abc")
    a.write_text("from lineage.train.sweep import run_point\n")
    b.write_text("def f():\n    from lineage.train import loop\n")
    c.write_text("from lineage.plots import present\n")
    known = {"lineage.train.loop", "lineage.train.sweep", "lineage.plots", "lineage.plots.present"}
    graph = {"lineage.train.loop": import_edges(a, known), "lineage.train.sweep": import_edges(b, known)}
    assert cycles(graph) == [["lineage.train.loop", "lineage.train.sweep", "lineage.train.loop"]]
    assert import_edges(c, known) == {"lineage.plots.present"}
    assert cycles({"lineage.plots": {"lineage.plots.present"}, "lineage.plots.present": set()}) == []


def test_the_models_never_read_the_cost_catalogue():
    for name, path in modules().items():
        if group_of(name) == "models":
            assert not {m for m in imports(path) if group_of(m) == "measure"}, name


def test_nothing_in_the_repository_cites_a_file_that_is_not_in_it():
    """Code, tests, scripts and documents name files by their path; every path named must exist (a moved module
    leaves no pointer to nowhere)."""
    import re
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.sh", "*.toml", "Dockerfile", ".ci/run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    path = re.compile(
        r"(?<![\w/.-])((?:lineage|ui|app_pages|scripts|tests|docs|data|\.ci)/[\w/.-]*\w\.(?:py|md|jsonl|json|sh|png|txt))"
        r"(?!\w)"
    )
    assert path.findall("see `lineage/ops/kda.py` and data/x.jsonl.") == ["lineage/ops/kda.py", "data/x.jsonl"]
    missing = sorted(
        {
            (p, f)
            for f in tracked
            if (ROOT / f).exists() and f != "tests/test_architecture.py"  # this scan's own example above
            for p in path.findall((ROOT / f).read_text())
            if not (ROOT / p).exists()
        }
    )
    assert not missing, f"paths cited but not in the repository (path, where): {missing}"


DOC = ROOT / "docs" / "ARCHITECTURE.md"
DOTTED = r"`((?:lineage|ui)(?:\.\w+)+)"  # a backticked dotted name of the package or the app's helpers
NAME_IN_FILE = r"`([\w.]+)`\s*\(`((?:lineage|ui|app_pages)/[\w/]+\.py)`"  # "`name` (`path.py`": name defined there


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module, or an attribute reached from the longest importable module prefix."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _defines(path: Path, name: str) -> bool:
    """Whether the module at ``path`` defines ``name`` at its top level (a function, class or assignment)."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def test_the_architecture_document_names_only_what_exists_where_it_says():
    """Every dotted name docs/ARCHITECTURE.md gives resolves, and a name it places in a file is defined in that file
    (a function that moved leaves no pointer to its old home)."""
    import re

    text = DOC.read_text()
    dotted = sorted({m for m in re.findall(DOTTED, text) if not m.endswith(".py")})
    assert len(dotted) > 20, "the scan finds the document's names"
    unresolved = [name for name in dotted if not _resolves(name)]
    assert not unresolved, f"docs/ARCHITECTURE.md names what does not exist: {unresolved}"
    placed = re.findall(NAME_IN_FILE, text)
    assert placed, "the scan finds names placed in files"
    misplaced = [(n, p) for n, p in placed if not _defines(ROOT / p, n.split(".")[-1])]
    assert not misplaced, f"docs/ARCHITECTURE.md places these names in files that do not define them: {misplaced}"


def test_the_document_scan_catches_a_name_in_the_wrong_file():
    import re

    wrong = "`lineage.plots.format_bytes` (`lineage/plots/memory.py`) and `lineage.plots.no_such_builder`"
    ((name, path),) = re.findall(NAME_IN_FILE, wrong)
    assert not _defines(ROOT / path, name.split(".")[-1])
    assert _defines(ROOT / "lineage" / "units.py", "format_bytes")
    assert not _resolves(re.findall(DOTTED, wrong)[-1]) and _resolves("lineage.plots.format_bytes")
