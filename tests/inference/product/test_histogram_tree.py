"""K-cell histogram tree: constraints held exactly, solvers against each other, part 1 at K = 1.

Tolerances: the exact projection is rational arithmetic (compared to 1e-12); SLSQP converges to
about 1e-10 on these QPs (compared to 1e-7); trust-constr (interior point) stops at about 1e-5
(compared to 1e-4). The distribution check compares frequencies of N independent products with
the exact part-1 likelihoods within 4 binomial MCSE (fixed seeds: deterministic).
"""

import numpy as np
import pytest

from dprisk.inference.product import exact
from dprisk.inference.product import histogram_tree as ht
from dprisk.inference.product.projection_kernels import project_floor, rounding_outcomes

N_SE = 4.0


def _check_product(tree, leaves, noisy, product, invariant):
    truth = tree.aggregate(leaves)
    levels = product.levels
    root = levels[0][0]
    assert all(level.dtype == np.int64 and np.all(level >= 0) for level in levels)
    if invariant == "none":
        np.testing.assert_array_equal(root, np.maximum(noisy[0][0], 0))
    for level in range(1, tree.n_levels):
        up = np.zeros_like(levels[level - 1])
        np.add.at(up, tree.parents[level - 1], levels[level])
        np.testing.assert_array_equal(up, levels[level - 1])  # cell by cell, exactly
    if invariant == "total":
        for solved, true in zip(levels, truth, strict=True):
            np.testing.assert_array_equal(solved.sum(axis=1), true.sum(axis=1))


@pytest.mark.parametrize("fanout", [(3,), (2, 3)])
@pytest.mark.parametrize("invariant", ["none", "total"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_constraints_hold_exactly(fanout, invariant, seed):
    rng = np.random.default_rng(seed)
    tree = ht.regular_tree(fanout, (0.5, 0.2, 0.1)[:len(fanout) + 1])
    n_leaves = int(np.prod(fanout))
    leaves = rng.integers(0, 4, size=(n_leaves, 5))
    leaves[0] = 0  # an empty leaf: its total invariant is 0
    noisy = ht.simulate_measurements(tree, leaves, random_seed=rng)
    totals = [c.sum(axis=1) for c in tree.aggregate(leaves)]
    product = ht.top_down(tree, noisy, invariant=invariant, true_totals=totals, random_seed=rng)
    _check_product(tree, leaves, noisy, product, invariant)


def test_three_level_order():
    """Tract -> 2 block groups -> 2 blocks each: every level adds up to the one above."""
    tree = ht.regular_tree((2, 2), (1.0, 0.3, 0.1))
    leaves = np.array([[2, 0, 1], [0, 0, 0], [5, 1, 0], [1, 1, 1]])
    noisy = ht.simulate_measurements(tree, leaves, random_seed=7)
    product = ht.top_down(tree, noisy, random_seed=8)
    assert [lv.shape for lv in product.levels] == [(1, 3), (2, 3), (4, 3)]
    _check_product(tree, leaves, noisy, product, "none")


@pytest.mark.parametrize("seed", range(5))
def test_slsqp_matches_exact_projection(seed):
    rng = np.random.default_rng(seed)
    noisy = rng.integers(-3, 7, size=(4, 6))
    parent = rng.integers(0, 9, size=6)
    z_exact = ht.solve_children(noisy, parent, method="projection")
    z_qp = ht.solve_children(noisy, parent, method="slsqp")
    np.testing.assert_allclose(z_qp, z_exact, atol=1e-7)
    np.testing.assert_allclose(z_exact.sum(axis=0), parent, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_qp_with_totals_two_solvers(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, size=(3, 4))
    noisy = truth + rng.integers(-2, 3, size=truth.shape)
    parent, totals = truth.sum(axis=0), truth.sum(axis=1)
    z = ht.solve_children(noisy, parent, totals=totals, weights=[1.0, 2.0, 0.5])
    z_ip = ht.solve_children(noisy, parent, totals=totals, weights=[1.0, 2.0, 0.5],
                             method="trust-constr")
    np.testing.assert_allclose(z, z_ip, atol=1e-4)
    np.testing.assert_allclose(z.sum(axis=0), parent, atol=1e-8)
    np.testing.assert_allclose(z.sum(axis=1), totals, atol=1e-8)
    assert z.min() >= 0
    n = ht.round_children(z, parent, totals=totals, random_seed=seed)
    np.testing.assert_array_equal(n.sum(axis=0), parent)
    np.testing.assert_array_equal(n.sum(axis=1), totals)
    assert np.all(np.abs(n - z) < 1 + 1e-7)


@pytest.mark.parametrize("seed", range(20))
def test_milp_equals_largest_remainder_with_same_tie_break(seed):
    """With the same u, HiGHS's L1 rounding and the part-1 rule give the same integers."""
    rng = np.random.default_rng(seed)
    noisy = rng.integers(-2, 6, size=(int(rng.integers(2, 6)), 5))
    parent = rng.integers(0, 10, size=5)
    z = ht.solve_children(noisy, parent)
    u = rng.random(z.shape)
    a = ht.round_children(z, parent, tie_break=u)
    b = ht.round_children(z, parent, tie_break=u, method="largest-remainder")
    np.testing.assert_array_equal(a, b)


def test_k1_projection_is_part_one():
    """K = 1: each child's real value is the part-1 kernel's floor + r/|A| (exactly)."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        b = rng.integers(-4, 8, size=(1, 4))
        s = int(rng.integers(0, 12))
        floors, active, r = project_floor(b, s)
        z = ht.solve_children(b.T, [s])[:, 0]
        want = floors[0] + active[0] * (r[0] / max(active[0].sum(), 1))
        np.testing.assert_allclose(z, want, atol=1e-12)
        rows, masks, _ = rounding_outcomes(floors, active, r)
        n = ht.round_children(z[:, None], [s], random_seed=rng)[:, 0]
        outcomes = floors[rows] + ((masks[:, None] >> np.arange(4)) & 1)
        assert any(np.array_equal(n, o) for o in outcomes)


@pytest.mark.parametrize(("others", "m", "k_true"), [([2], 0, 1), ([1, 0], 1, 1)])
def test_k1_distribution_matches_part_one(others, m, k_true):
    """K = 1, block group over d + 1 blocks: product frequencies vs part 1's exact likelihoods.

    1,000 independent products (3,000 before: 1.5 s of CPU per case): the tolerance is N_SE
    binomial standard errors at the draws used, sqrt(lik (1 - lik) / draws), so it stays
    calibrated; a top-4 outcome's frequency off by more than 4 sd (0.038 at lik = 0.1) fails."""
    rho1, rho2, draws = 0.4, 0.6, 1000
    table = exact.product_table(rho1, rho2, others, m, "none")
    row = k_true - m
    top = np.argsort(table.likelihood[row])[::-1][:4]
    tree = ht.regular_tree((len(others) + 1,), (rho2, rho1))
    leaves = np.array([[k_true], *[[y] for y in others]])
    rng = np.random.default_rng(11)
    noisy = ht.simulate_measurements(tree, leaves, size=draws, random_seed=rng)
    seen = np.array([np.concatenate([p.levels[0][:, 0], p.levels[1][:, 0]]) for p in (
        ht.top_down(tree, [lv[i] for lv in noisy], rounding="largest-remainder",
                    random_seed=rng) for i in range(draws))])
    for i in top:
        freq = np.mean(np.all(seen == table.outputs[i], axis=1))
        lik = table.likelihood[row, i]
        mcse = np.sqrt(lik * (1 - lik) / draws)
        assert abs(freq - lik) <= N_SE * mcse, (table.outputs[i], freq, lik)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"method": "nope"}, "method"),
    ({"totals": [1, 1]}, "totals"),
    ({"weights": [1.0]}, "weights"),
    ({"method": "projection", "totals": [3, 4]}, "projection"),
])
def test_solver_refuses(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ht.solve_children([[1, 2], [3, 1]], [4, 3], **kwargs)


def test_rounding_refuses():
    with pytest.raises(ValueError, match="method"):
        ht.round_children([[0.5], [0.5]], [1], method="nope")
    with pytest.raises(ValueError, match="totals"):
        ht.round_children([[0.5], [0.5]], [1], totals=[1, 0], method="largest-remainder")
    with pytest.raises(ValueError, match="add up"):
        ht.round_children([[0.5], [0.5]], [3])
    with pytest.raises(ValueError, match="invariant"):
        ht.top_down(ht.regular_tree((2,), (1, 1)), [[[1]], [[1], [0]]], invariant="nope")
    with pytest.raises(ValueError, match="rhos"):
        ht.regular_tree((2,), (1.0,))


@pytest.mark.parametrize(("fanout", "error"), [
    ((2.5,), ValueError), ((-1,), ValueError), ((0,), ValueError), ((True,), TypeError),
    (3, TypeError), ("ab", TypeError), ((10**5, 10**5), ValueError)])
def test_regular_tree_refuses_a_bad_fanout(fanout, error):
    """dr.product.regular_tree read fanout 2.5 as 2 and True as 1, silently; -1 gave numpy's
    'negative dimensions are not allowed', 0 a message about parents[0], a scalar 3
    "'int' object is not iterable", and (1e5, 1e5) tried to allocate 74.5 GiB (MemoryError);
    each now names fanout (the last as the memory limit's refusal)."""
    from dprisk.runtime.memory_limit import MemoryLimitError

    with pytest.raises(error, match=r"^fanout\b") as info:
        ht.regular_tree(fanout, (0.5,) * (np.size(fanout) + 1))
    assert fanout != (10**5, 10**5) or isinstance(info.value, MemoryLimitError)
    with pytest.raises(TypeError, match=r"^rhos must be a number"):
        ht.regular_tree((2,), (0.5, "x"))
    assert ht.regular_tree((2.0, np.int64(3)), (1, 1, 1)).parents[1].tolist() == [0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("fanout", [(3,), (2, 3)])
def test_batch_matches_top_down(fanout):
    """The vectorised path: same real solution, so the same integers up to the tie-break."""
    rng = np.random.default_rng(4)
    tree = ht.regular_tree(fanout, (0.5, 0.2, 0.1)[:len(fanout) + 1])
    leaves = rng.integers(0, 4, size=(int(np.prod(fanout)), 4))
    noisy = ht.simulate_measurements(tree, leaves, size=50, random_seed=rng)
    batch = ht.top_down_batch(tree, noisy, random_seed=rng)
    for i in range(50):
        one = [lv[i] for lv in batch]
        _check_product(tree, leaves, [x[i] for x in noisy], ht.TreeProduct(tuple(one)), "none")
        # given the batch's level above, each parent's children have the same real solution
        for level in range(1, tree.n_levels):
            for u in range(one[level - 1].shape[0]):
                kids = np.flatnonzero(tree.parents[level - 1] == u)
                z = ht.solve_children(noisy[level][i][kids], one[level - 1][u])
                assert np.all(np.abs(one[level][kids] - z) < 1), (level, u)
                np.testing.assert_array_equal(np.floor(z + 1e-9) == z, one[level][kids] == z)


@pytest.mark.parametrize("parents", [([0, 1],), ([-1, 0],), ([0, 0], [0, 0]), ([],)])
def test_tree_refuses_bad_parents(parents):
    with pytest.raises(ValueError, match="parents"):
        ht.HistogramTree(tuple(np.asarray(p, dtype=np.int64) for p in parents),
                         (1.0,) * (len(parents) + 1))


@pytest.mark.parametrize(("kwargs", "match"), [
    # before: "method must be one of ..." (the inner functions' name for them)
    ({"solver": "foo"}, r"^solver must be one of auto, projection, slsqp, trust-constr"),
    ({"rounding": "foo"}, r"^rounding must be one of milp, largest-remainder"),
    # before: IndexError "too many indices for array" from the solver's loop
    ({"weights": (-1, 1)}, r"^weights\[1\] must hold one weight > 0 per node of level 1 \(2\)"),
    ({"weights": [None, [1.0, -1.0]]}, r"^weights must be a finite number > 0"),
    ({"weights": [None]}, r"^weights must hold one array per level \(2"),
])
def test_top_down_names_its_own_parameters(kwargs, match):
    tree = ht.HistogramTree(((0, 0),), (0.5, 0.4))
    noisy = [np.array([[3]]), np.array([[1], [2]])]
    with pytest.raises(ValueError, match=match):
        ht.top_down(tree, noisy, **kwargs)
    product = ht.top_down(tree, noisy, weights=[None, [1.0, 2.0]])
    assert product.levels[1].sum() == 3


def test_top_down_reports_the_seed_of_its_tie_breaks():
    """A tie (two cells of 1 under a total of 1) is broken at random: without a seed the
    product varied from call to call and no seed was reported (before the fix)."""
    tree = ht.HistogramTree(((0, 0),), (0.5, 0.4))
    noisy = [np.array([[1]]), np.array([[1], [1]])]
    for rounding in ("milp", "largest-remainder"):
        a = ht.top_down(tree, noisy, rounding=rounding)
        assert isinstance(a.random_seed, int) and a.random_seed >= 0
        for _ in range(5):
            again = ht.top_down(tree, noisy, rounding=rounding, random_seed=a.random_seed)
            np.testing.assert_array_equal(again.levels[1], a.levels[1])
    generator = np.random.default_rng(0)
    assert ht.top_down(tree, noisy, random_seed=generator).random_seed is None


@pytest.mark.parametrize(("size", "error", "match"), [
    (-1, ValueError, r"^size must be an integer >= 0"), (2.5, ValueError, r"^size must be"),
    (True, TypeError, r"^size must be"), (10**10, ValueError, r"^size: .* memory limit")])
def test_simulate_measurements_checks_its_size_and_tree(size, error, match):
    """dr.product.simulate_measurements passed size to np.zeros unchecked: -1 gave numpy's
    'negative dimensions are not allowed', 2.5 "'float' object cannot be interpreted as an
    integer", True one release, 1e10 a MemoryError for 149 GiB (1e8: 2.98 GiB a level,
    allocated and filled); a tree that is not one "'NoneType' object has no attribute
    'aggregate'". Each is now refused by name, the size against the memory limit."""
    tree = ht.regular_tree((2,), (0.5, 0.5))
    with pytest.raises(error, match=match):
        ht.simulate_measurements(tree, [[1, 0], [0, 1]], size=size, random_seed=1)
    with pytest.raises(TypeError, match=r"^tree must be a HistogramTree"):
        ht.simulate_measurements(None, [[1, 0], [0, 1]])
    shapes = [a.shape for a in ht.simulate_measurements(tree, [[1, 0], [0, 1]], size=3)]
    assert shapes == [(3, 1, 2), (3, 2, 2)]
