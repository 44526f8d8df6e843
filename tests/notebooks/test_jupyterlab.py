"""A what-if notebook in a real JupyterLab page: Run All, type a number, press Enter (issue 37).

The module starts the venv's ``jupyter lab`` once (``sys.prefix/bin/jupyter``, on 127.0.0.1
only, a random token, no browser, a temporary root directory holding the notebook converted
from ``notebooks/single_level_what_if.py`` with jupytext, and temporary Jupyter config, data,
runtime, settings and workspace directories, so that nothing of the user's ``~/.jupyter`` or
``~/.local/share/jupyter`` is read or written). Playwright drives the system Chromium
(``browser_helpers.CHROMIUM``, as ``tests/explore/test_browser.py`` does): it opens the notebook,
runs all cells (JupyterLab's ``notebook:run-all-cells`` command), and then, in the live
controls' output:

- the result table shows every label as written (``P[X1 = m+1 | x1* = m+1]``: a ``|`` split
  the Markdown table) and every value is the API's at the shown parameters;
- typing ``0.05`` in the rho1 box, ``1/3`` in the p box and ``2`` in the m box, each followed by
  Enter only (the box keeps the focus: no blur), updates the table to the API's numbers;
- one keyboard step of the rho1 slider shows a value at the step's precision (3 decimals)
  and the table follows it; the slider has no tooltip and nothing covers the box.

The kernel JupyterLab offers is checked by name: ``Python 3 (ipykernel)`` (the only
kernelspec the venv's server lists, shown on the notebook toolbar's kernel button), and it
runs the venv's Python (its ``sys.prefix`` is this one's), as the README says.

Cost: one server and one page for the module. The server starts while Chromium launches;
the notebook's kernel is started through the REST API, and Matplotlib, Panel and dprisk are
imported in it (a separate client in a thread, output discarded), while the page is opened
and loads. Waits are on selectors
(never sleeps), with generous timeouts for a loaded machine; displayed numbers have 6
significant digits (``TABLE_DIGITS``), so they are compared with a relative tolerance of
1e-5 (half a unit of the 6th digit is at most 5e-6 relative).

Without Chromium (or the playwright package) the module is SKIPPED, saying so.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from browser_helpers import free_port, launched_chromium, needs_chromium, stop_server
from notebook_kernels import (
    LIBRARY_DOCSTRINGS_AS_WRITTEN,
    PARAM_DOCSTRINGS_AS_WRITTEN,
    WARNING_LINE,
)

import dprisk as dr

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "single_level_what_if.py"
#: Seconds to wait for the server's API.
START_TIMEOUT = 120
#: Milliseconds to wait for the page, the cells and each update (a loaded machine).
PAGE_MS = 120_000
UPDATE_MS = 60_000
#: Shown numbers have 6 significant digits.
DISPLAY_RTOL = 1e-5
#: Server extensions that the page does not need (their import costs seconds); Panel's stays:
#: it serves Panel's and Bokeh's JavaScript to the notebook (else they come from a CDN).
UNUSED_EXTENSIONS = {"jupyter_lsp": False, "jupyter_server_terminals": False,
                     "jupyterlab_jupytext": False, "notebook_shim": False}
#: JupyterLab front-end plugins that the test does not use (less to activate on page load).
UNUSED_PLUGINS = ["@jupyterlab/debugger-extension", "@jupyterlab/extensionmanager-extension",
                  "@jupyterlab/lsp-extension", "jupyterlab-jupytext",
                  "@jupyterlab/terminal-extension", "@jupyterlab/toc-extension",
                  "@jupyterlab/help-extension", "@jupyterlab/csvviewer-extension",
                  "@jupyterlab/pdf-extension", "@jupyterlab/imageviewer-extension",
                  "@jupyterlab/htmlviewer-extension", "@jupyterlab/logconsole-extension",
                  "@jupyterlab/workspaces-extension", "@jupyterlab/pluginmanager-extension",
                  "@jupyterlab/celltags-extension", "@jupyterlab/metadataform-extension",
                  "@jupyterlab/inspector-extension", "@jupyterlab/running-extension",
                  "@jupyterlab/markdownviewer-extension", "@jupyterlab/vega5-extension",
                  "@jupyterlab/json-extension", "@jupyterlab/javascript-extension",
                  "@jupyterlab/audio-extension", "@jupyterlab/video-extension",
                  "@jupyterlab/cell-toolbar-extension", "@jupyterlab/completer-extension",
                  "@jupyterlab/console-extension", "@jupyterlab/fileeditor-extension",
                  "@jupyterlab/hub-extension", "@jupyterlab/launcher-extension",
                  "@jupyterlab/mathjax-extension", "@jupyterlab/mermaid-extension",
                  "@jupyterlab/settingeditor-extension", "@jupyterlab/statusbar-extension",
                  "@jupyterlab/theme-dark-extension",
                  "@jupyterlab/theme-dark-high-contrast-extension",
                  "@jupyterlab/tooltip-extension",
                  # these two ask the server for nbconvert's export formats
                  "@jupyterlab/notebook-extension:export",
                  "@jupyterlab/notebook-extension:update-raw-mimetype"]
#: Page options off: the page's check whether JupyterLab's build is up to date (the server
#: answers it by running ``node`` twice, for its version and yarn's configuration: about 0.6 s
#: of CPU; no build is made or offered here).
UNUSED_PAGE_CHECKS = {"buildCheck": False}
#: The server's configuration file and the page's kernel's IPython start-up file: each
#: process freezes its objects (``gc.freeze``) when it exits, so that the exit's full
#: collections (IPython's, the interpreter's finalisation) do not walk every object it
#: loaded again; nothing else about the exit changes. The fixture's SIGTERM to the server,
#: which shuts the kernel down first, took 1.4-1.8 s and about 0.8 s more of the server's CPU
#: (three interleaved pairs, the server alone, 2026-11-29; 0.13-0.18 s frozen).
FREEZE_AT_EXIT = "import atexit, gc\natexit.register(gc.freeze)\ndel atexit, gc\n"
#: The server's ``node``, first on its ``PATH``: a script that prints nothing. Importing
#: ``jupyterlab.labapp`` asks ``node yarn.js config --json`` for npm's registry
#: (``jupyterlab.commands.get_app_version`` at the module's import, before any configuration
#: is read), used only to install extensions, which the page never does: that ``node`` took
#: 0.5-0.7 s of CPU (two runs, 2026-12-02). With no output the registry is JupyterLab's
#: default, as on a machine without Node.js; nothing else of the server runs ``node`` here
#: (``UNUSED_PAGE_CHECKS``).
NODE_ANSWERING_NOTHING = "#!/bin/sh\nexit 0\n"

pytestmark = [needs_chromium("the JupyterLab test")]


def _api(url: str, token: str, path: str, body: dict | None = None):
    request = urllib.request.Request(
        f"{url}/api/{path}", data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def _write_notebook(root: Path) -> str:
    """``jupytext --to notebook`` of the what-if script into ``root``; the file name."""
    import jupytext

    nb = jupytext.read(NOTEBOOK)
    nb.metadata.pop("jupytext", None)  # as the jupytext command line writes it
    name = NOTEBOOK.with_suffix(".ipynb").name
    jupytext.write(nb, root / name)
    return name


@pytest.fixture(scope="module")
def browser():
    with launched_chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def lab_process(tmp_path_factory):
    """The venv's ``jupyter lab``, started (not yet answering): (process, url, token, root)."""
    home = tmp_path_factory.mktemp("jupyterlab")
    root = home / "root"
    dirs = {key: home / key for key in ("config", "data", "runtime", "settings", "workspaces",
                                        "ipython")}
    for folder in (root, *dirs.values()):
        folder.mkdir()
    notification = dirs["settings"] / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    labconfig = dirs["config"] / "labconfig"
    labconfig.mkdir()
    (labconfig / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": dict.fromkeys(UNUSED_PLUGINS, True), **UNUSED_PAGE_CHECKS}))
    (dirs["config"] / "jupyter_server_config.py").write_text(FREEZE_AT_EXIT)
    node = home / "bin" / "node"
    node.parent.mkdir()
    node.write_text(NODE_ANSWERING_NOTHING)
    node.chmod(0o755)
    startup = dirs["ipython"] / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-freeze-at-exit.py").write_text(FREEZE_AT_EXIT)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(dirs["config"]),
               JUPYTER_DATA_DIR=str(dirs["data"]), JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
               IPYTHONDIR=str(dirs["ipython"]),
               PATH=os.pathsep.join([str(node.parent), os.environ.get("PATH", os.defpath)]))
    env.pop("MPLBACKEND", None)  # the notebook's kernel uses the inline backend
    command = [str(Path(sys.prefix) / "bin" / "jupyter"), "lab", "--no-browser",
               "--ServerApp.open_browser=False", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               "--LabApp.expose_app_in_browser=True",
               f"--LabApp.user_settings_dir={dirs['settings']}",
               f"--LabApp.workspaces_dir={dirs['workspaces']}",
               f"--ServerApp.jpserver_extensions={UNUSED_EXTENSIONS!r}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI containers run as root
    log = home / "server.log"
    with log.open("w") as log_file:
        proc = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env)
    try:
        yield proc, f"http://127.0.0.1:{port}", token, root, log
    finally:
        stop_server(proc, 30)


@pytest.fixture(scope="module")
def lab(lab_process, browser):
    """The server, answering, with the notebook in its root and its kernel starting.

    Yields (url, token, notebook name, the future of :func:`_preload` running in a thread).
    """
    proc, url, token, root, log = lab_process
    name = _write_notebook(root)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            _api(url, token, "status")
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                why = (f"exited with {proc.returncode}" if proc.poll() is not None
                       else f"did not answer within {START_TIMEOUT} s")
                pytest.fail(f"jupyter lab {why}:\n{log.read_text()[-3000:]}")
            time.sleep(0.25)
    # start the notebook's kernel now: it starts while the page loads, and the page's
    # notebook connects to this session (one kernel)
    session = _api(url, token, "sessions", {"path": name, "type": "notebook", "name": name,
                                            "kernel": {"name": "python3"}})
    connection_file = lab_process[3].parent / "runtime" / f"kernel-{session['kernel']['id']}.json"
    # the kernel imports the notebook's heavy modules in a thread while the page is made and
    # loads (the test takes the answer after page.goto); playwright stays on this thread
    with ThreadPoolExecutor(max_workers=1) as pool:
        preload = pool.submit(_preload_in_thread, connection_file)
        yield url, token, name, preload


def _preload(connection_file: Path) -> str:
    """Import the notebook's heavy modules in its kernel (the page loads meanwhile).

    The page's Run All then finds them imported; its cells still all run in the page. The
    kernel's garbage collector takes this test process's thresholds (``tests/conftest.py``'s
    ``GC_THRESHOLDS``) and the imported modules are frozen (``gc.freeze``), so that full
    collections do not walk Panel's, Bokeh's and Matplotlib's objects again and again (only
    when garbage is reclaimed changes). Param keeps its classes' docstrings as written (no
    table of parameters appended to each for ``help()`` in IPython: about 0.4 s of the
    kernel's CPU; ``notebook_kernels.PARAM_DOCSTRINGS_AS_WRITTEN``), and so do SciPy's
    functions and matplotlib's artists (``notebook_kernels.LIBRARY_DOCSTRINGS_AS_WRITTEN``).
    Returns the kernel's ``sys.prefix``.
    """
    from jupyter_client import BlockingKernelClient

    client = BlockingKernelClient(connection_file=str(connection_file))
    client.load_connection_file()
    # no heartbeat: the kernel may still be starting (a missed 1 s heartbeat would count as
    # dead); wait_for_ready asks for kernel_info until the kernel answers or START_TIMEOUT
    client.start_channels(hb=False)
    try:
        client.wait_for_ready(timeout=START_TIMEOUT)
        printed = []
        client.execute_interactive(
            f"import gc; gc.set_threshold{gc.get_threshold()!r}\n"
            f"{PARAM_DOCSTRINGS_AS_WRITTEN}{LIBRARY_DOCSTRINGS_AS_WRITTEN}"
            "import sys, matplotlib.pyplot, panel, dprisk.explore.notebook\n"
            "gc.freeze(); del gc\n"
            "print(sys.prefix)", store_history=False, timeout=START_TIMEOUT,
            output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
        return "".join(printed).strip()
    finally:
        client.stop_channels()


def _preload_in_thread(connection_file: Path) -> str:
    """:func:`_preload` in a worker thread, closing the event loop the client made there."""
    try:
        return _preload(connection_file)
    finally:
        policy = asyncio.get_event_loop_policy()
        try:
            loop = policy.get_event_loop()  # jupyter_client set one for this thread
        except RuntimeError:
            loop = None
        if loop is not None:
            policy.set_event_loop(None)
            loop.close()


def _table(page) -> dict[str, str]:
    rows = page.locator("table.dprisk-live-table tbody tr")
    labels = rows.locator("th").all_inner_texts()
    values = rows.locator("td").all_inner_texts()
    assert len(labels) == len(values), f"cells lost: {labels} vs {values}"
    return dict(zip(labels, values, strict=True))


def _wait_for_whole_table(page) -> None:
    """Wait until the table shows every label of :func:`_expected`, in its order.

    While Panel replaces the output's panes, the new table may be in the page before its cells
    have their text (a run under load read one row of empty cells).
    """
    from playwright.sync_api import expect

    expect(page.locator("table.dprisk-live-table tbody tr th")).to_have_text(
        list(_expected(0.5, 0.5, 0)), timeout=UPDATE_MS)


def _wait_for_new_value(page, label: str, before: str) -> None:
    """Wait until the table shows a value other than ``before`` for ``label``, in a whole table.

    A row that is not in the page also passes ``not_to_have_text`` (while Panel replaces the
    output's panes after a change), so the whole table is awaited, then the value again.
    """
    from playwright.sync_api import expect

    row = page.locator("table.dprisk-live-table tr", has_text=label).locator("td")
    expect(row).not_to_have_text(before, timeout=UPDATE_MS)
    _wait_for_whole_table(page)
    expect(row).not_to_have_text(before, timeout=UPDATE_MS)


def _expected(rho1: float, p: float, known: int) -> dict[str, float]:
    return {"P[X1 = m+1 | x1* = m+1]": float(dr.posterior(known + 1, rho1, p, known)),
            "marginal posterior": float(dr.marginal_posterior(rho1, p, known)),
            "marginal risk R": float(dr.marginal_risk(rho1, p, known)),
            "P[correct]": float(dr.p_correct(rho1, p, known)),
            "threshold": int(dr.single_level.decision_threshold(rho1, p, known))}


def _check_table(shown: dict[str, str], rho1: float, p: float, known: int) -> None:
    expected = _expected(rho1, p, known)
    assert list(shown) == list(expected), f"labels shown: {list(shown)}"
    for label, value in expected.items():
        assert float(shown[label]) == pytest.approx(value, rel=DISPLAY_RTOL), label


#: A cell's printed output in JupyterLab's page: stdout and stderr text (the latter: warnings).
STREAM_OUTPUT = ".jp-RenderedText[data-mime-type='application/vnd.jupyter.{}']"


def check_no_warning_shown(page) -> None:
    """Assert that no cell of the run notebook printed a Python warning (its stderr outputs).

    With the live table shown, every cell has run (the live cell is the last, and Run All
    stops at a failing cell), so the page holds all the printed outputs: the notebook's own
    (stdout, at least one: the selector finds what it must) and any warning. This is the
    check ``test_notebooks.check_ran_quietly`` makes of an executed notebook, here for the
    single-level notebook's live cell with Panel's controls in a kernel (the README's
    papermill run shows that cell's static output: ``test_documented_commands_run_verbatim``).
    """
    assert page.locator(STREAM_OUTPUT.format("stdout")).count() > 0
    printed = page.locator(STREAM_OUTPUT.format("stderr")).all_inner_texts()
    warnings = [line for text in printed for line in text.splitlines()
                if WARNING_LINE.search(line)]
    assert not warnings, "the notebook printed warnings:\n" + "\n".join(warnings)


def test_kernelspecs_offered(lab):
    url, token, _, _ = lab
    offered = _api(url, token, "kernelspecs")
    # the venv's own kernel, the default (a kernel installed system-wide in /usr/share/jupyter
    # would be listed beside it); that it runs the venv's Python is checked below
    assert offered["default"] == "python3"
    assert offered["kernelspecs"]["python3"]["spec"]["display_name"] == "Python 3 (ipykernel)"


def test_live_controls_in_jupyterlab(lab, browser):
    from playwright.sync_api import expect

    url, token, name, preload = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems = []
    page.on("console", lambda m: problems.append(m.text)
            if m.type == "error" and ("bokeh" in m.text.lower() or "panel" in m.text.lower())
            else None)
    page.on("pageerror", lambda err: problems.append(str(err)))
    page.goto(f"{url}/lab/tree/{name}?token={token}")
    # the kernel JupyterLab starts for "Python 3 (ipykernel)" runs the venv's interpreter
    assert preload.result(timeout=2 * START_TIMEOUT) == sys.prefix
    page.wait_for_function(
        "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " return !!(w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel); }", timeout=PAGE_MS)
    # the notebook toolbar's kernel button names the kernel as the README does
    expect(page.get_by_role("button", name="Python 3 (ipykernel)", exact=True).first
           ).to_be_visible(timeout=PAGE_MS)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")

    table_cells = page.locator("table.dprisk-live-table td")
    expect(table_cells.first).to_be_visible(timeout=PAGE_MS)
    _wait_for_whole_table(page)
    _check_table(_table(page), 0.5, 0.2, 0)  # the parameters cell's values
    check_no_warning_shown(page)

    def enter(control: str, text: str, label: str = "P[correct]") -> None:
        before = _table(page)[label]
        box = page.locator(f".dprisk-live-{control}-box input")
        box.fill(text)
        box.press("Enter")  # Enter only: the box keeps the focus
        _wait_for_new_value(page, label, before)
        assert box.evaluate("el => el.getRootNode().activeElement === el"), "box lost focus"

    enter("rho1", "0.05")
    _check_table(_table(page), 0.05, 0.2, 0)
    enter("p", "1/3")
    _check_table(_table(page), 0.05, 1 / 3, 0)
    enter("known", "2", label="threshold")  # the other rows do not depend on m
    _check_table(_table(page), 0.05, 1 / 3, 2)

    # one keyboard step of the slider: the box shows the step's precision, the table follows
    shown = _table(page)
    rho_box = page.locator(".dprisk-live-rho1-box input")
    before = rho_box.input_value()
    handle = page.locator(".dprisk-live-rho1-slider .noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    expect(rho_box).not_to_have_value(before, timeout=UPDATE_MS)
    shown_rho = rho_box.input_value()
    assert len(shown_rho.split(".")[1]) == 3, shown_rho  # step 0.005: three decimals
    _wait_for_new_value(page, "marginal posterior", shown["marginal posterior"])
    _check_table(_table(page), float(shown_rho), 1 / 3, 2)
    # no slider tooltip, and nothing covers the box (Playwright's hit-target check)
    expect(page.locator(".dprisk-live-rho1-slider .noUi-tooltip")).to_have_count(0)
    rho_box.click(trial=True, timeout=UPDATE_MS)
    assert not problems, f"errors in the page: {problems}"
