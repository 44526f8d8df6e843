"""Shared helper of the command-line tests: run ``dprisk`` in-process."""

from dprisk.cli import main


def run_cli(argv, capsys):
    """Run ``dprisk`` in-process; return (exit status, stdout, stderr)."""
    try:
        status = main(list(argv))
    except SystemExit as exc:  # argparse errors
        status = exc.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err
