"""New outputs: created exclusively at the end of a run, never replacing what appeared.

``prior --plot``, ``posterior --save-draws`` and ``posterior --plots`` write through
:class:`NewOutput` (the one writer rule of :mod:`dprisk.runtime.writers`, and the lock,
temporaries and exclusive rename of :mod:`dprisk.runtime.output_files`):

* before any work: the path is refused if it exists (:meth:`NewOutput.check`), the paths of
  one command are refused if they collide (:func:`check_distinct`), the output is locked
  (``.NAME.lock``) and the temporaries a killed run left for it are removed (only
  ``.NAME.PID.XXXXXXXX.tmp`` of a process that is gone);
* at the end: :func:`publish` puts every filled temporary in place by an exclusive create,
  all or none; something that appeared at a path meanwhile is never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from pathlib import Path

from dprisk.runtime.output_files import (
    FORCED_EXIT_CLEANUPS,
    OutputAppeared,
    OutputError,
    check_creatable,
    make_owned_temporary,
    make_parents,
    protected_directory,
    release_temporary,
    remove_made_parents,
    remove_stale_temporaries,
    rename_noreplace,
)
from dprisk.runtime.output_lock import OutputLock
from dprisk.runtime.writers import hold_stop_signals, mark_committed

__all__ = ["NewOutput", "check_distinct", "publish"]


class NewOutput:
    """An output path a command creates at its end: a new file, or a new (or empty) directory.

    Use as a context manager around the command's work (after :meth:`check`, which needs no
    lock and can run with the other input checks):

    * entering refuses an existing path (:meth:`check`), creates the missing parent
      directories, takes the output's :class:`~dprisk.runtime.output_lock.OutputLock`
      (``.NAME.lock`` beside it: a second run writing the same path is refused, naming the
      holder's pid; the lock of a killed run is taken over) and removes the temporaries a
      killed run left for this path (only ``.NAME.PID.XXXXXXXX.tmp`` of a process that is
      gone);
    * :meth:`temporary` makes a temporary file or directory beside the path, which the
      command fills; :func:`publish` puts it in place by an exclusive create;
    * leaving removes every temporary not published and releases the lock; when nothing was
      published the parent directories entering made are removed again (if still empty).
      A stop signal's forced exit does the same (it is registered in
      :data:`~dprisk.runtime.output_files.FORCED_EXIT_CLEANUPS`).

    Guarantees and limits: a file or a non-empty directory at the path is never replaced --
    neither one there at the start (refused before any work) nor one that appears during the
    run (refused at the end, :class:`~dprisk.runtime.output_files.OutputAppeared`). The
    exclusive create is one atomic ``renameat2(RENAME_NOREPLACE)`` on Linux; elsewhere see
    :func:`~dprisk.runtime.output_files.rename_noreplace`. A directory output that was an
    existing empty directory at the start is published by :func:`os.rename`, which the
    kernel performs only onto an empty directory (one filled meanwhile is refused). A run
    killed with SIGKILL leaves its temporary and lock file; the next run on the same path
    removes them.

    Parameters
    ----------
    path : str or Path
        The output path, as given (named so in refusals). It is written at its parent
        directory resolved (symbolic links, ``..``), under its own name: a symbolic link
        there is refused, never followed.
    option : str
        The option (or parameter) that names it in refusals: ``--plot``, ``--save-draws``.
    directory : bool
        A directory output (``--plots``): an existing empty directory is accepted, unless
        it is or contains the current directory, or is the home directory
        (:func:`~dprisk.runtime.output_files.protected_directory`: it would be replaced).
    """

    def __init__(self, path, option: str, *, directory: bool = False):
        self.given = str(path)
        given = Path(path)
        if given.name in ("", ".", ".."):
            self.path = Path(os.path.realpath(given))
        else:  # the parent as the kernel resolves it (links, ".."); the name itself not
            self.path = Path(os.path.realpath(given.parent)) / given.name
        self.option = option
        self.directory = directory
        self.lock: OutputLock | None = None
        self.published = False
        self._existed_empty = False
        self._made: list[Path] = []
        self._temporaries: list[Path] = []
        self._identity: tuple[int, int] | None = None

    def check(self) -> None:
        """Refuse a path that cannot be created, or exists (a directory output: not empty).

        Raises :class:`~dprisk.runtime.output_files.OutputError` naming the option.
        """
        check_creatable(Path(self.given), self.option)  # named as given
        path, shown = self.path, f"{self.option} {self.given!r}"
        if path.is_symlink():
            raise OutputError(f"{shown} is a symbolic link; refusing to replace it (delete it "
                              "or choose another path)")
        if not path.exists():
            return
        if not self.directory:
            if path.is_dir():
                raise OutputError(f"{shown} exists and is a directory; name a new file")
            raise OutputError(f"{shown} exists; refusing to replace it (delete it or choose "
                              "another path)")
        if not path.is_dir():
            raise OutputError(f"{shown} exists and is not a directory")
        reason = protected_directory(path.resolve())
        if reason is not None:  # it would be replaced, even empty
            raise OutputError(f"{shown} {reason}; name a new directory")
        if any(path.iterdir()):
            raise OutputError(f"{shown} is a non-empty directory; refusing to write into it "
                              "(name a new or empty directory)")

    def __enter__(self) -> NewOutput:
        self.check()
        self._made = make_parents(self.path.parent)
        FORCED_EXIT_CLEANUPS[id(self)] = self.__exit__  # temporaries, lock, parents made
        try:
            lock = OutputLock(self.path.with_name(f".{self.path.name}.lock"), self.path,
                              self.option)
            self.lock = lock.acquire()
            remove_stale_temporaries(self.path)
            self.check()  # again: it may have appeared while the lock was taken
            self._existed_empty = self.directory and self.path.is_dir()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        FORCED_EXIT_CLEANUPS.pop(id(self), None)
        for tmp in list(self._temporaries):
            release_temporary(tmp)
        self._temporaries.clear()
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        if not self.published:
            remove_made_parents(self._made)  # deepest first; a non-empty one stays
        self._made = []

    def temporary(self) -> Path:
        """A new temporary beside the path (a directory for a directory output), to be filled."""
        tmp = make_owned_temporary(self.path, directory=self.directory)
        self._temporaries.append(tmp)
        return tmp

    def _move(self, tmp: Path) -> None:
        """Put the filled ``tmp`` at the path, never replacing what appeared there."""
        info = os.lstat(tmp)
        try:
            if self._existed_empty:  # the user's empty directory: replaced only while empty
                try:
                    os.rename(tmp, self.path)
                except OSError as err:
                    if err.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR,
                                     errno.EISDIR):
                        raise FileExistsError(err.errno, err.strerror) from None
                    raise
            else:
                rename_noreplace(tmp, self.path)
        except FileExistsError:
            raise OutputAppeared(
                f"{self.option} {self.given!r} appeared while the command ran; refusing to "
                "replace it (nothing was written: delete it or choose another path)") from None
        self._temporaries.remove(tmp)
        release_temporary(tmp, remove=False)
        self._identity = (info.st_dev, info.st_ino)
        self.published = True

    def _unpublish(self) -> None:
        """Remove what :meth:`_move` put at the path (only if it is still ours)."""
        with contextlib.suppress(OSError):
            info = os.lstat(self.path)
            if (info.st_dev, info.st_ino) == self._identity:
                if self.directory:
                    shutil.rmtree(self.path)
                else:
                    os.unlink(self.path)
        self.published = False


def publish(*items: tuple[NewOutput, Path]) -> None:
    """Put every ``(output, filled temporary)`` in place, all or none, stop signals held back.

    Each is an exclusive create (:meth:`NewOutput._move`). When one is refused (something
    appeared at its path) the outputs already put in place by this call are removed again and
    :class:`~dprisk.runtime.output_files.OutputAppeared` (naming the option) is raised; the
    temporaries are removed when their :class:`NewOutput` blocks end.
    """
    done: list[NewOutput] = []
    with hold_stop_signals():
        try:
            for output, tmp in items:
                output._move(Path(tmp))
                done.append(output)
        except BaseException:
            for output in reversed(done):
                output._unpublish()
            raise
        for output in done:
            mark_committed(output.path)


def _inside(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def check_distinct(paths: dict[str, str]) -> None:
    """Refuse output paths of one command that collide, before any work.

    ``paths`` maps each given option (``--save-draws``) to its path. Refused (ValueError
    naming both options): two that are the same path, one inside another (a file in a
    directory output), or one that is another's lock or temporary (``.NAME.lock``,
    ``.NAME.*``). Paths are compared absolute, with the symbolic links of their existing
    parts resolved.
    """
    resolved = {option: Path(os.path.realpath(path)) for option, path in paths.items()}
    options = list(resolved)
    for i, first in enumerate(options):
        for second in options[i + 1:]:
            a, b = resolved[first], resolved[second]
            shown = f"{first} {paths[first]!r} and {second} {paths[second]!r}"
            if a == b:
                raise ValueError(f"{shown} name the same path; give each its own")
            if _inside(a, b) or _inside(b, a):
                raise ValueError(f"{shown}: one is inside the other; give each its own path")
            if a.parent == b.parent and (b.name.startswith(f".{a.name}.")
                                         or a.name.startswith(f".{b.name}.")):
                raise ValueError(f"{shown}: one is the other's lock or temporary name; choose "
                                 "another path")
