"""A full disk at an output's lock, for the writers' tests (``tests/`` is on the test path).

:func:`fail_lock_pid_write` makes ``os.write`` of the lock file's pid line fail with ENOSPC,
as on a full tmpfs (the first byte a writer puts on the disk); other writes pass.
"""

from __future__ import annotations

import errno
import os


def fail_lock_pid_write(monkeypatch) -> None:
    """``os.write`` of ``"PID\\n"`` (the lock's content) raises ENOSPC; other writes pass."""
    from dprisk.runtime import output_lock

    write = os.write

    def full(fd, data):
        if data == f"{os.getpid()}\n".encode():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write(fd, data)

    monkeypatch.setattr(output_lock.os, "write", full)
