"""The home page's first chart first (ui.first_chart), in AppTest: a session's first run ends after the chart with a
probe; the rerun its script asks for draws everything; later runs never wait; link notices survive the split.

The probe's own script (it waits for plotly.js to draw, or FALLBACK_MS) runs in a real browser:
tests/e2e/test_first_chart.py.
"""

from __future__ import annotations

import logging

from streamlit.testing.v1 import AppTest

from lineage import stages
from tests.app.util import ROOT, SEED_LABEL, TIMEOUT, after_first_chart, figures, first_chart_probes
from ui import first_chart

# home's sections after its first chart (the grid's heading counted from the table: Gated DeltaNet-2 shares KDA's cell)
REST = ["The lineage", stages.grid_title(stages.grid()), "22,580 GPT-2s?"]


def fresh(**params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    return at


def subheaders(at: AppTest) -> list[str]:
    return [s.value for s in at.subheader]


def test_the_first_run_ends_after_the_first_chart_and_the_rerun_draws_the_rest():
    at = fresh().run()
    assert not at.exception
    assert len(figures(at)) == 1 and subheaders(at) == ["Memory against context length, every stage"]
    (probe,) = first_chart_probes(at)
    assert probe.proto.js_content == first_chart.PROBE_JS and "data-lineage-probe" in probe.proto.html_content
    assert not at.sidebar.number_input and not at.sidebar.toggle  # the sidebar's widgets wait too
    after_first_chart(at)
    assert not at.exception and not at.error
    assert subheaders(at)[1:] == REST and len(figures(at)) == 1
    assert [n.label for n in at.sidebar.number_input] == [SEED_LABEL] and at.sidebar.toggle
    at.run()  # any later run: everything at once, never a probe
    assert not first_chart_probes(at) and subheaders(at)[1:] == REST


def test_home_opened_later_in_the_session_is_drawn_in_one_run():
    at = after_first_chart(fresh().run())
    at.switch_page("app_pages/kda.py").run()
    at.switch_page("app_pages/home.py").run()
    assert not first_chart_probes(at) and subheaders(at)[1:] == REST


def test_link_notices_are_said_in_both_runs_and_judged_whole_in_the_second():
    at = fresh(present="maybe", nonsense="1", seed="x").run()
    first = [w.value for w in at.warning]
    assert any("` present ` = ` maybe `" in w for w in first) and any("seed ` x `" in w for w in first)
    assert not any("nonsense" in w for w in first)  # not yet judged: the page has not made all its controls
    after_first_chart(at)
    second = [w.value for w in at.warning]
    assert any("` present ` = ` maybe `" in w for w in second) and any("seed ` x `" in w for w in second)
    assert any("` nonsense ` in the link is not a setting of this page" in w for w in second)
    assert len(second) == len(set(second)) == 3  # each once, though the first run handed them on


def test_without_components_v2_the_page_is_drawn_in_one_run(monkeypatch, caplog):
    import streamlit as st

    first_chart.probe.cache_clear()

    def missing(*args, **kwargs):
        raise AttributeError("module 'streamlit.components' has no attribute 'v2'")

    monkeypatch.setattr(st.components.v2, "component", missing)
    try:
        with caplog.at_level(logging.WARNING, logger=first_chart.__name__):
            at = fresh().run()
        assert not at.exception and not first_chart_probes(at)
        assert subheaders(at)[1:] == REST and at.sidebar.number_input
        said = [r.getMessage() for r in caplog.records if r.name == first_chart.__name__]
        assert len(said) == 1 and "pages are drawn in one go" in said[0]
    finally:
        monkeypatch.undo()
        first_chart.probe.cache_clear()  # the next session registers the real component again
