"""Tests of the exact methods for a target unique at ell levels (supplement S1.3).

References: brute-force Bayes over explicit joint release grids (neglected mass below
e^-600), and agreement of enumeration, contour integral and the single-level closed form.
Tolerances as in test_single_level: rtol 1e-12 against brute-force double-precision sums.
"""

import numpy as np
import pytest
from census_values import RHO_BLOCK
from level_references import brute_joint_posterior

from dprisk.inference.nested import unique_levels as ulv
from dprisk.inference.nested import unique_levels_kernels as exact
from dprisk.inference.single_level import closed_form as sl
from dprisk.models.census.allocation import census_rhos
from dprisk.models.mechanism import discrete_gaussian as dg

RTOL = 1e-12


# --------------------------------------------------------------------------- several levels
def test_unique_levels_posterior_equals_direct_bayes():
    rhos = np.array(census_rhos(3))
    grid = np.stack(np.meshgrid(np.arange(-4, 6), np.arange(-3, 5), np.arange(-5, 4),
                                indexing="ij"), axis=-1)
    for p, m in ((0.5, 0), (1 / 864, 2)):
        out = ulv.posterior_unique_levels(grid + m, rhos, p, known=m)
        ref = brute_joint_posterior(np.moveaxis(grid + m, -1, 0), rhos, p, m)
        np.testing.assert_allclose(out, ref, rtol=RTOL)
    x = np.arange(-5, 6)
    # one level: the single-level formula through another kernel and layout, whose exp/log
    # may be other CPU kernels (array vs scalar, AVX-512): a few ulps, 1e-14 relative
    np.testing.assert_allclose(ulv.posterior_unique_levels(x[:, None], [0.3], 0.2),
                               sl.posterior(x, 0.3, 0.2), rtol=1e-14, atol=0)


def joint_grid(rhos, log_floor=600.0):
    """Per-level grids |x - 1| <= sqrt(log_floor / (ell rho)): joint pmf > e^-log_floor."""
    half = [int(np.sqrt(log_floor / (len(rhos) * r))) for r in rhos]
    return np.meshgrid(*[np.arange(1 - h, 2 + h) for h in half], indexing="ij")


def brute_levels(rhos, p):
    xs = joint_grid(rhos)
    weight = np.prod([dg.pmf(x, 1, r) for x, r in zip(xs, rhos, strict=True)], axis=0)
    post = brute_joint_posterior(xs, rhos, p, 0)
    return float(np.sum(weight * post)), float(np.sum(weight * (post > 0.5)))


@pytest.mark.parametrize("rhos", [census_rhos(2), [0.7, 0.7], [2.0, 0.01], [100.0, 0.05]])
@pytest.mark.parametrize("p", [0.5, 0.2, 1 / 864])
def test_two_levels_against_brute_force(rhos, p):
    marginal, correct = brute_levels(rhos, p)
    for method in ("enumerate", "contour"):
        assert float(ulv.marginal_posterior_unique_levels(rhos, p, method=method)) == \
            pytest.approx(marginal, rel=1e-12)
    assert float(ulv.p_correct_unique_levels(rhos, p)) == pytest.approx(correct, rel=1e-12)


@pytest.mark.parametrize("p", [0.5, 1 / 864, 1e-9, 1e-300, 1 - 1e-6])
def test_contour_equals_exact_enumeration_three_census_levels(p):
    rhos = census_rhos(3)
    exact = ulv.log_marginal_posterior_unique_levels(rhos, p, method="enumerate")
    contour = ulv.log_marginal_posterior_unique_levels(rhos, p, method="contour")
    assert float(contour) == pytest.approx(float(exact), rel=1e-13, abs=1e-13)


def test_one_level_unique_equals_single_level():
    p = np.array([0.5, 0.2, 1 / 864])
    for method in ("enumerate", "contour"):
        np.testing.assert_allclose(
            ulv.marginal_posterior_unique_levels([RHO_BLOCK], p, method=method),
            sl.marginal_posterior(RHO_BLOCK, p), rtol=1e-13)
    np.testing.assert_allclose(ulv.p_correct_unique_levels([RHO_BLOCK], p),
                               sl.p_correct(RHO_BLOCK, p), rtol=1e-14, atol=0)  # as above


def test_split_enumeration_paths_agree(monkeypatch):
    """Force the (first levels) x (remaining levels) split and compare with one enumeration."""
    rhos = [1.0, 2.0, 1.5, 3.0]
    p = np.array([0.5, 0.05])
    marginal = ulv.marginal_posterior_unique_levels(rhos, p, method="enumerate")
    correct = ulv.p_correct_unique_levels(rhos, p)
    for k, pk in enumerate(p):
        brute_marginal_k, brute_correct_k = brute_levels(rhos, pk)
        assert marginal[k] == pytest.approx(brute_marginal_k, rel=1e-12)
        assert correct[k] == pytest.approx(brute_correct_k, rel=1e-12)
    monkeypatch.setattr(exact, "MAX_ATOMS", 400)
    np.testing.assert_allclose(ulv.marginal_posterior_unique_levels(rhos, p, method="enumerate"),
                               marginal, rtol=1e-13)
    np.testing.assert_allclose(ulv.p_correct_unique_levels(rhos, p), correct, rtol=1e-12)


@pytest.mark.parametrize("levels", [4, 6])
def test_census_levels_increase_with_levels(levels):
    """Up to 4 levels in the default run (0.1 s); 6 (the census, 2.7 s: the 5- and 6-level
    marginals) is a SLOW_CASES entry, whose 6-level sum test_unique_levels.py checks."""
    p = np.array([0.5, 0.2, 1 / 864])
    values = np.array([ulv.marginal_posterior_unique_levels(census_rhos(n), p)
                       for n in range(1, levels + 1)])
    assert np.all(np.diff(values, axis=0) > 0)
    correct = np.array([ulv.p_correct_unique_levels(census_rhos(n), 0.5)
                        for n in range(1, levels + 1)])
    assert np.all(np.diff(correct) > 0)


def test_equal_rhos_exact_ties_decide_m():
    """rho (0.3, 0.3), p = 1/2: log-odds 0.6 (j1 + j2 + 1) is exactly 0 on j1 + j2 = -1."""
    _, correct = brute_levels([0.3, 0.3], 0.5)
    assert float(ulv.p_correct_unique_levels([0.3, 0.3], 0.5)) == pytest.approx(correct,
                                                                               rel=1e-13)


def equal_rho_law(rho, levels):
    """Law of sum_i (2 j_i + 1), j_i iid DG(0, 1/(2 rho)): integer convolution (no rounding
    of the decision: the log-odds at p = 1/2 is rho times this integer)."""
    half = int(np.sqrt(80.0 / rho)) + 2  # neglected mass per level below e^-80
    j = np.arange(-half, half + 1)
    law = np.array([1.0])
    for _ in range(levels):
        law = np.convolve(law, dg.pmf(j, 0, rho))
    return 2 * np.arange(-half * levels, half * levels + 1) + levels, law


@pytest.mark.parametrize(("rho", "levels"), [(0.1, 4), (1 / 3, 4), (0.7, 6), (0.05, 6)])
@pytest.mark.parametrize("halves", [False, True])
def test_equal_rhos_exact_ties_decide_m_at_more_levels(rho, levels, halves, monkeypatch):
    """Equal rhos at p = 1/2: the log-odds rho * sum_i (2 j_i + 1) is exactly 0 wherever the
    odd terms add up to 0 (8 % of the releases at rho = 0.1, four levels), and the rule
    decides m there. The terms, accumulated level by level in floats, left such a sum an ulp
    or so on either side of 0 (0.1 * 3 - 0.1 - 0.1 - 0.1 = 2.8e-17): P[correct] 0.6483
    instead of 0.6316 at rho = 0.1, four levels. Against the integer law: the true-positive
    rate P1[sum > 0] and the true-negative rate P0[L <= 0] = P1[sum >= 0] (symmetry) to
    1e-13 relative (sums of a few thousand rounded probabilities), with the enumeration's own
    split and with the levels split in two halves (MAX_ATOMS lowered to one half's atoms)."""
    from dprisk.inference.privacy.worst_case import EXACT_TAIL, bayes_accuracy_levels
    from dprisk.inference.privacy.worst_case_kernels import atoms_true_negative

    if halves:
        size = 2 * int(dg.support_halfwidth(rho, exact.TAIL_ABSOLUTE / levels)) + 1
        monkeypatch.setattr(exact, "MAX_ATOMS", size ** (levels // 2))
    total, law = equal_rho_law(rho, levels)
    positive, negative = law[total > 0].sum(), law[total >= 0].sum()
    rhos = [rho] * levels
    assert float(ulv.p_correct_unique_levels(rhos, 0.5)) == pytest.approx(positive, rel=1e-13)
    assert atoms_true_negative(np.array(rhos), 0.5, EXACT_TAIL) == pytest.approx(negative,
                                                                                 rel=1e-13)
    assert bayes_accuracy_levels(rhos, 0.5) == pytest.approx((positive + negative) / 2,
                                                             rel=1e-13)


def test_enumeration_refuses_six_census_levels():
    with pytest.raises(ValueError, match="contour"):
        ulv.marginal_posterior_unique_levels(census_rhos(6), 0.5, method="enumerate")


# --------------------------------------------------------------------------- far tail
def mp_p_correct_levels(rhos, p):
    """P[logit(p) + sum_i rho_i (2 j_i + 1) > 0], j_i ~ DG(0, 1/(2 rho_i)), in mpmath.

    Nested sums over |j_i| <= sqrt(L / rho_i) at 50 digits (the last level a tail sum):
    every neglected j has weight below e^-L / Z, and the neglected mass of level i is below
    2 e^-L / (1 - e^(-rho_i (2 h_i + 1))), an absolute bound on the value's error. L = 200
    first (the nested sums about a sixth of L = 700's at three levels), kept when that bound
    is under 1e-20 of the value (far inside the tests' rtol 1e-12); else L = 700
    (every neglected j below e^-700 / Z, 1e-304, far below the values tested, >= 7e-252).
    The rhos and p are the floats the kernel gets, taken exactly.
    """

    for log_floor in (200, 700):
        value, bound = _mp_p_correct_levels(rhos, p, log_floor)
        if bound <= 1e-20 * value:
            return float(value)
    return float(value)


def _mp_p_correct_levels(rhos, p, log_floor):
    """:func:`mp_p_correct_levels` over the windows of ``log_floor``: (value, bound on the
    neglected mass), both mpmath numbers."""
    import mpmath as mp

    with mp.workdps(50):
        rhos = [mp.mpf(float(r)) for r in rhos]
        half = [int(mp.sqrt(log_floor / r)) + 1 for r in rhos]
        weights = []
        for r, h in zip(rhos, half, strict=True):
            w = [mp.exp(-r * j * j) for j in range(-h, h + 1)]
            total = mp.fsum(w)
            weights.append([x / total for x in w])
        p = mp.mpf(float(p))
        cut = -mp.log(p / (1 - p))  # decide "has c" iff sum rho_i (2 j_i + 1) > cut

        def tail(level, partial):
            h, r = half[level], rhos[level]
            if level == len(rhos) - 1:
                return mp.fsum(w for j, w in zip(range(-h, h + 1), weights[level], strict=True)
                               if partial + r * (2 * j + 1) > cut)
            return mp.fsum(w * tail(level + 1, partial + r * (2 * j + 1))
                           for j, w in zip(range(-h, h + 1), weights[level], strict=True))

        bound = mp.fsum(2 * mp.exp(-log_floor) / (1 - mp.exp(-r * (2 * h + 1)))
                        for r, h in zip(rhos, half, strict=True))
        return tail(0, mp.mpf(0)), bound


@pytest.mark.parametrize(("rhos", "p"), [
    ((0.5, 0.7), 1e-12),                  # 6.36e-67: was 0 (TAIL_ABSOLUTE = 1e-25 absolute)
    (tuple(census_rhos(2)), 1e-6),        # block and block group: 1.67e-59, was 0
    (tuple(census_rhos(2)), 1 / 864),     # moderate tail, tilted windows
    ((2.0, 0.01), 1e-30),                 # mixed scales
    ((0.5, 0.7, 0.9), 1e-12),             # three levels
])
def test_far_tail_is_relatively_accurate(rhos, p):
    # The kernel's log-weights -rho j^2 - log Z and their log-space sums reach magnitudes
    # of a few hundred; a few ulps of that (~1e-13) is what exp turns into a relative
    # error of the result, and the neglected tail is ~1e-25 relative: rtol 1e-12.
    ref = mp_p_correct_levels(rhos, p)
    assert ref > 0
    assert float(ulv.p_correct_unique_levels(list(rhos), p)) == pytest.approx(ref, rel=1e-12,
                                                                              abs=0)
