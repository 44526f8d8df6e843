"""Capture what code writes to file descriptors 1 and 2 (``os.write``, C ``printf``, children).

``contextlib.redirect_stdout`` only replaces ``sys.stdout``: text written straight to file
descriptor 1 -- ``os.write(1, ...)``, ``os.system("echo hi")``, a C extension's ``printf``
-- still reaches the real standard output (and would break the one JSON object of
``--json``). :func:`captured_fds` points descriptors 1 and 2 at temporary files while its
body runs (``os.dup``/``os.dup2``) and restores them afterwards, flushing the Python and C
stdio buffers on both sides so that nothing written before leaks in and nothing written
inside leaks out.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile

__all__ = ["CapturedText", "captured_fds"]


class CapturedText:
    """What was written to descriptors 1 and 2 inside :func:`captured_fds` (set on exit)."""

    def __init__(self):
        self.stdout = ""
        self.stderr = ""


def _flush_all() -> None:
    """Flush Python's ``sys.stdout``/``sys.stderr`` and every C stdio stream (``fflush(NULL)``)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def captured_fds():
    """Redirect descriptors 1 and 2 to temporary files while the body runs.

    Yields a :class:`CapturedText` whose ``stdout`` and ``stderr`` hold the text written to
    the descriptors (decoded as UTF-8, undecodable bytes replaced) once the body has left.
    A process whose descriptor 1 or 2 is not open is left as it is (nothing captured).
    """
    captured = CapturedText()
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:
        yield captured
        return
    files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    try:
        _flush_all()
        for fd, file in zip((1, 2), files, strict=True):
            os.dup2(file.fileno(), fd)
        try:
            yield captured
        finally:
            _flush_all()
            for fd, original in zip((1, 2), saved, strict=True):
                os.dup2(original, fd)
            texts = []
            for file in files:
                file.seek(0)
                texts.append(file.read().decode("utf-8", errors="replace"))
            captured.stdout, captured.stderr = texts
    finally:
        for handle in saved:
            os.close(handle)
        for file in files:
            file.close()
