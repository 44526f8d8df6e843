"""Output files that are safe to write: atomic replacement, the user's umask, one writer at a time.

Shared by the resumable sweeps (:mod:`dprisk.inference.sweeps.store`) and the reproduction
report (:mod:`dprisk.validation.report.output`).

* :func:`atomic_path` yields a temporary name beside a file and moves it onto the file with
  :func:`os.replace` only when the block succeeds: the file is either the old one or the
  complete new one, never half-written.
* :func:`make_temporary_dir` and :func:`atomic_path` create their temporaries with the
  permissions of an ordinary file or directory under the user's umask (``0o666 & ~umask``,
  ``0o777 & ~umask``), not the ``0600`` / ``0700`` of :mod:`tempfile`.
* :class:`OutputLock` is an exclusive :func:`fcntl.flock` on a lock file holding the writer's
  process id. A second writer is refused at once (:class:`OutputInUse`, naming the pid); the
  kernel releases the lock when its holder dies, so the lock file of a killed run is taken
  over by the next run (a stale lock never blocks).
* :class:`OutputError` (a ``ValueError``) is the refusal of an output path; its message
  starts with ``out`` so that the command line can name its option ``--out`` instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
import threading
from pathlib import Path

__all__ = [
    "FORCED_EXIT_CLEANUPS",
    "TEMPORARY_NAME_BYTES",
    "OutputError",
    "OutputInUse",
    "OutputLock",
    "atomic_path",
    "check_creatable",
    "file_mode",
    "make_temporary_dir",
    "remove_leftovers",
    "run_forced_exit_cleanups",
]

#: What a forced exit (the stop signal's watchdog, :mod:`dprisk.cli.common`) must undo: the
#: lock files held and the temporaries being filled, by key (registered while they exist).
FORCED_EXIT_CLEANUPS: dict[int, object] = {}
#: Makes :meth:`OutputLock.release` take the descriptor once, whichever thread comes first.
_RELEASING = threading.Lock()


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


@contextlib.contextmanager
def atomic_path(path: Path):
    """Yield a temporary path ``.NAME.xxxx.tmp`` beside ``path``; move it onto ``path`` on success.

    The temporary file gets the permissions of :func:`file_mode` before it is moved. On an
    exception it is deleted and ``path`` is left untouched.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: Bytes a temporary's name adds to its target's (``.NAME.`` + a random part + ``.tmp``): a
#: name longer than the file system's limit less these is refused up front.
TEMPORARY_NAME_BYTES = 32


def check_creatable(path: Path, name: str = "out") -> None:
    """Raise :class:`OutputError` unless ``path`` can be created, and its temporaries beside it.

    Refused: a name longer than the file system's limit (less :data:`TEMPORARY_NAME_BYTES`),
    and a path whose nearest existing ancestor is not a directory in which a file can be
    created (tried: a hidden probe file is created and removed, so that ``/proc``, a read-only
    mount or a directory root may not write to are refused too). The message names ``name``
    (``out`` in the API, ``--out`` on the command line).
    """
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


#: The longest file name (bytes) of the usual file systems.
_NAME_MAX = 255


def remove_leftovers(parent: Path, pattern: str) -> list[str]:
    """Remove the files and directories ``parent/pattern`` (temporaries of a killed run).

    Call it only while holding the output's :class:`OutputLock`, so that no running writer
    owns them. Returns the names removed.
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


class OutputLock:
    """An exclusive lock on an output: ``flock`` on ``path``, a file holding the holder's pid.

    Use as a context manager. :meth:`acquire` raises :class:`OutputInUse` (naming ``out``
    and the holder's pid) when another live process holds it; a lock file left by a killed
    process is not locked (the kernel released it) and is taken over. :meth:`release`
    removes the lock file.

    Parameters
    ----------
    path : Path
        The lock file.
    out : Path
        The output it protects (named in the refusal).
    """

    def __init__(self, path: Path, out: Path):
        self.path = Path(path)
        self.out = Path(out)
        self._fd: int | None = None

    def acquire(self) -> OutputLock:
        """Take the lock or raise :class:`OutputInUse`."""
        import fcntl

        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, file_mode())
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                raise OutputInUse(
                    f"out {str(self.out)!r} is being written by another running process "
                    f"(pid {self._holder()}); wait for it to finish or choose another path"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a lock file its previous holder removed meanwhile
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        FORCED_EXIT_CLEANUPS[id(self)] = self.release
        return self

    def _holder(self) -> str:
        try:
            return self.path.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def release(self) -> None:
        """Remove the lock file and unlock (idempotent).

        The stop watchdog's thread may run it while the main thread's ``finally`` does: only
        one of them closes the descriptor.
        """
        FORCED_EXIT_CLEANUPS.pop(id(self), None)
        with _RELEASING:
            fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(fd)

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
