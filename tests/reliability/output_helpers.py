"""Subprocess side of the kill and concurrency tests of output files (``test_output_kills.py``).

Run as ``python -c "import output_helpers as h; h.main()" COMMAND OUT SIGNAL_FILE``:

* ``report OUT SIGNAL_FILE PHASE`` -- :func:`dprisk.validation.report.build.write_report` with one
  tiny stub study (no real study runs). With ``PHASE=study`` the study creates
  ``SIGNAL_FILE`` and sleeps (the run holds the lock, nothing written yet); with
  ``PHASE=write`` the report's files are written into the temporary directory, then
  ``SIGNAL_FILE`` is created and the run sleeps before moving it into place.
* ``sweep OUT SIGNAL_FILE`` -- the resume tests' exact sweep
  (``reliability_helpers.resumable_sweep``); once its netCDF file is written to the
  temporary name beside ``OUT`` (the final write), ``SIGNAL_FILE`` is created and the run
  sleeps before the move.

The test kills the process (SIGKILL) once ``SIGNAL_FILE`` exists, or lets it finish: then it
sets ``OUTPUT_HELPERS_RELEASE`` to a file name and creates that file when the helper may go on
(the hold ends at once, instead of after a fixed wait).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

#: Longest seconds a helper holds once it has signalled (the test kills it or releases it).
HOLD = float(os.environ.get("OUTPUT_HELPERS_HOLD", "60"))
#: A file whose creation ends the hold at once (none: the hold lasts :data:`HOLD` seconds).
RELEASE = os.environ.get("OUTPUT_HELPERS_RELEASE", "")


def stub_study(*, paper_scale):
    """A study of one record, one small dataset and one figure (milliseconds)."""
    import xarray as xr
    from matplotlib.figure import Figure

    from dprisk.validation.paper.records import StudyResult

    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    record = {"id": "stub/x", "source": "Table 0", "published": 0.5, "computed": 0.5,
              "mcse": None, "status": "match", "explanation": ""}
    data = xr.Dataset({"value": ("x", np.arange(3.0))})
    return StudyResult(name="stub", title="Stub study", records=[record],
                       datasets={"table": data}, figures={"figure0": fig})


def _signal_and_hold(signal_file: str) -> None:
    Path(signal_file).write_text(str(os.getpid()))
    deadline = time.monotonic() + HOLD
    while time.monotonic() < deadline and not (RELEASE and Path(RELEASE).exists()):
        time.sleep(0.01)


def run_report(out: str, signal_file: str = "", phase: str = "") -> dict:
    """``write_report(out)`` with :func:`stub_study`, held at ``phase`` (see the docstring)."""
    from dprisk.validation.report import build as report

    def held_study(*, paper_scale):
        if phase == "study":
            _signal_and_hold(signal_file)
        return stub_study(paper_scale=paper_scale)

    studies, write_all = report.STUDIES, report._write_all

    def held_write_all(tmp, *args):
        summary = write_all(tmp, *args)
        _signal_and_hold(signal_file)
        return summary

    report.STUDIES = [("stub", held_study)]
    if phase == "write":
        report._write_all = held_write_all
    try:
        return report.write_report(out, progress=False)
    finally:  # tests call this in their own process: the report's studies are put back
        report.STUDIES, report._write_all = studies, write_all


def run_sweep(out: str, signal_file: str) -> None:
    """The resume tests' exact sweep, held after its final file is written (not yet moved)."""
    import reliability_helpers

    from dprisk.inference.sweeps import store as sweep_store

    write_table = sweep_store.write_table

    def held_write_table(path, table):
        write_table(path, table)
        if str(path).endswith(".tmp"):
            _signal_and_hold(signal_file)

    sweep_store.write_table = held_write_table
    reliability_helpers.resumable_sweep(out, "exact")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the subprocesses (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[0] == "report":
        run_report(*argv[1:])
    elif argv[0] == "sweep":
        run_sweep(*argv[1:])
    else:
        raise SystemExit(f"unknown command {argv[0]!r}")
