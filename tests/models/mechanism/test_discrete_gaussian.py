"""Tests of models/mechanism/discrete_gaussian.py against mpmath brute-force sums at 80 digits.

The references are the defining series summed term by term in mpmath (no Poisson summation,
no theta-function identities), so they are independent of the implementation:

    S(a)  = sum_{k >= a} exp(-rho k^2)          (terms until below 1e-90 of the sum)
    log Z = log1p(2 S(1))                       (keeps the digits when Z - 1 ~ 2 e^-rho)
    var   = 2 sum_{k >= 1} k^2 exp(-rho k^2) / Z

and, as a check of the reference itself, log Z is compared with mpmath's Jacobi theta
function jtheta(3, 0, e^-rho) where that converges quickly.
"""

import functools
import math

import mpmath as mp
import numpy as np
import pytest

from dprisk.models.mechanism import discrete_gaussian as dg

DPS = 80
RTOL = 1e-12
TINY = np.finfo(float).tiny  # below this, doubles are subnormal: compare absolutely
SUBNORMAL_ATOL = 1e-320
RHO_GRID = np.geomspace(1e-6, 1e4, 41)
#: The grid as test cases: below rho = 1e-4 the brute-force sums take ~sqrt(207 / rho) terms
#: (14,000 at 1e-6, 0.1-0.3 s of CPU each), so there the default run keeps the decades (1e-6,
#: 1e-5, 1e-4: the same formulas, branch and sums at each) and `make bench` the quarter-decade
#: points between them (marked slow; 6 of 41 points, about 1 s of CPU in the two tests).
RHO_GRID_CASES = [
    pytest.param(rho, marks=pytest.mark.slow)
    if rho < 1e-4 and abs(math.log10(rho) - round(math.log10(rho))) > 0.01 else rho
    for rho in RHO_GRID
]
# log Z ~ 2 e^-rho: a normal double at 700, subnormal at 720 and 740
RHO_EDGES = [np.pi, 700.0, 720.0, 740.0]


def _tail_terms(rho, start, power=0, dps=DPS):
    """mpmath sum_{k >= start} k^power exp(-rho k^2), by the recurrence of the ratios."""
    with mp.workdps(dps):
        rho = mp.mpf(float(rho))
        k = int(start)
        term = mp.exp(-rho * k * k)
        ratio = mp.exp(-rho * (2 * k + 1))  # term(k+1) / term(k)
        step = mp.exp(-2 * rho)
        total = mp.mpf(0)
        negligible = mp.mpf(10) ** (-dps - 10)  # once: a power per term was most of the cost
        while True:
            contribution = term * k**power if power else term
            total += contribution
            if k > 0 and contribution < total * negligible:
                return total
            term *= ratio
            ratio *= step
            k += 1


@functools.cache
def ref_log_z(rho):
    with mp.workdps(DPS):
        return mp.log1p(2 * _tail_terms(rho, 1))


def ref_variance(rho):
    with mp.workdps(DPS):
        return 2 * _tail_terms(rho, 1, power=2) / mp.exp(ref_log_z(rho))


def ref_log_upper_tail(rho, start):
    """log P[X - mu >= start] for start >= 0."""
    with mp.workdps(DPS):
        return mp.log(_tail_terms(rho, start)) - ref_log_z(rho)


def assert_close(value, reference, rtol=RTOL):
    """Relative error < rtol; subnormal references are compared to an absolute 1e-320."""
    value = float(value)
    if abs(reference) < TINY:
        assert abs(value - float(reference)) <= SUBNORMAL_ATOL, (value, reference)
    else:
        assert abs(value - reference) <= rtol * abs(reference), (value, reference)


# ---------------------------------------------------------------- normaliser


def test_reference_agrees_with_jacobi_theta():
    with mp.workdps(DPS):
        for rho in [0.05, 0.5, 1.0, 3.0, 30.0]:
            theta = mp.log(mp.jtheta(3, 0, mp.exp(-mp.mpf(rho))))
            assert abs(theta - ref_log_z(rho)) < mp.mpf(10) ** -60


@pytest.mark.parametrize("rho", [*RHO_GRID_CASES, *RHO_EDGES])
def test_log_normalizer_vs_mpmath(rho):
    assert_close(dg.log_normalizer(rho), ref_log_z(rho))


def test_log_normalizer_underflow_at_huge_rho():
    """At rho = 1e4, log Z = 2 e^-1e4 ~ 1e-4343 is not a double: the result is exactly 0."""
    reference = ref_log_z(1e4)
    assert reference < 1e-300
    assert float(dg.log_normalizer(1e4)) == 0.0


def test_log_normalizer_vectorised_and_across_branch_point():
    rhos = np.array([np.pi * (1 - 1e-12), np.pi, np.pi * (1 + 1e-12)])
    values = dg.log_normalizer(rhos)
    assert values.shape == (3,)
    for rho, value in zip(rhos, values, strict=True):
        assert_close(value, ref_log_z(rho))


# ---------------------------------------------------------------- pmf


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.099, 1.0, 10.0, 700.0])
def test_pmf_sums_to_one_and_is_symmetric(rho):
    k = int(dg.support_halfwidth(rho))
    values = np.arange(-k, k + 1)
    probs = dg.pmf(values + 3, 3, rho)
    assert abs(math.fsum(probs) - 1.0) < 1e-14
    np.testing.assert_array_equal(probs, probs[::-1])
    np.testing.assert_array_equal(dg.logpmf(5 + values, 5, rho), dg.logpmf(5 - values, 5, rho))


@pytest.mark.parametrize("rho", [1e-4, 0.099, 1.0, 30.0])
@pytest.mark.parametrize("offset", [0, 1, 3, 17, 250])
def test_logpmf_vs_mpmath(rho, offset):
    with mp.workdps(DPS):
        reference = -mp.mpf(rho) * offset**2 - ref_log_z(rho)
    assert_close(dg.logpmf(10 + offset, 10, rho), reference)
    assert_close(dg.logpmf(-offset, 0, rho), reference)


# ---------------------------------------------------------------- cdf, sf and tails


@pytest.mark.parametrize("rho", [0.01, 0.099, 1.0, 5.0])
def test_cdf_and_sf_vs_partial_sums(rho):
    mu = 4
    k = int(dg.support_halfwidth(rho, 1e-30))
    offsets = np.arange(-k, k + 1)
    cdf = dg.cdf(mu + offsets, mu, rho)
    sf = dg.sf(mu + offsets, mu, rho)
    logcdf = dg.logcdf(mu + offsets, mu, rho)
    logsf = dg.logsf(mu + offsets, mu, rho)
    with mp.workdps(DPS):
        z = mp.exp(ref_log_z(rho))
        weights = [mp.exp(-mp.mpf(rho) * j * j) / z for j in range(-k - 60, k + 61)]
        lower = 60  # index of offset -k in `weights`
        for i in range(offsets.size):
            cut = lower + i + 1
            ref_cdf = mp.fsum(weights[:cut])
            ref_sf = mp.fsum(weights[cut:])
            assert_close(cdf[i], ref_cdf)
            assert_close(sf[i], ref_sf)
            assert_close(logcdf[i], mp.log(ref_cdf))
            assert_close(logsf[i], mp.log(ref_sf))


def test_far_tails_vs_mpmath():
    """logsf(1e4, 0, 1) ~ -1e8 must not underflow to -inf."""
    reference = ref_log_upper_tail(1.0, 10_001)
    assert -1.0003e8 < reference < -1.0e8
    assert_close(dg.logsf(10_000, 0, 1.0), reference)
    assert_close(dg.logcdf(-10_001, 0, 1.0), reference)
    assert_close(dg.log_tail(10_001, 1.0), reference)
    assert_close(dg.logsf(250, 0, 0.01), ref_log_upper_tail(0.01, 251))
    assert_close(dg.log_tail(0, 0.3), mp.log((1 + mp.exp(ref_log_z(0.3))) / 2) - ref_log_z(0.3))


# ---------------------------------------------------------------- support and variance


@pytest.mark.parametrize("rho", [1e-6, 1e-3, 0.099, 1.0, 30.0, 1e4])
@pytest.mark.parametrize("tail_mass", [1e-6, 1e-12, 1e-17, 1e-20])
def test_support_halfwidth_bound_holds(rho, tail_mass):
    k = int(dg.support_halfwidth(rho, tail_mass))
    with mp.workdps(DPS):
        z = mp.exp(ref_log_z(rho))

        def outside(width):  # P[|X - mu| > width]; 30 digits are plenty for a bound
            return 2 * _tail_terms(rho, width + 1, dps=30) / z

        assert outside(k) < tail_mass
        # not wastefully conservative (the bound uses Z >= 1, loose when rho is small):
        # measured K <= 1.3 K_min + 2 on this grid, so K / 1.3 - 2 must not suffice
        narrower = math.floor(k / 1.3) - 2
        if narrower >= 0:
            assert outside(narrower) >= tail_mass


@pytest.mark.parametrize("rho", [*RHO_GRID_CASES, *RHO_EDGES])
def test_variance_vs_mpmath(rho):
    assert_close(dg.variance(rho), ref_variance(rho))


def test_supplement_s2_variance_claims():
    """S2: |var - s| < 0.002 for every s = 1/(2 rho) > 0.5, and < 1e-6 for s > 1.

    Checked on a dense grid of s (double precision, itself checked against mpmath above),
    plus mpmath at the worst points, just above s = 0.5 and s = 1.
    """
    s_half = 0.5 + np.concatenate([np.geomspace(1e-12, 0.5, 4000), np.linspace(0.5, 1e6, 4000)])
    s_one = 1.0 + np.concatenate([np.geomspace(1e-12, 1.0, 4000), np.geomspace(1.0, 1e6, 4000)])
    gap_half = np.abs(dg.variance(1 / (2 * s_half)) - s_half)
    gap_one = np.abs(dg.variance(1 / (2 * s_one)) - s_one)
    assert gap_half.max() < 0.002
    assert gap_one.max() < 1e-6
    # the variance never exceeds s (Poisson-summation form of the variance)
    rho_half = 1 / (2 * s_half)
    assert np.all(dg.variance(rho_half) <= 0.5 / rho_half)
    with mp.workdps(DPS):
        gap_at_half = abs(ref_variance(1.0) - mp.mpf("0.5"))
        gap_at_one = abs(ref_variance(0.5) - 1)
    assert 0.0009 < gap_at_half < 0.002  # the bound is tight to a factor of about 2
    assert 1e-7 < gap_at_one < 1e-6


# ---------------------------------------------------------------- input validation


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: dg.log_normalizer(0.0), "rho"),
        (lambda: dg.log_normalizer([1.0, -2.0]), "rho"),
        (lambda: dg.logpmf(0.5, 0, 1.0), "x"),
        (lambda: dg.logpmf(0, 0.5, 1.0), "mu"),
        (lambda: dg.pmf(0, 0, np.inf), "rho"),
        (lambda: dg.cdf(0, 0, -1.0), "rho"),
        (lambda: dg.sf(1.5, 0, 1.0), "x"),
        (lambda: dg.logsf(0, 0, np.nan), "rho"),
        (lambda: dg.log_tail(-1, 1.0), "start"),
        (lambda: dg.support_halfwidth(0.0), "rho"),
        (lambda: dg.variance(-1.0), "rho"),
    ],
)
def test_bad_input_names_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("tail_mass", [0.0, 1.5, -1e-3])
def test_support_halfwidth_rejects_bad_tail_mass(tail_mass):
    with pytest.raises(ValueError, match="tail_mass"):
        dg.support_halfwidth(1.0, tail_mass)


@pytest.mark.parametrize("tail_mass", [0.5, 5e-10, 8.333333333333333e-11, 1e-12, 1e-17, 1e-20])
@pytest.mark.parametrize("factor", [1.0, 2.0])
def test_the_smallest_rho_a_window_refusal_states_is_accepted(tail_mass, factor):
    """The refusal 'rho >= S' states an S the kernel accepts, within 3 digits of the true
    smallest (found by bisection to 1e-12 relative): the bound once stated, L/2**105, was
    5.89e-31 at tail_mass 8.3e-11 where everything below 6.94e-31 is refused."""
    smallest_window_rho, support_halfwidth_kernel = (dg.smallest_window_rho,
                                                     dg.support_halfwidth_kernel)
    stated = smallest_window_rho(tail_mass, factor)
    support_halfwidth_kernel(stated / factor, tail_mass)  # accepted
    low, high = stated / 2, stated
    while high / low - 1 > 1e-12:
        mid = (low * high) ** 0.5
        try:
            support_halfwidth_kernel(mid / factor, tail_mass)
            high = mid
        except ValueError:
            low = mid
    assert high <= stated < high * (1 + 1e-2), (stated, high)  # rounded up to 3 digits
    with pytest.raises(ValueError, match=f"rho >= {smallest_window_rho(tail_mass):.3g}"):
        support_halfwidth_kernel(low / factor * 0.5, tail_mass)
