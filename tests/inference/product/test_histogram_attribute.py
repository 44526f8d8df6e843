"""Whole-record inference from the K-cell product and the noisy cells.

The exact order-statistic formula is checked against a brute-force sum over every joint
release of K = 3 cells (to 1e-12: both are sums of the same table products, in different
order), and the Monte Carlo against the exact value within 4 MCSE (fixed seeds).
"""


import numpy as np
import pytest

from dprisk.inference.product import histogram_attribute as ha

N_SE = 4.0
KNOWN = np.array([1, 0, 0])
OTHERS = np.array([[0, 2, 0]])


def _brute_force(tables, target):
    """Sum over every joint release of the K = 3 cells (vectorised outer product)."""
    scores, probs = [], []
    for cell in range(KNOWN.size):
        j = tables.cell_class[cell]
        scores.append(tables.score[j])
        probs.append(tables.likelihood[j][int(cell == target)])
    s = np.stack(np.meshgrid(*scores, indexing="ij"), axis=-1).reshape(-1, KNOWN.size)
    p = np.einsum("i,j,k->ijk", *probs).ravel()
    best = s == s.max(axis=1, keepdims=True)
    return float(p @ (best[:, target] / best.sum(axis=1)))


@pytest.mark.parametrize("release", ["product", "noisy"])
def test_exact_matches_brute_force(release):
    tables = ha.cell_tables(KNOWN, OTHERS, 2.0, 1.5, release=release)
    assert tables.neglected_mass < 1e-12
    got = ha.p_map_correct_exact(tables, 1)
    assert abs(got - _brute_force(tables, 1)) <= 1e-12


@pytest.mark.parametrize(("known", "others", "target", "seed"), [
    (KNOWN, OTHERS, 1, 1),
    (np.array([3, 1, 0, 0, 2, 0]), np.array([[3, 1, 0, 0, 2, 0]]), 2, 2),
    (np.array([0, 1, 0, 0]), np.array([[1, 0, 0, 0], [0, 0, 2, 0]]), 3, 3),
])
def test_monte_carlo_matches_exact(known, others, target, seed):
    rho1, rho2 = 0.5, 0.3
    product = ha.cell_tables(known, others, rho1, rho2)
    noisy = ha.cell_tables(known, others, rho1, rho2, release="noisy")
    want_p = ha.p_map_correct_exact(product, target)
    want_n = ha.p_map_correct_exact(noisy, target)
    got = ha.p_map_correct_mc(known, others, target, rho1, rho2, releases=10_000,
                              random_seed=seed, product_tables=product, noisy_tables=noisy)
    assert got.unseen == 0
    assert abs(got.product - want_p) <= N_SE * got.product_mcse
    assert abs(got.noisy - want_n) <= N_SE * got.noisy_mcse
    assert abs(got.difference - (want_p - want_n)) <= N_SE * got.difference_mcse
    # the conditional (Rao-Blackwellised) estimator of the same releases: same tolerance
    assert abs(got.product_conditional - want_p) <= N_SE * got.product_conditional_mcse
    assert abs(got.noisy_conditional - want_n) <= N_SE * got.noisy_conditional_mcse
    assert abs(got.difference_conditional - (want_p - want_n)) \
        <= N_SE * got.difference_conditional_mcse
    assert got.product_conditional_mcse < got.product_mcse


def test_refused():
    with pytest.raises(ValueError, match="others"):
        ha.cell_tables([1, 0], [[1, 0, 0]], 0.5, 0.5)
    with pytest.raises(ValueError, match="release"):
        ha.cell_tables([1, 0], [[1, 0]], 0.5, 0.5, release="nope")
    with pytest.raises(ValueError, match="target"):
        ha.p_map_correct_mc([1, 0], [[1, 0]], 2, 0.5, 0.5, releases=10)
    with pytest.raises(ValueError, match="rho1"):
        ha.cell_tables([1, 0], [[1, 0]], -1.0, 0.5)
    # not a CellTables: was AttributeError ('NoneType' object has no attribute 'cell_class')
    with pytest.raises(TypeError, match=r"tables must be the CellTables"):
        ha.p_map_correct_exact(None, 0)


@pytest.mark.parametrize(("known", "others", "rho1", "rho2"), [
    (KNOWN, OTHERS, 0.5, 0.3),
    (np.array([3, 1, 0, 0, 2, 0]), np.array([[3, 1, 0, 0, 2, 0]]), 0.1, 0.25),
    (np.array([0, 1, 0, 0]), np.array([[1, 0, 0, 0], [0, 0, 2, 0]]), 1.0, 0.2),
])
def test_accuracy_obeys_data_processing(known, others, rho1, rho2):
    """Over the uniform prior the MAP is the Bayes decision: the product's accuracy cannot
    exceed the noisy cells' (to the tables' neglected mass, 1e-12 per cell)."""
    product = ha.map_accuracy_exact(ha.cell_tables(known, others, rho1, rho2))
    noisy = ha.map_accuracy_exact(ha.cell_tables(known, others, rho1, rho2, release="noisy"))
    assert 1 / known.size <= product <= noisy + known.size * 1e-12


def test_accuracy_is_the_average_over_targets():
    tables = ha.cell_tables(KNOWN, OTHERS, 0.5, 0.3)
    want = np.mean([ha.p_map_correct_exact(tables, t) for t in range(KNOWN.size)])
    assert abs(ha.map_accuracy_exact(tables) - want) <= 1e-15


@pytest.mark.parametrize("target", [-1, -3, 3, 1.5])
def test_a_target_outside_the_cells_is_refused(target):
    """A negative target indexed the cells from the end: -1 answered for cell K - 1 (0.6856,
    cell 2's value), 3 and 1.5 raised numpy's IndexError; both entry points now refuse it
    naming ``target`` and the cells."""
    tables = ha.cell_tables(KNOWN, OTHERS, 0.5, 0.5)
    with pytest.raises(ValueError, match=r"target must be a cell in 0\.\.2"):
        ha.p_map_correct_exact(tables, target)
    with pytest.raises(ValueError, match=r"target must be a cell in 0\.\.2"):
        ha.p_map_correct_mc(KNOWN, OTHERS, target, 0.5, 0.5, releases=10)


@pytest.mark.parametrize("nodes", [0, -1])
def test_nodes_must_be_positive(nodes):
    """``nodes=-1`` was SciPy's 'n must be a positive integer.', naming no parameter."""
    tables = ha.cell_tables(KNOWN, OTHERS, 0.5, 0.5)
    with pytest.raises(ValueError, match="nodes must be an integer >= 1"):
        ha.p_map_correct_exact(tables, 0, nodes=nodes)
