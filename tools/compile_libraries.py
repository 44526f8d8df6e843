"""Byte-compile the environment's libraries and the package's own trees on every core.

``make setup`` runs it once after installing, so that no process of the tests or the report
compiles a library module again (this environment sets ``PYTHONDONTWRITEBYTECODE``: without
the ``.pyc`` files every interpreter would compile each module it imports, every time)::

    python tools/compile_libraries.py [--everything] SITE_PACKAGES [TREE ...]

It does what ``python -m compileall -q -j 0 -x REGEX`` did, for less CPU: the files are split
into one share per core up front and each share compiled by a forked process with
:func:`compileall.compile_file` (the same ``.pyc`` bytes, timestamp-checked), where
``compileall``'s pool starts a fork server, imports in each worker and sends every file to a
worker and its answer back on its own (on the 2-core machine, 7,500 files: about 52-59 s of
CPU with ``compileall``, 41-44 s split up front, measured side by side under the same load).

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
import multiprocessing
import os
import re
import sys
from pathlib import Path

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


def _compile_share(files: list[str]) -> int:
    """Compile ``files`` in this process; the number that failed (a syntax error, say)."""
    return sum(not compileall.compile_file(path, quiet=2) for path in files)


def compile_files(files: list[str], processes: int | None = None) -> int:
    """Compile ``files`` on ``processes`` cores (default all), one share each; failures."""
    processes = max(1, min(processes or os.cpu_count() or 1, len(files)))
    if processes == 1:
        return _compile_share(files)
    shares = [files[index::processes] for index in range(processes)]
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with context.Pool(processes) as pool:
        return sum(pool.map(_compile_share, shares, chunksize=1))


def main(argv: list[str]) -> int:
    """Compile ``SITE_PACKAGES`` (less the skip list) and each further tree; exit status.

    2 with the usage when no folder is given; else 0, failures counted on standard error.
    """
    everything = "--everything" in argv
    folders = [Path(arg) for arg in argv if arg != "--everything"]
    if not folders:
        print(__doc__.split("\n\n", 2)[1], file=sys.stderr)
        return 2
    site_packages, *others = folders
    files = files_to_compile(site_packages, frozenset() if everything else skipped_prefixes())
    for other in others:
        files += files_to_compile(other, library=False)
    failed = compile_files(files)
    if failed:  # as on first import: the library's own error, raised where it is imported
        print(f"compile_libraries: {failed} of {len(files)} files did not compile",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
