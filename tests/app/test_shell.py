"""The app shell (app.py): the sidebar's controls, drawn after the page, are there on every run, also after a page
stopped early, and the seed they hold survives such a run."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.util import ROOT, SEED_LABEL, after_first_chart, figures, run_page
from ui import limits
from ui.nav import DEFAULT_PAGE, PAGES, SECTIONS, neighbours, tour
from ui.presenter import PROJECTION
from ui.running import BUSY_TEXT


def sidebar_controls(at) -> tuple[list[str], list[str]]:
    return [n.label for n in at.sidebar.number_input], [t.label for t in at.sidebar.toggle]


def test_every_run_draws_the_sidebar_controls_after_the_page():
    at = run_page("kda", seed=7)
    numbers, toggles = sidebar_controls(at)
    assert numbers == [SEED_LABEL] and toggles == ["Presenter mode"]
    assert at.sidebar.number_input[0].value == 7
    assert at.get("plotly_chart")  # the page itself ran before them


def test_a_page_that_stops_early_still_draws_them_and_keeps_the_seed(monkeypatch):
    at = run_page("kda")
    at.sidebar.number_input[0].set_value(5).run()

    real_slot = limits.heavy_slot

    def no_run_slot(limiter=limits.LIMITER):  # the page's run finds the server busy; the page slot is granted
        if limiter is limits.LIMITER:
            raise limits.ServerBusy()
        return real_slot(limiter)

    monkeypatch.setattr(limits, "heavy_slot", no_run_slot)
    at.run()
    assert [e.value for e in at.error] == [BUSY_TEXT]
    assert not at.get("plotly_chart")  # the page stopped at its run
    numbers, toggles = sidebar_controls(at)
    assert numbers == [SEED_LABEL] and toggles == ["Presenter mode"]
    monkeypatch.undo()
    at.run()
    assert not at.error and at.sidebar.number_input[0].value == 5  # the seed outlived the stopped run


@pytest.mark.parametrize("present", [False, True])
def test_presenter_mode_holds_before_the_page_runs(present):
    at = run_page("kda", present=present)
    assert at.sidebar.toggle[0].value is present
    # the figures of this very run are at projector sizes, or not: set before the page built them
    sizes = {fig["layout"]["font"]["size"] for fig in figures(at)}
    assert sizes == {PROJECTION.text} if present else PROJECTION.text not in sizes


def test_a_bad_seed_in_the_link_is_said_once():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["seed"] = "-1"
    expected = ["The link's seed ` -1 ` is not used: it must be a whole number from 0 to 2,147,483,647. Using seed 0."]
    at.run()  # the session's first run ends after home's first chart (ui.first_chart): said already
    assert [w.value for w in at.warning if "seed" in w.value] == expected
    after_first_chart(at)
    assert [w.value for w in at.warning if "seed" in w.value] == expected
    assert at.sidebar.number_input[0].value == 0


@pytest.mark.parametrize("url_path", ["ledger", "memory_cost", "live_benchmark"])
def test_the_shell_ends_every_page_with_previous_and_next(url_path):
    """Previous / Next come from app.py under every page but Home, labs and tools included; the last stop's Next is
    Home, and the tour holds every page of the navigation, section by section."""
    stops = tour()
    assert [p.url_path for p in stops] == [p.url_path for s in SECTIONS for p in PAGES if p.section == s]
    assert len(stops) == len(PAGES) and neighbours(stops[-1].url_path)[1].url_path == DEFAULT_PAGE
    at = run_page(url_path)
    prev, nxt = neighbours(url_path)
    labels = [b.label for b in at.button]
    assert f"← Previous: {prev.title}" in labels and f"Next: {nxt.title} →" in labels, labels
    home = run_page("home")
    assert not [b.label for b in home.button if b.label.startswith(("Next: ", "← Previous"))]
