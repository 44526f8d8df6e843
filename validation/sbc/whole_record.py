r"""Simulation-based calibration of the two-level histogram sampler (issue 15, §1).

Under a proper prior the truth is drawn from the model,

.. math::

    C \sim \pi,\quad X1_j = m_j + 1[j = C],\quad X2_j \mid X1_j \sim w(\cdot \mid X1_j),\quad
    x^*_{1,j} \sim \mathrm{DG}(X1_j, \rho_1),\ x^*_{2,j} \sim \mathrm{DG}(X2_j, \rho_2),\
    y^*_{1,j} \sim \mathrm{DG}(X2_j - X1_j, \rho_1/d),

and the rank of the true cell among ``L`` posterior draws (one per independent chain of
:func:`dprisk.inference.attribute.gibbs.two_level_cell_gibbs`, after ``tune`` sweeps; ties
broken at random) is uniform on ``{0..L}`` when the sampler is right
(:func:`dprisk.validation.sbc.ranks.uniformity_tests`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dprisk.inference.attribute.gibbs import prepare_cell_gibbs, run_cell_gibbs
from dprisk.models.mechanism.dg_sampling import resolve_random_seed
from dprisk.models.mechanism.dg_sampling import sample as dg_sample
from dprisk.models.priors.histogram import check_cell_prior, check_known_counts
from dprisk.validation.sbc.ranks import (
    UniformityTest,
    prior_x2_pmf,
    rank_statistics,
    uniformity_tests,
)

__all__ = ["CellSBC", "cell_sbc"]


class CellSBC(NamedTuple):
    """Ranks of the true cell and their uniformity test."""

    ranks: np.ndarray
    n_draws: int
    test: UniformityTest
    random_seed: int


def cell_sbc(n_simulations: int, *, prior, known, rho1: float, rho2: float, d: int,
             x2_prior: str, n_draws: int = 19, tune: int = 30,
             random_seed=None) -> CellSBC:
    """Run SBC of the two-level histogram Gibbs sampler (module docstring).

    Parameters
    ----------
    n_simulations : int (>= 1)
    prior : array_like, shape ``(K,)``
        Proper prior over the target's cell.
    known : array_like of int (>= 0), shape ``(K,)``
    rho1, rho2 : float (> 0)
    d : int (>= 1)
    x2_prior : str
        A proper X2 prior (e.g. ``truncated:U``).
    n_draws : int
        ``L``; ``L + 1`` must be divisible by 10 (the uniformity test's bins).
    tune : int
        Sweeps before the one kept draw of each chain.
    random_seed : int, optional
        Drawn and reported when not given.
    """
    known = check_known_counts(known)
    prior = check_cell_prior(prior, known.size)
    seed = resolve_random_seed(random_seed)
    rng = np.random.default_rng(seed)
    tables = {}
    conditionals = {}  # each distinct cell release tabulated once (same draws)
    truth, runs = [], []
    for _ in range(int(n_simulations)):
        cell = int(rng.choice(known.size, p=prior))
        x1 = known.copy()
        x1[cell] += 1
        x2 = np.empty_like(x1)
        for j, k1 in enumerate(x1):
            if int(k1) not in tables:
                tables[int(k1)] = prior_x2_pmf(x2_prior, int(k1))
            k2, pmf = tables[int(k1)]
            x2[j] = k2[min(np.searchsorted(np.cumsum(pmf), rng.random() * pmf.sum()),
                           k2.size - 1)]
        x1_star = dg_sample(x1, rho1, random_seed=rng)
        x2_star = dg_sample(x2, rho2, random_seed=rng)
        y1_star = dg_sample(x2 - x1, rho1 / d, random_seed=rng)
        # the run's random numbers drawn here, in turn; its sweeps with all the others'
        runs.append(prepare_cell_gibbs(x1_star, x2_star, y1_star, known, rho1=rho1,
                                       rho2=rho2, d=d, prior=prior, x2_prior=x2_prior,
                                       draws=1, chains=n_draws, tune=tune, random_seed=rng,
                                       conditionals=conditionals))
        truth.append(cell)
    ranks_draws = [draws.cell[:, 0] for draws in run_cell_gibbs(runs)]
    ranks = rank_statistics(np.array(truth), np.stack(ranks_draws), rng)
    return CellSBC(ranks, n_draws, uniformity_tests(ranks, n_draws, random_seed=rng), seed)
