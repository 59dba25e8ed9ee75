"""Every page in presenter mode, as a projector shows it, and as viewers with red-green colour blindness see it.

    python scripts/screenshots.py                          # every page, 1920×1080, into artifacts/screenshots-present
    python scripts/screenshots.py --out /tmp/shots/after --pages home kda --size 1280x720

Starts the app (``ui.browser``'s server start, as the browser tests do), opens each page of ``ui.nav.PAGES`` with
``?present=1`` in headless Chromium (Debian's ``/usr/bin/chromium`` through Playwright, offline), waits until every
chart has drawn, and writes into one folder, per page:

    <page>.png               the first screen (what the room sees before anyone scrolls)
    <page>-full.png          the whole page
    <page>-full-deuteranopia.png, <page>-full-protanopia.png
                             the whole page through the Machado et al. (2009) simulation at full severity
                             (``lineage.plots.palette.simulate_cvd``), to compare the charts' colours side by side

and ``index.txt`` listing each page with its title and its width (wider than the window: the page scrolls sideways on
that screen; ``tests/e2e/test_presenter.py`` checks every element).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image

from lineage.plots.palette import CVD_DEFICIENCIES, simulate_cvd
from ui.browser import CHROMIUM_ARGS, CHROMIUM_PATH, start_server, stop, wait_until_rendered
from ui.nav import PAGES

ROOT = Path(__file__).resolve().parents[1]
LOAD_TIMEOUT_MS = 90_000
MAX_FULL_PX = 16_000  # the tallest "whole page" shot
# Streamlit scrolls its main section, not the document: the page's full height is that section's scroll height.
PAGE_HEIGHT_JS = """() => Math.max(document.scrollingElement.scrollHeight,
    ...[...document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"]')]
        .map(el => el.scrollHeight))"""
SCROLL_WIDTH_JS = "() => document.scrollingElement.scrollWidth"


def simulated(path: Path, kind: str) -> Image.Image:
    """The screenshot at ``path`` as seen with ``kind`` colour blindness."""
    rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.float64) / 255.0
    return Image.fromarray(np.round(simulate_cvd(rgb, kind) * 255.0).astype(np.uint8))


def shoot(browser, url: str, out: Path, pages: list[str], size: tuple[int, int]) -> list[str]:
    width, height = size
    lines = []
    for entry in PAGES:
        if pages and entry.url_path not in pages:
            continue
        context = browser.new_context(viewport={"width": width, "height": height})
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(url) else r.abort())
        page = context.new_page()
        path = "" if entry.url_path == "home" else entry.url_path  # the default page lives at the root
        page.goto(f"{url}/{path}?present=1", wait_until="domcontentloaded")
        page.wait_for_selector('[data-testid="stMain"] h1', timeout=LOAD_TIMEOUT_MS)
        wait_until_rendered(page)
        page.wait_for_timeout(500)  # Plotly's last relayout after the fonts have loaded
        first, full = out / f"{entry.url_path}.png", out / f"{entry.url_path}-full.png"
        page.screenshot(path=first)
        scroll_width = page.evaluate(SCROLL_WIDTH_JS)
        page.set_viewport_size({"width": width, "height": min(int(page.evaluate(PAGE_HEIGHT_JS)), MAX_FULL_PX)})
        page.wait_for_timeout(1000)  # charts redraw for the new viewport
        page.screenshot(path=full)
        for kind in CVD_DEFICIENCIES:
            simulated(full, kind).save(out / f"{entry.url_path}-full-{kind}.png")
        verdict = "fits" if scroll_width <= width else "SCROLLS SIDEWAYS"
        lines.append(f"{entry.url_path}: {entry.title} — page {scroll_width} px wide in a {width} px window: {verdict}")
        print(lines[-1], flush=True)
        context.close()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "screenshots-present")
    parser.add_argument("--pages", nargs="*", default=[], help="url paths (default: every page)")
    parser.add_argument("--size", default="1920x1080", help="viewport WIDTHxHEIGHT (default 1920x1080)")
    args = parser.parse_args()
    known = {e.url_path for e in PAGES}
    if unknown := set(args.pages) - known:
        parser.error(f"unknown pages {sorted(unknown)}; the pages are {sorted(known)}")
    try:
        size = tuple(int(v) for v in args.size.lower().split("x"))
        if len(size) != 2 or min(size) < 200:
            raise ValueError
    except ValueError:
        parser.error(f"--size must be WIDTHxHEIGHT, each at least 200 (e.g. 1920x1080), got {args.size!r}")
    args.out.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    log_path = args.out / "server.log"
    with open(log_path, "w") as log:
        server = start_server(log, timeout_s=120)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS)
                lines = shoot(browser, server.url, args.out, args.pages, size)
                browser.close()
        finally:
            stop(server.proc)
    (args.out / "index.txt").write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} pages in {args.out}")


if __name__ == "__main__":
    main()
