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

import numpy as np

from dprisk.inference.studies.release_cells import CellStore, cell_keys, remember
from dprisk.inference.studies.setup import TIE_ATOL, exact_log_odds_at_known
from dprisk.models.checks import check_count
from dprisk.models.scenario import Scenario
from dprisk.runtime.bounded_cache import BoundedCache

__all__ = ["MODELS", "OFFSETS_CACHE_CELLS", "decision_offsets", "decision_thresholds",
           "linear_thresholds"]

#: The adversary's decision models: the exact posterior or the constraint-dropping variant.
MODELS = ("exact", "variant")
#: How many releases ``(x2*, y1*)`` a process keeps the :func:`decision_offsets` of, over all
#: scenarios and models (17 bytes each). The report's risk studies ask for overlapping release
#: grids under one scenario many times: Figure 5's grids for x2 = 1..30 share 80% of their
#: releases, Figure 6's for x2 = 1 and 10 a quarter of the work.
OFFSETS_CACHE_CELLS = 2**20
_offsets_cache = BoundedCache(OFFSETS_CACHE_CELLS)


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


def decision_offsets(x2s, y1s, params: Scenario, model: str):
    """``(t - m, tie)`` per ``(x2*, y1*)`` for ``model`` in :data:`MODELS` (kernel).

    Answers are remembered per process release by release (:data:`OFFSETS_CACHE_CELLS`,
    per scenario and model, :class:`dprisk.inference.studies.release_cells.CellStore` in a
    :class:`dprisk.runtime.bounded_cache.BoundedCache`): only the releases not met before
    under the scenario and model are computed, in one batch. Each release's offset and tie
    depend on that release alone (the exact log-odds and the variant's stationary log-odds
    are evaluated row by row; a batch's common k2 window only changes the last bits of a
    log-odds, not the integer threshold), so the answer is that of computing the releases
    asked for. Each call returns fresh arrays.
    """
    if model not in MODELS:
        raise ValueError(f"model must be 'exact' or 'variant', got {model!r}")
    x2s, y1s = np.broadcast_arrays(np.asarray(x2s), np.asarray(y1s))
    keys = cell_keys(x2s, y1s)
    if keys is None:  # not integers of a moderate size: computed as they are
        return _decision_offsets(x2s, y1s, params, model)
    store_key = (params, model)
    store = _offsets_cache.get(store_key)  # None also for a scenario holding unhashable parts
    if store is None:
        store = CellStore.empty(np.dtype(float), np.dtype(bool))
    rows = store.find(keys)
    missing = rows < 0
    if missing.any():
        new_keys, first = np.unique(keys[missing], return_index=True)
        x2_new = x2s.ravel()[missing][first]
        y1_new = y1s.ravel()[missing][first]
        store = remember(_offsets_cache, store_key, store, new_keys,
                         _decision_offsets(x2_new, y1_new, params, model))
        rows = store.find(keys)
    offset, tie = store.values
    return offset[rows].reshape(x2s.shape), tie[rows].reshape(x2s.shape)


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
