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
user's umask) and puts it in place only once complete, through
:func:`dprisk.runtime.writers.replace_directory`: the marker lists the report's files (its
manifest); the earlier report and the new one are exchanged atomically, files the user added
to the earlier report are moved into the new one, and only the earlier report's own files are
deleted. On failure or interruption before the exchange the temporary directory is removed
and the earlier report is intact. A missing ``out`` is created exclusively: anything that
appeared there while the report was made (a file, a directory that is not a report) is never
replaced (:class:`~dprisk.runtime.output_files.OutputAppeared`, naming ``out``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from dprisk.runtime.output_files import (
    FORCED_EXIT_CLEANUPS,
    OutputAppeared,
    OutputError,
    OutputLock,
    check_creatable,
    make_temporary_dir,
)
from dprisk.runtime.writers import (
    hold_stop_signals,
    read_manifest,
    remove_leftover_dirs,
    replace_directory,
    write_manifest,
)

__all__ = ["MARKER", "ReportTarget", "check_report_out"]

#: Name of the marker file in every report directory this tool writes: JSON listing the
#: files the report wrote there (its manifest, :func:`dprisk.runtime.writers.write_manifest`).
MARKER = ".dprisk-report"
#: The files of a report written before manifests besides its figures.
LEGACY_FILES = ("index.html", "results.json", "results.nc")


def legacy_files(path: Path) -> list[str]:
    """What a report written before manifests owns (its marker lists no files).

    Its fixed files and the figures its page shows (``figures/STEM.png`` linked from
    ``index.html``): a figure the user added is not among them.
    """
    try:
        page = (path / "index.html").read_text(errors="replace")
    except OSError:
        page = ""
    figures = sorted(set(re.findall(r"src='(figures/[^'/<>]+\.png)'", page)))
    return [*LEGACY_FILES, *figures]


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
        if read_manifest(path, MARKER) is None and any(path.iterdir()):
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
            for kind in ("tmp", "old"):  # what a killed run left: its own files only
                remove_leftover_dirs(self.out.parent, f".{self.out.name}-{kind}-*", MARKER,
                                     legacy_files)
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.lock.release()

    def write(self, fill: Callable[[Path], dict]) -> dict:
        """Fill a temporary directory with ``fill(tmp)`` and put it at ``out`` atomically.

        The marker :data:`MARKER` is written first (saying the directory is in progress) and
        again last, listing every file ``fill`` wrote. The earlier report is then exchanged
        with the new one (:func:`dprisk.runtime.writers.replace_directory`): files the user
        added to it are moved into the new report, and only the files its own marker lists are
        deleted. Returns what ``fill`` returns.
        """
        out = self.out
        tmp = make_temporary_dir(out.parent, f".{out.name}-tmp-")
        FORCED_EXIT_CLEANUPS[id(tmp)] = lambda: shutil.rmtree(tmp, ignore_errors=True)
        exchanging = False
        try:
            (tmp / MARKER).write_text(json.dumps({"written_by": "dprisk reproduce",
                                                  "in_progress": True}) + "\n")
            summary = fill(tmp)
            write_manifest(tmp, MARKER, "dprisk reproduce")
            if out.is_symlink() or (out.exists() and not out.is_dir()):  # appeared meanwhile
                raise OutputAppeared(f"out {str(out)!r} appeared while the report was made and "
                                     "is not a report directory; nothing was replaced")
            owned_old = read_manifest(out, MARKER, legacy_files) if out.exists() else None
            if owned_old is None and out.exists() and any(out.iterdir()):  # changed meanwhile
                raise OutputError(f"out {str(out)!r} changed while the report was made and is "
                                  "no longer a report directory; nothing was replaced")
            with hold_stop_signals():  # from here on tmp is no longer a temporary to remove
                FORCED_EXIT_CLEANUPS.pop(id(tmp), None)
                exchanging = True
                replace_directory(tmp, out, owned_old)
        except OutputAppeared:  # raised before anything was moved: tmp is still ours
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        except BaseException:
            FORCED_EXIT_CLEANUPS.pop(id(tmp), None)
            if not exchanging:
                shutil.rmtree(tmp, ignore_errors=True)  # ours: made above, under a new name
            raise
        return summary
