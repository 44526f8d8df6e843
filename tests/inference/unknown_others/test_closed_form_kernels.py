"""The windowed release sums of the unknown-others marginal against the previous implementation.

The marginal posterior used to sum, for every release, all ``n + 1`` binomial terms with the
running sums of one-step log-likelihood ratios (``_reference_log_marginal`` below, kept here
as the reference: 10-70 s at n = 10,000); it now reads the log-odds and the release pmf from
one table of :func:`log_convolution`, each entry a log-sum over the window of terms within
e^-60 of the largest. Tolerance 1e-12 relative: the left-out terms are below 1e-22 of each
sum, and the reference's running sums round at about 1e-16 of rho x n^2 (so at n = 10,000
the two differ by 4e-13 relative, at small n by 1e-14). Where those running sums lose more
(n = 300, rho = 2: exponents near 4e5), both are compared with a 40-digit mpmath sum: the
windowed sums stay within 1e-12 of it, the previous implementation was 1.2e-11 off.
"""

import numpy as np
import pytest

from dprisk.inference.single_level.closed_form_kernels import odds_term
from dprisk.inference.unknown_others import closed_form as uo
from dprisk.inference.unknown_others import closed_form_kernels as kernels
from dprisk.models.mechanism.discrete_gaussian import logpmf_kernel
from dprisk.models.numerics import libm_log_expit, logit, logsumexp
from dprisk.models.unknown_others import UnknownOthers
from dprisk.runtime.work_limit import LIMIT_ENV, WorkLimitError

RELATIVE = 1e-12


def _reference_log_odds(offset, rho, p, log_w):
    """The previous kernel: L = logit p + tau(o) + S(o - 1) - S(o), S by running sums."""
    n = log_w.size - 1
    o = offset[:, None].astype(float)
    terms = odds_term(o - np.arange(n + 1, dtype=float), rho)
    zero = np.zeros((terms.shape[0], 1))
    cum_0 = np.concatenate([zero, np.cumsum(terms[:, :-1], axis=1)], axis=1)
    cum_1 = np.concatenate([zero, np.cumsum(terms[:, 1:], axis=1)], axis=1)
    single = logit(p) + odds_term(offset.astype(float), rho)
    return single + logsumexp(log_w + cum_1) - logsumexp(log_w + cum_0)


def _reference_log_marginal(rho, p, others, truth_w):
    """The previous marginal: every release of the grid, every k, dense."""
    halfwidth = kernels._halfwidth(rho, p)
    support = np.flatnonzero(np.isfinite(truth_w))
    k_lo, k_hi = int(support[0]), int(support[-1])
    offsets = np.arange(1 + k_lo - halfwidth, 2 + k_hi + halfwidth, dtype=np.int64)
    centres = 1 + np.arange(k_lo, k_hi + 1, dtype=np.int64)
    log_post = libm_log_expit(_reference_log_odds(offsets, rho, p, others.log_weights()))
    log_release = logsumexp(truth_w[k_lo:k_hi + 1]
                            + logpmf_kernel(offsets[:, None], centres[None, :], rho))
    return float(logsumexp(log_post + log_release))


@pytest.mark.parametrize("n", [1, 2, 7, 40])
@pytest.mark.parametrize("q", [0.0, 0.05, 0.5, 1.0])
@pytest.mark.parametrize("rho", [0.003, 0.0992, 2.0])
def test_marginal_equals_the_previous_implementation(n, q, rho):
    others = UnknownOthers.checked(n, q)
    for p in (0.5, 1 / 864):
        for truth in (None, 0, n // 2, n):
            truth_w = kernels.truth_log_weights(others, truth)
            if not np.isfinite(truth_w).any() or (
                    truth is not None and not np.isfinite(others.log_weights()[truth])):
                continue
            got = float(kernels.log_marginal_posterior(rho, p, others, truth_w))
            want = _reference_log_marginal(rho, p, others, truth_w)
            assert np.exp(got) == pytest.approx(np.exp(want), rel=RELATIVE, abs=0)


@pytest.mark.parametrize(("q", "p", "truth"), [(0.05, 0.5, 300), (0.05, 0.5, 150),
                                               (0.5, 1 / 864, 300)])
def test_marginal_against_a_40_digit_sum_where_running_sums_round(q, p, truth):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    n, rho = 300, mp.mpf(2)
    w = [mp.binomial(n, k) * mp.mpf(q) ** k * (1 - mp.mpf(q)) ** (n - k) for k in range(n + 1)]
    norm = mp.nsum(lambda j: mp.exp(-rho * j * j), [-mp.inf, mp.inf])
    total = mp.mpf(0)
    # exp(-rho d^2) for every offset d = x - k or x - 1 - k met below, each computed once
    # (the same mpmath values as computing them in the sums, 1/30 of the exponentials)
    gauss = {d: mp.exp(-rho * d * d) for d in range(truth - 16 - n, truth + 18)}
    for x in range(truth - 15, truth + 18):  # the truth's release mass beyond is below 1e-190
        like1 = sum(w[k] * gauss[x - 1 - k] for k in range(n + 1))
        like0 = sum(w[k] * gauss[x - k] for k in range(n + 1))
        total += (p * like1 / (p * like1 + (1 - p) * like0)
                  * mp.exp(-rho * (x - 1 - truth) ** 2) / norm)
    others = UnknownOthers.checked(n, q)
    got = np.exp(float(kernels.log_marginal_posterior(
        2.0, p, others, kernels.truth_log_weights(others, truth))))
    assert got == pytest.approx(float(total), rel=RELATIVE, abs=0)


@pytest.mark.parametrize(("n", "q", "rho"), [(10_000, 0.5, 0.0992), (10_000, 0.01, 0.001),
                                             (500, 0.3, 1e-5), (50, 0.5, 40.0)])
def test_log_convolution_equals_the_dense_sum(n, q, rho):
    """Every y, from far below the support to far above: the window loses nothing."""
    log_w = UnknownOthers.checked(n, q).log_weights()
    y = np.unique(np.linspace(-3 * n - 50, 4 * n + 50, 400).astype(np.int64))
    k = np.arange(n + 1)
    dense = logsumexp(log_w - rho * (y[:, None] - k).astype(float) ** 2)
    got = kernels.log_convolution(y, log_w, rho)
    # log space: 1e-14 absolute is 1e-14 relative in the sum itself
    np.testing.assert_allclose(got, dense, rtol=1e-14, atol=1e-14)


def test_n_10000_equals_the_previous_value():
    """Reference values from the previous implementation (70 s each; see the module docstring).

    ``exp(_reference_log_marginal(rho, 0.5, UnknownOthers.checked(10000, q), log_weights))``
    at rho = 0.09922635422547502 (the Census block), q = 0.5, and rho = 1, q = 0.5.
    """
    rho_block = 0.09922635422547502
    assert uo.marginal_posterior(rho_block, 0.5, unknown_others=10_000, q=0.5) == (
        pytest.approx(0.5000498944437562, rel=RELATIVE, abs=0))
    assert uo.marginal_posterior(1.0, 0.5, unknown_others=10_000, q=0.5) == (
        pytest.approx(0.5000499850248359, rel=RELATIVE, abs=0))


def test_marginal_is_refused_above_the_work_budget(monkeypatch):
    others = UnknownOthers.checked(10_000, 0.5)
    terms = kernels.marginal_terms(0.0992, 0.5, others, others.log_weights())
    assert 1e5 < terms < 1e7  # a window of tens of terms per release, not n + 1
    monkeypatch.setenv(LIMIT_ENV, "1e5")
    with pytest.raises(WorkLimitError, match=r"^unknown_others and rho: .*10000 unknown"):
        uo.marginal_posterior(0.0992, 0.5, unknown_others=10_000, q=0.5)
    with pytest.raises(WorkLimitError, match=r"^unknown_others and rho"):
        uo.marginal_risk(0.0992, 0.5, unknown_others=10_000, q=0.5)


def test_p_correct_and_accuracy_are_refused_above_the_work_limit(monkeypatch):
    """Their exact DG tails, (n + 1) x 2 (h + 2) terms a set, were not sized at all.

    At rho = 1e-13, n = 10000 one set is 4.3e11 terms (hours; 1.5e9 terms took 15 s of CPU at
    rho = 1e-8), refused under the default limit; at the Census block's rho a limit of 1e5
    steps refuses the 4.6e5 terms that used to run.
    """
    others = UnknownOthers.checked(10_000, 0.001)
    terms = kernels.tail_terms(1e-13, 0.5, others.log_weights())
    assert 4e11 < terms < 5e11
    with monkeypatch.context() as patch:
        patch.setenv(LIMIT_ENV, "1e5")
        with pytest.raises(WorkLimitError, match=r"^unknown_others and rho: P\[correct"):
            uo.p_correct(0.0992, 0.5, unknown_others=10_000, q=0.5)
        with pytest.raises(WorkLimitError, match=r"^unknown_others and rho: the accuracy"):
            uo.accuracy(0.0992, 0.5, unknown_others=10_000, q=0.5)
    with pytest.raises(WorkLimitError, match=r"^unknown_others and rho: P\[correct"):
        uo.p_correct(1e-13, 0.5, unknown_others=10_000, q=0.001)


@pytest.mark.parametrize(("n", "q"), [(1, 0.5), (7, 0.3), (50, 0.9), (301, 0.5)])
def test_tabled_bisection_equals_the_step_by_step_one(monkeypatch, n, q):
    """T(y) tabulated once per rho decides every release as evaluated step by step."""
    others = UnknownOthers.checked(n, q)
    rho = np.array([[1e-3], [0.0992], [0.5], [2.0], [40.0]])
    p = np.array([1e-6, 0.2, 0.5, 0.8])
    tabled = kernels.decision_threshold(rho, p, np.zeros((1, 1), np.int64), others)
    kernels._thresholds_at_zero.cache_clear()
    monkeypatch.setattr(kernels, "_TABLE_SPAN", 0)  # every bracket stepped
    stepped = kernels.decision_threshold(rho, p, np.zeros((1, 1), np.int64), others)
    kernels._thresholds_at_zero.cache_clear()
    np.testing.assert_array_equal(tabled, stepped)


def test_kept_thresholds_are_keyed_on_rho_p_and_the_others():
    """A threshold kept for one (rho, p, n, q) is not returned for another, nor changed."""
    kernels._thresholds_at_zero.cache_clear()
    first = uo.decision_threshold(0.5, 0.5, 0, unknown_others=5, q=0.3)
    assert uo.decision_threshold(0.5, 0.5, 0, unknown_others=5, q=0.3) == first
    assert uo.decision_threshold(0.5, 0.5, 2, unknown_others=5, q=0.3) == first + 2
    assert uo.decision_threshold(0.5, 0.5, 0, unknown_others=5, q=0.9) != first
    assert uo.decision_threshold(0.5, 0.9, 0, unknown_others=5, q=0.3) < first
    kernels._thresholds_at_zero.cache_clear()
    assert uo.decision_threshold(0.5, 0.5, 0, unknown_others=5, q=0.3) == first
