"""``dprisk reproduce``: the paper's tables and figures, compared with the published values."""

from __future__ import annotations

import sys
from pathlib import Path

from dprisk.cli.common import (
    EXIT_OK,
    SUBCOMMAND_HELP,
    add_json,
    check_writable_dir,
    emit,
    integer,
    naming_out,
    show_progress,
)
from dprisk.cli.stopping import freeze_heap_at_exit
from dprisk.runtime.collector import collector_paused
from dprisk.runtime.import_costs import library_docstrings_left_out

__all__ = ["add_parser", "run"]

#: The report's module: imported (xarray, matplotlib, the registry) after the fork server's
#: start, and only when the command runs.
REPORT_MODULE = "dprisk.validation.report.build"


def add_parser(subs) -> None:
    """Register ``dprisk reproduce``."""
    rep = subs.add_parser("reproduce", help=SUBCOMMAND_HELP["reproduce"])
    rep.add_argument("--out", required=True, help="output directory (written atomically): a "
                     "new or empty directory, or a report written earlier (it holds the marker "
                     "file .dprisk-report); anything else is refused")
    rep.add_argument("--paper-scale", action="store_true", help="use the paper's MC budgets")
    rep.add_argument("--workers", type=integer, default=None, help="processes to run the "
                     "studies in (default: one per available core; 1 runs them in this "
                     "process); the numbers are the same either way")
    rep.add_argument("--quiet", action="store_true", help="no progress bar (none either with "
                     "--json or when "
                     "stderr is not a terminal)")
    add_json(rep)
    rep.set_defaults(func=run)


def run(args) -> int:
    """Write the report to ``--out`` and print its summary.

    Once the options and ``--out`` are checked, the report's fork server is started
    (:func:`dprisk.validation.report.fork_server.fork_server_started`, unless ``--workers
    1``), before the report's libraries are imported here: its own imports (seconds) run on
    the other core meanwhile. An error or a stop before its pool starts stops it at once.
    This process runs the cheapest studies itself: its C heap keeps the memory NumPy frees,
    as the pool workers' does (:func:`dprisk.runtime.heap_keep.keep_freed_memory`).
    """
    from dprisk.runtime.heap_keep import keep_freed_memory
    from dprisk.validation.report.fork_server import available_cores, fork_server_started
    from dprisk.validation.report.output import check_report_out

    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be an integer >= 1, got {args.workers}")
    workers = available_cores() if args.workers is None else args.workers
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out!r} exists and is not a directory")
    check_writable_dir(out, "--out")
    keep_freed_memory()
    with naming_out():
        check_report_out(out)  # only a new, empty or earlier report directory is replaced
        # early only while the report is still to be imported (not when it is loaded already)
        early = workers if REPORT_MODULE not in sys.modules else 1
        with fork_server_started(early):
            with collector_paused():  # imports: many objects, no garbage
                library_docstrings_left_out()  # SciPy's, matplotlib's: not read here
                from dprisk.validation.report.build import write_report

            summary = write_report(args.out, paper_scale=args.paper_scale,
                                   progress=show_progress(args), workers=workers)
    from dprisk.validation.paper.records import CLAIM_STATUSES

    counts, checks = summary["status_counts"], summary["check_status_counts"]
    numbers = {k: v - checks.get(k, 0) for k, v in counts.items() if k not in CLAIM_STATUSES}
    claims = {k: v for k, v in counts.items() if k in CLAIM_STATUSES}
    lines = [
        f"report written to {summary['out']}",
        f"  {sum(numbers.values())} published numbers compared: "
        + ", ".join(f"{k} {v}" for k, v in numbers.items() if v)
        + (f"; {sum(checks.values())} checks of the suite: "
           + ", ".join(f"{k} {v}" for k, v in checks.items()) if checks else "")
        + (f"; {sum(claims.values())} claims checked: "
           + ", ".join(f"{k} {v}" for k, v in claims.items()) if claims else ""),
        f"  {summary['n_figures']} figures, {summary['seconds']:.1f} s",
    ]
    emit(args, summary, lines)
    freeze_heap_at_exit()
    return EXIT_OK
