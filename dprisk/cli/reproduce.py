"""``dprisk reproduce``: the paper's tables and figures, compared with the published values."""

from __future__ import annotations

from pathlib import Path

from dprisk.cli.common import EXIT_OK, SUBCOMMAND_HELP, add_json, check_writable_dir, emit

__all__ = ["add_parser", "run"]


def add_parser(subs) -> None:
    """Register ``dprisk reproduce``."""
    rep = subs.add_parser("reproduce", help=SUBCOMMAND_HELP["reproduce"])
    rep.add_argument("--out", required=True, help="output directory (written atomically)")
    rep.add_argument("--paper-scale", action="store_true", help="use the paper's MC budgets")
    rep.add_argument("--quiet", action="store_true", help="no progress display")
    add_json(rep)
    rep.set_defaults(func=run)


def run(args) -> int:
    """Write the report to ``--out`` and print its summary."""
    from dprisk.validation.report import write_report

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out!r} exists and is not a directory")
    check_writable_dir(out, "--out")

    summary = write_report(args.out, paper_scale=args.paper_scale, progress=not args.quiet)
    lines = [
        f"report written to {summary['out']}",
        f"  {summary['n_records']} published numbers compared: "
        + ", ".join(f"{k} {v}" for k, v in summary["status_counts"].items()),
        f"  {summary['n_figures']} figures, {summary['seconds']:.1f} s",
    ]
    emit(args, summary, lines)
    return EXIT_OK
