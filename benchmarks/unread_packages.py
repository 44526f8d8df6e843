"""Which of the environment's byte-compiled library files a run of the tests read.

``make setup`` byte-compiles the libraries once (``compileall``, about 60 s of CPU on the 2-core
machine), so that no test process compiles them. Compiling files no process of the suite ever
imports is set-up time for nothing: ``make setup`` leaves out the subtrees listed in the
Makefile's ``COMPILE_SKIP`` (they are compiled on first import, as any library is, should a
later version import them).

How the list is measured: in a fresh environment (``make setup``, nothing run yet) every
``.pyc`` has its access time equal to its modification time; on a ``relatime`` or
``strictatime`` file system the first read after that moves the access time on. Run the test
directories (``make test``, or one directory at a time), then::

    .venv/bin/python benchmarks/unread_packages.py [site-packages ...]

(``--regex``: the ``COMPILE_SKIP`` alternation instead) prints, largest first, the subtrees
(package, subpackage or sub-subpackage) of which no ``.pyc`` was read, their compiled size and
the running share of all compiled bytes. Several
environments' folders may be given (runs of different directories in different worktrees):
a subtree counts as read when any of them read it. Subprocesses (kernels, servers, fresh
interpreters) are seen too, which walking ``sys.modules`` in the test process would miss.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections import Counter
from pathlib import Path

#: Levels of subtrees reported: ``pkg``, ``pkg/sub``, ``pkg/sub/subsub``.
DEPTH = 3


def scan(site_packages: Path) -> list[tuple[str, int, bool]]:
    """``(path of the source module relative to site_packages, pyc bytes, read)`` per pyc."""
    records = []
    for root, _dirs, files in os.walk(site_packages):
        if not root.endswith("__pycache__"):
            continue
        for name in files:
            if not name.endswith(".pyc"):
                continue
            path = Path(root) / name
            stat = path.stat()
            module = Path(root).parent.relative_to(site_packages) / (name.split(".", 1)[0])
            records.append((module.as_posix(), stat.st_size, stat.st_atime > stat.st_mtime + 0.5))
    return records


def unread_subtrees(folders: list[Path]) -> tuple[list[tuple[str, int]], int]:
    """The largest subtrees no folder's run read (none inside another listed), total bytes."""
    size, read = Counter(), Counter()
    for folder in folders:
        for module, nbytes, was_read in scan(folder):
            parts = module.split("/")
            for level in range(1, min(DEPTH, len(parts)) + 1):
                key = "/".join(parts[:level])
                if folder == folders[0]:
                    size[key] += nbytes
                read[key] += was_read
    total = sum(nbytes for _module, nbytes, _ in scan(folders[0]))
    def parent_unread(key: str) -> bool:
        return any(not read["/".join(key.split("/")[:j])] for j in range(1, key.count("/") + 1))

    unread = [(key, nbytes) for key, nbytes in size.items()
              if not read[key] and not parent_unread(key)]
    return sorted(unread, key=lambda item: -item[1]), total


#: Subtrees smaller than this (compiled bytes) are not worth a line in ``COMPILE_SKIP``.
MIN_BYTES = 100_000


def main(argv: list[str]) -> None:
    as_regex = "--regex" in argv
    folders = [Path(a) for a in argv if a != "--regex"] or [Path(sysconfig.get_path("purelib"))]
    unread, total = unread_subtrees(folders)
    if as_regex:  # the Makefile's COMPILE_SKIP: the subtrees of MIN_BYTES and more
        print("|".join(sorted(key for key, nbytes in unread if nbytes >= MIN_BYTES)))
        return
    running = 0
    for key, nbytes in unread[:60]:
        running += nbytes
        print(f"{nbytes / 1e6:6.2f} MB  {running / total:6.1%}  {key}")


if __name__ == "__main__":
    main(sys.argv[1:])
