r"""The rhos (and deltas) for which the CKS conversion of zCDP to (epsilon, delta) is computed.

``dp-accounting``'s RDP accountant evaluates the Canonne-Kamath-Steinke bound
:math:`\alpha\rho + \log(1 - 1/\alpha) - \log(\delta\alpha)/(\alpha - 1)` at Renyi orders
from :data:`MIN_ORDER` to :data:`MAX_ORDER`; its optimal order decreases in rho
(:func:`_rho_of_order`), so a delta's computable rhos form one interval (:func:`cks_range`), whose
ends the refusals of :mod:`dprisk.inference.privacy.accounting` state.
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = ["HIGHEST_OPTIMUM", "LOWEST_OPTIMUM", "MAX_ORDER", "MIN_ORDER", "CksRange", "cks_range",
           "refuse_cks", "refuse_cks_delta", "show_range"]

#: Smallest Rényi order at which dp-accounting applies the CKS bound.
MIN_ORDER = 1.01
#: Largest Rényi order the refinement tries; an optimum beyond it (tiny rho) is refused.
MAX_ORDER = 1e12
#: The smallest optimal order :func:`cks_range` counts as computed (the refinement refuses an
#: optimum within a relative 1e-6 of :data:`MIN_ORDER`).
LOWEST_OPTIMUM = MIN_ORDER * (1.0 + 2e-6)
#: The largest optimal order :func:`cks_range` counts as computed (the refinement refuses an
#: optimum within about a relative 1e-3 of :data:`MAX_ORDER`).
HIGHEST_OPTIMUM = MAX_ORDER * (1.0 - 2e-3)


def refuse_cks(rho: float, delta: float, where: str):
    """Raise the one-line ``ValueError`` of a CKS epsilon whose optimal order is out of reach.

    ``where``: ``"above …"``/``"below …"`` (the order), or None (the bound is 0, refused).
    The message states the range of rho at this ``delta`` (:func:`cks_range`); when there is
    none it names ``delta`` instead, with the deltas that have one.
    """
    reach = (f"the CKS conversion's optimal Renyi order lies {where}, outside the orders the "
             f"accountant evaluates ({MIN_ORDER} to {MAX_ORDER:.0e})" if where else
             "the CKS bound is 0 there (the accountant clips it: rho too small to resolve), "
             "which is not reported")
    span = cks_range(delta)
    if span is None:
        refuse_cks_delta(delta)
    raise ValueError(
        f"rho = {rho!r} with delta = {delta!r}: {reach}; allowed range at delta = {delta:.6g}: "
        f"about {show_range(span.rho_low, span.rho_high, span.low_open, 'rho')}; the "
        "Bun-Steinke conversion covers every rho"
    )


def refuse_cks_delta(delta: float):
    """Raise the one-line ``ValueError`` of a delta at which no rho has a CKS epsilon."""
    raise ValueError(
        f"delta = {delta!r}: the CKS conversion computes no rho at this delta (for every rho "
        f"its optimal Renyi order lies below {MIN_ORDER} or its bound is 0); allowed range "
        f"for the CKS conversion: 0 < delta < about {_cks_delta_max():.4g}; the Bun-Steinke "
        "conversion covers every delta"
    )


def show_range(low: float, high: float, low_open: bool, name: str) -> str:
    """``low < name <= high`` to 3 digits, each end rounded inwards.

    Every value shown in the range is then accepted (``<= 2.35e+05``, for a top of 234597,
    refused 234990).
    """
    return (f"{_three_digits(low, up=True)} {'<' if low_open else '<='} {name} <= "
            f"{_three_digits(high, up=False)}")


def _three_digits(value: float, *, up: bool) -> str:
    """``value`` rounded up or down to 3 significant digits (``.3g``)."""
    if not math.isfinite(value) or value <= 0:
        return f"{value:.3g}"
    unit = 10.0 ** (math.floor(math.log10(value)) - 2)
    return f"{(math.ceil if up else math.floor)(value / unit) * unit:.3g}"


class CksRange(NamedTuple):
    """The rhos (and their CKS epsilons) a delta's CKS conversion is computed for.

    ``low_open``: the lower ends are excluded (there the bound reaches 0, which is refused);
    otherwise they are where the optimal order reaches :data:`MAX_ORDER`.
    """

    rho_low: float
    rho_high: float
    epsilon_low: float
    epsilon_high: float
    low_open: bool


def _rho_of_order(alpha: float, delta: float) -> float:
    r"""The rho whose optimal CKS order is ``alpha``: :math:`\log(1/(\delta\alpha))/(\alpha-1)^2`.

    Setting the derivative of the bound in alpha to 0, the terms
    :math:`1/(\alpha(\alpha-1))` cancel and :math:`\rho = -\log(\delta\alpha)/(\alpha-1)^2`
    remains; it decreases in alpha, so the optimal order decreases in rho.
    """
    return -(math.log(delta) + math.log(alpha)) / (alpha - 1.0) ** 2


def _bound_at_order(alpha: float, delta: float) -> float:
    """The CKS epsilon of :func:`_rho_of_order` (its bound at its optimal order ``alpha``)."""
    rho = _rho_of_order(alpha, delta)
    return alpha * rho + math.log1p(-1.0 / alpha) - (math.log(delta) + math.log(alpha)) / (
        alpha - 1.0)


def cks_range(delta: float) -> CksRange | None:
    """The rhos whose CKS epsilon at ``delta`` is computed, or None when there are none.

    From above, the optimal order reaches :data:`MIN_ORDER` (:func:`_rho_of_order`); from
    below, it reaches :data:`MAX_ORDER`, or first the bound reaches 0 (the accountant clips
    it there; also where its KL bound, ``rho < -log(1 - delta^2) / order`` at its smallest
    grid order, gives 0), which is refused. Closed forms and a root in the order: the ends
    are those of the continuous bound, the accountant's agree to its refinement's tolerance.
    """
    from dp_accounting.rdp import rdp_privacy_accountant
    from scipy.optimize import brentq

    delta = float(delta)
    log_top = min(math.log(MAX_ORDER), -math.log(delta))  # the optimal order is below 1/delta
    if log_top <= math.log(MIN_ORDER) or _bound_at_order(MIN_ORDER, delta) <= 0.0:
        return None
    rho_high = _rho_of_order(LOWEST_OPTIMUM, delta)
    epsilon_high = _bound_at_order(LOWEST_OPTIMUM, delta)
    top = math.exp(log_top)
    if log_top == math.log(MAX_ORDER) and _bound_at_order(top, delta) > 0.0:
        top = HIGHEST_OPTIMUM  # counted with a margin: the refinement's last order is the max
        low, epsilon_low, low_open = _rho_of_order(top, delta), _bound_at_order(top, delta), False
    else:
        log_zero = brentq(lambda t: _bound_at_order(math.exp(t), delta),
                          math.log(MIN_ORDER), log_top * (1.0 - 1e-12), xtol=1e-14)
        low, epsilon_low, low_open = _rho_of_order(math.exp(log_zero), delta), 0.0, True
    smallest_order = min(float(a) for a in rdp_privacy_accountant.DEFAULT_RDP_ORDERS)
    kl_zero = -math.log1p(-delta * delta) / smallest_order
    if kl_zero >= low:
        low, epsilon_low, low_open = kl_zero, 0.0, True
    if low >= rho_high:
        return None
    return CksRange(low, rho_high, epsilon_low, epsilon_high, low_open)


def _cks_delta_max() -> float:
    """The largest delta with a CKS range (:func:`cks_range`), by bisection."""
    low, high = 1e-300, 1.0 - 1e-16
    for _ in range(100):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if cks_range(middle) is not None else (low, middle)
    return low
