"""Tests of inference.sequential (supplement S5): R' composes over sequential releases."""

import numpy as np
import pytest
from census_values import RHO_BLOCK
from level_references import brute_joint_posterior

from dprisk.inference.nested import unique_levels as ulv
from dprisk.inference.single_level import closed_form as sl
from dprisk.inference.single_level import sequential

RTOL = 1e-12


def test_sequential_composition_s5():
    rng = np.random.default_rng(5)
    rhos = np.array([RHO_BLOCK, 0.25, 0.05, 0.5])
    x_stars = 1 + rng.integers(-4, 5, size=(7, 4))
    for p in (0.5, 1 / 864):
        seq = sequential.sequential_risk(x_stars, rhos, p)
        post = sequential.sequential_posterior(x_stars, rhos, p)
        np.testing.assert_allclose(np.cumprod(seq.per_release, axis=-1), seq.cumulative,
                                   rtol=1e-13)
        joint = brute_joint_posterior(x_stars.T, rhos, p, 0)
        np.testing.assert_allclose(seq.cumulative[:, -1], joint / p, rtol=RTOL)
        np.testing.assert_allclose(post[:, -1], ulv.posterior_unique_levels(x_stars, rhos, p),
                                   rtol=0)
        # prior of release i+1 is the posterior after release i
        previous = np.concatenate([np.full((7, 1), p), post[:, :-1]], axis=1)
        for i in range(4):
            np.testing.assert_allclose(seq.per_release[:, i],
                                       sl.risk(x_stars[:, i], rhos[i], previous[:, i]),
                                       rtol=RTOL)


def test_sequential_many_releases_stay_finite():
    x = np.full(300, 5)
    seq = sequential.sequential_risk(x, np.full(300, 1.0), 1e-9)
    assert np.all(np.isfinite(seq.cumulative)) and seq.cumulative[-1] == pytest.approx(1e9)


def test_sequential_risk_where_the_posteriors_underflow_against_mpmath():
    """Releases deep in the lower tail (rho = 1): posteriors of e^-801 ... e^-1402, below the
    smallest double, so every ratio comes from the log-posteriors. Before this test a
    per-release ratio formed against the wrong release's log-posterior (the next one
    instead of the previous one) went unnoticed: the composition test's posteriors are all
    normal doubles. Reference at 60 digits; tolerance 2e-12 relative: each log-posterior
    (about 1e3) is rounded to its ulp, 2.3e-13, and a ratio is the exp of a difference of
    two of them."""
    import mpmath

    x = np.array([-400, -300, 5, 300])
    p = 0.5
    seq = sequential.sequential_risk(x, np.ones(4), p)
    with mpmath.workdps(60):
        log_odds = mpmath.log(mpmath.mpf(p) / (1 - mpmath.mpf(p)))
        previous = mpmath.mpf(p)
        for i, value in enumerate(x):
            log_odds += 2 * int(value) - 1
            posterior = 1 / (1 + mpmath.exp(-log_odds))
            assert seq.per_release[i] == pytest.approx(float(posterior / previous), rel=2e-12)
            assert seq.cumulative[i] == pytest.approx(float(posterior / p), rel=2e-12)
            previous = posterior
