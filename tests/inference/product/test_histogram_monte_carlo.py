"""Monte Carlo K-cell product risk against part 1's exact enumeration (K = 1, two levels).

Tolerances: likelihoods within 4 binomial MCSE (bank of N draws) plus 1e-12 (the exact
table's neglected mass); P[MAP correct] within 4 MCSE (releases) plus ``undecided_mass`` (the
share of releases whose decision the banks' noise could flip, module notes). Fixed seeds.
"""

import numpy as np
import pytest

from dprisk.inference.product import exact
from dprisk.inference.product import histogram_monte_carlo as hmc
from dprisk.inference.product import histogram_tree as ht

N_SE = 4.0
RHO1, RHO2 = 0.4, 0.6


def _setup(others, m):
    tree = ht.regular_tree((len(others) + 1,), (RHO2, RHO1))
    hyps = [np.array([[k], *[[y] for y in others]]) for k in (m, m + 1)]
    return tree, hyps


@pytest.mark.parametrize(("others", "m"), [([2], 0), ([1, 0], 1)])
def test_likelihood_and_posterior_match_exact(others, m):
    table = exact.product_table(RHO1, RHO2, others, m, "none")
    tree, hyps = _setup(others, m)
    i = int(np.argmax(table.likelihood[1]))
    got = hmc.tree_likelihood_mc(table.outputs[i], tree, hyps, draws=3000, random_seed=5)
    assert np.all(np.abs(got.likelihood - table.likelihood[:, i])
                  <= N_SE * got.mcse + 1e-12), (got, table.likelihood[:, i])
    post = table.likelihood[1, i] / table.likelihood[:, i].sum()
    # delta method for L1 / (L0 + L1) with independent banks
    l0, l1 = got.likelihood
    grad = np.array([-l1, l0]) / (l0 + l1) ** 2
    se = float(np.sqrt(np.sum((grad * got.mcse) ** 2)))
    assert abs(got.posterior[1] - post) <= N_SE * se


@pytest.mark.parametrize(("rho1", "rho2"), [(2.0, 2.0), (3.0, 1.0)])
def test_p_map_correct_matches_exact(rho1, rho2):
    """Informative releases (few near-ties): the plug-in decision is the exact one."""
    others, m = [2], 0
    table = exact.product_table(rho1, rho2, others, m, "none")
    l0, l1 = table.likelihood
    want = float(np.sum(l1 * ((l1 > l0) + 0.5 * (l1 == l0))))
    tree = ht.regular_tree((2,), (rho2, rho1))
    hyps = [np.array([[k], [2]]) for k in (0, 1)]
    got = hmc.p_map_correct_mc(tree, hyps, 1, releases=4000, draws=20_000, random_seed=9)
    assert got.undecided_mass < 0.02  # the allowance below stays small
    assert abs(got.p_map_correct - want) <= N_SE * got.mcse + got.undecided_mass, (got, want)


def test_three_level_likelihood_is_a_probability():
    """Tract -> 2 block groups -> 2 blocks, K = 2: the estimates of every distinct product
    seen in one bank add up to 1 (a check of the bookkeeping, exact)."""
    tree = ht.regular_tree((2, 2), (1.0, 0.5, 0.5))
    leaves = np.array([[1, 0], [0, 2], [1, 1], [0, 0]])
    bank = hmc.simulate_products(tree, leaves, 200, random_seed=3)
    values = np.unique(bank, axis=0)
    freq = hmc._frequencies(values, bank)
    assert abs(freq.sum() - 1.0) < 1e-12
    assert bank.shape == (200, (1 + 2 + 4) * 2)


def test_refused():
    tree, hyps = _setup([1], 0)
    with pytest.raises(ValueError, match="hypotheses"):
        hmc.tree_likelihood_mc([1, 0, 1], tree, hyps[:1], draws=10)
    with pytest.raises(ValueError, match="true_index"):
        hmc.p_map_correct_mc(tree, hyps, 2, releases=10, draws=10)
    with pytest.raises(ValueError, match="observed"):
        hmc.tree_likelihood_mc([1, 0], tree, hyps, draws=10)
    with pytest.raises(ValueError, match="draws"):
        hmc.tree_likelihood_mc([1, 0, 1], tree, hyps, draws=1)


def test_total_invariant_bank_holds_every_total():
    """Tract -> 2 block groups -> 2 blocks with every node's total exact (SLSQP + MILP path):
    every simulated product keeps every total, so a hypothesis with other totals has
    likelihood exactly 0 (the invariant reveals the totals)."""
    tree = ht.regular_tree((2, 2), (1.0, 0.5, 0.5))
    leaves = np.array([[1, 0, 2], [0, 2, 0], [1, 1, 0], [0, 0, 3]])
    moved = leaves.copy()
    moved[0, 0], moved[1, 0] = 0, 1  # one person moved to the next block: other totals
    bank = hmc.simulate_products(tree, leaves, 6, invariant="total", random_seed=4)
    k = leaves.shape[1]
    truth = np.concatenate([c.ravel() for c in tree.aggregate(leaves)])
    totals = bank.reshape(6, -1, k).sum(axis=2)
    np.testing.assert_array_equal(totals, np.broadcast_to(truth.reshape(-1, k).sum(axis=1),
                                                          totals.shape))
    got = hmc.tree_likelihood_mc(bank[0], tree, [leaves, moved], invariant="total",
                                 draws=6, random_seed=5)
    assert got.likelihood[1] == 0.0 and got.posterior[0] in (0.5, 1.0)


@pytest.mark.parametrize(("k", "draws"), [(2, 20_000), (3, 50_000)])
def test_exact_symmetric_ties_are_shared_not_decided_by_bank_noise(k, draws):
    """K identical empty cells, the target in cell 0 or another (Census rho): a release
    symmetric in two cells has exactly equal likelihoods under the two hypotheses (about a
    quarter of the mass at K = 2); the exact rule shares it (1/2, 1/k), the banks' noise
    used to decide it (0.777 +- 0.009 against the exact 0.670 at K = 2, 12 MCSE). The exact
    value is the order-statistics formula of :mod:`.histogram_attribute` (an independent
    method). Tolerance: 4 MCSE of the releases (the undecided releases, where bank noise
    could still flip the plug-in decision, are in the reported interval, which must cover
    the exact value too). Fixed seeds."""
    from dprisk.inference.product import histogram_attribute as ha
    from dprisk.models.census.allocation import census_level

    rho1, rho2 = census_level("block").rho, census_level("block-group").rho
    known = np.zeros(k, dtype=np.int64)
    want = ha.p_map_correct_exact(ha.cell_tables(known, known[None, :], rho1, rho2), 0)
    tree = ht.regular_tree((2,), (rho2, rho1))
    hyps = [np.vstack([np.eye(k, dtype=np.int64)[c], known]) for c in range(k)]
    got = hmc.p_map_correct_mc(tree, hyps, 0, releases=4000, draws=draws, random_seed=k)
    assert abs(got.p_map_correct - want) <= N_SE * got.mcse, (got, want)
    assert got.lower <= want <= got.upper, (got, want)
    assert got.exact_tie_mass > 0.2
