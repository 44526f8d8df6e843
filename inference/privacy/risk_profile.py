r"""The privacy budget from a disclosure-risk target: Kazan & Reiter's risk-profile method.

Kazan & Reiter ("Prior-itizing privacy: a Bayesian approach to setting the privacy budget
in differential privacy") let an agency state a *risk profile* :math:`r^*(p)`: the largest
posterior-to-prior ratio it accepts for a target whose prior probability (of the sensitive
event) is ``p``. Here the profile is

.. math:: r^*(p, q) = \max\big(\tilde r,\; \tilde a / (p q)\big),

"a ratio up to :math:`\tilde r`, or a posterior up to :math:`\tilde a`", where ``p`` is the
prior that the target is in the data and ``q`` the prior on the sensitive value (``q = 1``:
the event is presence alone). An epsilon-DP release keeps the worst-case ratio at or below
:math:`r^*` for that prior iff :math:`\varepsilon \le \varepsilon(p, q)`,

.. math:: \varepsilon(p, q) = \log \frac{2p(1-q)}{\sqrt{(1-p)^2 + 4p(1-q)(1/r^* - pq)}
          - (1-p)}
          = \log \frac{\sqrt{(1-p)^2 + 4p(1-q)(1/r^* - pq)} + (1-p)}{2(1/r^* - pq)},

(the second form, obtained by rationalising, has no 0/0 at ``q = 1``, where it is
:math:`\log[(1-p)/(1/r^* - p)]`); where :math:`r^* p q \ge 1` the profile allows any posterior
and :math:`\varepsilon(p, q) = \infty`. The budget is :math:`\varepsilon^* = \min_p
\varepsilon(p, q)` (and, with ``q`` free, also over ``q``).

**Exact minimisation.** The profile has one kink, at :math:`pq = \tilde a/\tilde r`; on each
side :math:`\varepsilon` is smooth. For ``q = 1`` it decreases before the kink and increases
after it, so the minimum is at the kink: :math:`\varepsilon^* = \log[(\tilde r - \tilde a)/(1
- \tilde a)]`. In general each smooth piece is minimised by a bounded Brent search to 1e-12
in ``p`` and compared with the closed ends (the kink, ``p = 1``); over ``q`` the same is done
on the two sides of :math:`q = \tilde a/\tilde r` (where the kink reaches ``p = 1``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from dprisk.models.checks import check_probability

__all__ = ["SMALLEST_KINK", "PureDPBudget", "epsilon_for_prior", "pure_dp_budget"]

_XATOL = 1e-12
#: Smallest prior ``max_posterior / (q max_ratio)`` at which the profile's branches meet (the
#: searches' kink), the smallest normal double: below it the kink and the binding prior lose
#: digits and underflow to 0 (a division by zero).
SMALLEST_KINK = sys.float_info.min
#: Above every finite epsilon(p, q) (at most about log(2/5e-324) = 745): the searches see
#: :math:`\min(\varepsilon, \text{this})`, so that an infinite value where the profile allows
#: any posterior never enters Brent's parabolic step (inf - inf: nan and RuntimeWarnings).
_SEARCH_CAP = 1e4


@dataclass(frozen=True)
class PureDPBudget:
    r"""The largest epsilon meeting a risk profile, and the prior where the profile binds.

    Attributes
    ----------
    epsilon : float
        :math:`\varepsilon^* = \min \varepsilon(p, q)`.
    binding_p : float
        The prior ``p`` of the minimum.
    binding_q : float
        The prior ``q`` of the minimum (the given ``q``, 1 by default).
    """

    epsilon: float
    binding_p: float
    binding_q: float


def _slack(max_ratio: float, max_posterior: float, p: float, q: float) -> float:
    r""":math:`1/r^*(p, q) - pq`; on the posterior branch as :math:`pq(1 - \tilde a)/\tilde a`.

    There :math:`1/r^* = pq/\tilde a`, and subtracting :math:`pq` from it cancels every digit
    when :math:`\tilde a` is within rounding of 1 (the difference then rounded to 0 or below:
    an infinite epsilon inside the search interval); ``1 - a`` is exact (Sterbenz).
    """
    pq = p * q
    if p <= max_posterior / (q * max_ratio):  # up to the kink (as the searches compute it)
        return pq * (1.0 - max_posterior) / max_posterior
    return 1.0 / max_ratio - pq


def _epsilon(p: float, q: float, slack: float) -> float:
    """The stable form of epsilon(p, q) at ``slack`` :math:`= 1/r^* - pq` (inf where vacuous)."""
    if slack <= 0.0:
        return math.inf
    one_minus_p = 1.0 - p
    root = math.sqrt(one_minus_p * one_minus_p + 4.0 * p * (1.0 - q) * slack)
    numerator = root + one_minus_p
    if numerator <= 0.0:
        return -math.inf
    return math.log(numerator) - math.log(2.0 * slack)  # the ratio itself may overflow


def epsilon_for_prior(p, q, max_ratio, max_posterior) -> float:
    r"""The largest epsilon whose worst-case ratio at prior ``(p, q)`` meets the profile.

    .. math:: \varepsilon(p, q) = \log \frac{2p(1-q)}{\sqrt{(1-p)^2 + 4p(1-q)(1/r^* - pq)}
              - (1-p)}, \quad r^* = \max(\tilde r, \tilde a/(pq))

    Parameters
    ----------
    p : float (0 < p <= 1)
        Prior that the target is in the data.
    q : float (0 < q <= 1)
        Prior on the sensitive value.
    max_ratio : float (> 1)
        :math:`\tilde r`.
    max_posterior : float (0 < max_posterior < 1)
        :math:`\tilde a`.

    Returns
    -------
    float
        ``inf`` where the profile allows any posterior (:math:`r^* p q \ge 1`).
    """
    max_ratio, max_posterior = _check_profile(max_ratio, max_posterior)
    p = _check_unit(p, "p")
    q = _check_unit(q, "q")
    if q == 1.0 and p == 1.0:
        raise ValueError("p must be < 1 when q = 1 (allowed range: 0 < p < 1)")
    return _epsilon(p, q, _slack(max_ratio, max_posterior, p, q))


def _bounded_min(function, lower: float, upper: float) -> tuple[float, float]:
    """Brent's bounded search of ``min(function, _SEARCH_CAP)``: (value, x), inf at the cap."""
    from scipy.optimize import minimize_scalar

    found = minimize_scalar(lambda x: min(function(x), _SEARCH_CAP), bounds=(lower, upper),
                            method="bounded", options={"xatol": _XATOL})
    value = float(found.fun)
    return (math.inf if value >= _SEARCH_CAP else value), float(found.x)


def _min_over_p(max_ratio: float, max_posterior: float, q: float) -> tuple[float, float]:
    """(epsilon*, binding p) for one q: the kink, p = 1 and Brent on each smooth piece."""

    def eps(p: float) -> float:
        return _epsilon(p, q, _slack(max_ratio, max_posterior, p, q))

    kink = max_posterior / (q * max_ratio)
    if q == 1.0:  # decreasing before the kink, increasing after it: log[(r - a)/(1 - a)]
        return math.log(max_ratio - max_posterior) - math.log1p(-max_posterior), kink
    candidates = [(eps(1.0), 1.0)]
    pieces = [(0.0, min(kink, 1.0))]
    if kink < 1.0:
        candidates.append((eps(kink), kink))
        pieces.append((kink, min(1.0, 1.0 / (max_ratio * q))))
    for lower, upper in pieces:
        if upper - lower <= _XATOL:
            continue
        candidates.append(_bounded_min(eps, lower, upper))
    return min(candidates)


def _min_over_pq(max_ratio: float, max_posterior: float) -> tuple[float, float, float]:
    """(epsilon*, p, q) minimised over both priors, q on each side of a/r (and q = 1)."""

    def best(q: float) -> float:
        return _min_over_p(max_ratio, max_posterior, q)[0]

    q_kink = max_posterior / max_ratio
    candidates = [(best(q_kink), q_kink), (best(1.0), 1.0)]
    for lower, upper in ((0.0, q_kink), (q_kink, 1.0)):
        if upper - lower <= _XATOL:  # a side narrower than the tolerance: its ends suffice
            continue
        candidates.append(_bounded_min(best, lower, upper))
    epsilon, q = min(candidates)
    _, p = _min_over_p(max_ratio, max_posterior, q)
    return epsilon, p, q


def pure_dp_budget(max_ratio, max_posterior, *, q=1.0) -> PureDPBudget:
    r"""The largest epsilon of an epsilon-DP release meeting the profile max(r̃, ã/(pq)).

    .. math:: \varepsilon^* = \min_{p} \varepsilon(p, q)
              \quad (\text{and over } q \text{ when } q \text{ is None})

    Parameters
    ----------
    max_ratio : float (> 1)
        :math:`\tilde r`, the largest accepted posterior-to-prior ratio.
    max_posterior : float (0 < max_posterior < 1)
        :math:`\tilde a`, the largest accepted posterior (the profile allows the larger).
    q : float (0 < q <= 1) or None
        Prior on the sensitive value; 1 (the default) is the presence-only formula
        :math:`\log[(1-p)/(1/r^*(p) - p)]`; None minimises over ``q`` as well.

    Returns
    -------
    PureDPBudget
        :math:`\varepsilon^*` and the prior ``(p, q)`` at which the profile binds.

    Examples
    --------
    max(3, 0.25/p): epsilon* = log(11/3) = 1.299283 at p = 1/12; max(3, 0.15/p): 1.209838;
    max(3, 0.25/(pq)) minimised over q too: 0.649641 (p = 1, q = 1/12).
    """
    max_ratio, max_posterior = _check_profile(max_ratio, max_posterior)
    if q is not None:
        q = _check_unit(q, "q")
    kink = max_posterior / ((1.0 if q is None else q) * max_ratio)
    if not kink >= SMALLEST_KINK:
        raise ValueError(
            f"max_posterior / ({'' if q is None else 'q '}max_ratio) = {kink:.3g} is below "
            f"{SMALLEST_KINK:.3g}: the prior where the profile's two branches meet must be a "
            f"normal number (allowed range: max_posterior / ({'' if q is None else 'q '}"
            f"max_ratio) >= {SMALLEST_KINK:.3g})")
    if q is None:
        epsilon, p, q_bind = _min_over_pq(max_ratio, max_posterior)
        return PureDPBudget(float(epsilon), float(p), float(q_bind))
    epsilon, p = _min_over_p(max_ratio, max_posterior, q)
    return PureDPBudget(float(epsilon), float(p), q)


def _check_unit(value, name: str) -> float:
    """A single number in (0, 1] (a boolean is refused, not read as 1)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value == 1:
        return 1.0
    arr = check_probability(value, name)
    if arr.ndim:
        raise ValueError(f"{name} must be a single number in (0, 1], got {value!r}")
    return float(arr)


def _check_profile(max_ratio, max_posterior) -> tuple[float, float]:
    """max_ratio > 1 (finite) and 0 < max_posterior < 1, else a one-line ValueError.

    A string ``max_ratio`` is a ``TypeError`` (``float`` would read ``"3"`` as 3).
    """
    if isinstance(max_ratio, (str, bytes)):
        raise TypeError(f"max_ratio must be a number, got {max_ratio!r}")
    try:
        ratio = float(max_ratio)
    except (TypeError, ValueError):
        ratio = math.nan
    if not (math.isfinite(ratio) and ratio > 1.0):
        raise ValueError("max_ratio must be a finite number > 1 (a ratio of at most 1 is an "
                         f"impossible profile; allowed range: 1 < max_ratio < inf), "
                         f"got {max_ratio!r}")
    posterior = check_probability(max_posterior, "max_posterior")
    if posterior.ndim:
        raise ValueError(f"max_posterior must be a single number in (0, 1), got "
                         f"{max_posterior!r}")
    return ratio, float(posterior)
