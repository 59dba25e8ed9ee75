"""The home page (app_pages/home.py): the lineage table, the GPT-2s-in-one-Kimi-K3 ratio, a link to every stage
page and the bytes one layer of each stage holds, as ``lineage`` computes them."""

from __future__ import annotations

import numpy as np

from lineage import mechanisms, schedules, stages
from lineage.measure import footprints
from lineage.plots.memory import short_title
from tests.app.util import figure, markdown_table, metrics, run_page
from ui.nav import PAGES


def test_home_page():
    at = run_page("home")
    rows = markdown_table(at, "Stage")
    assert [r["Stage"] for r in rows] == [s.listed_title for s in stages.all_stages()]
    assert rows[-1]["Stage"] == "Gated DeltaNet-2 (after the article)"  # the stage after the article says so
    assert [r["Year"] for r in rows] == [str(s.year) for s in stages.all_stages()]
    assert [r["Memory mechanism"] for r in rows] == [s.summary for s in stages.all_stages()]
    assert [r["Problem solved"] for r in rows] == [s.problem_solved for s in stages.all_stages()]
    assert [r["Cost introduced"] for r in rows] == [s.cost_introduced for s in stages.all_stages()]
    assert not at.table and not at.dataframe  # the home page loads no Arrow table machinery before its chart

    k3 = schedules.KIMI_K3_CONFIG["total_params"]
    assert metrics(at)["Kimi K3 parameters (its config)"] == f"{k3 / 1e12:g}T" == "2.78T", "as stated, not 2,780,…"
    assert metrics(at)["GPT-2s in one Kimi K3 (its config's)"] == f"{int(k3 / 124e6):,}"  # 2.78T / 124M
    assert metrics(at)["GPT-2s in one Kimi K3 (the article's)"] == f"{int(2.8e12 / 124e6):,}" == "22,580"
    text = " ".join(m.value for m in at.markdown)
    assert f"2.78T / 124M = {k3 / 124e6:,.1f}" in text and f"2.8T / 124M = {2.8e12 / 124e6:,.1f}" in text
    assert f"**{int(k3 / 124e6):,}**" in text and f"{k3 / 124_439_808:,.0f}" in text
    assert any("secondary source" in c.value and "2607.24653" in c.value for c in at.caption)

    registered = {entry.stage: entry for entry in PAGES if entry.stage}
    links = {link.proto.page for link in at.get("page_link")}
    stage_links = {registered[s.key].url_path for s in stages.all_stages() if s.key in registered}
    assert stage_links <= links, "every stage with a page is linked from its cell"
    others = {p.url_path for p in PAGES if not p.stage}  # a pointer beyond the grid (Learned memory's) names a page
    assert links - stage_links <= others
    cells = stages.grid()
    assert len(cells) == len(stages.grid_rules()) * len(stages.GRID_GATES)
    assert stages.grid_title(cells) in [h.value for h in at.subheader]  # the heading counts the grid it shows
    rows = [f"**{mechanisms.write_rule(r).name}** write" for r in stages.grid_rules()]
    assert [m.value for m in at.markdown if m.value in rows] == rows, "one row per write rule, named by its definition"
    assert all(mechanisms.write_rule(r).gloss in " ".join(m.value for m in at.markdown) for r in stages.grid_rules())
    in_grid = [s.key for in_cell in cells.values() for s in in_cell]
    assert sorted(in_grid) == sorted(s.key for s in stages.all_stages() if s.in_grid), "every grid stage drawn once"

    chart = figure(at, "Bytes one layer holds")
    for s in stages.all_stages():  # every stage on exactly one line (stages holding the same bytes share one)
        (line,) = [trace for trace in chart["data"] if short_title(s.key) in trace["name"].split(" · ")]
        np.testing.assert_array_equal(line["y"], footprints.memory_per_layer(s.key, np.asarray(line["x"])))
    # the hybrid's saving against the same layers all MLA, drawn beside it (the article's "−75%")
    (baseline,) = [trace for trace in chart["data"] if trace["name"].startswith("All-MLA")]
    hybrid = next(trace for trace in chart["data"] if trace["name"] == "Hybrid")
    cut = 1 - np.asarray(hybrid["y"])[-1] / np.asarray(baseline["y"])[-1]
    assert any(f"−{cut:.1%} against all-MLA" in a["text"] for a in chart["layout"]["annotations"])
    assert chart["layout"]["xaxis"]["type"] == chart["layout"]["yaxis"]["type"] == "log"


def test_two_stages_in_one_cell_are_both_drawn_and_counted(monkeypatch):
    """A successor in a full cell (here GLA's page put beside Mamba-2's) is drawn in the cell, and the heading counts
    it, instead of one stage pushing the other off the grid."""
    real = stages.grid

    def crowded():
        cells = real()
        cells[("additive", "scalar")] += (stages.stage("gla"),)
        return cells

    monkeypatch.setattr(stages, "grid", crowded)
    at = run_page("home")
    n = stages.count_words(sum(map(len, real().values())) + 1)  # the table's stages in the grid, and GLA again
    assert f"One recurrence, six cells, {n} stages" in [h.value for h in at.subheader]
    links = [link.proto.page for link in at.get("page_link")]
    assert links.count("gla") == 2 and links.count("mamba2") == 1


def test_gated_deltanet2_shares_kdas_cell_on_the_home_grid():
    """The stage after the article is in the table: the grid draws it in KDA's cell (the delta rule, a gate per key
    channel) and counts seven stages in six cells."""
    at = run_page("home")
    assert [s.key for s in stages.grid()[("delta", "channel")]] == ["kda", "gated_deltanet2"]
    assert "One recurrence, six cells, seven stages" in [h.value for h in at.subheader]
    links = [link.proto.page for link in at.get("page_link")]
    assert links.count("gated_deltanet2") >= 1 and links.count("kda") >= 1
