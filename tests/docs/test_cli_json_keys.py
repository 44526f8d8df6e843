"""docs/cli.md's table of JSON keys names every top-level key the commands print.

Each case runs one form (cheap, in-process) and looks up the table row whose command cell
starts with the form's text: every key of the printed JSON object must appear in that row
as a code span (`` `key` ``). A key a command adds without the table saying so fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import run_json

CLI_PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"

#: (start of the command cell of the row, the command line run: cheap forms of each row)
CASES = [
    ("`dprisk attribute --rho1 R --cells K",
     ["attribute", "--rho1", "0.5", "--cells", "4"]),
    ("`dprisk attribute --rho1 R --cells K",
     ["attribute", "--rho1", "0.5", "--cells", "2016", "--strategy", "census-2020",
      "--releases", "10", "--seed", "1"]),
    ("`dprisk epsilon --rho R", ["epsilon", "--rho", "0.5"]),
    ("`dprisk epsilon --epsilon E", ["epsilon", "--epsilon", "5"]),
    ("`dprisk census [--strategy]", ["census", "--strategy"]),
    ("`dprisk posterior --rho1 R --x1-star N", ["posterior", "--rho1", "0.5", "--x1-star", "3"]),
    ("`dprisk posterior --rho1 R --rho2 R2",
     ["posterior", "--rho1", "0.5", "--rho2", "0.5", "--d", "3", "--x1-star", "3",
      "--x2-star", "10", "--y1-star", "7"]),
    ("`dprisk marginal --rho1 R [--p P]", ["marginal", "--rho1", "0.5"]),
    ("`dprisk marginal --rhos R1,R2", ["marginal", "--rhos", "0.5,0.7"]),
    ("`dprisk posterior --rhos R1", ["posterior", "--rhos", "census:3", "--siblings", "27,40",
                                     "--stars", "2,1,3,-1,2"]),
    ("`dprisk budget --pure-dp", ["budget", "--pure-dp", "--max-ratio", "3",
                                  "--max-posterior", "0.25"]),
    ("`dprisk budget --measure marginal-risk", ["budget", "--measure", "marginal-risk",
                                                "--target", "1.5"]),
    ("`dprisk summary", ["summary", "--rho1", "0.5"]),
    ("`dprisk prior SPEC", ["prior", "point:3"]),
    ("`dprisk product --rho1 R", ["product", "--rho1", "0.5", "--rho2", "0.5", "--others", "3"]),
]


def _row(start: str) -> str:
    rows = [line for line in CLI_PAGE.read_text().splitlines() if line.startswith(f"| {start}")]
    assert len(rows) == 1, (start, len(rows))
    return rows[0]


@pytest.mark.parametrize(("start", "argv"), CASES, ids=[" ".join(a[:2]) + f" {i}"
                                                         for i, (_, a) in enumerate(CASES)])
def test_every_printed_key_is_in_the_table(start, argv, capsys):
    documented = set(re.findall(r"`([a-z_0-9]+)`", _row(start)))
    payload = run_json([*argv, "--json"], capsys)
    assert set(payload) <= documented, sorted(set(payload) - documented)
