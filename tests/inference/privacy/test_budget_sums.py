"""Tests of inference/privacy/budget_sums.py: the budget searches' grid sums.

* The matrix-product sums equal the exact per-release tables
  (``budget_certified._cell_statistics``, the k2 enumeration of ``table_kernels``): the
  log-odds within 1e-11 and the branch means of ``s`` within 1e-11 relative (the tables
  leave out up to 1e-12 of each branch's mass, the sums none of it; both round about 1e-14;
  measured agreement <= 7e-14 and 5e-13), for rho1 fixed and the Census shares, the three
  priors they serve, a large known count and a point prior, the grid in one block or many;
  another prior gets None.
* Releases near a decision's edge are recomputed, the others kept.
* P[correct] from the sums (``grid_p_correct``) is the tables' (``study_kernel``) bit for
  bit, also through a search's store (the grid sliced from a wider one).
* A whole certified search answers exactly as it does with the tables alone (the sums
  switched off): rho, both certificate values and ``certified_to``.
"""

import numpy as np
import pytest

from dprisk.inference.privacy import budget_sums
from dprisk.inference.privacy.budget_certified import _cell_statistics
from dprisk.inference.privacy.budget_levels import census_fractions, rho2_for_target
from dprisk.inference.privacy.budget_sums import (
    LEVEL_MARGIN,
    GridStore,
    grid_p_correct,
    grid_statistics,
    refine_near_levels,
)
from dprisk.inference.studies.p_correct import study_kernel
from dprisk.inference.studies.setup import DEFAULT_TAIL_MASS, TIE_ATOL, grid_for_truth
from dprisk.models.priors.library import ImproperUniform
from dprisk.models.scenario import Scenario

SHARES = tuple(float(share) for share in census_fractions())

# (rho1, rho2, d, x2, known, prior, p, shares)
CASES = [
    (0.1, 0.001, 5, 10, 0, "improper", 0.5, (0.0, 1.0)),
    (SHARES[0] * 0.1, SHARES[1] * 0.1, 5, 10, 0, "improper", 0.5, SHARES),
    (SHARES[0] * 2.79, SHARES[1] * 2.79, 5, 10, 0, "improper", 0.5, SHARES),
    (1.0, 0.25, 1, 5, 0, "improper", 0.5, (0.0, 1.0)),
    (0.7, 2.0, 3, 21, 1, "truncated:30", 0.3, SHARES),
    (0.05, 300.0, 1, 5, 0, "improper", 0.25, (0.0, 1.0)),
    (2.0, 5.0, 2, 1_000_000, 999_990, "improper", 0.4, SHARES),
    (0.5, 0.5, 2, 4, 2, "point:4", 0.5, (0.0, 1.0)),
    (0.5, 0.5, 2, 8, 2, "truncated:12", 0.5, SHARES),
]


def _setup(rho1, rho2, d, x2, known, prior, p):
    params = Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=p, known=known, prior=prior)
    return params, grid_for_truth(x2, x2 - known - 1, params, DEFAULT_TAIL_MASS)


@pytest.mark.parametrize("blocks", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_sums_equal_the_tables(case, blocks, monkeypatch):
    if blocks:  # a few x2* rows per block (several blocks on every grid here)
        monkeypatch.setattr(budget_sums, "BLOCK_RELEASES", 100)
    *scenario, shares = case
    params, grid = _setup(*scenario)
    odds, mean_s = grid_statistics(grid.x2_star, grid.y1_star, params, shares)
    x2s, y1s = (a.ravel() for a in np.meshgrid(grid.x2_star, grid.y1_star, indexing="ij"))
    table_odds, table_mean = _cell_statistics(x2s, y1s, params, shares)
    assert np.array_equal(np.isfinite(odds), np.isfinite(table_odds))
    finite = np.isfinite(table_odds)
    assert np.max(np.abs(odds[finite] - table_odds[finite])) < 1e-11
    assert np.allclose(mean_s, table_mean, rtol=1e-11, atol=0.0)


def test_another_prior_is_left_to_the_tables():
    class Reweighted(ImproperUniform):  # not one of the priors the sums serve
        pass

    params = Scenario.two_level(rho1=0.5, rho2=0.5, d=2, p=0.5, known=0, prior=Reweighted())
    assert grid_statistics(np.arange(3), np.arange(4), params) is None


def test_only_releases_near_an_edge_are_recomputed():
    rho1 = 0.3
    level = -2.0 * rho1 * 2.0  # L + 2 rho1 j = 0 at j = 2
    log_odds = np.array([level + TIE_ATOL, level - TIE_ATOL * (1 + 1e-3), level,
                         level + 0.1, -np.inf, level - TIE_ATOL + 0.5 * LEVEL_MARGIN])
    asked = []

    def exact(index):
        asked.append(index.tolist())
        return np.full(index.size, 7.0)

    refined = refine_near_levels(log_odds, rho1, exact)
    # the edges +- TIE_ATOL (within LEVEL_MARGIN) are recomputed; a value at the level itself
    # (a tie either way), one far off and an infinite one are not
    assert asked == [[0, 1, 5]]
    assert refined[[0, 1, 5]].tolist() == [7.0] * 3
    assert np.array_equal(refined[[2, 3, 4]], log_odds[[2, 3, 4]])


@pytest.mark.parametrize("case", CASES)
def test_p_correct_from_the_sums_is_the_tables(case):
    """The same decisions and masses as the tables: equal here to the last bit; 1e-13 relative
    (the sums' and the tables' exp/log kernels differ by ulps across CPUs, issue 32) still
    catches one release's decision flipping."""
    *scenario, _ = case
    params, grid = _setup(*scenario)
    x2 = scenario[3]
    expected = study_kernel(params, x1=params.known + 1, x2=x2, tail_mass=DEFAULT_TAIL_MASS)
    assert grid_p_correct(params, x2=x2, tail_mass=DEFAULT_TAIL_MASS) == pytest.approx(
        expected.p_correct, rel=1e-13, abs=0)
    store = GridStore()  # a wider grid first: the sums at the truth's grid are sliced from it
    store.statistics(params, np.arange(grid.x2_star[0] - 3, grid.x2_star[-1] + 5),
                     np.arange(grid.y1_star[0] - 4, grid.y1_star[-1] + 2))
    answer = grid_p_correct(params, x2=x2, tail_mass=DEFAULT_TAIL_MASS, store=store)
    assert answer == pytest.approx(expected.p_correct, rel=1e-13, abs=0)


def test_store_slices_a_wider_grid():
    params, grid = _setup(0.1, 0.01, 5, 10, 0, "improper", 0.5)
    store = GridStore()
    wide_odds, wide_mean = store.statistics(params, grid.x2_star, grid.y1_star)
    sub_x2, sub_y1 = grid.x2_star[3:-5], grid.y1_star[7:-2]
    odds, mean_s = store.statistics(params, sub_x2, sub_y1)
    n2, ny = grid.x2_star.size, grid.y1_star.size
    assert np.array_equal(odds, wide_odds.reshape(n2, ny)[3:-5, 7:-2].ravel())
    assert np.array_equal(mean_s, wide_mean.reshape(n2, ny, 2)[3:-5, 7:-2].reshape(-1, 2))
    # and it is the sum on the sub-grid itself up to the extra far terms (rounding)
    direct, _ = grid_statistics(sub_x2, sub_y1, params)
    assert np.max(np.abs(odds - direct)) < 1e-12


@pytest.mark.parametrize("kwargs", [
    {"target": 0.8, "rho1": 1.0, "x2": 5, "d": 1, "p": [0.5]},  # certified_to stops at 1/4
    # the tables alone take about 5 s quiet here (70 s on a loaded machine): make bench
    pytest.param({"target": 0.1, "measure": "tail", "max_ratio": 1.5, "p": [0.25],
                  "rho1": 0.05, "x2": 5, "d": 1}, marks=pytest.mark.slow),
])
def test_search_answers_as_with_the_tables_alone(kwargs, monkeypatch):
    with_sums = rho2_for_target(**kwargs)
    monkeypatch.setattr(budget_sums, "grid_statistics", lambda *args, **kw: None)
    tables_only = rho2_for_target(**kwargs)
    assert with_sums == tables_only
