"""Tests of inference/privacy/two_level_marginal.py: the batched ``x1*`` average.

``posterior_over_x1`` evaluates the posteriors of every ``x1*`` noise in blocks (one
``expit`` call per block) with the weights computed once per precision; it must give the
values of the scalar loop it replaced (one ``expit`` call and one weight per noise, summed in
the order of the noises): for rho1 fixed and moving (the bound's ``weight_rho1`` /
``odds_rho1``, both ends' weights from one pass), 1-d and 2-d log-odds with infinities, one
block or many. Equal to the last bit where numpy's array and scalar ``exp`` are the same
(here); with AVX-512 numpy's array ``exp`` is its own SIMD kernel and the scalar one libm's,
a few ulps apart (issue 32): hence :data:`RTOL`.
"""

import numpy as np
import pytest

from dprisk.inference.privacy import two_level_marginal
from dprisk.inference.privacy.two_level_marginal import (
    posterior_over_x1,
    posteriors_over_x1,
)
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.numerics import dg_log_normalizer, expit
from dprisk.models.scenario import Scenario

#: A few ulps per weight and per expit (array vs scalar exp kernels), kept by a sum of
#: positive terms in the same order: 1e-14 relative (45 ulps).
RTOL = 1e-14


def _scalar_loop(log_odds_at_known, params, tail_mass, *, weight_rho1=None, odds_rho1=None):
    """The loop ``posterior_over_x1`` replaced: one expit and one weight per noise."""
    rho1 = float(params.rho1)
    weight_rho1 = rho1 if weight_rho1 is None else float(weight_rho1)
    lo, hi = (rho1, rho1) if odds_rho1 is None else odds_rho1
    half = int(dg.support_halfwidth_kernel(np.asarray(rho1, dtype=float), tail_mass / 4))
    outside = 2.0 * float(np.exp(dg.log_tail_kernel(np.asarray(half + 1, dtype=np.int64),
                                                    np.asarray(weight_rho1, dtype=float))))
    log_odds_at_known = np.asarray(log_odds_at_known, dtype=float)
    posterior_mean = np.zeros(log_odds_at_known.shape)
    for noise in range(-half, half + 1):
        weight = np.exp(-weight_rho1 * noise ** 2 - dg_log_normalizer(weight_rho1))
        slope = hi if noise >= -1 else lo
        posterior_mean += weight * expit(log_odds_at_known + 2.0 * slope * (1 + noise))
    return posterior_mean, outside


@pytest.mark.parametrize("block_cells", [2**16, 7])
def test_posterior_over_x1_is_the_scalar_loop(block_cells, monkeypatch):
    monkeypatch.setattr(two_level_marginal, "_NOISE_BLOCK_CELLS", block_cells)
    rng = np.random.default_rng(5)
    for trial, rho1 in enumerate((0.004, 0.05, 0.3, 1.0, 7.0)):
        params = Scenario.two_level(rho1=rho1, rho2=0.3, d=2, p=0.5, known=0,
                                    prior="improper")
        shape = ((40, 31), (257,), ())[trial % 3]
        log_odds = rng.normal(0.0, 20.0, size=shape)
        if log_odds.ndim:
            log_odds.flat[:2] = (-np.inf, np.inf)
        moving = {"weight_rho1": rho1 * 1.01, "odds_rho1": (rho1, rho1 * 1.01)}
        for kwargs in ({}, moving):
            mean, outside = posterior_over_x1(log_odds, params, 1e-9, **kwargs)
            mean_loop, outside_loop = _scalar_loop(log_odds, params, 1e-9, **kwargs)
            assert outside == pytest.approx(outside_loop, rel=RTOL, abs=0)
            assert mean.shape == mean_loop.shape
            np.testing.assert_allclose(mean, mean_loop, rtol=RTOL, atol=0)
        # both ends' weights from one evaluation of the posteriors (the bound, rho1 moving)
        ends = (rho1, rho1 * 1.01)
        both = posteriors_over_x1(log_odds, params, 1e-9, ends, odds_rho1=ends)
        for (mean, outside), weight_rho1 in zip(both, ends, strict=True):
            mean_loop, outside_loop = _scalar_loop(log_odds, params, 1e-9,
                                                   weight_rho1=weight_rho1, odds_rho1=ends)
            assert outside == pytest.approx(outside_loop, rel=RTOL, abs=0)
            np.testing.assert_allclose(mean, mean_loop, rtol=RTOL, atol=0)
