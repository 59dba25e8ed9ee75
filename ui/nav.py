"""The app's pages, in order, by section. app.py builds ``st.navigation`` from this list.

Each entry: (section, file under app_pages/, title, icon, url_path, stage). The lineage section is built from the
table of stages (:func:`lineage.stages.all_stages`): every stage whose page exists (``lineage.teach.units``:
``app_pages/<stage>.py``), in the story's order, titled by its short name and numbered from that order; then the
claims ledger, the labs and the tools, written here. The guided tour walks every page in this order and comes back
home.

The page scripts live in app_pages/, not pages/: Streamlit treats a folder named pages/ beside the entry script as an
old-style multipage app until st.navigation has run, so a deep link opened first on a fresh server (and every
AppTest page switch) would run the page without the app shell.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lineage import stages
from lineage.teach.units import unit


@dataclass(frozen=True)
class PageEntry:
    section: str
    file: str
    title: str
    icon: str
    url_path: str
    stage: str | None = None  # key in lineage.stages for stage pages


LINEAGE = "The lineage"
NUMBERED_ICONS = 9  # Material Symbols has counter_1 … counter_9; a stage past the ninth gets UNNUMBERED_ICON
UNNUMBERED_ICON = ":material/more_horiz:"


def stage_icon(number: int) -> str:
    """The icon of the stage page at ``number`` (1-based) in the lineage: its number, while there is one to show."""
    return f":material/counter_{number}:" if 1 <= number <= NUMBERED_ICONS else UNNUMBERED_ICON


APP_ROOT = Path(__file__).resolve().parents[1]  # where app.py runs the page scripts from


def has_page(stage_key: str) -> bool:
    """Whether the stage's page script (``lineage.teach.units``: ``app_pages/<stage>.py``) is written."""
    return (APP_ROOT / unit(stage_key).page).is_file()


def stage_pages() -> tuple[PageEntry, ...]:
    """One entry per stage of the table that has a page, in the lineage's order, numbered from it."""
    with_page = [s for s in stages.all_stages() if has_page(s.key)]
    return tuple(
        PageEntry(LINEAGE, unit(s.key).page, s.heading, stage_icon(i), s.key, s.key)
        for i, s in enumerate(with_page, start=1)
    )


PAGES: tuple[PageEntry, ...] = (
    PageEntry(LINEAGE, "app_pages/home.py", "Home", ":material/home:", "home"),
    *stage_pages(),
    PageEntry(LINEAGE, "app_pages/ledger.py", "Claims ledger", ":material/fact_check:", "ledger"),
    PageEntry("Labs", "app_pages/memory_lab.py", "Memory lab", ":material/science:", "memory_lab"),
    PageEntry("Labs", "app_pages/learned_memory.py", "Learned memory", ":material/model_training:", "learned_memory"),
    PageEntry("Tools", "app_pages/memory_cost.py", "Memory & cost", ":material/memory:", "memory_cost"),
    PageEntry("Tools", "app_pages/live_benchmark.py", "Live benchmark", ":material/speed:", "live_benchmark"),
)

SECTIONS = (LINEAGE, "Labs", "Tools")
DEFAULT_PAGE = "home"
# The default page is served at "/", so its own url_path never matches a link; a hidden page runs the same script at
# /home, so a deep link to it opens the home page instead of Streamlit's "Page not found" dialog.
HOME_ALIAS = "home"
DEFAULT_URL_PATH = "lineage"  # the default page's (unused) url_path, freeing "home" for the alias
NAV_EXPANDED = True  # every page of every section listed: no "View more" to find the labs and tools behind

# One transition line into each tour stop that is not a stage (a stage's line is in lineage.stages).
_TRANSITIONS = {
    "ledger": "The story is told: now hold the article's numbers against the app's own.",
    "memory_lab": "Put the mechanisms side by side on your own experiments.",
    "learned_memory": "So far the gates were set by hand. Now let small models learn them.",
    "memory_cost": "Back to the bytes: what each memory costs at a real model's size.",
    "live_benchmark": "Last, time the mechanisms on this machine.",
    DEFAULT_PAGE: "The tour is over: back to the start.",
}


def tour() -> tuple[PageEntry, ...]:
    """The guided tour: Home, the stages in lineage order, the claims ledger, the labs, then the tools — every page
    of the navigation, in the navigation's order (section by section)."""
    return tuple(p for section in SECTIONS for p in PAGES if p.section == section)


def neighbours(url_path: str) -> tuple[PageEntry | None, PageEntry | None]:
    """The tour stops before and after the page at ``url_path``: None before Home (the tour's start) and for a page
    off the tour; after the last stop comes Home again, so the tour has no dead end."""
    stops = tour()
    idx = next((i for i, p in enumerate(stops) if p.url_path == url_path), None)
    if idx is None:
        return None, None
    return (stops[idx - 1] if idx > 0 else None), stops[(idx + 1) % len(stops)]


def entry_for(url_path: str) -> PageEntry | None:
    """The entry of the page Streamlit runs at ``url_path`` ("" and the home alias: Home)."""
    url_path = DEFAULT_PAGE if url_path in ("", DEFAULT_URL_PATH, HOME_ALIAS) else url_path
    return next((p for p in PAGES if p.url_path == url_path), None)


def _learned_memory_finding() -> str:
    from lineage.train.findings import capacity_pointer  # the record is read only when the tour reaches the stop

    return capacity_pointer()


# Tour stops whose line goes on with what their page's record shows, computed from that record
_FINDINGS = {"learned_memory": _learned_memory_finding}


def transition(entry: PageEntry) -> str:
    """The one line that leads into ``entry`` on the tour ("" if it has none)."""
    if entry.stage:
        return stages.stage(entry.stage).transition
    said = _FINDINGS[entry.url_path]() if entry.url_path in _FINDINGS else ""
    return " ".join(x for x in (_TRANSITIONS.get(entry.url_path, ""), said) if x)
