"""Numerical extremes: every function at the edges of its range, against mpmath at 50 digits.

Ranges (issue "Reliability", item 3): rho in [1e-6, 1e4], p in [1e-12, 1 - 1e-12], counts up
to 1e7, d up to 1e4, releases far in the tails (x1* - m = +-1e4, y1* up to +-1e7). Each
function either returns finite values that agree with a high-precision reference, or raises
a ValueError naming the offending parameter (pytest runs with warnings as errors, so an
overflow or invalid-value warning also fails a test).

The references are computed here, in mpmath with ``DPS = 50`` digits, from the defining
formulas (no closed forms shared with the implementation):

* single-level posterior: Bayes' rule with the two DG likelihoods, in log space;
* marginal posterior: the release-weighted sum over x* of the posterior, with the DG weights
  exp(-rho j^2) and their normaliser summed term by term (by the exact multiplicative
  recurrence of consecutive terms) out to where they fall below 1e-30, at 30 digits
  (``SUM_DPS``; agrees with the 50-digit sum out to 1e-60 within 5e-30 at rho = 1e-6, where it
  takes 17,000 terms instead of 24,000: 16 orders below the 1e-14 asserted);
* P[correct decision]: the DG tail sum_{k >= a} exp(-rho k^2) / Z, term by term;
* two-level posterior: the raw double sum of the joint posterior (paper §3.2, S3) over
  k1 in {m, m+1} and every k2 within 80 (or 160 from a support boundary) of the centre,
  beyond which the terms are below exp(-A 80^2) < 1e-600 of the largest;
* sum of n iid DGs: the Fourier inversion P[S = j] = (1/pi) int_0^pi phi(t)^n cos(tj) dt,
  with phi(t) = sum_l exp(-(t + 2 pi l)^2 / (4 rho)) / sum_l exp(-(2 pi l)^2 / (4 rho))
  (Poisson summation of the DG characteristic function), by mpmath's tanh-sinh quadrature
  at 25 digits (``FOURIER_DPS``: the quadrature's nodes grow with the precision; its values
  agree with the 50-digit quadrature's within 1e-22 relative at every case here, measured,
  9 orders below the 1e-13 asserted, at half the CPU).
"""

import functools
import math

import mpmath as mp
import numpy as np
import pytest
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP

from dprisk.inference.single_level import closed_form as sl
from dprisk.inference.single_level import sequential
from dprisk.inference.two_level.exact import GridTooNarrowError, exact_posterior, posterior_x1
from dprisk.inference.two_level.gibbs import ExactConditionals, gibbs_sample
from dprisk.models.mechanism import conversions as privacy
from dprisk.models.mechanism import dg_sampling, dg_sums
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.priors.library import ImproperUniform, PointMass, TruncatedUniform

DPS = 50
SUM_DPS = 30  # the marginal posterior's ~1e4-term sums (module docstring)
FOURIER_DPS = 25  # the Fourier inversion's quadrature (module docstring)
EPS = np.finfo(float).eps
RHOS = [1e-6, 1e-3, 1.0, 1e4]
PS = [1e-12, 0.5, 1 - 1e-12]
BIG = 10**7  # counts up to 1e7
FAR = 10**4  # releases 1e4 away from m
RHO_GROUP = RHO_BLOCK_GROUP


def mp_logaddexp(a, b):
    top = max(a, b)
    return top + mp.log(mp.exp(a - top) + mp.exp(b - top))


# ---------------------------------------------------------------- single level: finite
@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("known", [0, BIG])
def test_single_level_finite_everywhere(rho, known):
    p = np.array(PS)[:, None]
    x = known + np.array([-FAR, -1, 0, 1, 2, FAR])[None, :]
    post = sl.posterior(x, rho, p, known)
    assert np.all((post >= 0) & (post <= 1))
    assert np.all(np.isfinite(sl.log_posterior(x, rho, p, known)))
    assert np.all(np.isfinite(sl.log_risk(x, rho, p, known)))
    risk = sl.risk(x, rho, p, known)
    assert np.all(np.isfinite(risk) & (risk >= 0) & (p * risk <= 1 + 4 * EPS))
    threshold = sl.decision_threshold(rho, p, known)
    correct = sl.p_correct(rho, p, known)
    assert threshold.dtype == np.int64 and np.all((correct >= 0) & (correct <= 1))
    marginal = sl.marginal_posterior(rho, p, known)
    assert np.all(np.isfinite(marginal) & (marginal >= p * (1 - 1e-14)) & (marginal <= 1))
    seq = sequential.sequential_risk(x, np.full(x.shape, rho), p, known)
    assert np.all(np.isfinite(seq.cumulative)) and np.all(seq.per_release >= 0)


# ---------------------------------------------------------------- single level: mpmath
def ref_log_posterior(offset, rho, p):
    """log P[X1 = m+1 | x1*] by Bayes' rule, offset = x1* - m."""
    with mp.workdps(DPS):
        rho, p = mp.mpf(rho), mp.mpf(p)
        log_plus = mp.log(p) - rho * (offset - 1) ** 2
        log_zero = mp.log(1 - p) - rho * offset**2
        return log_plus - mp_logaddexp(log_plus, log_zero)


@pytest.mark.parametrize("rho", [1e-6, 0.1, 1.0, 1e4])
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("offset", [-FAR, FAR])
@pytest.mark.parametrize("known", [0, BIG])
def test_posterior_far_in_the_tails_against_mpmath(rho, p, offset, known):
    reference = ref_log_posterior(offset, rho, p)
    got = float(sl.log_posterior(known + offset, rho, p, known))
    # log-odds ~ rho * 2e4 + logit(p) carry ~eps relative rounding
    assert got == pytest.approx(float(reference), rel=1e-13, abs=1e-300)
    with mp.workdps(DPS):
        want_post = mp.exp(reference)
        want_risk = mp.exp(reference - mp.log(mp.mpf(p)))
    # posterior and R' as numbers (0 where e^{-2e8} underflows): exp of the log, ~|log| eps
    rel = 4 * EPS * (1 + abs(got) + abs(math.log(p)))
    assert float(sl.posterior(known + offset, rho, p, known)) == pytest.approx(
        float(want_post), rel=rel, abs=1e-300)
    assert float(sl.risk(known + offset, rho, p, known)) == pytest.approx(
        float(want_risk), rel=rel, abs=1e-300)


def ref_marginals(rho, ps):
    """sum_j posterior(x* = m + 1 + j) exp(-rho j^2) / sum_j exp(-rho j^2), |j| <= K.

    Consecutive terms by the exact recurrence exp(-rho (j+1)^2) = exp(-rho j^2) e_j,
    e_j = exp(-rho (2j + 1)), e_{j+1} = e_j exp(-2 rho); the posterior at j is
    p / (p + (1 - p) e_j). K is where exp(-rho K^2) < 10^-SUM_DPS: the weights left out
    sum to below 1e-30 of the normaliser, at SUM_DPS digits.
    """
    with mp.workdps(SUM_DPS):
        rho = mp.mpf(rho)
        odds = [(1 - mp.mpf(p)) / mp.mpf(p) for p in ps]
        halfwidth = int(mp.sqrt(SUM_DPS * mp.log(10) / rho)) + 2
        weight = mp.exp(-rho * halfwidth**2)
        ratio = mp.exp(-rho * (1 - 2 * halfwidth))
        step = mp.exp(-2 * rho)
        totals = [mp.mpf(0)] * len(ps)
        normaliser = mp.mpf(0)
        for _ in range(2 * halfwidth + 1):
            normaliser += weight
            for i, o in enumerate(odds):
                totals[i] += weight / (1 + o * ratio)
            weight *= ratio
            ratio *= step
        return [t / normaliser for t in totals]


@pytest.mark.parametrize("rho", [1e-6, 1e4])
def test_marginal_posterior_at_extreme_rho_against_mpmath(rho):
    references = ref_marginals(rho, PS)
    got = sl.marginal_posterior(rho, np.array(PS))
    risk = sl.marginal_risk(rho, np.array(PS))
    for value, r, reference, p in zip(got, risk, references, PS, strict=True):
        # grid neglects < 1e-16 p; the log-sum-exp over ~2e4 terms rounds to ~1e-15
        assert value == pytest.approx(float(reference), rel=1e-14)
        assert r == pytest.approx(float(reference / mp.mpf(p)), rel=1e-14)


@functools.cache
def _ref_tail(a, rho):
    """sum_{k >= a} exp(-rho k^2) at DPS digits, term by term; cached per (a, rho), as the
    tests at rho = 1e-6 ask for the same ~12,000-term sums several times."""
    with mp.workdps(DPS):
        rho = mp.mpf(rho)
        total, k = mp.mpf(0), a
        term = mp.exp(-rho * k * k)
        ratio = mp.exp(-rho * (2 * k + 1))
        step = mp.exp(-2 * rho)
        while True:
            total += term
            if term < total * mp.mpf(10) ** (-DPS - 10):
                return total
            term *= ratio
            ratio *= step
            k += 1


def ref_log_upper_tail(start, rho):
    """log P[X - mu >= start] = log sum_{k >= start} exp(-rho k^2) - log Z, term by term."""
    with mp.workdps(DPS):
        log_z = mp.log(2 * _ref_tail(0, rho) - 1)  # Z = 2 sum_{k >= 0} - 1
        return mp.log(_ref_tail(start, rho)) - log_z


@pytest.mark.parametrize(("rho", "p"), [(1e-6, 0.5), (1e-6, 1 - 1e-12), (1.0, 1e-12),
                                        (0.1, 1e-6), (1e4, 1e-12), (1e4, 1 - 1e-12)])
def test_p_correct_against_mpmath(rho, p):
    threshold = int(sl.decision_threshold(rho, p))
    start = threshold - 1  # P[X* >= threshold | x1 = 1] = P[eta >= threshold - 1]
    if start >= 0:
        reference = mp.exp(ref_log_upper_tail(start, rho))
    else:
        reference = 1 - mp.exp(ref_log_upper_tail(1 - start, rho))
    assert float(sl.p_correct(rho, p)) == pytest.approx(float(reference), rel=1e-13)


# ---------------------------------------------------------------- mechanism at the edges
@pytest.mark.parametrize("rho", RHOS)
def test_discrete_gaussian_functions_finite_far_out(rho):
    x = np.array([-BIG, -FAR, -1, 0, 1, FAR, BIG])
    for mu in (0, BIG):
        logpmf = dg.logpmf(x, mu, rho)
        assert np.all(np.isfinite(logpmf)) and np.all(logpmf <= 0)
        assert np.all(np.isfinite(dg.logcdf(x, mu, rho)) | (dg.cdf(x, mu, rho) == 0))
        assert np.all(np.isfinite(dg.logsf(x, mu, rho)) | (dg.sf(x, mu, rho) == 0))
        assert np.all(np.abs(dg.cdf(x, mu, rho) + dg.sf(x, mu, rho) - 1) <= 2 * EPS)
    # log pmf at x = 1e7 from the definition: -rho x^2 - log Z (Z summed term by term)
    with mp.workdps(DPS):
        upper = ref_log_upper_tail(0, rho)  # log P[X >= 0] = log((Z + 1) / 2) - log Z
        log_z = -mp.log(2 * mp.exp(upper) - 1)  # P[X = 0] = 2 P[X >= 0] - 1 = 1/Z
        reference = -mp.mpf(rho) * BIG**2 - log_z
    assert float(dg.logpmf(BIG, 0, rho)) == pytest.approx(float(reference), rel=1e-15)
    assert np.isfinite(dg.log_tail(BIG, rho)) and np.isfinite(dg.variance(rho))
    assert 0 <= float(dg.variance(rho)) <= 1 / (2 * rho)  # 2 e^{-1e4} underflows to 0


@pytest.mark.parametrize("rho", [1e-6, 1e4])
def test_samplers_at_extreme_rho(rho):
    fast = dg_sampling.sample(BIG, rho, size=20_000, random_seed=7)
    exact = dg_sampling.sample_exact(BIG, rho, size=200, random_seed=7)
    if rho == 1e4:  # P[X != mu] = 2 e^{-1e4} / Z: every draw is mu itself
        assert np.all(fast == BIG) and np.all(exact == BIG)
        return
    variance = float(dg.variance(rho))  # = 1/(2 rho) = 5e5 to double precision
    # sample variance of 2e4 draws: relative sd sqrt(2 / n) = 1%; allow 5 sd
    assert np.var(fast - BIG) == pytest.approx(variance, rel=0.05)
    assert abs(np.mean(fast - BIG)) < 5 * math.sqrt(variance / fast.size)
    assert abs(np.mean(exact - BIG)) < 5 * math.sqrt(variance / exact.size)


@pytest.mark.parametrize("rho", [1e-6, 1.0, 1e4])
@pytest.mark.parametrize("delta", [1e-300, 1e-10, 1 - 1e-12])
def test_privacy_map_at_the_edges(rho, delta):
    epsilon = float(privacy.zcdp_to_dp(rho, delta))
    with mp.workdps(DPS):
        reference = mp.mpf(rho) + 2 * mp.sqrt(mp.mpf(rho) * -mp.log(mp.mpf(delta)))
    assert epsilon == pytest.approx(float(reference), rel=4 * EPS)
    assert float(privacy.dp_to_zcdp(epsilon, delta)) == pytest.approx(rho, rel=16 * EPS)


# ---------------------------------------------------------------- sums of DGs at n = 1e4
@functools.cache
def _fourier_integrand(n, rho):
    """t -> phi(t)^n for the sum of n iid DG(0, 1/(2 rho)), cached per node of the rule."""
    with mp.workdps(FOURIER_DPS):
        rho_mp = mp.mpf(rho)
        cut = DPS * mp.log(10) + 30
        tmax = min(mp.pi, mp.sqrt(cut * 4 * rho_mp / n))
        lmax = int(mp.ceil((mp.sqrt(cut * 4 * rho_mp) + tmax) / (2 * mp.pi))) + 1

    def theta(t):
        return mp.fsum(mp.exp(-(t + 2 * mp.pi * shift) ** 2 / (4 * rho_mp))
                       for shift in range(-lmax, lmax + 1))

    with mp.workdps(FOURIER_DPS):
        z = theta(mp.mpf(0))

    @functools.cache
    def power(t):
        return (theta(t) / z) ** n

    return power, tmax


def ref_sum_pmf(n, rho, j):
    """P[S = j] = (1/pi) int_0^tmax phi(t)^n cos(t j) dt; beyond tmax, phi^n < 1e-63."""
    with mp.workdps(FOURIER_DPS):
        power, tmax = _fourier_integrand(n, rho)
        return mp.quad(lambda t: power(t) * mp.cos(t * j), mp.linspace(0, tmax, 5)) / mp.pi


@pytest.mark.parametrize(("rho", "sds"), [(0.1, [0, 1, 5]), (1.0, [0, 5])])
def test_sum_pmf_at_n_1e4_against_fourier_inversion(rho, sds):
    n = 10**4
    s = dg_sums.sum_pmf(n, rho)
    total = math.fsum(s.pmf)
    assert 1 - s.tail_mass - 8 * EPS <= total <= 1 + 8 * EPS
    sd = math.sqrt(n * float(dg.variance(rho)))
    peak = s.pmf.max()
    for k in sds:
        j = int(k * sd)
        reference = float(ref_sum_pmf(n, rho, j))
        # relative 1e-13 in the bulk; FFT round-off is absolute, ~eps x peak per bin
        assert float(s.at(j)) == pytest.approx(reference, rel=1e-13, abs=4 * EPS * peak)


# ---------------------------------------------------------------- two levels
def ref_log_odds_two_level(x1s, x2s, y1s, *, rho1, rho2, d, p, known, prior):
    """log P[X1 = m+1 | D] - log P[X1 = m | D] from the raw double sum (paper §3.2, S3)."""
    with mp.workdps(DPS):
        rho1, rho2, p = mp.mpf(rho1), mp.mpf(rho2), mp.mpf(p)
        precision = rho2 + rho1 / d
        branches = []
        for k1, prior_prob in ((known, 1 - p), (known + 1, p)):
            lo, hi, log_w = k1, None, mp.mpf(0)
            if isinstance(prior, TruncatedUniform):
                hi, log_w = prior.upper, -mp.log(prior.upper - k1 + 1)
            if isinstance(prior, PointMass):
                lo = hi = prior.k
                if prior.k < k1:
                    branches.append(mp.mpf("-inf"))
                    continue
            centre = int(mp.floor((rho2 * x2s + rho1 / d * (y1s + k1)) / precision))
            first, last = max(lo, centre - 80), centre + 80 if hi is None else min(hi, centre + 80)
            if first > last:  # the support lies to one side: 160 terms from its near end
                first, last = (lo, lo + 160) if lo > centre else (max(lo, hi - 160), hi)
                last = last if hi is None else min(last, hi)
            terms = [
                mp.log(prior_prob) + log_w
                - rho1 * (x1s - k1) ** 2 - rho2 * (x2s - k2) ** 2
                - rho1 / d * (y1s - (k2 - k1)) ** 2
                for k2 in range(first, last + 1)
            ]
            top = max(terms)
            branches.append(top + mp.log(mp.fsum(mp.exp(t - top) for t in terms)))
        return branches[1] - branches[0]


TWO_LEVEL_CASES = (
    # d = 1e4 other blocks, x2* = 1e7 = m: y1* from -1e7 to 1e7, x1* up to 1e4 out
    [(BIG + dx, BIG, y, 10**4, "improper") for dx in (-FAR, 0, 1, FAR)
     for y in (-(10**7), -(10**5), -FAR, 0, FAR, 10**5, 10**7)]
    + [(BIG + dx, BIG, y, 10**4, prior) for dx in (0, 1) for y in (-(10**5), FAR, 10**7)
       for prior in (f"truncated:{BIG + 10**5}", f"point:{BIG + 3}")]
    # a Census-like block group (d = 27): y1* up to 1e5 out
    + [(BIG + dx, BIG, y, 27, "improper") for dx in (-FAR, 1) for y in (-(10**5), 0, 10**5)]
)


@pytest.mark.parametrize(("x1s", "x2s", "y1s", "d", "spec"), TWO_LEVEL_CASES)
def test_two_level_posterior_at_counts_1e7_against_mpmath(x1s, x2s, y1s, d, spec):
    params = {"rho1": RHO_BLOCK, "rho2": RHO_GROUP, "d": d, "p": 0.5, "known": BIG}
    post = exact_posterior(x1s, x2s, y1s, **params, prior=spec)
    prior = post.params.prior
    reference = ref_log_odds_two_level(x1s, x2s, y1s, **params, prior=prior)
    got = float(post.log_odds_x1)
    # Conditioning: the centre c_m - m = gamma (up to ~4e5 here) is held to one ulp, and
    # the log-odds move by at most 2A per unit of gamma.
    precision = RHO_GROUP + RHO_BLOCK / d
    gamma = (RHO_GROUP * (x2s - BIG) + RHO_BLOCK / d * y1s) / precision
    tolerance = 1e-13 * (1 + abs(float(reference))) + 4 * EPS * precision * abs(gamma)
    assert got == pytest.approx(float(reference), rel=0, abs=tolerance)
    assert float(post.neglected_mass) < 1e-12
    assert math.fsum(post.joint_pmf.ravel()) == pytest.approx(1.0, abs=64 * EPS)
    with mp.workdps(DPS):
        want = 1 / (1 + mp.exp(-reference))
    assert float(post.prob_x1) == pytest.approx(float(want), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("y1s", [-(10**5), 0, 10**7])
def test_two_level_known_1e7_equals_known_0(y1s):
    """Counts of 1e7 lose nothing: the same release relative to m gives the same answer."""
    params = {"rho1": RHO_BLOCK, "rho2": RHO_GROUP, "d": 10**4, "p": 1e-12}
    x1 = np.array([-FAR, 0, 1, FAR])
    high = exact_posterior(BIG + x1, BIG, y1s, **params, known=BIG)
    low = exact_posterior(x1, 0, y1s, **params, known=0)
    np.testing.assert_array_equal(high.log_odds_x1, low.log_odds_x1)
    np.testing.assert_array_equal(posterior_x1(BIG + x1, BIG, y1s, **params, known=BIG),
                                  low.prob_x1)


@pytest.mark.parametrize("y1s", [-(10**5), FAR, 10**7])
@pytest.mark.parametrize("dx", [0, FAR])
def test_gibbs_at_counts_1e7(y1s, dx):
    params = {"rho1": RHO_BLOCK, "rho2": RHO_GROUP, "d": 10**4, "p": 0.5, "known": BIG}
    cond = ExactConditionals(BIG + dx, BIG, y1s, **params)
    a0, a1 = (cond.x2_pmf_table * cond.prob_x1_table).sum(-1)
    exact = float(exact_posterior(BIG + dx, BIG, y1s, **params).prob_x1)
    # the X1 chain's stationary law is the exact posterior: pi1 (1 - a1) = (1 - pi1) a0
    assert exact * (1 - a1) == pytest.approx((1 - exact) * a0, rel=1e-9, abs=1e-14)
    assert np.isfinite(cond.prob_x1_given_x2([BIG, BIG + 1, BIG + 10**6])).all()
    draws = gibbs_sample(BIG + dx, BIG, y1s, **params, draws=200, chains=2, random_seed=3)
    assert np.all((draws.x1 == BIG) | (draws.x1 == BIG + 1)) and np.all(draws.x2 >= draws.x1)


def test_two_level_improper_prior_object_is_default():
    post = exact_posterior(BIG, BIG, 0, rho1=RHO_BLOCK, rho2=RHO_GROUP, d=10**4, known=BIG)
    assert post.params.prior == ImproperUniform()


# ---------------------------------------------------------------- clear errors
BAD_INPUTS = [
    # (call, parameter named in the message)
    (lambda: sl.posterior(0, 0.0), "rho"),
    (lambda: sl.posterior(0, np.inf), "rho"),
    (lambda: sl.posterior(0, np.nan), "rho"),
    (lambda: sl.posterior(0, 1.0, p=0.0), "p"),
    (lambda: sl.posterior(0, 1.0, p=1.0), "p"),
    (lambda: sl.posterior(0, 1.0, p=np.nan), "p"),
    (lambda: sl.posterior(0, 1.0, known=-1), "known"),
    (lambda: sl.posterior(0, 1.0, known=0.5), "known"),
    (lambda: sl.posterior(2**53 + 2, 1.0), "x1_star"),
    (lambda: sl.posterior(1.5, 1.0), "x1_star"),
    (lambda: sl.marginal_posterior(1e-15), "rho"),  # grid would exceed MAX_HALFWIDTH
    (lambda: sl.decision_threshold(1e-300, 1e-12), "rho"),  # threshold beyond 2**52
    (lambda: sequential.sequential_risk([0, 1], [1.0, -1.0]), "rhos"),
    (lambda: dg.logpmf(0, 0, -1.0), "rho"),
    (lambda: dg.support_halfwidth(1.0, 0.0), "tail_mass"),
    (lambda: dg.support_halfwidth(1.0, 1.0), "tail_mass"),
    (lambda: dg.log_tail(-1, 1.0), "start"),
    (lambda: dg_sums.sum_pmf(0, 1.0), "n"),
    (lambda: dg_sums.sum_pmf(10, 1.0, tail_mass=0.0), "tail_mass"),
    (lambda: dg_sampling.sample(0, 0.0), "rho"),
    (lambda: dg_sampling.sample_exact(0, -1.0), "rho"),
    (lambda: privacy.zcdp_to_dp(1.0, 0.0), "delta"),
    (lambda: privacy.dp_to_zcdp(0.0, 1e-10), "epsilon"),
    (lambda: exact_posterior(0, 0, 0, rho1=0.0, rho2=1.0, d=1), "rho1"),
    (lambda: exact_posterior(0, 0, 0, rho1=1.0, rho2=np.inf, d=1), "rho2"),
    (lambda: exact_posterior(0, 0, 0, rho1=1.0, rho2=1.0, d=0), "d"),
    (lambda: exact_posterior(0, 0, 0, rho1=1.0, rho2=1.0, d=1.5), "d"),
    (lambda: exact_posterior(0, 0, 0, rho1=1.0, rho2=1.0, d=1, p=1.0), "p"),
    (lambda: exact_posterior(0, 0, 0, rho1=1.0, rho2=1.0, d=1, known=-1), "known"),
    (lambda: exact_posterior(0, 2**54, 0, rho1=1.0, rho2=1.0, d=1), "x2_star"),
    (lambda: exact_posterior(0, 0, 0, rho1=1.0, rho2=1.0, d=1, tail_mass=0.0), "tail_mass"),
    (lambda: exact_posterior(0, 0, 0, rho1=1.0, rho2=1.0, d=1, halfwidth=-1), "halfwidth"),
    (lambda: exact_posterior(0, 0, 0, rho1=1.0, rho2=1.0, d=1, known=5,
                             prior="truncated:5"), "truncated:5"),
    (lambda: gibbs_sample(0, 0, 0, rho1=1.0, rho2=1.0, d=1, draws=0), "draws"),
]


@pytest.mark.parametrize(("call", "name"), BAD_INPUTS)
def test_out_of_range_inputs_raise_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_narrow_fixed_grid_is_refused_not_truncated():
    """A caller-fixed k2 window that would drop mass is an error (by design, not a ValueError)."""
    with pytest.raises(GridTooNarrowError, match="tail_mass"):
        exact_posterior(BIG, BIG + 40, 0, rho1=RHO_BLOCK, rho2=RHO_GROUP, d=10**4, known=BIG,
                        halfwidth=2)
