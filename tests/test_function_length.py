"""No function in the package, the app's helpers or its pages runs past MAX_BODY_LINES lines (docstring aside): a
longer one is split into parts that each say what they do (docs/ARCHITECTURE.md, "Adding things")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("lineage", "ui", "app_pages")
MAX_BODY_LINES = 80
# The stated exception: the chunked form runs its numbered steps in one body, to read beside chunk_memory_minimal.
EXEMPT = {("lineage/ops/recurrence.py", "chunk_memory")}


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _is_data_table(body: list[ast.stmt]) -> bool:
    """A body that only returns one literal table (a dict, list or tuple of constants and names): data, not steps."""
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    table = body[0].value
    literal = (ast.Constant, ast.Name, ast.Attribute, ast.Dict, ast.List, ast.Tuple, ast.keyword, ast.expr_context)
    return isinstance(table, (ast.Dict, ast.List, ast.Tuple)) and all(isinstance(n, literal) for n in ast.walk(table))


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's last line (0 for a docstring alone)."""
    body = node.body[1:] if _is_docstring(node.body[0]) else node.body
    if not body or _is_data_table(body):
        return 0
    return node.end_lineno - body[0].lineno + 1


def long_functions(source: str, where: str) -> list[tuple[str, str, int]]:
    """(file, function, body lines) for every function of ``source`` over the limit, nested ones and methods too."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (where, node.name) not in EXEMPT:
            n = body_lines(node)
            if n > MAX_BODY_LINES:
                found.append((where, node.name, n))
    return found


def test_no_function_body_runs_past_the_limit():
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += long_functions(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, f"split these (file, function, body lines over {MAX_BODY_LINES}): {found}"


def test_the_length_scan_counts_the_body_and_not_the_docstring_or_a_table():
    lines = "\n".join(f"    x{i} = {i}" for i in range(MAX_BODY_LINES))
    doc = '    """' + "\n".join(["A docstring."] * 30) + '"""\n'
    at_limit = f"def f():\n{doc}{lines}\n"
    assert long_functions(at_limit, "m.py") == []
    over = f"def g():\n{doc}{lines}\n    return x0\n"
    assert long_functions(over, "m.py") == [("m.py", "g", MAX_BODY_LINES + 1)]
    nested = (
        f"def outer():\n    def inner():\n{lines.replace('    ', '        ')}\n        return 1\n    return inner\n"
    )
    assert ("m.py", "inner", MAX_BODY_LINES + 1) in long_functions(nested, "m.py")
    table = "def t():\n    return {\n" + "\n".join(f"        'k{i}': {i}," for i in range(100)) + "\n    }\n"
    assert long_functions(table, "m.py") == []
    assert long_functions(over.replace("def g", "def chunk_memory"), "lineage/ops/recurrence.py") == []
