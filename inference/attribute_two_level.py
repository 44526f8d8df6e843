r"""The K-cell adversary with the block group: each cell's two-level Bayes factor.

Each cell ``j`` of the histogram is released at the block (``x1*_j``, rho1), at the block
group (``x2*_j``, rho2) and as the noisy sum of the other ``d`` blocks (``y1*_j``), and the
adversary's prior of the block-group count ``X2_j`` given ``X1_j`` is one of
:mod:`dprisk.models.priors` (swappable). With the target in cell ``c``,
:math:`X1_j = m_j + 1[j = c]`, and every cell's likelihood other than ``c``'s cancels:

.. math::

    P[C = c \mid D] \propto \pi_c\, \mathrm{BF}_c, \qquad
    \log \mathrm{BF}_c = \log\frac{\sum_{k_2} \pi_c(m_c + 1, k_2)}{\sum_{k_2} \pi_c(m_c, k_2)},

the posterior log-odds of the exact two-level code
(:func:`dprisk.inference.exact.posterior_tables`) at ``p = 1/2`` with ``known = m_c``.
Releases are deduplicated per distinct ``m`` before the exact sums.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.exact import DEFAULT_TAIL_MASS, posterior_tables
from dprisk.models.checks import check_count
from dprisk.models.histogram_prior import check_cell_prior, check_known_counts, uniform_prior
from dprisk.models.numerics import logsumexp
from dprisk.models.scenario import Release, Scenario

__all__ = ["two_level_cell_posterior", "two_level_log_bayes_factors"]


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
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        release = Release.two_level(*(v[first] for v in trio))
        log_odds = posterior_tables(release, scenario, DEFAULT_TAIL_MASS, None,
                                    keep_tables=False)[0]
        out[:, cols] = log_odds[inverse.ravel()].reshape(x1s.shape[0], -1)
    return out


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
    log_bf = two_level_log_bayes_factors(*flat, known, float(rho1), float(rho2), int(d),
                                         x2_prior)
    with np.errstate(divide="ignore"):
        scores = np.log(prior) + log_bf
    return np.exp(scores - logsumexp(scores)[:, None]).reshape(shape)
