"""Presenter mode turns pages into slides (AppTest): the narrative folds into expanders, the caps of the controls are
one line per page, and every chart is scaled for projection. Normal mode keeps the document."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.app.util import figures, run_page
from ui.controls import REASON, cap_note, joined_caps
from ui.display import html_table
from ui.presenter import PRESENT_KEY, PROJECTION

INTRO = {"kv_cache": "GPT-2 without a cache", "home": "From GPT-2 (2019)"}  # each page's first narrative words


def where_shown(at, text: str) -> tuple[int, int]:
    """(in expanders, anywhere) counts of Markdown blocks holding ``text``."""
    folded = sum(text in md.value for exp in at.expander for md in exp.markdown)
    return folded, sum(text in md.value for md in at.markdown)


def cap_captions(at) -> list[str]:
    """The captions that note caps (ui.controls' cap texts all end on why: every run stays fast for everyone)."""
    return [c.value for c in at.caption if "stays fast for everyone" in c.value]


@pytest.mark.parametrize("page", list(INTRO))
def test_the_narrative_folds_in_presenter_mode_only(page):
    assert where_shown(run_page(page), INTRO[page]) == (0, 1), "normal mode shows the narrative in the page"
    assert where_shown(run_page(page, **{PRESENT_KEY: True}), INTRO[page]) == (1, 1), "presenter mode folds it"


def test_caps_are_one_line_per_page_in_presenter_mode():
    """The Memory lab notes caps at two rows of controls: two lines normally, one line with both when presenting."""
    normal = cap_captions(run_page("memory_lab"))
    assert len(normal) == 2, normal
    presenting = cap_captions(run_page("memory_lab", **{PRESENT_KEY: True}))
    assert len(presenting) == 1, presenting
    assert presenting[0] == joined_caps(normal), "both notes, their shared reason said once"
    assert presenting[0].count(REASON) == 1 and all(n.count(REASON) == 1 for n in normal)


def test_a_line_of_caps_gives_their_reason_once_at_its_end():
    notes = [cap_note("T", 64), cap_note("Heads", 8), "Seed 3: every page's."]
    line = joined_caps(notes)
    assert line.count(REASON) == 1 and line.index(REASON) > line.index("Heads is capped at 8")
    assert line.startswith("T is capped at 64 on ") and ". Heads is capped at 8 on " in line
    assert line.endswith(f"({REASON}). Seed 3: every page's.")
    assert joined_caps(["No reason here."]) == "No reason here."


def test_a_row_of_controls_notes_its_caps_once():
    """KV cache: three capped sliders in one row, and one line naming the three caps (not one under each)."""
    notes = cap_captions(run_page("kv_cache"))
    assert len(notes) == 1 and all(name in notes[0] for name in ("T is capped", "Heads is", "Head dim is")), notes


def test_every_chart_is_scaled_for_projection():
    for fig in figures(run_page("kv_cache", **{PRESENT_KEY: True})):
        layout = fig["layout"]
        assert layout["font"]["size"] >= PROJECTION.text
        for name, axis in layout.items():
            if name.startswith(("xaxis", "yaxis")):
                assert axis["tickfont"]["size"] >= PROJECTION.tick, name
        for trace in fig["data"]:
            if trace.get("type") == "scatter" and "lines" in trace.get("mode", "lines"):
                assert trace["line"]["width"] >= PROJECTION.min_line


def test_tables_become_projector_sized_html_with_exact_bytes_on_hover():
    # Streamlit's sortable table is a canvas that no presenter style reaches: presenter mode writes the Memory & cost
    # table as HTML (sized by the presenter CSS), each byte count's exact value its hover text; normal mode keeps it.
    normal = run_page("memory_cost")
    assert len(normal.dataframe) >= 1 and not [m for m in normal.markdown if "<table" in m.value]
    presenting = run_page("memory_cost", **{PRESENT_KEY: True})
    tables = [m.value for m in presenting.markdown if "<table" in m.value]
    assert len(tables) == 1  # and only the exact-counts table in its expander stays a sortable one:
    assert len(presenting.dataframe) == len(normal.dataframe) - 1
    hovers = re.findall(r'title="([\d,]+) bytes">([^<]+)</td>', tables[0])
    assert hovers, "no byte count carries its exact value"
    for exact, shown in hovers:
        assert int(exact.replace(",", "")) >= 0 and ("B" in shown), (exact, shown)


def test_the_time_floors_read_to_three_figures_in_every_row():
    """Memory & cost's floors, as a slide shows them: three figures each, a trailing zero kept ("22.0", not "22" beside
    "11.54"), read back to the table's value."""
    presenting = run_page("memory_cost", **{PRESENT_KEY: True})
    table = next(m.value for m in presenting.markdown if "<table" in m.value)
    head = re.findall(r"<th>([^<]*)</th>", table)
    col = head.index("floor, ms/token")
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", table)[1:]]
    floors = [r[col] for r in rows]
    assert len(floors) >= 5 and all(re.fullmatch(r"\d{1,2}\.\d+|0\.\d+|\d[\d,]{2,}", f) for f in floors), floors
    assert all(len(f.replace(".", "").lstrip("0")) == 3 for f in floors if float(f.replace(",", "")) < 100), floors


def test_the_memory_lab_tables_are_html_when_presenting():
    presenting = run_page("memory_lab", **{PRESENT_KEY: True})
    assert not presenting.dataframe
    assert len([m for m in presenting.markdown if "<table" in m.value]) >= 2  # the overview and an experiment's


def test_an_html_table_escapes_what_it_shows():
    df = pd.DataFrame({"model": ["<script>x</script>"], "cache bytes": [1234567.0], "missing": [float("nan")]})
    out = html_table(df, formats={"cache bytes": lambda v: f"{v / 1e6:.1f} MB"}, exact={"cache bytes": str})
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert '<td title="1234567.0">1.2 MB</td>' in out and "<td></td>" in out


def test_an_html_table_keeps_each_column_s_type_in_a_row_of_mixed_types():
    """A whole-number column beside a float column is written as whole numbers, as the sortable table shows it (a
    row taken as one Series turned 48 into 48.0, and the lab's formats wrote "48.00")."""
    from lineage.lab.common import people_formats

    df = pd.DataFrame({"holds N": [48, 16], "error": [0.5, 1.25], "stored": [1536, 256]}, index=["a", "b"])
    out = html_table(df, formats=people_formats(df), index=True)
    assert "<td>48</td>" in out and "<td>1,536</td>" in out and "<td>1.25</td>" in out, out
    assert ".00</td>" not in out
