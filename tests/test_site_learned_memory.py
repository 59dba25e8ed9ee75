"""The Learned memory page's recorded part is composed once (lineage.plots.learned_memory) and drawn twice: the static
site's screen opens with the capacity record — its headline, its two charts, its sentences and caption — before the
first recorded sweep, as the app's page does, with the numbers lineage.train.findings computes from the record.

A sweep may be appending to data/learned_memory_capacity.jsonl while these run, so each test copies the record (both
its parts, the CPU's and the GPU's) as it stands and points findings at the copies: the app, the site and the test
then read the same points, however many there are.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from lineage.plots import learned_memory as learned
from lineage.plots import mixer_title
from lineage.site import build, screens
from lineage.train import findings, sweep
from tests.app.util import rendered_markdown, run_page
from tests.test_site import app_figures, differences, read_page, site_figures

CAPACITY_CHARTS = ("learned_memory_capacity_pairs", "learned_memory_capacity_state")
CAPACITY_GRIDS = findings.capacity_grids()  # in the order of findings.capacity_records


@pytest.fixture
def capacity(tmp_path, monkeypatch) -> list[dict]:
    """The capacity record's points as they stand now (the CPU's part and the GPU's), read from copies that the app
    and the site read too."""
    if not findings.CAPACITY_RECORD.exists():
        pytest.skip("no capacity record in this copy")
    for name in ("CAPACITY_RECORD", "CAPACITY_GPU_RECORD"):
        path = getattr(findings, name)
        copy = tmp_path / path.name
        if path.exists():
            shutil.copyfile(path, copy)
        monkeypatch.setattr(findings, name, copy)
    results = findings.read_capacity()
    if not results:
        pytest.skip("the capacity record holds no finished point yet")
    return results


def _texts(screen: screens.Screen) -> list[str]:
    return [b.markdown for b in screen.blocks if isinstance(b, screens.Text)]


def test_the_site_opens_with_the_capacity_records_headline_and_sentences(capacity):
    summaries = findings.summarise(r["result"] for r in capacity)
    point = findings.capacity_headline(summaries, mixer_title)
    assert point is not None, "the record has softmax and a fixed state, so it has a headline"
    screen = screens.learned_memory_screen()
    assert [b.claim for b in screen.blocks if isinstance(b, screens.Claim)] == [point.claim]
    assert [(b.label, b.shown) for b in screen.blocks if isinstance(b, screens.Metric)] == [(point.label, point.shown)]
    texts = _texts(screen)
    said = [f"- {line}" for line in findings.falls_sentences(summaries, mixer_title)]
    said += ["**What each step of the lineage buys here:**"]
    said += [f"- {line}" for line in findings.step_sentences(summaries, mixer_title)]
    start = texts.index(said[0])
    assert texts[start : start + len(said)] == said
    if line := findings.capacity_sentence(summaries, mixer_title):
        assert line in texts
    grids = {f"data/{p.name}": len(sweep.points_of(sweep.read_grid(p))[0]) for p in CAPACITY_GRIDS}
    whole = len(sweep.points_of(sweep.read_grid(findings.CLUSTER_GRID))[0])
    assert findings.capacity_caption(capacity, grids, whole) in texts
    for record, grid in zip(findings.capacity_records(), grids, strict=True):  # each part: its points, its device
        if record.exists():
            part = sweep.read_results(record)
            assert f"{len(part)} points of the {grids[grid]} in {grid}" in " ".join(texts)
    keys = [f.key for f in screen.figures()]
    assert keys[:2] == list(CAPACITY_CHARTS), keys  # the capacity record first, as on the app's page
    if findings.RECORD.exists():
        first = "## The first recorded sweep: accuracy against the number of pairs, with and without the front end"
        assert texts.index("## Running out of room: one model size, more and more pairs") < texts.index(first)
        assert "learned_memory_pairs" in keys[2:]


def _recorded_lines(fig: dict) -> dict[str, dict]:
    return {t["name"]: t for t in fig["data"] if t["name"].endswith(" (recorded)")}


def test_the_sites_capacity_charts_are_the_record_at_each_settings_best_learning_rate(capacity):
    summaries = findings.summarise(r["result"] for r in capacity)
    figs = {f.key: screens.plain(f.fig) for f in screens.learned_memory_screen().figures()}
    rows = findings.by_pairs(summaries)
    pairs = figs["learned_memory_capacity_pairs"]
    T, width = rows[0].setting.seq_len, findings.main_width(summaries)
    assert pairs["layout"]["title"]["text"] == f"MQAR at {T} tokens, width {width}: the capacity record"
    lines = _recorded_lines(pairs)
    assert set(lines) == {f"{mixer_title(x.setting.mixer)} (recorded)" for x in rows}
    for name, trace in lines.items():
        xs = sorted(
            (x for x in rows if f"{mixer_title(x.setting.mixer)} (recorded)" == name), key=lambda x: x.setting.n_pairs
        )
        assert np.allclose(trace["customdata"], [x.setting.n_pairs for x in xs]), name
        assert np.allclose(trace["y"], [x.mean for x in xs]), name
        assert np.allclose(np.asarray(trace["y"]) + np.asarray(trace["error_y"]["array"]), [x.high for x in xs])
        assert np.allclose(np.asarray(trace["y"]) - np.asarray(trace["error_y"]["arrayminus"]), [x.low for x in xs])
    n, at_n = findings.capacity_rows(summaries)
    assert n is not None, "every mechanism of the record shares a number of pairs"
    state = figs["learned_memory_capacity_state"]
    assert state["layout"]["title"]["text"].startswith(f"MQAR, {n} pairs: accuracy against the numbers")
    assert state["layout"]["xaxis"]["type"] == "log"
    lines = _recorded_lines(state)
    assert set(lines) == {f"{mixer_title(x.setting.mixer)} (recorded)" for x in at_n}
    for name, trace in lines.items():
        xs = sorted(
            (x for x in at_n if f"{mixer_title(x.setting.mixer)} (recorded)" == name), key=lambda x: x.state_size()
        )
        assert np.allclose(trace["x"], [x.state_size() for x in xs]), name
        assert np.allclose(trace["y"], [x.mean for x in xs]), name


def test_the_app_and_the_site_show_the_same_headline_charts_and_sentences(capacity, tmp_path):
    at = run_page("learned_memory", seed=0)
    site = read_page(build.build(tmp_path / "site", only=("learned_memory",)).out / "learned_memory.html")
    # what both draw, from the same copy of the record
    page = learned.recorded_page(learned.read(findings.RECORD), capacity, learned.grids())
    point = page.headline
    assert point is not None
    assert at.markdown[0].value == f"**{point.claim}**"
    assert (at.metric[0].label, at.metric[0].value) == (point.label, point.shown)
    screen = screens.learned_memory_screen()
    assert [(b.claim, b.label) for b in screen.blocks if isinstance(b, screens.Claim)] == [(point.claim, "")]
    assert [(b.label, b.shown) for b in screen.blocks if isinstance(b, screens.Metric)] == [(point.label, point.shown)]
    app, drawn = app_figures(at), site_figures(site)
    assert [c.key for c in page.charts()] == [key for key in drawn]  # the site draws the composition's charts, in order
    for key in CAPACITY_CHARTS:
        assert key in app and key in drawn, key
        assert not (found := differences(drawn[key], app[key])), f"chart {key}: {found[:8]}"
    shown = rendered_markdown(at)
    texts = _texts(screen)
    for block in page.capacity:
        if isinstance(block, learned.Heading):
            assert block.text in [h.value for h in at.subheader] and f"## {block.text}" in texts
        elif isinstance(block, (learned.Line, learned.Caption)):
            said = block.markdown if isinstance(block, learned.Line) else block.text
            assert said in shown and said in texts, said


def test_a_copy_without_records_says_how_to_make_one_and_draws_nothing():
    page = learned.recorded_page([], [], learned.Grids(capacity={}, cpu=0, cluster=0))
    assert page.headline is None and page.capacity == () and page.first == (learned.Note(learned.NO_RECORD),)
    assert "python -m lineage sweep data/learned_memory_grid_cpu.json" in page.first[0].text and not page.charts()
