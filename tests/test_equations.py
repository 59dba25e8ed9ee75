"""Equation ↔ code: every stage's excerpt is cut from the code that runs, shows the lines that make its change, and
fails loudly when a marker stops matching; DeltaNet's chunked form shows the WY/UT transform with its solve."""

from __future__ import annotations

import pytest

from lineage.ops import recurrence
from lineage.stages import all_stages
from lineage.teach.equations import EQUATIONS, chunked_delta, code_lines, equation


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
    x = equation("deltanet").excerpts()[0]
    with open(recurrence.__file__) as f:
        lines = f.read().splitlines()
    for n, text in x.lines:
        assert lines[n - 1].strip() == text.strip()


def test_chunked_delta_shows_the_triangular_solve_and_the_numbered_steps():
    text = "\n".join(x.text for x in chunked_delta())
    assert "def ut_transform" in text and "(I + StrictTril(diag(β) A_kk))⁻¹" in text
    assert "unit_lower_inverse(" in text or "solve_triangular(" in text  # the solve itself, in running code
    for step in ("# 1.", "# 2.", "# 3.", "# 4.", "# 5."):
        assert step in text


def test_a_marker_that_matches_nothing_is_an_error():
    with pytest.raises(ValueError, match="no line containing"):
        code_lines(recurrence.recurrent_memory, ("this line does not exist",))
    with pytest.raises(ValueError, match="stage must be one of"):
        equation("nope")
