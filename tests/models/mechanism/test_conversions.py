"""Tests of models/mechanism/conversions.py: the zCDP -> (epsilon, delta)-DP map and its inverse.

References are the formula eps = rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke 2016,
Prop. 1.3; the paper's Theorem 1) evaluated in mpmath at 40 digits, and hand-computed points.
"""

import math

import mpmath as mp
import numpy as np
import pytest

from dprisk.models.census.allocation import CENSUS_DELTA, CENSUS_RHO_TOTAL
from dprisk.models.mechanism.conversions import dp_to_zcdp, zcdp_to_dp

RTOL = 1e-14


def ref_epsilon(rho, delta):
    with mp.workdps(40):
        rho = mp.mpf(rho)
        return rho + 2 * mp.sqrt(rho * mp.log(1 / mp.mpf(delta)))


def test_census_point():
    """rho = 2.56, delta = 1e-10: eps = 17.91528...; the paper prints 17.91 (truncated)."""
    epsilon = float(zcdp_to_dp(2.56, 1e-10))
    reference = ref_epsilon("2.56", "1e-10")
    assert abs(epsilon - reference) <= RTOL * reference
    assert round(epsilon, 4) == 17.9153
    assert math.floor(epsilon * 100) / 100 == 17.91  # the paper's figure, section 2.3
    assert float(zcdp_to_dp(float(CENSUS_RHO_TOTAL), CENSUS_DELTA)) == epsilon


def test_hand_computed_point():
    """rho = 1, delta = e^-4: eps = 1 + 2 sqrt(4) = 5; rho = 1/4, delta = e^-1: 1/4 + 1 = 5/4."""
    assert abs(float(zcdp_to_dp(1.0, math.exp(-4.0))) - 5.0) < 1e-14
    assert abs(float(zcdp_to_dp(0.25, math.exp(-1.0))) - 1.25) < 1e-14
    assert abs(float(dp_to_zcdp(5.0, math.exp(-4.0))) - 1.0) < 1e-14


@pytest.mark.parametrize("rho", [1e-8, 1e-4, 0.099, 0.25, 2.56, 10.0, 1e3])
@pytest.mark.parametrize("delta", [1e-300, 1e-10, 1e-5, 0.5])
def test_matches_mpmath(rho, delta):
    reference = ref_epsilon(rho, delta)
    assert abs(float(zcdp_to_dp(rho, delta)) - reference) <= RTOL * reference


@pytest.mark.parametrize("rho", [1e-8, 1e-4, 2.56])
def test_matches_mpmath_delta_near_one(rho):
    """delta = 0.999: log(1/delta) = 1e-3 loses ~1e-13 relative to the rounding of 1/delta
    (-log(delta) would not); measured error 4e-14, tolerance 1e-12."""
    reference = ref_epsilon(rho, 0.999)
    assert abs(float(zcdp_to_dp(rho, 0.999)) - reference) <= 1e-12 * reference


@pytest.mark.parametrize("delta", [1e-300, 1e-10, 1e-5, 0.5, 0.999])
def test_inverse_round_trip(delta):
    rhos = np.geomspace(1e-10, 1e4, 200)
    epsilons = zcdp_to_dp(rhos, delta)
    np.testing.assert_allclose(dp_to_zcdp(epsilons, delta), rhos, rtol=1e-12)
    epsilon_grid = np.geomspace(1e-6, 1e3, 200)
    np.testing.assert_allclose(
        zcdp_to_dp(dp_to_zcdp(epsilon_grid, delta), delta), epsilon_grid, rtol=1e-12
    )


def test_monotone():
    rhos = np.geomspace(1e-8, 1e4, 500)
    assert np.all(np.diff(zcdp_to_dp(rhos, 1e-10)) > 0)  # increasing in rho
    deltas = np.geomspace(1e-300, 0.9, 500)
    assert np.all(np.diff(zcdp_to_dp(2.56, deltas)) < 0)  # decreasing in delta
    epsilons = np.geomspace(1e-6, 1e3, 500)
    assert np.all(np.diff(dp_to_zcdp(epsilons, 1e-10)) > 0)
    # epsilon always exceeds rho (the sqrt term is positive for delta < 1)
    assert np.all(zcdp_to_dp(rhos, 0.999) > rhos)


def test_broadcasting():
    out = zcdp_to_dp(np.array([[0.1], [1.0]]), np.array([1e-10, 1e-5, 1e-2]))
    assert out.shape == (2, 3)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: zcdp_to_dp(0.0, 1e-10), "rho"),
        (lambda: zcdp_to_dp(-1.0, 1e-10), "rho"),
        (lambda: zcdp_to_dp(1.0, 0.0), "delta"),
        (lambda: zcdp_to_dp(1.0, 1.0), "delta"),
        (lambda: zcdp_to_dp(1.0, np.nan), "delta"),
        (lambda: dp_to_zcdp(0.0, 1e-10), "epsilon"),
        (lambda: dp_to_zcdp(np.inf, 1e-10), "epsilon"),
        (lambda: dp_to_zcdp(1.0, 2.0), "delta"),
    ],
)
def test_bad_input_names_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_inverse_never_exceeds_the_target_epsilon():
    """dp_to_zcdp is documented as the largest rho whose guarantee converts to (epsilon,
    delta)-DP: the closed form rounds to either side, and 646 of 3000 random (epsilon, delta)
    (epsilon in 1e-10 .. 1e3, delta in 1e-300 .. 0.98) gave a rho whose zcdp_to_dp exceeded
    epsilon (e.g. 2.6095645721236878 at delta 4.39e-126); now none does, and the rho stays
    within a relative 1e-15 of the closed form (it moves down at most 8 floats)."""
    rng = np.random.default_rng(3)
    epsilon = 10.0 ** rng.uniform(-10, 3, 3000)
    delta = 10.0 ** rng.uniform(-300, -0.01, 3000)
    rho = dp_to_zcdp(epsilon, delta)
    assert np.all(zcdp_to_dp(rho, delta) <= epsilon)
    log_inv_delta = -np.log(delta)
    closed = (epsilon / (np.sqrt(log_inv_delta + epsilon) + np.sqrt(log_inv_delta))) ** 2
    np.testing.assert_allclose(rho, closed, rtol=1e-15, atol=0)
    for e, d in ((2.6095645721236878, 4.3932831926505746e-126), (3.0, 1e-10)):
        assert float(zcdp_to_dp(dp_to_zcdp(e, d), d)) <= e
