"""The K-cell adversary under a query strategy: enumeration, exact limits, Monte Carlo."""

import numpy as np
import pytest

from dprisk.inference.attribute.design import expected_true_posterior, p_map_correct
from dprisk.inference.attribute.strategy import (
    BlockGroup,
    QueryDesign,
    census_block_design,
    strategy_log_likelihood,
    strategy_measures,
)
from dprisk.models.census.allocation import census_level
from dprisk.models.census.strategy import QUERY_FRACTIONS, STRATEGY_QUERY_NAMES
from dprisk.models.mechanism.discrete_gaussian import logpmf, support_halfwidth

#: A 4-cell histogram (2 x 2) read through its detailed query and the first variable's margin.
TINY = QueryDesign(("detailed", "margin"), np.array([1.0, 2.0]),
                   np.array([[0, 1, 2, 3], [0, 0, 1, 1]]), (4, 2), np.array([1, 2]))


def test_strategy_measures_refuses_a_design_of_another_type():
    """None was an AttributeError ('NoneType' object has no attribute 'n_cells')."""
    with pytest.raises(TypeError, match=r"design must be a QueryDesign"):
        strategy_measures(None, 0, 10)


@pytest.mark.parametrize(("fields", "error", "match"), [
    ({"rho2": -1.0}, ValueError, r"^rho2 must be a finite number > 0"),
    ({"rho2": float("nan")}, ValueError, r"^rho2 must be a finite number > 0"),
    ({"rho2": "x"}, TypeError, r"^rho2 must be a number"),
    ({"d": 2.5}, ValueError, r"^d must be an integer >= 1"),
    ({"known": np.zeros(3, np.int64), "others": np.zeros(3, np.int64)}, ValueError,
     r"^block_group\.known must hold one count per cell \(6\), got 3"),
    ({"known": np.array([0, 1, 0, -2, 0, 0])}, ValueError, r"^known must"),
])
def test_a_block_group_built_directly_is_checked(fields, error, match):
    """dr.attribute.BlockGroup(...) is the public way to build one, but only its .checked
    validated: rho2 = -1 (or NaN) was refused as 'rho = -1.0 is too small: the half-width of
    the release window exceeds 2**53' (a RuntimeWarning from sqrt first), d = 2.5 as "'float'
    object cannot be interpreted as an integer", 'x' as "could not convert string to float",
    3 known counts for 6 cells as a numpy IndexError; each now names its field."""
    design = QueryDesign(("detailed",), np.array([0.5]), np.arange(6)[None, :], (6,),
                         np.array([1]))
    group = {"rho2": 0.5, "d": 2, "known": np.zeros(6, np.int64),
             "others": np.zeros(6, np.int64)} | fields
    with pytest.raises(error, match=match):
        strategy_measures(design, 3, 10, block_group=BlockGroup(**group), random_seed=1)
    with pytest.raises(TypeError, match=r"^block_group must be a BlockGroup"):
        strategy_measures(design, 3, 10, block_group=(0.5, 2), random_seed=1)


def enumerate_p_map(design, true_cell, tail=1e-9):
    """P[MAP = t] and E[posterior of t] by summing over every noise vector (uniform prior).

    Neglected mass below 6 * tail (6 noise terms)."""
    grids, pmfs = [], []
    for rho, size in zip(design.rhos, design.sizes, strict=True):
        half = int(support_halfwidth(rho, tail))
        eta = np.arange(-half, half + 1)
        grids += [eta] * size
        pmfs += [np.exp(logpmf(eta, 0, rho))] * size
    mesh = np.meshgrid(*[np.arange(len(g)) for g in grids], indexing="ij")
    index = np.stack([m.ravel() for m in mesh], -1)
    weight = np.prod([pmf[index[:, i]] for i, pmf in enumerate(pmfs)], axis=0)
    noise = np.stack([g[index[:, i]] for i, g in enumerate(grids)], -1)
    residuals = np.split(noise, np.cumsum(design.sizes)[:-1], axis=-1)
    for q, r in enumerate(residuals):
        r[:, design.cell_maps[q, true_cell]] += 1
    score = strategy_log_likelihood(residuals, design)
    integer = sum((w * (2 * r - 1))[:, m] for w, r, m in
                  zip(design.weights, residuals, design.cell_maps, strict=True))
    winners = integer == integer.max(-1, keepdims=True)
    share = winners[:, true_cell] / winners.sum(-1)
    post = np.exp(score[:, true_cell]) / np.exp(score).sum(-1)
    return float(weight @ share), float(weight @ post)


def test_tiny_strategy_against_enumeration_conditional_and_plain():
    exact_map, exact_post = enumerate_p_map(TINY, 1)
    n = 4000
    for conditional in (True, False):
        res = strategy_measures(TINY, 1, n, random_seed=7, conditional=conditional)
        # 4 MCSE (conditional MC has a much smaller MCSE than plain MC)
        assert abs(res.p_map_correct - exact_map) < 4 * res.p_map_correct_mcse + 1e-12
        assert abs(res.expected_true_posterior - exact_post) < 4 * res.expected_true_posterior_mcse
    plain = strategy_measures(TINY, 1, n, random_seed=7, conditional=False)
    cond = strategy_measures(TINY, 1, n, random_seed=7)
    assert cond.p_map_correct_mcse < plain.p_map_correct_mcse


#: The margin and the detailed query at equal weights: a cell of the other margin cell scores
#: 2 (r_margin difference) below or above the target, an even number, so it ties with the
#: target at that integer offset of the detailed noises (not a null set).
EQUAL_WEIGHTS = QueryDesign(("margin", "detailed"), np.array([1.0, 1.0]),
                            np.array([[0, 0, 1, 1], [0, 1, 2, 3]]), (2, 4), np.array([1, 1]))


def test_conditional_map_breaks_ties_at_integer_offsets_uniformly():
    """Exact P[MAP = t] (uniform ties) by enumeration, the margin's two noises looped and the
    detailed query's four vectorised (neglected mass below 6e-12), against the conditional
    estimator within 4 MCSE. It counted every tie at a nonzero offset as the target losing:
    0.7165 (MCSE 0.0025) for the exact 0.7388, 8.8 MCSE off."""
    half = int(support_halfwidth(1.0, 1e-12))
    eta = np.arange(-half, half + 1)
    pmf = np.exp(logpmf(eta, 0, 1.0))
    mesh = np.stack(np.meshgrid(*[eta] * 4, indexing="ij"), -1).reshape(-1, 4)
    weight = np.prod(pmf[mesh + half], axis=1)
    detailed = mesh + np.array([0, 1, 0, 0])  # the target in cell 1
    exact_map = 0.0
    for a, b in np.ndindex(eta.size, eta.size):
        margin = np.array([eta[a] + 1, eta[b]])[[0, 0, 1, 1]]
        score = (2 * margin - 1) + (2 * detailed - 1)
        winners = score == score.max(-1, keepdims=True)
        exact_map += pmf[a] * pmf[b] * (weight @ (winners[:, 1] / winners.sum(-1)))
    res = strategy_measures(EQUAL_WEIGHTS, 1, 4000, random_seed=7)
    assert abs(res.p_map_correct - exact_map) < 4 * res.p_map_correct_mcse


def test_detailed_query_alone_is_the_exact_independent_cells_answer():
    design = census_block_design(queries=("detailed",))
    res = strategy_measures(design, 300, 50, random_seed=1)
    rho = design.rhos[0]
    assert res.p_map_correct == pytest.approx(p_map_correct(rho, 2016), rel=1e-10)
    assert res.p_map_correct_mcse == 0.0  # conditional on nothing: exact for every release
    exact = expected_true_posterior(rho, 2016)
    assert abs(res.expected_true_posterior - exact) < 4 * res.expected_true_posterior_mcse


def test_census_design_rhos_and_cell_maps():
    design = census_block_design()
    assert design.names == STRATEGY_QUERY_NAMES
    assert design.rhos[-1] == pytest.approx(float(census_level("block").rho_exact), rel=1e-15)
    fractions = QUERY_FRACTIONS["block"]
    for q, name in enumerate(design.names):
        assert design.rhos[q] / design.rhos[-1] == pytest.approx(
            float(fractions[name] / fractions["detailed"]), rel=1e-14)
        assert design.weights[q] / design.weights[-1] == pytest.approx(
            float(fractions[name] / fractions["detailed"]), rel=1e-14)
        assert design.cell_maps[q].max() + 1 == design.sizes[q]
        assert np.unique(design.cell_maps[q]).size == design.sizes[q]
    # the detailed query is the identity and each margin is coarser than the detailed query
    np.testing.assert_array_equal(design.cell_maps[-1], np.arange(2016))


def test_uninformative_block_group_changes_nothing():
    """rho2 -> 0: the block group carries no information; matches the exact detailed answer."""
    design = QueryDesign(("detailed",), np.array([0.5]), np.arange(6)[None, :], (6,),
                         np.array([1]))
    group = BlockGroup.checked(1e-9, 2, np.array([0, 1, 0, 2, 0, 0]))
    res = strategy_measures(design, 3, 3000, block_group=group, random_seed=11)
    assert abs(res.p_map_correct - p_map_correct(0.5, 6, true_cell=3)) < 4 * res.p_map_correct_mcse
    mean = expected_true_posterior(0.5, 6, true_cell=3)
    assert abs(res.expected_true_posterior - mean) < 4 * res.expected_true_posterior_mcse


def test_informative_block_group_raises_the_map_probability():
    design = QueryDesign(("detailed",), np.array([0.3]), np.arange(6)[None, :], (6,),
                         np.array([1]))
    group = BlockGroup.checked(2.0, 1, np.zeros(6, dtype=int), prior="truncated:3")
    res = strategy_measures(design, 0, 2000, block_group=group, random_seed=5)
    base = p_map_correct(0.3, 6)
    assert res.p_map_correct - 4 * res.p_map_correct_mcse > base


def test_exact_two_level_p_map_against_monte_carlo():
    """The exact block-group P[MAP] (alike cells) vs plain Monte Carlo, within 4 MCSE."""
    from dprisk.inference.attribute.two_level import p_map_correct_two_level

    exact = p_map_correct_two_level(0.5, 0.8, 2, 6, known=1, others=1, x2_prior="truncated:8")
    design = QueryDesign(("detailed",), np.array([0.5]), np.arange(6)[None, :], (6,),
                         np.array([1]))
    group = BlockGroup.checked(0.8, 2, np.ones(6, dtype=int), others=np.ones(6, dtype=int),
                               prior="truncated:8")
    res = strategy_measures(design, 2, 4000, block_group=group, random_seed=3)
    assert abs(res.p_map_correct - exact) < 4 * res.p_map_correct_mcse
    # the block group helps: above the block-only exact value by far more than the MCSE
    assert exact > p_map_correct(0.5, 6) + 0.05


@pytest.mark.parametrize("x2_prior", ["improper", "truncated:8"])
def test_exact_two_level_p_map_of_two_cells_by_pairwise_enumeration(x2_prior):
    """Two alike cells: P[MAP = t] = sum over the target's and the null cell's release triples
    of P P' (1[score_t > score_null] + 1/2 [equal]), every pair compared directly, scores from
    the two-level exact posterior's log-odds (p = 1/2, known = m). Equal triples give equal
    scores, so ties carry about 1 % of the mass here: counting them as losses (0.8183 for
    0.8235, improper) passed the Monte Carlo test above (4 MCSE = 0.03). The same truncated
    noise grids (tail_mass 1e-6) on both sides, so the two sums hold the same terms: agreement
    to rounding, 1e-12."""
    from dprisk.inference.attribute.two_level import p_map_correct_two_level
    from dprisk.inference.two_level.exact import exact_posterior
    from dprisk.models.mechanism.dg_sums import sum_pmf

    rho1, rho2, d, known, others, tail_mass = 0.5, 0.8, 2, 1, 1, 1e-6
    got = p_map_correct_two_level(rho1, rho2, d, 2, known=known, others=others,
                                  x2_prior=x2_prior, tail_mass=tail_mass)
    axes = []
    for rho in (rho1, rho2):
        half = int(support_halfwidth(rho, tail_mass))
        eta = np.arange(-half, half + 1)
        axes.append((eta, np.exp(logpmf(eta, 0, rho))))
    sums = sum_pmf(d, rho1, tail_mass=tail_mass)
    axes.append((sums.values, sums.pmf))
    e1, e2, s = (a.ravel() for a in np.meshgrid(*[a[0] for a in axes], indexing="ij"))
    weight = np.einsum("i,j,k->ijk", *[a[1] for a in axes]).ravel()
    scores = [exact_posterior(known + b + e1, known + others + b + e2, others + s, rho1=rho1,
                              rho2=rho2, d=d, p=0.5, known=known,
                              prior=x2_prior).log_odds_x1 for b in (0, 1)]
    null, target = scores
    want = 0.0
    for lo in range(0, target.size, 500):
        t = target[lo:lo + 500, None]
        wins = (t > null[None, :]) + 0.5 * (t == null[None, :])
        want += float(weight[lo:lo + 500] @ (wins @ weight))
    assert got == pytest.approx(want, abs=1e-12)


def test_x2_prior_ruling_out_the_target_in_every_cell_is_refused():
    """point:K with K = m_c in every cell: BF_c = 0 for all c, so P[C = c | D] = 0/0.

    It gave NaN posteriors (two_level_cell_posterior), P[MAP] = 1/K (p_map_correct_two_level)
    and, through strategy_measures, P[MAP] = 0.89 beside a NaN expected posterior (dprisk
    attribute ... --x2-prior point:0, exit 0). A prior ruling out only some cells stays: those
    cells get posterior exactly 0 and the others a finite posterior summing to 1.
    """
    from dprisk.inference.attribute.two_level import (
        p_map_correct_two_level,
        two_level_cell_posterior,
    )

    release = ([1, 0, 0], [1, 0, 0], [0, 0, 0])
    kwargs = {"rho1": 0.1, "rho2": 0.25, "d": 27}
    with pytest.raises(ValueError, match=r"x2_prior 'point:0' rules out .* K >= 1"):
        two_level_cell_posterior(*release, [0, 0, 0], **kwargs, x2_prior="point:0")
    with pytest.raises(ValueError, match=r"x2_prior 'point:0' rules out"):
        p_map_correct_two_level(0.1, 0.25, 27, 5, x2_prior="point:0")
    design = QueryDesign(("detailed",), np.array([0.5]), np.arange(3)[None, :], (3,),
                         np.array([1]))
    group = BlockGroup.checked(0.25, 27, np.zeros(3, dtype=int), prior="point:0")
    with pytest.raises(ValueError, match=r"x2_prior 'point:0' rules out"):
        strategy_measures(design, 0, 10, block_group=group, random_seed=1)
    # point:1 rules out cells 1 and 2 (m = 1) only: cell 0 holds the target for sure
    post = two_level_cell_posterior(*release, [0, 1, 1], **kwargs, x2_prior="point:1")
    np.testing.assert_array_equal(post, [1.0, 0.0, 0.0])


def test_the_conditional_map_table_is_sized_before_it_is_built(monkeypatch):
    """The conditional MAP's log-cdf table holds (2H + 1)(4H + 5) cells of two exact tail sums
    each: at detailed rho = 3e-5 (8.4e6 cells) 20 releases took 125 s of CPU and 536 MB
    against 2e6 steps (9 ms) checked; at 1e-9 numpy's MemoryError asked for 2.11 TiB. Now
    64 B a cell and 2 steps a term: 16.9 TiB at 1e-9, 2.1e8 steps at 1e-3 (1 s measured)."""
    from dprisk.runtime.memory_limit import MemoryLimitError
    from dprisk.runtime.work_limit import WorkLimitError

    with pytest.raises(MemoryLimitError, match=r"^rho: the conditional MAP's log-cdf table "
                       r"of 2\.91e\+11 cells .* needs about 16\.9 TiB"):
        strategy_measures(census_block_design(1e-9), 0, 20, random_seed=1)
    monkeypatch.setenv("DPRISK_WORK_LIMIT", "1e8")
    with pytest.raises(WorkLimitError, match=r"^rho: the conditional MAP's log-cdf table "
                       r"of 2\.42e\+05 cells .* is about 2\.1\de8 steps"):
        strategy_measures(census_block_design(1e-3), 0, 2, random_seed=1)


def test_the_exact_two_level_map_grid_is_sized_before_it_is_built(monkeypatch):
    """W1 x W2 x W_S release triples, GRID_POINT_BYTES (400; 347-419 measured) a triple.

    Unsized, rho1 = rho2 = 0.01 with d = 27 (109 x 109 x 557 = 6.6e6 triples) peaked at
    2.2 GB past the 2 GiB limit, and 0.005 would need about 6 GB; now refused first, naming
    rho1, rho2 and d. The Census allocation's 35 x 23 x 177 triples (57 MB) still pass.
    """
    from dprisk.inference.attribute import two_level
    from dprisk.runtime.memory_limit import MemoryLimitError

    with monkeypatch.context() as patch:
        patch.setenv("DPRISK_MEMORY_LIMIT", "64MiB")  # rho 0.1, d = 27: 2.2e5 triples
        with pytest.raises(MemoryLimitError, match=r"^rho1, rho2 and d: .* 2\.17e\+05 release"):
            two_level.p_map_correct_two_level(0.1, 0.1, 27, 2016)
    with pytest.raises(MemoryLimitError, match=r"^rho1, rho2 and d: the exact P\[MAP\] over "
                       r"6\.62e\+06 release triples \(noise windows 109 x 109 x 557\)"):
        two_level.p_map_correct_two_level(0.01, 0.01, 27, 2016)
    assert 6.62e6 * two_level.GRID_POINT_BYTES > 2 * 2**30


def test_the_block_groups_posteriors_are_sized_before_any_release(monkeypatch):
    """n_releases x K x W steps (W the k2 window of rho2 + rho1 / d), as dprisk attribute.

    The command checked them; dr.attribute.strategy_measures did not: rho = rho2 = 1e-9 with
    d = 3 took 1.6 s of CPU a release (2,000 releases: 53 minutes, 20,000: 9 hours). Now
    refused first: 20,000 releases x 2,016 cells x 359,071 values = 1.4e13 steps.
    """
    from dprisk.runtime.work_limit import WorkLimitError

    with monkeypatch.context() as patch:
        patch.setenv("DPRISK_WORK_LIMIT", "1e6")  # 40 x 2016 x 29 values: 2.3e6 steps
        group = BlockGroup.checked(0.25, 27, np.zeros(2016, dtype=np.int64))
        with pytest.raises(WorkLimitError, match=r"^n_releases .*: 40 releases x 2016 .* 29 "):
            strategy_measures(census_block_design(0.1), 0, 40, block_group=group,
                              random_seed=1)
    group = BlockGroup.checked(1e-9, 3, np.zeros(2016, dtype=np.int64))
    with pytest.raises(WorkLimitError, match=r"^n_releases .*: 20000 releases x 2016 cells on "
                       r"a k2 window of 359071 values is about 1\.45e13 steps"):
        strategy_measures(census_block_design(1e-9), 0, 20_000, block_group=group,
                          random_seed=1)
