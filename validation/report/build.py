"""The paper-reproduction report: every study's figures, data and published-vs-computed records.

:func:`write_report` runs the registered studies (:data:`STUDIES`), each returning a
:class:`StudyResult`, and writes

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
from dprisk.validation.paper.records import RECORD_KEYS, STATUSES, StudyResult, validate_records
from dprisk.validation.report.output import ReportTarget
from dprisk.validation.report.page import render_html
from dprisk.validation.report.runner import PRELOAD, run_studies

__all__ = ["RECORD_KEYS", "STUDIES", "StudyResult", "validate_records", "write_report"]


def _decision_summary_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.beyond import decision_summary

    return decision_summary.study(paper_scale=paper_scale)


def _single_level_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.figures import single_level as figures_single_level
    from dprisk.validation.paper import single_level as single_level_paper

    return single_level_paper.study(figures=figures_single_level)


def _two_level_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.paper import two_level as two_level_paper

    return two_level_paper.study(paper_scale=paper_scale)


def _studies_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.paper import studies as studies_paper

    return studies_paper.study(paper_scale=paper_scale)


def _supplement_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.paper import supplement

    return supplement.study(paper_scale=paper_scale)


def _sbc_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.sbc import calibration as sbc

    return sbc.study(paper_scale=paper_scale)


def _decisions_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.beyond import decisions as decisions_study

    return decisions_study.study(paper_scale=paper_scale)


def _whole_record_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.beyond import whole_record

    return whole_record.study(paper_scale=paper_scale)


def _unknown_others_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.beyond import unknown_others as unknown_others_study

    return unknown_others_study.study(paper_scale=paper_scale)


def _product_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.beyond import product as product_study

    return product_study.study(paper_scale=paper_scale)


def _population_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation.beyond import population as population_study

    return population_study.study(paper_scale=paper_scale)


#: The registered studies, run in order by :func:`write_report` (the page shows the decision
#: summary first, :data:`dprisk.validation.report.page.DECISION_SUMMARY`).
STUDIES: list[tuple[str, Callable[..., StudyResult]]] = [
    ("decision summary (what an adversary learns at the 2020 allocation)",
     _decision_summary_study),
    ("single level (paper §4.2, Tables 2, 4–5, Figures 1–3)", _single_level_study),
    ("two levels (§4.3, Tables 6–8, cross-check)", _two_level_study),
    ("risk studies (§4.3 Figures 4–6, S4 Figures 10–11)", _studies_study),
    ("supplement (S1.3, S2, S5, S6; Figures 7–9, 12)", _supplement_study),
    ("simulation-based calibration (Talts et al. 2018)", _sbc_study),
    ("privacy accounting and budgets (ε of the release; ρ for a risk target)",
     _decisions_study),
    ("beyond the paper: the whole record", _whole_record_study),
    ("beyond the paper: adversaries who do not know everyone", _unknown_others_study),
    ("beyond the paper: the post-processed product", _product_study),
    ("beyond the paper: every person of a population", _population_study),
]


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
    tree.to_netcdf(tmp / "results.nc")
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
        ``{"out", "n_records", "n_figures", "status_counts", "seconds"}``.
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
                                                  preload=PRELOAD):
                results[i], pngs[i] = result, figures
                bar.set_postfix_str(STUDIES[i][0][:40])
                bar.update()
        summary = target.write(lambda tmp: _write_all(tmp, results, pngs, paper_scale, start))
    out = target.out
    summary.update(out=str(out))
    return summary
