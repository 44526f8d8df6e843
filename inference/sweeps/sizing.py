"""The size of a sweep, checked before its plan is built: its grid points and its work.

:func:`check_points` counts the points and refuses more than the memory limit
(:mod:`dprisk.runtime.memory_limit`) holds; :func:`check_sweep_work` refuses a sweep whose work
(:mod:`dprisk.runtime.work_limit`) is above the budget.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np

from dprisk.inference.sweeps.plan import VARIABLES
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import EXACT_POINT_STEPS, check_work, mc_study_steps

__all__ = ["POINT_BYTES", "check_points", "check_sweep_work", "largest_count"]

#: Bytes held per grid point and data variable: the flat values, the Dataset and the file
#: written from it (three float64 copies); checked against the memory limit
#: (:mod:`dprisk.runtime.memory_limit`) before the sweep starts.
POINT_BYTES = 24


def check_points(**grids) -> tuple[int, str]:
    """Refuse, before the plan is built, more grid points than the memory limit allows.

    Returns the number of points and the names of the grids of more than one point.

    Each point holds :data:`POINT_BYTES` per data variable (at most ``len(VARIABLES) + 1``,
    with ``mcse``); the grids given as sequences (not strings) are the swept ones.
    """
    sizes = {}
    for name, values in grids.items():
        if not isinstance(values, (str, bytes)):
            try:
                sizes[name] = len(values)
            except TypeError:  # a scalar
                continue
    points = int(np.prod(list(sizes.values()), dtype=float)) if sizes else 1
    check_memory(POINT_BYTES * (len(VARIABLES) + 1) * points,
                 parameter=", ".join(sizes) or "the grid",
                 what=f"a sweep of {points} grid points")
    return points, ", ".join(name for name, size in sizes.items() if size > 1) or "the grid"


def largest_count(values) -> int:
    """The largest of a grid's whole numbers (1 when it holds anything else: refused later)."""
    found = np.atleast_1d(np.asarray(values, dtype=object)).ravel()
    if found.size and all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                          and v >= 1 for v in found):
        return int(max(found))
    return 1


def check_sweep_work(points: int, names: str, method: str,
                     mc_options: Mapping | None, d: int = 1) -> None:
    """Refuse a sweep whose work (:mod:`dprisk.runtime.work_limit`) is above the budget.

    ``points x EXACT_POINT_STEPS`` for an exact sweep; for ``method="mc"`` ``points x``
    :func:`~dprisk.runtime.work_limit.mc_study_steps` ``(datasets, draws, d)`` with ``d``
    the grid's largest d (the Monte Carlo defaults when not given). The refusal names
    ``names`` (the swept grids) and, Monte Carlo, ``datasets, draws`` (and ``d`` when it
    dominates): those alone for a single point, whose grid (``names`` is then ``"the
    grid"``) sets no work.
    """
    if method != "mc":
        check_work(points * EXACT_POINT_STEPS, parameter=names,
                   what=f"an exact sweep of {points} grid points")
        return
    options = dict(mc_options or {})
    datasets, draws = options.get("datasets", 10_000), options.get("draws", 1000)
    if not all(isinstance(v, numbers.Integral) and 1 <= v <= 2**53 for v in (datasets, draws)):
        return  # refused, naming the option, when the plan is built (10**400: no float)
    steps = points * mc_study_steps(datasets, draws, d)
    by_d = d > 1 and steps > 2 * points * mc_study_steps(datasets, draws)  # mostly noise sums
    named = ([names] if points > 1 else []) + ["datasets", "draws"]
    if by_d and "d" not in names.split(", "):
        named.append("d")
    check_work(steps, parameter=", ".join(named),
               what=f"a Monte Carlo sweep of {points} grid points x {datasets} datasets x "
               f"{draws} draws" + (f", d up to {d} other blocks" if by_d else ""))
