"""See the report as a person does: check it, then screenshot it in headless Chromium.

``python -m validation.screenshot report/`` (what ``make screenshot`` runs) checks that every
figure the page shows is a non-empty, decodable PNG with a caption and alt text, that the
summary (the decision summary, when the page has one, then the findings) comes before the
first figure, and that the published-vs-computed table lists every
record of ``results.json``; then renders with headless Chromium (Debian package
``chromium-headless-shell``, else ``chromium``: :data:`CHROMIUM_NAMES`)
the first screen (1400 x 900) to ``report/screenshot.png`` and each figure section (the
figure with its caption, as the page shows it) to ``report/screenshots/<figure id>.png``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from html import unescape
from pathlib import Path

__all__ = ["CHROMIUM_NAMES", "check_report", "find_chromium", "screenshot", "screenshot_figures"]

#: Flags for a headless Chromium on a machine without network access or a display.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def check_report(report_dir) -> dict:
    """Check a written report: figures render and the table lists every published number.

    Returns
    -------
    dict
        ``{"figures": n, "records": n}``.

    Raises
    ------
    ValueError
        Naming the first missing or empty figure, or the first record absent from the page.
    """
    from matplotlib.image import imread

    report_dir = Path(report_dir)
    page = (report_dir / "index.html").read_text()
    sources = re.findall(r"<img src='([^']+)'", page)
    for source in sources:
        path = report_dir / unescape(source)
        if not path.is_file() or path.stat().st_size == 0:
            raise ValueError(f"figure {source!r} is missing or empty")
        image = imread(path)
        if image.size == 0 or float(image.std()) == 0.0:
            raise ValueError(f"figure {source!r} is blank")
    figures = re.findall(r"<figure id='([^']+)'><img src='([^']+)' alt='([^']*)'>"
                         r"<figcaption>([^<]+)</figcaption>", page)
    if len(figures) != len(sources):
        raise ValueError(f"{len(sources) - len(figures)} figure(s) lack a caption or alt text")
    for _, source, alt, _caption in figures:
        if unescape(alt).strip() in {"", Path(unescape(source)).stem}:
            raise ValueError(f"figure {source!r} has no alt text beyond its file name")
    lead = "id='decision_summary'" if "id='decision_summary'" in page else "id='summary'"
    if sources and (lead not in page or page.index(lead) > page.index("<img ")):
        raise ValueError("the page does not lead with its summary")
    if lead != "id='summary'" and page.index(lead) > page.find("id='summary'"):
        raise ValueError("the decision summary does not come before the findings")
    records = json.loads((report_dir / "results.json").read_text())
    cells = set(re.findall(r"<tr class='[^']+'><td>([^<]*)</td>", page))
    for record in records:
        if record["id"] not in {unescape(cell) for cell in cells}:
            raise ValueError(f"record {record['id']!r} is not in the page's table")
    return {"figures": len(sources), "records": len(records)}


#: Executables tried by :func:`find_chromium`, in order. First Chromium's headless shell
#: (Debian's ``chromium-headless-shell``: the same Chromium and Blink, built for headless use
#: without the browser's windowing and profile services, as Playwright's own headless
#: Chromium is): one screenshot of the report's first screen took 1.0-1.1 s of CPU with it
#: against 3.8-4.0 s with the full browser run ``--headless`` (Chromium 156, the same PNG
#: bytes); Playwright's launch and three pages 2.7-2.8 s against 4.4-4.5 s. Then the full
#: browser's names.
CHROMIUM_NAMES = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    """Path of the first of :data:`CHROMIUM_NAMES` on ``PATH``, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html_path, png_path, *, width: int = 1400, height: int = 900,
               timeout: float = 120.0) -> Path:
    """Render ``html_path`` with headless Chromium and save a PNG screenshot.

    Raises
    ------
    FileNotFoundError
        If Chromium is not installed (``apt-get install chromium-headless-shell``).
    RuntimeError
        If Chromium fails or writes no image.
    """
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium not found; install it with: "
                                "apt-get install chromium-headless-shell (or chromium)")
    html_path, png_path = Path(html_path).resolve(), Path(png_path).resolve()
    with tempfile.TemporaryDirectory(prefix="dprisk-chromium-") as profile:
        command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                   f"--window-size={width},{height}", f"--screenshot={png_path}",
                   html_path.as_uri()]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                check=False)
    if result.returncode != 0 or not png_path.is_file() or png_path.stat().st_size == 0:
        raise RuntimeError(f"chromium failed ({result.returncode}): {result.stderr[-500:]}")
    return png_path


def screenshot_figures(report_dir, *, width: int = 1400, height: int = 1100) -> list[Path]:
    """Render each figure section of ``report_dir/index.html`` (figure and caption) to a PNG.

    Each ``<figure>`` is rendered alone with the page's style, to
    ``report_dir/screenshots/<figure id>.png``.
    """
    report_dir = Path(report_dir).resolve()
    page = (report_dir / "index.html").read_text()
    head = page[:page.index("<body>") + len("<body>")]
    out_dir = report_dir / "screenshots"
    out_dir.mkdir(exist_ok=True)
    written = []
    for match in re.finditer(r"<figure id='([^']+)'>.*?</figure>", page, re.S):
        section = report_dir / f".section-{match.group(1)}.html"
        section.write_text(f"{head}{match.group(0)}</body></html>")
        try:
            written.append(screenshot(section, out_dir / f"{match.group(1)}.png", width=width,
                                      height=height))
        finally:
            section.unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    """Check ``REPORT_DIR`` and write ``REPORT_DIR/screenshot.png``; return the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    report_dir = Path(argv[0] if argv else "report")
    try:
        counts = check_report(report_dir)
        png = screenshot(report_dir / "index.html", report_dir / "screenshot.png")
        sections = screenshot_figures(report_dir)
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        print(f"screenshot: error: {err}", file=sys.stderr)
        return 1
    print(f"{counts['records']} records and {counts['figures']} figures checked; wrote {png} "
          f"(first screen) and {len(sections)} figure sections in {png.parent / 'screenshots'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
