r"""A certified first crossing of the two-level measures: in rho2 (rho1 fixed) or the global rho.

Written out for P[correct]; the marginal posterior (:func:`marginal_upper_bound`) is the same
with the cell's value the posterior of the truth averaged over ``x1*``
(:func:`dprisk.inference.privacy.two_level_marginal.posterior_over_x1`), which increases with
:math:`L_m` and is bounded at :math:`\bar L` (plus the ``x1*`` mass left out); the marginal
risk is that bound divided by p.

The two-level P[correct] (:func:`dprisk.inference.studies.p_correct.p_correct_two_level`, truth
``x1 = m + 1``) is

.. math:: P(\rho_2) = \sum_{x_2^*, y_1^*} \pi_{\rho_2}(x_2^* - x_2)\, q(y_1^*)\,
          U\bigl(m + j(x_2^*, y_1^*; \rho_2)\bigr),

with :math:`\pi_{\rho}` the DG(0, 1/(2 rho)) pmf, ``q`` the exact pmf of the ``y1*`` noise
sum (rho1 only), :math:`U(t) = P[X_1^* \ge t \mid x_1]` (rho1 only) and ``j`` the smallest
offset with :math:`L_m(\rho_2) + 2\rho_1 j >` TIE_ATOL. Each cell's threshold jumps wherever
its log-odds :math:`L_m` crosses a level :math:`-2\rho_1 j`, and the weights move
continuously, so P is piecewise continuous with too many jumps to enumerate. Instead, on an
interval :math:`[a, b]` of rho2 an upper bound of :math:`\sup_{[a,b]} P` is computed from the
two ends alone (:func:`p_correct_upper_bound`), and the search (:func:`certified_crossing`)
refines the scan's intervals until each is either *certified* (bound at most ``T``) or
shorter than a relative :data:`dprisk.inference.privacy.budget.ABOVE`.

**The log-odds bound.** rho2 enters the joint posterior only through
:math:`e^{-\rho_2 s}`, :math:`s = (x_2^* - k_2)^2`, so with the per-branch log mass
:math:`F_b(\rho_2) = \log \sum_{k_2} \pi(m + b, k_2)` (convex in rho2,
:math:`F_b' = -E_b[s]`, the mean of ``s`` under :math:`X_2 \mid X_1 = m + b, D`),
:math:`L_m = F_1 - F_0` obeys, for :math:`\rho \in [a, b]`,

.. math:: L_m(\rho) \le \min\bigl(L_m(a) + (\rho - a)(E_{0,a}[s] - E_{1,b}[s]),\;
          L_m(b) + (b - \rho)(E_{1,a}[s] - E_{0,b}[s])\bigr)

(tangents of the convex :math:`F_b` at the ends; :math:`F_b'` increases). The maximum of that
minimum over the interval (at an end or where the two lines meet) is :math:`\bar L`, widened
by :math:`10^{-9}(1 + |\bar L|)` for rounding and the window's neglected share (below 1e-12),
and the smallest possible threshold offset is
:math:`\underline j = \lfloor(-\mathrm{TIE\_ATOL} - \bar L)/(2\rho_1)\rfloor + 1`.

**The weight bound.** With :math:`\bar G(x_2^*) = \sum_{y_1^*} q(y_1^*)\,
U(m + \underline j) \in [0, 1]` (an upper bound of the cell's P[correct] over the interval),
:math:`P(\rho) \le h(\rho) + \nu_a` with :math:`h(\rho) = E_\rho[\bar G(x_2 + \eta)]`,
:math:`\eta \sim \mathrm{DG}(0, 1/(2\rho))`, and :math:`\nu_a` the release mass off the grid
built at ``a`` (the off-grid mass of :math:`x_2^*` decreases in rho2: :math:`\eta^2` is
stochastically decreasing). As :math:`h'' = \operatorname{Cov}(\bar G, (\eta^2 -
E\eta^2)^2)`, :math:`|h''| \le \operatorname{Var}(\eta^2) \le E_\rho[\eta^4] \le
E_a[\eta^4]` on the interval, and a function with :math:`|h''| \le M` exceeds the larger of
its end values by at most :math:`M (b - a)^2 / 8`. Hence

.. math:: \sup_{[a,b]} P \le \max(h(a), h(b)) + \tfrac18 (b - a)^2 E_a[\eta^4] + \nu_a

(the code uses the form of "Both levels" below, which reduces to this one for rho1 fixed
but for the off-grid mass, taken at each end).

Both parts tighten as the interval shrinks (second order in the weights, and the log-odds
bound is exact at a point), so the search converges except at a genuine crossing.

**Both levels** (the Census allocation: :math:`\rho_1 = f_1\rho`, :math:`\rho_2 = f_2\rho`
in the global rho, ``shares`` :math:`(f_1, f_2)`; rho1 fixed is ``shares = (0, 1)``). The
joint posterior (:mod:`dprisk.inference.kernels.table_kernels`) at :math:`x_1^* = m` is
:math:`\pi(m + b, k_2) \propto w(k_2)\, e^{-\rho_1 b^2 - \rho_2 (x_2^* - k_2)^2 -
(\rho_1/d)(y_1^* - k_2 + m + b)^2}`, so rho enters only through :math:`e^{-\rho s}` with

.. math:: s = f_2 (x_2^* - k_2)^2 + \frac{f_1}{d}(y_1^* - k_2 + m + b)^2 + f_1 b \ge 0,

and :math:`F_b` is again convex with :math:`F_b' = -E_b[s]`: the log-odds bound holds as
written with this ``s``. The threshold offset moves with :math:`\rho_1` too: the smallest
:math:`\underline j` over the interval is the smaller of those at :math:`\rho_1(a)` and
:math:`\rho_1(b)` (for a fixed :math:`\bar L`, ``j`` is monotone in :math:`\rho_1`). The
weights: the bound :math:`\bar G` is a fixed [0, 1] function of all the noises
:math:`(\eta_2, e_1, \dots, e_d, e_{x_1})` (the ``d`` other blocks and the target's block),
whose joint pmf is :math:`\propto e^{-\rho\, t}` with :math:`t = f_2\eta_2^2 + f_1(\sum_i
e_i^2 + e_{x_1}^2)`; so :math:`h(\rho) = E_\rho[\bar G]` has :math:`h'' = \operatorname{Cov}
(\bar G, (t - E t)^2)`, :math:`|h''| \le \operatorname{Var}(t) \le M = f_2^2
E_{\rho_2(a)}[\eta^4] + (d + 1) f_1^2 E_{\rho_1(a)}[\eta^4]` (independent noises, fourth
moments decreasing in the precision). :math:`h(a)` and :math:`h(b)` are summed exactly on the
release grids built at each end (the grid at ``b`` is a sub-grid of the one at ``a``), each
plus its own off-grid mass :math:`\nu`:

.. math:: \sup_{[a,b]} P \le \max(h(a) + \nu_a, h(b) + \nu_b) + \tfrac18 (b - a)^2 M.

For the marginal posterior the ``x1*`` term :math:`\operatorname{expit}(\bar L + 2\rho_1(1 +
e))` is taken at :math:`\rho_1(b)` for :math:`1 + e \ge 0` and at :math:`\rho_1(a)` below
(a fixed function again). A test checks :math:`dL_m/d\rho = E_0[s] - E_1[s]` by finite
differences and the bound against a fine scan on random intervals.

**What is guaranteed** (up to floating point and the sums' neglected masses, below
``tail_mass``). An interval of relative width :data:`dprisk.inference.privacy.budget.ABOVE` whose
right end fails the target locates the crossing; one whose ends both meet the target but
whose bound does not is *unresolved* and passed over (the cellwise bound cannot converge at
a rho where many cells' posteriors reach 1/2 at once, e.g. rho2 = 1/20 for rho1 = 1, d = 1,
where :math:`\rho_2 \rho_1 / (d A)` makes the log-odds of whole families of releases vanish
together, nor where the measure approaches ``T`` within the bound's slack). The result:

* ``rho`` is the left end of the first located interval: P is above ``T`` at ``value_above``,
  at most :math:`\rho(1 + 10^{-9})`, and at most ``T`` at ``rho`` (``value_at_rho``);
* P is proven at most ``T`` on ``[low, certified_to]`` (``certified_to``: the first
  unresolved interval's left end, or ``rho`` if none), and on ``[certified_to, rho]`` except
  inside the unresolved intervals (each of relative width 1e-9, both ends evaluated and
  meeting ``T``);
* after :data:`MAX_UNRESOLVED` unresolved intervals the search stops (:class:`BoundStalled`)
  and the caller falls back to the scan and bisection beyond ``certified_to``.

So no crossing wider than a relative 1e-9 between scan points can be missed before
``certified_to``, nor, short of the fallback, before ``rho``.

**Computation.** :math:`L_m` and :math:`E_b[s]` of every cell of a grid are the grid sums of
:func:`dprisk.inference.privacy.budget_sums.grid_statistics` (matrix products; the priors
constant on each branch's support), else the exact tables (:func:`_cell_statistics`); the
cells whose :math:`\bar L` is within
:data:`dprisk.inference.privacy.budget_sums.LEVEL_MARGIN` (relative) of an offset level are
recomputed from the tables, so every offset :math:`\underline j`, and the P[correct] bound
summed from them, is the tables'. The marginal bound, continuous in :math:`\bar L`, moves by
the difference of the sums and the tables (about 1e-14), far inside the slack of
:math:`\bar L`.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from dprisk.inference.privacy.budget import ABOVE
from dprisk.inference.studies.setup import (
    DEFAULT_TAIL_MASS,
    TIE_ATOL,
    branch_conditionals,
    grid_for_truth,
    posterior_table,
    row_chunks,
)
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.numerics import dg_log_normalizer
from dprisk.models.scenario import Scenario

__all__ = ["MAX_UNRESOLVED", "ROUNDING_SLACK", "BoundStalled", "certified_crossing",
           "log_odds_slope", "marginal_upper_bound", "p_correct_upper_bound"]

#: Most unresolved intervals (of relative width 1e-9) before the search gives up.
MAX_UNRESOLVED = 200
#: Relative widening of the log-odds bound (rounding, window share below 1e-12).
ROUNDING_SLACK = 1e-9
#: Cell statistics kept by a search's memo (:func:`p_correct_upper_bound`'s ``memo``).
MEMO_SIZE = 8


class BoundStalled(RuntimeError):
    """The bound stopped converging on too many intervals; ``rho`` is where it first did."""

    def __init__(self, rho: float):
        super().__init__(f"the interval bound stopped converging from rho = {rho!r}")
        self.rho = rho


def _cell_statistics(x2_star, y1_star, params: Scenario, shares):
    r"""Per cell: :math:`L_m` and :math:`E_b[s]`, shapes ``(n,)`` and ``(n, 2)``.

    :math:`s = f_2 (x_2^* - k_2)^2 + (f_1/d)(y_1^* - k_2 + m + b)^2 + f_1 b` with
    ``shares`` :math:`(f_1, f_2)` (module docstring, "Both levels").
    """
    block_share, group_share = shares
    log_odds = np.empty(x2_star.size)
    mean_s = np.zeros((x2_star.size, 2))
    for rows in row_chunks(x2_star.size, params):
        table = posterior_table(params.known, x2_star[rows], y1_star[rows], params)
        mass = table.log_branch_mass
        with np.errstate(invalid="ignore"):
            log_odds[rows] = mass[:, 1] - mass[:, 0]
        k2 = table.k2_start[:, None] + np.arange(table.log_joint.shape[-1])
        s = group_share * (x2_star[rows, None] - k2).astype(float)[:, None, :] ** 2
        if block_share:
            branch = np.arange(2)[None, :, None]
            y1_noise = (y1_star[rows, None, None] - k2[:, None, :] + params.known + branch)
            s = s + block_share * (y1_noise.astype(float) ** 2 / params.d + branch)
        mean_s[rows] = (branch_conditionals(table) * s).sum(-1)
    return log_odds, mean_s


def log_odds_slope(x2_star, y1_star, params: Scenario, shares=(0.0, 1.0)) -> np.ndarray:
    r""":math:`dL_m/d\rho = E_0[s] - E_1[s]` per cell (module docstring, "Both levels").

    ``x2_star``, ``y1_star``: flat int arrays of releases; ``shares`` :math:`(f_1, f_2)`.
    """
    _, mean_s = _cell_statistics(np.asarray(x2_star), np.asarray(y1_star), params, shares)
    return mean_s[:, 0] - mean_s[:, 1]


def _max_of_min_lines(start_a, slope_a, start_b, slope_b, width):
    r""":math:`\max_{0 \le t \le w} \min(A + t\alpha, B + (w - t)\beta)` (elementwise)."""
    at_a = np.minimum(start_a, start_b + width * slope_b)
    at_b = np.minimum(start_a + width * slope_a, start_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        meet = (start_b - start_a + width * slope_b) / (slope_a + slope_b)
    inside = np.isfinite(meet) & (meet > 0.0) & (meet < width)
    at_meet = np.where(inside, start_a + np.where(inside, meet, 0.0) * slope_a, -np.inf)
    return np.maximum(np.maximum(at_a, at_b), at_meet)


@functools.lru_cache(maxsize=256)
def _fourth_moment(rho: float) -> float:
    r""":math:`E_\rho[\eta^4]`, :math:`\eta \sim \mathrm{DG}(0, 1/(2\rho))` (to a 1e-30 tail)."""
    half = int(dg.support_halfwidth_kernel(np.asarray(rho, dtype=float), 1e-30))
    k = np.arange(-half, half + 1, dtype=float)
    return float((k ** 4 * np.exp(-rho * k ** 2 - dg_log_normalizer(rho))).sum())


def _memo_statistics(memo, cells, compute, params: Scenario):
    """``compute(params)`` (the per-cell statistics), looked up in ``memo`` (a dict, or None).

    A search halves its intervals: the two halves of ``[a, b]`` share the middle, the left
    half shares ``a``, and deep in the halving the grids built at nearby ends are the same
    cells. The statistics are a function of the scenario and the cells only, so a lookup
    returns the very arrays a new computation would. The memo keeps the :data:`MEMO_SIZE`
    most recently used entries (the search is depth-first).
    """
    if memo is None:
        return compute(params)
    key = (params, cells)
    found = memo.pop(key, None)  # least recently used first: a hit moves to the end
    if found is None:
        if len(memo) >= MEMO_SIZE:
            del memo[next(iter(memo))]
        found = compute(params)
    memo[key] = found
    return found


def _log_odds_top(odds_a, mean_a, odds_b, mean_b, width: float) -> np.ndarray:
    r""":math:`\bar L` per cell from the statistics at both ends (module docstring)."""
    finite = np.isfinite(odds_a) & np.isfinite(odds_b)
    with np.errstate(invalid="ignore"):
        top = _max_of_min_lines(np.where(finite, odds_a, 0.0), mean_a[:, 0] - mean_b[:, 1],
                                np.where(finite, odds_b, 0.0), mean_a[:, 1] - mean_b[:, 0],
                                width)
    top = top + ROUNDING_SLACK * (1.0 + np.abs(top))
    return np.where(finite, top, np.maximum(odds_a, odds_b))


def _near_offset_levels(top: np.ndarray, rho1_ends) -> np.ndarray:
    r"""Cells whose :math:`\bar L` is within LEVEL_MARGIN (relative) of an edge at either end.

    The edges of :func:`_smallest_offset`'s offsets: :math:`\bar L + 2\rho_1 j = -` TIE_ATOL.
    """
    from dprisk.inference.privacy.budget_sums import LEVEL_MARGIN

    finite = np.isfinite(top)
    shifted = np.where(finite, top, 0.0) + TIE_ATOL
    near = np.zeros(top.shape, dtype=bool)
    for rho1 in set(rho1_ends):
        distance = np.abs(shifted + 2.0 * rho1 * np.rint(-shifted / (2.0 * rho1)))
        near |= distance < LEVEL_MARGIN * (1.0 + np.abs(shifted))
    return np.flatnonzero(finite & near)


def _grid_cells(grid, index=None):
    """``(x2*, y1*)`` of the grid's cells (flat, ``x2*``-major), or of the cells ``index``."""
    if index is None:
        return tuple(a.ravel() for a in np.meshgrid(grid.x2_star, grid.y1_star, indexing="ij"))
    rows, columns = np.divmod(index, grid.y1_star.size)
    return grid.x2_star[rows], grid.y1_star[columns]


def _log_odds_bound(lower: float, upper: float, x2: int, params_lower: Scenario,
                    params_upper: Scenario, tail_mass: float, shares, memo=None):
    r"""The grids built at both ends and :math:`\bar L` per cell (flat, ``x2*``-major).

    The statistics of both ends come from the grid sums of
    :func:`dprisk.inference.privacy.budget_sums.grid_statistics` when they serve the prior;
    the cells whose :math:`\bar L` then lies within
    :data:`dprisk.inference.privacy.budget_sums.LEVEL_MARGIN` of an offset level are
    recomputed from the tables (:func:`_cell_statistics`), so every offset is the tables'.
    """
    from dprisk.inference.privacy.budget_sums import GridStore, grid_statistics

    known = params_lower.known
    grid_of = memo.grid if isinstance(memo, GridStore) else grid_for_truth
    grids = [grid_of(x2, x2 - known - 1, params, tail_mass)
             for params in (params_lower, params_upper)]
    cells = (grids[0].x2_star.tobytes(), grids[0].y1_star.tobytes(), tuple(shares))

    def compute(params: Scenario):
        stats = (memo.statistics(params, grids[0].x2_star, grids[0].y1_star, shares)
                 if isinstance(memo, GridStore)
                 else grid_statistics(grids[0].x2_star, grids[0].y1_star, params, shares))
        return (_cell_statistics(*_grid_cells(grids[0]), params, shares) if stats is None
                else stats)

    plain = memo.tables if isinstance(memo, GridStore) else memo
    odds_a, mean_a = _memo_statistics(plain, cells, compute, params_lower)
    odds_b, mean_b = _memo_statistics(plain, cells, compute, params_upper)
    top = _log_odds_top(odds_a, mean_a, odds_b, mean_b, upper - lower)
    index = _near_offset_levels(top, (float(params_lower.rho1), float(params_upper.rho1)))
    if index.size:  # (the tables' statistics already when the sums do not serve the prior)
        releases = _grid_cells(grids[0], index)
        ends = [array for params in (params_lower, params_upper)
                for array in _cell_statistics(*releases, params, shares)]
        top[index] = _log_odds_top(*ends, upper - lower)
    return grids, top


def _end_value(cell_value: np.ndarray, grid_lower, grid) -> float:
    r""":math:`\sum P[x_2^*] P[y_1^*] \bar G + \nu` at one end, on that end's (sub)grid.

    ``cell_value`` is flat over the lower end's grid (``x2*``-major); the upper end's grid is
    a sub-grid of it (the same truth, narrower noise).
    """
    table = cell_value.reshape(grid_lower.x2_star.size, -1)
    row = int(grid.x2_star[0] - grid_lower.x2_star[0])
    column = int(grid.y1_star[0] - grid_lower.y1_star[0])
    table = table[row:row + grid.x2_star.size, column:column + grid.y1_star.size]
    return float(grid.x2_pmf @ table @ grid.y1_pmf) + grid.neglected_mass


def _curvature_bound(cell_lower, cell_upper, grids, lower: float, upper: float,
                     params_lower: Scenario, shares) -> float:
    r""":math:`\max(h(a) + \nu_a, h(b) + \nu_b) + (b - a)^2 M/8` for per-cell values in [0, 1].

    ``cell_lower`` and ``cell_upper``: the cell values with the noise weights of each end
    (the same function of the noises, module docstring); :math:`M = f_2^2
    E_{\rho_2(a)}[\eta^4] + (d + 1) f_1^2 E_{\rho_1(a)}[\eta^4]`.
    """
    block_share, group_share = shares
    ends = max(_end_value(cell_lower, grids[0], grids[0]),
               _end_value(cell_upper, grids[0], grids[1]))
    curvature = group_share ** 2 * _fourth_moment(float(params_lower.rho2))
    if block_share:
        curvature += ((params_lower.d + 1) * block_share ** 2
                      * _fourth_moment(float(params_lower.rho1)))
    return ends + (upper - lower) ** 2 * curvature / 8.0


def _smallest_offset(top: np.ndarray, rho1: float) -> np.ndarray:
    r""":math:`\underline j`: the smallest ``j`` with :math:`\bar L + 2\rho_1 j >` -TIE_ATOL."""
    safe = np.where(np.isfinite(top), top, 0.0)
    offset = np.floor((-TIE_ATOL - safe) / (2.0 * rho1)) + 1.0
    # float guard: offset - 1 must not pass the (conservative) level
    offset = np.where(safe + 2.0 * rho1 * (offset - 1.0) > -TIE_ATOL, offset - 1.0, offset)
    return np.where(np.isfinite(top), offset, np.where(top > 0, -np.inf, np.inf))


def _upper_tail(threshold: np.ndarray, x1: int, rho1: float) -> np.ndarray:
    """``P[X1* >= t | x1]`` at precision ``rho1``: 1 at ``t = -inf``, 0 at ``inf``.

    :func:`dprisk.inference.studies.p_correct.upper_tail` (tabulated per ``(x1, rho1)``).
    """
    from dprisk.inference.studies.p_correct import upper_tail

    return upper_tail(threshold, x1, rho1)


def p_correct_upper_bound(lower: float, upper: float, *, x2: int, params_lower: Scenario,
                          params_upper: Scenario, tail_mass: float = DEFAULT_TAIL_MASS,
                          shares=(0.0, 1.0), memo=None) -> float:
    r"""An upper bound of the two-level P[correct] over an interval :math:`[a, b]` (kernel).

    Parameters
    ----------
    lower, upper : float
        :math:`a < b`, the interval of the searched rho: rho2 (rho1 fixed) or the global rho.
    x2 : int
        True block-group count (``x1 = known + 1``).
    params_lower, params_upper : Scenario
        The validated scenarios at ``lower`` and ``upper`` (all else equal).
    tail_mass : float
    shares : (float, float)
        :math:`(f_1, f_2) = (d\rho_1/d\rho, d\rho_2/d\rho)`: ``(0, 1)`` for rho2 with rho1
        fixed, the strategy's shares for the global rho (module docstring, "Both levels").
    memo : GridStore or dict, optional
        A search's store of grid sums and grids
        (:class:`dprisk.inference.privacy.budget_sums.GridStore`, shared with its measure) or
        a plain memo of the per-cell statistics (:func:`_memo_statistics`): the same bound,
        computed once per scenario and grid.

    Returns
    -------
    float
        :math:`\max(h(a) + \nu_a, h(b) + \nu_b) + (b - a)^2 M/8` (module docstring), at most 1.
    """
    known = params_lower.known
    grids, top = _log_odds_bound(lower, upper, x2, params_lower, params_upper, tail_mass,
                                 shares, memo)
    rho1_ends = (float(params_lower.rho1), float(params_upper.rho1))
    if rho1_ends[0] == rho1_ends[1]:  # rho1 fixed: both ends' offsets and tails are the same
        threshold = known + _smallest_offset(top, rho1_ends[0])
        cells = [_upper_tail(threshold, known + 1, rho1_ends[0])] * 2
    else:
        threshold = known + np.minimum(*(_smallest_offset(top, rho1) for rho1 in rho1_ends))
        cells = [_upper_tail(threshold, known + 1, rho1) for rho1 in rho1_ends]
    return min(_curvature_bound(*cells, grids, lower, upper, params_lower, shares), 1.0)


def marginal_upper_bound(lower: float, upper: float, *, x2: int, params_lower: Scenario,
                         params_upper: Scenario, tail_mass: float = DEFAULT_TAIL_MASS,
                         shares=(0.0, 1.0), memo=None) -> float:
    r"""An upper bound of the two-level marginal posterior over an interval :math:`[a, b]`.

    As :func:`p_correct_upper_bound`, with the cell's value the posterior of the truth
    averaged over ``x1*`` (:func:`dprisk.inference.privacy.two_level_marginal.posterior_over_x1`),
    increasing in :math:`L_m`, at :math:`\bar L` (and, when rho1 moves, at the rho1 end
    that makes each ``x1*`` term largest); plus the ``x1*`` mass left out of that average.
    Divide by p for the marginal risk.
    """
    from dprisk.inference.privacy.two_level_marginal import posteriors_over_x1

    grids, top = _log_odds_bound(lower, upper, x2, params_lower, params_upper, tail_mass,
                                 shares, memo)
    rho1_ends = (float(params_lower.rho1), float(params_upper.rho1))
    # the weights at each end (once when rho1 is fixed), the posteriors evaluated once
    weight_rho1s = rho1_ends[:1] if rho1_ends[0] == rho1_ends[1] else rho1_ends
    cells = [mean + outside for mean, outside in posteriors_over_x1(
        top, params_lower, tail_mass, weight_rho1s, odds_rho1=rho1_ends)]
    if len(cells) == 1:  # rho1 fixed: both ends have the same values
        cells *= 2
    return min(_curvature_bound(*cells, grids, lower, upper, params_lower, shares), 1.0)


def certified_crossing(value, bound, target: float, low: float, high: float,
                       per_decade: int, bound_first: bool = False
                       ) -> tuple[float, float, float, float] | None:
    r"""The first crossing of ``target`` on ``[low, high]``, no crossing between points missed.

    ``value(rho)`` is the measure, ``bound(a, b)`` an upper bound of it on ``[a, b]``. The
    scan's intervals (``per_decade`` log-spaced points per decade) are taken in order; an
    interval whose right end meets the target and whose bound does too is certified, any
    other is halved (geometrically, left half first) down to a relative width
    :data:`ABOVE`. An interval that small whose right end fails locates the crossing; one
    whose right end meets the target but whose bound does not is *unresolved* (the bound has
    stopped converging: many cells whose posteriors reach 1/2 at the same rho, or the
    measure within the bound's slack of ``T``) and the search goes on past it. With
    ``bound_first``, when ``value(b)`` is not known yet the bound is asked first: a bound at
    most ``T`` certifies the interval whatever ``value(b)`` is (it is at most the bound), so
    the answer is the same, and the two-level bound's grid sums then serve ``value(b)``
    (:class:`dprisk.inference.privacy.budget_sums.GridStore`).

    Returns
    -------
    tuple or None
        ``(rho, value_at_rho, value_above, certified_to)``: ``rho`` the left end of the
        located interval, ``value_above`` at its right end (above ``T``), ``certified_to`` the
        left end of the first unresolved interval (``rho`` if none); None if no crossing.

    Raises
    ------
    ValueError
        When the target already fails at ``low``.
    BoundStalled
        When more than :data:`MAX_UNRESOLVED` intervals stay unresolved (its ``rho``: the
        first one's left end).
    """
    cache: dict[float, float] = {}
    unresolved: list[float] = []

    def at(rho: float) -> float:
        if rho not in cache:
            cache[rho] = value(rho)
        return cache[rho]

    if at(low) > target:
        raise ValueError(f"target must be at least the measure at the smallest rho scanned "
                         f"({low:g}), which is {at(low)!r} (allowed range: at least "
                         f"{at(low)!r}); got {target!r}")

    def search(a: float, b: float):
        # invariant: the measure is at most the target on [low, a] but for `unresolved`
        if b in cache or not bound_first:
            failing = at(b) > target
            if not failing and bound(a, b) <= target:
                return None
        else:  # the bound first: it is at least value(b), and its sums serve value(b) too
            if bound(a, b) <= target:
                return None
            failing = at(b) > target
        if b <= a * (1.0 + ABOVE):
            if failing:
                return a, at(a), at(b)
            unresolved.append(a)
            if len(unresolved) > MAX_UNRESOLVED:
                raise BoundStalled(unresolved[0])
            return None
        middle = math.sqrt(a * b)
        return search(a, middle) or search(middle, b)

    n_points = round(per_decade * math.log10(high / low)) + 1
    grid = [float(point) for point in np.geomspace(low, high, n_points)]
    for a, b in itertools.pairwise(grid):
        found = search(a, b)
        if found is not None:
            return (*found, unresolved[0] if unresolved else found[0])
    return None
