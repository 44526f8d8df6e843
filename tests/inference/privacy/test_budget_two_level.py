"""Tests of the two-level budgets: the marginal measures in rho2 and the certified P[correct].

* inference/privacy/two_level_marginal.py: the two-level marginal posterior is increasing in rho2 on
  the cases used (checked on a grid), tends to the single-level value as rho2 -> 0, and the
  Census budget for it round-trips with its certificate (the rho2 budgets of it and of the
  marginal risk round-trip and agree with a brute-force scan in
  tests/cli/test_budget.py::test_two_level_marginal_forms_json_round_trip_and_brute_force,
  on the answers of the command line's searches, which pass the API's arguments).
* inference/privacy/budget_certified.py: the interval bound is above the measure everywhere on the
  interval (a fine scan) and tight on a short one; the certified P[correct] budget meets the
  target on an independent fine grid up to rho* and fails just above it.
"""

import numpy as np
import pytest

from dprisk.inference.privacy.budget_certified import p_correct_upper_bound
from dprisk.inference.privacy.budget_levels import (
    RHO2_RANGE,
    census_fractions,
    census_rho_for_target,
    rho2_for_target,
)
from dprisk.inference.privacy.two_level_marginal import marginal_two_level
from dprisk.inference.single_level.closed_form import marginal_posterior
from dprisk.inference.studies.p_correct import p_correct_two_level
from dprisk.models.scenario import Scenario

CASE = {"rho1": 0.5, "x2": 10, "d": 2}


def _marginal(rho2, p=0.5, **case):
    case = {**CASE, **case}
    return marginal_two_level(rho2=rho2, p=p, **case)


def test_marginal_increases_in_rho2_and_tends_to_the_single_level():
    grid = np.geomspace(1e-3, 1e2, 31)
    for p in (0.25, 0.5):
        values = [_marginal(rho2, p).marginal_posterior for rho2 in grid]
        # increasing up to the sums' rounding (1e-12: the grids neglect < 1e-9 each)
        assert np.all(np.diff(values) > -1e-12)
        # the block group at rho2 = 1e-3 moves it by less than 1e-3 (measured 1.7e-4)
        assert abs(values[0] - marginal_posterior(CASE["rho1"], p)) < 1e-3
    risk = _marginal(0.3, 0.25)
    assert risk.marginal_risk == pytest.approx(risk.marginal_posterior / 0.25, rel=1e-15)
    assert risk.neglected_mass < 1e-9


def test_census_two_level_marginal_scales_both_levels():
    answer = census_rho_for_target("marginal-posterior", 0.6, p=[0.5], x2=10, d=2)
    block, block_group = (float(share) for share in census_fractions())
    at = marginal_two_level(x2=10, rho1=block * answer.rho, rho2=block_group * answer.rho,
                               d=2, p=0.5).marginal_posterior
    assert at == answer.value_at_rho <= 0.6 < answer.value_above
    # certified with rho1 and rho2 moving together, up to within 1e-6 of the root (the last
    # 1e-9-wide intervals are within the bound's slack of the target)
    assert answer.certified_to <= answer.rho
    assert answer.certified_to == pytest.approx(answer.rho, rel=1e-6)


def _scenario(rho2, rho1=1.0, d=1):
    return Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=0.5, known=0, prior="improper")


def _p_correct(rho2, rho1=1.0, d=1, x2=5):
    return p_correct_two_level(x2=x2, rho1=rho1, rho2=rho2, d=d, p=0.5).p_correct


@pytest.mark.parametrize(("lower", "upper"), [(0.2, 0.3), (0.05, 0.06), (2.0, 2.5)])
def test_interval_bound_is_above_the_measure_and_tight(lower, upper):
    bound = p_correct_upper_bound(lower, upper, x2=5, params_lower=_scenario(lower),
                                  params_upper=_scenario(upper))
    fine = np.linspace(lower, upper, 41)
    assert max(_p_correct(rho2) for rho2 in fine) <= bound <= 1.0
    # on a short interval away from a tie point (1/20 here: many posteriors reach 1/2 there
    # at once) the bound is the measure up to about the width
    start = lower * 1.0731
    short = start * (1.0 + 1e-7)
    tight = p_correct_upper_bound(start, short, x2=5, params_lower=_scenario(start),
                                  params_upper=_scenario(short))
    assert _p_correct(start) <= tight < _p_correct(start) + 1e-5


def test_certified_p_correct_first_crossing():
    answer = rho2_for_target(0.8, rho1=1.0, x2=5, d=1, p=[0.5])
    assert answer.value_at_rho <= 0.8 < answer.value_above
    assert answer.value_at_rho == _p_correct(answer.rho)
    assert RHO2_RANGE[0] < answer.certified_to <= answer.rho
    # an independent fine grid (not the scan's) up to rho*: the target holds everywhere; 141
    # points, 2 per step of the scan's 25-per-decade grid over the 2.8 decades below rho* =
    # 0.618 (301 before issue 36's second pass: 4.3 per step)
    below = np.geomspace(RHO2_RANGE[0], answer.rho, 141)
    assert all(_p_correct(rho2) <= 0.8 for rho2 in below)


def _spike(rho):
    """0.5, but 1.1 on (1, 1.0001) (narrower than a scan step) and above 5."""
    return 1.1 if (1.0 < rho < 1.0001 or rho > 5.0) else 0.5


def _spike_bound(lower, upper, loose_at=None):
    """The exact supremum of :func:`_spike` on [lower, upper] (1.0 around ``loose_at``)."""
    if (upper > 1.0 and lower < 1.0001) or upper > 5.0:
        return 1.1
    return 1.0 if loose_at is not None and lower <= loose_at <= upper else 0.5


def test_certified_search_finds_a_crossing_the_scan_misses():
    from dprisk.inference.privacy.budget_certified import certified_crossing
    from dprisk.inference.privacy.budget_levels import scan_first_crossing

    scanned = scan_first_crossing(_spike, 0.9, 0.1, 10.0)
    assert scanned[0] == pytest.approx(5.0, rel=1e-8)  # the scan steps over the spike
    rho, at, above, certified_to = certified_crossing(_spike, _spike_bound, 0.9, 0.1, 10.0, 25)
    assert rho == pytest.approx(1.0, rel=1e-9) and rho <= 1.0
    assert at <= 0.9 < above and certified_to == rho
    # a bound that cannot converge at 0.5 (and 0.5 <= T there): passed over, reported
    rho, at, above, certified_to = certified_crossing(
        _spike, lambda a, b: _spike_bound(a, b, loose_at=0.5), 0.9, 0.1, 10.0, 25)
    assert rho == pytest.approx(1.0, rel=1e-9)
    assert certified_to == pytest.approx(0.5, rel=1e-9) and certified_to <= 0.5


def test_marginal_not_monotone_for_a_small_block_group_and_still_certified():
    # x2 = 3: the marginal posterior first falls with rho2 (0.5657 at 1e-3, ~0.5616 near
    # 0.07), then rises; a bracket from the scan alone would not be a proof
    case = {"rho1": 0.3, "x2": 3, "d": 3}
    grid = np.geomspace(1e-3, 1.0, 13)
    values = [_marginal(rho2, **case).marginal_posterior for rho2 in grid]
    assert min(np.diff(values)) < -1e-4
    answer = rho2_for_target(0.567, measure="marginal-posterior", p=[0.5], **case)
    assert answer.value_at_rho <= 0.567 < answer.value_above
    assert answer.value_at_rho == pytest.approx(0.567, abs=1e-12)
    # the proof reaches the root but for the last few 1e-9-wide intervals, where the measure is
    # within the bound's slack of the target (measured 3e-8 relative)
    assert answer.certified_to <= answer.rho
    assert answer.certified_to == pytest.approx(answer.rho, rel=1e-6)
    below = np.geomspace(RHO2_RANGE[0], answer.rho, 61)
    assert all(_marginal(rho2, **case).marginal_posterior <= 0.567 for rho2 in below)
