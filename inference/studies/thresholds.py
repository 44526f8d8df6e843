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

from dprisk.inference.kernels.mass_kernels import window_masses
from dprisk.inference.kernels.table_kernels import initial_halfwidth, widened, window_geometry
from dprisk.inference.studies.release_cells import CellStore, cell_keys, remember
from dprisk.inference.studies.setup import (
    POSTERIOR_TAIL_MASS,
    TIE_ATOL,
    exact_log_odds_at_known,
)
from dprisk.models.checks import check_count
from dprisk.models.priors.library import ImproperUniform
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
        return _variant_offsets(x2s, y1s, params)
    raise ValueError(f"model must be 'exact' or 'variant', got {model!r}")


#: Distance from the decision's boundaries (log-odds ``TIE_ATOL`` and ``-TIE_ATOL``) beyond
#: which the exact model's log-odds decides the variant's threshold and tie where the two
#: laws are equal (:func:`_variant_offsets`): 100 times the bound on the difference of the
#: two computed log-odds.
SHARED_MARGIN = 1e-10
#: Largest ``|L_m| + |2 rho1 (t - m)|`` and largest ``|x1_window_term|`` on a window for
#: which that bound holds (their rounding, ``eps`` times them, is below 1e-12).
SHARED_MAX_TERM = 1e3


def _variant_offsets(x2s, y1s, params: Scenario):
    r"""The variant's ``(offset, tie)``: the exact model's where they are equal, else bisected.

    Where the prior is the improper uniform and a release's k2 window leaves out
    ``k2 = m``, the variant's X1 update equals the model's
    :math:`P[X_1 = m + 1 \mid k_2, D]` on every k2 of the window
    (:mod:`dprisk.inference.studies.variant`), so the variant's chain on the window is the
    exact Gibbs sampler of the joint posterior restricted to it, whose X1 chain is
    reversible: its stationary log-odds at ``x1* = m + j`` is

    .. math:: \log \frac{T_{01}}{T_{10}} = \log \frac{M_1}{M_0} = L_m + 2 \rho_1 j,

    the exact model's (:math:`M_b` the window's branch masses). The two computations then
    differ by their rounding and the windows' neglected mass, below 1e-11 while the terms
    stay below :data:`SHARED_MAX_TERM`; where the exact log-odds at ``t - m`` and one below
    are farther than :data:`SHARED_MARGIN` from the decision's boundaries, the variant's
    threshold and tie are the exact model's. Those releases are found at the first window
    (:func:`dprisk.inference.kernels.table_kernels.initial_halfwidth`), their exact log-odds
    taken from the window's branch masses
    (:func:`dprisk.inference.kernels.mass_kernels.window_masses`, widened by
    :func:`~dprisk.inference.kernels.table_kernels.checked_table`'s rule: the masses
    :func:`dprisk.inference.studies.setup.posterior_table` gives, bit for bit) and their
    window checked again at the width used. Every other release is bisected
    (:func:`dprisk.inference.studies.variant.variant_thresholds`). The exact model's
    thresholds computed on the way are kept for it (:func:`_remember_exact`).
    """
    from dprisk.inference.studies.variant import (
        variant_thresholds,  # SciPy only for the variant
    )

    flat2, flaty = np.ravel(x2s), np.ravel(y1s)
    if type(params.prior) is not ImproperUniform or flat2.size == 0:
        return variant_thresholds(x2s, y1s, params)
    x2i, y1i = (np.asarray(a, dtype=np.int64) for a in (flat2, flaty))
    candidates = np.flatnonzero(_window_starts(x2i, y1i, params, None) > params.known)
    if candidates.size == 0:
        return variant_thresholds(x2s, y1s, params)
    offset, tie = np.empty(flat2.size), np.empty(flat2.size, dtype=bool)
    shared, exact_offset, exact_tie = _exact_share(x2i[candidates], y1i[candidates], params)
    _remember_exact(flat2[candidates], flaty[candidates], params, exact_offset, exact_tie)
    offset[candidates[shared]] = exact_offset[shared]
    tie[candidates[shared]] = exact_tie[shared]
    # the other releases in two batches: those the exact model has not met (it then reads its
    # log-odds off their tables, dprisk.inference.studies.setup), and the candidates left
    others = np.ones(flat2.size, dtype=bool)
    others[candidates] = False
    for rows in (np.flatnonzero(others), candidates[~shared]):
        if rows.size:
            offset[rows], tie[rows] = variant_thresholds(flat2[rows], flaty[rows], params)
    return offset.reshape(np.shape(x2s)), tie.reshape(np.shape(x2s))


def _window_starts(x2s, y1s, params: Scenario, halfwidth: int | None) -> np.ndarray:
    """First k2 of each release's window at ``halfwidth`` (default: the first window's)."""
    if halfwidth is None:
        halfwidth = initial_halfwidth(params.precision, POSTERIOR_TAIL_MASS)
    x1s = np.full(x2s.size, params.known, dtype=np.int64)
    return window_geometry(x1s, x2s, y1s, params, halfwidth).start


def _exact_share(x2s, y1s, params: Scenario):
    """``(shared, offset, tie)``: the exact model's thresholds, and where they are the variant's.

    :func:`_variant_offsets` on releases whose first window leaves out ``k2 = m`` (int64
    arrays, improper prior).
    """
    x1s = np.full(x2s.size, params.known, dtype=np.int64)
    masses = widened(window_masses, x1s, x2s, y1s, params, POSTERIOR_TAIL_MASS, None)
    mass = masses.log_branch_mass
    with np.errstate(invalid="ignore"):
        log_odds = mass[:, 1] - mass[:, 0]
    offset, tie = linear_thresholds(log_odds, params.rho1)
    start = _window_starts(x2s, y1s, params, (masses.width - 3) // 2)
    finite = np.isfinite(log_odds) & np.isfinite(offset)
    lm = np.where(finite, log_odds, 0.0)
    step = 2.0 * params.rho1 * np.where(finite, offset, 0.0)
    above, below = lm + step, lm + (step - 2.0 * params.rho1)
    # the variant's k2 term on the window, (rho1/d) |2 (y1* - k2 + m) + 1|, at its largest
    reach = np.maximum(np.abs(y1s - start + params.known),
                       np.abs(y1s - start - masses.width + 1 + params.known))
    window_term = params.rho1 / params.d * (2.0 * reach + 1.0)
    shared = (finite & (start > params.known)
              & (np.abs(lm) + np.abs(step) <= SHARED_MAX_TERM)
              & (window_term <= SHARED_MAX_TERM)
              & (above > TIE_ATOL + SHARED_MARGIN)
              & (below < TIE_ATOL - SHARED_MARGIN)
              & (np.abs(np.abs(below) - TIE_ATOL) > SHARED_MARGIN))
    return shared, offset, tie


def _remember_exact(x2s, y1s, params: Scenario, offset, tie) -> None:
    """Keep the exact model's ``(offset, tie)`` of releases the variant's search computed.

    Only releases not kept yet are added (:func:`decision_offsets` computes a release once);
    they are the values :func:`_decision_offsets` gives those releases (the same branch
    masses, :func:`linear_thresholds`).
    """
    keys = cell_keys(x2s, y1s)
    if keys is None:
        return
    store_key = (params, "exact")
    store = _offsets_cache.get(store_key)
    if store is None:
        store = CellStore.empty(np.dtype(float), np.dtype(bool))
    new = np.flatnonzero(store.find(keys) < 0)
    if new.size == 0:
        return
    new_keys, first = np.unique(keys[new], return_index=True)
    rows = new[first]
    remember(_offsets_cache, store_key, store, new_keys, (offset[rows], tie[rows]))


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
