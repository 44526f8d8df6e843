"""Tests of the certified two-level budget of the Census allocation (rho1, rho2 move together).

The log-odds slope dL_m/drho = E_0[s] - E_1[s] that the bound rests on equals a central
finite difference of the exact log-odds (rho1 fixed and both levels moving, two priors);
inference/privacy/budget_certified.py with ``shares = (f1, f2)``: the interval bound of P[correct]
and of the marginal posterior in the global rho is above a fine scan of the measure on
random intervals (soundness) and within 1e-5 of it on a short one (tightness); the certified
search finds a first crossing that opens between two scan points, which the scan misses.
"""

import numpy as np
import pytest

from dprisk.inference.privacy.budget_certified import (
    log_odds_slope,
    marginal_upper_bound,
    p_correct_upper_bound,
)
from dprisk.inference.privacy.budget_levels import (
    CENSUS_RHO_RANGE,
    GRID_PER_DECADE,
    census_fractions,
    census_rho_for_target,
    scan_first_crossing,
)
from dprisk.inference.privacy.two_level_marginal import marginal_two_level
from dprisk.inference.studies.p_correct import p_correct_two_level
from dprisk.inference.studies.setup import exact_log_odds_at_known
from dprisk.models.scenario import Scenario

SHARES = tuple(float(share) for share in census_fractions())


def _scenario(rho, d):
    return Scenario.two_level(rho1=SHARES[0] * rho, rho2=SHARES[1] * rho, d=d, p=0.5, known=0,
                              prior="improper")


@pytest.mark.parametrize("prior", ["improper", "truncated:30"])
@pytest.mark.parametrize("shares", [SHARES, (0.0, 1.0)])
def test_log_odds_slope_is_the_derivative(prior, shares):
    x2_star, y1_star = np.array([0, 5, 8, 13, 21]), np.array([-3, 4, 9, 9, 17])

    def scenario(rho):
        rho1 = SHARES[0] * rho if shares[0] else 0.7
        return Scenario.two_level(rho1=rho1, rho2=shares[1] * rho, d=3, p=0.3, known=1,
                                  prior=prior)

    rho, step = 2.0, 1e-4
    slope = log_odds_slope(x2_star, y1_star, scenario(rho), shares)
    central = (exact_log_odds_at_known(x2_star, y1_star, scenario(rho + step))
               - exact_log_odds_at_known(x2_star, y1_star, scenario(rho - step))) / (2 * step)
    # central difference: error step^2 max|L_m (3rd derivative)|/6 plus rounding 1e-16 |L_m| / step
    assert slope == pytest.approx(central, rel=1e-6, abs=1e-8)


def _p_correct(rho, x2, d):
    return p_correct_two_level(x2=x2, rho1=SHARES[0] * rho, rho2=SHARES[1] * rho, d=d,
                                  p=0.5).p_correct


def _marginal(rho, x2, d):
    return marginal_two_level(x2=x2, rho1=SHARES[0] * rho, rho2=SHARES[1] * rho, d=d,
                                 p=0.5).marginal_posterior


@pytest.mark.parametrize(("upper_bound", "measure"), [
    (p_correct_upper_bound, _p_correct),
    (marginal_upper_bound, _marginal),
])
@pytest.mark.parametrize(("x2", "d"), [(10, 2), (3, 1)])
def test_interval_bound_is_above_a_fine_scan_and_tight(upper_bound, measure, x2, d):
    rng = np.random.default_rng(14)
    for _ in range(3):  # random intervals of relative width 1 % to 30 % in [0.3, 50]
        lower = float(np.exp(rng.uniform(np.log(0.3), np.log(50.0))))
        upper = lower * (1.0 + rng.uniform(0.01, 0.3))
        bound = upper_bound(lower, upper, x2=x2, params_lower=_scenario(lower, d),
                            params_upper=_scenario(upper, d), shares=SHARES)
        fine = np.linspace(lower, upper, 25)
        assert max(measure(rho, x2, d) for rho in fine) <= bound <= 1.0
    # a short interval: the bound is the measure up to about the width (measured <= 3e-8)
    short = lower * (1.0 + 1e-7)
    tight = upper_bound(lower, short, x2=x2, params_lower=_scenario(lower, d),
                        params_upper=_scenario(short, d), shares=SHARES)
    assert measure(lower, x2, d) <= tight < measure(lower, x2, d) + 1e-5


def test_census_p_correct_finds_a_crossing_narrower_than_the_scan_step():
    # x2 = 2, d = 1: P[correct] rises above 0.4089 on a piece that opens between two scan
    # points near rho = 0.98 (the grid points there stay below 0.4089); the scan finds only
    # a later crossing
    x2, d, target = 2, 1, 0.4089

    def value(rho):
        return _p_correct(rho, x2, d)

    answer = census_rho_for_target("p-correct", target, p=[0.5], x2=x2, d=d)
    scanned = scan_first_crossing(value, target, *CENSUS_RHO_RANGE)
    assert answer.rho < scanned[0]
    assert answer.value_at_rho == value(answer.rho) <= target < answer.value_above
    # the scan points on either side of rho* both meet the target
    n_points = round(GRID_PER_DECADE * np.log10(CENSUS_RHO_RANGE[1] / CENSUS_RHO_RANGE[0])) + 1
    grid = np.geomspace(*CENSUS_RHO_RANGE, n_points)
    after = grid[np.searchsorted(grid, answer.rho)]
    assert value(grid[np.searchsorted(grid, answer.rho) - 1]) <= target
    assert value(after) <= target
    # proven up to within 1e-6 of rho* (the last 1e-9-wide intervals are within the
    # log-odds slack of the jump), and an independent fine grid below meets the target: 101
    # points (4 per step of the scan's grid, which has 25 per decade; 301 before issue 36's
    # second pass, 1.4 s of CPU at about 4.5 ms per exact P[correct])
    assert answer.certified_to <= answer.rho
    assert answer.certified_to == pytest.approx(answer.rho, rel=1e-6)
    below = np.geomspace(CENSUS_RHO_RANGE[0], answer.rho, 101)
    assert all(value(rho) <= target for rho in below)


@pytest.mark.parametrize(("measure", "target", "p", "profile"), [
    ("p-correct", 0.3071000611802427, 0.292183331520093, {}),
    ("p-correct", 0.38306273125650747, 0.07618982940946864, {}),
    ("p-correct", 0.3969164353809481, 0.337872764754443, {}),
    ("tail", 0.7657446477147241, 0.03367487458217635, {"max_ratio": 21.422398428724094}),
])
def test_census_block_answer_keeps_the_exact_share_at_or_below_the_jump(measure, target, p,
                                                                       profile):
    """The block form's global rho* is the largest float whose exact block share f1 rho*
    (f1 the strategy's Fraction) is at or below the exact jump delta/(2k + 1) (mpmath, 50
    digits): rho1*/fl(f1) put f1 rho* up to 3.5e-17 relatively above it in these cases, where
    the measure in exact arithmetic is the piece's upper value, above the target."""
    import mpmath

    answer = census_rho_for_target(measure, target, p=[p], **profile)
    f1 = census_fractions()[0]
    with mpmath.workdps(50):
        share = mpmath.mpf(f1.numerator) / f1.denominator * mpmath.mpf(answer.rho)
        prior = mpmath.mpf(p)
        level = mpmath.mpf(profile["max_ratio"]) * prior if profile else mpmath.mpf(0.5)
        delta = mpmath.log(level / (1 - level)) - mpmath.log(prior / (1 - prior))
        k = int(mpmath.nint((delta / share - 1) / 2))
        assert abs(share * (2 * k + 1) / delta - 1) < 1e-12  # a jump crossing
        assert share * (2 * k + 1) <= delta
    assert answer.value_at_rho <= target < answer.value_above
