"""Tests of inference/privacy/worst_case.py: the f-DP worst case beside the Bayes rule.

References: the best accuracy of any test between two distributions is
sum_x max(p P1(x), (1 - p) P0(x)); for one pair of discrete Gaussians shifted by one it is
checked against a direct sum over the release grid (scipy-free numpy, window +-60 sigma).
Bayes <= worst case holds because the Bayes rule is one test; the tolerance 1e-12 covers the
neglected release mass of the exact sums (below 1e-12 by construction) and float rounding.
The PLD bounds are computed in an empty accounting cache (``tests/conftest.py``): read from the
user's cache, a warm entry passed ``pld_accuracy_bound`` with ``delta`` scaled by 0.9.
"""

import numpy as np
import pytest
from pld_compositions import compose_once

from dprisk.inference.privacy.worst_case import (
    WorstCaseAccuracy,
    bayes_accuracy,
    bayes_accuracy_levels,
    bayes_accuracy_two_level,
    census_worst_case,
    worst_case_accuracy,
)
from dprisk.models.census.allocation import census_level

#: Every PLD bound computed, in an empty cache of this module's (``tests/conftest.py``).
pytestmark = pytest.mark.usefixtures("empty_accounting_cache")

RHO1 = census_level("block").rho
RHO2 = census_level("block-group").rho
#: Neglected release mass of the exact sums plus float rounding (module docstring).
ATOL = 1e-12


def direct_sum(rhos, p):
    """sum over the release grid of max(p P1, (1 - p) P0) for independent shifted DGs."""
    grids, p1, p0 = [], [], []
    for rho in rhos:
        half = int(np.ceil(60 / np.sqrt(2 * rho))) + 2
        x = np.arange(-half, half + 1)
        z = np.exp(-rho * x**2).sum()
        grids.append(x)
        p1.append(np.exp(-rho * (x - 1) ** 2) / z)
        p0.append(np.exp(-rho * x**2) / z)
    joint1, joint0 = p1[0], p0[0]
    for a, b in zip(p1[1:], p0[1:], strict=True):
        joint1 = np.multiply.outer(joint1, a)
        joint0 = np.multiply.outer(joint0, b)
    return float(np.maximum(p * joint1, (1 - p) * joint0).sum())


def test_the_docstring_example_gives_its_values():
    """worst_case_accuracy's Examples said 'rho1 = 0.0992 ... the value is 0.588860', the
    value at the block's rho 0.0992264 (0.0992 itself gives 0.588849): every rho1 the example
    states gives its stated value to its 6 decimals."""
    import re

    doc = worst_case_accuracy.__doc__.split("Examples")[1]
    stated = [(float(rho), float(value)) for rho, value in
              re.findall(r"rho1 = (?:``[^`]*`` = )?(0\.\d+)[^.]*?(?:value is|gives) (0\.\d+)",
                         " ".join(doc.split()))]
    assert stated, doc
    for rho, value in stated:
        assert worst_case_accuracy(rho, 0.5).accuracy == pytest.approx(value, abs=5e-7)


def test_census_block_coincidence_at_half():
    worst = worst_case_accuracy(RHO1, 0.5)
    assert isinstance(worst, WorstCaseAccuracy)
    assert worst.method == "exact"
    assert worst.accuracy == pytest.approx(0.588860, abs=5e-7)
    assert bayes_accuracy(RHO1, 0.5) == pytest.approx(worst.accuracy, abs=ATOL)
    tv = worst.total_variation
    assert worst.accuracy == pytest.approx((1 + tv) / 2, abs=1e-15)


@pytest.mark.parametrize("rhos", [[0.01], [RHO1], [1.7], [RHO1, RHO2], [0.3, 0.05],
                                  [0.2, 0.2, 0.7]])
@pytest.mark.parametrize("p", [0.5, 0.2, 1 / 864, 0.9])
def test_exact_matches_direct_sum(rhos, p):
    assert worst_case_accuracy(rhos, p).accuracy == pytest.approx(direct_sum(rhos, p),
                                                                  abs=1e-12)


@pytest.fixture(scope="module")
def composed_plds():
    """The composed PLDs of :func:`test_pld_brackets_exact`, by ``composed_pld``'s arguments."""
    return {}


@pytest.fixture
def composed_once(composed_plds, monkeypatch):
    """Each PLD composed once in this module: the bounds at p = 0.5 and 0.1 read the same one.

    The composition does not depend on p (only the hockey-stick divergence read from it, at
    ``|logit p|``), and reading it leaves it as it was: the same bounds, bit for bit, with
    ``worst_case_accuracy``'s whole path (its cache keys include p) still run at each p.
    """
    from dprisk.inference.privacy import worst_case_kernels

    compose_once(worst_case_kernels, monkeypatch, composed_plds)


@pytest.mark.parametrize("rhos", [[RHO1], [RHO1, RHO2], [0.5, 0.05, 0.2]])
@pytest.mark.parametrize("p", [0.5, 0.1])
def test_pld_brackets_exact(rhos, p, composed_once):
    exact = worst_case_accuracy(rhos, p, method="exact").accuracy
    pld = worst_case_accuracy(rhos, p, method="pld", value_discretization_interval=1e-4)
    assert pld.lower - ATOL <= exact <= pld.upper + ATOL
    assert pld.upper - pld.lower < 1e-3


@pytest.mark.parametrize("rho", [0.003, RHO1, 0.7, 4.0])
@pytest.mark.parametrize("p", [0.5, 0.2, 0.02, 1 / 864, 0.8])
@pytest.mark.parametrize("known", [0, 3])
def test_single_level_bayes_is_worst_case(rho, p, known):
    assert bayes_accuracy(rho, p, known) == pytest.approx(
        worst_case_accuracy(rho, p).accuracy, abs=ATOL)


@pytest.mark.parametrize("rhos", [[RHO1, RHO2], [0.05, 0.5, 0.01], [0.3, 0.3]])
@pytest.mark.parametrize("p", [0.5, 0.1, 1 / 50])
def test_unique_levels_bayes_below_worst_case(rhos, p):
    bayes = bayes_accuracy_levels(rhos, p)
    worst = worst_case_accuracy(rhos, p).accuracy
    assert bayes <= worst + ATOL
    # the Bayes rule of the right model is the likelihood-ratio test: equal up to float ties
    assert bayes == pytest.approx(worst, abs=1e-9)


@pytest.mark.parametrize(("rho1", "rho2", "d", "x2", "p", "prior"), [
    (RHO1, RHO2, 27, 1, 0.5, "improper"),
    (RHO1, RHO2, 27, 10, 0.2, "improper"),
    (0.5, 0.5, 2, 3, 0.5, "truncated:10"),
    (0.3, 2.0, 1, 1, 0.1, "point:1"),
    (1.0, 0.05, 5, 20, 1 / 50, "improper"),
])
def test_two_level_bayes_below_worst_case(rho1, rho2, d, x2, p, prior):
    bayes = bayes_accuracy_two_level(x2=x2, rho1=rho1, rho2=rho2, d=d, p=p, prior=prior)
    worst = worst_case_accuracy([rho1, rho2], p).accuracy
    assert bayes <= worst + ATOL
    assert bayes >= max(p, 1 - p) - 0.05  # not a degenerate rule


def test_census_detailed_and_all():
    detailed = census_worst_case(queries="detailed")
    assert detailed.method == "exact" and detailed.queries == 2
    assert detailed.accuracy == pytest.approx(worst_case_accuracy([RHO1, RHO2]).accuracy)
    full = census_worst_case()
    assert full.method == "pld" and full.queries == 65
    assert full.lower <= full.upper < full.lower + 1e-3
    assert full.accuracy > detailed.accuracy


def test_bad_input():
    with pytest.raises(ValueError, match="rhos"):
        worst_case_accuracy([], 0.5)
    with pytest.raises(ValueError, match="method"):
        worst_case_accuracy(0.1, 0.5, method="mc")
    with pytest.raises(ValueError, match="p"):
        worst_case_accuracy(0.1, 1.5)
    with pytest.raises(ValueError, match="queries"):
        census_worst_case(queries="block")


@pytest.mark.parametrize("rhos", [[0.5, 1e5], [1e5, 1e5, 0.5], [0.5, 1e10]])
def test_bayes_accuracy_levels_never_above_one_at_large_rho(rhos):
    """A large rho beside a small one: the true-negative rate summed as P0 weights w e^{-L}
    came out 1 + 9e-13 (log w and L both near -1e5, their difference losing digits). Summed
    with P1 weights by the symmetry P0[L <= c] = P1[L >= -c] every term is a probability:
    the result is 1 within summation rounding and never above it (the limit is 1: the
    release at rho = 1e5 reveals the count with probability 1 - e^{-1e5})."""
    accuracy = bayes_accuracy_levels(rhos, 0.5)
    assert accuracy <= 1.0
    assert accuracy == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("p", [0.1, 1 / 3, 0.5, 0.9])
@pytest.mark.parametrize("rhos", [[0.1, 0.2], [0.1, 0.1, 0.1], [0.05, 0.0992, 0.3]])
def test_true_negative_by_symmetry_equals_the_p0_sum(rhos, p):
    """The rate by P1 weights equals the direct P0 sum (ties at posterior 1/2 included: three
    equal rhos are commensurate) within summation rounding, 1e-14 relative."""
    from dprisk.inference.nested.unique_levels_kernels import split_atoms
    from dprisk.inference.privacy.worst_case import EXACT_TAIL
    from dprisk.inference.privacy.worst_case_kernels import atoms_true_negative
    from dprisk.models.numerics import logit

    rho_values = np.array(rhos)
    (s_a, w_a), (s_b, w_b) = split_atoms(rho_values, EXACT_TAIL / rho_values.size)
    lower0 = np.concatenate([[0.0], np.cumsum(np.exp(w_b - s_b))])
    idx = np.searchsorted(s_b, -float(logit(p)) - s_a, side="right")
    direct = float(np.dot(np.exp(w_a - s_a), lower0[idx]))
    assert atoms_true_negative(rho_values, p, EXACT_TAIL) == pytest.approx(direct, rel=1e-14)


def test_two_level_bayes_accuracy_of_a_truth_stated_at_x1_known():
    """Stated at (m, x2) the truth belongs to the pair (m + 1, x2 + 1), (m, x2): same value."""
    kwargs = {"rho1": 0.5, "rho2": 0.5, "d": 2, "p": 0.3, "known": 1}
    lifted = bayes_accuracy_two_level(x2=4, x1=1, **kwargs)
    assert lifted == bayes_accuracy_two_level(x2=5, **kwargs)
    assert bayes_accuracy_two_level(x2=4, x1=2, **kwargs) == bayes_accuracy_two_level(
        x2=4, **kwargs)
    assert lifted != bayes_accuracy_two_level(x2=4, **kwargs)
    with pytest.raises(ValueError, match=r"^x1 must be known or known \+ 1"):
        bayes_accuracy_two_level(x2=4, x1=3, **kwargs)


@pytest.mark.parametrize(("rho1", "rho2", "d", "p", "known"), [
    (0.5, 0.3, 1, 0.5, 0), (RHO1, 0.2, 27, 0.2, 2), (1.0, 0.05, 5, 1 / 50, 0),
])
def test_two_level_bayes_accuracy_equals_worst_case_when_the_others_are_known(rho1, rho2, d,
                                                                              p, known):
    """With the others' count known (a prior putting X2 - X1 = 3 for sure) the two truths
    of the pair, (m + 1, m + 4) and (m, m + 3), differ by one in x1 and in x2 and not in
    y1, and the adversary's posterior is their likelihood ratio (the y1* factor, whatever
    its d, is the same for both branches): its accuracy is the worst case of the queries
    (rho1, rho2), an independent atom enumeration. Before this test the pair's second truth
    could be (m, x2) instead of (m, x2 - 1) unnoticed (0.6587 instead of 0.7372 in the first
    case). Tolerance: each P[correct] leaves out less than the studies' tail mass 1e-9 of its
    release grid (only ever lowering it), the worst case is exact to 1e-20."""
    import pytensor.tensor as pt

    from dprisk.inference.studies.setup import DEFAULT_TAIL_MASS
    from dprisk.models.priors.library import UserPrior

    others = 3
    prior = UserPrior(lambda k2, k1: pt.zeros_like(k2, dtype="float64"),
                      support=lambda k1: (k1 + others, k1 + others),
                      description="X2 - X1 = 3 for sure")
    bayes = bayes_accuracy_two_level(x2=known + 1 + others, rho1=rho1, rho2=rho2, d=d, p=p,
                                     known=known, prior=prior)
    worst = worst_case_accuracy([rho1, rho2], p, method="exact").accuracy
    assert worst - DEFAULT_TAIL_MASS <= bayes <= worst + ATOL


@pytest.mark.parametrize("p", [0.3, 0.9, 0.999])
def test_tiny_rhos_stay_at_or_above_the_prior_mode(p):
    """A* and the Bayes accuracy are at least max(p, 1 - p) (guess the prior's mode).

    At rhos (1e-9, 1e-9) the exact sums' rounding gave 6.3e-14 (p = 0.3), 8.0e-14 (0.9) and
    8.9e-14 (0.999) below that bound, breaking the documented range. The exact excess is
    nil here (deciding m + 1 needs the log-likelihood ratio past logit(p), some 1e4 noise
    standard deviations out), so the answers sit on the floor, within 1e-12.
    """
    floor = max(p, 1 - p)
    accuracy = bayes_accuracy_levels([1e-9, 1e-9], p)
    worst = worst_case_accuracy([1e-9, 1e-9], p, method="exact")
    assert floor <= accuracy <= 1.0
    assert floor <= worst.lower <= worst.upper <= 1.0
    assert accuracy - floor < 1e-12 and worst.lower - floor < 1e-12
