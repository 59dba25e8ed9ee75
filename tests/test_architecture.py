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
