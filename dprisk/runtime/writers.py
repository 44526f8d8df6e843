"""The one writer rule: a command deletes or replaces only the files it wrote.

Every command that writes (``sweep --out``, ``reproduce --out``, ``prior --plot``,
``posterior --save-draws/--plots``) goes through this module, built on
:mod:`dprisk.runtime.output_files` (atomic files, the umask, the lock, the temporaries):

* **New outputs, created at the end.** :class:`NewOutput` is an output path that must not
  exist (a file, or a directory that may also be an existing empty one). Before any work it
  refuses an existing path, takes the output's lock (``.NAME.lock`` beside it, holding the
  pid), and removes the temporaries a killed earlier run left for that path (only names
  ``.NAME.PID.XXXXXXXX.tmp`` whose process is gone:
  :func:`~dprisk.runtime.output_files.remove_stale_temporaries`). The command fills a
  temporary (:meth:`NewOutput.temporary`, removed on every exit path, a stop signal's forced
  exit included) and :func:`publish` puts every output in place at the end by an exclusive
  create (:func:`~dprisk.runtime.output_files.rename_noreplace`): a file or directory that
  appeared at the path during the run is never replaced -- the run is refused
  (:class:`~dprisk.runtime.output_files.OutputAppeared`, naming the option), its temporaries
  removed, and an output it had already published in the same call removed again.
  :func:`check_distinct` refuses output paths of one command that are the same or one inside
  another, before any work.

* **Manifests.** A directory a command writes holds a marker file whose JSON lists the
  files the command created there (:func:`write_manifest`, :func:`read_manifest`); a
  directory of fixed layout (a sweep's chunk store) names its files by :class:`Owned`
  patterns instead. :func:`foreign_entries` lists what a directory holds besides them (the
  user's files), :func:`remove_owned` deletes only the owned files and removes a directory
  only once it is empty: a folder the command did not create, or that holds a file of the
  user, is never removed.
* **Atomic replacement of a directory.** :func:`replace_directory` exchanges a complete new
  directory with the earlier one in one step (``renameat2(RENAME_EXCHANGE)`` on Linux; two
  renames with the stop signals held back elsewhere), moves the user's files of the earlier
  one into the new one, and only then deletes the earlier one's own files. An interruption
  before the exchange leaves the earlier directory untouched; stop signals are held back
  from the exchange to the end of the clean-up, so they land after it.
* **Telling the truth after a stop.** :func:`committed` lists the outputs put in place by
  this process, so that the line of an interrupted command says what is on disk.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import os
import shutil
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from dprisk.runtime.output_files import (
    FORCED_EXIT_CLEANUPS,
    OutputAppeared,
    OutputError,
    OutputLock,
    check_creatable,
    exchange_paths,
    make_owned_temporary,
    make_temporary_dir,
    release_temporary,
    remove_stale_temporaries,
    rename_noreplace,
)

__all__ = [
    "NewOutput",
    "Owned",
    "check_distinct",
    "committed",
    "foreign_entries",
    "hold_stop_signals",
    "mark_committed",
    "publish",
    "read_manifest",
    "remove_leftover_dirs",
    "remove_owned",
    "replace_directory",
    "write_manifest",
]

_COMMITTED: list[Path] = []


def committed() -> list[Path]:
    """The outputs this process has put in place (newest last)."""
    return list(_COMMITTED)


def mark_committed(path: Path) -> None:
    """Record that the output ``path`` is complete and in place."""
    _COMMITTED.append(Path(path))


#: Held while stop signals are held back (:func:`hold_stop_signals`): the stop watchdog
#: (:mod:`dprisk.cli.stopping`), which another thread may start meanwhile, waits for it.
STOPS_HELD = threading.RLock()
#: Depth of :func:`hold_stop_signals` blocks in the main thread, and the stop signals whose
#: Python-level handler ran inside one (:func:`defer_stop`), delivered again when they end.
_HELD: dict = {"depth": 0, "deferred": []}


def defer_stop(signum: int) -> bool:
    """Called by a stop signal's handler: inside a held block, keep ``signum`` for its end.

    A signal delivered to another thread (one of a library's) is not blocked by the main
    thread's mask, and its handler runs in the main thread all the same; inside a held block
    it is kept, and raised again as the block ends. Returns whether it was kept.
    """
    if _HELD["depth"] and threading.current_thread() is threading.main_thread():
        _HELD["deferred"].append(int(signum))
        return True
    return False


@contextlib.contextmanager
def hold_stop_signals():
    """Hold SIGINT and SIGTERM back during the block; they are delivered when it ends.

    The calling thread blocks them; a handler that runs inside the block all the same keeps
    its signal for the end (:func:`defer_stop`), and :data:`STOPS_HELD` keeps the stop
    watchdog, which another thread may start meanwhile, from ending the process inside it.
    """
    stops = {signal.SIGINT, signal.SIGTERM}
    main = threading.current_thread() is threading.main_thread()
    with STOPS_HELD:
        try:
            previous = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        except (AttributeError, ValueError, OSError):  # no sigmask here: run unprotected
            previous = None
        _HELD["depth"] += main
        try:
            yield
        finally:
            _HELD["depth"] -= main
            if previous is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if main and not _HELD["depth"] and _HELD["deferred"]:
        signum = _HELD["deferred"][0]
        _HELD["deferred"].clear()
        signal.raise_signal(signum)


@dataclass(frozen=True)
class Owned:
    """Names a command owns in a directory: glob ``patterns`` and manifest ``files``.

    ``files`` are paths relative to the directory (``figures/fig1.png``); a pattern matches
    a top-level name (``chunk_*.npy``).
    """

    patterns: tuple[str, ...] = ()
    files: frozenset[str] = frozenset()

    def owns(self, relative: str) -> bool:
        """Whether the file ``relative`` (a path below the directory) is the command's."""
        if relative in self.files:
            return True
        return "/" not in relative and any(fnmatch.fnmatchcase(relative, p)
                                           for p in self.patterns)


def _files(directory: Path) -> list[str]:
    """Every file (not directory) below ``directory``, relative, symlinks as files."""
    found = []
    for root, dirs, names in os.walk(directory):
        base = Path(root).relative_to(directory)
        for name in names + [d for d in dirs if (Path(root) / d).is_symlink()]:
            found.append((base / name).as_posix())
    return sorted(found)


def foreign_entries(directory: Path, owned: Owned) -> list[str]:
    """Files below ``directory`` that ``owned`` does not cover (the user's), relative."""
    if not Path(directory).is_dir():
        return []
    return [f for f in _files(Path(directory)) if not owned.owns(f)]


def remove_owned(directory: Path, owned: Owned) -> list[str]:
    """Delete the owned files below ``directory``; remove directories left empty.

    Returns the files left (the user's). ``directory`` itself is removed only when empty.
    """
    directory = Path(directory)
    if not directory.is_dir() or directory.is_symlink():
        return []
    left = []
    for relative in _files(directory):
        if owned.owns(relative):
            with contextlib.suppress(FileNotFoundError):
                (directory / relative).unlink()
        else:
            left.append(relative)
    for root, _, _ in sorted(os.walk(directory), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):  # not empty: the user's files are there
            os.rmdir(root)
    return left


def write_manifest(directory: Path, marker: str, written_by: str) -> list[str]:
    """Write ``directory/marker``: JSON naming the command and every file it holds now.

    Call it once the command has written all its files there. Returns the files listed.
    """
    files = [f for f in _files(Path(directory)) if f != marker]
    text = json.dumps({"written_by": written_by, "files": files}, indent=0) + "\n"
    (Path(directory) / marker).write_text(text)
    return files


def read_manifest(directory: Path, marker: str, legacy=None) -> Owned | None:
    """What the command owns in ``directory`` by its manifest ``marker`` (None: no marker).

    A marker without a file list (written before manifests) owns the files
    ``legacy(directory)`` names (relative paths; none without ``legacy``); an unreadable
    marker owns nothing but itself.
    """
    path = Path(directory) / marker
    if not path.is_file():
        return None
    try:
        files = json.loads(path.read_text()).get("files")
    except (OSError, ValueError, AttributeError):
        files = None
    if not (isinstance(files, list) and all(isinstance(f, str) for f in files)):
        files = list(legacy(Path(directory))) if legacy is not None else []
    return Owned(files=frozenset([*files, marker]))


def _exchange(a: Path, b: Path) -> bool:
    """Swap the directories ``a`` and ``b`` atomically (Linux ``renameat2``); False if unable."""
    return exchange_paths(a, b)


def replace_directory(new: Path, out: Path, owned_old: Owned | None) -> list[str]:
    """Put the complete directory ``new`` at ``out``; delete only the earlier one's own files.

    ``out`` missing: ``new`` is moved there by an exclusive create (something that appears
    there meanwhile raises :class:`~dprisk.runtime.output_files.OutputAppeared` and ``new``
    is left where it was). Otherwise the two are exchanged atomically,
    the user's files of the earlier ``out`` (those ``owned_old`` does not cover) are moved into
    the new one where the name is free, and the earlier one's own files are deleted. Stop
    signals are held back from the exchange to the end; :func:`mark_committed` records ``out``.
    Returns the user's files that could not be moved (left in a hidden ``.NAME-old-*``
    sibling).
    """
    new, out = Path(new), Path(out)
    with hold_stop_signals():
        if not out.exists() and not out.is_symlink():
            try:
                rename_noreplace(new, out)  # never onto something that appeared meanwhile
            except FileExistsError:
                raise OutputAppeared(f"out {str(out)!r} appeared while the command ran; "
                                     "refusing to replace it (nothing was replaced)") from None
            mark_committed(out)
            return []
        if _exchange(new, out):
            old, aside = new, None  # the earlier directory now has the temporary name
        else:
            aside = make_temporary_dir(out.parent, f".{out.name}-old-")
            old = aside / out.name
            out.rename(old)
            new.rename(out)
        mark_committed(out)
        owned = owned_old if owned_old is not None else Owned()
        for relative in foreign_entries(old, owned):
            target = out / relative
            if not target.exists() and not target.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                os.rename(old / relative, target)
        left = remove_owned(old, owned)
        if left and aside is None:  # keep the user's files, under a name the next run knows
            aside = make_temporary_dir(out.parent, f".{out.name}-old-")
            os.rename(old, aside / out.name)
        elif aside is not None:
            with contextlib.suppress(OSError):  # not empty: the user's files stay in it
                os.rmdir(aside)
        return left


def remove_leftover_dirs(parent: Path, pattern: str, marker: str, legacy=None) -> list[str]:
    """Remove what a killed run left in ``parent/pattern`` directories: its own files only.

    A leftover directory is cleaned only if it (or its single child, an earlier report moved
    aside) holds ``marker``; its owned files are deleted (:func:`read_manifest`, or every file
    of a temporary directory whose marker says it is in progress) and the directory removed
    once empty; a tree of empty directories (a run killed before it wrote a file) is removed.
    Call it holding the output's lock. Returns the names removed.
    """
    removed = []
    for path in sorted(Path(parent).glob(pattern)):
        if not path.is_dir() or path.is_symlink():
            continue
        if not _files(path):  # a tree of empty directories (killed before any file): nothing
            shutil.rmtree(path, ignore_errors=True)  # of anyone's is lost
            removed.append(path.name)
            continue
        for candidate in (path, *[c for c in path.iterdir() if c.is_dir()]):
            owned = read_manifest(candidate, marker, legacy)
            if owned is None:
                continue
            in_progress = _in_progress(candidate / marker)
            if in_progress:
                shutil.rmtree(candidate, ignore_errors=True)
            else:
                remove_owned(candidate, owned)
        with contextlib.suppress(OSError):
            os.rmdir(path)
        if not path.exists():
            removed.append(path.name)
    return removed


def _in_progress(marker: Path) -> bool:
    try:
        return json.loads(marker.read_text()).get("in_progress") is True
    except (OSError, ValueError, AttributeError):
        return False


class NewOutput:
    """An output path a command creates at its end: a new file, or a new (or empty) directory.

    Use as a context manager around the command's work (after :meth:`check`, which needs no
    lock and can run with the other input checks):

    * entering refuses an existing path (:meth:`check`), creates the missing parent
      directories, takes the output's :class:`~dprisk.runtime.output_files.OutputLock`
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
        A directory output (``--plots``): an existing empty directory is accepted.
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
        if any(path.iterdir()):
            raise OutputError(f"{shown} is a non-empty directory; refusing to write into it "
                              "(name a new or empty directory)")

    def __enter__(self) -> NewOutput:
        self.check()
        self._made = _make_parents(self.path.parent)
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
            for made in reversed(self._made):  # deepest first; a non-empty one stays
                with contextlib.suppress(OSError):
                    os.rmdir(made)
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


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing ancestors; return those this call made (top first)."""
    missing = []
    while not os.path.lexists(directory):
        missing.append(directory)
        directory = directory.parent
    made = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:  # made by someone else meanwhile: not ours
            continue
        made.append(path)
    return made


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
