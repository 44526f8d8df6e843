r"""The largest rho of a single-level discrete Gaussian release that meets a risk target.

R' is unbounded for the discrete Gaussian, so a target is stated on a risk *measure*. For a
set of priors :math:`\{p_j\}` (the adversary's prior P[X1 = m + 1]), the answer is

.. math:: \rho^* = \min_j \inf\{\rho > 0 : M(\rho, p_j) > T\},

the first crossing of the target ``T`` by the measure ``M``, for

* ``marginal-risk``: the marginal risk :math:`R(\rho, p)`
  (:func:`dprisk.inference.single_level.marginal_risk`), which rises from 1 (rho -> 0) to
  :math:`1/p` (rho -> inf);
* ``marginal-posterior``: the marginal posterior (``marginal_posterior``), from ``p`` to 1.

Both increase in rho (the tests check it on a grid), so the first crossing is the root of
:math:`M(\rho, p) = T`, found by Brent's method on a bracket in rho to a relative 1e-15 and
moved down, if need be, so that the measure at the returned rho is at most the target. A
prior whose measure never exceeds ``T`` (T at or above the measure's supremum) does not
bind. Each answer carries its certificate: the measure at :math:`\rho^*` (at most ``T``) and
at :math:`\rho^*(1 + 10^{-9})` (above ``T``), both at the binding prior.

The two-level, tail and P[correct] measures of the issue are not here yet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dprisk.models.checks import check_count, check_probability

__all__ = ["MEASURES", "DGBudget", "rho_for_target"]

#: The measures available, with their range as a function of the prior p.
MEASURES = ("marginal-risk", "marginal-posterior")

_RHO_MIN = 1e-12
_RHO_MAX = 1e6
_ABOVE = 1e-9


@dataclass(frozen=True)
class DGBudget:
    r"""The largest rho meeting a target, and its certificate.

    Attributes
    ----------
    rho : float
        :math:`\rho^*`.
    measure : str
        One of :data:`MEASURES`.
    target : float
        The target ``T``.
    binding_p : float
        The prior at which the target binds.
    value_at_rho : float
        The measure at :math:`\rho^*` and the binding prior (at most ``T``).
    value_above : float
        The measure at :math:`\rho^*(1 + 10^{-9})` (above ``T``).
    """

    rho: float
    measure: str
    target: float
    binding_p: float
    value_at_rho: float
    value_above: float


def _measure_function(measure: str, p: float, known: int):
    from dprisk.inference import single_level

    compute = {"marginal-risk": single_level.marginal_risk,
               "marginal-posterior": single_level.marginal_posterior}[measure]
    return lambda rho: float(compute(rho, p, known))


def _supremum(measure: str, p: float) -> float:
    return 1.0 / p if measure == "marginal-risk" else 1.0


def _infimum(measure: str, p: float) -> float:
    return 1.0 if measure == "marginal-risk" else p


def _first_crossing(value, target: float) -> float | None:
    """The largest rho with value(rho) <= target (value increasing), or None if never above."""
    from scipy.optimize import brentq

    upper = 1.0
    while value(upper) <= target:
        upper *= 10.0
        if upper > _RHO_MAX:
            return None
    lower = min(upper / 10.0, 1.0)
    while value(lower) > target:
        lower /= 10.0
        if lower < _RHO_MIN:
            return None
    root = float(brentq(lambda rho: value(rho) - target, lower, upper, xtol=1e-300,
                        rtol=1e-15))
    for _ in range(64):  # the certificate needs value(root) <= target
        if value(root) <= target:
            break
        root *= 1.0 - 1e-15
    return root


def rho_for_target(measure: str, target, *, p=(0.5,), known=0) -> DGBudget:
    r"""The largest single-level rho whose risk ``measure`` stays at most ``target`` at every p.

    .. math:: \rho^* = \min_j \inf\{\rho > 0 : M(\rho, p_j) > T\}

    Parameters
    ----------
    measure : {"marginal-risk", "marginal-posterior"}
    target : float
        ``T``: above 1 for the marginal risk, above every p (and below 1) for the marginal
        posterior.
    p : sequence of float (each 0 < p < 1), non-empty
        The priors at which the target must hold.
    known : int (>= 0)
        ``m``, the adversary's known count of the others.

    Raises
    ------
    ValueError
        An unknown measure, an empty prior set, a target outside the measure's range (at or
        below its value at rho -> 0 for some prior: impossible; at or above its supremum for
        every prior: any rho meets it).
    """
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    priors = check_probability(p, "p").reshape(-1)
    if priors.size == 0:
        raise ValueError("p must be a non-empty list of priors with 0 < p < 1, got an empty set")
    known_arr = check_count(known, "known", minimum=0)
    if known_arr.ndim:
        raise ValueError(f"known must be a single integer >= 0, got {known!r}")
    known = int(known_arr)
    try:
        target = float(target)
    except (TypeError, ValueError):
        target = math.nan
    floor = max(_infimum(measure, float(prior)) for prior in priors)
    if not (math.isfinite(target) and target > floor):
        raise ValueError(f"target must exceed the {measure} at rho -> 0 for every prior "
                         f"(allowed range: target > {floor:.6g}), got {target!r}")
    best = None
    for prior in (float(value) for value in priors):
        if target >= _supremum(measure, prior):
            continue
        value = _measure_function(measure, prior, known)
        rho = _first_crossing(value, target)
        if rho is not None and (best is None or rho < best[0]):
            best = (rho, prior, value)
    if best is None:
        raise ValueError(f"target {target!r} is never exceeded by the {measure} at these "
                         "priors: any rho meets it (allowed range: below the measure's "
                         "supremum, 1/p for marginal-risk, 1 for marginal-posterior)")
    rho, prior, value = best
    return DGBudget(rho, measure, target, prior, value(rho), value(rho * (1.0 + _ABOVE)))
