"""What a test process costs besides its tests: collection and exit (issue 36).

Loaded by ``tests/conftest.py`` (``pytest_plugins``), in the xdist controller and in each worker.

* Assertion rewriting once, not once per worker. Every xdist worker imports every test module at
  collection, and pytest rewrites each module's ``assert`` statements first (parse, rewrite,
  compile: about 5 s of CPU for the 220 modules). It keeps the result in a pyc of its own under
  ``__pycache__`` -- but not where ``PYTHONDONTWRITEBYTECODE`` is set, and in a fresh clone the
  two workers start together and both rewrite every module anyway. The controller, which
  imports no test module, rewrites them meanwhile in a thread (:func:`pytest_sessionstart`),
  in the workers' collection order and ahead of them (they start a new interpreter first); a
  worker that finds a module's pyc reads it (pytest checks the source's hash) and rewrites only
  what is not there yet (measured, every module collected: the controller rewrote 221 modules,
  4.6 s of CPU; each worker 5, the plugins it loads at its start, 0.02 s). The pycs are the ones
  pytest itself writes, so later runs read them too.
* No collections at exit. A worker holds about a million objects (PyMC, SciPy, Panel); the
  interpreter's shutdown walks them all in several full collections, for nothing: the process
  ends (1.4-1.8 s of CPU in a ``-n 0`` run of ``tests/models/mechanism`` alone, 0.1 s
  frozen). The session's last clean-up (:func:`pytest_configure`) freezes them
  (``gc.freeze``), so those collections skip them.
* One collection of the whole heap at the session's end, not two. pytest collects once in its
  ``pytest_unconfigure`` (``_pytest.unraisableexception``: what the finalizers of the session's
  garbage cycles raise is reported) and once more in its clean-up, each a walk of the
  worker's million objects (0.7-1.0 s of CPU). What survived the first is frozen right after
  it (:func:`pytest_unconfigure`, last), so the second walks only what was made since.
* Collection with the garbage collector paused, what it made frozen afterwards
  (:func:`pytest_collection`): its imports and items live as long as the process.
* A missing optional module's placeholder made from one frame, not the whole stack
  (:func:`dprisk.runtime.import_costs.lazy_loader_reads_one_frame`, in
  :func:`pytest_configure`): ArviZ's ``arviz_base`` asks ``lazy_loader`` for ``jax`` and
  ``numpyro`` at its import, which read the whole stack for each, 1.0 s of CPU at a worker's
  collection (a deep stack, 3,000 modules loaded), in each worker.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import hashlib
import importlib.util
import os
import threading
from pathlib import Path

import pytest

from dprisk.runtime.collector import collector_paused
from dprisk.runtime.import_costs import lazy_loader_reads_one_frame

#: Key of the controller's :class:`threading.Thread` rewriting the test modules and of the
#: :class:`threading.Event` that stops it early (a session interrupted at once).
_REWRITING = pytest.StashKey[tuple[threading.Thread, threading.Event]]()


def modules_in_collection_order(config: pytest.Config) -> list[Path]:
    """The test modules and ``conftest.py`` files a collection of ``config.args`` imports, in
    pytest's order (each directory's ``conftest.py`` first, then its entries by name,
    depth-first)."""
    patterns = config.getini("python_files")
    base = config.invocation_params.dir

    def walk(folder: Path):
        if (folder / "conftest.py").is_file():
            yield folder / "conftest.py"
        for entry in sorted(folder.iterdir(), key=lambda path: path.name):
            if entry.name.startswith((".", "__pycache__")):
                continue
            if entry.is_dir():
                yield from walk(entry)
            elif entry.name != "conftest.py" and any(fnmatch.fnmatch(entry.name, pattern)
                                                     for pattern in patterns):
                yield entry

    found: dict[Path, None] = {}
    for arg in config.args:
        path = (base / arg.split("::", 1)[0]).resolve()
        if path.is_dir():
            found.update(dict.fromkeys(walk(path)))
        elif path.suffix == ".py" and path.is_file():
            found.update(dict.fromkeys(folder / "conftest.py" for folder in reversed(path.parents)
                                       if (folder / "conftest.py").is_file()
                                       and folder.is_relative_to(config.rootpath)))
            found[path] = None
    return list(found)


def kept_rewrites(config: pytest.Config) -> Path:
    """Where rewritten test modules are kept between runs, by their source's SHA-256:
    ``pyc/<magic>-pytest-<version>[-pass-hook]/`` below dprisk's cache directory
    (:func:`dprisk.runtime.cache.cache_root`), beside ``make setup``'s compiled libraries."""
    from _pytest.assertion import rewrite

    from dprisk.runtime.cache import cache_root

    tag = importlib.util.MAGIC_NUMBER.hex() + rewrite.PYC_TAIL[:-4].replace(".", "-")
    if config.getini("enable_assertion_pass_hook"):
        tag += "-pass-hook"
    return cache_root() / "pyc" / tag


def _take_kept(kept: Path, pyc: Path) -> bool:
    """Make ``pyc`` a hard link to ``kept`` (else a copy), replaced whole; whether done.

    The temporary name is removed whatever happened: a rename between two links to one file
    does nothing and leaves it (POSIX ``rename``), as does a failed one.
    """
    partial = pyc.with_name(f"{pyc.name}.{os.getpid()}.partial")
    try:
        try:
            os.link(kept, partial)
        except OSError:  # no kept copy, or another file system
            partial.write_bytes(kept.read_bytes())
        os.replace(partial, pyc)
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()
    return True


def rewrite_once(config: pytest.Config, paths: list[Path],
                 stop: threading.Event | None = None) -> int:
    """Write pytest's assertion-rewritten pyc of each of ``paths`` that has no current one
    (until ``stop`` is set); return how many were written. Through pytest's own functions
    (``_pytest.assertion.rewrite``, private): where they are not as expected, nothing is
    written and the workers rewrite as before.

    A module rewritten by an earlier run (a fresh clone's first run, another checkout) is not
    rewritten again: pytest's pyc is checked by its source's hash, not its path or time (and
    pytest sets the code's file name to the module's own when it reads it), so the pyc kept
    by that run (:func:`kept_rewrites`, by the source's SHA-256) is linked in; each pyc
    written here is kept so (a link to it).
    """
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        kept_folder = kept_rewrites(config)
        written = 0
        for path in paths:
            if stop is not None and stop.is_set():
                break
            pyc = rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(path, pyc) is not None or not rewrite.try_makedirs(pyc.parent):
                continue
            key = hashlib.sha256(path.read_bytes()).hexdigest()
            kept = kept_folder / key[:2] / key[2:]
            if kept.is_file() and _take_kept(kept, pyc) \
                    and rewrite._read_pyc(path, pyc) is not None:
                written += 1
                with contextlib.suppress(OSError):
                    os.utime(kept)  # used: tools/compile_libraries.py's pruning keeps it
                continue
            source_hash, code = rewrite._rewrite_test(path, config)
            if rewrite._write_pyc(state, code, source_hash, pyc):
                written += 1
                with contextlib.suppress(OSError):
                    kept.parent.mkdir(parents=True, exist_ok=True)
                    _take_kept(pyc, kept)
        return written
    except Exception:  # pytest's internals changed, a syntax error (the worker reports it), ...
        return 0


def pytest_sessionstart(session: pytest.Session) -> None:
    """In the xdist controller: rewrite the test modules in a thread while the workers start."""
    config = session.config
    if config.pluginmanager.has_plugin("dsession") and config.getoption("assertmode") == "rewrite":
        stop = threading.Event()
        thread = threading.Thread(target=rewrite_once,
                                  args=(config, modules_in_collection_order(config), stop),
                                  name="assertion rewriting", daemon=True)
        thread.start()
        config.stash[_REWRITING] = thread, stop


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller's rewriting thread has ended (long before the session does, unless the
    session was interrupted: then it stops after its current module)."""
    running = session.config.stash.get(_REWRITING, None)
    if running is not None:
        thread, stop = running
        stop.set()
        thread.join()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Freeze what survived pytest's collection in its ``pytest_unconfigure`` (this hook runs
    after it): pytest's second collection, in its clean-up, walks only what was made since."""
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Freeze every object (``gc.freeze``) when the session has ended, after every other
    clean-up (the first one added is the last one run): the interpreter's shutdown does not walk
    them. pytest's own last collection (which reports what finalizers of garbage cycles raise)
    runs before, unchanged. Before any test module is imported:
    :func:`lazy_loader_reads_one_frame`."""
    config.add_cleanup(gc.freeze)
    lazy_loader_reads_one_frame()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    """Collect with the garbage collector paused, then freeze what the collection made.

    Collecting imports every test module and the libraries they import (some 7 s of CPU in
    each worker) and builds every test item: objects that live until the session ends, and
    nearly no garbage. The collector, run meanwhile at the test processes' thresholds, walked
    them again and again; paused, it does not, and frozen afterwards (``gc.freeze``, as the
    report's workers freeze what they inherit) they are left out of every later collection
    instead of being walked all at once by the first one. Collecting every module and running
    one test, in one process (three interleaved pairs): 11.9 / 12.3 / 12.3 -> 10.9 / 11.3 /
    11.2 s of CPU. Cyclic garbage the collection made is not reclaimed (it lives as long as
    the process, as its items do); reference counting frees the rest as before.
    """
    with collector_paused():
        try:
            return (yield)
        finally:
            gc.freeze()
