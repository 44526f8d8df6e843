"""The K-cell adversary: closed forms against brute-force enumeration and known special cases."""

import itertools

import numpy as np
import pytest

from dprisk.inference.attribute.design import (
    expected_true_posterior,
    p_map_correct,
    p_map_correct_uniform,
)
from dprisk.inference.attribute.posterior import cell_posterior, sample_releases
from dprisk.inference.single_level import closed_form as single_level
from dprisk.inference.single_level.closed_form_kernels import odds_term
from dprisk.models.mechanism.discrete_gaussian import logpmf, support_halfwidth
from dprisk.models.priors.histogram import check_cell_prior, restricted_prior, uniform_prior

#: Noise support of the enumeration: each eta with |eta| <= H, P[|eta| > H] < ENUM_TAIL.
ENUM_TAIL = 1e-13
#: Enumeration neglects at most K * ENUM_TAIL of the mass; the exact sums are ~1e-15 accurate.
ENUM_ATOL = 1e-11


def enumerate_measures(rho, known, prior, true_cell):
    """P[MAP = t] (uniform ties) and E[P(t | x*)] by summing over every noise vector."""
    k = len(known)
    half = int(support_halfwidth(rho, ENUM_TAIL))
    eta = np.arange(-half, half + 1)
    pmf = np.exp(logpmf(eta, 0, rho))
    noise = np.array(list(itertools.product(eta, repeat=k)))
    weight = np.prod(pmf[noise + half], axis=1)
    release = noise + np.asarray(known) + np.eye(k, dtype=int)[true_cell]
    post = cell_posterior(release, known, rho, prior)
    top = post.log_posterior.max(-1, keepdims=True)
    winners = post.log_posterior == top
    share = winners[:, true_cell] / winners.sum(-1)
    return float(weight @ share), float(weight @ post.posterior[:, true_cell])


@pytest.mark.parametrize("rho", [0.099, 0.5, 2.0])
@pytest.mark.parametrize(("prior", "true_cell"), [
    (None, 0),
    ([0.5, 0.5], 1),
    ([0.7, 0.3], 1),
    ([0.7, 0.3], 0),
    ([0.2, 0.4, 0.4], 1),
    ([0.2, 0.4, 0.4], 0),
    ([0.1, 0.3, 0.6], 2),
    ([0.0, 0.5, 0.5], 2),
])
def test_closed_forms_match_enumeration(rho, prior, true_cell):
    k = 3 if prior is None else len(prior)
    known = [3, 0, 1][:k]
    p_map, mean_post = enumerate_measures(rho, known, prior, true_cell)
    assert p_map_correct(rho, k, prior, true_cell=true_cell) == pytest.approx(p_map,
                                                                              abs=ENUM_ATOL)
    # the lambda-integral (trapezoid in log lambda) converges geometrically: 1e-9 is loose
    assert expected_true_posterior(rho, k, prior, true_cell=true_cell) == pytest.approx(
        mean_post, abs=1e-9)


@pytest.mark.parametrize("rho", [100.0, 1e4, 1e6])
def test_expected_posterior_of_a_sure_cell_is_a_probability(rho):
    # the true cell's posterior is 1 up to exp(-rho + 28) < 1e-31 at every release of
    # positive mass: the true value lies in [1 - 1e-13, 1] (the noise grid's tail_mass 1e-14
    # and the trapezoid's rounding); the uncapped sum was 1.0000000000000573
    value = expected_true_posterior(rho, prior=[1 - 1e-12, 1e-12], true_cell=1)
    assert 1.0 - 1e-13 <= value <= 1.0


@pytest.mark.parametrize("k", [2, 3, 8, 126, 864, 2016])
@pytest.mark.parametrize("rho", [0.01, 0.099, 1.0, 8.0])
def test_general_formula_reduces_to_order_statistic_formula(k, rho):
    # two independent evaluations of the same sum; relative agreement to rounding (1e-12)
    assert p_map_correct(rho, k) == pytest.approx(p_map_correct_uniform(rho, k), rel=1e-12)


def test_monte_carlo_agrees_at_large_k():
    """K = 864 uniform: 5,000 simulated releases within 4 MCSE of the exact values.

    The releases are independent, so the MCSE is the sample sd / sqrt(n) of the n used and the
    4-MCSE bound stays calibrated at 5,000 (20,000 before: 2 s of CPU, a 20,000 x 864 table)."""
    rho, k, n = 0.5, 864, 5_000
    known = np.zeros(k, dtype=int)
    releases = sample_releases(known, rho, 5, n, random_seed=20261123)
    post = cell_posterior(releases, known, rho)
    winners = post.log_posterior == post.log_posterior.max(-1, keepdims=True)
    share = winners[:, 5] / winners.sum(-1)  # uniform tie-breaking, in expectation
    exact = p_map_correct(rho, k, true_cell=5)
    assert abs(share.mean() - exact) < 4 * share.std() / np.sqrt(n)
    values = post.posterior[:, 5]
    mean_exact = expected_true_posterior(rho, k, true_cell=5)
    assert abs(values.mean() - mean_exact) < 4 * values.std() / np.sqrt(n)


def test_reading_only_the_target_cell_is_the_single_level_adversary():
    rho, p = 0.099, 1 / 864
    prior = np.full(864, (1 - p) / 863)
    prior[7] = p
    known = np.zeros(864, dtype=int)
    read = np.zeros(864, dtype=bool)
    read[7] = True
    releases = np.zeros((6, 864), dtype=int)
    releases[:, 7] = np.arange(-1, 5)
    post = cell_posterior(releases, known, rho, prior, read=read)
    expected = single_level.posterior(np.arange(-1, 5), rho, p, 0)
    np.testing.assert_allclose(post.posterior[:, 7], expected, rtol=1e-12)
    np.testing.assert_allclose(post.risk(7), single_level.risk(np.arange(-1, 5), rho, p, 0),
                               rtol=1e-12)


def test_two_cells_one_release_against_single_level_log_odds():
    """K = 2, both cells read: log-odds = logit(pi_1) + odds(s_1) - odds(s_0) + rho... exactly."""
    rho, prior = 0.3, [0.25, 0.75]
    release, known = np.array([4, 2]), np.array([1, 0])
    post = cell_posterior(release, known, rho, prior)
    one = single_level.log_posterior_odds(release[1], rho, 0.75, known[1])
    two = one - odds_term(release[0] - known[0], rho)
    assert np.log(post.posterior[1] / post.posterior[0]) == pytest.approx(two, rel=1e-12)


@pytest.mark.parametrize("offset", [-7, -1, 0, 1, 2, 40])
def test_likelihood_term_is_the_dg_pmf_ratio(offset):
    rho = 0.37
    ratio = logpmf(offset, 1, rho) - logpmf(offset, 0, rho)
    assert odds_term(float(offset), rho) == pytest.approx(ratio, rel=1e-12, abs=1e-13)


def test_posterior_sums_to_one_and_priors_are_normalised():
    rng = np.random.default_rng(3)
    prior = check_cell_prior(rng.dirichlet(np.ones(50)))
    assert prior.sum() == pytest.approx(1.0, abs=1e-15)
    assert uniform_prior(864).sum() == pytest.approx(1.0, abs=1e-13)
    assert restricted_prior([True, False, True, True]).tolist() == [1 / 3, 0, 1 / 3, 1 / 3]
    post = cell_posterior(rng.integers(-5, 9, size=(4, 50)), np.arange(50) % 3, 0.2, prior)
    np.testing.assert_allclose(post.posterior.sum(-1), 1.0, rtol=1e-13)


@pytest.mark.parametrize(("prior", "match"), [
    ([0.5, 0.6], "sum to 1"),
    ([1.0], "at least 2"),
    ([0.5, -0.1, 0.6], ">= 0"),
])
def test_bad_priors_are_refused_by_name(prior, match):
    with pytest.raises(ValueError, match=f"prior.*{match}"):
        check_cell_prior(prior)


def test_a_bad_cell_of_the_prior_is_named():
    """Before: 'prior must be finite and >= 0 in every cell' without saying which of the
    (up to 2,016) cells broke it; now its index and value, and how many more do."""
    with pytest.raises(ValueError, match=r"got nan in cell 2$"):
        check_cell_prior([0.5, 0.3, np.nan, 0.2])
    with pytest.raises(ValueError, match=r"got -0\.1 in cell 1 and 1 more$"):
        check_cell_prior([0.5, -0.1, 0.6, -np.inf])


def test_bad_known_and_cells_are_refused_by_name():
    with pytest.raises(ValueError, match="known"):
        cell_posterior([1, 2], [0, -1], 0.1)
    with pytest.raises(ValueError, match="cells"):
        p_map_correct(0.1, 1)
    with pytest.raises(ValueError, match="prior"):
        p_map_correct(0.1, 3, [0.5, 0.5])
    with pytest.raises(ValueError, match="true_cell"):
        p_map_correct(0.1, 3, [0.0, 0.5, 0.5], true_cell=0)


def test_blocked_cell_posterior_equals_the_whole_batch_kernel():
    """cell_posterior works in row blocks; every value equals the one-batch kernel exactly."""
    from dprisk.inference.attribute.posterior import log_cell_posterior

    rng = np.random.default_rng(3)
    known = rng.integers(0, 4, 2016)
    prior = rng.uniform(0.2, 1.0, 2016)
    prior /= prior.sum()
    releases = known + rng.integers(-3, 4, (3, 70, 2016))  # 210 releases: several blocks
    post = cell_posterior(releases, known, 0.05, prior)
    want = log_cell_posterior(releases, known, 0.05, np.log(prior))
    np.testing.assert_array_equal(post.log_posterior, want)
    np.testing.assert_array_equal(post.posterior, np.exp(want))
    np.testing.assert_array_equal(post.map_cell, np.argmax(want, -1))
    np.testing.assert_array_equal(post.ties, (want == want.max(-1, keepdims=True)).sum(-1))
    assert post.map_cell.shape == (3, 70)


@pytest.mark.parametrize(("value", "error", "match"), [
    (np.array([]), ValueError, "must hold at least one cell"),  # before: numpy's argmax message
    (np.array([np.nan, 1.0]), ValueError, "must not be NaN"),  # before: cell 0, silently
    (np.array([True, False]), TypeError, "must be numbers"),
    ("ab", TypeError, "must be numbers"),
])
def test_map_cell_refuses(value, error, match):
    from dprisk.inference.attribute.posterior import map_cell

    with pytest.raises(error, match=rf"^log_posterior {match}"):
        map_cell(value)
    assert map_cell(np.array([[-np.inf, -1.0, -1.0], [0.0, -2.0, -np.inf]])).tolist() == [1, 0]


def test_cell_posterior_ties_go_to_the_lowest_cell_and_are_counted():
    """Equal priors and equal residuals x* - m make exactly tied posteriors (the same float
    operations on the same numbers). The documented rule: the MAP is the lowest tied cell,
    ``ties`` counts the tied cells. The batch test's random priors make no ties, so the
    highest tied cell as MAP, or a tie count of 1, went unnoticed (``dprisk attribute``
    prints both). Posteriors against direct Bayes, rtol 1e-14 (a few exp/sum roundings)."""
    known = np.array([2, 0, 5, 1, 4])
    release = known + np.array([[1, 3, 3, 0, 3], [4, -1, 2, 4, 0], [0, 0, 0, 0, 0]])
    rho = 0.3
    post = cell_posterior(release, known, rho)
    assert post.map_cell.tolist() == [1, 0, 0]
    assert post.ties.tolist() == [3, 2, 5]
    weights = np.exp(rho * (2 * (release - known) - 1))
    np.testing.assert_allclose(post.posterior, weights / weights.sum(-1, keepdims=True),
                               rtol=1e-14)
    # an unequal prior breaks the tie of the first release in favour of the larger prior
    prior = np.array([0.1, 0.2, 0.3, 0.1, 0.3])
    tilted = cell_posterior(release[0], known, rho, prior)
    assert (tilted.map_cell, tilted.ties) == (2, 2)


@pytest.mark.parametrize("rho", [1e3, 1e10, 1e15, 1e16, 1e100])
def test_cell_posterior_keeps_the_prior_at_large_rho(rho):
    """With equal residuals x_c^* - m_c in every cell the likelihood terms cancel and the
    posterior is the prior, at any rho; the terms rho (2 r - 1) were added to log pi before
    they cancelled, rounding log pi away (rho = 1e10: 0.49999976 for 1/2; 1e16: posteriors
    summing to 2, risk 3 for 1.5). Tolerance: a few roundings of exp and logsumexp."""
    prior = np.array([0.2, 0.3, 0.5])
    post = cell_posterior([1, 1, 2], [0, 0, 1], rho, prior)
    np.testing.assert_allclose(post.posterior, prior, rtol=1e-14)
    uniform = cell_posterior([1, 0, 2], [0, 0, 1], rho)  # cell 1 ruled out (e^(-2 rho) = 0)
    np.testing.assert_allclose(uniform.posterior, [0.5, 0.0, 0.5], rtol=1e-14, atol=1e-300)
    assert uniform.risk() == pytest.approx(1.5, rel=1e-14)
    read = cell_posterior([0, 0, 2], [0, 0, 1], rho, prior, read=[True, True, False])
    np.testing.assert_allclose(read.posterior, [0.0, 0.0, 1.0], atol=1e-300)
