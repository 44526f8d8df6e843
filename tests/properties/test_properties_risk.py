"""Property-based tests of the single-level risk measures (inference/single_level/closed_form.py).

Properties of the closed forms (paper §3.1, §4.2; supplement S1.1, S1.3, S5), over
rho in [1e-6, 1e4], p in [1e-12, 1 - 1e-12], releases within 1e4 of m and m up to 1e7:

* the posterior lies in [0, 1], is non-decreasing in x1* and in p, and is symmetric:
  P(x; p) + P(2m + 1 - x; 1 - p) = 1; p * R' <= 1;
* everything shifts exactly with m (non-unique targets, S1.1);
* the decision threshold is where the log-odds turn positive, and the Bayes decision is at
  least as accurate as guessing from the prior alone;
* the marginal posterior is the release-weighted posterior, lies in [p, 1] (R in [1, 1/p]);
* a target unique at one level is the single-level target; levels commute;
* R' composes multiplicatively over releases: cumulative = product of per-release factors =
  all releases at once, and splitting a sequence in two composes;
* one array call equals element-wise calls.

EPS is the double-precision epsilon; tolerances are stated at each assertion.
"""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dprisk.inference.nested import unique_levels as ulv
from dprisk.inference.single_level import closed_form as sl
from dprisk.inference.single_level import sequential
from dprisk.models.mechanism import discrete_gaussian as dg

EPS = np.finfo(float).eps

RHO = st.floats(-6.0, 4.0).map(lambda e: 10.0**e)
RHO_MODERATE = st.floats(-2.0, 1.0).map(lambda e: 10.0**e)  # cheap exact enumerations
P = st.one_of(
    st.floats(-12.0, math.log10(0.5)).map(lambda e: 10.0**e),
    st.floats(-12.0, math.log10(0.5)).map(lambda e: 1.0 - 10.0**e),
)
KNOWN = st.integers(0, 10**7)
OFFSET = st.integers(-(10**4), 10**4)  # x1* - m


# ---------------------------------------------------------------- one release
@given(rho=RHO, p=P, known=KNOWN, offset=OFFSET)
def test_posterior_bounded_monotone_and_symmetric(rho, p, known, offset):
    x = known + offset + np.arange(-3, 4)
    post = sl.posterior(x, rho, p, known)
    assert np.all((post >= 0) & (post <= 1))
    assert np.all(np.diff(post) >= 0)
    assert np.all(sl.log_posterior(x, rho, p, known) <= 0)
    # more prior mass on m+1 never lowers the posterior
    assert np.all(sl.posterior(x, rho, min(2 * p, 0.5 + p / 2), known) >= post)
    # mirror image: release 2m + 1 - x with prior 1 - p has log-odds -L; the rounding of
    # 1 - p (eps/2 absolute) moves logit by eps / (2 min(p, 1 - p)), the posterior by 1/4 of it
    mirrored = sl.posterior(2 * known + 1 - x, rho, 1 - p, known)
    np.testing.assert_allclose(post + mirrored, 1.0, rtol=0,
                               atol=2 * EPS + EPS / (8 * min(p, 1 - p)))


@given(rho=RHO, p=P, known=KNOWN, offset=OFFSET)
def test_risk_bounded_by_one_over_p(rho, p, known, offset):
    x = known + offset
    risk = float(sl.risk(x, rho, p, known))
    # R' = posterior / p is one rounding from the exact quotient, the product another
    assert 0 <= risk and p * risk <= 1 + 4 * EPS
    post = float(sl.posterior(x, rho, p, known))
    if post > 1e-300:
        assert risk == pytest.approx(post / p, rel=2 * EPS)


@given(rho=RHO, p=P, known=KNOWN, shift=st.integers(0, 10**7), offset=OFFSET)
def test_everything_shifts_exactly_with_m(rho, p, known, shift, offset):
    x = known + offset
    m2 = known + shift
    # x1* - m is formed in integers, so the shift is bitwise exact
    assert sl.posterior(x + shift, rho, p, m2) == sl.posterior(x, rho, p, known)
    assert sl.risk(x + shift, rho, p, m2) == sl.risk(x, rho, p, known)
    assert sl.decision_threshold(rho, p, m2) == sl.decision_threshold(rho, p, known) + shift
    assert sl.p_correct(rho, p, m2) == sl.p_correct(rho, p, known)
    assert sl.marginal_posterior(rho, p, m2) == sl.marginal_posterior(rho, p, known)


@given(rho=RHO, p=P, known=KNOWN)
def test_threshold_is_where_log_odds_turn_positive(rho, p, known):
    threshold = int(sl.decision_threshold(rho, p, known))
    assert sl.log_posterior_odds(threshold, rho, p, known) > 0
    assert sl.log_posterior_odds(threshold - 1, rho, p, known) <= 0


@given(rho=RHO, p=P)
def test_bayes_decision_beats_the_prior_guess(rho, p):
    threshold = int(sl.decision_threshold(rho, p))
    right_if_m_plus_1 = float(sl.p_correct(rho, p))  # P[X* >= threshold | x1 = 1]
    right_if_m = float(dg.cdf(threshold - 1, 0, rho))  # P[X* < threshold | x1 = 0]
    assert 0 <= right_if_m_plus_1 <= 1
    # the 0-1-loss Bayes rule is at least as accurate as always choosing the prior mode
    accuracy = p * right_if_m_plus_1 + (1 - p) * right_if_m
    assert accuracy >= max(p, 1 - p) - 4 * EPS
    # and the decision probability equals the DG survival function at the threshold
    assert right_if_m_plus_1 == pytest.approx(float(dg.sf(threshold - 1, 1, rho)),
                                              rel=1e-13, abs=1e-300)


# ---------------------------------------------------------------- marginal
@given(rho=RHO, p=P)
def test_marginal_between_prior_and_one(rho, p):
    marginal = float(sl.marginal_posterior(rho, p))
    risk = float(sl.marginal_risk(rho, p))
    # R >= 1 (Cauchy-Schwarz) and R <= 1/p, up to the log-sum rounding (~1e-15 relative)
    assert p * (1 - 1e-14) <= marginal <= 1 + 1e-15
    assert 1 - 1e-14 <= risk <= (1 / p) * (1 + 1e-14)


@given(rho=RHO_MODERATE, p=P)
def test_marginal_is_release_weighted_posterior(rho, p):
    halfwidth = int(dg.support_halfwidth(rho, 1e-30 * p))
    x = 1 + np.arange(-halfwidth, halfwidth + 1)
    weighted = math.fsum(sl.posterior(x, rho, p) * sl.release_pmf(x, rho))
    assert float(sl.marginal_posterior(rho, p)) == pytest.approx(weighted, rel=1e-13)


# ---------------------------------------------------------------- vectorised = scalar
@given(rhos=st.lists(RHO, min_size=1, max_size=6), ps=st.lists(P, min_size=1, max_size=6),
       known=KNOWN, offsets=st.lists(OFFSET, min_size=1, max_size=6))
def test_array_call_equals_elementwise_calls(rhos, ps, known, offsets):
    n = min(len(rhos), len(ps), len(offsets))
    rho, p, x = np.array(rhos[:n]), np.array(ps[:n]), known + np.array(offsets[:n])
    post = sl.posterior(x, rho, p, known)
    np.testing.assert_array_equal(
        post, [float(sl.posterior(a, b, c, known)) for a, b, c in zip(x, rho, p, strict=True)]
    )
    np.testing.assert_array_equal(
        sl.decision_threshold(rho, p, known),
        [int(sl.decision_threshold(b, c, known)) for b, c in zip(rho, p, strict=True)],
    )
    np.testing.assert_allclose(
        sl.p_correct(rho, p, known),
        [float(sl.p_correct(b, c, known)) for b, c in zip(rho, p, strict=True)],
        rtol=1e-14, atol=0,
    )
    # rows of an array call share the grid of the widest row; the extra terms are tiny
    np.testing.assert_allclose(
        sl.marginal_posterior(rho, p),
        [float(sl.marginal_posterior(b, c)) for b, c in zip(rho, p, strict=True)],
        rtol=1e-14, atol=0,
    )


# ---------------------------------------------------------------- several levels
@given(rho=RHO, p=P, known=KNOWN, offset=OFFSET)
def test_one_unique_level_is_the_single_level(rho, p, known, offset):
    x = known + offset
    assert float(ulv.posterior_unique_levels([x], [rho], p, known)) == pytest.approx(
        float(sl.posterior(x, rho, p, known)), rel=2 * EPS, abs=1e-300)


@given(rho=RHO_MODERATE, p=P)
def test_one_unique_level_marginal_and_decision(rho, p):
    assert float(ulv.marginal_posterior_unique_levels([rho], p)) == pytest.approx(
        float(sl.marginal_posterior(rho, p)), rel=1e-13)
    assert float(ulv.p_correct_unique_levels([rho], p)) == float(sl.p_correct(rho, p))


@given(levels=st.lists(st.tuples(RHO, OFFSET), min_size=2, max_size=5), p=P, known=KNOWN,
       data=st.data())
def test_levels_commute(levels, p, known, data):
    rhos = np.array([r for r, _ in levels])
    x = known + np.array([o for _, o in levels])
    order = data.draw(st.permutations(range(len(levels))))
    odds = ulv.log_posterior_odds_unique_levels(x, rhos, p, known)
    permuted = ulv.log_posterior_odds_unique_levels(x[order], rhos[order], p, known)
    # the sum of the terms in another order: a few ulp of the largest partial sum
    terms = np.abs(rhos * (2.0 * (x - known) - 1.0))
    scale = abs(math.log(p) - math.log1p(-p)) + terms.sum()
    assert float(permuted) == pytest.approx(float(odds), rel=0, abs=8 * EPS * scale)


# 8 examples under "ci" (a third of the profile's count; 0.04 s of CPU each, issue 36): the
# same agreement is checked by explicit cases at the census rhos and five priors (1e-300 to
# 1 - 1e-6) in tests/inference/nested/test_unique_levels_kernels.py
@settings(max_examples=max(8, settings.default.max_examples // 3))  # 8 under "ci"
@given(rhos=st.lists(RHO_MODERATE, min_size=2, max_size=2), p=P)
def test_unique_levels_enumeration_and_contour_agree(rhos, p):
    enumerated = ulv.log_marginal_posterior_unique_levels(rhos, p, method="enumerate")
    contour = ulv.log_marginal_posterior_unique_levels(rhos, p, method="contour")
    # the contour integral is documented to ~1e-13 relative (more for extreme p)
    assert float(contour) == pytest.approx(float(enumerated), rel=1e-11, abs=1e-12)


# ---------------------------------------------------------------- sequential releases
SEQUENCE = st.lists(st.tuples(RHO, st.integers(-30, 30)), min_size=1, max_size=8)


@given(releases=SEQUENCE, p=P, known=KNOWN)
def test_sequential_risk_composes_multiplicatively(releases, p, known):
    rhos = np.array([r for r, _ in releases])
    x = known + np.array([o for _, o in releases])
    seq = sequential.sequential_risk(x, rhos, p, known)
    post = sequential.sequential_posterior(x, rhos, p, known)
    assert np.all(np.isfinite(seq.cumulative)) and np.all(seq.cumulative * p <= 1 + 4 * EPS)
    # all at once: the last posterior is the unique-levels posterior of all the releases
    np.testing.assert_array_equal(post[-1], ulv.posterior_unique_levels(x, rhos, p, known))
    # exp(log_expit(L) - log p) against expit(L) / p: both carry ~eps x |exponent|
    exponent = abs(float(ulv.log_posterior_odds_unique_levels(x, rhos, p, known))) + abs(
        math.log(p))
    assert float(seq.cumulative[-1]) == pytest.approx(float(post[-1]) / p,
                                                      rel=8 * EPS * (4 + exponent), abs=1e-300)
    # cumulative = running product of the per-release factors, compared in logs where the
    # factors are representable (a factor can exceed the float range: see sequential_risk)
    tiny, huge = np.finfo(float).tiny, np.finfo(float).max
    normal = lambda v: (v >= tiny) & (v <= huge)  # noqa: E731 - subnormals have few digits
    usable = np.logical_and.accumulate(normal(seq.per_release)) & normal(seq.cumulative)
    log_factors = np.log(np.where(usable, seq.per_release, 1.0))
    log_cumulative = np.log(np.where(usable, seq.cumulative, 1.0))
    scale = np.cumsum(np.abs(log_factors)) + abs(math.log(p)) + 1
    error = np.abs(np.cumsum(log_factors) - log_cumulative)
    assert np.all((error <= 16 * EPS * scale)[usable])


SEQUENCE_MILD = st.lists(st.tuples(RHO_MODERATE, st.integers(-3, 4)), min_size=1, max_size=5)


@given(releases=SEQUENCE_MILD, more=SEQUENCE_MILD, p=P)
def test_sequential_posterior_of_a_split_sequence(releases, more, p):
    """Posterior after the first part is the prior of the second (S5), and R' multiplies."""
    rhos_a, x_a = np.array([r for r, _ in releases]), np.array([o for _, o in releases])
    rhos_b, x_b = np.array([r for r, _ in more]), np.array([o for _, o in more])
    middle = float(sequential.sequential_posterior(x_a, rhos_a, p)[-1])
    assume(1e-12 <= middle <= 1 - 1e-12)  # a prior must lie strictly inside (0, 1)
    whole = sequential.sequential_posterior(np.r_[x_a, x_b], np.r_[rhos_a, rhos_b], p)
    second = sequential.sequential_posterior(x_b, rhos_b, middle)
    # Rounding of the log-odds: the middle posterior re-enters through logit(middle), off by
    # ~eps / min(middle, 1 - middle); the sums carry ~eps x their terms. A log-odds error dL
    # moves the posterior by at most dL relative and R' = e^{log_expit - log p} likewise.
    terms = np.abs(np.r_[rhos_a * (2.0 * x_a - 1), rhos_b * (2.0 * x_b - 1)]).sum()
    d_log_odds = 8 * EPS * (1 / min(middle, 1 - middle) + abs(math.log(p)) + terms)
    np.testing.assert_allclose(second, whole[len(releases):], rtol=d_log_odds, atol=0)
    r_first = sequential.sequential_risk(x_a, rhos_a, p).cumulative[-1]
    r_second = sequential.sequential_risk(x_b, rhos_b, middle).cumulative[-1]
    r_all = sequential.sequential_risk(np.r_[x_a, x_b], np.r_[rhos_a, rhos_b], p).cumulative[-1]
    assert r_all == pytest.approx(r_first * r_second, rel=d_log_odds + 128 * EPS)
