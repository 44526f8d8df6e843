"""Extreme but valid inputs, one table: a correct finite answer or a refusal stating the range.

:data:`API_CASES` calls a public function at the edge of (or beyond) its supported range:

* a row with ``expect`` a number checks the result (finite, to ``rel`` relative accuracy);
* a row with ``raises`` checks ``ValueError`` with a one-line message holding "allowed range".

:data:`CLI_CASES` runs ``dprisk ... --json`` in-process: status 0 with exactly one JSON object
whose every probability lies in [0, 1] (and is positive where the true value is a positive
double), or status 2 with one stderr line stating the allowed range and nothing on stdout.

The ranges: rho in (0, 1e100] everywhere (``variance`` from 1e-308, release windows from
about 1e-30, the exact marginal from about 2e-14), two-level tables up to
rho2 + rho1/d = 1e6, p down to 1e-300 (subnormal posteriors printed as such), counts
|x| <= 2**53 (beyond refused, never rounded). ``N_CASES`` counts both tables.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dprisk.cli import main
from tests.reliability.api_targets import resolve, target_ids

DG = "dprisk.models.mechanism.discrete_gaussian"
PRIVACY = "dprisk.models.mechanism.conversions"
SL = "dprisk.inference.single_level.closed_form"
CHECKS = "dprisk.models.checks"
EXACT = "dprisk.inference.two_level.exact"
UL = "dprisk.inference.nested.unique_levels"
HALF_LOG_PI = 0.5 * math.log(math.pi)

#: (function, args, kwargs, expected value or None, relative accuracy or an exception type)
API_CASES = [
    (f"{DG}:log_normalizer", (1e-308,), {}, HALF_LOG_PI - 0.5 * math.log(1e-308), 1e-15),
    (f"{DG}:log_normalizer", (5e-324,), {}, HALF_LOG_PI - 0.5 * math.log(5e-324), 1e-15),
    (f"{DG}:log_normalizer", (1e-200,), {}, HALF_LOG_PI - 0.5 * math.log(1e-200), 1e-15),
    (f"{DG}:log_normalizer", (1e100,), {}, 0.0, 0.0),
    (f"{DG}:variance", (1e-200,), {}, 0.5e200, 1e-15),
    (f"{DG}:variance", (1e-308,), {}, 0.5e308, 1e-15),
    (f"{DG}:variance", (1e-100,), {}, 0.5e100, 1e-15),
    (f"{DG}:variance", (5e-324,), {}, None, ValueError),
    (f"{DG}:variance", (1e100,), {}, 0.0, 0.0),
    (f"{DG}:support_halfwidth", (1e-37,), {}, None, ValueError),
    (f"{DG}:support_halfwidth", (1e-300,), {}, None, ValueError),
    (f"{DG}:support_halfwidth", (1e100,), {}, 1, 0.0),
    (f"{PRIVACY}:zcdp_to_dp", (1e100, 1e-300), {}, 1e100, 1e-15),
    (f"{PRIVACY}:zcdp_to_dp", (1e-308, 1e-300), {}, 2 * math.sqrt(1e-308 * 300 * math.log(10)),
     1e-12),
    (f"{PRIVACY}:zcdp_to_dp", (1e308, 1e-300), {}, None, ValueError),
    (f"{PRIVACY}:zcdp_to_dp", (2.56, 1e-10), {}, 17.91528291900186, 1e-15),
    (f"{SL}:posterior", (2, 0.5), {"p": 1e-310}, math.exp(1.5) * 1e-310, 1e-9),
    (f"{SL}:posterior", (2, 0.5), {"p": 1e-300}, math.exp(1.5) * 1e-300, 1e-13),
    (f"{SL}:posterior", (2, 1e100), {}, 1.0, 0.0),
    (f"{SL}:posterior", (2, 5e-324), {}, 0.5, 1e-15),
    (f"{SL}:posterior", (2**53, 1e-300), {}, 0.5, 1e-15),
    (f"{SL}:posterior", (2**53 + 1, 0.5), {}, None, ValueError),
    (f"{SL}:posterior", (np.array([2**53 + 1]), 0.5), {}, None, ValueError),
    (f"{SL}:posterior", (-(2**53) - 1, 0.5), {}, None, ValueError),
    (f"{SL}:posterior", (2, 1.1e100), {}, None, ValueError),
    (f"{CHECKS}:check_count", (2**53, "x1_star"), {}, 2**53, 0.0),
    (f"{CHECKS}:check_count", (2**53 + 1, "x1_star"), {}, None, ValueError),
    # a list of Python ints: 2**53 + 1 became the float 2**53, silently (nested --stars)
    (f"{CHECKS}:check_count", ([2**53 + 1, 2], "x_stars"), {}, None, ValueError),
    (f"{CHECKS}:check_count", ([[1, 2], (3, -(2**53) - 1)], "x_stars"), {}, None, ValueError),
    (f"{EXACT}:exact_posterior", (2, 5, 3), {"rho1": 0.5, "rho2": 1e8, "d": 3}, None,
     ValueError),
    (f"{UL}:marginal_posterior_unique_levels", ([0.5, 0.5],), {"p": 1e-310}, None, ValueError),
    # a two-level or nested scenario takes p >= 1e-300 (at 5e-324 the risk came out 2.0 for
    # 1.7254: the posterior, p times a likelihood ratio, subnormal), as the CLI does
    (f"{EXACT}:exact_posterior", (1, 10, 9), {"rho1": 0.5, "rho2": 0.5, "d": 10, "p": 5e-324},
     None, ValueError),
    (f"{EXACT}:exact_posterior", (1, 10, 9), {"rho1": 0.5, "rho2": 0.5, "d": 10, "p": 1e-310},
     None, ValueError),
]

TWO = ["--d", "3", "--x1-star", "2", "--x2-star", "5", "--y1-star", "3"]
#: (argv, expected status)
CLI_CASES = [
    # below --p's documented minimum 1e-300: refused in every posterior form (R' = posterior / p
    # overflows at 5e-324); the API still answers at 1e-310 (above)
    (["posterior", "--rho1", "0.5", "--x1-star", "2", "--p", "1e-310"], 2),
    (["posterior", "--rho1", "0.5", "--x1-star", "2", "--p", "1e-300"], 0),
    (["posterior", "--rho1", "0.5", "--x1-star", "-40", "--p", "1e-300"], 0),
    (["posterior", "--rho1", "1e100", "--x1-star", "2"], 0),
    (["posterior", "--rho1", "1e101", "--x1-star", "2"], 2),
    (["posterior", "--rho1", "5e-324", "--x1-star", "2"], 0),
    (["posterior", "--rho1", "0.5", "--x1-star", "9007199254740992"], 0),
    (["posterior", "--rho1", "0.5", "--x1-star", "9007199254740993"], 2),
    (["posterior", "--rho1", "0.5", "--x1-star", "-9007199254740993"], 2),
    (["posterior", "--rho1", "0.5", "--x1-star", "2", "--known", "9007199254740993"], 2),
    (["posterior", "--rhos", "0.5,0.5", "--siblings", "3", "--stars", "9007199254740993,2,1"],
     2),
    # a first level of huge rho decides every release: the atoms' weights summed to
    # 1.0000000000000004 (P[correct] and accuracy above 1); now capped at 1
    (["marginal", "--rhos", "1e100,0.5,0.5", "--p", "0.9"], 0),
    (["marginal", "--rhos", "1e20,0.5", "--p", "0.2"], 0),
    (["posterior", "--rho1", "0.5", "--rho2", "1e8", *TWO], 2),
    (["posterior", "--rho1", "0.5", "--rho2", "1e5", *TWO], 0),
    (["posterior", "--rho1", "1e308", "--rho2", "0.5", *TWO], 2),
    (["posterior", "--rho1", "1e-300", "--rho2", "1e-300", *TWO], 2),
    (["posterior", "--rho1", "0.5", "--rho2", "0.5", *TWO, "--p", "1e-300"], 0),
    (["marginal", "--rho1", "1e100"], 0),
    (["marginal", "--rho1", "1e-300"], 2),
    (["marginal", "--rho1", "0.5", "--p", "1e-300"], 0),
    (["marginal", "--rho1", "0.5", "--p", "1e-310"], 0),
    (["marginal", "--rho1", "0.5", "--rho2", "1e8", "--d", "3", "--x2", "4"], 2),
    (["marginal", "--rhos", "0.5,0.5", "--p", "1e-300"], 0),
    (["marginal", "--rhos", "0.5,0.5,0.3", "--p", "1e-300"], 0),
    (["marginal", "--rhos", "0.5,0.5", "--p", "1e-310"], 2),
    (["marginal", "--rhos", "1e100,1e100"], 0),
    # Found by the probe of this last round.
    (["marginal", "--rho1", "5e-324"], 2),  # refused without a RuntimeWarning line
    (["posterior", "--rho1", "5e-324", "--x1-star", "1"], 0),
    (["posterior", "--rhos", "1e15,0.5,0.5", "--siblings", "3,3", "--stars", "1,5,15,4,10"], 0),
    (["posterior", "--rhos", "1e30,0.5,0.5", "--siblings", "3,3", "--stars", "1,5,15,4,10"], 2),
    (["posterior", "--rhos", "0.5,0.5,1e100", "--siblings", "3,3", "--stars", "1,5,15,4,10",
      "--method", "gibbs", "--draws", "10", "--seed", "1"], 2),
    # CKS optimal order above 1e12: was epsilon_cks = 0 with exit 0 (issue 24); refused now
    (["epsilon", "--rho", "5e-324"], 2),
    (["epsilon", "--rho", "1e6"], 2),  # CKS optimal order below 1.01: was a wrong epsilon
    (["epsilon", "--rho", "1e100"], 2),
    (["epsilon", "--epsilon", "1e-300"], 2),  # rho below the smallest normal: was 0
    # rho_cks: refused ("order beyond 1e12") until the CKS bracket was fixed; the help allows
    # epsilon >= 1.45e-153 at delta 1e-10, and it is computed (rho_cks = 1.36e-20)
    (["epsilon", "--epsilon", "1e-150"], 0),
    (["sweep", "--rho1", "0.5", "--rho2", "1e8", "--d", "3", "--x2", "5", "--out", "s.nc"], 2),
]
#: PyMC at a huge rho, run in a process of its own (in-process, pytest would catch the warnings
#: and PyMC's logger writes to the stderr of its import): nothing on stderr -- no warning that
#: Metropolis' acceptance statistic overflowed, none of PyMC's log lines. 200 tuning steps
#: instead of 1000: the statistic overflows as often (counted with the ``np.errstate`` guards
#: removed: 3 warnings two-level, 12 nested, at tune 0, 200 and 1000). Both cases run in the
#: same process, one after the other (``fork_runner.run_each``), a fork of the session's
#: process server (``process_server``: PyMC imported there, its logger's stream the process's
#: stderr, which the fork sends to a file): PyMC's set-up, most of a case's CPU, once.
PYMC_CASES = [
    ["posterior", "--rho1", "0.5", "--rho2", "1e8", "--d", "3", "--x1-star", "1",
     "--x2-star", "5", "--y1-star", "4", "--method", "pymc", "--draws", "50", "--chains", "1",
     "--tune", "200", "--seed", "1"],
    ["posterior", "--rhos", "0.5,1e8,0.5", "--siblings", "3,3", "--stars", "1,5,15,4,10",
     "--method", "pymc", "--draws", "50", "--chains", "1", "--tune", "200", "--seed", "1"],
]
N_CASES = len(API_CASES) + len(CLI_CASES) + len(PYMC_CASES)
PROBABILITY_KEYS = {"posterior", "marginal_posterior", "p_correct", "p_correct_no_hierarchy"}


@pytest.mark.parametrize(("target", "args", "kwargs", "expect", "rel"), API_CASES,
                         ids=target_ids(API_CASES))
def test_api_extreme(target, args, kwargs, expect, rel):
    function = resolve(target)
    if isinstance(rel, type):
        with pytest.raises(rel) as info:
            function(*args, **kwargs)
        assert "allowed range" in str(info.value) and "\n" not in str(info.value)
        return
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # no warning either
        value = function(*args, **kwargs)
    value = float(np.asarray(value))
    assert math.isfinite(value)
    assert value == pytest.approx(expect, rel=rel, abs=0), value


def _probabilities(payload: dict):
    for key, value in payload.items():
        if key in PROBABILITY_KEYS:
            yield key, value
        if key == "x2_posterior":
            yield from value.items()


@pytest.mark.parametrize(("argv", "status"), CLI_CASES,
                         ids=[" ".join(c[0]) for c in CLI_CASES])
def test_cli_extreme(argv, status, capsys):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == status, (code, out, err)
    if status == 2:
        assert out == ""
        assert len(err.splitlines()) == 1 and "allowed range" in err, err
        return
    assert err == "", err  # no warning either
    payload = json.loads(out)
    assert out.count("\n") == 1
    for key, value in _probabilities(payload):
        assert 0.0 <= value <= 1.0, (key, value)
    if "posterior" in payload and "--p" in argv:
        assert payload["posterior"] > 0.0  # a positive double, not flushed to 0


def test_pymc_at_a_huge_rho_writes_nothing_to_stderr(process_server, tmp_path):
    """Two-level, then nested: each status 0, one JSON answer and nothing on stderr."""
    cases = [[*argv, "--json"] for argv in PYMC_CASES]
    done = process_server.wait(process_server.start(call=("fork_runner", "run_each", [cases]),
                                                    cwd=tmp_path), timeout=600)
    assert done.status == 0, done.stderr
    assert done.stderr == "end of case\n" * len(cases)  # nothing else, after either case
    lines = done.stdout.splitlines()
    assert lines[1::2] == ["end of case: status 0"] * len(cases), done.stdout
    for line in lines[0::2]:
        assert 0.0 <= json.loads(line)["posterior"] <= 1.0
