"""Byte-compile the environment's libraries and the package's own trees on every core.

``make setup`` runs it once after installing, so that no process of the tests or the report
compiles a library module again (this environment sets ``PYTHONDONTWRITEBYTECODE``: without
the ``.pyc`` files every interpreter would compile each module it imports, every time)::

    python tools/compile_libraries.py [--everything] [--no-keep] SITE_PACKAGES [TREE ...]

It does what ``python -m compileall -q -j 0 -x REGEX`` did, for less CPU: the files are split
into one share per core up front and each share compiled by a forked process with
:func:`compileall.compile_file` (the same ``.pyc`` bytes, timestamp-checked), where
``compileall``'s pool starts a fork server, imports in each worker and sends every file to a
worker and its answer back on its own (on the 2-core machine, 7,500 files: about 52-59 s of
CPU with ``compileall``, 41-44 s split up front, measured side by side under the same load).

Each compilation is kept for the next set-up (a fresh clone's, a new venv's), by the SHA-256
of its source, below dprisk's cache directory (:func:`kept_folder`): a source compiled once is
then not compiled again, its ``.pyc`` written from the kept code with its own header (about 35
s of CPU, 18 s of wall, for the 5,600 files of a set-up here). A library's ``.pyc`` is then a
hard link to the kept file, as its source is to uv's cache. Kept compilations unused for
:data:`KEPT_DAYS` are removed; ``--no-keep`` neither reads nor keeps.

The further trees (the package's link tree ``build``, and its source tree: ``python -m
pytest`` and any ``python -m``/``-c`` run from the repository imports ``dprisk`` from
``./dprisk``, the current folder being first on ``sys.path``) are compiled whole, but for test
modules and ``conftest.py`` files, whose assertion-rewritten ``.pyc`` pytest writes itself.

Left out of ``SITE_PACKAGES``, compiled on first import as any library is, should a process
ever import them:

- the libraries' own test suites (folders named ``test``, ``tests`` or ``testing``), but for
  NumPy's and xarray's ``testing`` packages, which every process importing SciPy's special
  functions or xarray's assertions imports;
- the modules and subtrees of :data:`SKIP_LIST` (paths relative to ``SITE_PACKAGES``, without
  ``.py``): those no process of a default test run read, measured with
  ``benchmarks/unread_packages.py --list`` in an environment compiled with ``--everything``
  (the skip list not applied: a module with no ``.pyc`` cannot be seen read).
"""

from __future__ import annotations

import compileall
import contextlib
import hashlib
import importlib.util
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
if str(TOOLS) not in sys.path:  # loaded from its file (the tests), not run as a script
    sys.path.insert(0, str(TOOLS))

from cache_root import dprisk_cache_root, write_whole  # noqa: E402  (tools/cache_root.py)

#: Site-packages-relative modules and subtrees (``pkg/sub/mod``, ``pkg/sub``) not compiled.
SKIP_LIST = Path(__file__).resolve().parent / "compile_skip.txt"
#: Folders of the libraries' own test suites, never imported here (module paths with a
#: leading ``/``).
TEST_FOLDERS = re.compile(r"/(tests?|(?<!^/numpy/)(?<!^/xarray/)testing)/")
#: pytest's test modules and conftest files (``.pyc`` files of their own, assertions rewritten).
PYTEST_MODULES = re.compile(r"(^|/)(test_[^/]*|conftest)$")


def skipped_prefixes(path: Path = SKIP_LIST) -> frozenset[str]:
    """The lines of the skip list (comments ``#`` and blank lines left out)."""
    if not path.is_file():
        return frozenset()
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return frozenset(line for line in lines if line)


def is_skipped(module: str, skip: frozenset[str]) -> bool:
    """Whether ``module`` (``pkg/sub/mod``) or a folder above it is in ``skip``."""
    parts = module.split("/")
    return any("/".join(parts[:level]) in skip for level in range(1, len(parts) + 1))


def files_to_compile(root: Path, skip: frozenset[str] = frozenset(), *,
                     library: bool = True) -> list[str]:
    """The ``.py`` files under ``root`` that are compiled.

    Left out: ``skip`` (paths relative to ``root``) and, for a ``library``, its test folders
    (:data:`TEST_FOLDERS`), else pytest's own modules (:data:`PYTEST_MODULES`).
    """
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        relative = Path(folder).relative_to(root).as_posix()
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            full = os.path.join(folder, name)
            module = name[:-3] if relative == "." else f"{relative}/{name[:-3]}"
            left_out = (TEST_FOLDERS.search(f"/{module}") if library
                        else PYTEST_MODULES.search(module))
            if not left_out and not is_skipped(module, skip):
                found.append(full)
    return found


#: Days a kept compilation stays unused before :func:`prune_kept` removes it.
KEPT_DAYS = 30
#: Seconds after which a ``.partial`` file is a leftover, whatever process has its id now.
PARTIAL_SECONDS = 3600
#: Bytes of a ``.pyc`` header (PEP 552): magic number, flags, then the source's time and size.
HEADER_BYTES = 16


def kept_folder() -> Path:
    """Where compilations are kept between set-ups: ``pyc/<tag>-<magic>/``, dprisk's cache.

    The folder is below dprisk's cache directory, named by the interpreter's cache tag and
    bytecode magic number: another interpreter never reads them.
    """
    tag = f"{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}"
    return dprisk_cache_root() / "pyc" / tag


def _kept_path(source: bytes) -> Path:
    key = hashlib.sha256(source).hexdigest()
    return kept_folder() / key[:2] / key[2:]


def timestamp_header(path: str) -> bytes:
    """The timestamp-checked ``.pyc`` header (PEP 552) of the source at ``path``.

    Magic number, flags 0, then the source's modification time and size, which the import
    system compares with the source's when it reads the ``.pyc``.
    """
    status = os.stat(path)
    return (importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
            + (int(status.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
            + (status.st_size & 0xFFFFFFFF).to_bytes(4, "little"))


def _replace_with_link(existing: Path | str, path: Path | str) -> None:
    """Make ``path`` a hard link to ``existing``, replacing whatever was there whole.

    A link under a temporary name is renamed over ``path``: nothing is ever written into it.
    When ``path`` is already a link to ``existing`` (a set-up run again in the same tree) there
    is nothing to do; a rename between two links to one file does nothing and would leave the
    temporary name behind (POSIX ``rename``), so that name is removed whatever happened.
    """
    with contextlib.suppress(FileNotFoundError):
        if os.path.samestat(os.stat(existing), os.stat(path)):
            return
    partial = f"{path}.{os.getpid()}.partial"
    os.link(existing, partial)
    try:
        os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)


def _from_kept(path: str, kept: Path) -> bool:
    """Write ``path``'s ``.pyc`` from ``kept``, a compilation of the same source; whether done.

    The kept code is this source's, compiled under another path: the import system sets the
    code's file name to the module's own when it loads a ``.pyc`` (``_imp._fix_co_filename``)
    and checks its header against the source, as for any ``.pyc``. When the header is this
    source's too (a library file that uv linked from its cache into every venv, with one
    modification time), the ``.pyc`` is a hard link to the kept file, as the venv's sources are
    to uv's cache; otherwise (the package's own trees, checked out anew) a copy under this
    source's header.
    """
    try:
        with open(kept, "rb") as handle:
            kept_header = handle.read(HEADER_BYTES)
            header = timestamp_header(path)
            target = importlib.util.cache_from_source(path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if kept_header[:8] != header[:8]:  # not this interpreter's timestamp-checked pyc
                return False
            linked = False
            if kept_header == header:
                with contextlib.suppress(OSError):  # the cache on another file system
                    _replace_with_link(kept, target)
                    linked = True
            if not linked:  # a copy under this source's header
                write_whole(target, header + handle.read())
        os.utime(kept)  # used: kept another KEPT_DAYS
    except OSError:
        return False
    return True


def _keep(path: str, kept: Path) -> None:
    """Keep ``path``'s freshly written ``.pyc`` for the next set-up, as ``kept``.

    A hard link to it (else a copy), if it is timestamp-checked; nothing when the cache
    cannot be written.
    """
    try:
        target = importlib.util.cache_from_source(path)
        with open(target, "rb") as handle:
            if handle.read(HEADER_BYTES)[:8] != timestamp_header(path)[:8]:
                return  # a hash-checked .pyc (SOURCE_DATE_EPOCH set): not kept
        kept.parent.mkdir(parents=True, exist_ok=True)
        try:
            _replace_with_link(target, kept)
        except OSError:  # another file system
            write_whole(kept, Path(target).read_bytes())
    except OSError:
        pass


def _compile_one(path: str, keep: bool) -> bool:
    """Compile ``path`` (or take its kept compilation); whether it compiled."""
    kept = None
    if keep:
        try:
            kept = _kept_path(Path(path).read_bytes())
        except OSError:
            pass
        if kept is not None and _from_kept(path, kept):
            return True
    compiled = bool(compileall.compile_file(path, quiet=2))
    if compiled and kept is not None:
        _keep(path, kept)
    return compiled


def _compile_share(files: list[str], keep: bool = False) -> int:
    """Compile ``files`` in this process; the number that failed (a syntax error, say)."""
    return sum(not _compile_one(path, keep) for path in files)


def prune_kept(days: float = KEPT_DAYS) -> int:
    """Remove kept compilations unused for ``days``, and stale partial files; how many.

    (A partial file whose set-up still runs, :func:`is_stale_partial`, stays.)
    """
    now, removed = time.time(), 0
    for folder, _, names in os.walk(dprisk_cache_root() / "pyc"):
        for name in names:
            path = os.path.join(folder, name)
            try:
                if now - os.stat(path).st_mtime > days * 86400 or is_stale_partial(path, now):
                    os.remove(path)
                    removed += 1
            except OSError:
                pass
    return removed


def _writer_running(name: str) -> bool:
    """Whether the process that named the temporary file ``name`` (``X.<pid>.partial``) runs."""
    try:
        pid = int(name.rsplit(".", 2)[-2])
    except (IndexError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def is_stale_partial(path: str, now: float) -> bool:
    """Whether ``path`` is a ``.partial`` file left by a set-up that is over.

    Its writer (the process id in its name) no longer runs, or it is an hour old. The age
    alone does not tell: a temporary link to a kept compilation shares its inode, whose time
    every set-up that uses it renews.
    """
    if not path.endswith(".partial"):
        return False
    try:
        return (not _writer_running(os.path.basename(path))
                or now - os.stat(path).st_mtime > PARTIAL_SECONDS)
    except OSError:
        return False


def remove_stale_partials(root: Path) -> int:
    """Remove the stale ``.partial`` files of ``root``'s ``__pycache__`` folders; how many.

    Set-ups before the rename fix in :func:`_replace_with_link` left one behind for every
    ``.pyc`` that was already linked (:func:`is_stale_partial` tells them from a running
    set-up's).
    """
    now, removed = time.time(), 0
    for folder, subfolders, names in os.walk(root):
        if os.path.basename(folder) != "__pycache__":
            continue
        subfolders[:] = []
        for name in names:
            path = os.path.join(folder, name)
            if is_stale_partial(path, now):
                with contextlib.suppress(OSError):
                    os.remove(path)
                    removed += 1
    return removed


def compile_files(files: list[str], processes: int | None = None, *,
                  keep: bool = False) -> int:
    """Compile ``files`` on ``processes`` cores (default all), one share each; failures.

    With ``keep``, a file whose source was compiled by an earlier set-up takes that
    compilation (:func:`kept_folder`, by the source's SHA-256), and the others' are kept.
    """
    processes = max(1, min(processes or os.cpu_count() or 1, len(files)))
    if processes == 1:
        return _compile_share(files, keep)
    shares = [(files[index::processes], keep) for index in range(processes)]
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with context.Pool(processes) as pool:
        return sum(pool.starmap(_compile_share, shares, chunksize=1))


def main(argv: list[str]) -> int:
    """Compile ``SITE_PACKAGES`` (less the skip list) and each further tree; exit status.

    2 with the usage when no folder is given; else 0, failures counted on standard error.
    Stale ``.partial`` files in the folders' ``__pycache__`` folders are removed.
    Compilations are kept for the next set-up (and those unused for :data:`KEPT_DAYS`
    removed) but with ``--no-keep``.
    """
    everything = "--everything" in argv
    keep = "--no-keep" not in argv
    folders = [Path(arg) for arg in argv if arg not in ("--everything", "--no-keep")]
    if not folders:
        print(__doc__.split("\n\n", 2)[1], file=sys.stderr)
        return 2
    site_packages, *others = folders
    files = files_to_compile(site_packages, frozenset() if everything else skipped_prefixes())
    for other in others:
        files += files_to_compile(other, library=False)
    failed = compile_files(files, keep=keep)
    if failed:  # as on first import: the library's own error, raised where it is imported
        print(f"compile_libraries: {failed} of {len(files)} files did not compile",
              file=sys.stderr)
    for folder in folders:
        remove_stale_partials(folder)
    if keep:
        prune_kept()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
