"""Output directories of ``dprisk population``: complete or untouched, the user's files kept.

:class:`OutputDirectory` is the reproduction report's discipline
(:mod:`dprisk.runtime.writers`, :mod:`dprisk.runtime.output_files`) for a directory of fixed
files: ``out`` may be a missing path, an empty directory or a directory this command wrote
before (it holds the command's marker file); anything else is refused before anything is
computed. The files are written into a temporary sibling directory, the marker lists them
(its manifest), and the directory is put in place in one step
(:func:`~dprisk.runtime.writers.replace_directory`): an earlier output is exchanged
atomically, files the user added to it are moved into the new one, and only the earlier
output's own files are deleted. A lock beside ``out`` refuses a second writer; what a killed
run left (``.NAME-tmp-*``, ``.NAME-old-*``) is removed, its own files only.
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

__all__ = ["OutputDirectory", "check_output_dir"]


def check_output_dir(out, marker: str, command: str, name: str = "--out") -> Path:
    """The absolute directory ``out`` when ``command`` may write it (module docstring).

    Raises
    ------
    OutputError
        A ``ValueError`` naming ``name``: a symbolic link, a file, the current or home
        directory, a non-empty directory without ``marker``, or a path that cannot be created.
    """
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"{name} must be a directory path, got {out!r}")
    try:
        return _checked_output_dir(out, marker, command, name)
    except OSError as err:  # a name too long or a path that cannot be examined
        raise OutputError(f"{name} {str(out)[:60]!r}: {err.strerror or err}; name a new or "
                          f"empty directory") from None


def _checked_output_dir(out, marker: str, command: str, name: str) -> Path:
    """:func:`check_output_dir` after the type check (OSError passed on)."""
    path = Path(os.path.abspath(out))
    check_creatable(path, name)  # first: a name too long fails every later look-up
    if path.is_symlink():
        raise OutputError(f"{name} {str(out)!r} is a symbolic link; name the directory itself")
    if path.exists():
        path = path.resolve()
        if not path.is_dir():
            raise OutputError(f"{name} {str(out)!r} exists and is not a directory")
        cwd = Path.cwd().resolve()
        if cwd == path or path in cwd.parents or path == Path.home().resolve():
            raise OutputError(f"{name} {str(out)!r} is or contains the current or home "
                              "directory; name a new directory")
        if read_manifest(path, marker) is None and any(path.iterdir()):
            raise OutputError(f"{name} {str(out)!r} is a non-empty directory not written by "
                              f"{command} (no {marker} marker); name a new or empty directory")
    return path


class OutputDirectory:
    """The directory ``out`` of ``command`` while it is made (a context manager: its lock).

    Parameters
    ----------
    out : str or Path
        Checked at once (:func:`check_output_dir`) and again once the lock is held.
    marker : str
        The marker file's name, e.g. ``.dprisk-population-risk``.
    command : str
        Named in the marker and in refusals, e.g. ``dprisk population risk``.
    name : str
        The option named in refusals.
    """

    def __init__(self, out, *, marker: str, command: str, name: str = "--out"):
        self.marker, self.command, self.name = marker, command, name
        self.out = check_output_dir(out, marker, command, name)
        self.lock = OutputLock(self.out.parent / f".{self.out.name}.lock", self.out)

    def __enter__(self) -> OutputDirectory:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        try:
            check_output_dir(self.out, self.marker, self.command, self.name)
            for kind in ("tmp", "old"):
                remove_leftover_dirs(self.out.parent, f".{self.out.name}-{kind}-*",
                                     self.marker)
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.lock.release()

    def write(self, fill: Callable[[Path], object]):
        """Fill a temporary directory with ``fill(tmp)``; put it at ``out`` in one step."""
        out = self.out
        tmp = make_temporary_dir(out.parent, f".{out.name}-tmp-")
        FORCED_EXIT_CLEANUPS[id(tmp)] = lambda: shutil.rmtree(tmp, ignore_errors=True)
        exchanging = False
        try:
            (tmp / self.marker).write_text(json.dumps({"written_by": self.command,
                                                       "in_progress": True}) + "\n")
            result = fill(tmp)
            write_manifest(tmp, self.marker, self.command)
            owned_old = read_manifest(out, self.marker) if out.exists() else None
            if owned_old is None and out.exists() and any(out.iterdir()):
                raise OutputError(f"{self.name} {str(out)!r} changed meanwhile and is no "
                                  f"longer written by {self.command}; nothing was replaced")
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
