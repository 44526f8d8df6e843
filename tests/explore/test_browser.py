"""``dprisk explore`` in a real browser: Playwright drives the system's headless Chromium.

The test starts ``dprisk explore --no-browser --port PORT`` as a subprocess, loads the page,
moves the rho1 slider with the keyboard and checks that the displayed P[correct] is the API's
:func:`dprisk.inference.single_level.closed_form.p_correct` at the displayed rho1 (the page shows
10 significant digits, so the tolerance is 1e-9 relative); types text into the p box and checks
the message and that the server still answers (a small static file, not a second page: a page
load builds every view, 1.6-1.9 s of the server's CPU); changes a slow view (accounting,
computed in a worker thread) and runs the sampling check; checks that every view shows its
numbers, each on its tab as the test comes to it (switching to a tab lays out its plots:
0.3-0.8 s of Chromium's CPU a switch, so no tab is shown twice for this); and fails on any
console error of the page. The module's tests share one page (``visit``: one Panel session,
loaded once; each test first shows the tab it needs).
With ``DPRISK_GALLERY=1`` it also writes a screenshot of each view to ``docs/gallery/`` (only
then: the tests never rewrite tracked files); otherwise it takes none.

Where the system Chromium (its headless shell ``/usr/bin/chromium-headless-shell``, which
``.ci/run`` installs with apt-get, else ``/usr/bin/chromium``: ``browser_helpers.CHROMIUM``) or
the ``playwright`` package is missing, the test is SKIPPED saying so. The browser is never
downloaded: Playwright launches the system executable.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser_helpers import free_port, launched_chromium, listens, needs_chromium, stop_server

from dprisk.inference.privacy.accounting import epsilon_cks
from dprisk.inference.single_level import closed_form as sl

GALLERY = Path(__file__).resolve().parents[2] / "docs" / "gallery"
#: Seconds to wait for the server's first page (it warms its kernels before listening).
START_TIMEOUT = 180
#: Milliseconds to wait for the page to show an update.
UPDATE_MS = 30_000
#: Milliseconds to wait for the sampling check (Gibbs, ArviZ plots; first use loads ArviZ).
SAMPLING_MS = 120_000
#: The displayed numbers have 10 significant digits.
DISPLAY_RTOL = 1e-9

pytestmark = [needs_chromium("the browser test")]


#: A small file the page loads (1.6 kB): the server's HTTP side answers it without building a
#: page (a GET of the page itself builds every view: seconds of the server's CPU).
SMALL_STATIC = "static/extensions/panel/css/loading.css"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status == 200 and len(response.read()) > 0
    except OSError:
        return False


@pytest.fixture(scope="module")
def server_process(tmp_path_factory):
    """``dprisk explore`` started, not yet listening: (process, port, log path).

    Stopped at the module's end; the test fails if the server logged an error.
    """
    port = free_port()
    log = tmp_path_factory.mktemp("explore") / "server.log"
    command = [str(Path(sys.prefix) / "bin" / "dprisk"), "explore", "--no-browser",
               "--port", str(port)]
    with log.open("w") as log_file:  # the server writes to its own copy of the descriptor
        proc = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, text=True)
    try:
        yield proc, port, log
    finally:
        stop_server(proc, 20)
    errors = [line for line in log.read_text().splitlines() if "Error" in line]
    assert not errors, "the server logged errors:\n" + log.read_text()[-3000:]


@pytest.fixture(scope="module")
def server(server_process, browser):
    """The server's URL, once it listens. Chromium is launched (``browser``) while the server
    warms its views (seconds) before it listens."""
    proc, port, log = server_process
    # wait until it listens (a TCP connection), not until a GET answers: a GET builds a whole
    # page of every view (seconds of CPU) that nothing looks at; the module's one page load
    # (``visit``) checks the answer's status
    deadline = time.monotonic() + START_TIMEOUT
    while not listens(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            # server_process stops the server (nothing left running)
            pytest.fail(f"dprisk explore exited with {proc.returncode}: {log.read_text()}"
                        if proc.poll() is not None
                        else f"dprisk explore did not listen within {START_TIMEOUT} s")
        time.sleep(0.1)
    return f"http://127.0.0.1:{port}/"


@pytest.fixture(scope="module")
def browser():
    with launched_chromium() as chromium:
        yield chromium


class Visit:
    """The module's one page of the explorer (one Panel session: the server builds every view
    for each page load, and Chromium lays each page out: about 3 s of CPU a page), with what it
    reported from its first load on: console errors (``problems``) and requests to the
    unreachable address the typed markup names (``foreign``)."""

    def __init__(self, page):
        self.page, self.problems, self.foreign = page, [], []
        page.on("console", lambda m: self.problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda err: self.problems.append(str(err)))
        page.on("request", lambda r: self.foreign.append(r.url) if ":9/" in r.url else None)


@pytest.fixture(scope="module")
def visit(server, browser):
    """The page, loaded once for the module's tests; each test starts on the tab it needs."""
    visit = Visit(browser.new_page(viewport={"width": 1400, "height": 1000}))
    response = visit.page.goto(server)
    assert response is not None and response.status == 200, response
    yield visit
    visit.page.close()


def _show_tab(page, title: str) -> None:
    page.locator(".bk-tab", has_text=title).first.click()


def _number(page, view: str, key: str) -> float:
    return float(page.locator(f"#{view}-{key}").inner_text())


def test_explore_in_chromium(server, visit):
    from playwright.sync_api import expect

    page, problems = visit.page, visit.problems
    _show_tab(page, "Single level")
    rho_cell = page.locator("#single-rho1")
    expect(rho_cell).to_be_visible(timeout=UPDATE_MS)
    start = rho_cell.inner_text()
    assert _number(page, "single", "p_correct") == pytest.approx(
        sl.p_correct(float(start), 0.5), rel=DISPLAY_RTOL)

    # move the rho1 slider: five steps of 0.001 to the right
    handle = page.locator(".dprisk-single-rho1 .noUi-handle")
    handle.focus()
    for _ in range(5):
        handle.press("ArrowRight")
    expect(rho_cell).to_have_text("0.104", timeout=UPDATE_MS)
    expect(page.locator(".dprisk-current").first).not_to_have_text(
        "current: request #1", timeout=UPDATE_MS)  # #1 at load; Bokeh may merge the steps
    rho1 = _number(page, "single", "rho1")
    assert rho1 != float(start)
    assert _number(page, "single", "p_correct") == pytest.approx(
        sl.p_correct(rho1, 0.5), rel=DISPLAY_RTOL)

    # a bad value: a message in the page, no current numbers, and the server still answers
    p_box = page.locator(".dprisk-single-p input")
    p_box.fill("abc")
    p_box.press("Enter")
    message = page.locator(".dprisk-message").first
    expect(message).to_contain_text("p must be a number", timeout=UPDATE_MS)
    expect(page.locator("#single-p_correct")).to_have_count(0)
    assert _answers(server + SMALL_STATIC)
    p_box.fill("1/3")
    p_box.press("Enter")
    expect(page.locator("#single-p")).to_have_text(f"{1 / 3:.10g}", timeout=UPDATE_MS)
    expect(message).to_be_hidden()
    expect(page.locator("#single-numbers")).to_be_visible(timeout=UPDATE_MS)
    assert _number(page, "single", "p_correct") == pytest.approx(
        sl.p_correct(rho1, 1 / 3), rel=DISPLAY_RTOL)

    # a slow view computes in a worker thread, then shows the new numbers as current
    page.locator(".bk-tab", has_text="Accounting").first.click()
    rho_box = page.locator(".dprisk-accounting-rho input")
    rho_box.fill("1")
    rho_box.press("Enter")
    expect(page.locator("#accounting-rho")).to_have_text("1", timeout=UPDATE_MS)
    expect(page.locator("#accounting-numbers")).to_be_visible(timeout=UPDATE_MS)
    assert _number(page, "accounting", "epsilon_cks") == pytest.approx(
        epsilon_cks(1.0, 1e-10), rel=DISPLAY_RTOL)

    # check by sampling: Gibbs in the background, then az.summary and the verdict
    page.locator(".bk-tab", has_text="Two levels").first.click()
    page.locator(".dprisk-sampling-draws input").fill("1000")
    page.locator(".dprisk-sampling-draws input").press("Enter")
    page.get_by_role("button", name="Check by sampling (Gibbs)").click()
    expect(page.locator(".dprisk-sampling-status")).to_contain_text(
        "P[X1 = m+1 | D] =", timeout=SAMPLING_MS)

    expect(page.locator("#two-numbers")).to_be_visible(timeout=UPDATE_MS)

    # every view shows its numbers: the three above were seen on their tabs, the other two
    # are shown now; with DPRISK_GALLERY=1, each tab again and a screenshot of each for the
    # docs (nothing reads a screenshot otherwise, so none is taken)
    gallery = os.environ.get("DPRISK_GALLERY") == "1"
    views = {"Single level": "single", "Two levels": "two", "P[correct] vs rho": "pcorrect",
             "Budget for a risk target": "budget", "Accounting": "accounting"}
    seen = () if gallery else ("single", "two", "accounting")
    for title, view in views.items():
        if view in seen:
            continue
        page.locator(".bk-tab", has_text=title).first.click()
        expect(page.locator(f"#{view}-numbers")).to_be_visible(timeout=UPDATE_MS)
        if gallery:  # the documentation's screenshots show the drawn plot
            page.wait_for_timeout(500)
            page.screenshot(path=str(GALLERY / f"explore_{view}.png"))
    assert not problems, f"console errors: {problems}"


def test_typed_markup_shows_as_text(visit):
    """``<img>`` and Markdown typed into a box come back in the message as written."""
    from playwright.sync_api import expect

    typed = "2**53 __init__ PATH.py ![](http://127.0.0.1:9/md.png) <img src=http://127.0.0.1:9/i.png>"
    page, foreign = visit.page, visit.foreign
    _show_tab(page, "Single level")
    expect(page.locator("#single-rho1")).to_be_visible(timeout=UPDATE_MS)
    p_box = page.locator(".dprisk-single-p input")
    p_box.fill(typed)
    p_box.press("Enter")
    message = page.locator(".dprisk-message").first
    expect(message).to_contain_text(typed, timeout=UPDATE_MS)
    for tag in ("img", "a", "strong", "em"):
        assert message.locator(tag).count() == 0, tag
    assert not foreign, f"the page loaded {foreign}"
    assert not visit.problems, f"console errors: {visit.problems}"
