"""The paper-reproduction report: every study's figures, data and published-vs-computed records.

:func:`write_report` runs the registered studies (:data:`STUDIES`), each returning a
:class:`StudyResult`, and writes

* ``DIR/figures/*.png`` — one file per figure, named after the paper's figure;
* ``DIR/results.nc`` — the studies' xarray data, one netCDF group per study;
* ``DIR/results.json`` — one record per published number,
  ``{"id", "source", "published", "computed", "mcse", "status", "explanation"}``;
* ``DIR/index.html`` — the page a person reads.

Nothing partial, nothing foreign destroyed (:mod:`dprisk.validation.report_output`): ``out``
must be new, empty or a report this tool wrote (marker file ``.dprisk-report``); the report is
assembled in a temporary sibling directory and moved into place only when complete; on
failure the temporary directory is removed and the error propagates (the CLI turns it into a
non-zero exit with a message). A second run on the same ``out`` is refused while one runs.
"""

from __future__ import annotations

import html
import json
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import xarray as xr

from dprisk.validation.records import RECORD_KEYS, STATUSES, StudyResult, validate_records
from dprisk.validation.report_output import ReportTarget

__all__ = ["RECORD_KEYS", "STUDIES", "StudyResult", "validate_records", "write_report"]


def _single_level_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation import figures_single_level, single_level_paper

    return single_level_paper.study(figures=figures_single_level)


def _hierarchical_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation import hierarchical_paper

    return hierarchical_paper.study(paper_scale=paper_scale)


def _studies_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation import studies_paper

    return studies_paper.study(paper_scale=paper_scale)


def _supplement_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation import supplement

    return supplement.study(paper_scale=paper_scale)


def _sbc_study(*, paper_scale: bool) -> StudyResult:
    from dprisk.validation import sbc

    return sbc.study(paper_scale=paper_scale)


#: The registered studies, run in order by :func:`write_report`.
STUDIES: list[tuple[str, Callable[..., StudyResult]]] = [
    ("single level (paper §4.2, Tables 1–2, Figures 1–3)", _single_level_study),
    ("two levels (§4.3, Tables 3–5, cross-check)", _hierarchical_study),
    ("risk studies (§4.3 Figures 4–6, S4 Figures 9a–9b)", _studies_study),
    ("supplement (S1.3, S2, S5, S6; Figures 7, 8, 10, 11)", _supplement_study),
    ("simulation-based calibration (Talts et al. 2018)", _sbc_study),
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


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; width: 100%; }
td:last-child { width: 50%; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.match td.status { background: #c8f0c8; }
tr.within-mc-error td.status { background: #e6f5c0; }
tr.differs td.status { background: #f7c6c6; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
.summary span { margin-right: 1.5em; }
"""


def _fmt_number(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return html.escape(str(value))


def _records_table(records: list[dict]) -> str:
    esc = html.escape
    rows = [
        "<table><tr><th>id</th><th>source</th><th>published</th><th>computed</th>"
        "<th>MCSE</th><th>status</th><th>explanation</th></tr>"
    ]
    for r in records:
        rows.append(
            f"<tr class='{esc(r['status'])}'><td>{esc(r['id'])}</td><td>{esc(r['source'])}</td>"
            f"<td class='num'>{_fmt_number(r['published'])}</td>"
            f"<td class='num'>{_fmt_number(r['computed'])}</td>"
            f"<td class='num'>{_fmt_number(r['mcse'])}</td>"
            f"<td class='status'>{esc(r['status'])}</td>"
            f"<td>{esc(r['explanation'] or '')}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _render_html(results: list[StudyResult], versions: dict, seconds: float,
                 paper_scale: bool) -> str:
    records = [r for study in results for r in study.records]
    counts = Counter(r["status"] for r in records)
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        "<title>Disclosure risk of DP census counts: paper reproduction</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Bayesian disclosure risk for discrete-Gaussian census releases</h1>",
        "<p>Reproduction of Kazan &amp; Reiter, <em>Assessing statistical disclosure risk "
        "for differentially private, hierarchical count data</em>: every published number "
        "beside the suite's computed value. Probabilities are fractions in [0, 1]. "
        "A number <b>matches</b> when it agrees to the published rounding; "
        "<b>within-mc-error</b> when a published Monte Carlo estimate lies within Monte "
        "Carlo error of the exact answer; <b>differs</b> otherwise, with an explanation.</p>",
        "<p class='summary'>"
        + "".join(f"<span><b>{esc(s)}</b>: {counts.get(s, 0)}</span>" for s in STATUSES)
        + f"<span>records: {len(records)}</span>"
        + f"<span>budget: {'paper scale' if paper_scale else 'default'}</span>"
        + f"<span>time: {seconds:.1f} s</span></p>",
        "<h2>Contents</h2><ul>"
        + "<li><a href='#differences'>where the computed value is not a match</a></li>"
        + "".join(f"<li><a href='#{esc(study.name)}'>{esc(study.title)}</a></li>"
                  for study in results)
        + "<li><a href='#all-records'>all published numbers</a></li>"
        + "<li><a href='#software'>software and seeds</a></li></ul>",
        "<h2 id='differences'>Where the computed value is not a match</h2>",
        "<p>Published Monte Carlo estimates within Monte Carlo error of the exact answer, and "
        "numbers that differ, with the evidence for why. The full table is "
        "<a href='#all-records'>below</a>.</p>",
        _records_table([r for r in records if r["status"] != "match"]),
    ]
    for study in results:
        parts.append(f"<h2 id='{esc(study.name)}'>{esc(study.title)}</h2>")
        parts.extend(f"<p>{esc(note)}</p>" for note in study.notes)
        for stem in study.figures:
            parts.append(
                f"<h3>{esc(stem)}</h3><img src='figures/{esc(stem)}.png' alt='{esc(stem)}'>"
            )
        for block in study.diagnostics:
            parts.append(f"<pre>{esc(block)}</pre>")
    parts.append("<h2 id='all-records'>All published numbers: published vs computed</h2>")
    parts.append(_records_table(records))
    seeds = {f"{s.name}/{k}": v for s in results for k, v in s.seeds.items()}
    parts.append("<h2 id='software'>Software and seeds</h2><table>")
    parts.extend(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in versions.items())
    parts.extend(f"<tr><th>seed {esc(k)}</th><td>{v}</td></tr>" for k, v in seeds.items())
    parts.append("</table></body></html>")
    return "\n".join(parts)


def _write_all(tmp: Path, results: list[StudyResult], paper_scale: bool, seconds: float) -> dict:
    figures_dir = tmp / "figures"
    figures_dir.mkdir()
    n_figures = 0
    for study in results:
        for stem, fig in study.figures.items():
            fig.savefig(figures_dir / f"{stem}.png", dpi=110, bbox_inches="tight")
            n_figures += 1
    tree = xr.DataTree.from_dict(
        {f"/{study.name}/{key}": ds for study in results for key, ds in study.datasets.items()}
    )
    tree.to_netcdf(tmp / "results.nc")
    records = [r for study in results for r in study.records]
    validate_records(records)
    (tmp / "results.json").write_text(json.dumps(records, indent=1) + "\n")
    versions = _versions()
    (tmp / "index.html").write_text(_render_html(results, versions, seconds, paper_scale))
    return {
        "n_records": len(records),
        "n_figures": n_figures,
        "status_counts": dict(Counter(r["status"] for r in records)),
    }


def write_report(out, *, paper_scale: bool = False, progress: bool = True) -> dict:
    """Run every registered study and write the report to ``out`` atomically.

    Parameters
    ----------
    out : str or Path
        Destination directory: new, empty, or a report written earlier (it holds the
        marker :data:`dprisk.validation.report_output.MARKER`); replaced only once the new
        report is complete. Anything else raises ``ValueError`` before any study runs.
    paper_scale : bool
        Use the paper's Monte Carlo budgets instead of the default (fast) ones.
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    dict
        ``{"out", "n_records", "n_figures", "status_counts", "seconds"}``.
    """
    from tqdm.auto import tqdm

    start = time.perf_counter()
    with ReportTarget(out) as target:
        results = []
        bar = tqdm(STUDIES, desc="reproduce", unit="study", disable=not progress,
                   file=sys.stderr)
        for title, study in bar:
            bar.set_postfix_str(title[:40])
            results.append(study(paper_scale=paper_scale))
        seconds = time.perf_counter() - start
        summary = target.write(lambda tmp: _write_all(tmp, results, paper_scale, seconds))
    out = target.out
    summary.update(out=str(out), seconds=time.perf_counter() - start)
    return summary
