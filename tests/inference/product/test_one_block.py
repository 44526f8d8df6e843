"""Tests of inference.postprocessing (supplement S6) against independent computations.

References: the post-processing rule re-implemented with exact fractions; the likelihood as
a brute-force double sum over (x1*, y1*) grids applying that rule pointwise (neglected mass
below 1e-25, so rtol 1e-12 leaves room only for rounding of the ~1e4 summands); mpmath for
the discrete-Gaussian interval probabilities; a seeded simulation of the mechanism (tolerance:
5 binomial standard errors per cell).
"""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from census_values import RHO_BLOCK

from dprisk.inference.nested.unique_levels_kernels import log_marginal_enumerate
from dprisk.inference.product import one_block as pp
from dprisk.inference.single_level import closed_form as sl
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.mechanism.dg_sampling import sample
from dprisk.models.mechanism.dg_sums import sum_pmf
from dprisk.models.numerics import logit

RTOL = 1e-12


def f_reference(x1_star, y1_star, x2_tilde, d, ties):
    """The S6 rule with exact fractions: truncate x-bar to [0, x~2], round to nearest."""
    x_bar = Fraction(d * x1_star + x2_tilde - y1_star, d + 1)
    if x_bar < 0:
        return 0
    if x_bar > x2_tilde:
        return x2_tilde
    low = math.floor(x_bar)
    frac = x_bar - low
    if frac != Fraction(1, 2):
        return low + (frac > Fraction(1, 2))
    return {"up": low + 1, "down": low, "even": low if low % 2 == 0 else low + 1}[ties]


def brute_likelihood(x2_tilde, rho, d, k1, *, x2, ties, noise_values=None, noise_pmf=None):
    """sum_{x1*, y1*} 1[f = v] P[x1* | k1] P[y1* | k1], every grid point evaluated."""
    k_x = int(dg.support_halfwidth(rho, 1e-26))
    xs = np.arange(k1 - k_x, k1 + k_x + 1)
    px = dg.pmf(xs, k1, rho)
    if noise_values is None:
        k_y = int(dg.support_halfwidth(rho / d, 1e-26))
        noise_values = np.arange(-k_y, k_y + 1)
        noise_pmf = dg.pmf(noise_values, 0, rho / d)
    out = [[] for _ in range(x2_tilde + 1)]
    for x, a in zip(xs, px, strict=True):
        for eta, b in zip(noise_values, noise_pmf, strict=True):
            out[f_reference(int(x), int(x2 - k1 + eta), x2_tilde, d, ties)].append(a * b)
    return np.array([math.fsum(terms) for terms in out])


# --------------------------------------------------------------------------- the rule
@pytest.mark.parametrize("ties", pp.TIES)
@pytest.mark.parametrize("d", [1, 2, 27])
@pytest.mark.parametrize("x2_tilde", [0, 1, 5])
def test_postprocess_block_equals_fraction_rule(ties, d, x2_tilde):
    x1 = np.arange(-40, 41)[:, None]
    y1 = np.arange(-40, 41)[None, :]
    got = pp.postprocess_block(x1, y1, x2_tilde, d, ties=ties)
    ref = np.array([[f_reference(int(a), int(b), x2_tilde, d, ties) for b in y1[0]]
                    for a in x1[:, 0]])
    np.testing.assert_array_equal(got, ref)


def test_tie_rules_differ_exactly_at_half_integers():
    # d = 27: x-bar = N / 28 is a tie when N = 28 k + 14, e.g. x1* = 1, y1* = -1, x~2 = 0+...
    x1, y1, x2_tilde = 0, -42, 100  # N = 142 = 28 * 5 + 2 -> no tie
    assert len({int(pp.postprocess_block(x1, y1, x2_tilde, 27, ties=t)) for t in pp.TIES}) == 1
    x1, y1 = 0, -54  # N = 154 = 28 * 5 + 14: x-bar = 5.5
    got = {t: int(pp.postprocess_block(x1, y1, x2_tilde, 27, ties=t)) for t in pp.TIES}
    assert got == {"up": 6, "down": 5, "even": 6}


@pytest.mark.parametrize("ties", pp.TIES)
@pytest.mark.parametrize(("x2_tilde", "d"), [(1, 27), (6, 27), (7, 3), (4, 1)])
def test_thresholds_describe_the_rule(ties, x2_tilde, d):
    y1 = np.arange(-30, 31)
    g = pp.thresholds(y1, x2_tilde, d, ties=ties)
    assert g.shape == (y1.size, x2_tilde)
    assert np.all(np.diff(g, axis=1) >= 0)
    x1 = np.arange(-60, 61)
    f = pp.postprocess_block(x1[None, :], y1[:, None], x2_tilde, d, ties=ties)
    for v in range(1, x2_tilde + 1):
        np.testing.assert_array_equal(f >= v, x1[None, :] >= g[:, v - 1][:, None])


# --------------------------------------------------------------------------- likelihood
@pytest.mark.parametrize(("x2_tilde", "rho", "d", "ties"), [
    (3, 0.3, 5, "even"), (4, 0.3, 3, "up"), (2, RHO_BLOCK, 27, "down"), (6, 1.5, 1, "even"),
    (1, RHO_BLOCK, 27, "even"), (12, RHO_BLOCK, 27, "even"),
])
def test_likelihood_equals_brute_force_double_sum(x2_tilde, rho, d, ties):
    table = pp.likelihood(x2_tilde, rho, d, ties=ties)
    for row, k1 in enumerate((0, 1)):
        ref = brute_likelihood(x2_tilde, rho, d, k1, x2=1, ties=ties)
        np.testing.assert_allclose(np.exp(table.log_likelihood[row]), ref, rtol=RTOL,
                                   atol=1e-300)
    assert np.all(table.neglected_mass < pp.DEFAULT_TAIL_MASS)
    np.testing.assert_allclose(np.exp(table.log_likelihood).sum(axis=1), 1.0, rtol=1e-14)


def test_likelihood_with_known_m_and_x2():
    table = pp.likelihood(5, 0.4, 4, known=2, x2=6)
    for row, k1 in enumerate((2, 3)):
        ref = brute_likelihood(5, 0.4, 4, k1, x2=6, ties="even")
        np.testing.assert_allclose(np.exp(table.log_likelihood[row]), ref, rtol=RTOL)


def test_likelihood_exact_noise_sum():
    exact = sum_pmf(3, 0.5, tail_mass=1e-20)
    table = pp.likelihood(4, 0.5, 3, y_noise="exact", tail_mass=1e-20)
    for row, k1 in enumerate((0, 1)):
        ref = brute_likelihood(4, 0.5, 3, k1, x2=1, ties="even", noise_values=exact.values,
                               noise_pmf=exact.pmf)
        np.testing.assert_allclose(np.exp(table.log_likelihood[row]), ref, rtol=RTOL)
    # at the Census block rho the S2 approximation is exact to rounding
    approx = pp.likelihood(10, RHO_BLOCK, 27).log_likelihood
    np.testing.assert_allclose(pp.likelihood(10, RHO_BLOCK, 27, y_noise="exact").log_likelihood,
                               approx, rtol=1e-11)


def test_deep_tail_cells_against_mpmath():
    """Cells far in the tail (x~2 = 100, v = 60) keep full relative precision."""
    rho, d, x2_tilde, v = 0.5, 4, 100, 60
    table = pp.likelihood(x2_tilde, rho, d)
    mpmath.mp.dps = 60
    g = pp.thresholds(np.arange(-200, 201) + 1, x2_tilde, d)  # k1 = 0: y1* = 1 + eta

    def dg_mass(lo, hi, r):  # P[lo <= J < hi], J ~ DG(0, 1/(2r)), exact sums
        z = mpmath.jtheta(3, 0, mpmath.exp(-r))
        return mpmath.fsum(mpmath.exp(-r * j * j) for j in range(lo, hi)) / z

    total = mpmath.mpf(0)
    for i, eta in enumerate(range(-200, 201)):
        lo, hi = int(g[i, v - 1]), int(g[i, v])
        if hi > lo:
            weight = mpmath.exp(-mpmath.mpf(rho) / d * eta * eta) / mpmath.jtheta(
                3, 0, mpmath.exp(-mpmath.mpf(rho) / d))
            total += weight * dg_mass(lo, hi, mpmath.mpf(rho))
    assert float(table.log_likelihood[0, v]) == pytest.approx(float(mpmath.log(total)),
                                                              rel=1e-12)
    assert table.log_likelihood[0, v] < -100  # a probability far below double's epsilon


def test_simulated_release_frequencies_match_likelihood(rng):
    """Draw (x1*, y1*) from the mechanism under X1 = 1, apply f, compare frequencies."""
    rho, d, x2_tilde, n = RHO_BLOCK, 27, 6, 200_000
    x1_star = sample(1, rho, size=n, random_seed=rng)
    y1_star = 0 + sample(0, rho / d, size=n, random_seed=rng)  # x2 = 1, k1 = 1 -> y1 = 0
    counts = np.bincount(pp.postprocess_block(x1_star, y1_star, x2_tilde, d),
                         minlength=x2_tilde + 1)
    expected = np.exp(pp.likelihood(x2_tilde, rho, d).log_likelihood[1])
    z = (counts - n * expected) / np.sqrt(n * expected * (1 - expected))
    assert np.abs(z).max() < 5


# --------------------------------------------------------------------------- posteriors
@pytest.mark.parametrize(("x2_tilde", "rho"), [(1, RHO_BLOCK), (7, 0.3), (12, 2.0)])
@pytest.mark.parametrize("p", [0.5, 0.1])
def test_posterior_and_marginal_equal_bayes_on_brute_force(x2_tilde, rho, p):
    l0 = brute_likelihood(x2_tilde, rho, 27, 0, x2=1, ties="even")
    l1 = brute_likelihood(x2_tilde, rho, 27, 1, x2=1, ties="even")
    v = np.arange(x2_tilde + 1)
    resolved = (l0 > 1e-250) & (l1 > 1e-250)  # the brute-force grid underflows further out
    post = p * l1[resolved] / (p * l1[resolved] + (1 - p) * l0[resolved])
    np.testing.assert_allclose(pp.posterior(v[resolved], x2_tilde, rho, 27, p), post,
                               rtol=RTOL)
    marginal = math.fsum(post * l1[resolved])
    assert float(pp.marginal_posterior(x2_tilde, rho, 27, p)) == pytest.approx(marginal,
                                                                                rel=RTOL)
    assert float(pp.marginal_risk(x2_tilde, rho, 27, p)) == pytest.approx(marginal / p,
                                                                           rel=RTOL)


def test_data_processing_bound_and_limits():
    for rho in (0.01, RHO_BLOCK, 0.7, 5.0):
        bound = float(pp.marginal_posterior_before_postprocessing(rho, 27, 0.5))
        assert float(sl.marginal_posterior(rho, 0.5)) <= bound  # y1* adds information
        for x2_tilde in (1, 3, 10, 40):
            assert float(pp.marginal_posterior(x2_tilde, rho, 27, 0.5)) <= bound + 1e-15
    # x~2 = 0: f is constant, nothing is learnt
    assert float(pp.marginal_posterior(0, RHO_BLOCK, 27, 0.3)) == pytest.approx(0.3, rel=1e-14)
    np.testing.assert_allclose(pp.posterior([0], 0, RHO_BLOCK, 27, 0.3), 0.3, rtol=1e-14)
    # a huge rho1 makes every release exact: f = x1 and the posterior is certain
    assert float(pp.marginal_posterior(1, 300.0, 27, 0.5)) == pytest.approx(1.0, abs=1e-12)


def test_before_postprocessing_equals_joint_brute_force():
    rho, d, p = 0.6, 5, 0.5
    x1 = np.arange(-20, 23)[:, None]  # neglected mass below 1e-100, no underflow to 0/0
    y1 = np.arange(-45, 46)[None, :]  # y1* = x2 - k1 + eta, x2 = 1
    like = {k1: dg.pmf(x1, k1, rho) * dg.pmf(y1, 1 - k1, rho / d) for k1 in (0, 1)}
    post = p * like[1] / (p * like[1] + (1 - p) * like[0])
    ref = math.fsum((post * like[1]).ravel())
    assert float(pp.marginal_posterior_before_postprocessing(rho, d, p)) == pytest.approx(
        ref, rel=RTOL)


@pytest.mark.parametrize(("rho", "d", "smallest_p"), [
    # rho 1e-3 with p down to 1e-12: boxes of 519 x 2717 pairs (0.1 s of CPU); down to 1e-250,
    # 1569 x 8155 pairs, 4-5 s of CPU in the enumeration: in make bench. The default run keeps
    # the many-pairs-per-n sum at rho 1e-3 and p = 1e-250's budget at the other four cases.
    (1e-3, 27, 1e-12),
    pytest.param(1e-3, 27, 1e-250, marks=pytest.mark.slow),
    (RHO_BLOCK, 27, 1e-250), (0.3, 1, 1e-250), (0.3, 5, 1e-250), (30.0, 27, 1e-250)])
def test_before_postprocessing_regrouped_equals_enumeration(rho, d, smallest_p):
    # the pairs grouped by n = d j1 + j2 give the enumeration's sum (float keys, log space);
    # for a tiny p the sum is dominated by log-odds S near -logit(p), whose rounding (a few
    # ulp of |S|, in either method) moves e^S by |logit(p)| * 1e-16 relative
    p = np.unique([0.5, 0.2, 1 / 864, 1e-12, smallest_p])
    enumerated = np.exp(log_marginal_enumerate(np.array([rho, rho / d]), logit(p), p.min()))
    regrouped = pp.marginal_posterior_before_postprocessing(rho, d, p)
    assert np.all(np.abs(regrouped / enumerated - 1) <= 1e-14 * (1 + np.abs(logit(p))))


def test_before_postprocessing_tiny_p_and_refusal_are_the_enumeration():
    # below the regrouped sum's budget floor and beyond MAX_PAIRS: the enumeration itself
    p = np.array([0.5, 1e-270])
    enumerated = np.exp(log_marginal_enumerate(np.array([0.3, 0.3 / 27]), logit(p), p.min()))
    np.testing.assert_array_equal(pp.marginal_posterior_before_postprocessing(0.3, 27, p),
                                  enumerated)
    with pytest.raises(ValueError, match="MAX_PAIRS"):
        pp.marginal_posterior_before_postprocessing(1e-6, 27, 0.5)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: pp.postprocess_block(0.5, 0, 3, 27), "x1_star"),
    (lambda: pp.postprocess_block(0, 0, -1, 27), "x2_tilde"),
    (lambda: pp.postprocess_block(0, 0, 3, 0), "d"),
    (lambda: pp.postprocess_block(0, 0, 3, 27, ties="banker"), "ties"),
    (lambda: pp.likelihood(3, 0.0, 27), "rho1"),
    (lambda: pp.likelihood(3, 0.1, 27, known=1, x2=1), "x2"),
    (lambda: pp.likelihood(3, 0.1, 27, y_noise="normal"), "y_noise"),
    (lambda: pp.likelihood(3, 0.1, 27, tail_mass=0.0), "tail_mass"),
    (lambda: pp.posterior(4, 3, 0.1, 27), "x1_tilde"),
    (lambda: pp.marginal_posterior(3, 0.1, 27, p=1.0), "p"),
])
def test_invalid_inputs_raise_value_error_naming_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
