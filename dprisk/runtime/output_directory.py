"""Output directories: complete or untouched, the user's files kept, nothing new replaced.

The one writer of a directory of files that a command replaces as a whole
(``dprisk reproduce --out``, ``dprisk population synth|measure|risk --out``), built on
:mod:`dprisk.runtime.writers` (manifests, the atomic exchange) and
:mod:`dprisk.runtime.output_files` (the lock, temporaries, the umask):

* **Before any work** (:func:`check_output_dir`): ``out`` may be a missing path whose nearest
  existing ancestor is a writable directory, an empty directory, or a directory this command
  wrote before (it holds the command's marker file). A symbolic link, a file, the current or
  home directory (or one containing them) and a non-empty directory without the marker are
  refused with an :class:`~dprisk.runtime.output_files.OutputError` naming the option.
* **While the command runs** (:class:`OutputDirectory`, a context manager): a lock
  ``.NAME.lock`` beside ``out`` refuses a second writer (a killed run's lock is taken over);
  what a killed run left (``.NAME-tmp-*``, ``.NAME-old-*``) is removed, its own files only;
  the path ``out`` as found then (missing, or which directory) is recorded. The missing parent
  directories of ``out`` made on entering are removed again on leaving (each only while
  empty): a run that puts nothing in place leaves no directory behind.
* **At the end** (:meth:`OutputDirectory.write`): the files are written into a temporary
  sibling directory, the marker lists them (its manifest), and the directory is put in place
  in one step (:func:`~dprisk.runtime.writers.replace_directory`): an earlier output is
  exchanged atomically, files the user added to it are moved into the new one, and only the
  earlier output's own files are deleted. **A path that appeared meanwhile is never
  replaced**: when ``out`` is no longer what was found (it was missing and something is there
  now -- a file, a link, any directory -- or another file or directory stands in its place),
  the run is refused with :class:`~dprisk.runtime.output_files.OutputAppeared` naming the
  option, its temporary removed, the path untouched; a directory that is the one found but
  lost its marker while holding files is refused likewise (``OutputError``), and so is an
  earlier output holding a file of the user's where the new one puts its own (it could not
  be kept: :func:`~dprisk.runtime.writers.displaced_entries`). On failure or interruption
  before the exchange the earlier output is intact.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from dprisk.runtime.output_files import (
    FORCED_EXIT_CLEANUPS,
    OutputAppeared,
    OutputError,
    check_creatable,
    make_parents,
    make_temporary_dir,
    protected_directory,
    remove_made_parents,
)
from dprisk.runtime.output_lock import OutputLock
from dprisk.runtime.writers import (
    displaced_entries,
    hold_stop_signals,
    read_manifest,
    remove_leftover_dirs,
    replace_directory,
    write_manifest,
)

__all__ = ["OutputDirectory", "check_output_dir"]


def check_output_dir(out, marker: str, command: str, name: str = "--out") -> Path:
    """The absolute directory ``out`` when ``command`` may write it (module docstring).

    Parameters
    ----------
    out : str or PathLike
        The directory asked for.
    marker : str
        The command's marker file (e.g. ``.dprisk-report``): a directory holding it is the
        command's own.
    command : str
        Named in refusals, e.g. ``dprisk reproduce``.
    name : str
        The option (or parameter) named in refusals.

    Raises
    ------
    TypeError
        ``out`` is not a path.
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
        reason = protected_directory(path)
        if reason is not None:
            raise OutputError(f"{name} {str(out)!r} {reason}; name a new directory")
        if read_manifest(path, marker) is None and any(path.iterdir()):
            raise OutputError(
                f"{name} {str(out)!r} is a non-empty directory not written by {command} (no "
                f"{marker} marker); refusing to replace it: name a new or empty directory")
    return path


def _found(path: Path) -> tuple[int, int] | None:
    """What stands at ``path`` (device and inode, without following a link), or None."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


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
    legacy : callable, optional
        ``legacy(directory)``: the files an output written before manifests owns (its marker
        lists none; :func:`dprisk.runtime.writers.read_manifest`).
    """

    def __init__(self, out, *, marker: str, command: str, name: str = "--out", legacy=None):
        self.marker, self.command, self.name, self.legacy = marker, command, name, legacy
        self.out = check_output_dir(out, marker, command, name)
        self.lock = OutputLock(self.out.parent / f".{self.out.name}.lock", self.out, name)
        self._found = None
        self._made: list[Path] = []

    def __enter__(self) -> OutputDirectory:
        self._made = make_parents(self.out.parent)
        try:
            self.lock.acquire()
        except BaseException:
            self._remove_made()
            raise
        try:
            check_output_dir(self.out, self.marker, self.command, self.name)
            self._found = _found(self.out)
            for kind in ("tmp", "old"):  # what a killed run left: its own files only
                remove_leftover_dirs(self.out.parent, f".{self.out.name}-{kind}-*",
                                     self.marker, self.legacy)
        except BaseException:
            self.lock.release()
            self._remove_made()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.lock.release()
        self._remove_made()  # the output in place keeps them: not empty

    def _remove_made(self) -> None:
        """Remove the missing parents :meth:`__enter__` made, where they are still empty."""
        remove_made_parents(self._made)
        self._made = []

    def _appeared(self) -> OutputAppeared:
        """The refusal of a path that appeared at ``out`` during the run, naming the option."""
        return OutputAppeared(f"{self.name} {str(self.out)!r} appeared while {self.command} "
                              "ran (it was not there, or was another directory, when the run "
                              "began); refusing to replace it: nothing was replaced")

    def write(self, fill: Callable[[Path], object]):
        """Fill a temporary directory with ``fill(tmp)``; put it at ``out`` in one step.

        The marker is written first (saying the directory is in progress) and again last,
        listing every file ``fill`` wrote. Returns what ``fill`` returns.

        Raises
        ------
        OutputAppeared
            Something appeared at ``out`` during the run (module docstring); nothing replaced.
        OutputError
            ``out`` lost its marker while holding files, or holds a file of the user's where the
            new output puts its own; nothing replaced.
        """
        out = self.out
        tmp = make_temporary_dir(out.parent, f".{out.name}-tmp-")
        FORCED_EXIT_CLEANUPS[id(tmp)] = lambda: shutil.rmtree(tmp, ignore_errors=True)
        made = _found(tmp)  # tmp still holds the new directory while this is what stands there
        exchanging = False
        try:
            (tmp / self.marker).write_text(json.dumps({"written_by": self.command,
                                                       "in_progress": True}) + "\n")
            result = fill(tmp)
            write_manifest(tmp, self.marker, self.command)
            if _found(out) != self._found:  # at enter: missing, or the directory checked
                raise self._appeared()
            owned_old = read_manifest(out, self.marker, self.legacy) if out.exists() else None
            if owned_old is None and out.exists() and any(out.iterdir()):
                raise OutputError(f"{self.name} {str(out)!r} changed while {self.command} ran "
                                  "and is no longer written by it; nothing was replaced")
            displaced = displaced_entries(tmp, out, owned_old) if owned_old else []
            if displaced:  # the user's file where the new output puts one of its own
                shown = ", ".join(displaced[:3]) + (", …" if len(displaced) > 3 else "")
                raise OutputError(f"{self.name} {str(out)!r} holds files that {self.command} "
                                  f"did not write where the new output puts its own ({shown}); "
                                  "nothing was replaced: move them or choose another path")
            with hold_stop_signals():  # from here on tmp is no longer a temporary to remove
                FORCED_EXIT_CLEANUPS.pop(id(tmp), None)
                exchanging = True
                replace_directory(tmp, out, owned_old)
        except OutputAppeared:  # raised before anything was moved: tmp is still ours
            FORCED_EXIT_CLEANUPS.pop(id(tmp), None)
            shutil.rmtree(tmp, ignore_errors=True)
            raise self._appeared() from None  # named as the option (also replace_directory's)
        except BaseException:
            FORCED_EXIT_CLEANUPS.pop(id(tmp), None)
            if not exchanging or _found(tmp) == made:  # the exchange failed before any move
                shutil.rmtree(tmp, ignore_errors=True)  # ours: made above, under a new name
            raise
        return result
