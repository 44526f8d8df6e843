"""Tests of inference/single_level/replace_one.py: which of two cells holds the target.

Independent references:

* brute force: every pair of noises (eta_a, eta_b) on a window whose neglected mass is below
  1e-20, the pmf in the DAS's own form exp(-x^2/(2 sigma^2)) normalised by a direct fsum (not
  this package's log Z), the posterior from the joint likelihood of both cells (not the
  sufficient statistic D). Tolerance 1e-13 absolute: a few thousand terms, each rounded to
  ~1e-16 relative, plus the module's neglected mass 2e-17;
* the pmf of eta_a - eta_b in closed form through Jacobi theta functions at 30 digits
  (mpmath): P[N = k] = exp(-rho k^2/2) S_(k mod 2) / Z(rho)^2, S_0 = theta_3(exp(-2 rho)),
  S_1 = theta_2(exp(-2 rho)), Z(rho) = theta_3(exp(-rho)); to 2e-17 absolute (the neglected
  mass) plus 1e-13 relative (rounding);
* the Gaussian limit (small rho): D ~ N(+-1, 1/rho), its integrals by mpmath quadrature.
"""

import math

import mpmath
import numpy as np
import pytest

from dprisk.inference.single_level import closed_form as sl
from dprisk.inference.single_level.replace_one import difference_pmf, replace_one_summary
from dprisk.models.mechanism.discrete_gaussian import rho_of_das_sigma_sq

#: The 2020 block detailed query's noise variance (DAS form), (339/542)^2 / (165/4099 * 3945/4097).
SIGMA_SQ_BLOCK = 10.092848490022675
BRUTE_ATOL = 1e-13


def brute_force(sigma_sq: float, p: float, m_a: int = 3, m_b: int = 5) -> dict:
    """Every noise pair, the joint likelihood of both cells, ties split evenly."""
    width = math.ceil(math.sqrt(2 * sigma_sq * 50)) + 2  # exp(-50) ~ 2e-22 per tail term
    x = np.arange(-width, width + 1)
    weight = np.exp(-x.astype(float) ** 2 / (2 * sigma_sq))
    noise = dict(zip(x.tolist(), (weight / math.fsum(weight)).tolist(), strict=True))

    def f(value):
        return noise.get(value, 0.0)

    totals = {"marginal_posterior": 0.0, "p_correct": 0.0, "accuracy": 0.0}
    for in_a, prior in ((True, p), (False, 1 - p)):
        for eta_a in x.tolist():
            for eta_b in x.tolist():
                y_a = m_a + int(in_a) + eta_a
                y_b = m_b + int(not in_a) + eta_b
                mass = f(eta_a) * f(eta_b)
                like_a = f(y_a - m_a - 1) * f(y_b - m_b)
                like_b = f(y_a - m_a) * f(y_b - m_b - 1)
                num, other = p * like_a, (1 - p) * like_b
                says_a = 1.0 if num > other else 0.5 if num == other else 0.0
                if in_a:
                    totals["marginal_posterior"] += mass * num / (num + other)
                    totals["p_correct"] += mass * says_a
                totals["accuracy"] += prior * mass * (says_a if in_a else 1.0 - says_a)
    totals["marginal_risk"] = totals["marginal_posterior"] / p
    return totals


@pytest.mark.parametrize("sigma_sq", [0.5, 2.0, SIGMA_SQ_BLOCK])
@pytest.mark.parametrize("p", [0.5, 0.2, 1 / 864])
def test_against_brute_force(sigma_sq, p):
    expected = brute_force(sigma_sq, p)
    got = replace_one_summary(rho_of_das_sigma_sq(sigma_sq), p)
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=BRUTE_ATOL), name


def test_difference_pmf_is_the_theta_closed_form():
    mpmath.mp.dps = 30
    for rho in (rho_of_das_sigma_sq(SIGMA_SQ_BLOCK), 0.5, 3.0):
        k, pmf = difference_pmf(rho)
        assert pmf.sum() == pytest.approx(1.0, abs=1e-15)
        z = mpmath.jtheta(3, 0, mpmath.exp(-rho))
        s0, s1 = (mpmath.jtheta(n, 0, mpmath.exp(-2 * rho)) for n in (3, 2))
        for value, got in zip(k.tolist(), pmf.tolist(), strict=True):
            exact = float(mpmath.exp(-rho * value**2 / 2) * (s1 if value % 2 else s0) / z**2)
            # exact to the neglected mass (2e-17 absolute), to rounding where it is larger
            assert abs(got - exact) <= 2e-17 + 1e-13 * exact, value


@pytest.mark.parametrize("rho", [1e-2, 1e-3, 1e-4])
@pytest.mark.parametrize("p", [0.5, 0.2])
def test_gaussian_limit(rho, p):
    """Small rho: N = eta_a - eta_b is close to N(0, 1/rho).

    The marginal posterior is a lattice sum of a smooth function: it equals the Gaussian
    integral and the paper's one cell at 2 rho (the same Gaussian limit) up to terms like
    exp(-pi^2/(2 rho)), so to 1e-12 (quadrature at 20 digits). P[correct] is a sum up to a
    threshold: the lattice CDF is within one atom P[N = 0] (about sqrt(rho/(2 pi))) of the
    continuous one, which is the stated bound; it shrinks with rho.
    """
    mpmath.mp.dps = 20
    got = replace_one_summary(rho, p)
    lo = math.log(p / (1 - p))
    sd = 1 / math.sqrt(rho)

    def integrand(d):
        return mpmath.npdf(d, 1, sd) / (1 + mpmath.exp(-(lo + 2 * rho * d)))

    gaussian = float(mpmath.quad(integrand, [1 - 40 * sd, 1, 1 + 40 * sd]))
    assert got["marginal_posterior"] == pytest.approx(gaussian, abs=1e-12)
    one_cell_half_variance = sl.marginal_posterior(2 * rho, p)
    assert got["marginal_posterior"] == pytest.approx(one_cell_half_variance, abs=1e-12)
    threshold = -lo / (2 * rho)  # decide "a" iff D > threshold
    continuous = float(mpmath.ncdf((1 - threshold) / sd))
    k, pmf = difference_pmf(rho)
    atom = float(pmf[k == 0][0])
    assert atom < math.sqrt(rho / (2 * math.pi)) * 1.001
    assert abs(got["p_correct"] - continuous) <= atom


def test_ties_and_symmetry():
    """At p = 1/2 the accuracy is (1 + P[N = 0] + P[N = 1]) / 2 (D = 0 is a tie)."""
    rho = rho_of_das_sigma_sq(SIGMA_SQ_BLOCK)
    k, pmf = difference_pmf(rho)
    got = replace_one_summary(rho, 0.5)
    expected = (1 + pmf[k == 0][0] + pmf[k == 1][0]) / 2
    assert got["accuracy"] == pytest.approx(expected, abs=1e-15)
    assert got["p_correct"] == pytest.approx(expected, abs=1e-15)


def test_vectorised_over_p_and_bad_input():
    rho = rho_of_das_sigma_sq(SIGMA_SQ_BLOCK)
    many = replace_one_summary(rho, [0.5, 0.2])
    for k, p in enumerate((0.5, 0.2)):
        one = replace_one_summary(rho, p)
        assert all(many[name][k] == one[name] for name in one)
    with pytest.raises(ValueError, match="rho"):
        replace_one_summary(-1.0, 0.5)
    with pytest.raises(ValueError, match="p"):
        replace_one_summary(rho, 1.5)
    with pytest.raises(ValueError, match="too small"):
        difference_pmf(1e-12)
    with pytest.raises(ValueError, match="sigma_sq"):
        rho_of_das_sigma_sq(0.0)
