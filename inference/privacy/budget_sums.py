r"""The two-level per-release sums of the budget searches, for a whole release grid at once.

The certified budget searches (:mod:`dprisk.inference.privacy.budget_certified`,
:mod:`dprisk.inference.privacy.budget_levels`) need, at each searched rho and for every release
``(x2*, y1*)`` of the grid of the truth, the posterior log-odds at the known count and the
branch means of the bound's exponent ``s``:

.. math:: L_m = \log\frac{\sum_{k_2} \pi(m + 1, k_2)}{\sum_{k_2} \pi(m, k_2)}, \qquad
          E_b[s] = \frac{\sum_{k_2} s_b(k_2)\, \pi(m + b, k_2)}{\sum_{k_2} \pi(m + b, k_2)}.

For a prior whose weight is constant on each branch's support (``improper``, ``truncated:U``,
``point:K``; :func:`dprisk.inference.kernels.fused_kernels.branch_constant_weights`), with
``v = x2* - m``, ``w = y1*``, ``j = k2 - m`` and ``x1* = m`` (:mod:`dprisk.inference.kernels.
table_kernels`),

.. math:: \pi(m + b, m + j) \propto P[X_1 = m + b]\, w_b\, e^{-\rho_1 b^2}\,
          G_2[j, v]\, G_{1,b}[j, w], \quad G_2[j, v] = e^{-\rho_2 (v - j)^2}, \quad
          G_{1,b}[j, w] = e^{-(\rho_1/d)(w + b - j)^2},

a product of a factor of ``x2*`` and a factor of ``y1*``. So the branch sums over ``j`` in
the branch's support are, for the whole ``n2 x ny`` grid at once, matrix products,

.. math:: S_b = G_2^\top G_{1,b}, \qquad
          L_m = \operatorname{logit}(p) - \rho_1 + \log w_1 - \log w_0
                + \log S_1 - \log S_0,

and with :math:`s_b(j) = f_2 (v - j)^2 + (f_1/d)(w + b - j)^2 + f_1 b`,

.. math:: E_b[s] = \bigl(f_2\, (G_2 \circ D_2)^\top G_{1,b}
          + (f_1/d)\, G_2^\top (G_{1,b} \circ D_{1,b})\bigr) / S_b + f_1 b,

:math:`D_2[j, v] = (v - j)^2`, :math:`D_{1,b}[j, w] = (w + b - j)^2`: about ``2 J (n2 + ny)``
exponentials and six products of ``n2 x J x ny`` multiply-adds instead of one exponential per
cell of the ``n2 ny`` tables of ``J`` values. ``j`` runs over every window of
:func:`dprisk.inference.kernels.table_kernels.window_table` (the centres
:math:`\gamma = (\rho_2 v + (\rho_1/d) w)/A` of the grid, plus the half-width of
:func:`dprisk.inference.kernels.table_kernels.initial_halfwidth` and 3), cut to the support:
a superset of each release's window, so no term the tables keep is left out. All terms are
positive (no cancellation): the sums are within about ``J`` roundings of the exact ones, the
exponents (at most a few hundred) within :math:`10^{-13}` relative.

**Decisions exactly as the tables make them.** The P[correct] searches use these sums only
through integer thresholds (the smallest ``j`` with :math:`L + 2\rho_1 j >` TIE_ATOL, a tie
at :math:`|L + 2\rho_1 j| \le` TIE_ATOL; the bound's offsets likewise); the per-release
tables (:func:`dprisk.inference.studies.setup.exact_log_odds_at_known`) agree with these
sums to about 1e-12 (their windows leave out up to 1e-12 of each branch; measured 7e-14).
A threshold changes only where :math:`L + 2\rho_1 j = \pm` TIE_ATOL; every release whose
value lies within :data:`LEVEL_MARGIN` of such an edge is recomputed by the tables
(:func:`refine_near_levels`), so every threshold and tie is the one the tables give, and the
measure summed from them (:func:`grid_p_correct`) is the tables' to the last bit. A prior of
another kind, or a sum below :data:`SMALLEST_SUM`, gives None: the caller uses the tables.

**Cost.** The products are taken in blocks small enough for OpenBLAS to run them on one
thread (:data:`SINGLE_THREAD_PRODUCT`), and the grid in blocks of ``x2*`` rows
(:data:`BLOCK_RELEASES`). A search keeps the sums of its recent grids
(:class:`GridStore`); the tails ``U(t)`` per ``(x1, rho1)`` are the tables of
:func:`dprisk.inference.studies.p_correct.upper_tail`, shared with the studies.
"""

from __future__ import annotations

import math

import numpy as np

from dprisk.inference.kernels.fused_kernels import branch_constant_weights
from dprisk.inference.kernels.table_kernels import MAX_PRECISION, initial_halfwidth
from dprisk.inference.studies.p_correct import upper_tail
from dprisk.inference.studies.setup import POSTERIOR_TAIL_MASS, TIE_ATOL, grid_for_truth
from dprisk.models.scenario import Scenario

__all__ = ["BLOCK_RELEASES", "LEVEL_MARGIN", "SINGLE_THREAD_PRODUCT", "SMALLEST_SUM",
           "STORE_BYTES", "GridStore", "grid_log_odds", "grid_p_correct", "grid_statistics",
           "refine_near_levels"]

#: Releases whose log-odds lies within this of a decision's edge (a level plus or minus
#: TIE_ATOL) are recomputed by the exact tables: 50 times the sums' largest disagreement with
#: the tables (about 2e-12: the tables leave out up to 1e-12 of each branch), a tenth of
#: TIE_ATOL.
LEVEL_MARGIN = 1e-10
#: Smallest branch sum accepted (far above the smallest normal float): below it, the tables.
SMALLEST_SUM = 1e-250
#: Largest product ``rows x J x columns`` of one matrix product: OpenBLAS runs products up to
#: 4 x 65536 multiply-adds on one thread. Larger ones start its threads, whose start-up and
#: spinning cost several times the product itself on a loaded 2-core machine (measured: 30 ms
#: of CPU instead of 4 ms for a 309 x 200 x 67 grid), so the rows are taken in blocks.
SINGLE_THREAD_PRODUCT = 4 * 65536
#: Most releases (``x2*`` rows x ``ny``) whose sums are formed at once (temporaries bounded).
BLOCK_RELEASES = 2**18
#: Most bytes of sums a search's :class:`GridStore` keeps (the newest grid always).
STORE_BYTES = 2**28


def _product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left.T @ right`` in blocks of rows of at most :data:`SINGLE_THREAD_PRODUCT` work."""
    inner, rows = left.shape
    block = max(1, SINGLE_THREAD_PRODUCT // max(1, inner * right.shape[1]))
    if block >= rows:
        return left.T @ right
    out = np.empty((rows, right.shape[1]))
    for start in range(0, rows, block):
        out[start:start + block] = left[:, start:start + block].T @ right
    return out


def _support_rows(params: Scenario, b: int, feasible, lows, highs, has_high, first: int,
                  last: int) -> tuple[int, int] | None:
    """The ``j`` range ``[lo, hi]`` of branch ``b``: ``[first, last]`` cut to its support."""
    if not feasible[b]:
        return None
    lo = max(first, int(lows[b]) - params.known)
    hi = min(last, int(highs[b]) - params.known) if has_high[b] else last
    return (lo, hi) if lo <= hi else None


def grid_statistics(x2_star, y1_star, params: Scenario, shares=(0.0, 1.0),
                    want_means: bool = True):
    r"""``(log_odds, mean_s)`` on the grid ``x2_star x y1_star`` (flat, ``x2*``-major), or None.

    ``log_odds`` (``n2 ny``,) is :math:`L_m` and ``mean_s`` (``n2 ny``, 2) is :math:`E_b[s]`
    (None without ``want_means``), by the matrix products of the module docstring; None for
    a prior that is not constant on each branch's support, a precision above
    :data:`dprisk.inference.kernels.table_kernels.MAX_PRECISION`, or a branch sum below
    :data:`SMALLEST_SUM` (the caller then uses the tables). ``shares`` :math:`(f_1, f_2)`.
    """
    if params.precision > MAX_PRECISION:
        return None
    weights = branch_constant_weights(params)
    if weights is None:
        return None
    feasible, lows, highs, has_high, log_weights = weights
    m = params.known
    v = np.asarray(x2_star, dtype=np.int64) - m
    w = np.asarray(y1_star, dtype=np.int64)
    rho1, rho2, d = float(params.rho1), float(params.rho2), int(params.d)
    rho1_d = rho1 / d
    precision = float(params.precision)
    halfwidth = initial_halfwidth(precision, POSTERIOR_TAIL_MASS)
    centre_low = (rho2 * float(v.min()) + rho1_d * float(w.min())) / precision
    centre_high = (rho2 * float(v.max()) + rho1_d * float(w.max())) / precision
    first = math.floor(centre_low) - halfwidth - 3
    last = math.floor(centre_high) + halfwidth + 3
    block_share, group_share = shares
    n2, ny = v.size, w.size
    log_sums = np.full((2, n2, ny), -np.inf)
    mean_s = np.zeros((n2, ny, 2)) if want_means else None
    step = max(1, BLOCK_RELEASES // ny)  # x2* values per block: bounded temporaries
    for b in (0, 1):
        rows = _support_rows(params, b, feasible, lows, highs, has_high, first, last)
        if rows is None:
            continue
        j = np.arange(rows[0], rows[1] + 1, dtype=np.int64)
        dist1 = (w[None, :] + b - j[:, None]).astype(float) ** 2  # (J, ny)
        g1 = np.exp(-rho1_d * dist1)
        g1_moment = g1 * dist1 if want_means and block_share else None
        for lo in range(0, n2, step):
            block = slice(lo, lo + step)
            dist2 = (v[None, block] - j[:, None]).astype(float) ** 2  # (J, block)
            g2 = np.exp(-rho2 * dist2)
            sums = _product(g2, g1)
            if not np.all(sums >= SMALLEST_SUM):
                return None
            log_sums[b, block] = np.log(sums)
            if want_means:
                moment = np.zeros_like(sums)
                if group_share:
                    moment += group_share * _product(g2 * dist2, g1)
                if block_share:
                    moment += (block_share / d) * _product(g2, g1_moment)
                mean_s[block, :, b] = moment / sums + block_share * b
    logit_p = math.log(params.p) - math.log1p(-params.p)
    constant = logit_p - rho1 + float(log_weights[1] - log_weights[0])
    with np.errstate(invalid="ignore"):
        log_odds = ((log_sums[1] + constant) - log_sums[0]).ravel()
    return log_odds, None if mean_s is None else mean_s.reshape(-1, 2)


def refine_near_levels(log_odds: np.ndarray, rho1: float, exact) -> np.ndarray:
    r"""``log_odds`` with every finite value near a decision's edge replaced by ``exact(index)``.

    The thresholds and ties of :func:`dprisk.inference.studies.thresholds.linear_thresholds`
    change only where :math:`L + 2\rho_1 j = \pm` TIE_ATOL for an integer ``j``; near means
    within :data:`LEVEL_MARGIN` of such a point (for the nearest level ``j``). ``exact(index)``
    returns the tables' log-odds of those releases (flat indices). Away from the edges the
    sums and the tables agree to far less than the distance, so the thresholds and ties from
    the result are the tables' (module docstring).
    """
    finite = np.isfinite(log_odds)
    safe = np.where(finite, log_odds, 0.0)
    distance = np.abs(safe + 2.0 * rho1 * np.rint(-safe / (2.0 * rho1)))
    index = np.flatnonzero(finite & (np.abs(distance - TIE_ATOL) < LEVEL_MARGIN))
    if index.size == 0:
        return log_odds
    refined = log_odds.copy()
    refined[index] = exact(index)
    return refined


def grid_log_odds(x2s: np.ndarray, y1s: np.ndarray, params: Scenario,
                  store: GridStore | None = None) -> np.ndarray:
    r""":math:`L_m` on a release grid's meshgrid (``indexing="ij"``), decided as the tables decide.

    The sums of :func:`grid_statistics` on the grid ``x2s[:, 0] x y1s[0, :]`` (from
    ``store`` when given), the releases near a decision's edge recomputed by
    :func:`dprisk.inference.studies.setup.exact_log_odds_at_known`
    (:func:`refine_near_levels`); that function alone when the sums do not serve the prior.
    """
    from dprisk.inference.studies.setup import exact_log_odds_at_known

    x2_star, y1_star = x2s[:, 0], y1s[0, :]
    stats = (grid_statistics(x2_star, y1_star, params, want_means=False) if store is None
             else store.statistics(params, x2_star, y1_star, want_means=False))
    if stats is None:
        return exact_log_odds_at_known(x2s, y1s, params)
    flat_x2, flat_y1 = x2s.ravel(), y1s.ravel()
    refined = refine_near_levels(
        stats[0], float(params.rho1),
        lambda index: exact_log_odds_at_known(flat_x2[index], flat_y1[index], params))
    return refined.reshape(x2s.shape)


def _contiguous(values: np.ndarray) -> bool:
    """Whether sorted distinct integers ``values`` are consecutive."""
    return values.size > 0 and int(values[-1]) - int(values[0]) + 1 == values.size


class GridStore:
    r"""A search's store of :func:`grid_statistics` by scenario, reused on every sub-grid.

    A certified search evaluates, at each rho, the statistics on the grid of the interval's
    lower end (the bound) and the log-odds on the grid of rho itself (the measure), a
    sub-grid of it (the release grids are consecutive integers around the truth, narrower
    at larger rho). The sums of one release do not depend on the rest of the grid but for
    the range of ``j`` summed (wider on a wider grid, the extra terms far below every
    window's neglected share), so a lookup slices a stored grid that contains the one asked
    for; the decisions taken from them are the tables' either way
    (:func:`refine_near_levels`). Keeps the ``size`` most recently used grids, at most
    :data:`STORE_BYTES` of them but the newest.
    """

    def __init__(self, size: int = 16):
        self.size = size
        self._entries: dict = {}
        self._grids: dict = {}
        #: The bounds' memo by scenario and grid (for the priors the sums do not serve, the
        #: tables' statistics), as :func:`dprisk.inference.privacy.budget_certified`'s.
        self.tables: dict = {}

    def grid(self, x2: int, y1: int, params: Scenario, tail_mass: float):
        """:func:`dprisk.inference.studies.setup.grid_for_truth`, kept for the last grids."""
        key = (x2, y1, params, tail_mass)
        found = self._grids.get(key)
        if found is None:
            if len(self._grids) >= self.size:
                del self._grids[next(iter(self._grids))]
            found = self._grids[key] = grid_for_truth(x2, y1, params, tail_mass)
        return found

    def statistics(self, params: Scenario, x2_star: np.ndarray, y1_star: np.ndarray,
                   shares=(0.0, 1.0), want_means: bool = True):
        """``(log_odds, mean_s)`` as :func:`grid_statistics` (None where it gives None)."""
        shares = (float(shares[0]), float(shares[1]))
        sliceable = _contiguous(x2_star) and _contiguous(y1_star)
        if sliceable:
            for key, entry in reversed(self._entries.items()):
                found = self._slice(key, entry, params, x2_star, y1_star, shares, want_means)
                if found is not None:
                    self._entries[key] = self._entries.pop(key)  # most recently used
                    return found
        stats = grid_statistics(x2_star, y1_star, params, shares, want_means)
        if stats is not None and sliceable:
            key = (params, shares if want_means else None, int(x2_star[0]), x2_star.size,
                   int(y1_star[0]), y1_star.size)
            self._entries[key] = stats
            # the least recently used go first: at most `size` grids and STORE_BYTES (the
            # newest is always kept)
            while len(self._entries) > 1 and (len(self._entries) > self.size
                                              or self._bytes() > STORE_BYTES):
                del self._entries[next(iter(self._entries))]
        return stats

    def _bytes(self) -> int:
        return sum(odds.nbytes + (0 if mean_s is None else mean_s.nbytes)
                   for odds, mean_s in self._entries.values())

    @staticmethod
    def _slice(key, entry, params, x2_star, y1_star, shares, want_means):
        stored_params, stored_shares, x2_first, n2, y1_first, ny = key
        if stored_params != params or (want_means and stored_shares != shares):
            return None
        row, column = int(x2_star[0]) - x2_first, int(y1_star[0]) - y1_first
        if not (0 <= row and row + x2_star.size <= n2 and 0 <= column
                and column + y1_star.size <= ny):
            return None
        log_odds, mean_s = entry
        rows, columns = slice(row, row + x2_star.size), slice(column, column + y1_star.size)
        odds = log_odds.reshape(n2, ny)[rows, columns].ravel()
        if not want_means:
            return odds, None
        return odds, mean_s.reshape(n2, ny, 2)[rows, columns].reshape(-1, 2)


def grid_p_correct(params: Scenario, *, x2: int, tail_mass: float,
                   store: GridStore | None = None) -> float:
    r"""The exact two-level P[correct] at truth ``x1 = m + 1``, from the grid sums (kernel).

    .. math:: P = \sum_{x_2^*, y_1^*} P[x_2^*]\, P[y_1^*]\, U\bigl(m + j(x_2^*, y_1^*)\bigr)

    with ``j`` the thresholds of :func:`dprisk.inference.studies.thresholds.linear_thresholds`
    from :func:`grid_log_odds` and :func:`upper_tail`: the ``p_correct`` of
    :func:`dprisk.inference.studies.p_correct.study_kernel` (ties decided ``m``), summed as it
    sums, so bit for bit (tests/inference/privacy/test_budget_sums.py). The same work check
    first; the grid and the sums from ``store`` when given.
    """
    from dprisk.inference.studies.p_correct import check_study_work
    from dprisk.inference.studies.thresholds import linear_thresholds

    check_study_work(params, tail_mass)
    y1 = x2 - params.known - 1
    grid = (grid_for_truth(x2, y1, params, tail_mass) if store is None
            else store.grid(x2, y1, params, tail_mass))
    x2s, y1s = np.meshgrid(grid.x2_star, grid.y1_star, indexing="ij")
    offset, _ = linear_thresholds(grid_log_odds(x2s, y1s, params, store), params.rho1)
    decide_up = upper_tail(params.known + offset, params.known + 1, float(params.rho1))
    return float((grid.weights * decide_up).sum())
