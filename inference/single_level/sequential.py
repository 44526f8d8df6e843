r"""Sequential releases of the same count (supplement S5).

The prior of release :math:`i+1` is the posterior after release :math:`i`, so in log-odds the
releases add up,

.. math:: L_i = \operatorname{logit}(p) + \sum_{k \le i} \rho_k \bigl(2 (x_k^* - m) - 1\bigr),

the same likelihood as a target unique at several levels
(:mod:`dprisk.inference.nested.unique_levels`), and the risk :math:`R'` multiplies over releases.
Each function validates its arguments once
(:func:`dprisk.models.checks.check_levels`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit, log_expit

from dprisk.inference.single_level.closed_form_kernels import cumulative_log_odds
from dprisk.models.checks import check_levels
from dprisk.models.numerics import probability_ratio

__all__ = ["SequentialRisk", "sequential_posterior", "sequential_risk"]


class SequentialRisk(NamedTuple):
    r"""Risks of sequential releases (supplement S5), release on the last axis.

    Attributes
    ----------
    per_release : ndarray
        :math:`R'(x_i^* \mid x_1^*, \ldots, x_{i-1}^*)`: posterior after release ``i`` over
        the posterior after release ``i - 1`` (the prior ``p`` for ``i = 1``).
    cumulative : ndarray
        :math:`R'(x_1^*, \ldots, x_i^*)`: posterior after release ``i`` over ``p``; equal to
        the running product of ``per_release``.
    """

    per_release: np.ndarray
    cumulative: np.ndarray


def sequential_posterior(x1_stars, rhos, p=0.5, known=0) -> np.ndarray:
    r"""Posterior after each of several releases of the same count (supplement S5).

    The prior of release :math:`i+1` is the posterior after release :math:`i`; in log-odds
    this is a running sum,

    .. math:: L_i = \operatorname{logit}(p) + \sum_{k \le i} \rho_k \bigl(2 (x_k^* - m) - 1\bigr),

    so the last entry equals
    :func:`dprisk.inference.nested.unique_levels.posterior_unique_levels` of all releases at once.

    Parameters
    ----------
    x1_stars : array_like of int, shape (..., n_releases)
        The released noisy counts :math:`x_1^*, \ldots, x_n^*` of the same true count, in
        release order on the last axis (may be negative).
    rhos : array_like of float (rho > 0), shape (..., n_releases)
        zCDP parameter of each release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]` before the first release.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    ndarray, shape (..., n_releases)
        :math:`\operatorname{expit}(L_i)`, the posterior :math:`P[X_1 = m+1 \mid x_1^*,
        \ldots, x_i^*]` after each release ``i``.
    """
    x, rhos, p, m = check_levels(x1_stars, rhos, p, known, "x1_stars")
    return expit(cumulative_log_odds(x, rhos, p, m))


def sequential_risk(x1_stars, rhos, p=0.5, known=0) -> SequentialRisk:
    r"""Per-release and cumulative :math:`R'` of sequential releases (supplement S5).

    .. math::

        R'(x_1^*, \ldots, x_n^*) = \prod_{i=1}^{n} R'(x_i^* \mid x_1^*, \ldots, x_{i-1}^*),
        \quad R'(x_i^* \mid \cdot) = \frac{P[X_1 = m+1 \mid x_1^*, \ldots, x_i^*]}
                                          {P[X_1 = m+1 \mid x_1^*, \ldots, x_{i-1}^*]}

    computed from log-posteriors (``log_expit``), so products of many releases neither
    overflow nor underflow: ``cumulative`` is always finite (at most ``1/p``). A single
    ``per_release`` factor can exceed the float range when one release undoes an
    overwhelming earlier one (e.g. rho = 1e4 and releases -1e4 then +1e4: the true factor is
    about e^{2e8}); it is then ``inf`` (without a warning), as IEEE overflow prescribes.

    Parameters
    ----------
    x1_stars : array_like of int, shape (..., n_releases)
        The released noisy counts :math:`x_1^*, \ldots, x_n^*` of the same true count, in
        release order on the last axis (may be negative).
    rhos : array_like of float (rho > 0), shape (..., n_releases)
        zCDP parameter of each release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]` before the first release.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    SequentialRisk
        ``per_release`` and ``cumulative``, each of shape (..., n_releases).
    """
    x, rhos, p, m = check_levels(x1_stars, rhos, p, known, "x1_stars")
    log_odds = cumulative_log_odds(x, rhos, p, m)
    post, log_post = expit(log_odds), log_expit(log_odds)
    prior = np.broadcast_to(p[..., None], (*post.shape[:-1], 1))
    log_prior = np.log(prior)
    previous = np.concatenate([prior, post[..., :-1]], axis=-1)
    log_previous = np.concatenate([log_prior, log_post[..., :-1]], axis=-1)
    return SequentialRisk(
        per_release=probability_ratio(post, log_post, previous, log_previous),
        cumulative=probability_ratio(post, log_post, prior, log_prior),
    )
