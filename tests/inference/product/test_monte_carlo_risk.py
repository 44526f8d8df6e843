"""Monte Carlo over releases with exact per-release likelihoods (``monte_carlo_risk``).

* The closed-sum likelihood of every product value equals the exact enumeration's
  (:func:`dprisk.inference.product.exact.product_table`, itself checked against the rational
  brute force): both neglect at most ``TAIL_MASS = 1e-13`` per hypothesis (window and
  pruning), so ``atol = 3e-13`` on every entry.
* It agrees with the simulated likelihood of :mod:`dprisk.inference.product.monte_carlo`
  (an independent estimator) within 4 MCSE at d = 5, beyond cheap enumeration.
* The Monte Carlo risk agrees with the exact risk within 4 MCSE (each measure, three small
  scenarios; a fixed seed, so the test is deterministic; with independent seeds a
  4-MCSE miss of one of the 9 comparisons has probability about 9 x 6e-5).
* With the invariant and known others every release reveals the target (posterior 1, MCSE
  0); at d = 40 (far beyond enumeration) the data-processing bound holds within 4 MCSE.
"""

import numpy as np
import pytest

from dprisk.inference.product.exact import product_risk, product_table
from dprisk.inference.product.monte_carlo import product_likelihood_mc
from dprisk.inference.product.monte_carlo_risk import (
    MAX_BLOCKS,
    log_likelihoods,
    mc_steps,
    product_risk_mc,
    simulate_releases,
)

SCENARIOS = [
    (0.0992, 0.2465, [3], 0, 0.5, "none"),          # the Census rho of the reference
    (0.3, 0.2, [0, 2], 1, 0.4, "none"),             # a zero block: inactive blocks
    (0.4, 0.3, [1, 0, 2], 0, 0.5, "block-group"),   # the invariant
    (0.8, 0.5, [0, 0, 0], 0, 0.3, "none"),          # many ties and zeros
    (0.05, 1.0, [7, 2], 3, 0.5, "none"),            # wide block noise
]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_likelihood_equals_enumeration(scenario):
    rho1, rho2, others, m, _, invariant = scenario
    table = product_table(rho1, rho2, others, m, invariant)
    closed = np.exp(log_likelihoods(table.outputs, rho1, rho2, others, m, invariant))
    np.testing.assert_allclose(closed, table.likelihood, rtol=0, atol=3e-13)


def test_likelihood_of_values_the_table_leaves_out():
    """A value outside the table's support has likelihood 0 in both (here: wrong total)."""
    out = np.array([[5, 5, 0]])  # blocks add to 5 with the invariant total 4 (m = 0, y = 3)
    ll = log_likelihoods(out, 0.5, 0.5, [3], 0, "block-group")
    assert np.all(ll == -np.inf)


def test_likelihood_matches_simulated_estimate():
    """50,000 simulated products per release (200,000 before: 0.9 s of CPU): the bound is 4 of
    the estimate's own MCSE, which grows as 1/sqrt(draws), so it stays calibrated."""
    rho1, rho2, others, m = 0.6, 0.5, [2, 0, 1, 3, 1], 1
    rng = np.random.default_rng(5)
    releases = simulate_releases(np.array([m + 1, *others]), rho1, rho2, "none", 4, rng)
    exact = np.exp(log_likelihoods(releases, rho1, rho2, others, m, "none"))
    for row, want in zip(releases, exact.T, strict=True):
        est = product_likelihood_mc(row, rho1, rho2, others, m, "none", draws=50_000,
                                    random_seed=11)
        assert np.all(np.abs(est.likelihood - want) <= 4 * est.mcse + 1e-12), (row, est, want)


@pytest.mark.parametrize("scenario", SCENARIOS[:3])
def test_mc_agrees_with_exact_within_4_mcse(scenario):
    rho1, rho2, others, m, p, invariant = scenario
    exact = product_risk(rho1, rho2, others, m, p, invariant)
    mc = product_risk_mc(rho1, rho2, others, m, p, invariant, datasets=4000, random_seed=2)
    for key in ("marginal_posterior", "p_correct", "accuracy"):
        error = getattr(mc, f"mcse_{key}")
        # MCSE 0 (every release reveals the target): the exact value's own neglected mass
        assert abs(getattr(mc, key) - getattr(exact, key)) <= 4 * error + 1e-12, key
    for key in ("noisy_marginal_posterior", "noisy_p_correct", "noisy_accuracy"):
        assert getattr(mc, key) == getattr(exact, key)  # the noisy side is exact in both


def test_invariant_reveals_by_mc():
    mc = product_risk_mc(0.1, 0.25, [3, 1, 4, 1, 5, 9, 2, 6], 0, 0.5, "block-group",
                         datasets=200, random_seed=1)
    assert mc.marginal_posterior == 1.0 and mc.p_correct == 1.0 and mc.accuracy == 1.0
    assert mc.mcse_marginal_posterior == 0.0


def test_large_d_runs_and_keeps_data_processing():
    others = [3] * 20
    mc = product_risk_mc(0.0992, 0.2465, others, 0, 0.5, "none", datasets=400, random_seed=4)
    assert 0 <= mc.marginal_posterior <= 1 and 0 <= mc.accuracy <= 1
    assert mc.marginal_posterior <= mc.noisy_marginal_posterior + 4 * mc.mcse_marginal_posterior
    assert mc.accuracy <= mc.noisy_accuracy + 4 * mc.mcse_accuracy


def test_seed_reproduces():
    a = product_risk_mc(0.3, 0.3, [2, 2], datasets=50, random_seed=7)
    b = product_risk_mc(0.3, 0.3, [2, 2], datasets=50, random_seed=7)
    other = product_risk_mc(0.3, 0.3, [2, 2], datasets=50, random_seed=8)
    assert a == b and a.random_seed == 7
    assert other.marginal_posterior != a.marginal_posterior  # the seed is used


def test_simulated_releases_keep_the_constraints():
    rng = np.random.default_rng(0)
    out = simulate_releases(np.array([1, 0, 5, 2]), 0.2, 0.1, "none", 500, rng)
    assert np.all(out >= 0) and np.all(out[:, 1:].sum(axis=1) == out[:, 0])


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"datasets": 1}, "datasets"),
    ({"datasets": 10**13}, "datasets"),           # the work limit, before any work
    ({"others": [1] * MAX_BLOCKS}, "others"),
    ({"others": [1, -1]}, "others"),
    ({"p": 1.0}, "p"),
    ({"rho1": 1e-300}, "rho1"),
])
def test_refusals_name_the_parameter(kwargs, name):
    args = {"rho1": 0.5, "rho2": 0.5, "others": [2], "datasets": 10, **kwargs}
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        product_risk_mc(args.pop("rho1"), args.pop("rho2"), args.pop("others"), **args)


def test_steps_grow_with_d_and_window():
    assert mc_steps(0.1, 10, 100) > mc_steps(0.1, 1, 100)
    assert mc_steps(0.01, 1, 100) > mc_steps(0.1, 1, 100)


def test_exact_enumeration_far_from_zero_is_shift_invariant():
    """All counts far above the noise (rho = 0.5: noise within +-9): non-negativity never
    binds, so the risk is the same at any such counts. Exercises the three ways the exact
    enumeration keys its outcomes (dense counts at 200, sorted int64 keys at 1e6, sorted rows
    at 1e12 where (s + 1)^d overflows int64) and the parent law cut below large totals;
    equal to 1e-12 (the neglected masses)."""
    base = product_risk(0.5, 0.5, [200, 200], m=200)
    for count in (10**6, 10**12):
        got = product_risk(0.5, 0.5, [count, count], m=count)
        for key in ("marginal_posterior", "p_correct", "accuracy"):
            assert getattr(got, key) == pytest.approx(getattr(base, key), abs=1e-12), key
