"""The X1 chain of the Gibbs sampler and its N-draw decision law (inference.finite_draws).

References: the count of ones of the two-state chain by dynamic programming over
(state, count) (exact, 1e-12), the exact posterior of inference.exact for the chain's
stationary law, and the variant's stationary log-odds of inference.variant.
"""

import numpy as np
import pytest
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP

from dprisk.inference.studies.finite_draws import (
    chain_transitions,
    count_moments,
    decision_probability,
    exact_chain_log_odds,
    finite_draws_p_correct,
    start_probability,
    stationary_log_odds,
)
from dprisk.inference.studies.variant import variant_log_odds
from dprisk.inference.two_level.exact import exact_posterior, posterior_x1
from dprisk.models.scenario import Scenario

RHO1 = RHO_BLOCK
RHO2 = RHO_BLOCK_GROUP
CENSUS = {"rho1": RHO1, "rho2": RHO2, "d": 27}


def count_pmf_dp(a0, a1, start, draws):
    """P[C = k] of the two-state chain by dynamic programming over (state, count)."""
    prob = np.zeros((2, draws + 1))
    prob[0, 0], prob[1, 0] = 1 - start, start
    for _ in range(draws):
        new = np.zeros_like(prob)
        new[0] = prob[0] * (1 - a0) + prob[1] * (1 - a1)
        new[1, 1:] = prob[0, :-1] * a0 + prob[1, :-1] * a1
        prob = new
    return prob.sum(0)


@pytest.mark.parametrize(("a0", "a1", "start", "draws"), [
    (0.3, 0.6, 0.5, 10), (0.45, 0.55, 0.5, 200), (0.5, 0.5, 0.5, 100), (0.2, 0.9, 0.1, 101),
    (0.6, 0.3, 1.0, 50),
])
def test_decision_probability_fft_is_exact(a0, a1, start, draws):
    pmf = count_pmf_dp(a0, a1, start, draws)
    strict = pmf[draws // 2 + 1:].sum()
    tie = pmf[draws // 2] if draws % 2 == 0 else 0.0
    for ties, expected in (("m", strict), ("m+1", strict + tie), ("half", strict + tie / 2)):
        got = decision_probability(a0, a1, start, draws, method="fft", ties=ties)
        assert got[0] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("a0", "a1", "start", "draws"), [
    (0.3, 0.6, 0.5, 10), (0.2, 0.9, 0.1, 101), (0.6, 0.3, 1.0, 50), (0.01, 0.985, 0.5, 300),
])
def test_count_moments_exact(a0, a1, start, draws):
    pmf = count_pmf_dp(a0, a1, start, draws)
    k = np.arange(draws + 1)
    mean, var = count_moments(a0, a1, start, draws)
    assert mean == pytest.approx((k * pmf).sum(), rel=1e-10)
    assert var == pytest.approx((k**2 * pmf).sum() - (k * pmf).sum() ** 2, rel=1e-8)


@pytest.mark.parametrize("variant", [False, True])
def test_normal_decision_probability_close_to_exact(variant):
    """On Census releases near the boundary, the normal law is within 5e-4 (N = 1000)."""
    rng = np.random.default_rng(4)
    params = Scenario.two_level(p=0.5, known=0, prior="improper", **CENSUS)
    x1s, x2s, y1s = rng.integers(-2, 5, 400), rng.integers(-3, 6, 400), rng.integers(-30, 30, 400)
    a0, a1 = chain_transitions(x1s, x2s, y1s, params, variant=variant)
    near = np.abs(a0 / (1 - a1 + a0) - 0.5) < 0.1
    for ties in ("m", "m+1"):
        exact = decision_probability(a0[near], a1[near], 0.5, 1000, method="fft", ties=ties)
        normal = decision_probability(a0[near], a1[near], 0.5, 1000, method="normal", ties=ties)
        assert np.abs(exact - normal).max() < 5e-4


def test_chain_stationary_law_is_the_posterior():
    params = Scenario.two_level(p=0.3, known=1, prior="truncated:12", **CENSUS)
    x1s, x2s, y1s = np.array([2, 0, 5, 1]), np.array([1, 4, 2, 9]), np.array([-1, 3, 20, -12])
    a0, a1 = chain_transitions(x1s, x2s, y1s, params)
    exact = posterior_x1(x1s, x2s, y1s, p=0.3, known=1, prior="truncated:12", **CENSUS)
    np.testing.assert_allclose(a0 / (1 - a1 + a0), exact, rtol=1e-10)
    v0, v1 = chain_transitions(x1s, x2s, y1s, params, variant=True)
    log_odds = variant_log_odds(x1s, x2s, y1s, p=0.3, known=1, prior="truncated:12", **CENSUS)
    np.testing.assert_allclose(np.log(v0) - np.log1p(-v1), log_odds, rtol=1e-9, atol=1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="method"):
        decision_probability(0.5, 0.5, 0.5, 10, method="exact")


@pytest.mark.parametrize("flag", ["yes", "no", 1, None])
def test_variant_must_be_a_bool(flag):
    """A truthy string such as "no" was read as variant=True (and 0 as False): refused,
    naming the parameter, before any computation."""
    with pytest.raises(TypeError, match=r"variant must be True or False"):
        finite_draws_p_correct(x2=1, draws=10, variant=flag, **CENSUS)


def test_finite_draws_answers_are_remembered_per_validated_inputs(monkeypatch):
    """A repeated expectation (the report asks for Figure 5's x2 = 1 and 10 again in its Monte
    Carlo table, with the defaults spelled out) is computed once; the answer is the same dict,
    a fresh one each time; another tie rule or draw count is a new computation."""
    from dprisk.inference.studies import finite_draws as fd
    from dprisk.runtime.bounded_cache import BoundedCache

    monkeypatch.setattr(fd, "_results_cache", BoundedCache(fd.RESULTS_CACHE_SIZE))
    computed = []
    original = fd._finite_draws

    def counted(*args):
        computed.append(args)
        return original(*args)

    monkeypatch.setattr(fd, "_finite_draws", counted)
    point = {**CENSUS, "rho2": 100.0, "x2": 10, "variant": True}
    first = fd.finite_draws_p_correct(**point, draws=100, ties="m+1")
    again = fd.finite_draws_p_correct(**point, draws=100, ties="m+1", x1=1, p=0.5, known=0,
                                      prior="improper", start="prior")
    assert len(computed) == 1 and again == first and again is not first
    again["p_correct"] = -1.0
    assert fd.finite_draws_p_correct(**point, draws=100, ties="m+1") == first
    strict = fd.finite_draws_p_correct(**point, draws=100, ties="m")
    fd.finite_draws_p_correct(**point, draws=101, ties="m+1")
    assert len(computed) == 3 and strict["ties"] == "m"
    assert list(first) == ["p_correct", "p_correct_stationary", "draws", "variant", "method",
                           "ties", "start", "x1", "x2", "neglected_mass", "band_error"]


def _fresh_memories(monkeypatch, fd):
    from dprisk.inference.studies import thresholds
    from dprisk.runtime.bounded_cache import BoundedCache

    monkeypatch.setattr(fd, "_results_cache", BoundedCache(fd.RESULTS_CACHE_SIZE))
    monkeypatch.setattr(fd, "_band_cache", BoundedCache(fd.BAND_CACHE_ROWS))
    monkeypatch.setattr(thresholds, "_offsets_cache",
                        BoundedCache(thresholds.OFFSETS_CACHE_CELLS))


@pytest.mark.parametrize("variant", [False, True])
def test_band_rows_are_remembered_per_release(monkeypatch, variant):
    """Overlapping grids (Figure 5's x2 and x2 + 1: the same grid shifted by (1, 1)) compute
    only the band rows of their new releases, and the expectation is the one computed from an
    empty memory, bit for bit (compared with ==: the same float operations per row)."""
    from dprisk.inference.studies import finite_draws as fd

    point = {**CENSUS, "rho2": 100.0, "draws": 1000, "variant": variant, "ties": "m+1"}
    _fresh_memories(monkeypatch, fd)
    alone = fd.finite_draws_p_correct(x2=6, **point)
    _fresh_memories(monkeypatch, fd)
    rows = []
    original = fd._band_rows

    def counted(x1_band, *args):
        rows.append(x1_band.shape[0])
        return original(x1_band, *args)

    monkeypatch.setattr(fd, "_band_rows", counted)
    fd.finite_draws_p_correct(x2=5, **point)
    after = fd.finite_draws_p_correct(x2=6, **point)
    assert after == alone
    cells = 3 * 157  # x2* within 1 of x2 at rho2 = 100, 157 values of y1*
    assert rows[0] == cells and sum(rows[1:]) == 3 + 157 - 1


def test_band_rows_of_a_wider_window_are_not_kept(monkeypatch):
    """A batch whose k2 window is not the first one is computed whole and not kept (as if
    each batch needed a wider window): the same expectation, nothing remembered."""
    from dprisk.inference.studies import finite_draws as fd

    point = {**CENSUS, "rho2": 100.0, "x2": 3, "draws": 1000, "variant": True}
    _fresh_memories(monkeypatch, fd)
    want = fd.finite_draws_p_correct(**point)
    _fresh_memories(monkeypatch, fd)
    monkeypatch.setattr(fd, "initial_halfwidth", lambda precision, tail_mass: -5)
    assert fd.finite_draws_p_correct(**point) == want
    assert len(fd._band_cache) == 0


@pytest.mark.parametrize("ties", ["m", "m+1", "half"])
def test_stationary_rate_with_ties_is_the_exact_p_correct(ties):
    """At rho2 = 100 X2 is all but known and d = 27 is odd: some releases have a posterior of
    exactly 1/2, so the tie rule moves P[correct] (0.5868 / 0.5927 / 0.5897 for "m" /
    "m+1" / "half"). The chain's stationary decision rate must apply the rule as the exact
    decision does (:func:`p_correct_two_level`, another route): equal to 1e-12."""
    from dprisk.inference.studies.p_correct import p_correct_two_level

    kw = {"x2": 10, "rho1": RHO_BLOCK, "rho2": 100.0, "d": 27, "ties": ties}
    got = finite_draws_p_correct(**kw, draws=1000)["p_correct_stationary"]
    assert got == pytest.approx(p_correct_two_level(**kw).p_correct, rel=1e-12)


def test_the_prior_start_is_p():
    params = Scenario.two_level(rho1=RHO_BLOCK, rho2=RHO_BLOCK_GROUP, d=27, p=0.2)
    assert start_probability("prior", params) == 0.2
    assert start_probability(0.7, params) == 0.7


def _known_y1_prior():
    """A user prior with ``X2 - X1 = 3`` known: the X2 supports given X1 = m and m + 1 are
    {m + 3} and {m + 4}, apart, so the exact Gibbs chain never changes X1 (a0 = 0, a1 = 1)."""
    import pytensor.tensor as pt

    from dprisk.models.priors.library import UserPrior

    return UserPrior(lambda k2, k1: pt.zeros_like(k2, dtype="float64"),
                     support=lambda k1: (k1 + 3, k1 + 3), description="X2 - X1 = 3")


def test_exact_chain_log_odds_where_a0_and_a1_round():
    """The exact chain is reversible with respect to the posterior, so its stationary
    log-odds is the posterior's. From the rounded (a0, a1) it was +inf where 1 - a1 < 1e-16
    (rho1 = 20: a0 = 9.6e-62, a1 = 1.0; the posterior log-odds is -60.5) and NaN where the
    chain cannot change X1 (a0 = 0, a1 = 1). Agreement: the same branch masses, bit for bit."""
    params = Scenario.two_level(rho1=20.0, rho2=0.1, d=1)
    x1s, x2s, y1s = np.array([-1, 1]), np.array([-2, 3]), np.array([-3, 2])
    a0, a1 = chain_transitions(x1s, x2s, y1s, params)
    assert a1[0] == 1.0 and stationary_log_odds(a0, a1)[0] == np.inf  # the rounding
    got = exact_chain_log_odds(x1s, x2s, y1s, params)
    exact = exact_posterior(x1s, x2s, y1s, rho1=20.0, rho2=0.1, d=1).log_odds_x1
    np.testing.assert_allclose(got, exact, rtol=1e-12)
    assert got[0] == pytest.approx(-60.5, abs=0.01)
    apart = Scenario.two_level(rho1=0.3, rho2=0.5, d=3, prior=_known_y1_prior())
    a0, a1 = chain_transitions(np.array([1]), np.array([4]), np.array([3]), apart)
    assert (a0[0], a1[0]) == (0.0, 1.0)
    assert np.isfinite(exact_chain_log_odds(np.array([1]), np.array([4]), np.array([3]),
                                            apart)[0])


@pytest.mark.parametrize("x1", [0, 1])
def test_stationary_rate_of_a_chain_that_cannot_change_x1(x1):
    """Under the X2 - X1 = 3 prior every release has a0 = 0, a1 = 1: the stationary rate was
    NaN-decided (always m: 0.0 at x1 = 1, 1.0 at x1 = 0) or the band search raised
    RuntimeError ('decision band did not converge'); it is the exact P[correct] (0.732 /
    0.742), equal to 1e-12 (the same thresholds)."""
    from dprisk.inference.studies.p_correct import p_correct_two_level

    kw = {"x2": x1 + 3, "x1": x1, "rho1": 0.3, "rho2": 0.5, "d": 3, "prior": _known_y1_prior()}
    got = finite_draws_p_correct(**kw, draws=100, method="fft")
    assert got["p_correct_stationary"] == pytest.approx(p_correct_two_level(**kw).p_correct,
                                                        rel=1e-12)
    # the chain keeps its start (the prior, p = 1/2): the N-draw decision is a fair coin
    assert got["p_correct"] == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize("variant", [False, True])
def test_a_doubled_band_computes_only_its_outer_columns(monkeypatch, variant):
    """When the band doubles (the exact chain at x2 = 1 needs half = 8), the rows of the half
    band already remembered at the same centre are its middle columns: only the outer ones
    are computed, and the band is band_transitions' of the whole band, bit for bit."""
    from dprisk.inference.studies import finite_draws as fd

    params = Scenario.two_level(rho1=RHO_BLOCK, rho2=RHO_BLOCK_GROUP, d=27)
    x2s, y1s = (a.ravel() for a in np.meshgrid(np.arange(-2, 5), np.arange(-9, 12),
                                                indexing="ij"))
    centre = np.arange(x2s.size) % 5 - 2.0
    band = (centre[:, None] + np.arange(-8, 8)).astype(np.int64)
    want = fd.band_transitions(band, x2s, y1s, params, variant=variant)
    _fresh_memories(monkeypatch, fd)
    widths = []
    original = fd._band_rows

    def counted(x1_band, *args):
        widths.append(x1_band.shape[1])
        return original(x1_band, *args)

    monkeypatch.setattr(fd, "_band_rows", counted)
    fd._band_transitions(centre, 4, x2s, y1s, params, variant)
    got = fd._band_transitions(centre, 8, x2s, y1s, params, variant)
    assert widths == [8, 8]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("rho", [RHO_BLOCK, 1e-3, 30.0])
def test_band_edges_per_distinct_count_are_the_direct_tails(rho):
    """The band's edge tails are evaluated once per distinct count: the direct call's values,
    bit for bit (each exact tail depends on its own element alone)."""
    from dprisk.inference.studies import finite_draws as fd
    from dprisk.models.mechanism import discrete_gaussian as dg

    x = np.random.default_rng(3).integers(-60, 60, 3000)
    for function in (dg.cdf, dg.sf):
        np.testing.assert_array_equal(fd._per_value(function, x, 1, rho), function(x, 1, rho))
