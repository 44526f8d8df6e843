r"""Exact two-block Gibbs sampler of the target's cell with the block group (issue 15, §1).

State: the target's cell :math:`C` and the block-group counts :math:`X2_j` of every cell
(:mod:`dprisk.inference.attribute.two_level` for the model). With
:math:`X1_j = m_j + 1[j = C]`, the joint posterior is

.. math::

    \pi(c, k_2) \propto \pi_c \prod_j w(k_{2,j} \mid X1_j)\,
        e^{-\rho_1 (x^*_{1,j} - X1_j)^2} e^{-\rho_2 (x^*_{2,j} - k_{2,j})^2}
        e^{-(\rho_1/d)(y^*_{1,j} - (k_{2,j} - X1_j))^2},

and the sampler alternates its two full conditionals, both exact:

* ``C | X2``: :math:`P[C = c \mid k_2] \propto \pi_c\, \Lambda_c(k_{2,c})`, with
  :math:`\Lambda_c(k) = P[X1_c = m_c + 1 \mid X2_c = k] / P[X1_c = m_c \mid X2_c = k]` of
  the single-cell two-level model at ``p = 1/2`` (only cell ``c``'s factor changes);
* ``X2_j | C``, independently over cells: the single-cell ``X2 | X1 = X1_j`` conditional.

Both single-cell conditionals come from
:class:`dprisk.inference.two_level.gibbs.ExactConditionals` (tabulated once per cell). Chains run in
parallel (vectorised), randomness from ``np.random.default_rng(random_seed)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS
from dprisk.inference.two_level.gibbs import ExactConditionals
from dprisk.models.checks import check_count, check_positive_int
from dprisk.models.mechanism.dg_sampling import as_generator, resolve_random_seed
from dprisk.models.numerics import logit, logsumexp
from dprisk.models.priors.histogram import check_cell_prior, check_known_counts, uniform_prior
from dprisk.models.scenario import Release, Scenario

__all__ = ["CellGibbsDraws", "two_level_cell_gibbs"]


@dataclass(frozen=True)
class CellGibbsDraws:
    """Draws of the two-level histogram sampler.

    Attributes
    ----------
    cell : ndarray of int64, shape ``(chains, draws)``
    x2 : ndarray of int64, shape ``(chains, draws, K)``
    random_seed : int
    """

    cell: np.ndarray
    x2: np.ndarray
    random_seed: int

    def cell_frequencies(self, n_cells: int) -> np.ndarray:
        """Share of draws in each cell (the sampler's posterior estimate)."""
        return np.bincount(self.cell.ravel(), minlength=n_cells) / self.cell.size


def two_level_cell_gibbs(x1_star, x2_star, y1_star, known, *, rho1, rho2, d, prior=None,
                         x2_prior="improper", draws: int = 1000, chains: int = 4,
                         tune: int = 100, random_seed=None) -> CellGibbsDraws:
    """Run the exact two-block Gibbs sampler (module docstring) on one release.

    Parameters
    ----------
    x1_star, x2_star, y1_star : array_like of int, shape ``(K,)``
    known : array_like of int (>= 0), shape ``(K,)``
    rho1, rho2 : float (> 0)
    d : int (>= 1)
    prior : array_like, shape ``(K,)``, optional
        Prior over the target's cell (uniform by default).
    x2_prior : str or X2Prior
    draws, chains : int (>= 1)
    tune : int (>= 0)
        Sweeps discarded at the start of each chain.
    random_seed : int or numpy.random.Generator, optional
        Drawn and reported when not given.

    Returns
    -------
    CellGibbsDraws
    """
    known = check_known_counts(known)
    k = known.size
    prior = uniform_prior(k) if prior is None else check_cell_prior(prior, k)
    trio = [check_count(v, name) for v, name in
            ((x1_star, "x1_star"), (x2_star, "x2_star"), (y1_star, "y1_star"))]
    if any(v.shape != known.shape for v in trio):
        raise ValueError(f"x1_star, x2_star and y1_star must have one count per cell ({k})")
    draws, chains = check_positive_int(draws, "draws"), check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    seed = resolve_random_seed(random_seed) if not isinstance(random_seed,
                                                              np.random.Generator) else 0
    rng = as_generator(random_seed if isinstance(random_seed, np.random.Generator) else seed)
    conds = []
    for j in range(k):
        scenario = Scenario.two_level(rho1, rho2, d, p=0.5, known=int(known[j]),
                                      prior=x2_prior)
        release = Release.two_level(trio[0][j], trio[1][j], trio[2][j])
        conds.append(ExactConditionals.tabulated(release, scenario, DEFAULT_TAIL_MASS))
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior)
        # logit P[X1_j = m_j + 1 | X2_j] on each cell's window: every X2_j drawn lies in it
        # (x2_given_x1 draws on the window), so the sweep looks the values up
        log_ratio_tables = [logit(cond.prob_x1_table) for cond in conds]
    cell = rng.choice(k, size=chains, p=prior)
    x2 = _draw_x2(conds, known, cell, rng)
    out_cell = np.empty((chains, draws), dtype=np.int64)
    out_x2 = np.empty((chains, draws, k), dtype=np.int64)
    for sweep in range(tune + draws):
        log_ratio = np.stack([log_ratio_tables[j][x2[:, j] - conds[j].k2_start]
                              for j in range(k)], -1)
        scores = log_prior + log_ratio
        prob = np.exp(scores - logsumexp(scores)[:, None])
        cell = (rng.random(chains)[:, None] > np.cumsum(prob, -1)[:, :-1]).sum(-1)
        x2 = _draw_x2(conds, known, cell, rng)
        if sweep >= tune:
            out_cell[:, sweep - tune] = cell
            out_x2[:, sweep - tune] = x2
    return CellGibbsDraws(out_cell, out_x2, seed)


def _draw_x2(conds, known, cell, rng) -> np.ndarray:
    """``X2_j | X1_j = m_j + 1[j = C]`` for every cell and chain."""
    x2 = np.empty((cell.size, known.size), dtype=np.int64)
    for j, cond in enumerate(conds):
        branch = (cell == j).astype(np.int64)
        u = rng.random(cell.size)
        if len(cond.feasible_x1) == 2:  # both values of X1_j possible: no check needed
            x2[:, j] = cond.x2_given_branch(branch, u)
        else:  # checked (an impossible X1_j raises, naming the feasible values)
            x2[:, j] = cond.x2_given_x1(known[j] + branch, u)
    return x2
