"""Where a population command writes: a directory filled aside, put in place when complete.

The rule of :mod:`dprisk.runtime.writers`, as the report follows it
(:mod:`dprisk.validation.report.output`): ``out`` may be a missing path, an empty directory or
a directory this tool wrote earlier (it holds the marker :data:`MARKER`, listing its files);
anything else is refused before anything is touched (:class:`OutputError`, a ``ValueError``
naming ``out``). :meth:`OutputTarget.write` fills a new hidden sibling directory, writes the
manifest, and exchanges it with ``out`` atomically
(:func:`~dprisk.runtime.writers.replace_directory`): files the user added to an earlier
output are kept, only the earlier output's own files are deleted; on an error or a stop
before the exchange the sibling is removed and ``out`` is left as it was.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from dprisk.runtime.output_files import (
    FORCED_EXIT_CLEANUPS,
    OutputError,
    OutputLock,
    check_creatable,
    make_temporary_dir,
)
from dprisk.runtime.writers import (
    hold_stop_signals,
    read_manifest,
    remove_leftover_dirs,
    replace_directory,
    write_manifest,
)

__all__ = ["MARKER", "OutputTarget", "check_out"]

#: Marker file of every directory a ``dprisk population`` command writes (its manifest).
MARKER = ".dprisk-population"


def check_out(out, command: str) -> Path:
    """The absolute directory ``out`` when ``command`` may write it (else :class:`OutputError`)."""
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a directory path, got {out!r}")
    path = Path(os.path.abspath(out))
    if path.is_symlink():
        raise OutputError(f"out {str(out)!r} is a symbolic link; name the directory itself")
    if path.exists():
        path = path.resolve()
        if not path.is_dir():
            raise OutputError(f"out {str(out)!r} exists and is not a directory")
        cwd = Path.cwd().resolve()
        if cwd == path or path in cwd.parents or path == Path.home().resolve():
            raise OutputError(f"out {str(out)!r} is or contains the current or home directory; "
                              "name a new directory")
        if read_manifest(path, MARKER) is None and any(path.iterdir()):
            raise OutputError(f"out {str(out)!r} is a non-empty directory not written by "
                              f"{command} (no {MARKER} marker); name a new or empty directory")
    check_creatable(path)
    return path


class OutputTarget:
    """The output directory ``out`` of ``command`` while it is made (a context manager).

    Holds an :class:`~dprisk.runtime.output_files.OutputLock` beside ``out`` and removes what
    a killed run left (``.NAME-tmp-*``, ``.NAME-old-*``: its own files only).
    """

    def __init__(self, out, command: str):
        self.command = command
        self.out = check_out(out, command)
        self.lock = OutputLock(self.out.parent / f".{self.out.name}.lock", self.out)

    def __enter__(self) -> OutputTarget:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        try:
            check_out(self.out, self.command)
            for kind in ("tmp", "old"):
                remove_leftover_dirs(self.out.parent, f".{self.out.name}-{kind}-*", MARKER)
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.lock.release()

    def write(self, fill: Callable[[Path], object]):
        """Fill a temporary sibling with ``fill(tmp)``, then put it at ``out`` atomically."""
        out = self.out
        tmp = make_temporary_dir(out.parent, f".{out.name}-tmp-")
        FORCED_EXIT_CLEANUPS[id(tmp)] = lambda: shutil.rmtree(tmp, ignore_errors=True)
        exchanging = False
        try:
            (tmp / MARKER).write_text(json.dumps({"written_by": self.command,
                                                  "in_progress": True}) + "\n")
            result = fill(tmp)
            write_manifest(tmp, MARKER, self.command)
            owned_old = read_manifest(out, MARKER) if out.exists() else None
            if owned_old is None and out.exists() and any(out.iterdir()):
                raise OutputError(f"out {str(out)!r} changed meanwhile and is no longer an "
                                  f"output of {self.command}; nothing was replaced")
            with hold_stop_signals():
                FORCED_EXIT_CLEANUPS.pop(id(tmp), None)
                exchanging = True
                replace_directory(tmp, out, owned_old)
        except BaseException:
            FORCED_EXIT_CLEANUPS.pop(id(tmp), None)
            if not exchanging:
                shutil.rmtree(tmp, ignore_errors=True)
            raise
        return result
