r"""The largest rho of a single-level discrete Gaussian release that meets a risk target.

R' is unbounded for the discrete Gaussian, so a target is stated on a risk *measure*. For a
set of priors :math:`\{p_j\}` (the adversary's prior P[X1 = m + 1]), the answer is

.. math:: \rho^* = \min_j \inf\{\rho > 0 : M(\rho, p_j) > T\},

the first crossing of the target ``T`` by the measure ``M``, for

* ``marginal-risk``: the marginal risk :math:`R(\rho, p)`
  (:func:`dprisk.inference.single_level.closed_form.marginal_risk`), which rises from 1 (rho -> 0)
  to
  :math:`1/p` (rho -> inf);
* ``marginal-posterior``: the marginal posterior (``marginal_posterior``), from ``p`` to 1;
* ``p-correct``: the probability of a correct 0-1-loss decision when the target has the
  characteristic (:func:`dprisk.inference.single_level.closed_form.p_correct`, paper eq. 3.6), from
  0
  (p < 1/2), 1/2 (p = 1/2) or 1 (p > 1/2) at rho -> 0 to 1;
* ``tail``: :math:`P[R'(X^*) > r^*(p)]` with :math:`X^* \sim \mathrm{DG}(m + 1, 1/(2\rho))`
  and the risk profile :math:`r^*(p) = \max(\tilde r, \tilde a / p)` (``max_ratio``,
  ``max_posterior``; a constant :math:`\tilde r` without ``max_posterior``): the
  discrete-Gaussian analogue of Kazan & Reiter's epsilon-DP profile
  (:mod:`dprisk.inference.privacy.risk_profile`); the target is the tolerance :math:`\tau`, from 0
  to 1;
* ``worst-case-accuracy``: the best prior-weighted accuracy
  :math:`\sum_x \max(p P_1(x), (1 - p) P_0(x))` of *any* test between the release with and
  without the target's characteristic
  (:func:`dprisk.inference.privacy.worst_case.worst_case_accuracy`, exact), from
  :math:`\max(p, 1 - p)` to 1: the f-DP guarantee against every adversary, the
  conservative choice beside the Bayesian measures (at one level it equals the Bayes rule's
  prior-weighted accuracy, p P[correct | m+1] + (1 - p) P[correct | m]).

The worst-case accuracy is continuous in rho but, for p != 1/2, *not* monotone (the
likelihood ratios of the discrete Gaussian sit on a lattice that moves with rho; e.g. at
p = 0.2 it falls from 0.8351 to 0.8330 between rho = 1.08 and 1.26; the tests show it): its
first crossing is located by a scan of :data:`WORST_CASE_SCAN_PER_DECADE` log-spaced points
per decade, then Brent's method on the first interval whose right end exceeds the target (a
crossing that opens and closes between two scan points could be missed). The scan begins
where an increasing upper bound of the measure reaches the target
(:func:`worst_case_search_start`,
:func:`dprisk.inference.privacy.worst_case.one_level_accuracy_bound`; equal to the measure
at p = 1/2): no smaller rho exceeds it, so no crossing below the scan is missed. It begins
at :data:`WORST_CASE_RHO_FLOOR` at the lowest; a target that could cross below is refused,
naming the smallest target searched.

The two marginal measures increase in rho (the tests check it on a grid), so the first
crossing is the root of :math:`M(\rho, p) = T`, found by Brent's method on a bracket in rho
to a relative 1e-15. P[correct] and the tail are step-like in rho: their first crossing is
located exactly at the computed jump points (:mod:`dprisk.inference.privacy.budget_jumps`), with
Brent's method only on the one continuous increasing piece. In every case the returned rho
is moved down, if need be, so that the measure *as evaluated* at it is at most the target. A
prior whose measure never exceeds ``T`` does not bind. Each answer carries its certificate:
the measure at :math:`\rho^*` (at most ``T``) and at :math:`\rho^*(1 + 10^{-9})` (above
``T``), both at the binding prior.

The two-level and whole-Census versions are in :mod:`dprisk.inference.privacy.budget_levels`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dprisk.models.checks import check_count, check_probability
from dprisk.models.roots import brent_root

__all__ = ["MEASURES", "STEP_MEASURES", "WORST_CASE_RHO_FLOOR", "WORST_CASE_SCAN_PER_DECADE",
           "DGBudget", "certified", "check_certificate",
           "check_profile", "check_target", "max_ratio_profile", "measure_function",
           "rho_for_target", "tail_probability", "worst_case_search_start"]

#: The measures available.
MEASURES = ("marginal-risk", "marginal-posterior", "p-correct", "tail", "worst-case-accuracy")
#: The measures that are step-like (not monotone) in rho.
STEP_MEASURES = ("p-correct", "tail")

_RHO_MIN = 1e-12
_RHO_MAX = 1e6
#: Scan density of the worst-case accuracy's first crossing (points per decade of rho).
WORST_CASE_SCAN_PER_DECADE = 100
#: Smallest rho at which the worst-case accuracy's search evaluates the measure (its exact
#: enumeration costs about 0.1 s at 1e-8, ten times that at 1e-10): a target whose crossing
#: may lie below is refused, naming the smallest target searched
#: (:func:`worst_case_search_start`).
WORST_CASE_RHO_FLOOR = 1e-8
#: Relative step above rho* at which the certificate's ``value_above`` is evaluated.
ABOVE = 1e-9


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
        The target ``T`` (the tolerance :math:`\tau` for ``tail``).
    binding_p : float
        The prior at which the target binds.
    value_at_rho : float
        The measure at :math:`\rho^*` and the binding prior (at most ``T``).
    value_above : float
        The measure at :math:`\rho^*(1 + 10^{-9})` (above ``T``).
    certified_to : float or None
        The two-level forms (rho1 fixed, and the Census allocation with the block group): the
        rho up to which the measure is *proven* at most ``T`` by the interval bound
        (:mod:`dprisk.inference.privacy.budget_certified`); equal to ``rho`` when the crossing is
        located, a little below it when the bound stops converging (see there). None for the
        single-level forms.
    """

    rho: float
    measure: str
    target: float
    binding_p: float
    value_at_rho: float
    value_above: float
    certified_to: float | None = None


def max_ratio_profile(p: float, max_ratio: float, max_posterior: float | None) -> float:
    r"""The risk profile :math:`r^*(p) = \max(\tilde r, \tilde a / p)`.

    Without ``max_posterior`` the profile is the constant :math:`\tilde r`.
    """
    return max_ratio if max_posterior is None else max(max_ratio, max_posterior / p)


def tail_probability(rho, p, known=0, *, max_ratio, max_posterior=None) -> float:
    r""":math:`P[R'(X^*) > r^*(p)]`, :math:`X^* \sim \mathrm{DG}(m + 1, 1/(2\rho))`, single level.

    .. math:: P[R'(X^*) > r^*] = P[\eta \ge c(\rho)], \quad
              c = \lfloor \tfrac12 + \delta/(2\rho) \rfloor, \quad
              \delta = \log r^* + \log(1 - p) - \log(1 - r^* p),

    evaluated as :func:`dprisk.inference.single_level.closed_form.p_correct` at the prior
    :math:`\operatorname{expit}(-\delta)` (see :mod:`dprisk.inference.privacy.budget_jumps`); 0
    when :math:`r^* p \ge 1`. Arguments as in :func:`rho_for_target` (validated there).
    """
    from dprisk.inference.privacy.budget_jumps import tail_delta, tail_prior
    from dprisk.inference.single_level.closed_form import p_correct

    delta = tail_delta(p, max_ratio_profile(p, max_ratio, max_posterior))
    if math.isinf(delta):
        return 0.0
    return float(p_correct(rho, tail_prior(delta), known))


def measure_function(measure: str, p: float, known: int, *, max_ratio=None,
                     max_posterior=None):
    """``rho -> M(rho, p)`` for a measure of :data:`MEASURES` (kernel: arguments validated).

    Every evaluation calls the single-level kernels
    (:mod:`dprisk.inference.single_level.closed_form_kernels`) directly, as the public functions
    do after their checks: the searched rho stays inside the search's range (above 0), so a
    search validates its inputs once, not at each of its evaluations.
    """
    import numpy as np

    from dprisk.inference.single_level import closed_form_kernels as kernels

    if measure == "worst-case-accuracy":  # validates rho at each evaluation (issue 22)
        from dprisk.inference.privacy.worst_case import worst_case_accuracy

        return lambda rho: worst_case_accuracy(rho, p, method="exact").accuracy
    m = np.asarray(known, dtype=np.int64)
    if measure == "tail":  # P[correct] at the prior expit(-delta) (tail_probability)
        from dprisk.inference.privacy.budget_jumps import tail_delta, tail_prior

        delta = tail_delta(p, max_ratio_profile(p, max_ratio, max_posterior))
        if math.isinf(delta):
            return lambda rho: 0.0
        shifted = np.asarray(tail_prior(delta), dtype=float)
        return lambda rho: float(kernels.p_correct(np.asarray(rho, dtype=float), shifted, m))
    prior = np.asarray(p, dtype=float)
    if measure == "p-correct":
        return lambda rho: float(kernels.p_correct(np.asarray(rho, dtype=float), prior, m))
    column = 1 if measure == "marginal-posterior" else 2  # closed_form's values, bit for bit
    return lambda rho: float(kernels.marginal_posterior_and_risk(
        np.asarray(rho, dtype=float), prior)[column])


def _supremum(measure: str, p: float) -> float:
    return 1.0 / p if measure == "marginal-risk" else 1.0


#: Measures whose target must lie below 1 (their supremum at every prior).
_BELOW_ONE = (*STEP_MEASURES, "worst-case-accuracy")


def _infimum(measure: str, p: float) -> float:
    """The measure's limit at rho -> 0."""
    if measure == "marginal-risk":
        return 1.0
    if measure == "marginal-posterior":
        return p
    if measure == "p-correct":
        return 0.0 if p < 0.5 else (0.5 if p == 0.5 else 1.0)
    if measure == "worst-case-accuracy":
        return max(p, 1.0 - p)
    return 0.0


def certified(value, rho: float, target: float) -> float:
    """``rho`` moved down by rounding steps until ``value(rho) <= target`` (the certificate)."""
    for _ in range(64):
        if value(rho) <= target:
            return rho
        rho *= 1.0 - 1e-15
    raise RuntimeError(f"the measure at rho = {rho!r} stays above the target {target!r}")


def check_certificate(answer: DGBudget, name: str = "target") -> DGBudget:
    r"""``answer`` when its certificate holds: ``value_at_rho <= target < value_above``.

    A target within rounding of the measure's supremum (e.g. 1e-8 below it) or of its value
    at rho -> 0 can leave the measure just above :math:`\rho^*` no higher than the target: no
    first crossing is then shown, and the answer is refused rather than printed.

    Raises
    ------
    ValueError
        Naming ``name`` (``--target`` on the command line), the two values and the fix.
    """
    if answer.value_at_rho <= answer.target < answer.value_above:
        return answer
    raise ValueError(
        f"{name} = {answer.target!r} cannot be certified for the {answer.measure}: at rho* = "
        f"{answer.rho!r} it is {answer.value_at_rho!r} and just above (x (1 + {ABOVE:g})) "
        f"{answer.value_above!r}, not above the target: near the ends of its range (its "
        f"value at rho -> 0 and its supremum) the measure moves by less than its rounding over "
        f"a relative {ABOVE:g} of rho; allowed range: a target farther from those ends"
    )


def _first_crossing(value, target: float, measure: str, p: float) -> float | None:
    """The largest rho with value(rho) <= target (value increasing), or None if never above.

    Raises
    ------
    ValueError
        ``target = ...`` when the measure exceeds it already at :data:`_RHO_MIN`, the smallest
        rho searched (a target within about 1e-12 of the measure's value at rho -> 0): the
        message gives the smallest target searched.
    """
    upper = 1.0
    while value(upper) <= target:
        upper *= 10.0
        if upper > _RHO_MAX:
            return None
    lower = min(upper / 10.0, 1.0)
    while (at_lower := value(lower)) > target:
        if lower == _RHO_MIN:  # its last decade ends at the smallest rho, evaluated once
            raise ValueError(
                f"target = {target!r} is exceeded by the {measure} already at rho = "
                f"{_RHO_MIN:g}, the smallest rho searched, where it is {at_lower!r}: the "
                f"target is too close to the measure's value at rho -> 0; allowed range: "
                f"target >= {at_lower!r} at p = {p!r}")
        lower /= 10.0
        if lower < _RHO_MIN * (1.0 + 1e-9):  # 1 / 10 twelve times is 1.0000000000000002e-12
            lower = _RHO_MIN
    return float(brent_root(lambda rho: value(rho) - target, lower, upper, xtol=1e-300,
                        rtol=1e-15))


def worst_case_search_start(p: float, target: float) -> float:
    r"""Where the worst-case accuracy's search begins: below it no rho exceeds ``target``.

    The largest rho found (by bisection in log rho, to a relative 1e-12) with
    :math:`B(\rho, p) \le T`, :math:`B` the increasing upper bound
    :func:`dprisk.inference.privacy.worst_case.one_level_accuracy_bound`: every smaller rho
    then has :math:`A^* \le B \le T`, so the first crossing is at or above it (at p = 1/2,
    where :math:`B = A^*`, it is the crossing itself, to rounding).

    Raises
    ------
    ValueError
        ``target = ...`` when that rho is below :data:`WORST_CASE_RHO_FLOOR` (the measure is
        not evaluated there): the message gives the smallest target searched at ``p``.
    """
    from dprisk.inference.privacy.worst_case import one_level_accuracy_bound

    def bound(log_rho: float) -> float:
        return one_level_accuracy_bound(math.exp(log_rho), p)

    low = math.log(WORST_CASE_RHO_FLOOR)
    if bound(low) > target:
        smallest = bound(low)
        raise ValueError(
            f"target = {target!r} is below {smallest!r}, the worst-case accuracy's upper "
            f"bound at rho = {WORST_CASE_RHO_FLOOR:g} (p = {p!r}), where the search begins: "
            f"its first crossing may lie below, where the exact measure is not evaluated; "
            f"allowed range: {math.nextafter(smallest, 1.0)!r} <= target < 1 at this p")
    high = math.log(_RHO_MAX)  # the bound is max(p, 1 - p) + min(p, 1 - p) = 1 > target there
    while high - low > 1e-12 * max(1.0, abs(low)):
        middle = 0.5 * (low + high)
        if bound(middle) <= target:
            low = middle
        else:
            high = middle
    return math.exp(low) if bound(low) <= target else WORST_CASE_RHO_FLOOR


def _scan_crossing(value, target: float, start: float) -> float | None:
    r"""First crossing of a continuous, non-monotone measure above ``start``: log scan, Brent.

    ``start`` is where the target is known to hold below (:func:`worst_case_search_start`);
    the measure there may exceed the target by rounding (at p = 1/2 the bound is the
    measure): the scan then begins up to three steps lower; a target the measure still
    rounds above there (within rounding of 1) is refused (ValueError naming ``target``).
    """
    from scipy.optimize import brentq

    step = 10.0 ** (1.0 / WORST_CASE_SCAN_PER_DECADE)
    lower = start
    for _ in range(3):
        if value(lower) <= target:
            break
        lower /= step
    else:  # the measure rounds above its upper bound: within rounding of its supremum 1
        raise ValueError(f"target = {target!r} cannot be certified for the worst-case-accuracy"
                         f": its sum rounds above the target at rho = {lower * step!r}, below "
                         f"{start!r}, where its upper bound does not (the rounding of a sum "
                         "near its supremum 1); allowed range: a target farther from 1")
    while lower < _RHO_MAX:
        upper = lower * step
        if value(upper) > target:
            return float(brentq(lambda rho: value(rho) - target, lower, upper, xtol=1e-300,
                                rtol=1e-15))
        lower = upper
    return None


def _step_crossing(measure: str, p: float, target: float, max_ratio, max_posterior):
    r"""First crossing of a step-like measure at prior ``p``, or None if it never binds.

    The jump points :math:`\delta/(2k + 1)` are those of :func:`measure_function`, whose
    decision threshold uses :math:`\delta = -\operatorname{logit}(p')` as the kernels round
    it (:func:`dprisk.models.numerics.logit` of the prior it is given, ``p`` or the tail's
    shifted :math:`p' = \operatorname{expit}(-\delta)`): near p = 1/2 another rounding of
    :math:`\delta` differs from it by about :math:`10^{-16}`, relatively :math:`10^{-13}`,
    and the crossing found from it sat on the jump's upper side farther than
    :func:`certified` steps down (p = 0.4999, T = 0.4: 1.1e-13 against 6.4e-14).
    """
    import numpy as np

    from dprisk.inference.privacy import budget_jumps as jumps
    from dprisk.models.numerics import logit

    if measure == "p-correct":
        delta = -math.log(p / (1.0 - p))
        evaluated = p
    else:
        delta = jumps.tail_delta(p, max_ratio_profile(p, max_ratio, max_posterior))
        if math.isinf(delta):
            return None
        evaluated = jumps.tail_prior(delta)  # as measure_function shifts the prior
    jumps.check_pieces(measure, p, target, delta, max_ratio, max_posterior)
    delta = -float(logit(np.asarray(evaluated, dtype=float)))
    rho, where = jumps.first_crossing(max(delta, 0.0), target)
    return jumps.at_or_below_jump(rho, where, p, max_ratio, max_posterior)


def check_target(measure: str, target, priors) -> float:
    """``target`` as a float inside the measure's range at every prior (else ValueError)."""
    try:
        target = float(target)
    except (TypeError, ValueError):
        target = math.nan
    name = "tail tolerance" if measure == "tail" else "target"
    floor = max(_infimum(measure, float(prior)) for prior in priors)
    below_one = measure in _BELOW_ONE or measure == "marginal-posterior"
    if below_one and not floor < math.nextafter(1.0, 0.0):  # no float in (floor, 1)
        prior = max((float(prior) for prior in priors),
                    key=lambda prior: _infimum(measure, prior))
        raise ValueError(
            f"p = {prior!r} leaves no {name} for the {measure}: its value at rho -> 0, "
            f"{floor!r}, is within one float of its supremum 1 (no number lies between); "
            f"allowed range: priors whose {measure} at rho -> 0 is at most "
            f"{math.nextafter(math.nextafter(1.0, 0.0), 0.0)!r}")
    shown = f"{floor:.6g}" if float(f"{floor:.6g}") == floor else repr(floor)  # never rounded
    if not (math.isfinite(target) and target > floor):
        raise ValueError(f"{name} must exceed the {measure} at rho -> 0 for every prior "
                         f"(allowed range: {name} > {shown}), got {target!r}")
    if measure in _BELOW_ONE and not target < 1.0:
        raise ValueError(f"{name} must be below 1, the {measure}'s supremum (allowed range: "
                         f"{shown} < {name} < 1), got {target!r}")
    return target


def check_profile(max_ratio, max_posterior) -> None:
    """The tail's profile: ``max_ratio`` finite and > 1, ``0 < max_posterior < 1`` if given."""
    if max_ratio is None or not (math.isfinite(max_ratio) and max_ratio > 1.0):
        raise ValueError(f"max_ratio must be a finite number > 1 (a ratio of at most 1 is an "
                         f"impossible profile; allowed range: 1 < R < inf), got {max_ratio!r}")
    if max_posterior is not None and not 0.0 < max_posterior < 1.0:
        raise ValueError(f"max_posterior must be a number with 0 < A < 1, got {max_posterior!r}")


def rho_for_target(measure: str, target, *, p=(0.5,), known=0, max_ratio=None,
                   max_posterior=None) -> DGBudget:
    r"""The largest single-level rho whose risk ``measure`` stays at most ``target`` at every p.

    .. math:: \rho^* = \min_j \inf\{\rho > 0 : M(\rho, p_j) > T\}

    Parameters
    ----------
    measure : {"marginal-risk", "marginal-posterior", "p-correct", "tail", "worst-case-accuracy"}
        The risk measure ``M`` to bound.
    target : float
        ``T``: above 1 for the marginal risk; above every p (and below 1) for the marginal
        posterior; in (0, 1) for P[correct] (above 1/2 if some p = 1/2; no p > 1/2, where
        P[correct] -> 1 as rho -> 0); the tolerance :math:`\tau` in (0, 1) for the tail.
    p : sequence of float (each 0 < p < 1), non-empty
        The priors at which the target must hold.
    known : int (>= 0)
        ``m``, the adversary's known count of the others.
    max_ratio, max_posterior : float, optional
        The tail's profile :math:`r^*(p) = \max(\tilde r, \tilde a/p)`: ``max_ratio``
        (:math:`\tilde r > 1`) is required for ``tail``, ``max_posterior``
        (:math:`0 < \tilde a < 1`) optional; neither applies to the other measures.

    Returns
    -------
    DGBudget
        ``rho`` is :math:`\rho^*`, ``binding_p`` the prior at which the minimum is reached.

    Raises
    ------
    ValueError
        Naming the parameter: an unknown measure, an empty prior set, a target outside the
        measure's range (at or below its value at rho -> 0 for some prior: impossible; at
        or above its supremum for every prior: any rho meets it; for worst-case-accuracy
        max(p, 1 - p) < T < 1; for the marginal measures a target they exceed already at
        rho = 1e-12, the smallest rho searched), an impossible profile, a
        profile option given for another measure.
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
    if measure == "tail":
        check_profile(max_ratio, max_posterior)
    elif max_ratio is not None or max_posterior is not None:
        raise ValueError(f"max_ratio and max_posterior apply to the tail measure only, not "
                         f"to {measure}")
    if measure == "p-correct" and float(priors.max()) > 0.5:
        raise ValueError(f"p must be at most 1/2 for p-correct: with p > 1/2 P[correct] tends "
                         f"to 1 as rho -> 0, so no rho meets a target below 1 (allowed range: "
                         f"0 < p <= 0.5), got {float(priors.max())!r}")
    target = check_target(measure, target, priors)
    best = None
    for prior in (float(value) for value in priors):
        if measure in STEP_MEASURES:
            rho = _step_crossing(measure, prior, target, max_ratio, max_posterior)
        elif measure == "worst-case-accuracy":
            rho = _scan_crossing(measure_function(measure, prior, known), target,
                                 worst_case_search_start(prior, target))
        elif target >= _supremum(measure, prior):
            rho = None
        else:
            rho = _first_crossing(measure_function(measure, prior, known), target,
                                  measure, prior)
        if rho is not None and (best is None or rho < best[0]):
            best = (rho, prior)
    if best is None and measure == "tail":
        raise ValueError("max_ratio times p is at least 1 at every prior: no "
                         "release exceeds the ratio bound, so any rho meets the tail "
                         "tolerance (allowed range: max_ratio * p < 1 for some p)")
    if best is None:
        raise ValueError(f"target {target!r} is never exceeded by the {measure} at these "
                         "priors: any rho meets it (allowed range: below the measure's "
                         "supremum, 1/p for marginal-risk, 1 for marginal-posterior and "
                         "p-correct)")
    rho, prior = best
    value = measure_function(measure, prior, known, max_ratio=max_ratio,
                             max_posterior=max_posterior)
    rho = certified(value, rho, target)
    name = "tail tolerance" if measure == "tail" else "target"
    return check_certificate(DGBudget(rho, measure, target, prior, value(rho),
                                      value(rho * (1.0 + ABOVE))), name)
