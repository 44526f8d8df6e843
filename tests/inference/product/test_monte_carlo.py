"""Monte Carlo likelihood of a product value against the exact enumeration.

Tolerance: 4 MCSE per hypothesis (each estimate is a mean of 2e4 independent draws in
[0, 1]; with fixed seeds the check is deterministic) plus 1e-12 (the exact table's neglected
probability).
"""

import numpy as np
import pytest

from dprisk.inference.product import exact
from dprisk.inference.product.monte_carlo import product_likelihood_mc
from dprisk.models.census.allocation import census_level

RHO1 = census_level("block").rho
RHO2 = census_level("block-group").rho
N_SE = 4.0


@pytest.mark.parametrize(("rho1", "rho2", "others", "m", "invariant", "seed"), [
    (RHO1, RHO2, [3], 0, "none", 1),
    (0.5, 0.4, [1, 2], 1, "none", 2),
    (0.3, 1.0, [0, 1], 0, "block-group", 3),
])
def test_agrees_with_exact(rho1, rho2, others, m, invariant, seed):
    table = exact.product_table(rho1, rho2, others, m, invariant)
    top = np.argsort(table.likelihood.sum(axis=0))[::-1][:3]  # the likeliest values
    rng = np.random.default_rng(seed)
    for i in top:
        got = product_likelihood_mc(table.outputs[i], rho1, rho2, others, m, invariant,
                                    draws=20_000, random_seed=rng)
        assert np.all((got.mcse > 0) | (table.likelihood[:, i] == 0))
        assert np.all(np.abs(got.likelihood - table.likelihood[:, i])
                      <= N_SE * got.mcse + 1e-12), (table.outputs[i], got)


def test_impossible_value_is_zero():
    got = product_likelihood_mc([5, 0, 5], 0.5, 0.5, [1], invariant="block-group", draws=100,
                                random_seed=0)
    np.testing.assert_array_equal(got.likelihood, [0.0, 0.0])


@pytest.mark.parametrize(("product", "match"), [([3, 1], "product"), ([3, 1, 1], "product")])
def test_refused(product, match):
    with pytest.raises(ValueError, match=match):
        product_likelihood_mc(product, 0.5, 0.5, [1], draws=10)


@pytest.mark.parametrize(("others", "draws", "match"), [
    ([1], 10**13, r"^draws: 10000000000000 simulated releases x 2 hypotheses of 2 blocks needs "
                  r"about .* of memory"),  # before: numpy's MemoryError (146 TiB)
    ([1] * 27, 10**8, r"^draws: 100000000 simulated releases .* of memory"),
    ([1], 5 * 10**9, r"^draws: .* steps of work"),  # with 1 TiB of memory: the work limit
    ([1] * 1000, 10, r"^others: d = 1000 other blocks; the Monte Carlo allows d <= 999"),
])
def test_sizes_refused_before_simulating(others, draws, match, monkeypatch):
    import tracemalloc

    monkeypatch.delenv("DPRISK_MEMORY_LIMIT", raising=False)
    monkeypatch.delenv("DPRISK_WORK_LIMIT", raising=False)
    if "work" in match:
        monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "1TiB")
    product = [len(others) + 1, 1, *[1] * len(others)]
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match):
            product_likelihood_mc(product, 0.5, 0.5, others, draws=draws, random_seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024**2


def test_rounding_probability_equals_the_enumerated_outcomes():
    """The closed form 1 / C(|A|, r) of the one matching subset equals the sum over the
    enumerated outcomes (``rounding_outcomes``, 2**B patterns) for every outcome and for
    targets no outcome reaches, to 1e-13 relative (exp of log-gammas, B = 6)."""
    from dprisk.inference.product.monte_carlo import rounding_probability
    from dprisk.inference.product.projection_kernels import (
        project_floor,
        rounding_outcomes,
        subset_bits,
    )

    rng = np.random.default_rng(7)
    b = rng.integers(-3, 8, size=(300, 6))
    for s in (0, 1, 5, 13):
        floors, active, remainder = project_floor(b, s)
        rows, masks, prob = rounding_outcomes(floors, active, remainder)
        outcomes = floors[rows] + subset_bits(6)[masks]
        for row, outcome, want in zip(rows, outcomes, prob, strict=True):
            got = rounding_probability(floors[row:row + 1], active[row:row + 1],
                                       remainder[row:row + 1], outcome)
            assert got[0] == pytest.approx(want, rel=1e-13, abs=0)
            moved = outcome.copy()
            moved[0] += 1  # one more unit somewhere: never an outcome of this row
            assert rounding_probability(floors[row:row + 1], active[row:row + 1],
                                        remainder[row:row + 1], moved)[0] == 0.0


def test_agrees_with_the_closed_sum_beyond_the_pattern_table():
    """d = 14 (15 blocks): the enumerated rounding patterns would need 27 GB (numpy's
    MemoryError before the fix). Against the exact closed-sum likelihood
    (``monte_carlo_risk.log_likelihoods``): within 4 MCSE where the 20,000 draws hit, and
    below 3 / draws (the rule of three) where none did."""
    from dprisk.inference.product.monte_carlo_risk import log_likelihoods, simulate_releases

    rho1, rho2, m, draws = 2.0, 1.0, 1, 20_000
    others = [2, 0, 1, 3, 1, 0, 0, 2, 1, 1, 0, 4, 0, 1]
    releases = simulate_releases(np.array([m + 1, *others]), rho1, rho2, "none", 4,
                                 np.random.default_rng(5))
    exact = np.exp(log_likelihoods(releases, rho1, rho2, others, m, "none"))
    hits = 0
    for row, want in zip(releases, exact.T, strict=True):
        got = product_likelihood_mc(row, rho1, rho2, others, m, draws=draws, random_seed=11)
        bound = np.where(got.likelihood > 0, N_SE * got.mcse, 3 / draws)
        assert np.all(np.abs(got.likelihood - want) <= bound), (row, got, want)
        hits += int(np.all(got.likelihood > 0))
    assert hits >= 3


def test_the_seed_is_reported():
    """Without a seed one is drawn and reported (before: McLikelihood had no seed, the estimate
    could not be reproduced); a numpy Generator reports none."""
    product = [3, 1, 2]
    a = product_likelihood_mc(product, 0.5, 0.5, [2], draws=500)
    assert isinstance(a.random_seed, int) and a.random_seed >= 0
    b = product_likelihood_mc(product, 0.5, 0.5, [2], draws=500, random_seed=a.random_seed)
    np.testing.assert_array_equal(a.likelihood, b.likelihood)
    assert b.random_seed == a.random_seed
    c = product_likelihood_mc(product, 0.5, 0.5, [2], draws=500,
                              random_seed=np.random.default_rng(0))
    assert c.random_seed is None
