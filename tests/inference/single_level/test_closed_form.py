"""Tests of inference.single_level against brute-force Bayes, mpmath and exact enumeration.

Tolerances: closed forms against brute-force double-precision Bayes agree to rounding
(rtol 1e-12 allows a few hundred ulp for the exp/log chains); mpmath references are computed
at 50 digits, so the same rtol applies; sums over releases use wide explicit grids whose
neglected mass is below 1e-30.
"""

import mpmath
import numpy as np
import pytest
from census_values import RHO_BLOCK

from dprisk.inference.nested import unique_levels as ulv
from dprisk.inference.single_level import closed_form as sl
from dprisk.inference.single_level import sequential
from dprisk.models.mechanism import discrete_gaussian as dg

RHOS = [0.01, RHO_BLOCK, 0.5, 3.0]
PRIORS = [0.5, 0.2, 1 / 864, 1e-9]
RTOL = 1e-12


def bayes_posterior(x_star, rho, p, m):
    """Direct Bayes with the discrete Gaussian pmf (independent of the log-odds form)."""
    like_1 = dg.pmf(x_star, m + 1, rho)
    like_0 = dg.pmf(x_star, m, rho)
    return p * like_1 / (p * like_1 + (1 - p) * like_0)


def mp_posterior(x_star, rho, p, m):
    mpmath.mp.dps = 50
    num = mpmath.mpf(p) * mpmath.exp(-mpmath.mpf(rho) * (x_star - m - 1) ** 2)
    den = num + (1 - mpmath.mpf(p)) * mpmath.exp(-mpmath.mpf(rho) * (x_star - m) ** 2)
    return num / den


# --------------------------------------------------------------------------- posterior
@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("p", PRIORS[:3])
@pytest.mark.parametrize("m", [0, 3])
def test_posterior_equals_direct_bayes(rho, p, m):
    x = np.arange(m - 8, m + 10)
    np.testing.assert_allclose(sl.posterior(x, rho, p, m), bayes_posterior(x, rho, p, m),
                               rtol=RTOL)
    np.testing.assert_allclose(sl.risk(x, rho, p, m), bayes_posterior(x, rho, p, m) / p,
                               rtol=RTOL)


@pytest.mark.parametrize(("x_star", "rho", "p"), [
    (10_000, 10_000.0, 1e-9), (-10_000, 10_000.0, 1e-9), (50, 0.5, 1e-9), (-50, 0.5, 1e-9),
    (3, RHO_BLOCK, 1 / 864), (40, RHO_BLOCK, 1e-9), (-40, RHO_BLOCK, 1 - 1e-12),
])
def test_log_space_extremes_against_mpmath(x_star, rho, p):
    ref = mp_posterior(x_star, rho, p, 0)
    log_ref = float(mpmath.log(ref))
    assert float(sl.log_posterior(x_star, rho, p)) == pytest.approx(log_ref, rel=RTOL, abs=1e-15)
    assert float(sl.log_risk(x_star, rho, p)) == pytest.approx(
        float(mpmath.log(ref / mpmath.mpf(p))), rel=RTOL, abs=1e-12)
    assert float(sl.posterior(x_star, rho, p)) == pytest.approx(float(ref), rel=RTOL, abs=0)
    assert np.isfinite(sl.log_posterior_odds(x_star, rho, p))


def test_no_warnings_or_nans_at_extremes():
    x = np.array([-10_000, -1, 0, 1, 10_000])
    for p in (1e-9, 1 / 864, 0.5, 1 - 1e-9):
        for rho in (1e-6, RHO_BLOCK, 1e4):
            values = [sl.posterior(x, rho, p), sl.risk(x, rho, p), sl.log_risk(x, rho, p)]
            assert all(np.all(~np.isnan(v)) for v in values)
            assert np.all(sl.risk(x, rho, p) <= 1 / p * (1 + 1e-15))


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("p", PRIORS)
def test_monotone_in_release_and_bounded(rho, p):
    x = np.arange(-60, 61)
    post = sl.posterior(x, rho, p)
    risk = sl.risk(x, rho, p)
    assert np.all(np.diff(post) >= 0) and np.all(np.diff(risk) >= 0)
    log_odds = sl.log_posterior_odds(x, rho, p)
    assert np.all(np.diff(log_odds) > 0)  # strictly, before saturation of expit
    assert np.all(p * risk <= 1 + 1e-15)
    # R' > 1 exactly for x1* >= m + 1 (paper §4.2, Figure 1)
    np.testing.assert_array_equal(risk > 1, x >= 1)


def test_broadcasting_matches_scalar_calls():
    x = np.arange(-2, 4)[:, None, None]
    rho = np.array([0.05, 0.7])[None, :, None]
    p = np.array([0.5, 0.01, 1e-6])[None, None, :]
    out = sl.posterior(x, rho, p, known=1)
    assert out.shape == (6, 2, 3)
    for i, j, k in np.ndindex(out.shape):
        assert out[i, j, k] == sl.posterior(int(x[i, 0, 0]), rho[0, j, 0], p[0, 0, k], 1)


@pytest.mark.parametrize("m", [1, 7, 250])
def test_non_unique_target_shifts_by_m_exactly(m):
    """Supplement S1.1: with m others known, everything shifts by m (bit-for-bit)."""
    x = np.arange(-15, 16)
    for rho, p in [(RHO_BLOCK, 0.5), (0.3, 1 / 864), (2.0, 1e-9)]:
        np.testing.assert_array_equal(sl.posterior(x + m, rho, p, known=m),
                                      sl.posterior(x, rho, p, known=0))
        np.testing.assert_array_equal(sl.risk(x + m, rho, p, known=m), sl.risk(x, rho, p))
        np.testing.assert_array_equal(sl.release_pmf(x + m, rho, known=m),
                                      sl.release_pmf(x, rho))
        assert sl.decision_threshold(rho, p, known=m) == sl.decision_threshold(rho, p) + m
        assert sl.p_correct(rho, p, known=m) == sl.p_correct(rho, p)
        assert sl.marginal_posterior(rho, p, known=m) == sl.marginal_posterior(rho, p)


def test_release_pmf_is_dg_centered_at_m_plus_one():
    x = np.arange(-30, 33)
    np.testing.assert_allclose(sl.release_pmf(x, RHO_BLOCK, known=2), dg.pmf(x, 3, RHO_BLOCK),
                               rtol=0)
    assert sl.release_pmf(np.arange(-200, 203), RHO_BLOCK, known=1).sum() == pytest.approx(
        1.0, rel=1e-14)


# --------------------------------------------------------------------------- marginal
def brute_marginal(rho, p):
    half = int(np.sqrt(690 / rho))  # pmf > 1e-300 on the grid, neglected mass < 1e-290
    x = np.arange(1 - half, 2 + half)
    return float(np.sum(bayes_posterior(x, rho, p, 0) * dg.pmf(x, 1, rho)))


@pytest.mark.parametrize("rho", [1e-3, 0.02, RHO_BLOCK, 0.5, 5.0, 50.0])
@pytest.mark.parametrize("p", [0.5, 0.2, 1 / 864])
def test_marginal_equals_brute_force_sum(rho, p):
    assert float(sl.marginal_posterior(rho, p)) == pytest.approx(brute_marginal(rho, p),
                                                                 rel=1e-13)


def test_marginal_tiny_prior_against_mpmath():
    """p = 1e-9: the marginal is ~1e-9; compare with a 50-digit sum over |x - 1| <= 80."""
    mpmath.mp.dps = 50
    rho, p = RHO_BLOCK, 1e-9
    z = mpmath.nsum(lambda k: mpmath.exp(-rho * k**2), [-mpmath.inf, mpmath.inf])
    ref = mpmath.fsum(mp_posterior(x, rho, p, 0) * mpmath.exp(-rho * (x - 1) ** 2) / z
                      for x in range(-80, 83))
    assert float(sl.marginal_posterior(rho, p)) == pytest.approx(float(ref), rel=1e-13)
    assert float(sl.marginal_risk(rho, p)) == pytest.approx(float(ref / mpmath.mpf(p)),
                                                            rel=1e-13)


#: Priors down to the smallest normal magnitudes, and rho up to where the marginal posterior
#: is 1 to the last bit (then R must be fl(1/p) exactly).
CAP_RHO = np.geomspace(1e-3, 1e3, 40)[:, None]
CAP_P = np.geomspace(1e-300, 0.999, 60)


def test_marginal_risk_never_exceeds_one_over_p():
    """R <= 1/p (the docstring's bound; cli.md's ``marginal_risk``). R was computed as
    exp(log marginal - log p), whose rounding of ~eps |log p| put it above fl(1/p) at 98 of
    these 2400 designs (rho = 1000, p = 1/864: 864.0000000000005; p = 1e-100: 1.1e-14
    relatively above); as R' already is, it is now the quotient of the two probabilities, one
    rounding, so a marginal posterior of 1 gives fl(1/p) itself."""
    risk = sl.marginal_risk(CAP_RHO, CAP_P)
    summary = sl.design_summary(CAP_RHO, CAP_P)["marginal_risk"]
    np.testing.assert_array_equal(summary, risk)
    assert np.all(risk <= 1.0 / CAP_P) and np.all(risk >= 1.0)
    assert sl.marginal_risk(1000.0, 1 / 864) == 864.0
    # two unique levels, whose sums in log space did the same (3.1632005872801930e212 against
    # 1/p = 3.1632005872801415e212)
    p = 3.161355002339083e-213
    assert ulv.marginal_risk_unique_levels([1000.0, 1000.0], p, method="enumerate") <= 1 / p


def test_marginal_vectorised_and_bounds():
    rho = np.logspace(-3, 2, 40)[:, None]
    p = np.array([0.5, 0.2, 0.1, 0.02, 1 / 864])
    marginal = sl.marginal_posterior(rho, p)
    risk = sl.marginal_risk(rho, p)
    assert marginal.shape == (40, 5)
    np.testing.assert_allclose(risk, marginal / p, rtol=1e-14)
    assert np.all(risk >= 1 - 1e-14) and np.all(risk <= 1 / p * (1 + 1e-14))
    # increases with rho (paper §4.2, Figure 2)
    assert np.all(np.diff(marginal, axis=0) >= -1e-15)
    for i in (0, 17, 39):
        for j in range(5):
            assert marginal[i, j] == pytest.approx(
                float(sl.marginal_posterior(rho[i, 0], p[j])), rel=1e-14)


# --------------------------------------------------------------------------- decisions
def brute_threshold(rho, p, m, span=5000):
    x = np.arange(m - span, m + span)
    decide = sl.posterior(x, rho, p, m) > 0.5
    return int(x[np.argmax(decide)])


@pytest.mark.parametrize("rho", [1e-3, 0.03, RHO_BLOCK, 0.5, 0.6, 2.0, 40.0])
@pytest.mark.parametrize("p", [0.5, 0.2, 0.1, 0.02, 1 / 864, 0.9])
def test_threshold_equals_brute_force(rho, p):
    for m in (0, 4):
        assert int(sl.decision_threshold(rho, p, m)) == brute_threshold(rho, p, m)


def test_threshold_ties_go_to_m():
    """Find a p whose float log-odds is exactly 0 at x1* = 2 (rho = 0.25); ties decide m."""
    rho = 0.25
    p = float(1 / (1 + np.exp(0.75)))
    for _ in range(2000):
        if sl.log_posterior_odds(2, rho, p) == 0.0:
            break
        p = np.nextafter(p, 1.0 if sl.log_posterior_odds(2, rho, p) < 0 else 0.0)
    else:  # pragma: no cover
        pytest.skip("no exact float tie found near p = expit(-0.75)")
    assert sl.posterior(2, rho, p) == 0.5
    assert int(sl.decision_threshold(rho, p)) == 3 == brute_threshold(rho, p, 0, span=20)


@pytest.mark.parametrize(("rho", "tie_at"), [(0.7, 2), (0.3, -3), (1 / 3, 4)])
def test_threshold_ties_go_to_m_when_the_closed_form_lands_on_the_tie(rho, tie_at):
    """A float tie L(tie_at) = 0 whose closed form 1/2 (1 - logit(p)/rho) rounds just below
    tie_at (e.g. 1.9999999999999998 at rho = 0.7), so floor + 1 lands on the tie itself and
    only the correction step "L(offset) > 0, else one up" sends the tie to m. Before this
    test a correction deciding ties for m + 1 there went unnoticed: threshold tie_at instead
    of tie_at + 1, and P[correct] too high by P[X* = tie_at] (0.23 at rho = 0.7). Exact
    integers against the brute-force rule posterior > 1/2; P[correct] against the sum of
    the pmf over the brute-force decision region (|x| < 40: neglected mass < 1e-100), rtol
    1e-12 as above."""
    p = float(1 / (1 + np.exp(rho * (2 * tie_at - 1))))
    for _ in range(2000):
        odds = sl.log_posterior_odds(tie_at, rho, p)
        if odds == 0.0:
            break
        p = np.nextafter(p, 1.0 if odds < 0 else 0.0)
    else:  # pragma: no cover
        pytest.skip(f"no exact float tie found at x1* = {tie_at}")
    assert sl.posterior(tie_at, rho, p) == 0.5
    assert int(sl.decision_threshold(rho, p)) == tie_at + 1 == brute_threshold(rho, p, 0, 40)
    x = np.arange(-40, 41)
    brute = np.sum(dg.pmf(x, 1, rho) * (sl.posterior(x, rho, p) > 0.5))
    assert float(sl.p_correct(rho, p)) == pytest.approx(float(brute), rel=RTOL)


@pytest.mark.parametrize("rho", [1e-3, 0.03, RHO_BLOCK, 0.5, 0.6, 2.0, 40.0])
@pytest.mark.parametrize("p", [0.5, 0.2, 0.02, 0.9])
def test_p_correct_equals_brute_force_sum(rho, p):
    half = int(np.sqrt(690 / rho))
    x = np.arange(1 - half, 2 + half)
    brute = np.sum(dg.pmf(x, 1, rho) * (sl.posterior(x, rho, p) > 0.5))
    assert float(sl.p_correct(rho, p)) == pytest.approx(float(brute), rel=1e-12, abs=1e-300)


def test_p_correct_deep_tail_against_mpmath():
    """p = 1/864 at the Census rho: threshold 35, P ~ 2.7e-51 (no truncated sum can see it)."""
    mpmath.mp.dps = 60
    rho = RHO_BLOCK
    threshold = int(sl.decision_threshold(rho, 1 / 864))
    z = mpmath.nsum(lambda k: mpmath.exp(-rho * k**2), [-mpmath.inf, mpmath.inf])
    tail = mpmath.nsum(lambda k: mpmath.exp(-rho * k**2), [threshold - 1, mpmath.inf]) / z
    assert float(sl.p_correct(rho, 1 / 864)) == pytest.approx(float(tail), rel=1e-12)


def test_paper_decision_examples():
    """§4.2: p = 1/5 at rho = 0.5 and 0.6 decides for x1* >= 2, P[correct] 0.30 and 0.28."""
    assert int(sl.decision_threshold(0.5, 0.2)) == int(sl.decision_threshold(0.6, 0.2)) == 2
    assert float(sl.p_correct(0.5, 0.2)) == pytest.approx(float(dg.sf(1, 1, 0.5)), rel=1e-14)
    np.testing.assert_array_equal(sl.decision_threshold(np.logspace(-3, 2, 200), 0.5), 1)


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize(("call", "name"), [
    (lambda: sl.posterior(1.5, 0.1), "x1_star"),
    (lambda: sl.posterior(1, 0.0), "rho"),
    (lambda: sl.risk(1, 0.1, p=0.0), "p"),
    (lambda: sl.release_pmf(1, 0.1, known=-2), "known"),
    (lambda: sl.marginal_posterior(np.inf), "rho"),
    (lambda: sl.p_correct(0.1, p=1.5), "p"),
    (lambda: sl.decision_threshold(0.1, known=0.5), "known"),
    (lambda: ulv.posterior_unique_levels([1, 2], [0.1]), "levels"),
    (lambda: ulv.marginal_posterior_unique_levels([0.1, -1.0]), "rhos"),
    (lambda: ulv.marginal_posterior_unique_levels([0.1], method="mcmc"), "method"),
    (lambda: sequential.sequential_risk([1, 2], [0.1, 0.2], p=-0.1), "p"),
])
def test_invalid_inputs_raise_value_error_naming_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("p", [0.5, 1e-12, 1e-300])
def test_release_grid_refusal_states_a_bound_above_the_refused_rho(p):
    """The exact marginal's refusal said 'allowed range: rho > about 2e-14' whatever p, while
    its grid neglects less than 1e-16 p: at p = 1e-300 rho = 1e-13 was refused (bound
    2.83e-13); the single-level and unknown-others marginals now state the bound at that p,
    checked to be accepted by the grid and 1 % below it refused."""
    import re

    from dprisk.inference.single_level.closed_form_kernels import MAX_HALFWIDTH, TAIL_RELATIVE
    from dprisk.inference.unknown_others.closed_form import marginal_posterior as uo_marginal

    rho = {0.5: 1e-14, 1e-12: 2e-14, 1e-300: 1e-13}[p]
    for call in (lambda: sl.marginal_risk(rho, p),
                 lambda: uo_marginal(rho, p, unknown_others=2, q=0.3)):
        with pytest.raises(ValueError, match=rf"at p = {p:g} .*allowed range at this p") as info:
            call()
        bound = float(re.search(r"rho >= (\S+)$", str(info.value)).group(1))
        tail = max(TAIL_RELATIVE * p, 1e-300)
        assert bound > rho
        assert dg.support_halfwidth_kernel(np.asarray(bound), tail) <= MAX_HALFWIDTH
        assert dg.support_halfwidth_kernel(np.asarray(0.99 * bound), tail) > MAX_HALFWIDTH


@pytest.mark.parametrize("rho", [1e-12, 1e-10, 1e-9])
@pytest.mark.parametrize("p", [0.999, 1 - 1e-9])
def test_marginal_stays_within_its_exact_bounds_at_tiny_rho(rho, p):
    """p <= M and 1 <= R hold exactly (Cauchy-Schwarz) and the docstrings say so; the grid's
    rounded sum gave M = 0.9989999999999998 < p = 0.999 and R = 0.9999999999999998 at
    rho = 1e-12 (13 of 1356 points of a rho x p grid). The values are within 2 ulps of p
    and 1, so they are now held there, in every form.

    The three public forms each index one sum of ``marginal_posterior_and_risk`` (which holds
    the values); at rho = 1e-12 (about 0.6 s of CPU per sum) that sum is checked once here and
    the forms in ``make bench`` (``SLOW_CASES``), the forms at 1e-10 and 1e-9 here."""
    from dprisk.inference.single_level.closed_form_kernels import marginal_posterior_and_risk

    if rho == 1e-12:
        log_marginal, marginal, risk = marginal_posterior_and_risk(np.float64(rho), np.float64(p))
    else:
        marginal = sl.marginal_posterior(rho, p)
        risk = sl.marginal_risk(rho, p)
        log_marginal = sl.log_marginal_posterior(rho, p)
    assert marginal >= p
    assert risk >= 1.0
    assert log_marginal >= np.log(p)
    assert marginal == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("p", [0.999, 1 - 1e-9])
def test_every_marginal_form_stays_within_its_exact_bounds_at_rho_1e_12(p):
    """The public forms of test_marginal_stays_within_its_exact_bounds_at_tiny_rho at the
    rho (1e-12) where the rounding was found: three sums of about 0.6 s each, in ``make
    bench`` (``SLOW_CASES``)."""
    rho = 1e-12
    assert sl.marginal_posterior(rho, p) >= p
    assert sl.marginal_risk(rho, p) >= 1.0
    assert sl.log_marginal_posterior(rho, p) >= np.log(p)
