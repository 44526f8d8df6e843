"""The paper-reproduction report: every study's figures, data and published-vs-computed records.

:func:`write_report` runs the registered studies (:data:`STUDIES`: each study module
registers itself with :func:`dprisk.validation.registry.report_study`, its cost hint beside
it), each returning a :class:`StudyResult`, and writes

* ``DIR/figures/*.png`` — one file per figure, named after the paper's figure;
* ``DIR/results.nc`` — the studies' xarray data, one netCDF group per study;
* ``DIR/results.json`` — one record per published number,
  ``{"id", "source", "published", "computed", "mcse", "status", "explanation"}`` plus
  ``{"printed_as", "latex_label", "claim"}`` (:mod:`dprisk.validation.paper.record_annotations`);
* ``DIR/index.html`` — the page a person reads.

Nothing partial, nothing foreign destroyed (:mod:`dprisk.validation.report.output`): ``out``
must be new, empty or a report this tool wrote (marker file ``.dprisk-report``); the report is
assembled in a temporary sibling directory and moved into place only when complete; on
failure the temporary directory is removed and the error propagates (the CLI turns it into a
non-zero exit with a message). A second run on the same ``out`` is refused while one runs.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import xarray as xr

from dprisk.validation.paper.record_annotations import annotate
from dprisk.validation.paper.records import (
    NUMBER_STATUSES,
    RECORD_KEYS,
    STATUSES,
    StudyResult,
    is_check,
    validate_records,
)
from dprisk.validation.registry import registered
from dprisk.validation.report.fork_server import report_preload
from dprisk.validation.report.output import ReportTarget
from dprisk.validation.report.page import render_html
from dprisk.validation.report.runner import run_studies
from dprisk.validation.report.tree_netcdf import write_tree

__all__ = ["RECORD_KEYS", "STUDIES", "StudyResult", "validate_records", "write_report"]


#: The registered studies (:func:`dprisk.validation.registry.registered`: each study module
#: registers its study with ``@report_study``), ``(title, study)`` in page order, run by
#: :func:`write_report` (the page shows the decision summary first,
#: :data:`dprisk.validation.report.page.DECISION_SUMMARY`). Found without importing them.
STUDIES: list[tuple[str, Callable[..., StudyResult]]] = [
    (study.title, study) for study in registered()
]


def _preload() -> tuple[str, ...]:
    """The fork server's preload: the libraries and each registered study's module.

    :func:`~dprisk.validation.report.fork_server.report_preload` of :data:`STUDIES`.
    """
    return report_preload(study for _, study in STUDIES)


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for dist in ("dp-disclosure-risk", "pymc", "pytensor", "arviz", "numpy", "scipy", "xarray",
                 "matplotlib"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return versions


def _write_all(tmp: Path, results: list[StudyResult], pngs: list[dict[str, bytes]],
               paper_scale: bool, start: float) -> dict:
    figures_dir = tmp / "figures"
    figures_dir.mkdir()
    n_figures = 0
    for study_pngs in pngs:  # rendered where each study ran (runner.render_figures)
        for stem, png in study_pngs.items():
            (figures_dir / f"{stem}.png").write_bytes(png)
            n_figures += 1
    tree = xr.DataTree.from_dict(
        {f"/{study.name}/{key}": ds for study in results for key, ds in study.datasets.items()}
    )
    write_tree(tree, tmp / "results.nc")  # as tree.to_netcdf, the data after the metadata
    records = [r for study in results for r in study.records]
    validate_records(records)
    records = [annotate(r) for r in records]  # + the paper's numbering, claims as claims
    (tmp / "results.json").write_text(json.dumps(records, indent=1) + "\n")
    versions = _versions()
    seconds = time.perf_counter() - start  # the run up to this page, as the command counts it
    (tmp / "index.html").write_text(render_html(results, versions, seconds, paper_scale))
    return {
        "n_records": len(records),
        "n_figures": n_figures,
        "seconds": seconds,  # the time the page shows, so the command prints the same
        "status_counts": {s: n for s in STATUSES  # in the order of STATUSES
                          if (n := sum(r["status"] == s for r in records))},
        # of status_counts, the suite's own checks (no published number; records.is_check)
        "check_status_counts": {s: n for s in NUMBER_STATUSES
                                if (n := sum(r["status"] == s and is_check(r)
                                             for r in records))},
    }


def write_report(out, *, paper_scale: bool = False, progress: bool = True,
                 workers: int = 1) -> dict:
    """Run every registered study and write the report to ``out`` atomically.

    Parameters
    ----------
    out : str or Path
        Destination directory: new, empty, or a report written earlier (it holds the
        marker :data:`dprisk.validation.report.output.MARKER`); replaced only once the new
        report is complete. Anything else raises ``ValueError`` before any study runs.
    paper_scale : bool
        Use the paper's Monte Carlo budgets instead of the default (fast) ones.
    progress : bool
        Show a progress bar on stderr.
    workers : int (>= 1)
        Run the studies in this many worker processes
        (:func:`dprisk.validation.report.runner.run_studies`: the same numbers, records and
        seeds as one after another; ``dprisk reproduce`` uses every core); 1 runs them here.

    Returns
    -------
    dict
        ``{"out", "n_records", "n_figures", "status_counts", "check_status_counts",
        "seconds"}``: ``status_counts`` counts every record by status, ``check_status_counts``
        those of them that are the suite's own checks, with no published number
        (:func:`dprisk.validation.paper.records.is_check`).
    """
    from tqdm.auto import tqdm

    start = time.perf_counter()
    with ReportTarget(out) as target:
        results: list = [None] * len(STUDIES)
        pngs: list = [None] * len(STUDIES)
        with tqdm(total=len(STUDIES), desc="reproduce", unit="study", disable=not progress,
                  file=sys.stderr) as bar:
            for i, result, figures in run_studies([study for _, study in STUDIES],
                                                  paper_scale=paper_scale, workers=workers,
                                                  preload=_preload()):
                results[i], pngs[i] = result, figures
                bar.set_postfix_str(STUDIES[i][0][:40])
                bar.update()
        summary = target.write(lambda tmp: _write_all(tmp, results, pngs, paper_scale, start))
    out = target.out
    summary.update(out=str(out))
    return summary
