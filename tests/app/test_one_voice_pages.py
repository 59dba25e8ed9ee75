"""One voice across the pages: every figure on every page keeps the house vocabulary (mechanism colours for
mechanisms only, S_t on its one scale, no line hidden under another unsaid), and the quantities that appear on more
than one page show one value each — or name the variant they are (22,580 nominal, 22,501 exact; the hybrid's saving
"cache only" or "cache and KDA states")."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from lineage.plots.vocabulary import figure_problems
from tests.app.util import ROOT, TIMEOUT, figures, run_page

PAGES = (
    "home",
    "gpt2",
    "kv_cache",
    "linear_attention",
    "deltanet",
    "mamba2",
    "gla",
    "gated_deltanet",
    "kda",
    "hybrid",
    "ledger",
    "memory_cost",
    "memory_lab",
    "live_benchmark",
)
_RUNS: dict = {}


def page(url_path: str):
    """Each page run once for the whole module (AppTest runs are the slow part)."""
    if url_path not in _RUNS:
        _RUNS[url_path] = run_page(url_path, seed=0)
    return _RUNS[url_path]


def texts(at) -> list[str]:
    """Every sentence a visitor reads on the page: markdown, captions, alerts, and each metric as label + value."""
    out = [e.value for kind in ("markdown", "caption", "warning", "info", "success", "error") for e in at.get(kind)]
    out += [f"{m.label}: {m.value}" for m in at.metric]
    return out


@pytest.mark.parametrize("url_path", PAGES)
def test_every_figure_keeps_the_vocabulary(url_path):
    at = page(url_path)
    problems = {i: figure_problems(fig) for i, fig in enumerate(figures(at))}
    problems = {i: p for i, p in problems.items() if p}
    assert not problems, f"{url_path}: {problems}"


def _all(pages, pattern: str) -> list[tuple[str, tuple]]:
    return [(p, m.groups()) for p in pages for t in texts(page(p)) for m in re.finditer(pattern, t)]


def test_gpt2s_in_k3_one_value_per_variant_and_every_value_named():
    """Home's metrics and prose and the ledger's row: 22,580 is "nominal" and 22,501 "exact" wherever they appear."""
    found = [(v, k) for p, (k, v) in _all(("home",), r"\((nominal|exact)\): (22,5\d\d)\b")]  # home's two metrics
    found += [g for _, g in _all(("home",), r"\*\*(22,5\d\d)\*\*[^*]{0,40}?\b(nominal|exact)\b")]  # home's prose
    found += [g for _, g in _all(("ledger",), r"(22,5\d\d)× (nominal|exact)\b")]  # the ledger's row
    by_variant: dict[str, set[str]] = {}
    for value, variant in found:
        by_variant.setdefault(variant, set()).add(value)
    assert set(by_variant) == {"nominal", "exact"}, found
    assert all(len(v) == 1 for v in by_variant.values()), by_variant
    assert by_variant["nominal"] != by_variant["exact"]
    assert len(found) >= 6, found  # two metrics, two sentences, two ledger figures
    for p in ("home", "ledger"):  # no text shows either count without saying which it is
        for t in texts(page(p)):
            if re.search(r"\b22,5\d\d", t):
                assert "nominal" in t or "exact" in t, (p, t)


def test_kimi_linears_saving_one_value_per_variant():
    """Home's caption, the ledger's row (Kimi Linear's schedule, 1M) and Memory & cost (at 1M) agree, variant by
    variant; every saving against all-MLA names its variant."""
    pattern = r"−(\d+\.\d)% (cache only|cache and KDA states)"
    home = [t for t in texts(page("home")) if "Kimi Linear's own schedule" in t]
    assert home
    ledger = [t for t in texts(page("ledger")) if "7 MLA of 27" in t or "Kimi Linear" in t]
    memory = [t for t in texts(page("memory_cost"))]
    by_variant: dict[str, set[str]] = {}
    for t in home:
        m = re.search(r"Kimi Linear's own schedule.*?saves " + pattern + "; " + pattern, t)
        assert m, t
        by_variant.setdefault(m.group(2), set()).add(m.group(1))
        by_variant.setdefault(m.group(4), set()).add(m.group(3))
    for t in ledger:
        for value, variant in re.findall(pattern, t):
            by_variant.setdefault(variant, set()).add(value)
    for t in memory:
        m = re.search(r"against all-MLA, (cache only): −(\d+\.\d)%", t)
        if m:
            by_variant.setdefault(m.group(1), set()).add(m.group(2))
    assert set(by_variant) == {"cache only", "cache and KDA states"}, by_variant
    assert all(len(v) == 1 for v in by_variant.values()), by_variant
    for p in ("home", "hybrid", "ledger", "memory_cost"):
        for t in texts(page(p)):
            for m in re.finditer(r"−\d+\.\d%", t):
                near = t[m.start() : m.end() + 40] + t[max(0, m.start() - 80) : m.start()]
                assert "cache only" in near or "cache and KDA states" in near, (p, t)


def _number(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    assert m, (pattern, text)
    return m.group(1)


def test_story_numbers_agree_between_the_stage_pages_and_the_ledger():
    ledger = " ".join(texts(page("ledger")))
    la_metric = page("linear_attention").metric[0].value
    dn_metric = page("deltanet").metric[0].value
    assert _number(r"overwrite error (\d+(?:\.\d+)?) →", ledger) == la_metric
    assert _number(r"overwrite error \d+(?:\.\d+)? → (\d+(?:\.\d+)?)", ledger) == dn_metric
    dn_page = " ".join(texts(page("deltanet")))
    assert _number(r"linear attention \(φ = relu\) on the same story: (\d+(?:\.\d+)?)", dn_page) == la_metric
    la_page = " ".join(texts(page("linear_attention")))
    assert _number(r"DeltaNet on the same story: (\d+(?:\.\d+)?)", la_page) == dn_metric
    rows = page("gpt2").metric[0].value  # "528 vs 32"
    assert _number(r"([\d,]+ → [\d,]+) rows", ledger) == rows.replace(" vs ", " → ")
    gdn_a = page("gated_deltanet").metric[0].value.split(" · ")[0]
    assert _number(r"topic A held after the switch: \d+% → (\d+%)", ledger) == gdn_a
    kda_long = page("kda").metric[0].value
    assert _number(r"keep the long-lived fact \((\d+%)", ledger) == kda_long


def test_the_readme_example_link_opens_the_view_it_describes():
    """The README's example link names settings the page has (none of them "ignored"), and the page opens on them."""
    link = re.search(r"\(e\.g\. `(/[a-z_0-9]+\?[^`]+)`", (ROOT / "README.md").read_text()).group(1)
    parts = urlsplit(link)
    params = dict(parse_qsl(parts.query))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page(f"app_pages{parts.path}.py")
    at.run()
    assert not at.exception
    said = " ".join(e.value for kind in ("warning", "info", "caption", "error") for e in at.get(kind))
    assert "ignored" not in said, said
    for key, value in params.items():
        assert float(at.slider(key=key).value) == float(value), key
