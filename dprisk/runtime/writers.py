"""The one writer rule: a command deletes or replaces only the files it wrote.

Every command that writes (``sweep --out``, ``reproduce --out``, ``population ... --out``,
``prior --plot``, ``posterior --save-draws/--plots``) goes through this module, built on
:mod:`dprisk.runtime.output_files` (atomic files, the umask, the lock, the temporaries):

* **New outputs, created at the end** (:mod:`dprisk.runtime.new_outputs`, built on this
  module). :class:`~dprisk.runtime.new_outputs.NewOutput` is an output path that must not
  exist (a file, or a directory that may also be an existing empty one). Before any work it
  refuses an existing path, takes the output's lock (``.NAME.lock`` beside it, holding the
  pid), and removes the temporaries a killed earlier run left for that path (only names
  ``.NAME.PID.XXXXXXXX.tmp`` whose process is gone:
  :func:`~dprisk.runtime.output_files.remove_stale_temporaries`). The command fills a
  temporary (removed on every exit path, a stop signal's forced exit included) and
  :func:`~dprisk.runtime.new_outputs.publish` puts every output in place at the end by an
  exclusive create (:func:`~dprisk.runtime.output_files.rename_noreplace`): a file or
  directory that appeared at the path during the run is never replaced -- the run is refused
  (:class:`~dprisk.runtime.output_files.OutputAppeared`, naming the option), its temporaries
  removed, and an output it had already published in the same call removed again.
  :func:`~dprisk.runtime.new_outputs.check_distinct` refuses output paths of one command that
  are the same or one inside another, before any work.
* **Manifests.** A directory a command writes holds a marker file whose JSON lists the
  files the command created there (:func:`write_manifest`, :func:`read_manifest`); a
  directory of fixed layout (a sweep's chunk store) names its files by :class:`Owned`
  patterns instead. :func:`foreign_entries` lists what a directory holds besides them (the
  user's files), :func:`remove_owned` deletes only the owned files and removes a directory
  only once it is empty: a folder the command did not create, or that holds a file of the
  user, is never removed.
* **Output directories** (:mod:`dprisk.runtime.output_directory`, built on this module):
  :class:`~dprisk.runtime.output_directory.OutputDirectory` writes a directory of files
  (``reproduce --out``, ``population ... --out``) aside and exchanges it with the earlier
  one; a path that appeared at ``out`` during the run is never replaced.
* **Atomic replacement of a directory.** :func:`replace_directory` exchanges a complete new
  directory with the earlier one in one step (``renameat2(RENAME_EXCHANGE)`` on Linux; two
  renames with the stop signals held back elsewhere), moves the user's files of the earlier
  one into the new one, and only then deletes the earlier one's own files. An interruption
  before the exchange leaves the earlier directory untouched; stop signals are held back
  from the exchange to the end of the clean-up, so they land after it.
* **Telling the truth after a stop.** :func:`committed` lists the outputs put in place by
  this process, and :func:`kept` the finished work kept for a rerun (``population risk``'s
  ``DIR.parts``), so that the line of an interrupted command says what is on disk.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shutil
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from dprisk.runtime.output_files import (
    OutputAppeared,
    exchange_paths,
    make_temporary_dir,
    rename_noreplace,
)

__all__ = [
    "Owned",
    "committed",
    "displaced_entries",
    "foreign_entries",
    "hold_stop_signals",
    "kept",
    "mark_committed",
    "mark_kept",
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


#: Where this process kept finished work that a rerun of the same command reuses.
_KEPT: list[Path] = []


def kept() -> list[Path]:
    """The places where this process kept finished work for a rerun (newest last)."""
    return list(_KEPT)


def mark_kept(path: Path) -> None:
    """Record that ``path`` holds finished work a rerun reuses (a stop leaves it there)."""
    if Path(path) not in _KEPT:
        _KEPT.append(Path(path))


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

    Returns the files left: the user's, and an owned file that could not be deleted (its
    folder made read-only, say), which stays where it is rather than fail a command whose
    output is already in place. ``directory`` itself is removed only when empty.
    """
    directory = Path(directory)
    if not directory.is_dir() or directory.is_symlink():
        return []
    left = []
    for relative in _files(directory):
        if owned.owns(relative):
            try:
                (directory / relative).unlink()
            except FileNotFoundError:
                pass
            except OSError:
                left.append(relative)
        else:
            left.append(relative)
    for root, _, _ in sorted(os.walk(directory), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):  # not empty: the user's files are there
            os.rmdir(root)
    return left


def displaced_entries(new: Path, old: Path, owned_old: Owned) -> list[str]:
    """The user's files of ``old`` whose place the new directory ``new`` takes, relative.

    A file of ``old`` that ``owned_old`` does not cover (the user's) is displaced when
    ``new`` has something at its path, or a file where one of its folders would be:
    :func:`replace_directory` could not move it into ``new``.
    """
    new = Path(new)
    displaced = []
    for relative in foreign_entries(old, owned_old):
        parts = Path(relative).parts
        at = [new.joinpath(*parts[:i]) for i in range(1, len(parts) + 1)]
        if os.path.lexists(at[-1]) or any(
                os.path.lexists(p) and (p.is_symlink() or not p.is_dir()) for p in at[:-1]):
            displaced.append(relative)
    return displaced


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
            try:
                out.rename(old)
            except BaseException:  # nothing moved (e.g. EBUSY, a mount point): undo aside
                os.rmdir(aside)
                raise
            try:
                new.rename(out)
            except BaseException:  # put the earlier directory back where it was
                old.rename(out)
                os.rmdir(aside)
                raise
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

