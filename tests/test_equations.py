"""Equation ↔ code: every stage's excerpt is cut from the code that runs, shows the lines that make its change, and
fails loudly when a marker goes missing; DeltaNet's chunked form shows the WY/UT transform with its solve and
chunk_memory's numbered steps in order. The code of lineage/ops/recurrence.py is cut at explicit panel markers."""

from __future__ import annotations

import inspect
import re

import pytest

from lineage.ops import recurrence
from lineage.stages import all_stages
from lineage.teach.equations import (
    EQUATIONS,
    chunked_delta,
    code_lines,
    equation,
    is_marker,
    panel,
    panel_names,
    panel_span,
    panels_shown,
)

SOURCE = inspect.getsource(recurrence)


def test_every_stage_has_an_equation_with_a_marked_change_and_code():
    assert {s.key for s in all_stages()} <= set(EQUATIONS)
    for key, eq in EQUATIONS.items():
        assert ":orange[**" in eq.text and eq.change, key
        excerpts = eq.excerpts()
        assert excerpts and all(x.lines for x in excerpts), key


@pytest.mark.parametrize(
    ("stage", "must_show", "must_not_show"),
    [
        ("linear_attention", "S = S + k_t", "read_t ="),  # adds, never reads before writing
        ("deltanet", "read_t =", "alpha["),  # reads before writing, no gate
        ("mamba2", "alpha[", "read_t ="),  # decays, adds
        ("gated_deltanet", "read_t =", None),
        ("kda", "alpha[", None),
    ],
)
def test_each_excerpt_shows_its_change_and_only_a_few_lines(stage, must_show, must_not_show):
    text = "\n".join(x.text for x in equation(stage).excerpts())
    assert must_show in text
    if must_not_show:
        assert must_not_show not in text
    total = sum(len(x.lines) for x in equation(stage).excerpts())
    source_len = len(code_lines(recurrence.recurrent_memory).lines)
    assert total <= 12 < source_len  # a few lines, not the whole loop


def test_excerpt_line_numbers_are_the_files():
    with open(recurrence.__file__) as f:
        lines = f.read().splitlines()
    for x in equation("deltanet").excerpts() + chunked_delta():
        assert x.path == "lineage/ops/recurrence.py"
        for n, text in x.lines:
            assert lines[n - 1].strip() == text.strip()


def test_an_ellipsis_stands_only_where_code_was_left_out():
    # deltanet's regions (read, then write) follow each other with only marker lines between: no "…"
    assert "…" not in equation("deltanet").excerpts()[0].text
    # mamba2 skips the read between its decay and its write
    assert equation("mamba2").excerpts()[0].text.count("…") == 1


def test_chunked_delta_shows_the_triangular_solve_and_the_numbered_steps_in_order():
    excerpts = chunked_delta()
    text = "\n".join(x.text for x in excerpts)
    assert "def ut_transform" in text and "(I + StrictTril(diag(β) A_kk))⁻¹" in text
    assert "unit_lower_inverse(" in text or "solve_triangular(" in text  # the solve itself, in running code
    steps = [line.strip()[:4] for line in text.splitlines() if re.match(r"\s*# \d\.", line)]
    assert steps == ["# 1.", "# 2.", "# 3.", "# 4.", "# 5."], steps
    assert [x.qualname for x in excerpts] == ["ut_transform", "chunk_memory"]  # the steps in one function
    for shown in ("decayed_products(", "U, W = ut_transform(", "u_i = torch.baddbmm", "o = torch.baddbmm("):
        assert shown in text, shown


# ---- the panel markers -------------------------------------------------------------------------------------------


def _marker_lines(name: str, edge: str) -> list[int]:
    pattern = re.compile(rf"^\s*# \[panel:{re.escape(name)}\] {edge}\b")
    return [n for n, line in enumerate(SOURCE.splitlines(), start=1) if pattern.match(line)]


def test_every_panel_shown_has_one_start_and_one_end_marker_in_recurrence():
    shown = {name for p in panels_shown() if p.module is recurrence for name in p.names}
    assert shown, "no page shows a marked panel of recurrence.py"
    for name in sorted(shown):
        starts, ends = _marker_lines(name, "start"), _marker_lines(name, "end")
        assert len(starts) == 1 and len(ends) == 1, (name, starts, ends)
        assert starts[0] + 1 < ends[0], (name, starts, ends)
    # no marker is left over from a panel no page shows, and every marker line is well formed
    assert panel_names(SOURCE) == shown
    malformed = [
        line
        for line in SOURCE.splitlines()
        if is_marker(line) and not re.match(r"^\s*# \[panel:[^\]]+\] (start|end)\b", line)
    ]
    assert not malformed, malformed


@pytest.mark.parametrize(
    ("module", "name"),
    sorted({(p.module, n) for p in panels_shown() for n in p.names}, key=lambda mn: (mn[0].__name__, mn[1])),
    ids=lambda x: getattr(x, "__name__", x),
)
def test_each_panel_compiles_and_shows_no_marker(module, name):
    code = panel(module, name).text
    assert "[panel:" not in code and "…" not in code
    compile(code, f"<panel {name}>", "exec")  # a region of whole statements, dedented


def test_no_excerpt_shows_a_marker():
    excerpts = [x for eq in EQUATIONS.values() for x in eq.excerpts()] + chunked_delta()
    for x in excerpts:
        assert not any(is_marker(line) or "[panel:" in line for _, line in x.lines), x.where


def test_a_missing_or_doubled_marker_is_an_error():
    region = "x = 1\n# [panel:a] start — code-panel marker\ny = 2\n# [panel:a] end\n"
    assert panel_span(region, "a") == (2, 4)
    with pytest.raises(ValueError, match=r"no '# \[panel:b\] start' marker"):
        panel_span(region, "b")
    with pytest.raises(ValueError, match=r"no '# \[panel:a\] end' marker"):
        panel_span(region.replace("# [panel:a] end", "z = 3"), "a")
    with pytest.raises(ValueError, match="2 times"):
        panel_span(region + region, "a")
    with pytest.raises(ValueError, match="comes before its start"):
        panel_span("# [panel:a] end\ny = 2\n# [panel:a] start\n", "a")
    with pytest.raises(ValueError, match="no line between"):
        panel_span("# [panel:a] start\n# [panel:a] end\n", "a")
    with pytest.raises(ValueError, match="no '# \\[panel:no-such-panel\\] start' marker"):
        panel(recurrence, "no-such-panel")


def test_a_needle_that_matches_nothing_is_an_error():
    with pytest.raises(ValueError, match="no line containing"):
        code_lines(recurrence.recurrent_memory, ("this line does not exist",))
    with pytest.raises(ValueError, match="stage must be one of"):
        equation("nope")


def test_the_softmax_and_kv_cache_panels_are_cut_at_markers_too():
    """Every module a page shows code from is cut at markers: one start and one end per panel, none left over."""
    by_module: dict = {}
    for p in panels_shown():
        by_module.setdefault(p.module, set()).update(p.names)
    assert {m.__name__ for m in by_module} >= {"lineage.ops.softmax", "lineage.ops.kv_cache", "lineage.ops.recurrence"}
    for module, shown in by_module.items():
        source = inspect.getsource(module)
        assert panel_names(source) == shown, module.__name__
        for name in shown:
            panel_span(source, name, module.__name__)  # raises for a missing or doubled marker
    kv = {x.qualname: x for x in equation("kv_cache").excerpts()}
    assert any("copy_(x)" in line for _, line in kv["SequenceBuffer.append"].lines)


def test_panels_read_in_many_threads_at_once_parse_each_source_once():
    # the app's sessions are threads; CPython 3.11's ast.parse is not safe in two at once (equations._PARSE_LOCK)
    from concurrent.futures import ThreadPoolExecutor

    from lineage.ops import recurrence
    from lineage.teach import equations

    equations._parsed.cache_clear()
    with ThreadPoolExecutor(12) as pool:
        shown = list(pool.map(lambda _: equations.panel(recurrence, "chunk-step-2"), range(48)))
    assert all(excerpt == shown[0] for excerpt in shown) and shown[0].lines
    assert equations._parsed.cache_info().currsize == 1  # one tree kept, for the one source
