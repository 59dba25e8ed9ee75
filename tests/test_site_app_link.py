"""The app links to the static site where one is published ($LINEAGE_SITE_URL), and says nothing of it otherwise."""

from __future__ import annotations

import pytest

from tests.app.util import run_page
from ui.session import SITE_URL_ENV


def site_links(at) -> list[str]:
    return [b.proto.url for b in at.get("link_button") if b.proto.label == "The lecture as a static site"]


def test_the_sidebar_links_to_a_published_site(monkeypatch):
    monkeypatch.setenv(SITE_URL_ENV, "https://lecture.example.org/lineage/")
    assert site_links(run_page("kda")) == ["https://lecture.example.org/lineage/"]


@pytest.mark.parametrize("value", [None, "", "javascript:alert(1)", "lecture.example.org"])
def test_no_link_without_an_http_url(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(SITE_URL_ENV, raising=False)
    else:
        monkeypatch.setenv(SITE_URL_ENV, value)
    assert site_links(run_page("kda")) == []
