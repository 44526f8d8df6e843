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
