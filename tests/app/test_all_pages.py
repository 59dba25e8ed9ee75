"""Every page in the navigation registry runs at its defaults inside the real app shell and says where it ran.

Parametrised over ``ui.nav.PAGES``, so a page added to the registry is covered without touching this file.
"""

from __future__ import annotations

import pytest

from lineage.device import device_info
from tests.app.util import run_page
from ui.nav import PAGES


@pytest.mark.parametrize("entry", PAGES, ids=[entry.url_path for entry in PAGES])
def test_page_runs_at_its_defaults_and_shows_the_device(entry):
    at = run_page(entry.url_path)  # fails on any exception
    assert not at.error, f"{entry.url_path} shows errors at its defaults: {[e.value for e in at.error]}"
    assert at.title, f"{entry.url_path} has no title"
    label = device_info().label  # read after the run: app.py sets the torch thread count
    captions = [c.value for c in at.sidebar.caption]
    assert any(label in c for c in captions), f"device label {label!r} not in the sidebar captions {captions}"
