"""The system Chromium under Playwright, for the browser tests (explore, JupyterLab).

The browser is never downloaded: Playwright launches the system executable
(``/usr/bin/chromium``; ``apt-get install chromium``, which ``.ci/run`` does). Where it or
the ``playwright`` package is missing, a module using :func:`needs_chromium` and
:func:`launched_chromium` is SKIPPED, saying so.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: Headless, no sandbox (CI containers run as root), nothing fetched in the background.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
#: Chromium features the tests turn off besides Playwright's: the address bar's WebUI popups
#: (``chrome://omnibox-popup.top-chrome/`` and its AI-mode page), which Chromium 15x preloads
#: in a renderer of their own with a browser's first tab although a headless browser shows no
#: address bar (about 1.2 s of that renderer's CPU and 0.3 s of the browser process's per
#: launch, three interleaved pairs, 2026-11-29; the page's own renderer is unchanged).
DISABLED_FEATURES = ["WebUIOmniboxPopup", "WebUIOmniboxAimPopup"]
#: Where Playwright's driver lists the features it disables (``--disable-features=`` of its
#: own launch arguments, ``chromiumSwitches.ts``).
_PLAYWRIGHT_BUNDLE = Path("driver", "package", "lib", "coreBundle.js")


def playwright_disabled_features(package_dir: Path) -> list[str] | None:
    """The features Playwright disables when it launches Chromium, read from its driver's
    bundle in ``package_dir`` (the ``playwright`` package); None where they cannot be read.

    Chromium takes the last ``--disable-features`` of its command line, so a launch that adds
    features must repeat Playwright's own.
    """
    try:
        bundle = (package_dir / _PLAYWRIGHT_BUNDLE).read_text(encoding="utf-8")
    except OSError:
        return None
    start = bundle.find("disabledFeatures = [")
    listed = re.compile(r"disabledFeatures = \[(.*?)\]\.filter\(Boolean\)", re.S).match(
        bundle, max(start, 0))
    used = '"--disable-features=" + disabledFeatures.join(' in bundle
    if start < 0 or listed is None or not used:
        return None
    items = [item.strip() for item in re.sub(r"//[^\n]*", "", listed.group(1)).split(",")]
    names = [item[1:-1] for item in items if item]
    if not names or not all(re.fullmatch(r'"\w+"', item) for item in items if item):
        return None  # not a plain list of names: read nothing rather than part of it
    return names


def chromium_args(package_dir: Path) -> list[str]:
    """:data:`CHROMIUM_ARGS`, and :data:`DISABLED_FEATURES` with Playwright's own where its
    list can be read (without it, only :data:`CHROMIUM_ARGS`)."""
    playwright_features = playwright_disabled_features(package_dir)
    if playwright_features is None:
        return list(CHROMIUM_ARGS)
    features = playwright_features + [f for f in DISABLED_FEATURES
                                      if f not in playwright_features]
    return [*CHROMIUM_ARGS, "--disable-features=" + ",".join(features)]


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
    args = chromium_args(Path(sync_api.__file__).resolve().parents[1])
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=args)
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
