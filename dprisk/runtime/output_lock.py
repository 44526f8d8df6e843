"""One writer at a time: :class:`OutputLock`, an exclusive ``flock`` on an output's lock file.

Used by every writer of :mod:`dprisk.runtime.output_files`' kind (the resumable sweeps, the new
outputs, the output directories). The lock file holds the holder's process id; the kernel
releases the lock when its holder dies, so the lock file of a killed run is taken over by the
next run (a stale lock never blocks). The lock and its file are registered for a stop signal's
forced exit (:data:`~dprisk.runtime.output_files.FORCED_EXIT_CLEANUPS`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from pathlib import Path

from dprisk.runtime.output_files import (
    FORCED_EXIT_CLEANUPS,
    OutputError,
    OutputInUse,
    file_mode,
)

__all__ = ["OutputLock"]

#: Makes :meth:`OutputLock.release` take the descriptor once, whichever thread comes first.
_RELEASING = threading.Lock()


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
    name : str
        How the refusal names the output (``out`` in the API, an option such as ``--plot``).
    """

    def __init__(self, path: Path, out: Path, name: str = "out"):
        self.path = Path(path)
        self.out = Path(out)
        self.name = name
        self._fd: int | None = None

    def acquire(self) -> OutputLock:
        """Take the lock or raise :class:`OutputInUse`."""
        import fcntl

        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                raise OutputInUse(
                    f"{self.name} {str(self.out)!r} is being written by another running process "
                    f"(pid {self._holder()}); wait for it to finish or choose another path"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a lock file its previous holder removed meanwhile
                break
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except BaseException:  # a full disk (ENOSPC): the lock file is ours, it goes
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            os.close(fd)
            raise
        self._fd = fd
        FORCED_EXIT_CLEANUPS[id(self)] = self.release
        return self

    def _open(self) -> int:
        """Open (or create) the lock file: a regular file only, never through a link.

        A symbolic link, FIFO, device or directory at its name is refused (:class:`OutputError`
        naming the output): opening it would truncate and overwrite the file a link points
        to (the user's), or block.
        """
        refusal = OutputError(
            f"{self.name} {str(self.out)!r}: its lock file {str(self.path)!r} exists and is not "
            "a regular file (a symbolic link, say); refusing to write through it (remove it or "
            "choose another path)")
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK,
                         file_mode())
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                raise refusal from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise refusal
        return fd

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
