"""Which of the environment's byte-compiled library files a run of the tests read.

``make setup`` byte-compiles the libraries once (``tools/compile_libraries.py``, about 40 s of
CPU on the 2-core machine), so that no test process compiles them. Compiling files no process
of the suite ever imports is set-up time for nothing: ``make setup`` leaves out the modules and
subtrees listed in ``tools/compile_skip.txt`` (they are compiled on first import, as any
library is, should a later version import them).

How the list is measured: in a fresh environment compiled whole
(``.venv/bin/python tools/compile_libraries.py --everything --no-keep SITE_PACKAGES build``
after ``make setup``, its ``.pyc`` files deleted first: a module left out has no ``.pyc``
whose reading could be seen, and none is a link to a kept compilation that another
environment reads), every ``.pyc`` has its access time equal to its modification time; on a
``relatime`` or ``strictatime`` file system the first read after that moves the access time
on. Run the test directories
(``make test``, or one directory at a time), then::

    .venv/bin/python benchmarks/unread_packages.py [--list] [site-packages ...]

prints, largest first, the subtrees (package, subpackage or sub-subpackage) of which no
``.pyc`` was read, their compiled size and the running share of all compiled bytes;
``--list``: every unread subtree and module at any depth, none inside another, one a line (the
contents of ``tools/compile_skip.txt``). Several environments' folders may be given (runs of
different directories in different worktrees): a subtree counts as read when any of them read
it. Subprocesses (kernels, servers, fresh interpreters) are seen too, which walking
``sys.modules`` in the test process would miss.
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


def unread_subtrees(folders: list[Path], depth: int | None = DEPTH
                    ) -> tuple[list[tuple[str, int]], int]:
    """The largest subtrees no folder's run read (none inside another listed), total bytes.

    Subtrees down to ``depth`` levels (``pkg``, ``pkg/sub``, ...); ``None``: every level down
    to single modules.
    """
    size, read = Counter(), Counter()
    for folder in folders:
        for module, nbytes, was_read in scan(folder):
            parts = module.split("/")
            levels = len(parts) if depth is None else min(depth, len(parts))
            for level in range(1, levels + 1):
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


def main(argv: list[str]) -> None:
    as_list = "--list" in argv
    folders = ([Path(a) for a in argv if a != "--list"]
               or [Path(sysconfig.get_path("purelib"))])
    unread, total = unread_subtrees(folders, None if as_list else DEPTH)
    if as_list:  # tools/compile_skip.txt: every unread subtree and module, none inside another
        print("\n".join(sorted(key for key, _nbytes in unread)))
        return
    running = 0
    for key, nbytes in unread[:60]:
        running += nbytes
        print(f"{nbytes / 1e6:6.2f} MB  {running / total:6.1%}  {key}")


if __name__ == "__main__":
    main(sys.argv[1:])
