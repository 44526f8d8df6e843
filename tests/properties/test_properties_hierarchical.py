"""Property-based tests of the two-level model: exact enumeration, Gibbs sampler, X2 priors.

Hypothesis draws rho1, rho2 in [1e-4, 1e2], d in [1, 1e4], p in [1e-12, 1 - 1e-12],
m up to 1e7, releases within a few hundred of the truth, and the priors improper,
truncated:U and point:K (inference/two_level/exact.py, inference/two_level/gibbs.py,
models/priors/library.py):

* the exact posterior is a distribution on the model's support (X2 >= X1, prior support)
  and P[X1 = m+1 | D] is non-decreasing in x1* and in p;
* everything shifts exactly with m (x1*, x2*, the prior and the k2 grid move with m, y1*
  does not): bitwise, because the tables are evaluated relative to m;
* widening the k2 grid (larger halfwidth, smaller tail_mass) changes nothing beyond
  tail_mass, and the neglected-mass bound bounds the mass a wider grid finds;
* one array call equals element-wise calls; posterior_x1 equals exact_posterior;
* the Gibbs sampler's X1 chain has the exact posterior as its stationary law, its draws stay
  in the support and shift exactly with m; Walker's tables reproduce their pmf;
* the proper priors sum to one.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dprisk.inference.two_level.exact import exact_posterior, posterior_x1
from dprisk.inference.two_level.gibbs import ExactConditionals, alias_table, gibbs_sample
from dprisk.models.priors.library import ImproperUniform, PointMass, TruncatedUniform

EPS = np.finfo(float).eps
TAIL_MASS = 1e-12  # inference.exact.DEFAULT_TAIL_MASS

RHO = st.floats(-4.0, 2.0).map(lambda e: 10.0**e)
D = st.integers(1, 10**4)
P = st.one_of(
    st.floats(-12.0, math.log10(0.5)).map(lambda e: 10.0**e),
    st.floats(-12.0, math.log10(0.5)).map(lambda e: 1.0 - 10.0**e),
)
KNOWN = st.integers(0, 10**7)
OFFSET = st.integers(-300, 300)
PRIOR = st.one_of(  # relative to m: (kind, argument - m)
    st.just(("improper", 0)),
    st.tuples(st.just("truncated"), st.integers(1, 400)),
    st.tuples(st.just("point"), st.integers(0, 400)),
)


def make_prior(spec, known):
    kind, arg = spec
    if kind == "improper":
        return ImproperUniform()
    if kind == "truncated":
        return TruncatedUniform(known + arg)
    return PointMass(known + arg)


@st.composite
def models(draw, rho=RHO):
    """Parameters and one release (x1*, x2*, y1*) near a truth (x1, x2) with x2 >= x1."""
    known = draw(KNOWN)
    params = {"rho1": draw(rho), "rho2": draw(rho), "d": draw(D), "p": draw(P),
              "known": known}
    spec = draw(PRIOR)
    release = (known + draw(OFFSET), known + draw(OFFSET), draw(OFFSET))
    return params, spec, release


def log_odds_tolerance(log_odds):
    """Grid truncation (< tail_mass per branch) plus rounding of the two log masses."""
    scale = 4.0 + np.abs(np.where(np.isfinite(log_odds), log_odds, 0.0))
    return 2.2 * TAIL_MASS + 16 * EPS * scale


# ---------------------------------------------------------------- exact enumeration
@given(models())
def test_exact_posterior_is_a_distribution_on_the_support(model):
    params, spec, release = model
    prior = make_prior(spec, params["known"])
    post = exact_posterior(*release, **params, prior=prior)
    m = params["known"]
    assert 0 <= float(post.prob_x1) <= 1
    joint = post.joint_pmf
    # normalised on its window: sums to one up to the rounding of its values
    assert np.all(joint >= 0) and math.fsum(joint.ravel()) == pytest.approx(1.0, abs=64 * EPS)
    assert float(post.neglected_mass) < TAIL_MASS
    k2 = post.k2_values
    for b in (0, 1):  # X2 >= X1 and the prior's support, exactly (zeros, not tiny numbers)
        support = prior.branch_support(m + b)
        inside = np.zeros(k2.shape, bool)
        if support is not None:
            inside = k2 >= support[0]
            if support[1] is not None:
                inside &= k2 <= support[1]
        assert np.all(joint[b][~inside] == 0)
    assert float(post.prob_x1) == pytest.approx(joint[1].sum(), abs=64 * EPS)


@given(models())
def test_posterior_non_decreasing_in_x1_star_and_p(model):
    params, spec, (x1s, x2s, y1s) = model
    prior = make_prior(spec, params["known"])
    x1 = x1s + np.arange(-3, 4)
    prob = posterior_x1(x1, x2s, y1s, **params, prior=prior)
    assert np.all(np.diff(prob) >= 0)
    raised = {**params, "p": min(2 * params["p"], 0.5 + params["p"] / 2)}
    assert np.all(posterior_x1(x1, x2s, y1s, **raised, prior=prior) >= prob)


@given(models(), st.integers(-(10**7), 10**7))
def test_exact_posterior_shifts_exactly_with_m(model, shift):
    params, spec, (x1s, x2s, y1s) = model
    m = params["known"]
    shift = max(shift, -m)  # known + shift >= 0
    post = exact_posterior(x1s, x2s, y1s, **params, prior=make_prior(spec, m))
    moved = exact_posterior(x1s + shift, x2s + shift, y1s, **{**params, "known": m + shift},
                            prior=make_prior(spec, m + shift))
    np.testing.assert_array_equal(moved.log_odds_x1, post.log_odds_x1)
    np.testing.assert_array_equal(moved.joint_pmf, post.joint_pmf)
    np.testing.assert_array_equal(moved.k2_start, post.k2_start + shift)


@given(models(), st.integers(1, 40))
def test_widening_the_k2_grid_changes_nothing(model, extra):
    params, spec, release = model
    prior = make_prior(spec, params["known"])
    post = exact_posterior(*release, **params, prior=prior)
    halfwidth = (post.joint_pmf.shape[-1] - 3) // 2
    wide = exact_posterior(*release, **params, prior=prior, halfwidth=2 * halfwidth + extra)
    tight = exact_posterior(*release, **params, prior=prior, tail_mass=1e-15)
    tol = log_odds_tolerance(post.log_odds_x1)
    for other in (wide, tight):
        assert float(other.log_odds_x1) == pytest.approx(float(post.log_odds_x1), abs=tol,
                                                         rel=0)
    # x2 pmf on the default window, and the mass the wider grid finds outside it, which the
    # default grid's bound must cover
    k2 = post.k2_values
    np.testing.assert_allclose(wide.x2_pmf_at(k2), post.x2_pmf, rtol=0, atol=2.2 * TAIL_MASS)
    outside = 1.0 - math.fsum(wide.x2_pmf_at(k2))
    assert outside <= float(post.neglected_mass) + 64 * EPS


@given(st.lists(models(), min_size=1, max_size=5))
def test_array_call_equals_elementwise_calls(batch):
    params, spec, _ = batch[0]
    prior = make_prior(spec, params["known"])
    m = params["known"]
    x1, x2, y1 = (np.array(c) for c in zip(*(r for _, _, r in batch), strict=True))
    x1, x2 = x1 - [b[0]["known"] for b in batch] + m, x2 - [b[0]["known"] for b in batch] + m
    together = exact_posterior(x1, x2, y1, **params, prior=prior)
    one_by_one = np.array([
        float(exact_posterior(a, b, c, **params, prior=prior).log_odds_x1)
        for a, b, c in zip(x1, x2, y1, strict=True)
    ])
    # a batch shares its window: where one release needs a wider grid, all get it (tail_mass)
    np.testing.assert_allclose(together.log_odds_x1, one_by_one, rtol=0,
                               atol=np.max(log_odds_tolerance(one_by_one)))
    # posterior_x1 may take the fused compiled kernel (inference.fused_kernels): 1e-13
    np.testing.assert_allclose(posterior_x1(x1, x2, y1, **params, prior=prior),
                               together.prob_x1, rtol=1e-13, atol=0)


# ---------------------------------------------------------------- Gibbs sampler
@given(models(rho=st.floats(-2.0, 1.0).map(lambda e: 10.0**e)))
def test_gibbs_x1_chain_has_the_exact_posterior_as_stationary_law(model):
    params, spec, release = model
    prior = make_prior(spec, params["known"])
    cond = ExactConditionals(*release, **params, prior=prior)
    # P[X1' = m+1 | X1 = m+b] = sum_k2 P[X2 = k2 | X1 = m+b] P[X1 = m+1 | X2 = k2]
    a0, a1 = (cond.x2_pmf_table * cond.prob_x1_table).sum(-1)
    exact = exact_posterior(*release, **params, prior=prior)
    if len(cond.feasible_x1) == 1:  # point:K below m+1: X1 = m for sure
        assert a0 == 0 and float(exact.prob_x1) == 0
        return
    # stationary law of the two-state chain: pi1 (1 - a1) = (1 - pi1) a0
    pi1 = float(exact.prob_x1)
    # rounding: the tables sum ~W terms (~1e-15), and 1 - a1 cancels when a1 ~ 1
    assert pi1 * (1 - a1) == pytest.approx((1 - pi1) * a0, rel=1e-9, abs=1e-14)


@given(models(rho=st.floats(-2.0, 1.0).map(lambda e: 10.0**e)), st.integers(-(10**6), 10**6),
       st.integers(0, 2**32))
def test_gibbs_draws_in_support_and_shift_exactly_with_m(model, shift, seed):
    params, spec, (x1s, x2s, y1s) = model
    m = params["known"]
    shift = max(shift, -m)
    prior = make_prior(spec, m)
    draws = gibbs_sample(x1s, x2s, y1s, **params, prior=prior, draws=50, chains=2,
                         random_seed=seed)
    assert np.all((draws.x1 == m) | (draws.x1 == m + 1)) and np.all(draws.x2 >= draws.x1)
    if spec[0] != "improper":
        assert np.all(draws.x2 <= m + spec[1])
    if spec[0] == "point":
        assert np.all(draws.x2 == m + spec[1])
    moved = gibbs_sample(x1s + shift, x2s + shift, y1s, **{**params, "known": m + shift},
                         prior=make_prior(spec, m + shift), draws=50, chains=2,
                         random_seed=seed)
    np.testing.assert_array_equal(moved.x1, draws.x1 + shift)
    np.testing.assert_array_equal(moved.x2, draws.x2 + shift)


@given(st.lists(st.lists(st.floats(0.0, 1.0), min_size=8, max_size=8), min_size=1,
                max_size=4).filter(lambda rows: all(sum(r) > 0 for r in rows)))
def test_alias_tables_reproduce_their_pmf(rows):
    prob = np.array(rows)
    prob /= prob.sum(-1, keepdims=True)
    q, alias = alias_table(prob)
    width = prob.shape[-1]
    rebuilt = q.copy()
    for r in range(prob.shape[0]):
        np.add.at(rebuilt[r], alias[r], 1.0 - q[r])
    # P[k] = (q_k + sum_{j: alias_j = k} (1 - q_j)) / W; W - 1 pairing steps of rounding
    np.testing.assert_allclose(rebuilt / width, prob, rtol=0, atol=4 * width * EPS)
    assert np.all((q >= 0) & (q <= 1))


# ---------------------------------------------------------------- priors
@given(KNOWN, st.integers(0, 500), st.integers(0, 1))
def test_proper_priors_sum_to_one(known, width, b):
    k1 = known + b
    k2 = np.arange(known - 5, known + width + 10)
    truncated = TruncatedUniform(k1 + width)
    assert math.fsum(np.exp(truncated.log_weight(k2, k1))) == pytest.approx(1.0, rel=1e-13)
    point = PointMass(k1 + width)
    assert math.fsum(np.exp(point.log_weight(k2, k1))) == 1.0
    improper = ImproperUniform().log_weight(k2, k1)
    np.testing.assert_array_equal(improper, np.where(k2 >= k1, 0.0, -np.inf))
