"""One voice across the pages: every figure on every page keeps the house vocabulary (mechanism colours for
mechanisms only, S_t on its one scale, no line hidden under another unsaid), and the quantities that appear on more
than one page show one value each — or name the variant they are (22,580 from the article's count, 22,419 from K3's
config's; the hybrid's saving "cache only" or "cache and KDA states")."""

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
    "gated_deltanet2",
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


def test_gpt2s_in_k3_one_value_per_count_and_every_value_named():
    """Home's metrics and prose and the ledger's rows: the article's 22,580 (2.8T / 124M) and K3's config count's
    22,419 (2.78T / 124M) are one value each wherever they appear, and no text shows such a ratio without its count."""
    metrics = dict(g for _, g in _all(("home",), r"\((the article's|its config's)\): (22,\d\d\d)\b"))
    ledger = {count: value for _, (value, count) in _all(("ledger",), r"(22,\d\d\d)×: (2\.78T|2\.8T) / 124M")}
    assert metrics == {"the article's": ledger["2.8T"], "its config's": ledger["2.78T"]}, (metrics, ledger)
    assert ledger["2.8T"] == "22,580" != ledger["2.78T"]
    prose = {value for _, (value,) in _all(("home",), r"\*\*(22,\d\d\d)\*\*")}
    assert prose == set(ledger.values()), prose
    for p in ("home", "ledger"):  # no text shows a ratio without saying which count it divides
        for t in texts(page(p)):
            if re.search(r"\b22,\d\d\d", t):
                assert re.search(r"2\.78T|2\.8T|article's|config's", t), (p, t)


def test_kimi_linears_saving_one_value_per_variant():
    """Home's caption, the ledger's row (Kimi Linear's schedule, 1M) and Memory & cost (at 1M) agree, variant by
    variant; every saving against all-MLA names its variant."""
    pattern = r"−(\d+\.\d)% (cache only|cache and KDA states)"
    home = [t for t in texts(page("home")) if "Kimi Linear's own schedule" in t]
    assert home
    ledger = [  # the rows about Kimi Linear's schedule (Kimi K3's rows have savings of their own)
        row
        for t in texts(page("ledger"))
        for row in t.splitlines()
        if ("7 MLA of 27" in row or "Kimi Linear" in row) and "Kimi K3" not in row
    ]
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
    link = re.search(r"\(e\.g\.\s+`(/[a-z_0-9]+\?[^`]+)`", (ROOT / "README.md").read_text()).group(1)
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
