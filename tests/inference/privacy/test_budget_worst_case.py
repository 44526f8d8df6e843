"""Tests of the worst-case-accuracy measure of inference/privacy/budget.py (and --census).

Round trip: at the returned rho the worst-case accuracy is at most the target and at
rho (1 + 1e-9) above it, at the binding prior; the measure increases in rho (checked on a
grid, which the root finder relies on).
"""

import json

import numpy as np
import pytest
from cli_helpers import run_cli

from dprisk.inference.privacy.budget import rho_for_target
from dprisk.inference.privacy.budget_levels import census_fractions, census_rho_for_target
from dprisk.inference.privacy.worst_case import worst_case_accuracy


def test_worst_case_monotone_at_half_only():
    rhos = np.geomspace(1e-3, 30, 60)
    values = [worst_case_accuracy(r, 0.5).accuracy for r in rhos]
    assert np.all(np.diff(values) >= -1e-14)  # float noise
    # p = 0.2: continuous but not monotone (the budget therefore scans for the first crossing)
    assert worst_case_accuracy(1.26, 0.2).accuracy < worst_case_accuracy(1.08, 0.2).accuracy - 1e-3


def test_first_crossing_before_a_dip():
    """A target between the dip's values: the first crossing (before the dip) is returned."""
    target = 0.834
    answer = rho_for_target("worst-case-accuracy", target, p=[0.2])
    assert answer.rho < 1.1
    grid = np.geomspace(1e-3, answer.rho, 400)
    assert max(worst_case_accuracy(r, 0.2).accuracy for r in grid) <= target


@pytest.mark.parametrize(("target", "priors"), [(0.6, [0.5]), (0.95, [0.5, 0.2, 0.1]),
                                                (0.9995, [1 / 864, 0.5])])
def test_round_trip(target, priors):
    answer = rho_for_target("worst-case-accuracy", target, p=priors)
    at = worst_case_accuracy(answer.rho, answer.binding_p).accuracy
    above = worst_case_accuracy(answer.rho * (1 + 1e-9), answer.binding_p).accuracy
    assert at <= target < above
    assert answer.value_at_rho == at and answer.value_above == above
    for prior in priors:  # the target holds at every prior
        assert worst_case_accuracy(answer.rho, prior).accuracy <= target


def test_census_global_rho_scales_block():
    answer = census_rho_for_target("worst-case-accuracy", 0.7)
    block = float(census_fractions()[0])
    assert worst_case_accuracy(block * answer.rho).accuracy <= 0.7
    assert worst_case_accuracy(block * answer.rho * (1 + 1e-9)).accuracy > 0.7


def test_bad_target():
    with pytest.raises(ValueError, match="target"):
        rho_for_target("worst-case-accuracy", 0.7, p=[0.2])   # below max(p, 1 - p) = 0.8
    with pytest.raises(ValueError, match="target"):
        rho_for_target("worst-case-accuracy", 1.0)


def test_cli(capsys):
    status, out, _ = run_cli(["budget", "--measure", "worst-case-accuracy", "--target", "0.6",
                              "--json"], capsys)
    assert status == 0
    payload = json.loads(out)
    assert payload["measure"] == "worst-case-accuracy"
    assert payload["value_at_rho"] <= 0.6 < payload["value_above"]
    status, _, err = run_cli(["budget", "--measure", "worst-case-accuracy", "--target", "0.6",
                              "--rho1", "0.1", "--d", "2", "--x2", "3"], capsys)
    assert status == 2 and "--measure" in err


def test_target_within_rounding_of_one_is_refused_naming_it(capsys):
    """T = 1 - 2**-53 at p = 1/2: the exact sum rounds to 1.0 from rho = 34 on (the true
    1 - A* there is 1.7e-15) while its upper bound (1 + P[eta = 0])/2 stays at most T up to
    rho = 37.02, so the scan's start three steps lower was still above T: this raised
    RuntimeError (exit 1 on the command line, also with --census); now the one-line
    'cannot be certified' refusal of a target too close to the supremum, exit 2."""
    target = float(np.nextafter(1.0, 0.0))
    with pytest.raises(ValueError, match=r"^target = 0\.9999999999999999 cannot be certified"):
        rho_for_target("worst-case-accuracy", target)
    for extra in ([], ["--census"]):
        status, out, err = run_cli(["budget", "--measure", "worst-case-accuracy", "--target",
                                    repr(target), *extra], capsys)
        assert status == 2 and out == "" and "--target" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
