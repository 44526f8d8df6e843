"""Generated hostile probes of ``dprisk product`` (issue 24 rule 6), one option at a time.

As in ``test_generated_inputs.py``: each base command line is valid and one option at a time
is replaced by a bad or extreme value (malformed numbers, NaN/inf, huge values, empty lists,
unicode, extreme rho, huge ``d``); each case runs in-process with and without ``--json`` and
must keep the command-line contract (that of
:func:`cli_helpers.assert_cli_contract`, checked on one run:
exit 0 or 2, never 1 or a traceback; on refusal one stderr line and nothing on stdout; on
success nothing on stderr and one JSON object of finite numbers, probabilities in [0, 1]).
Here also: the JSON is strict (no ``NaN``/``Infinity`` tokens) and a refusal names the
replaced option (or, for a scenario that only the combination makes infeasible, one of the
options listed in :data:`ALSO_NAMED`).

The bases use rho = 0.5 so that a successful case takes milliseconds; values that make the
work too large (rho = 1e-20, d = 60 exact, 1e12 releases) must be refused up front by the
work or memory limit (exit 2 naming ``--others``, ``--rho1``/``--rho2`` or ``--datasets``).
Valid but slow values (rho near 1e-6: seconds to minutes of honest work) are left to other
tests. ``N_CASES`` is the number of command lines run.
"""

from __future__ import annotations

import pytest
from cli_helpers import assert_cli_contract, generated_cases_with_flags

RHO = ["0", "-1", "nan", "inf", "-inf", "5e-324", "1e-320", "1e-300", "1e-20", "1e6",
       "1e100", "1e101", "1e308", "census:block", "census:nope", "1/0", "1/3", "abc", "",
       " 0.5", "0x10", "０.５", "0.5\u200b"]
COUNT = ["-1", "0", "1.5", "nan", "inf", "abc", "", "3.0", "1e20", "100000000",
         "9007199254740992", "9007199254740993", "٣"]
OTHERS = [*COUNT, ",", "3,", ",3", "3,,3", "3;4", "3 4", "3,-1", "3,nan", "1e20,1",
          "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0", ",".join(["1"] * 60), "9007199254740992,1",
          "٣,٤", "3,\u00a04"]
PROB = ["0", "1", "-0.1", "1.0000001", "nan", "inf", "1e-320", "1e-300", "1/864", "abc", "",
        "0.9999999999999999", "5e-324"]
BASE = ["product", "--rho1", "0.5", "--rho2", "0.5", "--others", "3,1"]
MC = [*BASE, "--method", "mc", "--datasets", "50", "--seed", "1"]
INVARIANT = [*BASE, "--invariant", "block-group", "--block-group-total", "5"]

#: name -> (valid base argv, {option: values}); a value None means a flag without a value.
BASES = {
    "product exact": (BASE, {
        "rho1": RHO, "rho2": RHO, "others": OTHERS, "m": COUNT, "p": PROB,
        "invariant": ["none", "block-group", "state", "", "NONE", "block‐group"],
        "method": ["exact", "", "MC", "gibbs"], "datasets": ["10"], "seed": ["1"],
        "block-group-total": ["5"]}),
    "product mc": (MC, {
        "rho1": RHO, "rho2": RHO, "others": OTHERS, "m": COUNT, "p": PROB,
        "datasets": [*COUNT, "1", "2", "1000000000000"],
        "seed": [*COUNT, "4294967296", "-5"], "invariant": ["block-group"]}),
    "product invariant": (INVARIANT, {
        "block-group-total": [*COUNT, "4", "6", "3", "-5"], "others": ["3,1", "3", "0,0"],
        "m": ["0", "1", "5"], "invariant": ["none"], "rho1": ["1e-20", "nan"]}),
}
#: Options a refusal may name instead of the replaced one (a combination is infeasible).
ALSO_NAMED = {"--others": ("--block-group-total",), "--m": ("--block-group-total", "--others"),
              "--invariant": ("--block-group-total",), "--rho1": ("--others", "--datasets"),
              "--rho2": ("--others", "--datasets")}


CASES = generated_cases_with_flags(BASES)
N_CASES = 2 * len(CASES)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """One empty working directory for the module's cases (each checks that it stays empty):
    a ``tmp_path`` per case cost about a third of these tests' CPU."""
    return tmp_path_factory.mktemp("product-probes")


@pytest.mark.parametrize("case", list(CASES))
def test_product_probe_keeps_the_contract(case, capsys, workdir, monkeypatch):
    """The command line without, then with ``--json`` (one test: half the tests' overhead)."""
    monkeypatch.chdir(workdir)
    argv, flag = CASES[case]
    named = () if flag is None else (flag, *ALSO_NAMED.get(flag, ()))
    for as_json in (False, True):
        assert_cli_contract(argv, as_json, capsys, names=named)
        assert list(workdir.iterdir()) == [], as_json  # nothing written, refused or not
