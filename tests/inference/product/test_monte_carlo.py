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
