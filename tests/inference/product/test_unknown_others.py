"""The product with unknown other blocks: reduces to the known case, keeps the bounds.

A point-mass prior on the total with d = 1 is the known-others adversary: the measures agree
with :func:`dprisk.inference.product.exact.product_risk` to 1e-12 (both enumerations neglect
less than 1e-12). The split law is checked against the multinomial directly (1e-15).
"""

import numpy as np
import pytest
from scipy import stats

from dprisk.inference.product import exact
from dprisk.inference.product import unknown_others as uo
from dprisk.models.census.allocation import census_level

RHO1 = census_level("block").rho
RHO2 = census_level("block-group").rho


def test_point_mass_is_the_known_adversary():
    got = uo.product_risk_unknown_others(RHO1, RHO2, 1, [0, 0, 0, 1.0], m=0, p=0.5)
    want = exact.product_risk(RHO1, RHO2, [3], m=0, p=0.5)
    for name in ("marginal_posterior", "p_correct", "accuracy", "noisy_marginal_posterior",
                 "noisy_p_correct", "noisy_accuracy"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), abs=1e-12), name


@pytest.mark.parametrize("rho", [0.3, 1.0, 2.0])
@pytest.mark.parametrize("d", [1, 2])
def test_exact_ties_of_the_noisy_mixture_are_decided_not_c(rho, d):
    """Equal rhos, p = 1/2 and the others' total known: P[correct] = (1 + sum_e f(e)^2) / 2.

    The target's residuals r1 (block) and r2 (block group) tie (posterior 1/2, decided
    "not c") when r1 + r2 = 1, so P[correct | m + 1] = P[eta1 + eta2 >= 0] = (1 + P[eta1 =
    eta2]) / 2; the split of a known total among d blocks adds nothing. The mixture's sums
    decided those ties by their rounding (up to 140 ulp apart): noisy_p_correct 0.6668 at rho
    0.3 (exact 0.6093), 0.8179 at 1.0 (0.7023), 0.8866 at 2.0 (0.8207). Both enumerations
    neglect less than 1e-12.
    """
    from dprisk.models.mechanism.discrete_gaussian import logpmf, support_halfwidth

    half = int(support_halfwidth(rho, 1e-17))
    pmf = np.exp(logpmf(np.arange(-half, half + 1), 0, rho))
    want = (1.0 + float(pmf @ pmf)) / 2.0
    got = uo.product_risk_unknown_others(rho, rho, d, [0, 0, 1.0], m=0, p=0.5)
    assert got.noisy_p_correct == pytest.approx(want, abs=1e-12)
    known = exact.product_risk(rho, rho, [2], m=0, p=0.5)
    assert known.noisy_p_correct == pytest.approx(want, abs=1e-12)
    assert got.noisy_accuracy == pytest.approx(known.noisy_accuracy, abs=1e-12)


def test_split_prior_is_multinomial():
    configs = uo.split_prior([0.2, 0.3, 0.5], 2)
    assert sum(w for _, w in configs) == pytest.approx(1.0, abs=1e-15)
    for y, w in configs:
        total = sum(y)
        want = [0.2, 0.3, 0.5][total] * stats.multinomial.pmf(y, total, [0.5, 0.5])
        assert w == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize(("rho1", "rho2", "d", "prior", "p"), [
    (RHO1, RHO2, 1, [1, 1, 1, 1, 1], 0.5),
    (0.5, 0.3, 2, [0, 1, 1], 0.3),
    (0.3, 1.0, 1, [1, 2, 1], 0.7),
])
def test_data_processing_bounds(rho1, rho2, d, prior, p):
    got = uo.product_risk_unknown_others(rho1, rho2, d, prior, m=0, p=p)
    assert got.marginal_posterior <= got.noisy_marginal_posterior + 1e-12
    assert got.accuracy <= got.noisy_accuracy + 1e-12


def test_unknown_others_lower_the_invariant_risk():
    """With the others unknown, the block-group invariant no longer reveals the target."""
    got = uo.product_risk_unknown_others(RHO1, RHO2, 1, np.ones(6), invariant="block-group")
    assert got.marginal_posterior < 0.99


@pytest.mark.parametrize(("args", "match"), [
    ((RHO1, RHO2, 0, [1.0]), "^d"),
    ((RHO1, RHO2, 1, [-1.0, 1.0]), "^total_prior"),
    ((RHO1, RHO2, 1, []), "^total_prior"),
    ((RHO1, RHO2, 3, np.ones(30)), "^d = 3"),
    ((RHO1, RHO2, 1, "improper"), "^total_prior must be .* got 'improper'"),
    ((RHO1, RHO2, 1, [[1.0, "a"]]), "^total_prior"),
    # before: (Y + 1)**26 candidate splits listed before the size check (no answer in minutes)
    ((RHO1, RHO2, 27, np.ones(10)), "^d = 27 other blocks with totals up to 9"),
])
def test_refused(args, match):
    import time

    start = time.process_time()
    with pytest.raises(ValueError, match=match):
        uo.product_risk_unknown_others(*args)
    assert time.process_time() - start < 1.0


def test_split_prior_lists_each_composition_once():
    """Stars and bars: C(Y + d - 1, d - 1) configurations per total, each once, in
    lexicographic order, weights summing to 1 (d = 4, totals 0..5)."""
    from math import comb

    configs = uo.split_prior(np.ones(6), 4)
    ys = [y for y, _ in configs]
    assert len(ys) == len(set(ys)) == sum(comb(total + 3, 3) for total in range(6))
    for total in range(6):
        block = [y for y in ys if sum(y) == total]
        assert block == sorted(block) and all(min(y) >= 0 and len(y) == 4 for y in block)
    assert sum(w for _, w in configs) == pytest.approx(1.0, abs=1e-14)
