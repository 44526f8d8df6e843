"""Tests of inference.product.exact: the product's risk beside the noisy measurements.

References: the issue's independent implementation (7 digits: ``atol = 5e-8``); a separately
written brute force with exact rationals (``tests/product_brute_force.py``) at large rho,
where both enumerations neglect less than 1e-13 and agree to rounding of ~1e5 summands
(``atol = 1e-13``); the nested-levels module for the noisy side (the pair (b0*, x2*) is a
target unique at two levels, agreement to 1e-10); supplement S6 where the models coincide.
The data-processing checks allow 1e-12 (the neglected probability, < 1e-12, bounds the error).
"""

import numpy as np
import pytest
from product_brute_force import noisy_likelihood, product_likelihood

from dprisk.inference.nested.unique_levels import (
    marginal_posterior_unique_levels,
    p_correct_unique_levels,
)
from dprisk.inference.product import exact
from dprisk.inference.product import one_block as s6
from dprisk.models.census.allocation import census_level

RHO1 = census_level("block").rho
RHO2 = census_level("block-group").rho
REFERENCE = 5e-8  # the reference values carry 7 digits
BRUTE = 1e-13


def test_reference_census():
    got = exact.product_risk(RHO1, RHO2, [3], m=0, p=0.5, invariant="none")
    assert got.marginal_posterior == pytest.approx(0.5627809, abs=REFERENCE)
    assert got.p_correct == pytest.approx(0.5925918, abs=REFERENCE)
    assert got.accuracy == pytest.approx(0.6466352, abs=REFERENCE)
    assert got.noisy_marginal_posterior == pytest.approx(0.5745472, abs=REFERENCE)
    assert got.noisy_p_correct == pytest.approx(0.6613179, abs=REFERENCE)
    assert got.noisy_accuracy == pytest.approx(0.6613179, abs=REFERENCE)
    assert 0 <= got.neglected_mass < 1e-12


def test_block_group_invariant_reveals_the_target():
    got = exact.product_risk(RHO1, RHO2, [3], m=0, p=0.5, invariant="block-group")
    assert got.marginal_posterior == pytest.approx(1.0, abs=1e-12)
    assert got.p_correct == pytest.approx(1.0, abs=1e-12)
    assert got.accuracy == pytest.approx(1.0, abs=1e-12)
    plain = exact.product_risk(RHO1, RHO2, [3], m=0, p=0.5)
    assert got.noisy_marginal_posterior == plain.noisy_marginal_posterior  # NMF: no invariant


def _as_dict(table):
    return {tuple(int(v) for v in row): lik for row, lik in
            zip(table.outputs, table.likelihood.T, strict=True)}


@pytest.mark.parametrize(("rho1", "rho2", "others", "m", "invariant"), [
    (1.2, 0.7, [1], 0, "none"),
    (2.0, 1.5, [0, 2], 1, "none"),
    (1.3, 2.0, [1, 0], 0, "block-group"),
    (4.0, 4.0, [0, 1, 0], 0, "none"),  # slow (tests/conftest.py SLOW_CASES): 1.5 s
    (8.0, 8.0, [0, 1, 0], 0, "none"),  # the four blocks at noise within +-2: 0.02 s, 70 rows
])
def test_product_table_matches_brute_force(rho1, rho2, others, m, invariant):
    half1, half2 = (int(np.ceil(np.sqrt(32 / rho))) for rho in (rho1, rho2))  # tail < 2e-14
    ref = product_likelihood(rho1, rho2, others, m, invariant, half1, half2)
    got = _as_dict(exact.product_table(rho1, rho2, others, m, invariant))
    for key in set(ref) | set(got):
        want = np.array(ref.get(key, [0.0, 0.0]))
        assert np.allclose(got.get(key, np.zeros(2)), want, rtol=0, atol=BRUTE), key


def test_product_table_does_not_depend_on_how_a_sort_orders_ties(monkeypatch):
    """The noise vectors are taken heaviest first, and the DG pmf's symmetry makes many
    weights equal: numpy's default sort orders such ties differently on AVX-512, AVX2 and
    baseline CPUs (its x86-simd-sort kernels), and the order is the summation order of each
    output's likelihood, so the table's last bits moved with the CPU (AVX2 and baseline
    agree to the bit once the order is fixed). A sort that reverses ties, as another CPU's
    may, must give the same table bit for bit."""
    original = np.argsort

    def ties_reversed(a, axis=-1, kind=None, order=None, **kwargs):
        if kind == "stable" or np.ndim(a) != 1:
            return original(a, axis=axis, kind=kind, order=order, **kwargs)
        # an ascending order with equal keys in decreasing index order
        return np.size(a) - 1 - original(np.asarray(a)[::-1], kind="stable")

    want = exact.product_table(0.3, 0.3, [1, 2, 0], 1, "none")
    monkeypatch.setattr(np, "argsort", ties_reversed)
    got = exact.product_table(0.3, 0.3, [1, 2, 0], 1, "none")
    assert np.array_equal(got.outputs, want.outputs)
    assert np.array_equal(got.likelihood, want.likelihood)


def test_noisy_table_matches_brute_force():
    ref = noisy_likelihood(1.1, 0.8, [2, 1], 1, 6, 7)
    got = _as_dict(exact.noisy_table(1.1, 0.8, [2, 1], 1))
    for key in set(ref) | set(got):
        assert np.allclose(got.get(key, np.zeros(2)), ref.get(key, [0.0, 0.0]), atol=BRUTE)


@pytest.mark.parametrize("rhos", [[RHO1, RHO2], [0.3, 0.3]])
@pytest.mark.parametrize("p", [0.3, 0.5, 0.8])
def test_noisy_side_is_unique_at_two_levels(p, rhos):
    """Equal rhos at p = 1/2 make exact ties (posterior 1/2 where x1* - m + x2* - M = 1),
    decided m as the rule says: before, deciding them m + 1 went unnoticed (the Census rhos
    never tie), and the noisy accuracy was not compared at all."""
    from dprisk.inference.privacy.worst_case import bayes_accuracy_levels

    got = exact.product_risk(*rhos, [2, 4], m=1, p=p)
    assert got.noisy_marginal_posterior == pytest.approx(
        float(marginal_posterior_unique_levels(rhos, p)), abs=1e-10)
    assert got.noisy_p_correct == pytest.approx(float(p_correct_unique_levels(rhos, p)),
                                                abs=1e-10)
    assert got.noisy_accuracy == pytest.approx(bayes_accuracy_levels(rhos, p), abs=1e-10)


SCENARIOS = [  # (rho1, rho2, others, m, p)
    (RHO1, RHO2, [3], 0, 0.5),
    (RHO1, RHO2, [0], 0, 0.4),
    (RHO1, RHO2, [0, 0], 2, 0.2),
    (RHO1, RHO2, [1, 5, 0], 0, 0.5),
    (0.05, 0.5, [2], 1, 0.7),
    (0.5, 0.1, [0, 3], 0, 0.5),
    (1.0, 1.0, [0, 0, 0], 0, 0.1),
    (0.3, 0.02, [4], 3, 0.9),
    (2.0, 0.25, [1, 1], 0, 0.5),
]


@pytest.mark.parametrize(("rho1", "rho2", "others", "m", "p"), SCENARIOS)
def test_data_processing_bounds(rho1, rho2, others, m, p):
    got = exact.product_risk(rho1, rho2, others, m=m, p=p)
    assert got.marginal_posterior <= got.noisy_marginal_posterior + 1e-12
    assert got.accuracy <= got.noisy_accuracy + 1e-12


def test_p_correct_is_not_bounded_counterexample():
    """P[correct] at the truth alone is a true-positive rate: post-processing can raise it."""
    got = exact.product_risk(RHO1, RHO2, [0], m=0, p=0.4)
    assert round(got.p_correct, 4) == 0.4761
    assert round(got.noisy_p_correct, 4) == 0.4736
    assert got.p_correct > got.noisy_p_correct
    assert got.accuracy <= got.noisy_accuracy  # the prior-weighted accuracy still is bounded


@pytest.mark.parametrize(("x2", "m"), [(1, 0), (4, 1), (6, 2)])
def test_s6_special_case(x2, m):
    """d = 1, block-group total held exact at x2, the adversary's others = x2 - k.

    This is S6's model with the exact noise on the other block (d = 1): the least-squares
    block value (d x1* + x~2 - y1*)/(d+1) truncated to [0, x~2] is the projection onto the
    simplex. S6 rounds ties up, down or to even; the product breaks them at random, so its
    likelihood is the average of S6's "up" and "down" likelihoods.
    """
    rho1 = 0.4
    rows = []
    for h, k in enumerate((m, m + 1)):
        table = exact.product_table(rho1, 1.0, [x2 - k], m=k if h == 0 else k - 1,
                                    invariant="block-group")
        at_x2 = table.outputs[:, 0] == x2
        lik = np.zeros(x2 + 1)
        lik[table.outputs[at_x2, 1]] = table.likelihood[h, at_x2]
        rows.append(lik)
    up = np.exp(s6.likelihood(x2, rho1, 1, known=m, x2=x2, ties="up",
                              y_noise="exact").log_likelihood)
    down = np.exp(s6.likelihood(x2, rho1, 1, known=m, x2=x2, ties="down",
                                y_noise="exact").log_likelihood)
    np.testing.assert_allclose(np.stack(rows), (up + down) / 2, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"others": [-1]}, "others"),
    ({"others": []}, "others"),
    ({"rho1": 0.0}, "rho1"),
    ({"rho2": -1.0}, "rho2"),
    ({"m": -1}, "m"),
    ({"p": 1.0}, "p"),
    ({"invariant": "state"}, "invariant"),
    ({"others": [0, 0, 0, 0, 0]}, "others"),
])
def test_refused(kwargs, name):
    args = {"rho1": RHO1, "rho2": RHO2, "others": [3], "m": 0, "p": 0.5,
            "invariant": "none"} | kwargs
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        exact.product_risk(**args)


def test_census_d3_is_enumerable():
    got = exact.product_risk(RHO1, RHO2, [3, 2, 5], m=0, p=0.5)
    assert got.neglected_mass < 1e-12
    assert got.marginal_posterior <= got.noisy_marginal_posterior


@pytest.mark.parametrize(("others", "m"), [([3, 1], 0), ([0], 2), ([7, 0, 5], 1)])
def test_invariant_total_reveals_the_target(others, m):
    """Bayes' rule over k in {m, m+1} with the likelihood 1{N = k + sum(others)} (any p)."""
    p = 0.3
    for total in range(m + sum(others) - 1, m + sum(others) + 3):
        like = {k: float(total == k + sum(others)) for k in (m, m + 1)}
        evidence = p * like[m + 1] + (1 - p) * like[m]
        if evidence == 0.0:
            with pytest.raises(ValueError, match=rf"^block_group_total N = {total} is "
                               "infeasible"):
                exact.invariant_posterior(total, others, m)
            continue
        k, posterior = exact.invariant_posterior(total, others, m)
        assert posterior == p * like[m + 1] / evidence
        assert k == total - sum(others) and k in (m, m + 1)


@pytest.mark.parametrize("tail_mass", [0, -1e-13, float("nan"), 0.5, "1e-13"])
@pytest.mark.parametrize("table", ["product_table", "noisy_table"])
def test_tail_mass_out_of_range_is_refused(table, tail_mass):
    """Before: tail_mass = 0 gave "rho = 0.5 is too small ... (allowed range for tail_mass = 0:
    rho >= inf)" after a RuntimeWarning, 0.5 was used as given."""
    with pytest.raises((ValueError, TypeError), match=r"^tail_mass must be"):
        getattr(exact, table)(0.5, 0.5, [1], tail_mass=tail_mass)
