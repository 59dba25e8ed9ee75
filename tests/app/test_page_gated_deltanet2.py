"""The Gated DeltaNet-2 page (app_pages/gated_deltanet2.py), after the article: its claim, its lines and its states
are what ``lineage.teach.after_article`` computes, and follow the erase and write gates."""

from __future__ import annotations

import numpy as np

from lineage.teach import after_article as aa
from tests.app.util import figure, frames_z, metrics, rerun, run_page

LABEL = aa.LABEL


def test_gated_deltanet2_page():
    at = run_page("gated_deltanet2")
    assert not at.exception
    assert any("After the article" in e.value for e in at.info)
    run = aa.run_on_story(32, 8, 8, 1.0, 0.5)
    assert metrics(at)[LABEL] == aa.erase_write_claim(run).shown == "0%"
    state = figure(at, "The state, token by token")
    np.testing.assert_allclose(frames_z(state, 0), run.states, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(frames_z(state, 1), run.kda_states, rtol=1e-6, atol=1e-7)

    at.slider(key="gated_deltanet2_erase").set_value(0.5)
    rerun(at)
    assert metrics(at)[LABEL] == "50%"  # a half-open erase leaves half the old value: the claim fails, and says so
    assert any("does not hold" in e.value for e in at.warning)
