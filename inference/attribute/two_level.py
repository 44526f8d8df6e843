r"""The K-cell adversary with the block group: each cell's two-level Bayes factor.

Each cell ``j`` of the histogram is released at the block (``x1*_j``, rho1), at the block
group (``x2*_j``, rho2) and as the noisy sum of the other ``d`` blocks (``y1*_j``), and the
adversary's prior of the block-group count ``X2_j`` given ``X1_j`` is one of
:mod:`dprisk.models.priors.library` (swappable). With the target in cell ``c``,
:math:`X1_j = m_j + 1[j = c]`, and every cell's likelihood other than ``c``'s cancels:

.. math::

    P[C = c \mid D] \propto \pi_c\, \mathrm{BF}_c, \qquad
    \log \mathrm{BF}_c = \log\frac{\sum_{k_2} \pi_c(m_c + 1, k_2)}{\sum_{k_2} \pi_c(m_c, k_2)},

the posterior log-odds of the exact two-level code
(:func:`dprisk.inference.two_level.exact.posterior_tables`) at ``p = 1/2`` with ``known = m_c``.
Releases are deduplicated per distinct ``m`` before the exact sums.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.attribute.design import log_tie_integral, noise_grid
from dprisk.inference.two_level.exact import DEFAULT_TAIL_MASS, posterior_tables
from dprisk.models.checks import check_count, check_positive_int, check_rho
from dprisk.models.mechanism.dg_sums import sum_pmf
from dprisk.models.mechanism.discrete_gaussian import logpmf_kernel
from dprisk.models.numerics import logsumexp
from dprisk.models.priors.histogram import (
    check_cell_prior,
    check_known_counts,
    check_n_cells,
    uniform_prior,
)
from dprisk.models.priors.library import as_prior
from dprisk.models.scenario import Release, Scenario
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import check_work

__all__ = ["GRID_POINT_BYTES", "GRID_POINT_STEPS", "check_target_possible",
           "p_map_correct_two_level", "two_level_cell_posterior", "two_level_log_bayes_factors"]

#: Bytes per release triple of :func:`p_map_correct_two_level`'s grid (the meshgrid, the two
#: cells' releases, their deduplicated keys and scores; 347-419 measured with tracemalloc at
#: rho 0.02-0.05, d = 3 and 27; rounded up): unchecked, rho1 = rho2 = 0.01 with d = 27
#: (6.6e6 triples) peaked at 2.2 GB and 0.005 would need about 6 GB.
GRID_POINT_BYTES = 400
#: Work steps (:mod:`dprisk.runtime.work_limit`) per release triple (1.0-1.8 us of CPU
#: measured; rounded up).
GRID_POINT_STEPS = 500


def check_target_possible(known, x2_prior, cell_prior=None) -> None:
    r"""Refuse an X2 prior under which no cell the target may be in can hold the target.

    The target in cell ``c`` means :math:`X1_c = m_c + 1`, so :math:`X2_c \ge m_c + 1`; a
    prior that leaves no such X2 (``point:K`` with ``K = m_c``, the only prior the two-level
    check lets do so) gives :math:`\mathrm{BF}_c = 0`. If that holds for every cell of
    positive prior :math:`\pi_c`, :math:`P[C = c \mid D] = 0/0` for every ``c``: refused.

    Parameters
    ----------
    known : array_like of int (>= 0)
        ``m_c`` per cell (validated counts), or one ``m`` for cells alike.
    x2_prior : str or X2Prior
        Prior of each cell's X2 given X1.
    cell_prior : array_like of float, optional
        :math:`\pi_c` (validated); default: every cell may hold the target.

    Raises
    ------
    ValueError
        Naming ``x2_prior``, the cells' smallest ``m_c + 1`` and the allowed range.
    """
    prior = as_prior(x2_prior)
    known = np.asarray(known, dtype=np.int64).ravel()
    if cell_prior is not None:
        known = known[np.asarray(cell_prior).ravel() > 0]
    # each scenario checks the prior's values (its code run captured) before .feasible
    if not any(Scenario.two_level(1.0, 1.0, 1, known=int(m), prior=prior).feasible[1]
               for m in np.unique(known)):
        needed = int(known.min()) + 1
        raise ValueError(
            f"x2_prior {prior.spec!r} rules out X2 >= m_c + 1 in every cell the target may "
            f"be in: the target is in no cell, its posterior 0/0 (the target in cell c needs "
            f"X2 >= X1 = m_c + 1; point:K needs K >= {needed} here)")


def two_level_log_bayes_factors(x1s: np.ndarray, x2s: np.ndarray, y1s: np.ndarray,
                                known: np.ndarray, rho1: float, rho2: float, d: int,
                                x2_prior="improper") -> np.ndarray:
    r"""Kernel: :math:`\log \mathrm{BF}_c` for int64 arrays of shape ``(n, K)``.

    ``known`` (``(K,)``) are validated counts; ``x2_prior`` a spec or an X2Prior.
    """
    out = np.empty(x1s.shape)
    for m in np.unique(known):
        cols = known == m
        scenario = Scenario.two_level(rho1, rho2, d, p=0.5, known=int(m), prior=x2_prior)
        trio = [v[:, cols].ravel() for v in (x1s, x2s, y1s)]
        # one int64 key per release (mixed radix over the observed ranges): a 1-d unique
        lows = [int(v.min()) for v in trio]
        spans = [int(v.max()) - low + 1 for v, low in zip(trio, lows, strict=True)]
        key = ((trio[0] - lows[0]) * spans[1] + (trio[1] - lows[1])) * spans[2] + (trio[2]
                                                                                   - lows[2])
        first, inverse = _distinct_keys(key, spans[0] * spans[1] * spans[2])
        release = Release.two_level(*(v[first] for v in trio))
        log_odds = posterior_tables(release, scenario, DEFAULT_TAIL_MASS, None,
                                    keep_tables=False)[0]
        out[:, cols] = log_odds[inverse].reshape(x1s.shape[0], -1)
    return out


def _distinct_keys(key: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """An index of each distinct key in increasing order, and each key's rank among them.

    ``key`` holds integers in ``[0, span)``. What ``np.unique(key, return_index=True,
    return_inverse=True)`` gives, up to which occurrence of a key the index names (the
    caller reads the values there, the same at every occurrence): where ``span`` is at most
    four times the keys, by a table over ``[0, span)`` (no sort), else by ``np.unique``.
    """
    if span > 4 * key.size:
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return first, inverse.ravel()
    seen = np.zeros(span, dtype=bool)
    seen[key] = True
    rank = np.cumsum(seen) - 1
    where = np.empty(span, dtype=np.int64)
    where[key] = np.arange(key.size)
    return where[seen], rank[key]


def two_level_cell_posterior(x1_star, x2_star, y1_star, known, *, rho1, rho2, d,
                             prior=None, x2_prior="improper") -> np.ndarray:
    r"""Exact posterior of the target's cell from the block and block-group histograms.

    .. math:: P[C = c \mid D] = \pi_c \mathrm{BF}_c / \sum_j \pi_j \mathrm{BF}_j

    Parameters
    ----------
    x1_star, x2_star, y1_star : array_like of int, shape ``(..., K)``
        Noisy block, block-group and other-blocks counts of every cell.
    known : array_like of int (>= 0), shape ``(K,)``
        ``m_j``.
    rho1, rho2 : float (> 0)
    d : int (>= 1)
    prior : array_like, shape ``(K,)``, optional
        Prior over the target's cell (uniform by default).
    x2_prior : str or X2Prior
        Prior of each cell's X2 given X1 (``improper``, ``truncated:U``, ...).

    Returns
    -------
    ndarray, shape ``(..., K)``
    """
    known = check_known_counts(known)
    prior = uniform_prior(known.size) if prior is None else check_cell_prior(prior, known.size)
    trio = [check_count(v, name) for v, name in
            ((x1_star, "x1_star"), (x2_star, "x2_star"), (y1_star, "y1_star"))]
    shape = np.broadcast_shapes(*(v.shape for v in trio), known.shape)
    flat = [np.broadcast_to(v, shape).reshape(-1, known.size) for v in trio]
    Scenario.two_level(rho1, rho2, d, prior=x2_prior)  # validate once, naming the parameter
    check_target_possible(known, x2_prior, prior)
    log_bf = two_level_log_bayes_factors(*flat, known, float(rho1), float(rho2), int(d),
                                         x2_prior)
    with np.errstate(divide="ignore"):
        scores = np.log(prior) + log_bf
    return np.exp(scores - logsumexp(scores)[:, None]).reshape(shape)


def p_map_correct_two_level(rho1, rho2, d, n_cells, *, known: int = 0, others: int = 0,
                            x2_prior="improper", tail_mass: float = 1e-12) -> float:
    r"""Exact :math:`P[\mathrm{MAP} = t]` with the block group, uniform prior, alike cells.

    Every cell has the same known count ``m`` and the same count ``y`` in the other ``d``
    blocks; the target adds one to its cell at the block and the block group. A cell's
    release is :math:`(m + b + \eta_1,\ m + y + b + \eta_2,\ y + S_d)` (``b = 1`` for the
    target's cell), :math:`S_d` the exact sum of ``d`` DG(rho1) noises
    (:func:`dprisk.models.mechanism.dg_sums.sum_pmf`), and its score the exact two-level log Bayes
    factor :math:`\ell`. Cells are independent, so with :math:`F_<, F_=` the null cells'
    probabilities of a score below / equal to the target's,

    .. math::

        P[\mathrm{MAP} = t] = \sum_\tau P_t(\tau) \int_0^1
            \bigl(F_<(\ell_\tau) + F_=(\ell_\tau) u\bigr)^{K-1} du

    summed over the target cell's release triples :math:`\tau` (uniform tie-breaking; ties
    are equal floating-point scores, as in the Monte Carlo of
    :mod:`dprisk.inference.attribute.strategy`). Each noise is truncated at ``tail_mass``.

    The grid of :math:`W_1 W_2 W_S` triples (the three noise windows) is checked against the
    memory limit (:data:`GRID_POINT_BYTES` a triple) and the work limit
    (:data:`GRID_POINT_STEPS`) before it is built, naming ``rho1, rho2 and d``.
    """
    rho1 = float(check_rho(rho1, "rho1"))
    rho2 = float(check_rho(rho2, "rho2"))
    d = check_positive_int(d, "d")
    n_cells = check_n_cells(n_cells)
    known = int(check_count(known, "known", minimum=0))
    others = int(check_count(others, "others", minimum=0))
    check_target_possible(known, x2_prior)
    grids = []
    for rho in (rho1, rho2):
        eta = noise_grid(np.asarray(rho), tail_mass)
        grids.append((eta, np.exp(logpmf_kernel(eta, np.zeros_like(eta), np.asarray(rho)))))
    sums = sum_pmf(d, rho1, tail_mass=tail_mass)
    grids.append((sums.values, sums.pmf))
    points = float(np.prod([float(g[0].size) for g in grids]))
    what = (f"the exact P[MAP] over {points:.3g} release triples (noise windows "
            f"{' x '.join(str(g[0].size) for g in grids)})")
    check_memory(points * GRID_POINT_BYTES, parameter="rho1, rho2 and d", what=what)
    check_work(points * GRID_POINT_STEPS, parameter="rho1, rho2 and d", what=what)
    mesh = np.meshgrid(*[g[0] for g in grids], indexing="ij")
    weight = np.einsum("i,j,k->ijk", *[g[1] for g in grids]).ravel()
    e1, e2, s = (m.ravel() for m in mesh)
    rows = []
    for b in (0, 1):
        rows.append([known + b + e1, known + others + b + e2, others + s])
    x1s, x2s, y1s = (np.stack([rows[0][i], rows[1][i]], -1) for i in range(3))
    scores = two_level_log_bayes_factors(x1s, x2s, y1s, np.array([known, known]), rho1, rho2,
                                         d, x2_prior)
    null, target = scores[:, 0], scores[:, 1]
    values, inverse = np.unique(null, return_inverse=True)
    mass = np.bincount(inverse.ravel(), weights=weight, minlength=values.size)
    below = np.concatenate([[0.0], np.cumsum(mass)])
    lo = np.searchsorted(values, target, side="left")
    hi = np.searchsorted(values, target, side="right")
    with np.errstate(divide="ignore"):
        log_g = log_tie_integral(np.log(below[hi] - below[lo]), np.log(below[lo]),
                                 np.log(below[hi]), n_cells - 1)
    return float(weight @ np.exp(log_g))
