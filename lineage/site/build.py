"""Write the static site: one HTML file per page, the figures as JSON in the page, one shared plotly.min.js.

``python -m lineage site --out site/`` calls :func:`build`. Every page is rendered by Jinja2 with autoescape on;
Markdown from the teaching texts goes through markdown-it with raw HTML off, so no text can add markup. The output is
deterministic: pages in a fixed order, JSON with sorted keys, no timestamp, the same bytes on every rebuild with the
same package versions.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import plotly
import plotly.io as pio
from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from lineage.site import screens

ASSETS = "assets"
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
STATIC = Path(__file__).parent / "static"
# No other host: scripts and styles from the site itself (plotly.js draws its styles inline), images from data: and
# blob: URLs (the chart toolbar's PNG export), and no fetch, frame, form or object at all.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "font-src 'self' data:; connect-src 'none'; form-action 'none'; base-uri 'none'; object-src 'none'"
)
SERVE = "python serve.py"
LIVE = "live"  # the page saying what needs the live app, at the tour's place of the Live benchmark
PLOT_CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToAdd": ["toImage"]}


@dataclass(frozen=True)
class Page:
    slug: str
    nav_title: str
    file: str  # relative to the site's root


def filename(slug: str) -> str:
    return "index.html" if slug == "home" else f"{slug}.html"


def tour() -> tuple[Page, ...]:
    """The site's pages in the app's tour order (ui.nav.tour): home, the stages, the ledger, the labs, the tools, with
    the page on what needs the live app where the app has its Live benchmark."""
    from lineage import stages

    slugs = [("home", "Home")] + [(s.key, s.listed_title) for s in stages.all_stages()]
    slugs += [
        ("ledger", "Claims ledger"),
        ("memory_lab", "Memory lab"),
        ("learned_memory", "Learned memory"),
        ("memory_cost", "Memory & cost"),
        (LIVE, "The live app"),
    ]
    return tuple(Page(slug, title, filename(slug)) for slug, title in slugs)


def check_app_url(app_url: str | None) -> str | None:
    """``app_url`` without a trailing slash, or a ValueError naming --app-url: an http(s) URL with a host."""
    if app_url is None:
        return None
    parts = urlsplit(app_url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c in app_url for c in "\"'<> "):
        raise ValueError(f"--app-url must be an http:// or https:// URL with a host, got {app_url!r}")
    return app_url.rstrip("/")


# ---- Markdown and figures -----------------------------------------------------------------------------------------

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_COLOURED = ":orange["  # Streamlit's coloured text, which the equations use to mark the change


def _coloured(rendered: str) -> str:
    """Streamlit's ``:orange[…]`` (already escaped HTML inside) as a <mark>; brackets inside are matched."""
    out, i = [], 0
    while (start := rendered.find(_COLOURED, i)) >= 0:
        out.append(rendered[i:start])
        depth, j = 1, start + len(_COLOURED)
        while j < len(rendered) and depth:
            depth += {"[": 1, "]": -1}.get(rendered[j], 0)
            j += 1
        out.append('<mark class="change">' + rendered[start + len(_COLOURED) : j - 1] + "</mark>")
        i = j
    return "".join(out) + rendered[i:]


def markdown(text: str, *, inline: bool = False) -> Markup:
    rendered = _MD.renderInline(text) if inline else _MD.render(text)
    return Markup(_coloured(rendered))


def figure_json(fig) -> str:
    """The figure (data, layout, frames) as JSON with sorted keys; arrays stay Plotly's typed-array encoding. Safe
    inside a <script> element: no "<" survives (JSON's \\u003c instead)."""
    spec = json.loads(pio.to_json(fig, validate=False, engine="json"))
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


# ---- pages -------------------------------------------------------------------------------------------------------


LONG_WORD = 20  # characters: a cell shows a longer word (a config key, a repository's path) broken anywhere
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def has_long_word(cell: str) -> bool:
    """Whether a table cell's Markdown shows a word of more than :data:`LONG_WORD` characters (a link's address is not
    shown). Such a cell may break its words anywhere (``td.long`` in site.css), so that a table of them fits its box;
    the other cells break between words only, so that a narrow column keeps "channel" whole."""
    return any(len(word) > LONG_WORD for word in _LINK_TARGET.sub("]", cell).split())


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("lineage.site", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md"] = markdown
    env.filters["mdinline"] = lambda text: markdown(text, inline=True)
    env.filters["figure_json"] = figure_json
    env.tests["block"] = lambda block, name: type(block).__name__ == name
    env.tests["long_word"] = has_long_word
    return env


def live_screen(app_url: str | None) -> screens.Screen:
    """The page that says what needs the live app and how to start it."""
    start = (
        f"The live app for this lecture runs at [{app_url}]({app_url})."
        if app_url
        else f"Start the live app on your own machine: in the repository's folder, `{SERVE}` (the README's first "
        "command installs it), then open http://localhost:8501."
    )
    return screens.Screen(
        LIVE,
        "What needs the live app",
        (
            screens.Text(
                "This site is the lecture as it stands on the default story: every chart and number was computed by "
                "the app's own functions when the site was built, and plays in your browser with no Python behind it. "
                "Some things need Python running: the live app."
            ),
            screens.Text(
                "- **Your own story**: write facts, overwrites and a topic switch; every stage page runs it.\n"
                "- **The controls of every page**: sizes, gates, β, random inputs, a chunk size — each run live.\n"
                "- **Real-size runs**: each linear stage's chunked op at head dims 32–128 and thousands of tokens.\n"
                "- **Live training** on the Learned memory page (the recorded sweep is here).\n"
                "- **The live benchmark**: decoding time against context on your machine, and its bandwidth.\n"
                "- **The Memory lab's sliders** and **your own model** on Memory & cost."
            ),
            screens.Text("## Start it"),
            screens.Text(start),
        ),
    )


def _app_link(app_url: str | None, slug: str) -> str | None:
    if not app_url or slug == LIVE:
        return app_url
    return app_url + ("/" if slug == "home" else f"/{slug}")


def page_screens(app_url: str | None) -> dict[str, Callable[[], screens.Screen]]:
    from lineage import stages

    out: dict[str, Callable[[], screens.Screen]] = {"home": screens.home_screen}
    out |= {s.key: (lambda key=s.key: screens.stage_screen(key)) for s in stages.all_stages()}
    out |= {
        "gated_deltanet2": screens.gated_deltanet2_screen,  # after the article: its page is its own, not a stage page
        "ledger": lambda: screens.ledger_screen(filename, {p.slug: p.nav_title for p in tour()}.__getitem__),
        "memory_lab": screens.memory_lab_screen,
        "learned_memory": screens.learned_memory_screen,
        "memory_cost": screens.memory_cost_screen,
        LIVE: lambda: live_screen(app_url),
    }
    return out


def render_page(env: Environment, screen: screens.Screen, pages: tuple[Page, ...], app_url: str | None) -> str:
    i = next(n for n, p in enumerate(pages) if p.slug == screen.slug)
    previous = pages[i - 1] if i > 0 else None
    following = pages[(i + 1) % len(pages)]
    return env.get_template("page.html.j2").render(
        screen=screen,
        pages=pages,
        here=pages[i],
        previous=previous,
        next=following,
        csp=CSP,
        assets=ASSETS,
        app_url=_app_link(app_url, screen.slug),
        live_file=filename(LIVE),
        serve=SERVE,
        plot_config=json.dumps(PLOT_CONFIG, sort_keys=True),
    )


@dataclass(frozen=True)
class Built:
    out: Path
    page_bytes: dict[str, int]  # file -> bytes, the HTML pages
    asset_bytes: dict[str, int]  # file under assets/ -> bytes

    @property
    def total_bytes(self) -> int:
        return sum(self.page_bytes.values()) + sum(self.asset_bytes.values())

    def report(self) -> str:
        lines = [f"{name:24s} {n / 1e6:7.3f} MB" for name, n in self.page_bytes.items()]
        lines += [f"{ASSETS}/{name:17s} {n / 1e6:7.3f} MB" for name, n in self.asset_bytes.items()]
        lines.append(f"{'total':24s} {self.total_bytes / 1e6:7.3f} MB in {self.out}")
        return "\n".join(lines)


def check_out(out: str | Path) -> Path:
    """The output folder, or a ValueError naming --out: it may exist only as a folder this build wrote before (or
    empty), so a typo cannot fill or clobber another folder."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out {str(out)!r} is a file, expected a folder")
    if path.is_dir() and any(path.iterdir()) and not (path / ASSETS / "site.js").exists():
        raise ValueError(f"--out {str(out)!r} is a folder with other files in it; give a new or empty folder")
    return path


def build(out: str | Path, app_url: str | None = None, *, only: tuple[str, ...] | None = None) -> Built:
    """Write the site into ``out``. ``app_url``: where the live app runs (the pages link to it); ``only``: build just
    these pages' files (tests), the navigation still listing every page."""
    app_url = check_app_url(app_url)
    path = check_out(out)
    pages = tour()
    env = _environment()
    makers = page_screens(app_url)
    if path.exists():
        for old in [*path.glob("*.html"), path / ASSETS]:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    (path / ASSETS).mkdir(parents=True, exist_ok=True)
    asset_bytes = {}
    for name, source in (
        ("plotly.min.js", PLOTLY_JS),
        ("site.js", STATIC / "site.js"),
        ("site.css", STATIC / "site.css"),
    ):
        shutil.copyfile(source, path / ASSETS / name)
        asset_bytes[name] = (path / ASSETS / name).stat().st_size
    page_bytes = {}
    for page in pages:
        if only is not None and page.slug not in only:
            continue
        html = render_page(env, makers[page.slug](), pages, app_url)
        (path / page.file).write_text(html, encoding="utf-8")
        page_bytes[page.file] = len(html.encode("utf-8"))
    return Built(path, page_bytes, asset_bytes)
