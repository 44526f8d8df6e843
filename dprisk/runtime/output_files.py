"""Output files that are safe to write: atomic replacement, the user's umask, one writer at a time.

Shared by the resumable sweeps (:mod:`dprisk.inference.sweeps.store`), the new outputs
(:mod:`dprisk.runtime.new_outputs`) and the output directories of the reproduction report and
the population commands (:mod:`dprisk.runtime.output_directory`).

* :func:`atomic_path` yields a temporary name beside a file and moves it onto the file only
  when the block succeeds: the file is either the old one (or absent) or the complete new one,
  never half-written. With ``replace=False`` the move is an exclusive create
  (:func:`rename_noreplace`): a file that appeared at the path meanwhile is never replaced.
* **Temporaries a later run can identify.** Every temporary of an output ``NAME`` is called
  ``.NAME.PID.XXXXXXXX.tmp`` (the writer's process id, 8 random hex digits;
  :func:`make_owned_temporary`), is registered for the forced exit of a stop signal
  (:data:`FORCED_EXIT_CLEANUPS`) and is removed on every other exit path.
  :func:`remove_stale_temporaries` removes what a killed run left: only names of exactly
  that pattern for that output, and only when the process named by the PID is gone (a live
  process's temporary, or a name of the user's, is never touched). Call it holding the
  output's :class:`~dprisk.runtime.output_lock.OutputLock`, which no other live writer of
  that output then holds.
* :func:`make_temporary_dir` and :func:`atomic_path` create their temporaries with the
  permissions of an ordinary file or directory under the user's umask (``0o666 & ~umask``,
  ``0o777 & ~umask``), not the ``0600`` / ``0700`` of :mod:`tempfile`.
* :class:`~dprisk.runtime.output_lock.OutputLock` (its own module) is an exclusive
  :func:`fcntl.flock` on a lock file holding the writer's process id. A second writer is
  refused at once (:class:`OutputInUse`, naming the pid); the kernel releases the lock when
  its holder dies, so the lock file of a killed run is taken over by the next run (a stale
  lock never blocks).
* :class:`OutputError` (a ``ValueError``) is the refusal of an output path; its message
  starts with ``out`` so that the command line can name its option ``--out`` instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = [
    "FORCED_EXIT_CLEANUPS",
    "TEMPORARY_NAME_BYTES",
    "NotRegularFile",
    "OutputAppeared",
    "OutputError",
    "OutputInUse",
    "atomic_path",
    "check_creatable",
    "exchange_paths",
    "file_mode",
    "make_owned_temporary",
    "make_parents",
    "make_temporary_dir",
    "pid_alive",
    "protected_directory",
    "read_regular_text",
    "release_temporary",
    "remove_leftovers",
    "remove_made_parents",
    "remove_stale_temporaries",
    "rename_noreplace",
    "run_forced_exit_cleanups",
    "temporary_pattern",
]

#: What a forced exit (the stop signal's watchdog, :mod:`dprisk.cli.common`) must undo: the
#: lock files held and the temporaries being filled, by key (registered while they exist).
FORCED_EXIT_CLEANUPS: dict[int, object] = {}


def run_forced_exit_cleanups() -> None:
    """Run every registered clean-up (newest first); errors are ignored (the process ends)."""
    for key in sorted(FORCED_EXIT_CLEANUPS, reverse=True):
        cleanup = FORCED_EXIT_CLEANUPS.pop(key, None)
        if cleanup is not None:
            with contextlib.suppress(Exception):
                cleanup()


class OutputError(ValueError):
    """An output path the tool refuses to write (the message names ``out``)."""


class OutputInUse(OutputError):
    """Another running process is writing the same output."""


class OutputAppeared(OutputError):
    """Something appeared at an output path during the run; it was not replaced."""


def _umask() -> int:
    """The process's umask (read without changing it where ``/proc`` allows)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode(*, directory: bool = False) -> int:
    """Permissions of a new file (``0o666 & ~umask``) or directory (``0o777 & ~umask``)."""
    return (0o777 if directory else 0o666) & ~_umask()


def make_temporary_dir(parent: Path, prefix: str) -> Path:
    """A new directory ``parent/PREFIXxxxx`` with the permissions of :func:`file_mode`."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(path, file_mode(directory=True))
    return path


def protected_directory(path: Path) -> str | None:
    """Why the directory ``path`` (resolved) may never be replaced, or None.

    It is or contains the current directory (replacing it would leave this process and the
    user's shell in a deleted directory), it is the home directory, or it is a mount point
    (the kernel refuses to move it: EBUSY).
    """
    cwd = Path.cwd().resolve()
    if cwd == path or path in cwd.parents:
        return "is or contains the current directory"
    if path == Path.home().resolve():
        return "is the home directory"
    if os.path.ismount(path):
        return "is a mount point (it cannot be replaced)"
    return None


def make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing ancestors; return those this call made (top first).

    A directory another process makes meanwhile is not counted as made here. Pass the list
    to :func:`remove_made_parents` when the output they were made for is not written.
    """
    missing = []
    directory = Path(directory)
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


def remove_made_parents(made: list[Path]) -> None:
    """Remove the directories :func:`make_parents` made, deepest first, each only while empty.

    A directory that holds anything (the user's file, another run's output) stays, and so do
    its ancestors.
    """
    for path in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(path)


def temporary_pattern(target: Path) -> re.Pattern:
    """The names of the temporaries of the output ``target``: ``.NAME.PID.XXXXXXXX.tmp``."""
    return re.compile(rf"\.{re.escape(Path(target).name)}\.([0-9]{{1,10}})\.[0-9a-f]{{8}}\.tmp")


def _remove_path(path: Path) -> None:
    """Remove the file, link or directory tree ``path`` (missing: nothing to do)."""
    for _ in range(3):  # a writer still filling a directory may add a file meanwhile
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        if not os.path.lexists(path):
            return


def make_owned_temporary(target: Path, *, directory: bool = False) -> Path:
    """Create ``.NAME.PID.XXXXXXXX.tmp`` beside ``target`` (a file, or a directory), exclusively.

    Its permissions are those of :func:`file_mode`; it is registered in
    :data:`FORCED_EXIT_CLEANUPS` (removed by a forced exit) until :func:`release_temporary`.
    """
    target = Path(target)
    while True:
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        FORCED_EXIT_CLEANUPS[id(tmp)] = lambda tmp=tmp: _remove_path(tmp)  # before it exists
        _TEMPORARIES[str(tmp)] = id(tmp)
        try:
            if directory:
                os.mkdir(tmp, file_mode(directory=True))
                os.chmod(tmp, file_mode(directory=True))
            else:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, file_mode()))
                os.chmod(tmp, file_mode())
        except FileExistsError:
            release_temporary(tmp, remove=False)
            continue
        except BaseException:
            release_temporary(tmp)
            raise
        return tmp


#: The registered temporaries of this process (path: key in :data:`FORCED_EXIT_CLEANUPS`).
_TEMPORARIES: dict[str, int] = {}


def release_temporary(tmp: Path, *, remove: bool = True) -> None:
    """Forget the temporary ``tmp`` (no forced exit removes it); delete it unless ``remove=False``.

    ``remove=False`` once it has been moved into place (its name no longer exists).
    """
    key = _TEMPORARIES.pop(str(tmp), None)
    if remove:
        _remove_path(Path(tmp))
    if key is not None:
        FORCED_EXIT_CLEANUPS.pop(key, None)


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts as alive)."""
    if pid <= 0:
        return True  # not a pid a writer has: never treat it as gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


class NotRegularFile(OSError):
    """A file the product reads is a FIFO, device, socket or directory (not one it wrote)."""


def read_regular_text(path, errors: str = "strict") -> str:
    """The text of ``path`` when it is a regular file; :class:`NotRegularFile` otherwise.

    Opened with ``O_NONBLOCK`` and checked with ``fstat`` before reading: a FIFO planted at
    a name the product reads (a manifest, a page, an owner file) would block a plain open
    until a writer came; a non-regular file is never one the product wrote.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        with os.fdopen(fd, encoding="utf-8", errors=errors) as file:
            fd = None  # the file object owns (and closes) it
            return file.read()
    finally:
        if fd is not None:
            os.close(fd)


def remove_stale_temporaries(target: Path) -> list[str]:
    """Remove the temporaries of ``target`` that a killed run left; return their names.

    Only names of exactly :func:`temporary_pattern` for ``target`` (in its directory), and
    only when the process its PID names is gone: a temporary of a live writer (this one, or
    one that reused the pid) and any name of the user's are kept. Call it holding the
    output's :class:`~dprisk.runtime.output_lock.OutputLock` (another live writer of
    ``target`` would hold it).
    """
    target = Path(target)
    pattern = temporary_pattern(target)
    removed = []
    try:
        names = sorted(os.listdir(target.parent))
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if match is None or pid_alive(int(match.group(1))):
            continue
        _remove_path(target.parent / name)
        removed.append(name)
    return removed


def rename_noreplace(src: Path, dst: Path) -> None:
    """Move ``src`` (a file or a directory) to ``dst`` only if nothing is at ``dst``.

    Raises :class:`FileExistsError` when something is (or appears) there; nothing is then
    replaced and ``src`` stays where it was.

    Guarantee: on Linux (3.15 or later, glibc 2.28 or later) and a local file system, one
    ``renameat2(RENAME_NOREPLACE)`` call: the check and the move are one atomic step. Where
    that call is not available (another kernel, an older libc, a file system that refuses the
    flag, EINVAL), a file is published with :func:`os.link` (an exclusive create of the name,
    atomic on every POSIX file system; then ``src`` is unlinked), and a directory by an
    exclusive :func:`os.mkdir` of ``dst`` (atomic: it fails if anything is there) followed by a
    :func:`os.rename` onto that empty directory of ours, which the kernel performs only while
    it is still empty. The limits of that fallback: in the instant between the two calls
    ``dst`` exists as an empty directory, and an empty directory made there by someone else
    in that instant (after removing ours) would be replaced by the new one; a file or a
    non-empty directory there makes the rename fail and is never replaced. A file system
    without hard links (``os.link`` refused) falls back to a check then :func:`os.rename`:
    then a file appearing between the two could be replaced.
    """
    src, dst = Path(src), Path(dst)
    failed = _renameat2(src, dst, _RENAME_NOREPLACE)
    if failed == 0:
        return
    if failed == errno.EEXIST:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst))
    if failed not in (None, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        raise OSError(failed, os.strerror(failed), str(src), None, str(dst))
    if src.is_dir() and not src.is_symlink():
        os.mkdir(dst)  # FileExistsError: something is there
        try:
            os.rename(src, dst)  # onto our own empty directory: fails once it holds anything
        except OSError as err:
            with contextlib.suppress(OSError):
                os.rmdir(dst)
            if err.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst)) from None
            raise
        return
    try:
        os.link(src, dst, follow_symlinks=False)  # FileExistsError: something is there
    except FileExistsError:
        raise
    except OSError:  # no hard links here: check, then move (not atomic)
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst)) from None
        os.rename(src, dst)
        return
    os.unlink(src)


_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_LIBC: list = []


def _renameat2(src: Path, dst: Path, flags: int) -> int | None:
    """``renameat2(src, dst, flags)``: 0, the errno of its failure, or None where unavailable."""
    import ctypes
    import ctypes.util

    if not _LIBC:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
            _LIBC.append(libc.renameat2)
        except (OSError, AttributeError, TypeError):
            _LIBC.append(None)
    renameat2 = _LIBC[0]
    if renameat2 is None:
        return None
    at_fdcwd = -100
    if renameat2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), flags) == 0:
        return 0
    return ctypes.get_errno()


def exchange_paths(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False if unable."""
    return _renameat2(Path(a), Path(b), _RENAME_EXCHANGE) == 0


@contextlib.contextmanager
def atomic_path(path: Path, *, replace: bool = True):
    """Yield a temporary path ``.NAME.PID.XXXXXXXX.tmp`` beside ``path``; move it there on success.

    The temporary file (:func:`make_owned_temporary`) gets the permissions of
    :func:`file_mode` before it is moved. ``replace=True``: :func:`os.replace` onto ``path``;
    ``replace=False``: an exclusive create (:func:`rename_noreplace`) -- something at ``path``
    by then raises :class:`OutputAppeared` (naming ``out``) and is left untouched. On an
    exception, a stop signal's forced exit included, the temporary is deleted and ``path`` is
    left untouched.
    """
    path = Path(path)
    tmp = make_owned_temporary(path)
    try:
        yield str(tmp)
        os.chmod(tmp, file_mode())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                rename_noreplace(tmp, path)
            except FileExistsError:
                raise OutputAppeared(
                    f"out {str(path)!r} appeared while the command ran; refusing to replace "
                    "it (nothing was written: delete it or choose another path)") from None
    except BaseException:
        release_temporary(tmp)
        raise
    release_temporary(tmp, remove=False)


#: Bytes a temporary's or lock's name adds to its target's (``.NAME.PID.XXXXXXXX.tmp``: 22
#: with a pid of 7 digits; ``.NAME.lock``: 6), with room to spare: a name longer than the
#: file system's limit less these is refused up front.
TEMPORARY_NAME_BYTES = 32


def check_creatable(path: Path, name: str = "out") -> None:
    r"""Raise :class:`OutputError` unless ``path`` can be created, and its temporaries beside it.

    Refused: a path that is not valid UTF-8 (a byte name such as ``b'\xff.nc'``, which
    Python passes on as a lone surrogate: the netCDF, Parquet and report writers and the
    printed answers take UTF-8 only), a name longer than the file system's limit (less
    :data:`TEMPORARY_NAME_BYTES`), and a path whose nearest existing ancestor is not a
    directory in which a file can be created (tried: a hidden probe file is created and
    removed, so that ``/proc``, a read-only mount or a directory root may not write to are
    refused too). The message names ``name`` (``out`` in the API, ``--out`` on the command
    line).
    """
    _check_utf8(str(path), name)
    path = Path(path)
    probe = path.parent
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > _NAME_MAX - TEMPORARY_NAME_BYTES:
            raise OutputError(f"{name} {str(path)[:60]!r}...: a name of {size} bytes is too "
                              f"long (at most {_NAME_MAX - TEMPORARY_NAME_BYTES} bytes here)")
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(f"{name} {str(path)!r} cannot be created: {str(probe)!r} is not a "
                          "writable directory")
    try:
        fd, tried = tempfile.mkstemp(dir=probe, prefix=".dprisk-probe-")
        os.close(fd)
        os.unlink(tried)
    except OSError as err:
        raise OutputError(f"{name} {str(path)!r} cannot be created: {str(probe)!r} is not a "
                          f"writable directory ({err.strerror})") from None


def _check_utf8(text: str, name: str) -> None:
    """Refuse (naming ``name``) a path that does not encode to UTF-8 (see ``check_creatable``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            shown = repr(os.fsencode(text))  # the bytes given, e.g. b'\xff.nc'
        except UnicodeError:
            shown = ascii(text)
        raise OutputError(f"{name} {shown}: the path is not valid UTF-8 (the netCDF, Parquet "
                          "and figure writers take UTF-8 names only); name the output in "
                          "UTF-8") from None


#: The longest file name (bytes) of the usual file systems.
_NAME_MAX = 255


def remove_leftovers(parent: Path, pattern: str) -> list[str]:
    """Remove the files and directories ``parent/pattern`` (temporaries of a killed run).

    Call it only while holding the output's :class:`~dprisk.runtime.output_lock.OutputLock`,
    so that no running writer owns them. Returns the names removed.
    """
    removed = []
    for path in sorted(Path(parent).glob(pattern)):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        removed.append(path.name)
    return removed
