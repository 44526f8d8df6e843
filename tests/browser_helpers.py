"""The system Chromium under Playwright, for the browser tests (explore, JupyterLab).

The browser is never downloaded: Playwright launches the system executable
(``/usr/bin/chromium``; ``apt-get install chromium``, which ``.ci/run`` does). Where it or
the ``playwright`` package is missing, a module using :func:`needs_chromium` and
:func:`launched_chromium` is SKIPPED, saying so.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: Headless, no sandbox (CI containers run as root), nothing fetched in the background.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def needs_chromium(what: str):
    """A ``skipif`` mark for a module that needs the system Chromium (``what`` runs in it)."""
    return pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"no system Chromium at /usr/bin/chromium (apt-get install -y chromium; "
        f".ci/run installs it): {what} cannot run here")


@contextlib.contextmanager
def launched_chromium():
    """The system Chromium launched by Playwright (skips without the playwright package)."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is not installed (make setup)")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
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
