"""Where the reproduction report goes: only a report directory is ever replaced, atomically.

The report is written through the one directory writer,
:class:`dprisk.runtime.output_directory.OutputDirectory` (checks before any study runs, the
lock, the atomic exchange that keeps the user's files, and the refusal of a path that appeared
during the run). This module fixes what is the report's own: its marker :data:`MARKER` (the
manifest of its files), the files a report written before manifests owns
(:func:`legacy_files`), and the name ``out`` in refusals. :func:`check_report_out` accepts a
missing path, an empty directory or a directory holding the marker; :class:`ReportTarget`
holds the report directory while the studies run. :func:`remove_report` (``make clean``,
``python -m dprisk.validation.report.output DIR``) deletes a report's own files only.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from dprisk.runtime.output_directory import OutputDirectory, check_output_dir

__all__ = ["MARKER", "SCREENSHOTS", "ReportTarget", "check_report_out", "legacy_files",
           "remove_report"]

#: Name of the marker file in every report directory this tool writes: JSON listing the
#: files the report wrote there (its manifest, :func:`dprisk.runtime.writers.write_manifest`).
MARKER = ".dprisk-report"
#: The files of a report written before manifests besides its figures.
LEGACY_FILES = ("index.html", "results.json", "results.nc")
#: The command named in the marker and in refusals.
COMMAND = "dprisk reproduce"


def legacy_files(path: Path) -> list[str]:
    """What a report written before manifests owns (its marker lists no files).

    Its fixed files and the figures its page shows (``figures/STEM.png`` linked from
    ``index.html``): a figure the user added is not among them. An ``index.html`` that is
    not a regular file (a FIFO would block the read) is not the report's page: not opened,
    and not among its files.
    """
    from dprisk.runtime.output_files import NotRegularFile, read_regular_text

    try:
        page = read_regular_text(path / "index.html", errors="replace")
    except NotRegularFile:
        return [name for name in LEGACY_FILES if name != "index.html"]
    except OSError:
        page = ""
    figures = sorted(set(re.findall(r"src='(figures/[^'/<>]+\.png)'", page)))
    return [*LEGACY_FILES, *figures]


def check_report_out(out) -> Path:
    """The absolute report directory ``out``, when this tool may write it.

    :func:`dprisk.runtime.output_directory.check_output_dir` with the report's marker.

    Raises
    ------
    TypeError
        ``out`` is not a path.
    OutputError
        A ``ValueError`` naming ``out`` and the reason, for any other path; also for a
        report whose ``index.html`` is not a regular file (a FIFO, say: not a page a report
        wrote, refused before the studies run rather than once they are done).
    """
    from dprisk.runtime.output_files import OutputError

    path = check_output_dir(out, MARKER, COMMAND, name="out")
    page = path / "index.html"
    if os.path.lexists(page) and not page.is_file():
        raise OutputError(f"out {str(out)!r} holds {str(page)!r}, which is not a regular file "
                          "(a FIFO, say) and not a page a report wrote; remove it or choose "
                          "another path")
    return path


class ReportTarget(OutputDirectory):
    """The report directory ``out`` while a report is made (a context manager holding its lock).

    Parameters
    ----------
    out : str or Path
        Checked with :func:`check_report_out` at once, and again once the lock is held.
    """

    def __init__(self, out):
        super().__init__(out, marker=MARKER, command=COMMAND, name="out", legacy=legacy_files)


#: What ``make screenshot`` adds to a report (:mod:`dprisk.validation.report.screenshot`),
#: relative globs: deleted with the report's own files.
SCREENSHOTS = ("screenshot.png", "screenshots/*.png")


def remove_report(path) -> list[str]:
    """Delete the report directory ``path``'s own files; return the files left (the user's).

    Its own: the files its marker lists (a report written before manifests: those of
    :func:`legacy_files`), the marker, and what ``make screenshot`` wrote there
    (:data:`SCREENSHOTS`). Folders left empty go, ``path`` too once empty; a file the user
    added stays, as a rerun of ``dprisk reproduce`` keeps it.

    Raises
    ------
    OutputError
        ``path`` is a symbolic link, or a directory without :data:`MARKER` (not a report:
        nothing of it is deleted).
    """
    from dprisk.runtime.output_files import OutputError
    from dprisk.runtime.writers import Owned, read_manifest, remove_owned

    path = Path(path)
    if path.is_symlink():
        raise OutputError(f"{str(path)!r} is a symbolic link, not a report directory")
    owned = read_manifest(path, MARKER, legacy_files) if path.is_dir() else None
    if owned is None:
        raise OutputError(f"{str(path)!r} is not a report directory of {COMMAND} (no {MARKER} "
                          "marker)")
    shots = {p.relative_to(path).as_posix() for pattern in SCREENSHOTS for p in path.glob(pattern)
             if p.is_file() and not p.is_symlink()}
    return remove_owned(path, Owned(files=owned.files | shots))


def main(argv: list[str] | None = None) -> int:
    """``make clean``: remove the report directory ``argv[0]`` (its own files); status 0."""
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else "report"
    if not Path(path).exists() and not Path(path).is_symlink():
        return 0
    try:
        left = remove_report(path)
    except ValueError as err:
        print(f"clean: kept: {err}", file=sys.stderr)
        return 0
    if left:
        print(f"clean: {path!r} kept, holding files not of the report: {', '.join(left)}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
