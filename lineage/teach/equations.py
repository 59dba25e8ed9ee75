"""Equation ↔ code for every stage: the update in a few lines with the change from the previous stage marked, and
the few lines of the running code that make that change, cut from the source at run time.

The code is cut at explicit markers (in :mod:`lineage.ops.recurrence`, :mod:`lineage.ops.softmax` and
:mod:`lineage.ops.kv_cache`), comment lines in the source around each region a page shows:

    # [panel:NAME] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
    ...the lines shown...
    # [panel:NAME] end

:func:`panel` finds each region by NAME (which must have exactly one start and one end) and leaves every marker line
out, so what a page shows is the code that runs, with its file, function and line numbers. A marker that is missing,
duplicated or out of order raises ValueError (and the tests fail) instead of showing something stale. Code without
markers can still be shown as a whole function (:func:`code_lines`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import threading
from dataclasses import dataclass
from types import ModuleType

from lineage import schedules
from lineage.ops import gated_deltanet2, kv_cache, recurrence, softmax

# CPython 3.11 keeps ast.parse's recursion depth per interpreter, not per call, so two threads parsing at once (the
# app's sessions are threads) can fail with "SystemError: AST constructor recursion depth mismatch"
# (python/cpython#106905; seen here with 12 sessions opening KDA at once, Python 3.11.7). Each source is parsed once,
# one parse at a time.
_PARSE_LOCK = threading.Lock()


@functools.cache
def _parsed(source: str) -> ast.Module:
    """``ast.parse(source)``, once per source and under :data:`_PARSE_LOCK` (the tree is only read)."""
    with _PARSE_LOCK:
        return ast.parse(source)


@dataclass(frozen=True)
class Excerpt:
    """Lines of one function's source: ``lines`` are (line number in the file, text), in order.

    ``elided`` holds the line numbers before which lines of code were left out (shown as "…"); None means wherever the
    numbers jump (a panel's regions skip their marker lines without leaving code out).
    """

    qualname: str
    path: str  # the file, relative to the repository ("lineage/ops/recurrence.py")
    lines: tuple[tuple[int, str], ...]
    elided: frozenset[int] | None = None

    @property
    def text(self) -> str:
        """The lines, with "…" where lines were left out."""
        out: list[str] = []
        last = None
        for n, line in self.lines:
            if last is not None and (n > last + 1 if self.elided is None else n in self.elided):
                out.append("…")
            out.append(line)
            last = n
        return "\n".join(out)

    @property
    def where(self) -> str:
        first, last = self.lines[0][0], self.lines[-1][0]
        return f"{self.path}, {self.qualname}, lines {first}–{last}"


def _repo_path(path: str) -> str:
    return path[path.rfind("lineage/") :] if "lineage/" in path else path


def _dedent(numbered: list[tuple[int, str]]) -> tuple[tuple[int, str], ...]:
    """Strip the indent the lines share (blank lines aside), keeping their indent relative to one another."""
    indent = min((len(line) - len(line.lstrip()) for _, line in numbered if line.strip()), default=0)
    return tuple((n, line[indent:]) for n, line in numbered)


def code_lines(fn, needles: tuple[str, ...] | None = None) -> Excerpt:
    """The lines of ``fn``'s source that contain any of ``needles`` (each must match at least once), or the whole
    function when ``needles`` is None. Raises ValueError naming a needle that matches nothing. For modules without
    panel markers; :mod:`lineage.ops.recurrence` is cut at its markers (:func:`panel`)."""
    source, start = inspect.getsourcelines(fn)
    path = _repo_path(inspect.getsourcefile(fn) or "?")
    numbered = [(start + i, line.rstrip("\n")) for i, line in enumerate(source)]
    if needles is None:
        return Excerpt(fn.__qualname__, path, tuple(numbered))
    missing = [m for m in needles if not any(m in line for _, line in numbered)]
    if missing:
        raise ValueError(f"{fn.__qualname__} has no line containing {missing}: the code changed, update the needles")
    return Excerpt(
        fn.__qualname__, path, _dedent([(n, line) for n, line in numbered if any(m in line for m in needles)])
    )


# A code-panel marker line: "# [panel:NAME] start ..." or "# [panel:NAME] end", alone on its line.
MARKER = re.compile(r"^\s*# \[panel:(?P<name>[^\]]+)\] (?P<edge>start|end)\b")
_ANY_MARKER = re.compile(r"^\s*# \[panel:")


def is_marker(line: str) -> bool:
    """Whether a source line is a code-panel marker (never shown in a panel)."""
    return _ANY_MARKER.match(line) is not None


def panel_span(source: str, name: str, where: str = "the source") -> tuple[int, int]:
    """Line numbers (1-based) of the start and end markers of panel ``name`` in ``source``.

    Raises ValueError if either marker is missing or appears more than once, if the end comes before the start, or if
    no line lies between them; ``where`` names the source in the message.
    """
    found: dict[str, list[int]] = {"start": [], "end": []}
    for n, line in enumerate(source.splitlines(), start=1):
        m = MARKER.match(line)
        if m is not None and m["name"] == name:
            found[m["edge"]].append(n)
    for edge, lines in found.items():
        if not lines:
            raise ValueError(
                f"{where} has no '# [panel:{name}] {edge}' marker: the code panel {name!r} lost its marker, put it "
                "back around the lines to show or update lineage.teach.equations"
            )
        if len(lines) > 1:
            raise ValueError(
                f"{where} has the '# [panel:{name}] {edge}' marker {len(lines)} times (lines {lines}): "
                "a marker must be unique"
            )
    start, end = found["start"][0], found["end"][0]
    if end < start:
        raise ValueError(
            f"{where}: the end marker of panel {name!r} (line {end}) comes before its start (line {start})"
        )
    if end == start + 1:
        raise ValueError(f"{where}: panel {name!r} (lines {start}–{end}) has no line between its markers")
    return start, end


def panel_names(source: str) -> set[str]:
    """The names of every panel marker in ``source`` (starts and ends alike)."""
    return {m["name"] for m in map(MARKER.match, source.splitlines()) if m is not None}


def _qualname_at(tree: ast.Module, line: int) -> str:
    """The qualified name of the innermost function or class whose body holds ``line`` ("<module>" if none)."""
    names: list[str] = []
    node: ast.AST = tree
    while True:
        inner = [
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and child.lineno <= line <= (child.end_lineno or child.lineno)
        ]
        if not inner:
            return ".".join(names) or "<module>"
        node = inner[0]
        names.append(node.name)


def panel(module: ModuleType, *names: str) -> Excerpt:
    """The lines between the markers of the panels ``names`` in ``module``'s source, in file order, with the marker
    lines left out and "…" wherever code (not only blank lines) lies between two regions. All regions must lie in one
    function (the excerpt's ``qualname``). Raises ValueError for a missing, duplicated or misplaced marker (see
    :func:`panel_span`).
    """
    if not names:
        raise ValueError("name at least one panel")
    source = inspect.getsource(module)
    path = _repo_path(inspect.getsourcefile(module) or "?")
    file_lines = source.splitlines()
    spans = sorted(panel_span(source, name, path) for name in names)
    kept = sorted({n for start, end in spans for n in range(start + 1, end) if not is_marker(file_lines[n - 1])})
    tree = _parsed(source)
    # each region's owner: the function holding its last line of code (a comment may trail the function's last line)
    owners = set()
    for start, end in spans:
        code = [n for n in range(start + 1, end) if file_lines[n - 1].strip()[:1] not in ("", "#")]
        owners.add(_qualname_at(tree, code[-1] if code else start + 1))
    if len(owners) > 1:
        raise ValueError(f"panels {names} of {path} lie in different functions ({sorted(owners)}): show them apart")
    # "…" where code was left out between two kept lines; marker lines and blank lines are not code
    elided = frozenset(
        n
        for last, n in zip(kept, kept[1:], strict=False)
        if any(file_lines[i - 1].strip() and not is_marker(file_lines[i - 1]) for i in range(last + 1, n))
    )
    return Excerpt(owners.pop(), path, _dedent([(n, file_lines[n - 1]) for n in kept]), elided)


@dataclass(frozen=True)
class Panels:
    """The regions of ``module``'s source between the markers of the panels ``names`` (see :func:`panel`)."""

    module: ModuleType
    names: tuple[str, ...]

    def excerpt(self) -> Excerpt:
        return panel(self.module, *self.names)


Code = Panels | tuple[object, tuple[str, ...] | None]  # panels, or (function, needles or None for all of it)


def excerpt(code: Code) -> Excerpt:
    """One entry of a stage's ``code``: marked panels, or a function (whole, or the lines holding the needles)."""
    if isinstance(code, Panels):
        return code.excerpt()
    fn, needles = code
    return code_lines(fn, needles)


@dataclass(frozen=True)
class StageEquation:
    """A stage's update as Markdown with the change marked (``:orange[**…**]``), what changed in words, the code."""

    text: str
    change: str
    code: tuple[Code, ...]

    def excerpts(self) -> list[Excerpt]:
        return [excerpt(c) for c in self.code]


# The reference recurrence's lines (recurrent_memory's loop), each region with the comments that write its equation.
_DECAY, _READ, _WRITE, _OUT = "loop-decay", "loop-read", "loop-write", "loop-output"

EQUATIONS: dict[str, StageEquation] = {
    "gpt2": StageEquation(
        "oₙ = softmax(qₙ :orange[**K₁…ₙ**]ᵀ / √d) :orange[**V₁…ₙ**], with :orange[**K₁…ₙ and V₁…ₙ projected again for "
        "every n**]",
        "every step projects the whole prefix again",
        (Panels(softmax, ("recompute-loop",)),),
    ),
    "kv_cache": StageEquation(
        ":orange[**K ← [K; kₙ], V ← [V; vₙ]**], then oₙ = softmax(qₙ Kᵀ / √d) V",
        "keep the keys and values: one new row per token",
        (
            Panels(softmax, ("cached-loop",)),
            Panels(kv_cache, ("buffer-room", "buffer-write")),
        ),
    ),
    "linear_attention": StageEquation(
        "Sₜ = Sₜ₋₁ + :orange[**φ(kₜ)**] vₜᵀ, oₜ = Sₜᵀ :orange[**φ(qₜ)**] / zₜᵀ :orange[**φ(qₜ)**]",
        "a feature map φ replaces the softmax, so the past folds into one K × V state",
        (Panels(recurrence, (_WRITE, _OUT)),),
    ),
    "deltanet": StageEquation(
        "Sₜ = Sₜ₋₁ + βₜ kₜ (vₜ :orange[**− Sₜ₋₁ᵀ kₜ**])ᵀ",
        "read what the key holds before writing, and write only the correction",
        (Panels(recurrence, (_READ, _WRITE)),),
    ),
    "mamba2": StageEquation(
        "Sₜ = :orange[**αₜ**] Sₜ₋₁ + kₜ vₜᵀ, with αₜ in (0, 1]",
        "one decay αₜ per head, applied to the whole state before the write",
        (Panels(recurrence, (_DECAY, _WRITE)),),
    ),
    "gla": StageEquation(
        "Sₜ = :orange[**Diag(αₜ)**] Sₜ₋₁ + kₜ vₜᵀ, with :orange[**0 < αₜ ≤ 1 in each of the K channels**]",
        "the decay becomes a vector, one α per key channel (row of the state); the write still only adds. Gated "
        "DeltaNet, next, returns to one gate per head to bring in the delta rule, and KDA then joins the two",
        (Panels(recurrence, (_DECAY, _WRITE)),),
    ),
    "gated_deltanet": StageEquation(
        "Sₜ = :orange[**αₜ**] Sₜ₋₁ + βₜ kₜ (vₜ − (:orange[**αₜ**] Sₜ₋₁)ᵀ kₜ)ᵀ",
        "DeltaNet's write after Mamba-2's scalar decay: decay first, then correct",
        (Panels(recurrence, (_DECAY, _READ, _WRITE)),),
    ),
    "kda": StageEquation(
        "Sₜ = :orange[**Diag(αₜ)**] Sₜ₋₁ + βₜ kₜ (vₜ − (:orange[**Diag(αₜ)**] Sₜ₋₁)ᵀ kₜ)ᵀ",
        "over GLA, KDA adds the delta rule's correction (it can overwrite a fact); over Gated DeltaNet, a decay per "
        "key channel (it can keep one fact while the other channels forget)",
        (Panels(recurrence, (_DECAY, _READ, _WRITE)),),
    ),
    "hybrid": StageEquation(
        "layer ℓ = :orange[**MLA (softmax over a cache)**] when ℓ is a multiple of 4, KDA (a fixed state) otherwise",
        "a few softmax layers among the KDA layers",
        ((schedules.periodic_schedule, None),),
    ),
    "gated_deltanet2": StageEquation(
        "Sₜ = (I − kₜ (:orange[**bₜ ⊙**] kₜ)ᵀ) Diag(αₜ) Sₜ₋₁ + kₜ (:orange[**wₜ ⊙**] vₜ)ᵀ, with :orange[**bₜ, wₜ in "
        "[0, 1] per channel**]",
        "KDA's one βₜ split in two: an erase gate bₜ on the key axis and a write gate wₜ on the value axis "
        "(bₜ = wₜ = βₜ on every channel is KDA again)",
        (Panels(gated_deltanet2, ("gdn2-decay", "gdn2-erase", "gdn2-write")),),
    ),
}


# DeltaNet's chunked form as it runs: the WY/UT transform (its triangular solve included), then chunk_memory's numbered
# steps 1–5, each marked in its source (the speed knob that runs steps 2–5 on spans of chunks is left out).
CHUNKED_DELTA: tuple[Code, ...] = (
    (recurrence.ut_transform, None),
    Panels(recurrence, tuple(f"chunk-step-{n}" for n in range(1, 6))),
)


def chunked_delta() -> list[Excerpt]:
    """The chunked delta rule's excerpts (see ``CHUNKED_DELTA``)."""
    return [excerpt(c) for c in CHUNKED_DELTA]


def panels_shown() -> list[Panels]:
    """Every marked panel a page shows: the stages' and the chunked form's."""
    codes = [c for eq in EQUATIONS.values() for c in eq.code] + list(CHUNKED_DELTA)
    return [c for c in codes if isinstance(c, Panels)]


def equation(stage_key: str) -> StageEquation:
    if stage_key not in EQUATIONS:
        raise ValueError(f"stage must be one of {', '.join(EQUATIONS)}, got {stage_key!r}")
    return EQUATIONS[stage_key]
