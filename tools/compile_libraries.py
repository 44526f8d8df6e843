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
``./dprisk``, the current folder being first on ``sys.path``) are compiled whole. Their test
modules and ``conftest.py`` files get the ``.pyc`` pytest's assertion rewriter reads instead
(:func:`rewrite_for_pytest`: the same bytes pytest writes, under its own name), which pytest
does not write itself while ``PYTHONDONTWRITEBYTECODE`` is set: each worker of ``make test``
then parsed, rewrote and compiled all 225 test modules at collection, about 7 s of CPU a
worker (collecting in one process: 19.2 / 18.3 s of CPU without them, 11.8 / 11.6 s with).

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


def pytest_modules(root: Path) -> list[str]:
    """The test modules and ``conftest.py`` files under ``root`` (:data:`PYTEST_MODULES`)."""
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        found += [os.path.join(folder, name) for name in sorted(names)
                  if name.endswith(".py") and PYTEST_MODULES.search(name[:-3])]
    return found


def rewrite_for_pytest(path: str) -> bool:
    """Write the ``.pyc`` pytest's assertion rewriter reads for the test module ``path``.

    What pytest's import hook (``_pytest.assertion.rewrite.AssertionRewritingHook``) writes
    when it imports a test module and may write bytecode: the module's asserts rewritten
    (default settings: no ``enable_assertion_pass_hook``), compiled under its absolute path (the
    path pytest imports it by, from the repository's root), in a hash-checked ``.pyc`` named
    with pytest's version (``__pycache__/NAME.PYTEST_TAG.pyc``), replaced atomically. pytest
    checks the source's hash before using it. False, nothing written, where this pytest's
    rewriter lacks those helpers (a later pytest: it then rewrites the module itself) or the
    module does not compile.
    """
    try:
        from _pytest.assertion import rewrite
        source = Path(os.path.abspath(path))
        source_hash, code = rewrite._rewrite_test(source, None)
        pyc = rewrite.get_cache_dir(source) / (source.name[:-3] + rewrite.PYC_TAIL)
        pyc.parent.mkdir(exist_ok=True)
        partial = f"{pyc}.{os.getpid()}"
        with open(partial, "wb") as out:
            rewrite._write_pyc_fp(out, source_hash, code)
        os.replace(partial, pyc)
    except (ImportError, AttributeError, TypeError, SyntaxError, ValueError, OSError):
        return False
    return True


def _compile_share(share: tuple[list[str], list[str]]) -> int:
    """Compile a share's files, then write its test modules' pytest ``.pyc``; failures.

    ``share`` is ``(files, tests)``; failures count the files that did not compile (a syntax
    error, say), not the test modules, which pytest rewrites itself when it finds none.
    """
    files, tests = share
    failed = sum(not compileall.compile_file(path, quiet=2) for path in files)
    for path in tests:
        rewrite_for_pytest(path)
    return failed


def compile_files(files: list[str], processes: int | None = None,
                  tests: list[str] = ()) -> int:
    """Compile ``files`` and write the pytest ``.pyc`` of ``tests``; failures among ``files``.

    On ``processes`` cores (default all), each a share of both lists
    (:func:`rewrite_for_pytest` for the test modules).
    """
    tests = list(tests)
    if tests:  # imported once here (0.3 s), not in each forked share
        with contextlib.suppress(ImportError):
            import _pytest.assertion.rewrite  # noqa: F401
    processes = max(1, min(processes or os.cpu_count() or 1, len(files) + len(tests)))
    if processes == 1:
        return _compile_share((files, tests))
    shares = [(files[index::processes], tests[index::processes])
              for index in range(processes)]
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
    tests = []
    for other in others:
        files += files_to_compile(other, library=False)
        tests += pytest_modules(other)
    failed = compile_files(files, tests=tests)
    if failed:  # as on first import: the library's own error, raised where it is imported
        print(f"compile_libraries: {failed} of {len(files)} files did not compile",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
