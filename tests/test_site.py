"""The static site (python -m lineage site): the same figures and numbers as the app's pages on the default story,
written deterministically, self-contained (one shared plotly.min.js, relative links, a CSP that allows no other host),
escaped, within its weights, and a command line that names the flag it refuses.

The comparison runs each app page in Streamlit's AppTest at its defaults and holds every figure the site draws (data,
layout and frames) and every number the site's page states against what the app's page renders.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from lineage import lab
from lineage.__main__ import main
from lineage.plots.vocabulary import figure_problems
from lineage.site import build, screens
from tests.app.util import decode, rendered_markdown, run_page

PAGE_LIMIT = 1_500_000  # bytes per page, besides the shared plotly.min.js (issue 30's goal)
SITE_LIMIT = 30_000_000  # bytes, the whole site
APP_PAGES = [p.slug for p in build.tour() if p.slug != build.LIVE]  # every site page with an app page to match
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> build.Built:
    return build.build(tmp_path_factory.mktemp("site") / "out")


class _Page(HTMLParser):
    """A built page read back: its charts' JSON by element id, its attributes that load or link, its main text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.json: dict[str, str] = {}
        self.keys: dict[str, str] = {}  # chart element id -> the app's chart key
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.metas: list[dict[str, str]] = []
        self.text: list[str] = []
        self._script: str | None = None
        self._main = 0
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self._script = a.get("id") if a.get("type") == "application/json" else None
        if tag == "meta":
            self.metas.append(a)
        if tag == "div" and "chart" in (a.get("class") or "").split():
            self.keys[a["id"]] = a["data-key"]
        for name in ("href", "src", "action", "data"):
            if name in a:
                self.refs.append((tag, name, a[name]))
        if tag == "main":
            self._main += 1
        if (tag == "p" and "live-note" in (a.get("class") or "")) or tag == "figcaption":
            self._skip += 1  # what the app has, or a chart's alt text: not a number the page states

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None
        if tag == "main":
            self._main -= 1
        if tag in ("p", "figcaption") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if self._script:
            self.json[self._script] = self.json.get(self._script, "") + data
        elif self._main and not self._skip:
            self.text.append(data)


def read_page(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def site_figures(page: _Page, variant: str = "reading") -> dict[str, dict]:
    return {key: decode(json.loads(page.json[f"{element}-{variant}"])) for element, key in page.keys.items()}


def app_figures(at) -> dict[str, dict]:
    return {c.proto.id.rsplit("-", 1)[-1]: decode(json.loads(c.proto.spec)) for c in at.get("plotly_chart")}


def differences(site, app, path: str = "") -> list[str]:
    """Every place two decoded figure dicts differ (arrays compared exactly)."""
    if isinstance(site, dict) and isinstance(app, dict):
        out = [f"{path}/{k}: only on {'the site' if k in site else 'the app'}" for k in set(site) ^ set(app)]
        for k in sorted(set(site) & set(app)):
            out += differences(site[k], app[k], f"{path}/{k}")
        return out
    if isinstance(site, np.ndarray) or isinstance(app, np.ndarray):
        a, b = np.asarray(site), np.asarray(app)
        numeric = a.dtype.kind in "fc" and b.dtype.kind in "fc"  # NaN (a masked cell) equals NaN
        same = a.shape == b.shape and np.array_equal(a, b, equal_nan=numeric)
        return [] if same else [f"{path}: arrays differ"]
    if isinstance(site, list) and isinstance(app, list):
        if len(site) != len(app):
            return [f"{path}: {len(site)} items on the site, {len(app)} in the app"]
        return [d for i, (s, a) in enumerate(zip(site, app, strict=True)) for d in differences(s, a, f"{path}[{i}]")]
    return [] if site == app else [f"{path}: {str(site)[:60]!r} on the site, {str(app)[:60]!r} in the app"]


def app_text(at, slug: str) -> str:
    """Everything the app's page states in words and numbers: Markdown, captions, metrics, code, tables."""
    parts = rendered_markdown(at)
    parts += [f"{m.label} {m.value}" for m in at.metric]
    parts += [c.value for c in at.code]
    for df in at.dataframe:  # the raw table; the lab's as its page formats it (lab.people_formats)
        parts += [df.value.to_string()]
        if slug == "memory_lab":
            formats = lab.people_formats(df.value)
            parts += [formats[c](v) for c in formats for v in df.value[c]]
    return "\n".join(parts)


# ---- same functions, same numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("slug", APP_PAGES)
def test_every_figure_and_number_is_the_apps(site, slug):
    page = read_page(site.out / build.filename(slug))
    at = run_page(slug)
    app = app_figures(at)
    drawn = site_figures(page)
    assert drawn, f"{slug}: the site's page draws no chart"
    for key, fig in drawn.items():
        if slug == "memory_cost":  # the site leaves out the visitor's own model (its line in the app: "custom")
            app[key]["data"] = [t for t in app[key]["data"] if t.get("name") != "custom"]
        assert key in app, f"{slug}: the app draws no chart {key!r} (it draws {sorted(app)})"
        assert not (found := differences(fig, app[key])), f"{slug}, chart {key}: {found[:8]}"
    shown = NUMBER.findall(" ".join(page.text))
    assert shown, f"{slug}: the site's page states no number"
    said = set(NUMBER.findall(app_text(at, slug)))
    missing = sorted({n for n in shown if n not in said})
    assert not missing, f"{slug}: numbers on the site that the app's page does not state: {missing}"


def test_presenter_figures_are_the_apps_presenter_figures(site):
    page = read_page(site.out / build.filename("kda"))
    at = run_page("kda", present=True)
    app = app_figures(at)
    for key, fig in site_figures(page, "present").items():
        assert not (found := differences(fig, app[key])), f"presenter chart {key}: {found[:8]}"


def test_the_projection_is_the_apps():
    from lineage.plots.present import PROJECTION as SITE_PROJECTION
    from ui.presenter import PROJECTION

    assert SITE_PROJECTION == PROJECTION


def test_pages_follow_the_apps_tour():
    from ui.nav import tour

    app = [p.url_path for p in tour()]
    assert [p.slug for p in build.tour()] == [build.LIVE if s == "live_benchmark" else s for s in app]


def test_every_site_figure_keeps_the_vocabulary(site):
    for path in sorted(site.out.glob("*.html")):
        page = read_page(path)
        for variant in ("reading", "present"):
            for key, fig in site_figures(page, variant).items():
                assert not figure_problems(fig), f"{path.name} {key} ({variant}): {figure_problems(fig)}"


def test_a_figure_that_breaks_the_vocabulary_stops_the_build():
    from lineage import plots

    def two_colours_one_name():
        return plots.core.figure(
            [
                dict(type="scatter", x=[0, 1, 2], y=[0, 1, 2], name="KDA", line=dict(color="#E69F00")),
                dict(type="scatter", x=[0, 1, 2], y=[2, 1, 0], name="DeltaNet", line=dict(color="#E69F00")),
            ]
        )

    if not figure_problems(two_colours_one_name()):
        pytest.skip("the vocabulary check does not flag this figure; nothing to stop")
    with pytest.raises(ValueError, match="visual vocabulary"):
        screens._figure("bad", two_colours_one_name, "alt")


# ---- built to be hosted anywhere ----------------------------------------------------------------------------------


def test_a_rebuild_from_the_command_line_is_byte_identical(site, tmp_path):
    """``python -m lineage site`` in a fresh process writes the same bytes as the build in this one: nothing depends
    on a cache, the time or the order things were computed in."""
    out = tmp_path / "again"
    done = subprocess.run(
        [sys.executable, "-m", "lineage", "site", "--out", str(out)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert "total" in done.stdout and "MB" in done.stdout, done.stdout
    first = {p.relative_to(site.out): p.read_bytes() for p in sorted(site.out.rglob("*")) if p.is_file()}
    second = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert sorted(first) == sorted(second)
    changed = [str(name) for name in first if first[name] != second[name]]
    assert not changed, f"files that differ on a rebuild: {changed}"


def test_plotly_js_is_the_installed_one_written_once(site):
    shared = site.out / build.ASSETS / "plotly.min.js"
    assert shared.read_bytes() == build.PLOTLY_JS.read_bytes()
    assert [p.name for p in site.out.rglob("plotly*.js")] == ["plotly.min.js"]
    for path in site.out.glob("*.html"):
        html = path.read_text(encoding="utf-8")
        assert html.count('src="assets/plotly.min.js"') == 1, path.name
        assert "Plotly.register" not in html and len(html) < shared.stat().st_size, f"{path.name} inlines plotly.js"


def test_links_are_relative_and_the_csp_allows_no_other_host(site):
    for path in sorted(site.out.glob("*.html")):
        page = read_page(path)
        (csp,) = [m["content"] for m in page.metas if m.get("http-equiv") == "Content-Security-Policy"]
        assert "default-src 'none'" in csp and "connect-src 'none'" in csp
        assert not re.search(r"https?:|//|\*", csp), f"{path.name}: the CSP names a host: {csp}"
        for tag, _name, value in page.refs:
            if tag == "a" and value.startswith(("https://", "http://")):
                continue  # a citation or the live app: a link to follow, never loaded by the page
            assert not re.match(r"^([a-z]+:|/)", value) or value.startswith("data:"), f"{path.name}: {tag} {value}"
            if not value.startswith(("data:", "#")):
                target = value.split("#")[0]
                assert (site.out / target).is_file(), f"{path.name} points at {value}, which the site lacks"


def test_page_weights(site):
    assert set(site.page_bytes) == {p.file for p in build.tour()}
    heavy = {name: n for name, n in site.page_bytes.items() if n > PAGE_LIMIT}
    assert not heavy, f"pages over {PAGE_LIMIT:,} bytes: {heavy}"
    assert site.total_bytes <= SITE_LIMIT
    on_disk = sum(p.stat().st_size for p in site.out.rglob("*") if p.is_file())
    assert on_disk == site.total_bytes


def test_text_is_escaped(tmp_path):
    hostile = '<script>alert(1)</script><img src="https://ex.invalid/x.png"> [x](javascript:alert(1))'
    screen = screens.Screen(
        "home", hostile, (screens.Text(hostile), screens.Claim(hostile, hostile, hostile, hostile, hostile))
    )
    html = build.render_page(build._environment(), screen, build.tour(), None)
    assert "<script>alert" not in html and "<img" not in html and 'href="javascript:' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_change_marks_of_an_equation_become_marks():
    text = ":orange[**K ← [K; kₙ], V ← [V; vₙ]**], then oₙ"
    assert str(build.markdown(text, inline=True)) == (
        '<mark class="change"><strong>K ← [K; kₙ], V ← [V; vₙ]</strong></mark>, then oₙ'
    )


def test_only_a_cell_with_a_long_shown_word_may_break_inside_words():
    """A config key marks its cell; a link's long address does not (it is not shown), nor does a short word."""
    key = "text_config.linear_attn_config (93 layers)"
    link = "[dev.to article](https://dev.to/a-very-long-address-of-an-article-on-kimi)"
    assert build.has_long_word(key) and build.has_long_word(f"{link}; {key}")
    assert not build.has_long_word(link) and not build.has_long_word("additive channel")
    table = screens.Table(({"says": "additive", "source": f"{link}; {key}"},))
    html = build.render_page(build._environment(), screens.Screen("ledger", "t", (table,)), build.tour(), None)
    assert "<td>additive</td>" in html and '<td class="long"><a href="https://dev.to/' in html


def test_the_live_app_link(tmp_path):
    without = build.build(tmp_path / "a", only=("live", "kda"))
    assert build.SERVE in (without.out / "live.html").read_text(encoding="utf-8")
    url = "https://lineage.example.org/app"
    with_url = build.build(tmp_path / "b", url + "/", only=("live", "kda"))
    assert f'href="{url}/kda"' in (with_url.out / "kda.html").read_text(encoding="utf-8")
    assert f'href="{url}"' in (with_url.out / "live.html").read_text(encoding="utf-8")


# ---- the command line ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "flag", "says"),
    [
        (["--app-url", "ftp://x"], "--app-url", "http"),
        (["--app-url", 'https://x/"><script>'], "--app-url", "http"),
    ],
)
def test_bad_flags_are_named(tmp_path, capsys, args, flag, says):
    with pytest.raises(SystemExit) as stop:
        main(["site", "--out", str(tmp_path / "s"), *args])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert flag in err and says in err
    assert not (tmp_path / "s").exists(), "nothing is written when a flag is refused"


def test_out_must_be_a_new_empty_or_earlier_site(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    a_file = tmp_path / "file.txt"
    a_file.write_text("mine")
    for out in (taken, a_file):
        with pytest.raises(SystemExit):
            main(["site", "--out", str(out)])
        assert "--out" in capsys.readouterr().err
    assert (taken / "notes.txt").read_text() == "mine" and a_file.read_text() == "mine"
