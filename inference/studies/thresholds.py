r"""The adversary's decision boundary in ``x1*`` for each ``(x2*, y1*)`` (paper §4.3, S4).

The adversary decides ``X1 = m + 1`` iff its posterior exceeds 1/2. With the exact posterior
the log-odds is :math:`L_m(x_2^*, y_1^*) + 2\rho_1 (x_1^* - m)`
(:func:`dprisk.inference.studies.setup.exact_log_odds_at_known`), so the decision is
``x1* >= t(x2*, y1*)`` with :math:`t = m + \lfloor -L_m / (2\rho_1) \rfloor + 1`
(:func:`linear_thresholds`); with the constraint-dropping Gibbs variant the threshold is found
by bisection (:func:`dprisk.inference.studies.variant.variant_thresholds`). Posteriors equal to 1/2
within :data:`dprisk.inference.studies.setup.TIE_ATOL` on the log-odds scale are ties.
"""

from __future__ import annotations

import hashlib

import numpy as np

from dprisk.inference.studies.setup import TIE_ATOL, exact_log_odds_at_known
from dprisk.models.checks import check_count
from dprisk.models.scenario import Scenario
from dprisk.runtime.bounded_cache import BoundedCache

__all__ = ["MODELS", "decision_offsets", "decision_thresholds", "linear_thresholds"]

#: The adversary's decision models: the exact posterior or the constraint-dropping variant.
MODELS = ("exact", "variant")
#: How many :func:`decision_offsets` answers a process keeps (the report's risk studies ask
#: for the same release grid under the same scenario several times, e.g. Figures 5 and 6).
OFFSETS_CACHE_SIZE = 256
_offsets_cache = BoundedCache(OFFSETS_CACHE_SIZE)


def linear_thresholds(log_odds_at_known, rho1: float):
    r"""Strict thresholds ``t - m`` and tie offsets from :math:`L_m + 2\rho_1 j`.

    Returns ``(offset, tie)``: the smallest ``j`` with :math:`L_m + 2\rho_1 j > ` TIE_ATOL
    (float, ``+-inf`` for impossible / certain branches) and a boolean array marking cells
    where ``j = offset - 1`` is a tie.
    """
    lm = np.asarray(log_odds_at_known, dtype=float)
    finite = np.isfinite(lm)
    safe = np.where(finite, lm, 0.0)
    boundary = -safe / (2.0 * rho1)
    nearest = np.rint(boundary)
    tie = finite & (np.abs(safe + 2.0 * rho1 * nearest) <= TIE_ATOL)
    offset = np.where(tie, nearest + 1.0, np.floor(boundary) + 1.0)
    # Float guard: make sure offset - 1 is not above the boundary and offset is.
    value_at = safe + 2.0 * rho1 * offset
    offset = np.where(~tie & ~(value_at > TIE_ATOL), offset + 1.0, offset)
    value_below = safe + 2.0 * rho1 * (offset - 1.0)
    offset = np.where(~tie & (value_below > TIE_ATOL), offset - 1.0, offset)
    offset = np.where(finite, offset, np.where(lm > 0, -np.inf, np.inf))
    return offset, tie


def _releases_key(x2s, y1s, params: Scenario, model: str):
    """Every input of :func:`decision_offsets`: scenario, model, and the releases' values."""
    digest = hashlib.sha1()
    for a in (x2s, y1s):
        a = np.ascontiguousarray(a)
        digest.update(f"{a.dtype.str}{a.shape}".encode())
        digest.update(a.tobytes())
    return params, model, digest.hexdigest()


def decision_offsets(x2s, y1s, params: Scenario, model: str):
    """``(t - m, tie)`` per ``(x2*, y1*)`` for ``model`` in :data:`MODELS` (kernel).

    Answers are remembered per process (:data:`OFFSETS_CACHE_SIZE`, keyed by the scenario,
    the model and the releases' values, :class:`dprisk.runtime.bounded_cache.BoundedCache`);
    each call returns fresh copies.
    """
    if model not in MODELS:
        raise ValueError(f"model must be 'exact' or 'variant', got {model!r}")
    key = _releases_key(x2s, y1s, params, model)
    found = _offsets_cache.get(key)  # None also for a scenario holding unhashable parts
    if found is None:
        found = _decision_offsets(x2s, y1s, params, model)
        _offsets_cache.put(key, found)
    return tuple(np.copy(a) for a in found)


def _decision_offsets(x2s, y1s, params: Scenario, model: str):
    """:func:`decision_offsets`, computed."""
    if model == "exact":
        return linear_thresholds(exact_log_odds_at_known(x2s, y1s, params), params.rho1)
    if model == "variant":
        from dprisk.inference.studies.variant import (
            variant_thresholds,  # SciPy only for the variant
        )

        return variant_thresholds(x2s, y1s, params)
    raise ValueError(f"model must be 'exact' or 'variant', got {model!r}")


def decision_thresholds(x2_star, y1_star, *, rho1, rho2, d, p=0.5, known=0,
                        prior="improper", model="exact"):
    r"""The adversary's decision boundary in ``x1*`` for each ``(x2*, y1*)``.

    The adversary decides ``X1 = m + 1`` iff ``x1* >= threshold`` (posterior > 1/2), and the
    release ``x1* = threshold - 1`` gives a posterior of exactly 1/2 where ``tie`` is true.

    Parameters
    ----------
    x2_star, y1_star : array_like of int
        Releases (broadcast).
    rho1, rho2, d, p, known, prior
        The adversary's model (:func:`dprisk.inference.two_level.exact.exact_posterior`).
    model : {"exact", "variant"}
        The exact posterior, or the stationary X1 probability of the constraint-dropping
        Gibbs sampler (:func:`dprisk.inference.studies.variant.variant_log_odds`).

    Returns
    -------
    threshold : ndarray of float
        Integer-valued, ``+inf`` if ``m + 1`` is never chosen, ``-inf`` if always (a Python
        float for scalar releases).
    tie : ndarray of bool (bool for scalar releases)
    """
    params = Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=p, known=known,
                                      prior=prior)
    x2s, y1s = np.broadcast_arrays(check_count(x2_star, "x2_star"),
                                   check_count(y1_star, "y1_star"))
    offset, tie = decision_offsets(x2s, y1s, params, model)
    if offset.ndim == 0:
        return float(params.known + offset), bool(tie)
    return params.known + offset, tie
