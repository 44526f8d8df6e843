"""``dprisk reproduce``: the paper's tables and figures, compared with the published values."""

from __future__ import annotations

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

__all__ = ["add_parser", "run"]


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
    """Write the report to ``--out`` and print its summary."""
    from dprisk.validation.paper.records import CLAIM_STATUSES
    from dprisk.validation.report.build import write_report
    from dprisk.validation.report.output import check_report_out
    from dprisk.validation.report.runner import available_cores

    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be an integer >= 1, got {args.workers}")
    workers = available_cores() if args.workers is None else args.workers
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out!r} exists and is not a directory")
    check_writable_dir(out, "--out")
    with naming_out():
        check_report_out(out)  # only a new, empty or earlier report directory is replaced
        summary = write_report(args.out, paper_scale=args.paper_scale,
                               progress=show_progress(args), workers=workers)
    counts = summary["status_counts"]
    numbers = {k: v for k, v in counts.items() if k not in CLAIM_STATUSES}
    claims = {k: v for k, v in counts.items() if k in CLAIM_STATUSES}
    lines = [
        f"report written to {summary['out']}",
        f"  {sum(numbers.values())} published numbers compared: "
        + ", ".join(f"{k} {v}" for k, v in numbers.items())
        + (f"; {sum(claims.values())} claims checked: "
           + ", ".join(f"{k} {v}" for k, v in claims.items()) if claims else ""),
        f"  {summary['n_figures']} figures, {summary['seconds']:.1f} s",
    ]
    emit(args, summary, lines)
    return EXIT_OK
