"""Where the reproduction report goes: only a report directory is ever replaced, atomically.

The report is written through the one directory writer,
:class:`dprisk.runtime.output_directory.OutputDirectory` (checks before any study runs, the
lock, the atomic exchange that keeps the user's files, and the refusal of a path that appeared
during the run). This module fixes what is the report's own: its marker :data:`MARKER` (the
manifest of its files), the files a report written before manifests owns
(:func:`legacy_files`), and the name ``out`` in refusals. :func:`check_report_out` accepts a
missing path, an empty directory or a directory holding the marker; :class:`ReportTarget`
holds the report directory while the studies run.
"""

from __future__ import annotations

import re
from pathlib import Path

from dprisk.runtime.output_directory import OutputDirectory, check_output_dir

__all__ = ["MARKER", "ReportTarget", "check_report_out", "legacy_files"]

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
    ``index.html``): a figure the user added is not among them.
    """
    try:
        page = (path / "index.html").read_text(errors="replace")
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
        A ``ValueError`` naming ``out`` and the reason, for any other path.
    """
    return check_output_dir(out, MARKER, COMMAND, name="out")


class ReportTarget(OutputDirectory):
    """The report directory ``out`` while a report is made (a context manager holding its lock).

    Parameters
    ----------
    out : str or Path
        Checked with :func:`check_report_out` at once, and again once the lock is held.
    """

    def __init__(self, out):
        super().__init__(out, marker=MARKER, command=COMMAND, name="out", legacy=legacy_files)
