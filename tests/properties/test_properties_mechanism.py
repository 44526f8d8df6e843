"""Property-based tests of the mechanism: the discrete Gaussian, its sums, samplers, privacy map.

Hypothesis draws the parameters over the whole supported range (rho log-uniform in
[1e-6, 1e4], centres up to 1e7 in magnitude, delta down to 1e-300); the properties are
identities of the mathematics, so no reference values are involved:

* DG(mu, 1/(2 rho)): the pmf sums to 1 and is symmetric about mu; cdf is non-decreasing,
  sf non-increasing, cdf + sf = 1 and cdf(x) - cdf(x - 1) = pmf(x); P[X - mu >= 0] =
  (1 + P[X = mu]) / 2; the half-width bound holds; 0 < variance <= 1/(2 rho) = sum k^2 pmf.
* Sums of n iid DGs: symmetric, non-negative, mass within [1 - tail_mass, 1], variance
  n * variance(rho), and pmf(n1 + n2) = pmf(n1) * pmf(n2) (convolution).
* Samplers: a seed reproduces the draws and the draws shift exactly with mu.
* zCDP <-> DP: the two maps invert each other and are monotone.

Tolerances are stated next to each assertion; EPS is the double-precision epsilon.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dprisk.models.mechanism import conversions as privacy
from dprisk.models.mechanism import dg_sampling, dg_sums
from dprisk.models.mechanism import discrete_gaussian as dg

EPS = np.finfo(float).eps

RHO = st.floats(-6.0, 4.0).map(lambda e: 10.0**e)  # rho in [1e-6, 1e4], log-uniform
CENTRE = st.integers(-(10**7), 10**7)
DELTA = st.one_of(
    st.floats(-300.0, math.log10(0.5)).map(lambda e: 10.0**e),
    st.floats(-12.0, math.log10(0.5)).map(lambda e: 1.0 - 10.0**e),
)


def pmf_tolerance(rho):
    """Rounding of a pmf value: ~2 ulp from exp, plus ulp(log Z) carried into every value."""
    return 4 * EPS * (1.0 + abs(float(dg.log_normalizer(rho))))


# ---------------------------------------------------------------- discrete Gaussian
@given(rho=RHO, mu=CENTRE, shift=st.integers(-(10**6), 10**6))
def test_pmf_sums_to_one_is_symmetric_and_shifts(rho, mu, shift):
    halfwidth = int(dg.support_halfwidth(rho, 1e-17))
    k = np.arange(-halfwidth, halfwidth + 1)
    mass = dg.pmf(mu + k, mu, rho)
    # neglected tail < 1e-17 (support_halfwidth); the rest is rounding of the values
    assert abs(math.fsum(mass) - 1.0) <= 1e-17 + pmf_tolerance(rho)
    np.testing.assert_array_equal(mass, mass[::-1])  # (x - mu)^2 is exact: bitwise symmetric
    np.testing.assert_array_equal(dg.pmf(mu + shift + k, mu + shift, rho), mass)


@given(rho=RHO, mu=CENTRE, where=st.floats(-1.2, 1.2))
def test_cdf_sf_consistent_and_monotone(rho, mu, where):
    halfwidth = int(dg.support_halfwidth(rho, 1e-17))
    first = mu + round(where * halfwidth) - 20
    x = first + np.arange(41)
    cdf, sf, mass = dg.cdf(x, mu, rho), dg.sf(x, mu, rho), dg.pmf(x, mu, rho)
    assert np.all((cdf >= 0) & (cdf <= 1) & (sf >= 0) & (sf <= 1))
    assert np.all(np.diff(cdf) >= 0) and np.all(np.diff(sf) <= 0)
    np.testing.assert_allclose(cdf + sf, 1.0, rtol=0, atol=2 * EPS)
    # P[X <= x] - P[X <= x - 1] = P[X = x]: absolute, each cdf value within a few ulp of 1/2
    np.testing.assert_allclose(np.diff(cdf), mass[1:], rtol=0, atol=16 * EPS)
    # and P[X <= x] = sum of the pmf up to x (tail below mu - halfwidth < 1e-17)
    lower = np.arange(mu - halfwidth, x[0] + 1)
    below_first = math.fsum(dg.pmf(lower, mu, rho)) if lower.size else 0.0
    assert abs(cdf[0] - below_first) <= 1e-17 + 2 * pmf_tolerance(rho) + 2 * EPS
    # symmetry about mu: P[X > mu + k] = P[X <= mu - k - 1]
    np.testing.assert_array_equal(dg.sf(x, mu, rho), dg.cdf(2 * mu - x - 1, mu, rho))
    assert np.all(dg.logcdf(x, mu, rho) <= 0) and np.all(dg.logsf(x, mu, rho) <= 0)


@given(rho=RHO, start=st.integers(0, 10**4))
def test_log_tail_identities(rho, start):
    # P[X - mu >= 0] = (1 + P[X = mu]) / 2 by symmetry
    half = 0.5 * (1.0 + float(dg.pmf(0, 0, rho)))
    assert float(np.exp(dg.log_tail(0, rho))) == pytest.approx(half, rel=4 * EPS)
    tails = dg.log_tail(start + np.arange(3), rho)
    assert np.all(np.isfinite(tails)) and np.all(np.diff(tails) < 0)  # finite even at -1e12
    # P[X - mu >= a] - P[X - mu >= a + 1] = P[X = mu + a] (in logs: log1p(-e^{t1 - t0}))
    log_step = tails[0] + np.log1p(-np.exp(tails[1] - tails[0]))
    # conditioning: the tails carry ~eps |t| each and their difference can be small
    rel = 1e-13 + 16 * EPS * abs(tails[0]) / abs(tails[1] - tails[0])
    assert log_step == pytest.approx(float(dg.logpmf(start, 0, rho)), rel=rel)


@given(rho=RHO, log_tail_mass=st.floats(-300.0, -1.0))
def test_support_halfwidth_bounds_the_tail(rho, log_tail_mass):
    tail_mass = 10.0**log_tail_mass
    halfwidth = dg.support_halfwidth(rho, tail_mass)
    # P[|X - mu| > K] = 2 P[X - mu >= K + 1] < tail_mass, compared in logs (exact tail)
    assert math.log(2.0) + float(dg.log_tail(halfwidth + 1, rho)) < math.log(tail_mass)
    assert dg.support_halfwidth(rho, tail_mass / 10) >= halfwidth
    assert dg.support_halfwidth(2 * rho, tail_mass) <= halfwidth


@given(rho=RHO)
def test_variance_below_scale_and_equal_to_second_moment(rho):
    variance = float(dg.variance(rho))
    assert 0 <= variance <= 1 / (2 * rho)  # supplement S2 (equality in floats for rho < 0.01)
    halfwidth = int(dg.support_halfwidth(rho, 1e-30))
    k = np.arange(-halfwidth, halfwidth + 1)
    moment = math.fsum(k.astype(float) ** 2 * dg.pmf(k, 0, rho))
    # the pmf values carry pmf_tolerance relative error; the tail beyond K adds < 1e-30 K^2
    assert variance == pytest.approx(moment, rel=1e-13 + pmf_tolerance(rho), abs=1e-300)


# ---------------------------------------------------------------- sums of DGs
@given(n=st.integers(1, 200), rho=st.floats(-3.0, 3.0).map(lambda e: 10.0**e))
def test_sum_pmf_is_a_symmetric_distribution_with_n_times_the_variance(n, rho):
    s = dg_sums.sum_pmf(n, rho)
    peak = s.pmf.max()
    assert np.all(s.pmf >= 0)
    np.testing.assert_array_equal(s.values, -s.values[::-1])
    # FFT convolution rounds absolutely, ~eps x peak per bin
    np.testing.assert_allclose(s.pmf, s.pmf[::-1], rtol=0, atol=8 * EPS * peak)
    total = math.fsum(s.pmf)
    assert 1 - s.tail_mass - 8 * EPS <= total <= 1 + 8 * EPS
    second = math.fsum(s.values.astype(float) ** 2 * s.pmf)
    # neglected tail (1e-15 at >= ~8 sd) and FFT noise in the far bins: < 1e-11 relative
    assert second == pytest.approx(n * float(dg.variance(rho)), rel=1e-11)


@given(n1=st.integers(1, 60), n2=st.integers(1, 60),
       rho=st.floats(-2.0, 2.0).map(lambda e: 10.0**e))
def test_sum_pmf_convolution_semigroup(n1, n2, rho):
    a, b, both = dg_sums.sum_pmf(n1, rho), dg_sums.sum_pmf(n2, rho), dg_sums.sum_pmf(n1 + n2, rho)
    conv = np.convolve(a.pmf, b.pmf)
    values = np.arange(a.values[0] + b.values[0], a.values[-1] + b.values[-1] + 1)
    # each side neglects < tail_mass (1e-15) in its own way, plus absolute FFT rounding
    atol = 3e-15 + 16 * EPS * both.pmf.max()
    np.testing.assert_allclose(both.at(values), conv, rtol=1e-12, atol=atol)
    outside = np.setdiff1d(both.values, values)
    assert both.at(outside).sum() <= 1e-15


@given(rho=RHO)
def test_sum_of_one_term_is_the_dg_and_its_approximation_is_exact(rho):
    s = dg_sums.sum_pmf(1, rho)
    np.testing.assert_allclose(s.pmf, dg.pmf(s.values, 0, rho), rtol=pmf_tolerance(rho), atol=0)
    np.testing.assert_allclose(dg_sums.approximation_pmf(s.values, 1, rho), s.pmf,
                               rtol=pmf_tolerance(rho), atol=0)
    assert 0 <= dg_sums.total_variation(1, rho) <= 1e-15 + 2 * pmf_tolerance(rho)


# ---------------------------------------------------------------- samplers
@given(rho=RHO, mu=CENTRE, shift=st.integers(-(10**6), 10**6), seed=st.integers(0, 2**32))
def test_fast_sampler_reproducible_and_shift_equivariant(rho, mu, shift, seed):
    draws = dg_sampling.sample(mu, rho, size=64, random_seed=seed)
    assert draws.dtype == np.int64 and draws.shape == (64,)
    np.testing.assert_array_equal(dg_sampling.sample(mu, rho, size=64, random_seed=seed), draws)
    np.testing.assert_array_equal(dg_sampling.sample(mu + shift, rho, size=64, random_seed=seed),
                                  draws + shift)
    # the table covers |X - mu| <= K with P[|X - mu| > K] < 1e-20
    assert np.all(np.abs(draws - mu) <= dg.support_halfwidth(rho, dg_sampling.TABLE_TAIL_MASS))


@given(rhos=st.lists(RHO, min_size=9, max_size=12, unique=True), mu=CENTRE,
       seed=st.integers(0, 2**32))
def test_rejection_path_reproducible_and_shift_equivariant(rhos, mu, seed):
    # more than MAX_TABLES_PER_CALL distinct rho: the vectorised rejection sampler
    draws = dg_sampling.sample(mu, np.array(rhos), random_seed=seed)
    np.testing.assert_array_equal(dg_sampling.sample(mu + 7, np.array(rhos), random_seed=seed),
                                  draws + 7)


@given(rho=st.floats(-2.0, 4.0).map(lambda e: 10.0**e), mu=CENTRE, seed=st.integers(0, 2**32))
def test_exact_sampler_reproducible_and_shift_equivariant(rho, mu, seed):
    draws = dg_sampling.sample_exact(mu, rho, size=16, random_seed=seed)
    again = dg_sampling.sample_exact(mu, rho, size=16, random_seed=seed)
    np.testing.assert_array_equal(again, draws)
    np.testing.assert_array_equal(dg_sampling.sample_exact(mu - 3, rho, size=16, random_seed=seed),
                                  draws - 3)


# ---------------------------------------------------------------- zCDP <-> DP
@given(rho=RHO, delta=DELTA)
def test_zcdp_dp_round_trip(rho, delta):
    epsilon = float(privacy.zcdp_to_dp(rho, delta))
    assert math.isfinite(epsilon) and epsilon >= rho
    # both maps are well conditioned (the inverse avoids cancellation): a few ulp
    assert float(privacy.dp_to_zcdp(epsilon, delta)) == pytest.approx(rho, rel=16 * EPS)
    assert float(privacy.zcdp_to_dp(privacy.dp_to_zcdp(epsilon, delta), delta)) == (
        pytest.approx(epsilon, rel=16 * EPS))


@given(rhos=st.lists(RHO, min_size=2, max_size=2), deltas=st.lists(DELTA, min_size=2,
                                                                  max_size=2))
def test_privacy_maps_are_monotone(rhos, deltas):
    (r_lo, r_hi), (d_lo, d_hi) = sorted(rhos), sorted(deltas)
    # epsilon grows with rho and shrinks with delta; the inverse grows with epsilon
    assert privacy.zcdp_to_dp(r_lo, d_lo) <= privacy.zcdp_to_dp(r_hi, d_lo)
    assert privacy.zcdp_to_dp(r_lo, d_lo) >= privacy.zcdp_to_dp(r_lo, d_hi)
    e_lo, e_hi = privacy.zcdp_to_dp(r_lo, d_lo), privacy.zcdp_to_dp(r_hi, d_lo)
    assert privacy.dp_to_zcdp(e_lo, d_lo) <= privacy.dp_to_zcdp(e_hi, d_lo)
    assert privacy.dp_to_zcdp(e_lo, d_lo) <= privacy.dp_to_zcdp(e_lo, d_hi)
