r"""The two-level marginal posterior and marginal risk, exactly (for the two-level budgets).

The data holder fixes the truth ``x1 = m + 1`` and ``x2`` (``y1 = x2 - x1``); the releases
come from the true mechanism as in :mod:`dprisk.inference.studies.p_correct` (the grid of
``(x2*, y1*)`` and its probabilities, :func:`dprisk.inference.studies.setup.grid_for_truth`),
and the adversary's exact two-level posterior has log-odds
:math:`L_m(x_2^*, y_1^*) + 2\rho_1 (x_1^* - m)`
(:func:`dprisk.inference.studies.setup.exact_log_odds_at_known`). The two-level analogue of
the paper's marginal posterior (eq. 3.3) and marginal risk (eq. 3.4) is

.. math::

    M(\rho_1, \rho_2) = \sum_{x_2^*, y_1^*} P[x_2^*]\,P[y_1^*]
        \sum_{x_1^*} P[X_1^* = x_1^* \mid x_1 = m + 1]\,
        \operatorname{expit}\bigl(L_m(x_2^*, y_1^*) + 2\rho_1 (x_1^* - m)\bigr),
    \qquad R = M / p,

with ``x1*`` on :math:`|x_1^* - x_1| \le K(\rho_1)` (neglected mass below ``tail_mass / 2``)
and the ``(x2*, y1*)`` grid leaving out less than ``tail_mass``; the sum ignores at most
``neglected_mass`` (reported). As :math:`\rho_2 \to 0` the block group says nothing about
``x2`` and M tends to the single-level marginal posterior at :math:`\rho_1` (checked in the
tests). It is not monotone in :math:`\rho_2` in general (for a small block group, x2 = 3, it
first falls), so the budget's search is certified by an interval bound
(:mod:`dprisk.inference.privacy.budget_certified`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from dprisk.inference.studies.setup import (
    DEFAULT_TAIL_MASS,
    exact_log_odds_at_known,
    grid_for_truth,
    validated_study_params,
)
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.numerics import check_tail_mass, dg_log_normalizer, expit
from dprisk.runtime.renamed import renamed_attributes

__all__ = [
    "TwoLevelMarginal",
    "marginal_kernel",
    "marginal_two_level",
    "posterior_over_x1",
    "posteriors_over_x1",
]

#: Most cells :func:`posterior_over_x1` evaluates in one pass (noises x cells): 512 KiB per
#: array, which stays in cache (measured fastest of 2**14 to 2**20 on the census search).
_NOISE_BLOCK_CELLS = 2**16


@dataclass(frozen=True)
class TwoLevelMarginal:
    """The two-level marginal posterior and marginal risk at the truth ``x1 = m + 1``.

    Attributes
    ----------
    marginal_posterior : float
        :math:`M`, the release-averaged posterior of the truth.
    marginal_risk : float
        :math:`M / p`.
    neglected_mass : float
        Bound of the release probability left out of the sums.
    """

    marginal_posterior: float
    marginal_risk: float
    neglected_mass: float


def posterior_over_x1(log_odds_at_known, params, tail_mass: float, *, weight_rho1=None,
                      odds_rho1=None):
    r"""Per cell, the posterior of ``x1 = m + 1`` averaged over ``x1*`` (kernel).

    .. math:: \sum_{|e| \le K} P[\eta_1 = e]\,
              \operatorname{expit}\bigl(L_m + 2\rho_1 (1 + e)\bigr),
              \qquad x_1^* = m + 1 + e,

    with :math:`K = K(\rho_1, \tau/4)`. Returns the averages (shaped like
    ``log_odds_at_known``) and the left-out ``x1*`` mass :math:`P[|\eta_1| > K]`.

    For the interval bound (:mod:`dprisk.inference.privacy.budget_certified`) the weights
    :math:`P[\eta_1 = e]` may be taken at another precision ``weight_rho1`` and the
    :math:`2\rho_1(1 + e)` at the end of ``odds_rho1 = (lo, hi)`` that makes it largest
    (``hi`` for :math:`1 + e \ge 0`); ``K`` is then that of ``params.rho1`` (the smallest).
    """
    rho1 = float(params.rho1)
    weight_rho1 = rho1 if weight_rho1 is None else weight_rho1
    return posteriors_over_x1(log_odds_at_known, params, tail_mass, (weight_rho1,),
                              odds_rho1=odds_rho1)[0]


def posteriors_over_x1(log_odds_at_known, params, tail_mass: float, weight_rho1s, *,
                       odds_rho1=None) -> list:
    r""":func:`posterior_over_x1` at each precision of ``weight_rho1s`` (kernel).

    The posteriors :math:`\operatorname{expit}(L_m + 2\rho_1(1 + e))` do not depend on the
    weights' precision, so they are evaluated once for all (the interval bound with rho1
    moving asks for both ends' weights); each average is summed as one call would sum it.
    Returns ``[(averages, left-out mass), ...]`` in the order of ``weight_rho1s``.
    """
    rho1 = float(params.rho1)
    lo, hi = (rho1, rho1) if odds_rho1 is None else odds_rho1
    tables = [_x1_noise_weights(rho1, float(tail_mass), float(weight_rho1))
              for weight_rho1 in weight_rho1s]
    noises = tables[0][0]
    log_odds_at_known = np.asarray(log_odds_at_known, dtype=float)
    # 2 rho1 (1 + e) per noise: the same float products as a scalar per noise
    shifts = 2.0 * np.where(noises >= -1, hi, lo) * (1 + noises)
    shifts = shifts.reshape((-1,) + (1,) * log_odds_at_known.ndim)
    means = [np.zeros(log_odds_at_known.shape) for _ in tables]
    weighted = np.empty(log_odds_at_known.shape)
    # elementwise passes over blocks of noises (the values of one call per noise), summed in
    # the order of the noises
    step = max(1, _NOISE_BLOCK_CELLS // max(1, log_odds_at_known.size))
    for start in range(0, noises.size, step):
        posteriors = expit(log_odds_at_known + shifts[start:start + step])
        for row, posterior in enumerate(posteriors, start):
            for mean, (_, weights, _) in zip(means, tables, strict=True):
                np.multiply(weights[row], posterior, out=weighted)
                mean += weighted
    return [(mean, outside) for mean, (_, _, outside) in zip(means, tables, strict=True)]


@functools.lru_cache(maxsize=64)
def _x1_noise_weights(rho1: float, tail_mass: float, weight_rho1: float):
    r"""The ``x1*`` noises, their weights and left-out mass (for :func:`posterior_over_x1`).

    The noises are :math:`|e| \le K(\rho_1, \tau/4)`, the weights :math:`P[\eta_1 = e]` at
    ``weight_rho1`` and the left-out mass :math:`P[|\eta_1| > K]`. Each weight is a 0-d
    array, :math:`e^{-\rho e^2 - \log Z(\rho)}` computed as one scalar expression (the same
    float operations per noise as before); a search asks for the same few ``rho1`` hundreds
    of times.
    """
    half = int(dg.support_halfwidth_kernel(np.asarray(rho1, dtype=float), tail_mass / 4))
    outside = 2.0 * float(np.exp(dg.log_tail_kernel(np.asarray(half + 1, dtype=np.int64),
                                                    np.asarray(weight_rho1, dtype=float))))
    log_normalizer = dg_log_normalizer(weight_rho1)
    noises = np.arange(-half, half + 1)
    weights = tuple(np.exp(-weight_rho1 * noise ** 2 - log_normalizer)
                    for noise in range(-half, half + 1))
    return noises, weights, outside


def marginal_two_level(*, x2, rho1, rho2, d, p=0.5, known=0, prior="improper",
                          tail_mass=DEFAULT_TAIL_MASS) -> TwoLevelMarginal:
    r"""Exact two-level marginal posterior and risk (see the module docstring for the sum).

    Parameters
    ----------
    x2 : int (x2 >= known + 1)
        True block-group count (the target's block count is ``known + 1``).
    rho1, rho2 : float (> 0)
    d : int (d >= 1)
        Other blocks in the block group.
    p : float (0 < p < 1)
    known : int (known >= 0)
    prior : str or X2Prior
        The adversary's prior on the block-group count (as in
        :func:`dprisk.inference.studies.p_correct.p_correct_two_level`).
    tail_mass : float (0 < tail_mass <= 1e-3)

    Returns
    -------
    TwoLevelMarginal

    Raises
    ------
    ValueError
        Naming the bad parameter.
    """
    params, _, x2, _ = validated_study_params(x2=x2, rho1=rho1, rho2=rho2, d=d, x1=None,
                                               p=p, known=known, prior=prior)
    return marginal_kernel(params, x2=x2, tail_mass=check_tail_mass(tail_mass))


def marginal_kernel(params, *, x2: int, tail_mass: float) -> TwoLevelMarginal:
    """:func:`marginal_two_level` on a validated scenario, ``x2 >= known + 1`` (kernel)."""
    y1 = x2 - params.known - 1
    grid = grid_for_truth(x2, y1, params, tail_mass)
    x2s, y1s = np.meshgrid(grid.x2_star, grid.y1_star, indexing="ij")
    log_odds_at_known = exact_log_odds_at_known(x2s, y1s, params)
    posterior_mean, outside = posterior_over_x1(log_odds_at_known, params, tail_mass)
    marginal = float((grid.weights * posterior_mean).sum())
    return TwoLevelMarginal(marginal, marginal / float(params.p),
                                grid.neglected_mass + outside)


#: Old names (issue 35: ``two_level`` for two levels, ``nested`` for h levels), still importable
#: from this module with a FutureWarning naming the new one.
__getattr__ = renamed_attributes(__name__, {
    "marginal_hierarchical": "marginal_two_level",
    "HierarchicalMarginal": "TwoLevelMarginal",
})
