"""The adversary who does not know everyone: n = 0 is the single level, brute force for small n.

Tolerances: the n = 0 comparisons are 1e-13 relative (the same log-odds bit for bit; the
release sums and tails differ only by rounding); the brute-force references sum the joint
pmf of (B_t, K, x*) directly (independent code: scipy's binomial pmf, the DG pmf, a plain
sum over a release window whose neglected mass is below 1e-30), so they agree to 1e-11.
"""

import numpy as np
import pytest
from fresh_python import packages_loaded_by
from scipy import stats

from dprisk.inference.single_level import closed_form as sl
from dprisk.inference.unknown_others import closed_form as uo
from dprisk.models.mechanism.discrete_gaussian import pmf
from dprisk.models.unknown_others import MAX_UNKNOWN_OTHERS, UnknownOthers

RHOS = [0.0992, 0.5, 2.0]
PS = [1 / 864, 0.3, 0.5, 0.9]
SMALL = [(1, 0.3), (2, 0.5), (3, 0.0), (3, 1.0), (5, 0.1)]


def brute_posterior(x, rho, p, m, n, q):
    """P[B_t = 1 | x*] by summing p(b) Bin(k) f(x* - m - b - k) over b and k."""
    k = np.arange(n + 1)
    w = stats.binom.pmf(k, n, q)
    like1 = np.sum(w * pmf(x - m - 1 - k, 0, rho))
    like0 = np.sum(w * pmf(x - m - k, 0, rho))
    return p * like1 / (p * like1 + (1 - p) * like0)


def brute_measures(rho, p, n, q, true_k=None):
    """(marginal posterior, threshold, P[correct]) at truth B_t = 1 by a plain release sum."""
    k = np.arange(n + 1)
    v = stats.binom.pmf(k, n, q) if true_k is None else (k == true_k).astype(float)
    half = 3 + int(9 / np.sqrt(rho))  # neglected release mass below exp(-81)
    xs = np.arange(-half, n + half)
    post = np.array([brute_posterior(x, rho, p, 0, n, q) for x in xs])
    release = np.array([np.sum(v * pmf(x - 1 - k, 0, rho)) for x in xs])
    threshold = xs[np.argmax(post > 0.5)]
    return np.sum(post * release), threshold, np.sum(release[post > 0.5])


# --------------------------------------------------------------------------- n = 0
@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("p", PS)
def test_n0_is_the_single_level(rho, p):
    x = np.arange(-20, 30)
    for q in (None, 0.4):
        # n = 0 is the single-level formula through the unknown-others kernel: equal here,
        # a few ulps apart where the kernels' exp/log differ (issue 32): 1e-13 (log-odds ~ 1)
        np.testing.assert_allclose(uo.log_posterior_odds(x, rho, p, 3, q=q),
                                   sl.log_posterior_odds(x, rho, p, 3), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(uo.posterior(x, rho, p, 3, q=q), sl.posterior(x, rho, p, 3),
                                   rtol=1e-13, atol=0)
        np.testing.assert_allclose(uo.risk(x, rho, p, 3, q=q), sl.risk(x, rho, p, 3),
                                   rtol=1e-13, atol=0)
    assert uo.decision_threshold(rho, p, 3) == sl.decision_threshold(rho, p, 3)
    for ours, theirs in ((uo.marginal_posterior, sl.marginal_posterior),
                         (uo.marginal_risk, sl.marginal_risk), (uo.p_correct, sl.p_correct)):
        assert ours(rho, p, 3) == pytest.approx(theirs(rho, p, 3), rel=1e-13, abs=0)


def test_n0_vectorised_like_the_single_level():
    rho, p = np.array([[0.05], [0.0992], [1.0]]), np.array([1 / 864, 0.5])
    np.testing.assert_allclose(uo.marginal_risk(rho, p), sl.marginal_risk(rho, p), rtol=1e-13)
    np.testing.assert_allclose(uo.p_correct(rho, p), sl.p_correct(rho, p), rtol=1e-13)
    assert np.array_equal(uo.decision_threshold(rho, p, 2), sl.decision_threshold(rho, p, 2))
    assert uo.marginal_risk(rho, p).shape == (3, 2)


# --------------------------------------------------------------------------- brute force
@pytest.mark.parametrize(("n", "q"), SMALL)
def test_posterior_against_enumeration(n, q):
    rho, p, m = 0.3, 0.2, 4
    x = np.arange(-8, 20)
    ours = uo.posterior(x, rho, p, m, unknown_others=n, q=q)
    ref = [brute_posterior(v, rho, p, m, n, q) for v in x]
    np.testing.assert_allclose(ours, ref, rtol=1e-11)
    np.testing.assert_allclose(uo.risk(x, rho, p, m, unknown_others=n, q=q), ours / p,
                               rtol=1e-14)


@pytest.mark.parametrize(("n", "q"), SMALL)
@pytest.mark.parametrize(("rho", "p"), [(0.0992, 0.5), (0.4, 0.05)])
def test_marginal_and_decision_against_enumeration(n, q, rho, p):
    marginal, threshold, correct = brute_measures(rho, p, n, q)
    kw = {"unknown_others": n, "q": q}
    assert uo.marginal_posterior(rho, p, 7, **kw) == pytest.approx(marginal, rel=1e-11)
    assert uo.marginal_risk(rho, p, **kw) == pytest.approx(marginal / p, rel=1e-11)
    assert uo.decision_threshold(rho, p, 7, **kw) == 7 + threshold
    assert uo.p_correct(rho, p, **kw) == pytest.approx(correct, rel=1e-11)


@pytest.mark.parametrize("n", [1, 3, 5, 7, 21])
@pytest.mark.parametrize("rho", [0.1, 0.3, 0.7, 1.0])
def test_exact_ties_go_to_not_c(n, rho):
    """At p = q = 1/2 with n odd the release pmfs under the two answers are mirror images
    (K + eta is symmetric about n/2), so at x* - m = (n + 1)/2 the posterior is exactly 1/2
    and the rule (decide c iff it exceeds 1/2) says "not c": the threshold is m + (n + 3)/2
    and P[correct | c] = P[K + eta > n/2] = 1/2 exactly. The two sums' rounding used to
    decide that release either way (rho = 0.7, n = 1: threshold 1, P[correct] 0.853; a
    third of the releases are ties there). Tolerances: P[correct] sums n + 1 <= 22 tails,
    each to a few ulps: 1e-14; the posterior at the tie is expit of a log-odds that is 0 to
    the rounding of its terms (at most 8 eps times their magnitude, about rho n^2 / 4 <= 111
    here: 2e-13, a quarter of it in the posterior): 1e-13."""
    kw = {"unknown_others": n, "q": 0.5}
    assert uo.decision_threshold(rho, 0.5, 2, **kw) == 2 + (n + 3) // 2
    assert uo.p_correct(rho, 0.5, **kw) == pytest.approx(0.5, abs=1e-14)
    assert uo.posterior(2 + (n + 1) // 2, rho, 0.5, 2, **kw) == pytest.approx(0.5, abs=1e-13)


@pytest.mark.parametrize("true_k", [0, 2, 4])
def test_stated_truth_against_enumeration(true_k):
    marginal, _, correct = brute_measures(0.2, 0.4, 4, 0.3, true_k)
    kw = {"unknown_others": 4, "q": 0.3, "true_others": true_k}
    assert uo.marginal_posterior(0.2, 0.4, **kw) == pytest.approx(marginal, rel=1e-11)
    assert uo.p_correct(0.2, 0.4, **kw) == pytest.approx(correct, rel=1e-11)


def test_binomial_truth_is_the_average_of_stated_truths():
    n, q = 6, 0.35
    w = stats.binom.pmf(np.arange(n + 1), n, q)
    for f in (uo.marginal_posterior, uo.p_correct):
        stated = [f(0.15, 0.3, unknown_others=n, q=q, true_others=k) for k in range(n + 1)]
        assert f(0.15, 0.3, unknown_others=n, q=q) == pytest.approx(np.dot(w, stated),
                                                                     rel=1e-12)


@pytest.mark.parametrize("n", [1, 4, 30])
def test_q_at_the_ends_is_a_known_count(n):
    """q = 0: nobody unknown has c (known count m); q = 1: all do (known count m + n)."""
    x = np.arange(-5, 45)
    np.testing.assert_allclose(uo.posterior(x, 0.2, 0.3, 2, unknown_others=n, q=0.0),
                               sl.posterior(x, 0.2, 0.3, 2), rtol=1e-12)
    np.testing.assert_allclose(uo.posterior(x, 0.2, 0.3, 2, unknown_others=n, q=1.0),
                               sl.posterior(x, 0.2, 0.3, 2 + n), rtol=1e-12)
    assert uo.decision_threshold(0.2, 0.3, 2, unknown_others=n, q=1.0) == \
        sl.decision_threshold(0.2, 0.3, 2 + n)
    assert uo.p_correct(0.2, 0.3, unknown_others=n, q=1.0) == \
        pytest.approx(sl.p_correct(0.2, 0.3), rel=1e-12)


def test_risk_at_least_one_and_falls_with_n():
    """R >= 1 under the adversary's own model; more unknown others dilute the release."""
    risks = [uo.marginal_risk(0.0992, 0.5, unknown_others=n, q=0.5) for n in (0, 1, 5, 20, 50)]
    assert all(r >= 1 for r in risks)
    assert np.all(np.diff(risks) < 0)


def test_posterior_increases_with_the_release():
    x = np.arange(-30, 80)
    post = uo.posterior(x, 0.0992, 0.01, 0, unknown_others=40, q=0.3)
    assert np.all(np.diff(post) > 0) and post.shape == x.shape


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize(("kwargs", "name"), [
    ({"unknown_others": -1, "q": 0.5}, "unknown_others"),
    ({"unknown_others": 2.5, "q": 0.5}, "unknown_others"),
    ({"unknown_others": MAX_UNKNOWN_OTHERS + 1, "q": 0.5}, "unknown_others"),
    ({"unknown_others": 3}, "q"),
    ({"unknown_others": 3, "q": 1.5}, "q"),
    ({"unknown_others": 3, "q": -0.1}, "q"),
    ({"unknown_others": 3, "q": float("nan")}, "q"),
    ({"unknown_others": 0, "q": 2.0}, "q"),
    ({"unknown_others": 3, "q": 0.5, "true_others": 4}, "true_others"),
    ({"unknown_others": 3, "q": 0.0, "true_others": 1}, "true_others"),
])
def test_bad_parameters_are_refused_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        uo.marginal_risk(0.1, 0.5, **kwargs)


def test_refused_types():
    with pytest.raises(TypeError, match="unknown_others"):
        UnknownOthers.checked("3", 0.5)
    with pytest.raises(TypeError, match="q"):
        UnknownOthers.checked(3, "0.5")
    assert UnknownOthers.checked(0) == UnknownOthers(0, 0.0)
    np.testing.assert_array_equal(UnknownOthers.checked(0, 0.7).log_weights(), [0.0])



@pytest.mark.parametrize(("n", "q"), SMALL)
def test_p_correct_without_c_against_enumeration(n, q):
    rho, p = 0.2, 0.4
    k = np.arange(n + 1)
    v = stats.binom.pmf(k, n, q)
    half = 3 + int(9 / np.sqrt(rho))
    xs = np.arange(-half, n + half)
    post = np.array([brute_posterior(x, rho, p, 0, n, q) for x in xs])
    release = np.array([np.sum(v * pmf(x - k, 0, rho)) for x in xs])  # truth B_t = 0
    expected = np.sum(release[post <= 0.5])
    got = uo.p_correct(rho, p, unknown_others=n, q=q, target=0)
    assert got == pytest.approx(expected, rel=1e-11)


def test_target_is_0_or_1():
    with pytest.raises(ValueError, match=r"\btarget\b"):
        uo.p_correct(0.1, 0.5, target=2)


def test_exact_path_loads_no_sampler_libraries():
    loaded = packages_loaded_by("import dprisk.inference.unknown_others.closed_form as uo\n"
                                "uo.marginal_risk(0.1, 0.5, unknown_others=3, q=0.2)\n")
    assert sorted(loaded & {"pymc", "pytensor", "arviz", "dask", "numba"}) == []


@pytest.mark.parametrize(("n", "q"), SMALL)
def test_accuracy_is_the_best_test_by_enumeration(n, q):
    """A = sum over releases of max(p P1(x), (1 - p) P0(x)), the Bayes rule's accuracy.

    Brute force: the joint pmf of (B_t, K, x*) summed directly over a release window whose
    neglected mass is below exp(-81); 1e-11 relative (rounding of the two sums).
    """
    rho, p = np.array([0.2, 0.7]), 0.4
    k = np.arange(n + 1)
    v = stats.binom.pmf(k, n, q)
    for i, r in enumerate(rho):
        half = 3 + int(9 / np.sqrt(r))
        xs = np.arange(-half, n + half)
        with_c = np.array([p * np.sum(v * pmf(x - 1 - k, 0, r)) for x in xs])
        without = np.array([(1 - p) * np.sum(v * pmf(x - k, 0, r)) for x in xs])
        expected = np.sum(np.maximum(with_c, without))
        got = uo.accuracy(rho, p, unknown_others=n, q=q)
        assert got[i] == pytest.approx(expected, rel=1e-11)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("rho", RHOS)
def test_accuracy_with_no_unknown_others_is_the_single_levels(rho, p):
    """n = 0: the single level's prior-weighted accuracy, to 1e-13 relative."""
    want = sl.design_summary(rho, p, 2)["accuracy"]
    assert uo.accuracy(rho, p, 2, unknown_others=0) == pytest.approx(want, rel=1e-13)


def test_accuracy_weighs_the_two_truths_by_the_prior():
    got = uo.accuracy(0.3, 0.25, unknown_others=4, q=0.6, true_others=1)
    parts = [uo.p_correct(0.3, 0.25, unknown_others=4, q=0.6, true_others=1, target=t)
             for t in (1, 0)]
    assert got == pytest.approx(0.25 * parts[0] + 0.75 * parts[1], rel=1e-15)


@pytest.mark.parametrize("p", [0.999999999999, 0.9999, 0.5])
@pytest.mark.parametrize(("n", "q"), [(10, 0.1), (5, 0.3), (20, 0.5), (200, 0.9)])
def test_decision_probabilities_are_at_most_one(n, q, p):
    """P[correct] (either truth) and the accuracy are probabilities: never above 1.

    Where every tail is about 1 the binomial's log weights, which sum to 1 only to a few ulp,
    put the sums up to 6e-15 above 1 (rho = 0.0992, p = 1 - 1e-12, n = 10, q = 0.1 gave
    P[correct] = 1.0000000000000007); the bound is exact, no tolerance.
    """
    for rho in (0.0992, 1.0, 1e-3):
        for target in (0, 1):
            assert uo.p_correct(rho, p, unknown_others=n, q=q, target=target) <= 1.0
        assert uo.accuracy(rho, p, unknown_others=n, q=q) <= 1.0


@pytest.mark.parametrize("rho", [1e4, 1e10, 1e100])
@pytest.mark.parametrize(("n", "q", "p"), [(10, 0.5, 0.5), (10_000, 0.5, 0.5), (50, 0.3, 0.2)])
def test_large_rho_is_the_noise_free_release(rho, n, q, p):
    """At rho >= 1e4 the noise is 0 but for a probability below 2 e^{-1e4}: x* = m + B + K
    exactly, so P[B = 1 | x*] = p w(o - 1) / (p w(o - 1) + (1 - p) w(o)), o = x* - m, with
    w the Binomial(n, q) pmf; the threshold is the first o where that exceeds 1/2 and
    P[correct] = P[1 + K >= t]. The log-odds summed relative to the k = 0 term cancelled
    terms of size rho k**2: the posterior at rho = 1e100 was 0 (for 210/462 at n = 10,
    o = 5), P[correct] at n = 10000 was 0.488 at rho = 1e4 and 0 from 1e10 (for 0.50399).
    Tolerance 1e-9 relative: the reference and the code sum up to 1e4 binomial terms, each
    to about 1e-14."""
    binom = stats.binom(n, q)
    o = np.arange(1, n + 1)
    with np.errstate(divide="ignore"):
        log_odds = np.log(p / (1 - p)) + binom.logpmf(o - 1) - binom.logpmf(o)
    reference = 1 / (1 + np.exp(-log_odds))
    picks = np.unique(np.clip([1, n // 2, n // 2 + 1, 5, n], 1, n))
    got = [uo.posterior(int(k), rho, p, 0, unknown_others=n, q=q) for k in picks]
    np.testing.assert_allclose(got, reference[picks - 1], rtol=1e-9)
    threshold = int(o[np.argmax(log_odds > 0)])
    assert uo.decision_threshold(rho, p, 0, unknown_others=n, q=q) == threshold
    correct = binom.sf(threshold - 2)  # P[K >= t - 1]
    assert uo.p_correct(rho, p, 0, unknown_others=n, q=q) == pytest.approx(correct, rel=1e-9)
    accurate = p * correct + (1 - p) * binom.cdf(threshold - 1)
    assert uo.accuracy(rho, p, 0, unknown_others=n, q=q) == pytest.approx(accurate, rel=1e-9)


def test_marginal_risk_never_exceeds_one_over_p():
    """R <= 1/p, as at n = 0: exp(log marginal - log p) exceeded fl(1/p) at 50 of these 800
    designs with one unknown other (q = 0: the single-level values; rho = 1000, p = 1/864 gave
    864.0000000000005); now the quotient of the two probabilities, one rounding."""
    for rho in np.geomspace(1e-2, 1e3, 20):
        risk = np.array([uo.marginal_risk(rho, p, unknown_others=1, q=0.0)
                         for p in np.geomspace(1e-300, 0.999, 40)])
        assert np.all(risk <= 1.0 / np.geomspace(1e-300, 0.999, 40)), rho
    assert uo.marginal_risk(1000.0, 1 / 864, unknown_others=1, q=0.0) == 864.0
