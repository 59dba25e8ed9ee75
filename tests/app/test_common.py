"""What every page shares (ui.display, ui.running): the Markdown tables the pages print read back as written, and an
error from lineage becomes a message on the page, not a traceback."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.util import parse_markdown_table
from ui import display


def test_markdown_table_escapes_cells_and_reads_back():
    rows = [{"name": "a|b", "path": "C:\\x\\|y", "n": 3}, {"name": "two\nlines", "path": "", "n": 4.5}]
    text = display.markdown_table(rows)
    assert text.splitlines()[:2] == ["| name | path | n |", "|---|---|---|"]
    back = parse_markdown_table(text)
    assert back == [
        {"name": "a|b", "path": "C:\\x\\|y", "n": "3"},
        {"name": "two lines", "path": "", "n": "4.5"},
    ]
    with pytest.raises(ValueError, match="at least one row"):
        display.markdown_table([])


def test_a_lineage_error_becomes_a_message():
    def page():
        from lineage.teach import stage_runs
        from ui.running import run_or_stop

        run_or_stop(stage_runs.run_stage, "kda", T=10**6)

    at = AppTest.from_function(page).run()
    assert not at.exception
    assert "T must be" in at.error[0].value
