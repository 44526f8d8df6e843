"""Where the reproduction report goes: only a report directory is ever replaced, atomically.

The report writer (:func:`dprisk.validation.report.build.write_report`) leaves a marker file
:data:`MARKER` in every report directory it writes. :func:`check_report_out` accepts as
``out`` a missing path, an empty directory, or a directory holding that marker; anything else
(a non-empty directory the tool did not write, a file, a symbolic link, the current
directory or one containing it, the home directory) is refused with an
:class:`~dprisk.runtime.output_files.OutputError` naming ``out``, before anything is
touched.

:class:`ReportTarget` holds the output while the studies run: an
:class:`~dprisk.runtime.output_files.OutputLock` on ``.NAME.lock`` beside ``out`` (a second
run on the same ``out`` is refused; the lock of a killed run is taken over), and the
temporaries a killed run left beside ``out`` (``.NAME-tmp-*``, ``.NAME-old-*``) are removed.
:meth:`ReportTarget.write` fills a new temporary sibling directory (permissions under the
user's umask) and moves it into place only once complete: the old report is renamed aside,
the new one renamed onto ``out``, the old one removed. On failure the temporary directory is
removed and the old report is intact.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from dprisk.runtime.output_files import (
    OutputError,
    OutputLock,
    check_creatable,
    make_temporary_dir,
    remove_leftovers,
)

__all__ = ["MARKER", "ReportTarget", "check_report_out"]

#: Name of the marker file in every report directory this tool writes.
MARKER = ".dprisk-report"


def _protected(path: Path) -> str | None:
    """Why ``path`` may never be replaced (it holds the working or home directory), or None."""
    cwd = Path.cwd().resolve()
    if cwd == path or path in cwd.parents:
        return "is or contains the current directory"
    if path == Path.home().resolve():
        return "is the home directory"
    return None


def check_report_out(out) -> Path:
    """The absolute report directory ``out``, when this tool may write it.

    Allowed: a missing path whose nearest existing ancestor is a writable directory, an
    empty directory, or a directory holding :data:`MARKER` (a report written earlier).

    Raises
    ------
    TypeError
        ``out`` is not a path.
    OutputError
        A ``ValueError`` naming ``out`` and the reason, for any other path.
    """
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a directory path, got {out!r}")
    path = Path(os.path.abspath(out))
    if path.is_symlink():
        raise OutputError(f"out {str(out)!r} is a symbolic link; name the directory itself")
    if path.exists():
        path = path.resolve()
        if not path.is_dir():
            raise OutputError(f"out {str(out)!r} exists and is not a directory")
        reason = _protected(path)
        if reason is not None:
            raise OutputError(f"out {str(out)!r} {reason}; name a new directory for the report")
        if not (path / MARKER).is_file() and any(path.iterdir()):
            raise OutputError(
                f"out {str(out)!r} is a non-empty directory not written by dprisk reproduce "
                f"(no {MARKER} marker); refusing to replace it: name a new or empty directory"
            )
    check_creatable(path)
    return path


class ReportTarget:
    """The report directory ``out`` while a report is made (a context manager holding its lock).

    Parameters
    ----------
    out : str or Path
        Checked with :func:`check_report_out` at once, and again once the lock is held.
    """

    def __init__(self, out):
        self.out = check_report_out(out)
        self.lock = OutputLock(self.out.parent / f".{self.out.name}.lock", self.out)

    def __enter__(self) -> ReportTarget:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        try:
            check_report_out(self.out)
            remove_leftovers(self.out.parent, f".{self.out.name}-tmp-*")
            remove_leftovers(self.out.parent, f".{self.out.name}-old-*")
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.lock.release()

    def write(self, fill: Callable[[Path], dict]) -> dict:
        """Fill a temporary directory with ``fill(tmp)`` and move it onto ``out``.

        The marker :data:`MARKER` is written first. Returns what ``fill`` returns.
        """
        out = self.out
        tmp = make_temporary_dir(out.parent, f".{out.name}-tmp-")
        try:
            (tmp / MARKER).write_text(json.dumps({"written_by": "dprisk reproduce"}) + "\n")
            summary = fill(tmp)
            if out.exists():
                old = make_temporary_dir(out.parent, f".{out.name}-old-")
                out.rename(old / out.name)
                tmp.rename(out)
                shutil.rmtree(old)
            else:
                tmp.rename(out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return summary
