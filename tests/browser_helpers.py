"""The system Chromium under Playwright, for the browser tests (explore, JupyterLab).

The browser is never downloaded: Playwright launches the system executable the report's
screenshots use (:func:`dprisk.validation.report.screenshot.find_chromium`: Chromium's
headless shell, ``/usr/bin/chromium-headless-shell``, which ``.ci/run`` installs with
``apt-get install chromium-headless-shell``, else ``/usr/bin/chromium``). Where it or the
``playwright`` package is missing, a module using :func:`needs_chromium` and
:func:`launched_chromium` is SKIPPED, saying so.
"""

from __future__ import annotations

import contextlib
import re
import socket
from pathlib import Path

import pytest

from dprisk.validation.report.screenshot import find_chromium

CHROMIUM = find_chromium() or "/usr/bin/chromium"
#: Headless, no sandbox (CI containers run as root), nothing fetched in the background.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
#: Chromium features no test page uses that cost CPU at every launch: the address bar's
#: popups are web pages of their own (``chrome://omnibox-popup.top-chrome``), built in a
#: renderer of their own at start even when headless. Launch, one page, 3 s idle, close
#: (Chromium 156): 2.69-2.87 s of CPU with them, 1.17 s without.
UNUSED_FEATURES = ["WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup"]


def _playwright_disabled_features(sync_api) -> list[str] | None:
    """The features Playwright itself disables (its ``--disable-features`` list), or None.

    Chromium reads only the last ``--disable-features`` of its command line, and Playwright
    puts its own before the caller's: a caller's list must repeat Playwright's, read here
    from the installed driver (``chromiumSwitches``). None if it cannot be read: the caller
    then passes no list of its own, and Playwright's stands.
    """
    driver = Path(sync_api.__file__).resolve().parents[1] / "driver" / "package" / "lib"
    for source in (driver / "server" / "chromium" / "chromiumSwitches.js",
                   driver / "coreBundle.js"):
        try:
            text = source.read_text(encoding="utf-8")
        except OSError:
            continue
        found = re.search(r"disabledFeatures = \[(.*?)\]", text, re.S)
        if found:
            body = re.sub(r"//[^\n]*", "", found.group(1))  # its comments name features too
            names = re.findall(r'"([^"\s]+)"', body)
            return names or None
    return None


def chromium_args(sync_api) -> list[str]:
    """:data:`CHROMIUM_ARGS`, and :data:`UNUSED_FEATURES` disabled with Playwright's own."""
    theirs = _playwright_disabled_features(sync_api)
    if theirs is None:
        return list(CHROMIUM_ARGS)
    return [*CHROMIUM_ARGS, "--disable-features=" + ",".join([*theirs, *UNUSED_FEATURES])]


def needs_chromium(what: str):
    """A ``skipif`` mark for a module that needs the system Chromium (``what`` runs in it)."""
    return pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"no system Chromium (apt-get install -y chromium-headless-shell; .ci/run "
        f"installs it): {what} cannot run here")


@contextlib.contextmanager
def launched_chromium():
    """The system Chromium launched by Playwright (skips without the playwright package)."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is not installed (make setup)")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=chromium_args(sync_api))
        try:
            yield chromium
        finally:
            chromium.close()


def stop_server(proc, seconds: float) -> None:
    """Stop a server process of a module's fixture: SIGTERM, then SIGKILL after ``seconds``."""
    import subprocess

    proc.terminate()
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listens(port: int) -> bool:
    """Whether a server accepts a TCP connection on 127.0.0.1:``port`` now."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def wait_listening(port: int, seconds: float = 30.0) -> None:
    """Return once a server accepts connections on 127.0.0.1:``port``; fail after ``seconds``."""
    import time

    deadline = time.monotonic() + seconds
    while not listens(port):
        if time.monotonic() > deadline:
            raise AssertionError(f"no server listened on port {port} within {seconds} s")
        time.sleep(0.1)


def close_sessions_in(loop, sessions, seconds: float) -> None:
    """Close bokeh client ``sessions`` inside their running tornado ``loop``, then run it
    ``seconds`` more (the closing handshakes).

    A session closed outside its loop writes the websocket's closing frame with no running
    loop: tornado's write future then asks asyncio for the thread's loop, which makes one that
    nothing closes (so does a loop made current: the tests' loops are made with
    ``make_current=False``); the next ``asyncio.run()`` drops it, and its ResourceWarning (an
    unclosed loop and its two sockets) failed whichever test ran then.
    """
    import asyncio

    async def close_and_wait():
        for session in sessions:
            session.close()
        await asyncio.sleep(seconds)

    loop.run_sync(close_and_wait)
