"""Shared helpers of the command-line tests: run ``dprisk`` in-process and check its contract."""

import json

from dprisk.cli import main


def run_cli(argv, capsys):
    """Run ``dprisk`` in-process; return (exit status, stdout, stderr)."""
    try:
        status = main(list(argv))
    except SystemExit as exc:  # argparse errors
        status = exc.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_json(argv, capsys, *, keys=None) -> dict:
    """Run ``dprisk ARGV`` (a ``--json`` call): exit 0, nothing on stderr; return the payload.

    With ``keys``, the payload's keys must be exactly these.
    """
    status, out, err = run_cli(argv, capsys)
    assert status == 0 and err == "", err
    payload = json.loads(out)
    if keys is not None:
        assert set(payload) == set(keys)
    return payload


def assert_refused(argv, parameter, capsys) -> None:
    """Bad input: exit status 2, no output, one stderr line naming ``parameter``, no traceback."""
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert parameter in lines[0] and "Traceback" not in err
