"""The in-place arithmetic of the table kernels gives the textbook expressions bit for bit.

:func:`relative_log_joint` and :func:`branch_conditionals` write over their work arrays to
save allocations (the risk studies build hundreds of (R, 2, W) tables); the values must be
those of the plain expressions, in the same floating-point order (tolerance: exact equality,
the same operations on the same operands).
"""

import numpy as np
import pytest

from dprisk.inference.kernels.table_kernels import (
    add_log_weight,
    branch_offset,
    relative_log_joint,
    relative_quadratic,
)
from dprisk.inference.studies.setup import branch_conditionals, posterior_table
from dprisk.models.scenario import Scenario

PARAMS = Scenario.two_level(rho1=0.0992, rho2=0.2465, d=27, p=0.5, known=0,
                            prior="improper")


def _plain_quadratic(params, b, gamma, r, j_minus_r):
    step = b * (params.rho1 / params.d) / params.precision
    j_plus_r = (2 * np.asarray(r, dtype=np.int64) + j_minus_r).astype(float)
    offset = np.asarray(j_minus_r, dtype=float) - step
    return params.precision * offset * (j_plus_r - 2.0 * gamma - step)


def _plain(params, b, gamma, delta_beta, r, j_minus_r):
    return branch_offset(b, delta_beta) - _plain_quadratic(params, b, gamma, r, j_minus_r)


@pytest.mark.parametrize("b", [0, 1])
def test_relative_log_joint_is_the_plain_expression(b):
    rng = np.random.default_rng(7)
    gamma = rng.normal(0, 30, (40, 1))
    delta_beta = rng.normal(0, 5, (40, 1))
    r = rng.integers(-50, 50, (40, 1))
    j_minus_r = rng.integers(-20, 20, (1, 25)) + np.zeros((40, 1), dtype=np.int64)
    got = relative_log_joint(PARAMS, b, gamma, delta_beta, r, j_minus_r)
    assert np.array_equal(got, _plain(PARAMS, b, gamma, delta_beta, r, j_minus_r))
    # scalar release, array of references (the Gibbs sampler's call)
    k2 = np.arange(-10, 10)
    got = relative_log_joint(PARAMS, b, 1.25, -0.5, k2, 0)
    assert np.array_equal(got, _plain(PARAMS, b, 1.25, -0.5, k2, 0))
    assert np.ndim(relative_log_joint(PARAMS, b, 1.25, -0.5, 3, 0)) == 0


@pytest.mark.parametrize("b", [0, 1])
def test_relative_quadratic_is_the_plain_expression(b):
    """The x1*-free term that relative_log_joint and band_window_table share (the band
    tables' bit-for-bit equality with window_table rests on it: test_band_table.py)."""
    rng = np.random.default_rng(8)
    gamma = rng.normal(0, 30, (40, 1))
    r = rng.integers(-50, 50, (40, 1))
    j_minus_r = rng.integers(-20, 20, (1, 25)) + np.zeros((40, 1), dtype=np.int64)
    got = relative_quadratic(PARAMS, b, gamma, r, j_minus_r)
    assert got.shape == (40, 25)
    assert np.array_equal(got, _plain_quadratic(PARAMS, b, gamma, r, j_minus_r))
    k2 = np.arange(-10, 10)
    assert np.array_equal(relative_quadratic(PARAMS, b, 1.25, k2, 0),
                          _plain_quadratic(PARAMS, b, 1.25, k2, 0))


@pytest.mark.parametrize("prior", ["improper", "point:25", "point:0"])
def test_branch_conditionals_is_the_plain_expression(prior):
    params = Scenario.two_level(rho1=0.0992, rho2=0.2465, d=27, p=0.5, known=0, prior=prior)
    table = posterior_table(0, np.arange(-5, 40), np.arange(10, 55), params)
    with np.errstate(invalid="ignore"):
        plain = np.exp(table.log_joint - table.log_branch_mass[:, :, None])
    plain = np.where(np.isfinite(table.log_joint), plain, 0.0)
    assert np.array_equal(branch_conditionals(table), plain)


def test_logsumexp_is_the_plain_expression():
    from dprisk.models.numerics import logsumexp

    rng = np.random.default_rng(3)
    a = rng.normal(0, 50, (30, 2, 17))
    a[0] = -np.inf
    a[1, 0, :5] = -np.inf
    top = np.max(a, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        plain = np.log(np.exp(a - top).sum(-1)) + np.squeeze(top, -1)
    assert np.array_equal(logsumexp(a), plain)


def test_variant_log_odds_is_the_plain_expression():
    from scipy.special import expit

    from dprisk.inference.studies.variant import VariantTables, x1_release_term

    x2s, y1s = np.meshgrid(np.arange(-5, 30), np.arange(0, 40), indexing="ij")
    tables = VariantTables(x2s.ravel(), y1s.ravel(), PARAMS)
    offset = np.tile([-3.0, 0.0, 2.0, 5.0], x2s.size // 4 + 1)[:x2s.size]
    up = expit(x1_release_term(offset, rho1=PARAMS.rho1, p=PARAMS.p)[:, None] + tables.g)
    t01 = (tables.cond[:, 0] * up).sum(-1)
    t10 = (tables.cond[:, 1] * (1.0 - up)).sum(-1)
    keep = (t01 >= 1e-200) & (t10 >= 1e-200)
    assert keep.mean() > 0.5
    got = tables.log_odds(offset)
    assert np.array_equal(got[keep], (np.log(t01) - np.log(t10))[keep])


@pytest.mark.parametrize("prior", ["improper", "truncated:12", "point:9", "point:0"])
@pytest.mark.parametrize("k1", [0, 1])
def test_add_log_weight_is_adding_the_prior_array(prior, k1):
    """Constant weight plus -inf off the support: the plain sum, -0.0 and -inf cells too."""
    params = Scenario.two_level(rho1=0.0992, rho2=0.2465, d=27, p=0.5, known=0, prior=prior)
    support = params.prior.branch_support(k1)
    if support is None:
        pytest.skip("the prior rules this branch out")
    rng = np.random.default_rng(5)
    start = rng.integers(-8, 15, 30)
    table = rng.normal(0, 3, (30, 11))
    table[:, 3] = -0.0
    table[::4, 5] = -np.inf
    k2 = start[:, None] + np.arange(11)
    plain = table + params.prior.log_weight(k2, k1)
    got = table.copy()
    add_log_weight(got, params.prior, k1, support, start)
    assert np.array_equal(got.view(np.int64), plain.view(np.int64))
    band = np.repeat(table.reshape(30, 1, 11), 3, axis=1)  # (cells, band, W), shared k2
    add_log_weight(band, params.prior, k1, support, start[:, None])
    expected = np.repeat(plain[:, None], 3, axis=1)
    assert np.array_equal(band.view(np.int64), expected.view(np.int64))
