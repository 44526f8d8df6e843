r"""The rho that meets a risk target with the block group, and for the whole Census allocation.

Two questions beyond the single level (:mod:`dprisk.inference.privacy.budget`):

* **Two levels** (:func:`rho2_for_target`): the block's rho1 is fixed, the block group of
  ``d`` other blocks is released too, the truth is ``x2`` (and ``x1 = m + 1``); which
  block-group rho2 keeps the two-level measure at most ``T`` for every prior? The measures:
  P[correct 0-1-loss decision] (:func:`dprisk.inference.studies.p_correct.p_correct_two_level`,
  the
  exact two-level posterior deciding) and the two-level marginal posterior and risk
  (:func:`dprisk.inference.privacy.two_level_marginal.marginal_two_level`). Answer
  :math:`\rho_2^* = \min_j \inf\{\rho_2 : M_j(\rho_2) > T\}`.
* **The Census allocation** (:func:`census_rho_for_target`): one global rho with the 2020
  persons strategy's fractions fixed (:mod:`dprisk.models.census.strategy`): the block's
  GVHR (``detailed``) query gets :math:`\rho_1 = f_1 \rho`, the block group's
  :math:`\rho_2 = f_2 \rho`. Without a block group (``x2`` not given) the single-level answer
  is exact and only rescaled, :math:`\rho^* = \rho_1^* / f_1`, for any measure; with
  ``x2`` and ``d`` the same three two-level measures are solved in the global rho.

**Locating the two-level first crossing.** Every search starts from a scan of
:data:`GRID_PER_DECADE` log-spaced points per decade over :data:`RHO2_RANGE` or
:data:`CENSUS_RHO_RANGE` (the target must hold at its first point).

* Every measure is certified (:mod:`dprisk.inference.privacy.budget_certified`), with rho1 fixed
  (:func:`rho2_for_target`, the searched rho is rho2) and for the Census allocation (rho1
  and rho2 move together, :math:`\rho_1 = f_1\rho`, :math:`\rho_2 = f_2\rho`): each scan
  interval is either proven to keep the measure at most ``T`` by an upper bound of the
  measure over the whole interval, or halved; so no crossing between scan points is missed.
  P[correct] is located to a relative 1e-9 at a point where it is above ``T``; the marginal
  posterior and risk (continuous, but *not* monotone in rho2 in general: for a small block
  group, x2 = 3, they first fall) are refined by Brent's method on the located interval to
  a relative 1e-15. ``certified_to`` is where the proof stops (``rho``, or a little below it
  when the bound stops converging: at points where many posteriors reach 1/2 at once, or
  within the bound's slack of the target; from there on the measure is checked at points
  and the bound on all but 1e-9-wide intervals). After too many such intervals
  (:class:`dprisk.inference.privacy.budget_certified.BoundStalled`) the search falls back beyond
  ``certified_to`` to the scan with bisection (:func:`scan_first_crossing`, P[correct]) or
  Brent's method (:func:`root_first_crossing`, the marginals), where a crossing that opens
  and closes between two scan points could be missed.
* The two-level tail :math:`P[R' > r^*(p)]` is the two-level P[correct] at a shifted prior
  (:func:`tail_search_prior`), so it is located and certified the same way.

The certificate is the measure at :math:`\rho^*` (at most ``T``) and just above it (above
``T``): at :math:`\rho^*(1 + 10^{-9})` for the marginal measures, at the failing end of the
final bracket (within :math:`\rho^*(1 + 10^{-9})`) for P[correct].

**Cost.** Every evaluation of a search (the measure at a rho, the bound of an interval) needs
the per-release posterior sums on the release grid at that rho. For the priors constant on
each branch's support (the built-in ones) they are matrix products over the whole grid
(:mod:`dprisk.inference.privacy.budget_sums`), each computed once per rho and shared by the
bounds and the measure (:class:`dprisk.inference.privacy.budget_sums.GridStore`); releases
whose decision is within 1e-10 of changing are recomputed by the exact tables, so the
answer is the tables' answer, bit for bit. Other priors (model files) use the tables.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dprisk.inference.privacy.budget import (
    ABOVE,
    DGBudget,
    certified,
    check_profile,
    check_target,
    max_ratio_profile,
    rho_for_target,
)
from dprisk.models.roots import brent_root

__all__ = ["CENSUS_RHO_RANGE", "GRID_PER_DECADE", "RHO2_RANGE", "TWO_LEVEL_MEASURES",
           "census_fractions", "census_rho_for_target", "check_search_size", "rho2_for_target",
           "root_first_crossing", "scan_bracket", "scan_first_crossing"]

#: Grid of the two-level scan: points per decade of rho.
GRID_PER_DECADE = 25
#: Range of the rho2 scan (rho1 fixed).
RHO2_RANGE = (1e-3, 1e3)
#: Range of the global-rho scan of the Census allocation (block rho1 = 0.039 x global: below
#: 0.1 the exact two-level sum needs very wide release grids).
CENSUS_RHO_RANGE = (0.1, 1e3)


def census_fractions() -> tuple[Fraction, Fraction]:
    r"""The shares :math:`(f_1, f_2)` of the global rho of the block and block-group GVHR queries.

    Each is the level's geolevel share x its ``detailed`` query fraction in the 2020 persons
    strategy.
    """
    from dprisk.models.census.strategy import strategy_queries

    shares = {query.level: query.rho_exact for query in strategy_queries(Fraction(1))
              if query.query == "detailed"}
    return shares["block"], shares["block-group"]


def scan_bracket(value, target: float, low: float, high: float) -> tuple[float, float] | None:
    """``(lower, upper)``: the last grid point meeting ``target`` and the first failing.

    The grid has :data:`GRID_PER_DECADE` log-spaced points per decade over ``[low, high]``.
    Returns None if no grid point fails; raises ValueError when the target fails at ``low``.
    """
    n_points = round(GRID_PER_DECADE * math.log10(high / low)) + 1
    grid = np.geomspace(low, high, n_points)
    first = value(float(grid[0]))
    if first > target:
        raise ValueError(f"target must be at least the measure at the smallest rho scanned "
                         f"({grid[0]:g}), which is {first!r} (allowed range: at least "
                         f"{first!r}); got {target!r}")
    lower = float(grid[0])
    for point in grid[1:]:
        if value(float(point)) > target:
            return lower, float(point)
        lower = float(point)
    return None


def scan_first_crossing(value, target: float, low: float,
                        high: float) -> tuple[float, float, float] | None:
    """First grid point where ``value`` exceeds ``target``, refined by bisection.

    Returns ``(rho, value_at_rho, value_above)`` or None if no grid point fails. Raises
    ValueError when the target already fails at ``low``.
    """
    bracket = scan_bracket(value, target, low, high)
    if bracket is None:
        return None
    lower, upper = bracket
    while upper > lower * (1.0 + ABOVE):
        middle = math.sqrt(lower * upper)
        if value(middle) > target:
            upper = middle
        else:
            lower = middle
    return lower, value(lower), value(upper)


def _two_level_value(measure: str, base, x2: int, rho1_of, rho2_of, p: float, store=None):
    """``rho -> M(rho)``: the two-level ``measure`` at ``base.at(rhos=(rho1_of(rho), ...))``.

    ``base`` is the scenario validated once by the entry point; every evaluation calls the
    kernel on a trusted copy at the searched rho (inside the validated range) and prior
    ``p`` (a validated prior, or the tail's shifted prior in (0, 1)). P[correct] is
    :func:`dprisk.inference.privacy.budget_sums.grid_p_correct` (through the search's
    ``store`` when given): the tables' thresholds, so the tables' value to the last bit.
    """
    from dprisk.inference.studies.setup import DEFAULT_TAIL_MASS

    if measure == "p-correct":
        from dprisk.inference.privacy.budget_sums import grid_p_correct

        def value(rho: float) -> float:
            params = base.at(rhos=(rho1_of(rho), rho2_of(rho)), p=p)
            return grid_p_correct(params, x2=x2, tail_mass=DEFAULT_TAIL_MASS, store=store)

        return value
    from dprisk.inference.privacy.two_level_marginal import marginal_kernel

    field = measure.replace("-", "_")

    def marginal(rho: float) -> float:
        params = base.at(rhos=(rho1_of(rho), rho2_of(rho)), p=p)
        return getattr(marginal_kernel(params, x2=x2, tail_mass=DEFAULT_TAIL_MASS), field)

    return marginal


def root_first_crossing(value, target: float, low: float,
                        high: float) -> tuple[float, float, float] | None:
    r"""First crossing of a continuous ``value`` located on the scan, then refined by Brent.

    The scan of :func:`scan_first_crossing` brackets it (last grid point meeting ``target``,
    first failing); Brent's method finds the root of ``value - target`` there to a relative
    1e-15, and :func:`dprisk.inference.privacy.budget.certified` moves it down until it meets the
    target. Returns ``(rho, value_at_rho, value_above)`` (``value_above`` at
    :math:`\rho(1 + 10^{-9})`) or None if no grid point fails.
    """
    bracket = scan_bracket(value, target, low, high)
    if bracket is None:
        return None
    lower, upper = bracket
    rho = float(brent_root(lambda r: value(r) - target, lower, upper, xtol=1e-300, rtol=1e-15))
    rho = certified(value, rho, target)
    return rho, value(rho), value(rho * (1.0 + ABOVE))


#: The measures with a two-level form.
TWO_LEVEL_MEASURES = ("marginal-risk", "marginal-posterior", "p-correct", "tail")


def tail_search_prior(p: float, max_ratio: float, max_posterior) -> float | None:
    r"""The prior :math:`p' = \operatorname{expit}(-\delta)` at which the tail is a P[correct].

    The two-level posterior log-odds of ``x1 = m + 1`` is :math:`\operatorname{logit}(p) +
    L_0` with :math:`L_0` free of p (:mod:`dprisk.inference.kernels.table_kernels`), and
    :math:`R' > r^*` is :math:`\operatorname{logit}(p) + L_0 > \operatorname{logit}(r^* p)`,
    i.e. :math:`L_0 - \delta > 0` with :math:`\delta = \operatorname{logit}(r^* p) -
    \operatorname{logit}(p)` (:func:`dprisk.inference.privacy.budget_jumps.tail_delta`): the event
    that the 0-1-loss decision at prior :math:`p'` is ``m + 1``. So the two-level tail at
    ``p`` is the two-level P[correct] at :math:`p'` (as at the single level,
    :func:`dprisk.inference.privacy.budget.tail_probability`). None when :math:`r^* p \ge 1`
    (the tail is 0).
    """
    from dprisk.inference.privacy.budget_jumps import tail_delta, tail_prior

    delta = tail_delta(p, max_ratio_profile(p, max_ratio, max_posterior))
    if not math.isfinite(delta):
        return None
    return tail_prior(delta)


def _two_level_target(measure: str, target, priors) -> float:
    if measure not in TWO_LEVEL_MEASURES:
        raise ValueError(f"measure must be one of {', '.join(TWO_LEVEL_MEASURES)} for the "
                         f"two-level budget (x2, d given), got {measure!r}")
    if measure not in ("p-correct", "tail"):
        return check_target(measure, target, priors)
    try:
        target = float(target)
    except (TypeError, ValueError):
        target = math.nan
    name = "tail tolerance" if measure == "tail" else "target"
    if not 0.0 < target < 1.0:
        raise ValueError(f"{name} must be a probability with 0 < T < 1 for the two-level "
                         f"{measure}, got {target!r}")
    return target


def _certified(measure: str, value, target: float, low: float, high: float, *, rho1_of,
               rho2_of, shares, x2, base, p, store=None):
    r"""The first crossing by :func:`certified_crossing` (rho1 and rho2 affine in rho).

    ``shares``: :math:`(d\rho_1/d\rho, d\rho_2/d\rho)`, ``(0, 1)`` for rho2 with rho1
    fixed, the strategy's shares for the global Census rho.

    P[correct] is located to a relative 1e-9; for the continuous marginal measures the
    located interval is refined by Brent's method to the root. Returns ``(rho, value_at_rho,
    value_above, certified_to)`` or None.
    """
    from dprisk.inference.privacy import budget_certified as bounds
    from dprisk.inference.privacy.budget_sums import GridStore

    def scenario(rho: float):
        return base.at(rhos=(rho1_of(rho), rho2_of(rho)), p=p)

    upper_bound = (bounds.p_correct_upper_bound if measure == "p-correct"
                   else bounds.marginal_upper_bound)
    scale = p if measure == "marginal-risk" else 1.0  # the marginal risk is the posterior / p

    # the per-cell statistics shared by the bounds of neighbouring intervals (and the measure)
    memo = GridStore() if store is None else store

    def bound(lower: float, upper: float) -> float:
        return upper_bound(lower, upper, x2=x2, params_lower=scenario(lower),
                           params_upper=scenario(upper), shares=shares, memo=memo) / scale

    try:
        # the bound first where its grid sums serve the measure (P[correct]); the marginal
        # measures are summed by the tables, whose kernel (numpy or compiled, chosen by the
        # numpy work done so far in the process) then sees the same calls as before
        found = bounds.certified_crossing(value, bound, target, low, high, GRID_PER_DECADE,
                                          bound_first=measure == "p-correct")
    except bounds.BoundStalled as stalled:  # certified up to stalled.rho; beyond, the scan
        locate = scan_first_crossing if measure == "p-correct" else root_first_crossing
        found = locate(value, target, stalled.rho, high)
        return None if found is None else (*found, stalled.rho)
    if found is None or measure == "p-correct":
        return found
    lower, _, _, certified_to = found
    upper = lower * (1.0 + ABOVE)
    if value(upper) <= target:  # the located interval ends before upper: keep it as is
        return found
    rho = float(brent_root(lambda r: value(r) - target, lower, upper, xtol=1e-300, rtol=1e-15))
    rho = certified(value, rho, target)
    return rho, value(rho), value(rho * (1.0 + ABOVE)), min(certified_to, rho)


def check_search_size(base, rho1_of, rho2_of, scan: tuple[float, float], searches: int, *,
                      names: str) -> None:
    r"""Refuse up front a two-level search above the memory or the work limit (tiny rho1).

    The search scans :data:`GRID_PER_DECADE` log-spaced rho per decade over ``scan``, for each
    of ``searches`` priors; each evaluation sums the release grid
    (:func:`dprisk.inference.studies.setup.grid_memory`) of the validated scenario ``base``
    at ``(rho1_of(rho), rho2_of(rho))``. Memory: the largest
    grid, at the scan's first point (both noises widest). Work: the grid cells summed over
    the scan's points and the priors, times
    :data:`dprisk.runtime.work_limit.EXACT_GRID_CELL_STEPS` (an upper bound per cell: the
    measured cost is 1.4-4 us per cell for P[correct], 10-15 us for the marginals, against
    the weight's 45 us; the certified search evaluates about once per scan point, more
    where it halves an interval). Checked before any grid is built or loop entered;
    ``names`` are the parameters that set the grid's size, named first in the refusal (the
    work's also names ``p`` when there are several priors).

    Raises
    ------
    dprisk.runtime.memory_limit.MemoryLimitError, dprisk.runtime.work_limit.WorkLimitError
        ``ValueError``\ s naming ``names``.
    """
    from dprisk.inference.studies.setup import DEFAULT_TAIL_MASS, grid_memory
    from dprisk.runtime.memory_limit import check_memory
    from dprisk.runtime.work_limit import EXACT_GRID_CELL_STEPS, check_work

    def grid_bytes(rho: float) -> float:
        return grid_memory(base.at(rhos=(rho1_of(rho), rho2_of(rho))), DEFAULT_TAIL_MASS)

    low, high = scan
    check_memory(grid_bytes(low), parameter=names,
                 what=f"the release grid (x2*, y1*) at the search's first rho ({low:g})")
    points = np.geomspace(low, high, round(GRID_PER_DECADE * math.log10(high / low)) + 1)
    cells = sum(grid_bytes(float(rho)) for rho in points) / 32.0
    check_work(searches * cells * EXACT_GRID_CELL_STEPS,
               parameter=names + (", p" if searches > 1 else ""),  # one search per prior
               what=f"the two-level search's scan of {points.size} rho in [{low:g}, {high:g}] "
               f"x {searches} prior(s), {cells:.3g} releases (x2*, y1*) per prior")


def _two_level(measure, target, p, known, x2, d, prior, rho1_of, rho2_of, scan,
               shares, max_ratio=None, max_posterior=None) -> DGBudget:
    from dprisk.inference.privacy.budget_sums import GridStore
    from dprisk.inference.studies.setup import validated_truth
    from dprisk.models.checks import check_probability
    from dprisk.models.scenario import Scenario

    if measure == "tail":
        check_profile(max_ratio, max_posterior)
    elif max_ratio is not None or max_posterior is not None:
        raise ValueError(f"max_ratio and max_posterior apply to the tail measure only, not "
                         f"to {measure}")

    priors = [float(prior_p) for prior_p in np.atleast_1d(np.asarray(p, dtype=float))]
    if not priors:
        raise ValueError("p must be a non-empty list of priors with 0 < p < 1, got an empty set")
    # validate every input once: the scenario at the scan's low end with the first prior (the
    # searched rho stays inside the scan, whose ends are in range), the other priors, the truth
    base = Scenario.two_level(rho1=rho1_of(scan[0]), rho2=rho2_of(scan[0]), d=d, p=priors[0],
                              known=known, prior=prior)
    if len(priors) > 1:
        check_probability(priors[1:], "p")
    target = _two_level_target(measure, target, priors)
    x2 = validated_truth(base, x2=x2)[1]
    best = None
    # the tail at p is the P[correct] at the prior tail_search_prior(p) (None: it is 0)
    search = ({prior_p: tail_search_prior(prior_p, max_ratio, max_posterior)
               for prior_p in priors} if measure == "tail" else {p: p for p in priors})
    if all(value is None for value in search.values()):
        raise ValueError("max_ratio times p is at least 1 at every prior: no "
                         "release exceeds the ratio bound, so any rho meets the tail "
                         "tolerance (allowed range: max_ratio * p < 1 for some p)")
    kind = "p-correct" if measure == "tail" else measure
    check_search_size(base, rho1_of, rho2_of, scan,
                      sum(value is not None for value in search.values()),
                      names="d" if shares[0] else "rho1, d")
    for prior_p in (prior_p for prior_p in priors if search[prior_p] is not None):
        store = GridStore()  # the grid sums, shared by the bounds and the measure
        value = _two_level_value(kind, base, x2, rho1_of, rho2_of, search[prior_p], store)
        # a later prior binds only if it crosses before the best so far: search up to there
        reach = (scan[0], scan[1] if best is None else min(scan[1], best[0][0] * (1 + ABOVE)))
        found = _certified(kind, value, target, *reach, rho1_of=rho1_of, rho2_of=rho2_of,
                           shares=shares, x2=x2, base=base, p=search[prior_p], store=store)
        if found is not None and (best is None or found[0] < best[0][0]):
            best = (found, prior_p)
    if best is None:
        raise ValueError(f"target {target!r} is never exceeded by the two-level {measure} for "
                         f"rho in [{scan[0]:g}, {scan[1]:g}]: any rho in that range meets it")
    found, prior_p = best
    return DGBudget(*found[:1], measure, target, prior_p, *found[1:3],
                    certified_to=found[3] if len(found) > 3 else None)


def rho2_for_target(target, *, rho1, x2, d, p=(0.5,), known=0, prior="improper",
                    measure="p-correct", max_ratio=None, max_posterior=None) -> DGBudget:
    r"""The largest block-group rho2 keeping the two-level ``measure`` at most ``target``.

    .. math:: \rho_2^* = \min_j \inf\{\rho_2 : M(\rho_1, \rho_2; d, x_2, p_j) > T\},
              \quad x_1 = m + 1

    with M the two-level P[correct]
    (:func:`dprisk.inference.studies.p_correct.p_correct_two_level`)
    or the two-level marginal posterior or risk
    (:func:`dprisk.inference.privacy.two_level_marginal.marginal_two_level`), or the two-level
    tail :math:`P[R'(X_1^*, X_2^*, Y_1^*) > r^*(p)]` (R' the posterior-to-prior ratio of
    ``x1 = m + 1`` at the release; the P[correct] at :func:`tail_search_prior`).

    Parameters
    ----------
    target : float
        In (0, 1) for p-correct and tail (the tolerance); above 1 for marginal-risk; above
        every p and below 1 for marginal-posterior.
    rho1 : float (> 0)
        The block's rho (fixed).
    x2 : int (>= m + 1)
        True block-group count.
    d : int (>= 1)
        Other blocks in the block group.
    p : sequence of float (0 < p < 1), non-empty, default (0.5,)
        The priors at which the target must hold.
    known : int (>= 0), default 0
        ``m``, the adversary's known count of the others.
    prior : str or X2Prior
        The adversary's prior on the block-group count (``improper`` by default).
    measure : {"p-correct", "marginal-risk", "marginal-posterior", "tail"}
        The two-level risk measure ``M`` to bound (default ``p-correct``).
    max_ratio, max_posterior : float, optional
        The tail's profile :math:`r^*(p) = \max(\tilde r, \tilde a/p)` (tail only;
        ``max_ratio`` required there).

    Returns
    -------
    DGBudget
        ``rho`` is :math:`\rho_2^*` (searched in :data:`RHO2_RANGE`).

    Raises
    ------
    ValueError
        Naming the parameter (from :class:`dprisk.models.scenario.Scenario`), or the target
        outside the range the scan reaches.
    """
    return _two_level(measure, target, p, known, x2, d, prior, lambda rho: rho1,
                      lambda rho: rho, RHO2_RANGE, (0.0, 1.0), max_ratio, max_posterior)


def census_rho_for_target(measure: str, target, *, p=(0.5,), known=0, x2=None, d=None,
                          prior="improper", max_ratio=None, max_posterior=None) -> DGBudget:
    r"""The largest global rho of the 2020 allocation meeting the target (fractions fixed).

    .. math:: \rho_1 = f_1 \rho, \quad \rho_2 = f_2 \rho

    (:func:`census_fractions`). Without ``x2``: the single-level ``measure`` at the block,
    :math:`\rho^* = \rho_1^*/f_1`, the largest float whose exact :math:`f_1 \rho^*` is at
    most :math:`\rho_1^*` (the certificate is re-evaluated at :math:`f_1 \rho^*`). With
    ``x2`` and ``d``: the two-level ``measure`` (as in :func:`rho2_for_target`, the tail
    included) solved in the global rho, certified by the interval bound with rho1 and rho2
    moving together (``certified_to``; module docstring).

    Parameters
    ----------
    measure : {"marginal-risk", "marginal-posterior", "p-correct", "tail", "worst-case-accuracy"}
        The risk measure to bound; without ``worst-case-accuracy`` when ``x2`` is given.
    target : float
        ``T``, in the measure's range as in
        :func:`dprisk.inference.privacy.budget.rho_for_target` (block level) or
        :func:`rho2_for_target` (two levels).
    p : sequence of float (each 0 < p < 1), non-empty, default (0.5,)
        The priors at which the target must hold.
    known : int (>= 0), default 0
        ``m``, the adversary's known count of the others.
    x2 : int (>= known + 1), optional
        True block-group count; given with ``d``, the two-level measure is bounded.
    d : int (>= 1), optional
        Other blocks in the block group (with ``x2``).
    prior : str or X2Prior, default "improper"
        The adversary's prior on the block-group count (two levels only).
    max_ratio, max_posterior : float, optional
        The tail's profile :math:`r^*(p) = \max(\tilde r, \tilde a/p)` (tail only;
        ``max_ratio`` required there).

    Returns
    -------
    DGBudget
        ``rho`` is the global :math:`\rho^*`; the certificate's values are the measure at the
        block's (and block group's) share of it.
    """
    block, block_group = (float(share) for share in census_fractions())
    if x2 is None and d is None:
        try:
            block_answer = rho_for_target(measure, target, p=p, known=known,
                                          max_ratio=max_ratio, max_posterior=max_posterior)
        except ValueError as err:  # its rhos are the block's: say so, with the global's
            if " at rho = " not in str(err):
                raise
            raise ValueError(f"{err} (rho there is the block's share of the global rho, "
                             f"{block:.6g} of it: global rho = block rho / {block:.6g})") from None
        from dprisk.inference.privacy.budget import measure_function

        value = measure_function(measure, block_answer.binding_p, int(known),
                                 max_ratio=max_ratio, max_posterior=max_posterior)

        def scaled(rho: float) -> float:
            return value(block * rho)

        rho, exact_share = block_answer.rho / block, census_fractions()[0]
        while exact_share * Fraction(rho) > Fraction(block_answer.rho):  # f1 rho* <= rho1*
            rho = math.nextafter(rho, 0.0)
        rho = certified(scaled, rho, block_answer.target)
        return DGBudget(rho, measure, block_answer.target, block_answer.binding_p,
                        scaled(rho), scaled(rho * (1.0 + ABOVE)))
    if x2 is None or d is None:
        raise ValueError("x2 and d go together: give both for the two-level Census budget, "
                         "or neither for the block level")
    if measure not in TWO_LEVEL_MEASURES:
        raise ValueError(f"measure must be one of {', '.join(TWO_LEVEL_MEASURES)} for the "
                         f"two-level Census budget (x2, d given), got {measure!r}")
    return _two_level(measure, target, p, known, x2, d, prior, lambda rho: block * rho,
                      lambda rho: block_group * rho, CENSUS_RHO_RANGE,
                      (block, block_group), max_ratio, max_posterior)
