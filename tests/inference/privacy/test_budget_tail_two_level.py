"""Tests of the two-level tail measure P[R'(X1*, X2*, Y1*) > r*(p)] and its budget.

inference/privacy/budget_levels.py: the tail equals a brute-force sum over the releases of the
posterior-to-prior ratio (so the shifted-prior identity of ``tail_search_prior`` holds), and
the rho2 budget for it round-trips with its certificate; the profile is checked.
"""

import numpy as np
import pytest
from scipy.special import expit

from dprisk.inference.privacy.budget import max_ratio_profile
from dprisk.inference.privacy.budget_levels import RHO2_RANGE, rho2_for_target, tail_search_prior
from dprisk.inference.studies.p_correct import p_correct_two_level
from dprisk.inference.studies.setup import exact_log_odds_at_known, release_grid
from dprisk.models.numerics import dg_log_normalizer
from dprisk.models.scenario import Scenario

CASE = {"rho1": 0.05, "x2": 5, "d": 1}


def _brute_tail(rho2, p, max_ratio, max_posterior=None, rho1=0.05, x2=5, d=1, known=0):
    """Sum over (x2*, y1*) and x1* of P[release] 1[posterior(x1 = m + 1) / p > r*(p)]."""
    grid = release_grid(x2=x2, y1=x2 - known - 1, rho1=rho1, rho2=rho2, d=d)
    x2s, y1s = np.meshgrid(grid.x2_star, grid.y1_star, indexing="ij")
    params = Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior="improper")
    log_odds = exact_log_odds_at_known(x2s, y1s, params)
    ratio_bound = max_ratio_profile(p, max_ratio, max_posterior)
    total = 0.0
    for noise in range(-200, 201):  # x1* = m + 1 + noise; the rest is below 1e-300
        weight = np.exp(-rho1 * noise ** 2 - dg_log_normalizer(rho1))
        ratio = expit(log_odds + 2.0 * rho1 * (1 + noise)) / p
        total += weight * float((grid.weights * (ratio > ratio_bound)).sum())
    return total


@pytest.mark.parametrize(("rho2", "p", "max_ratio", "max_posterior"), [
    (0.3, 0.25, 1.5, None), (2.0, 0.5, 1.5, None), (3.0, 0.2, 1.5, 0.35)])
def test_tail_is_the_p_correct_at_the_shifted_prior(rho2, p, max_ratio, max_posterior):
    shifted = tail_search_prior(p, max_ratio, max_posterior)
    tail = p_correct_two_level(p=shifted, rho2=rho2, **CASE).p_correct
    brute = _brute_tail(rho2, p, max_ratio, max_posterior)
    # both sums neglect < 1e-9 of the release mass (measured agreement 1e-15)
    assert tail == pytest.approx(brute, abs=2e-9)
    assert 1e-3 < tail < 0.99  # a case where the tail is neither 0 nor 1
    assert tail_search_prior(0.5, 2.0, None) is None  # r* p >= 1: the tail is 0


def test_two_level_tail_budget_round_trip():
    answer = rho2_for_target(0.1, measure="tail", max_ratio=1.5, p=[0.25], **CASE)
    assert answer.measure == "tail" and answer.binding_p == 0.25
    assert answer.value_at_rho <= 0.1 < answer.value_above
    # the brute force on either side of rho* (at rho* itself releases sit exactly at the ratio
    # bound, R' = r*, which the brute force's rounding may count as above it)
    assert (_brute_tail(answer.rho * (1 - 1e-6), 0.25, 1.5) <= 0.1
            < _brute_tail(answer.rho * (1 + 1e-6), 0.25, 1.5))
    assert answer.certified_to <= answer.rho
    assert answer.certified_to == pytest.approx(answer.rho, rel=1e-6)
    below = np.geomspace(RHO2_RANGE[0], answer.rho, 41)
    shifted = tail_search_prior(0.25, 1.5, None)
    assert all(p_correct_two_level(p=shifted, rho2=rho2, **CASE).p_correct <= 0.1
               for rho2 in below)


@pytest.mark.parametrize(("kwargs", "parameter"), [
    ({"measure": "tail"}, "max_ratio"),
    ({"measure": "tail", "max_ratio": 1.0}, "max_ratio"),
    ({"measure": "tail", "max_ratio": 1.5, "max_posterior": 1.5}, "max_posterior"),
    ({"measure": "p-correct", "max_ratio": 1.5}, "max_ratio"),
])
def test_two_level_tail_profile_is_checked(kwargs, parameter):
    with pytest.raises(ValueError, match=parameter):
        rho2_for_target(0.1, p=[0.25], **CASE, **kwargs)
