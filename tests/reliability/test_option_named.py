"""A ρ too small for the release window is refused naming the command-line option.

The API refuses ``rho = … is too small …`` (the window's half-width would pass 2**53); the
command line adds the option the value came from, so the one stderr line names ``--rho1``.
"""

import pytest

from tests.cli_helpers import run_cli

CASES = [
    ["marginal", "--rho1", "1e-320"],
    ["marginal", "--rho1", "1e-320", "--unknown-others", "3", "--q", "0.2"],
    ["attribute", "--rho1", "1e-320", "--cells", "5"],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda argv: " ".join(argv))
@pytest.mark.parametrize("as_json", [False, True])
def test_tiny_rho_names_rho1(argv, as_json, capsys):
    status, out, err = run_cli(argv + (["--json"] if as_json else []), capsys)
    assert status == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "--rho1: rho = 1e-320 is too small" in lines[0]
    assert "allowed range" in lines[0]
