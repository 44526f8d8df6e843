"""Generated table: every subcommand with one option at a time replaced by a bad or extreme value.

The base command lines are valid; :data:`VALUES` holds, per kind of option, values at and
beyond the edges of its range (0, negative, NaN, inf, 5e-324, 1e-300, 1e100, 1e308, 2**53 + 1,
malformed text, fractions, Census levels, ...). Each generated case runs in-process with and
without ``--json`` and must keep the command-line contract:

* exit status 0 or 2 (never 1, never an exception or a traceback);
* status 2: exactly one line on stderr, nothing on stdout;
* status 0: nothing on stderr (no warning lines), and with ``--json`` exactly one JSON object
  whose numbers are finite, whose probabilities lie in [0, 1] and whose X2 posterior sums to 1
  within its stated accuracy (masses below 1e-12 are not listed).

``N_CASES`` is the number of command lines run (quoted in the README). Cases slower than a
second (the exact two-level marginal at rho near 1e-9, samplers) are left to other tables.
"""

from __future__ import annotations

import pytest
from cli_helpers import assert_cli_contract, generated_cases

RHO = ["0", "-1", "nan", "inf", "5e-324", "1e-320", "1e-300", "1e-6", "1e6", "1e8", "1e100",
       "1e101", "1e308", "census:block", "census:nope", "1/0", "abc", "", " 0.5", "0x10",
       "2.56"]
COUNT = ["-1", "0", "9007199254740992", "9007199254740993", "1e20", "1.5", "nan", "abc",
         "3.0", "100000000"]
PROB = ["0", "1", "1e-320", "1e-300", "1/864", "nan", "-0.1", "1.0000001",
        "0.9999999999999999", "5e-324"]
D = ["0", "1", "1000000", "-3", "1e9", "2.5"]
PRIOR = ["truncated:0", "truncated:-1", "truncated:1e20", "point:0", "point:-5",
         "point:99999999999", "weird", "nofile.py:x", "truncated:", "point:nan"]
TWO = ["--rho1", "0.5", "--rho2", "0.5", "--d", "3"]
NESTED = ["posterior", "--rhos", "0.5,0.5,0.5", "--siblings", "3,3", "--stars", "1,5,15,4,10"]

#: name -> (valid base argv, {option: values})
BASES = {
    "posterior single": (["posterior", "--rho1", "0.5", "--x1-star", "1"],
                         {"rho1": RHO, "x1-star": COUNT, "p": PROB, "known": COUNT}),
    "posterior two-level": (["posterior", *TWO, "--x1-star", "1", "--x2-star", "5",
                             "--y1-star", "4"],
                            {"rho1": RHO, "rho2": RHO, "d": D, "x1-star": COUNT,
                             "x2-star": COUNT, "y1-star": COUNT, "p": PROB, "known": COUNT,
                             "prior": PRIOR}),
    "posterior nested": (NESTED, {
        "rhos": ["0.5", "0.5,0.5", "0,0.5,0.5", "1e-300,0.5,0.5", "1e100,0.5,0.5", "census:7",
                 "census:1", ",,", "a,b,c"],
        "siblings": ["3", "0,3", "-1,3", "1e9,3", "3,3,3"],
        "stars": ["1,5,15,4", "1,5,15,4,10,1", "a,b,c,d,e", "-1,5,15,4,10", "1e20,5,15,4,10"],
        "p": PROB}),
    "marginal single": (["marginal", "--rho1", "0.5"], {"rho1": RHO, "p": PROB, "known": COUNT}),
    "marginal two-level": (["marginal", *TWO, "--x2", "5"],
                           {"rho1": [r for r in RHO if r not in ("1e-6", "1e-300")],
                            "d": D, "x2": COUNT, "x1": COUNT, "p": PROB, "prior": PRIOR}),
    "marginal unique": (["marginal", "--rhos", "0.5,0.5"],
                        {"rhos": ["0.5", "1e-300,0.5", "1e100,1e100", "1e8,1e8", "census:3",
                                  "census:0", "0.5,", "nan,1"], "p": PROB, "known": COUNT}),
    "epsilon": (["epsilon", "--rho", "1"], {"rho": RHO, "delta": PROB}),
    "epsilon inverse": (["epsilon", "--epsilon", "1"], {"epsilon": RHO, "delta": PROB}),
    "budget": (["budget", "--measure", "marginal-risk", "--target", "1.5"],
               {"target": ["0", "1", "1.0000001", "1e300", "nan", "2", "-1", "abc"],
                "p": ["0.5,0.9", "0", "1e-300", "1", ",", "nan"],
                "measure": ["x", "marginal-posterior"]}),
}


CASES = generated_cases(BASES)
N_CASES = 2 * len(CASES)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """One empty working directory for the module's cases (none writes a file): a ``tmp_path``
    per case cost about a third of these tests' CPU."""
    return tmp_path_factory.mktemp("generated")


@pytest.mark.parametrize("case", list(CASES))
def test_generated_input_keeps_the_contract(case, capsys, workdir, monkeypatch):
    """The command line without, then with ``--json`` (one test: half the tests' overhead)."""
    monkeypatch.chdir(workdir)
    for as_json in (False, True):
        assert_cli_contract(CASES[case], as_json, capsys)
