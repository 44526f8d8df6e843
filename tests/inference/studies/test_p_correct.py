"""Exact P[correct decision] with the hierarchy (inference.studies).

References are independent of the threshold shortcut: a brute-force triple sum over
(x1*, x2*, y1*) with the exact posterior of inference.exact, a closed form for point-mass
priors, and a direct loop over k2 for the constraint-dropping Gibbs variant.
"""

import math

import numpy as np
import pytest
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP

from dprisk.inference.single_level import closed_form as single_level
from dprisk.inference.studies.p_correct import (
    marginal_summary,
    p_correct_two_level,
    p_correct_variant,
)
from dprisk.inference.studies.setup import TIE_ATOL, release_grid
from dprisk.inference.studies.thresholds import decision_thresholds
from dprisk.inference.studies.variant import variant_log_odds
from dprisk.inference.two_level.exact import exact_posterior
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.mechanism.dg_sums import sum_pmf

SMALL = {"rho1": 0.5, "rho2": 1.0, "d": 3}
RHO1 = RHO_BLOCK
RHO2 = RHO_BLOCK_GROUP
#: Tolerance of exact-vs-brute comparisons: both sums leave out < 1e-9 of the probability.
TOL = 3e-9


def brute_force(*, x2, x1, rho1, rho2, d, p=0.5, known=0, prior="improper", variant=False,
                tie_weight=0.0):
    """Triple sum over a wide release grid with the posterior evaluated at every release.

    At a tie (``|log-odds| <= TIE_ATOL``) the two-level adversary decides ``m + 1`` with
    probability ``tie_weight``; the single-level decision has no ties (its threshold is the
    smallest release with log-odds > 0)."""
    y1 = x2 - x1
    k1 = int(dg.support_halfwidth(rho1, 1e-12))
    k2 = int(dg.support_halfwidth(rho2, 1e-12))
    noise = sum_pmf(d, rho1, tail_mass=1e-12)
    x1s = np.arange(x1 - k1, x1 + k1 + 1)
    x2s = np.arange(x2 - k2, x2 + k2 + 1)
    y1s = y1 + noise.values
    grid = np.meshgrid(x1s, x2s, y1s, indexing="ij")
    weight = dg.pmf(grid[0], x1, rho1) * dg.pmf(grid[1], x2, rho2) * noise.at(grid[2] - y1)
    kwargs = {"rho1": rho1, "rho2": rho2, "d": d, "p": p, "known": known, "prior": prior}
    if variant:
        log_odds = variant_log_odds(*grid, **kwargs)
    else:
        log_odds = exact_posterior(*grid, **kwargs).log_odds_x1
    up = (log_odds > TIE_ATOL) + tie_weight * (np.abs(log_odds) <= TIE_ATOL)
    single = grid[0] >= single_level.decision_threshold(rho1, p, known)
    correct = up if x1 == known + 1 else 1.0 - up  # P[two-level decision correct | release]
    correct0 = single if x1 == known + 1 else ~single
    return {"p_correct": float((weight * correct).sum()),
            "p_correct_no_hierarchy": float((weight * correct0).sum()),
            "gain": float((weight * correct * ~correct0).sum()),
            "loss": float((weight * (1.0 - correct) * correct0).sum())}


@pytest.mark.parametrize(("x2", "x1", "known", "prior"), [
    (1, 1, 0, "improper"),
    (3, 1, 0, "improper"),
    (3, 0, 0, "improper"),
    (4, 3, 2, "improper"),
    (2, 1, 0, "truncated:5"),
    (1, 0, 0, "truncated:4"),
    (1, 1, 0, "point:2"),
    # point:K at K = known: X1 = m + 1 impossible, the log-odds -inf at every release (the
    # decision m, P[correct] 1 up to the grid's neglected mass); a threshold of -inf there
    # (deciding m + 1 everywhere) gave P[correct] 0 and went unnoticed
    (0, 0, 0, "point:0"),
    (2, 2, 2, "point:2"),
])
def test_exact_matches_brute_force_triple_sum(x2, x1, known, prior):
    result = p_correct_two_level(x2=x2, x1=x1, known=known, prior=prior, p=0.4, **SMALL)
    reference = brute_force(x2=x2, x1=x1, known=known, prior=prior, p=0.4, **SMALL)
    for key, value in reference.items():
        assert getattr(result, key) == pytest.approx(value, abs=TOL), key
    assert result.neglected_mass < 1e-9


@pytest.mark.parametrize("x1", [1, 0])
@pytest.mark.parametrize("ties", ["m+1", "half"])
def test_ties_gain_and_loss_match_brute_force(ties, x1):
    """A point-mass prior at p = 1/2 and odd d = 3 has exact ties (the decision boundary in
    y1* is an integer: 8 % and 12 % of the mass here): every output, the gain and loss included,
    against the triple sum with the tie decided m + 1 with probability 1 or 1/2."""
    tie_weight = {"m+1": 1.0, "half": 0.5}[ties]
    result = p_correct_two_level(x2=x1, x1=x1, prior="point:2", ties=ties, **SMALL)
    reference = brute_force(x2=x1, x1=x1, prior="point:2", tie_weight=tie_weight, **SMALL)
    assert result.tie_mass > 1e-2
    for key, value in reference.items():
        assert getattr(result, key) == pytest.approx(value, abs=TOL), key


def test_census_point_matches_brute_force():
    result = p_correct_two_level(x2=2, rho1=RHO1, rho2=RHO2, d=27)
    reference = brute_force(x2=2, x1=1, rho1=RHO1, rho2=RHO2, d=27)
    assert result.p_correct == pytest.approx(reference["p_correct"], abs=TOL)
    assert result.gain == pytest.approx(reference["gain"], abs=TOL)


@pytest.mark.parametrize("x2", [1, 3])
def test_variant_matches_brute_force(x2):
    result = p_correct_variant(x2=x2, **SMALL)
    reference = brute_force(x2=x2, x1=1, variant=True, **SMALL)
    assert result.p_correct == pytest.approx(reference["p_correct"], abs=TOL)
    assert result.loss == pytest.approx(reference["loss"], abs=TOL)


@pytest.mark.parametrize(("model", "prior", "x1"), [
    ("exact", "improper", 1), ("exact", "improper", 0), ("exact", "point:25", 1),
    ("variant", "improper", 1), ("exact", "truncated:10", 0),
])
def test_gain_minus_loss_identity(model, prior, x1):
    func = p_correct_two_level if model == "exact" else p_correct_variant
    r = func(x2=max(x1, 2), x1=x1, rho1=RHO1, rho2=RHO2, d=27, prior=prior)
    assert r.p_correct - r.p_correct_no_hierarchy == pytest.approx(r.gain - r.loss, abs=1e-14)
    assert r.gain >= 0 and r.loss >= 0


def test_no_hierarchy_equals_single_level():
    r = p_correct_two_level(x2=5, rho1=RHO1, rho2=RHO2, d=27)
    # Same quantity; the grid version misses at most the neglected mass.
    assert r.p_correct_no_hierarchy == pytest.approx(float(single_level.p_correct(RHO1)),
                                                     abs=r.neglected_mass + 1e-15)


def test_a_block_group_of_a_hundred_blocks_is_computed():
    """d = 100 other blocks at the Census rho: before, the exact d-fold noise sum left out
    1.02e-9 of the probability against its 5e-10 share of tail_mass = 1e-9, and the study
    stopped with RuntimeError "release grid leaves out 1.02e-09 >= tail_mass" (``dprisk
    marginal --rho1 census:block --rho2 census:block-group --d 100 --x2 1``: exit 1)."""
    r = p_correct_two_level(x2=1, rho1=RHO1, rho2=RHO2, d=100)
    assert r.neglected_mass < 1e-9
    assert r.p_correct_no_hierarchy == pytest.approx(float(single_level.p_correct(RHO1)),
                                                     abs=r.neglected_mass + 1e-15)


@pytest.mark.parametrize("prior", ["improper", "point:1", "truncated:10"])
def test_grid_widening_does_not_change_result(prior):
    narrow = p_correct_two_level(x2=2, rho1=RHO1, rho2=RHO2, d=27, prior=prior)
    wide = p_correct_two_level(x2=2, rho1=RHO1, rho2=RHO2, d=27, prior=prior,
                                  tail_mass=1e-14)
    assert wide.neglected_mass < 1e-14 < narrow.neglected_mass < 1e-9
    for key in ("p_correct", "gain", "loss", "tie_mass"):
        assert getattr(narrow, key) == pytest.approx(getattr(wide, key), abs=2e-9)


def point_mass_closed_form(*, k, x1, rho1, d, p=0.5):
    r"""P[correct] and tie mass for the prior ``point:k`` (m = 0, truth x2 = x1, y1 = 0).

    With X2 = k: L = logit p + rho1 (2 x1* - 1) - (rho1/d)(2 (y1* - k) + 1), so the adversary
    decides 1 iff y1* < c(x1*) = (d logit(p)/rho1 + d (2 x1* - 1) - 1)/2 + k and ties at
    y1* = c. With x1* = x1 + e1 and y1* = S (the exact noise sum), sum over e1 of
    P[e1] P[S < c] (strict: ties decided 0).
    """
    noise = sum_pmf(d, rho1, tail_mass=1e-14)
    cdf = np.concatenate([[0.0], np.cumsum(noise.pmf)])  # cdf[j] = P[S <= values[0] + j - 1]
    half = int(dg.support_halfwidth(rho1, 1e-14))
    e1 = np.arange(-half, half + 1)
    c = (d * math.log(p / (1 - p)) / rho1 + d * (2 * (x1 + e1) - 1) - 1) / 2 + k
    index = np.clip(np.ceil(c).astype(int) - noise.values[0], 0, noise.values.size)
    up = cdf[index]  # P[S <= ceil(c) - 1] = P[S < c]
    tie = np.where(np.isclose(c, np.round(c)), noise.at(np.round(c).astype(int)), 0.0)
    weight = dg.pmf(x1 + e1, x1, rho1)
    correct = up if x1 == 1 else 1.0 - up
    return float((weight * correct).sum()), float((weight * tie).sum())


@pytest.mark.parametrize("x1", [1, 0])
def test_point25_and_counterfactual_closed_form(x1):
    result = p_correct_two_level(x2=x1, x1=x1, rho1=RHO1, rho2=RHO2, d=27,
                                    prior="point:25")
    expected, tie_mass = point_mass_closed_form(k=25, x1=x1, rho1=RHO1, d=27)
    assert result.p_correct == pytest.approx(expected, abs=1e-9)
    assert result.tie_mass == pytest.approx(tie_mass, abs=1e-9)
    assert tie_mass > 1e-3  # d = 27 is odd: exact ties exist
    up = p_correct_two_level(x2=x1, x1=x1, rho1=RHO1, rho2=RHO2, d=27, prior="point:25",
                                ties="m+1")
    half = p_correct_two_level(x2=x1, x1=x1, rho1=RHO1, rho2=RHO2, d=27, prior="point:25",
                                  ties="half")
    sign = 1 if x1 == 1 else -1
    assert up.p_correct - result.p_correct == pytest.approx(sign * tie_mass, abs=1e-9)
    assert half.p_correct == pytest.approx((up.p_correct + result.p_correct) / 2, abs=1e-12)


def test_variant_transition_by_direct_loop():
    """The lead's number: stationary P[X1 = 1 | D = (2, 1, -1)] = 0.5777 for the variant."""
    d, x1s, x2s, y1s = 27, 2, 1, -1
    k2 = np.arange(0, 80)

    def x2_given(k1):
        ks = k2[k2 >= k1]
        w = np.exp(-RHO2 * (x2s - ks) ** 2 - (RHO1 / d) * (y1s - ks + k1) ** 2)
        return ks, w / w.sum()

    def p1_unconstrained(ks):
        w1 = np.exp(-RHO1 * (x1s - 1) ** 2 - (RHO1 / d) * (y1s - ks + 1) ** 2)
        w0 = np.exp(-RHO1 * x1s**2 - (RHO1 / d) * (y1s - ks) ** 2)
        return w1 / (w0 + w1)

    ks0, q0 = x2_given(0)
    ks1, q1 = x2_given(1)
    t01 = (q0 * p1_unconstrained(ks0)).sum()
    t10 = (q1 * (1 - p1_unconstrained(ks1))).sum()
    pi1 = t01 / (t01 + t10)
    log_odds = variant_log_odds(x1s, x2s, y1s, rho1=RHO1, rho2=RHO2, d=d)
    assert 1 / (1 + math.exp(-log_odds)) == pytest.approx(pi1, abs=1e-12)
    assert pi1 == pytest.approx(0.5777, abs=5e-5)


def test_thresholds_are_consistent_with_posterior():
    x2s, y1s = np.meshgrid(np.arange(-3, 6), np.arange(-30, 31, 3), indexing="ij")
    for model in ("exact", "variant"):
        threshold, tie = decision_thresholds(x2s, y1s, rho1=RHO1, rho2=RHO2, d=27, model=model)
        for shift, expect_up in ((0, True), (-1, False)):
            x1s = threshold + shift
            if model == "exact":
                lo = exact_posterior(x1s.astype(int), x2s, y1s, rho1=RHO1, rho2=RHO2,
                                     d=27).log_odds_x1
            else:
                lo = variant_log_odds(x1s.astype(int), x2s, y1s, rho1=RHO1, rho2=RHO2, d=27)
            assert np.all((lo > TIE_ATOL) == expect_up)
        assert not tie.any()


def test_release_grid_neglected_mass_is_checked():
    grid = release_grid(x2=3, y1=2, rho1=RHO1, rho2=RHO2, d=27, tail_mass=1e-9)
    total = grid.weights.sum()
    assert 1 - total <= grid.neglected_mass + 1e-14
    assert grid.neglected_mass < 1e-9
    assert grid.x2_star[grid.x2_pmf.argmax()] == 3


def test_release_grid_of_many_blocks_keeps_its_bound():
    """300 other blocks at rho = 1e-3: the noise sum left out 3.5e-9 of its 5e-10 share
    (dg_sums counted each trim of a squared power once), and the study failed with
    ``RuntimeError: release grid leaves out 3.53e-09 >= tail_mass = 1e-09``."""
    grid = release_grid(x2=5000, y1=4999, rho1=1e-3, rho2=1e-3, d=300, tail_mass=1e-9)
    assert grid.neglected_mass < 1e-9
    assert 1 - grid.weights.sum() <= grid.neglected_mass + 1e-14


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"x2": 0, "x1": 1}, "x2"),
    ({"x2": 3, "x1": 5}, "x1"),
    ({"x2": 3, "d": 0}, "d"),
    ({"x2": 3, "d": -2}, "d"),
    ({"x2": 3, "prior": "bogus"}, "prior"),
    ({"x2": 3, "rho1": -1.0}, "rho1"),
    ({"x2": 3, "p": 1.5}, "p"),
    ({"x2": 3, "ties": "maybe"}, "ties"),
    ({"x2": 3, "tail_mass": 0.5}, "tail_mass"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    args = {"rho1": RHO1, "rho2": RHO2, "d": 27} | kwargs
    with pytest.raises(ValueError, match=name):
        p_correct_two_level(**args)


def test_marginal_summary_exact_and_mc_keys():
    exact = marginal_summary(rho1=RHO1, rho2=RHO2, d=27, x2=10)
    assert set(exact) == {"p_correct", "p_correct_no_hierarchy", "gain", "loss"}
    mc = marginal_summary(rho1=RHO1, rho2=RHO2, d=27, x2=10, method="mc", datasets=4000,
                          draws=100, random_seed=3)
    assert set(mc) == {"p_correct", "p_correct_no_hierarchy", "gain", "loss", "mcse", "seed"}
    assert mc["seed"] == 3
    assert abs(mc["p_correct"] - exact["p_correct"]) < 5 * mc["mcse"] + 0.01
    with pytest.raises(ValueError, match="method"):
        marginal_summary(rho1=RHO1, rho2=RHO2, d=27, x2=10, method="pymc")
    with pytest.raises(ValueError, match="x2"):
        marginal_summary(rho1=RHO1, rho2=RHO2, d=27, x2=0)


def test_remembered_tables_change_no_result():
    """The memos of a warm point (DG tail range, grid size) give the values computed afresh."""
    from dprisk.inference.studies import p_correct as module
    from dprisk.inference.studies import setup

    census = {"rho1": RHO1, "rho2": RHO2, "d": 27}
    warm = [p_correct_two_level(x2=x2, **census).to_dict() for x2 in (1, 4, 1)]
    module._UPPER_TAILS.clear()
    setup._grid_memory.cache_clear()
    fresh = [p_correct_two_level(x2=x2, **census).to_dict() for x2 in (1, 4, 1)]
    assert warm == fresh and warm[0] == warm[2]
    table = module.upper_tail(np.arange(-3.0, 6.0), 1, RHO1)
    np.testing.assert_array_equal(
        table, np.exp(dg.logsf_kernel(np.arange(-3, 6) - 1, np.asarray(1), np.asarray(RHO1))))
