r"""Where ``dp-accounting``'s answers are resolved: the CKS conversion and the PLDs.

The CKS epsilon (``epsilon_cks``, ``rho_cks``) is refused below the smallest normal
double: the accountant evaluates :math:`\log(\delta\alpha)` from the product
:math:`\delta\alpha`, which loses its digits among the subnormals (at delta = 5e-324, rho =
1e4 it gave 15455.35 for the bound's 15454.46; at 1e-320, rho = 1e3, 2715.27818 for 2715.27833,
below the bound). The PLD epsilons of :mod:`dprisk.inference.privacy.accounting` (``epsilon_pld``,
``epsilon_pld_bracket`` and the Census's) hold for the exact
discrete Gaussian only where the accountant's two approximations are negligible: its
truncation of each query's noise (a neglected mass of 1e-30), which must be small beside
delta, and its sums of :math:`e^{-\text{loss}}` over the losses above epsilon, which must
stay normal doubles; for two or more queries also its composition, by FFT
(``scipy.signal.fftconvolve``: each probability rounded by about 1e-16 absolute, so delta
too) and with each composition's tails of mass 1e-15 truncated (the pessimistic side to an
infinite loss), which must be small beside delta (:data:`PLD_COMPOSED_DELTA_MIN`). Outside,
the bracket excluded the exact epsilon (brute-force enumeration with mpmath), so it is
refused rather than reported.
"""

from __future__ import annotations

import math
import sys

from dprisk.models.checks import check_probability
from dprisk.models.scenario import scalar_value

__all__ = ["CKS_DELTA_MIN", "PLD_COMPOSED_DELTA_MIN", "PLD_DELTA_MIN", "PLD_EXPONENT_MAX",
           "cks_delta", "pld_composed_delta", "pld_delta", "pld_resolved"]

#: Smallest delta of the CKS conversion: the smallest normal double (module docstring).
CKS_DELTA_MIN = sys.float_info.min

#: Smallest delta of the PLD epsilons: ``dp-accounting`` truncates each discrete Gaussian where
#: its neglected noise mass is 1e-30 (its default ``truncation_bound``, 11.6 sigma), which
#: must stay negligible beside delta (at delta = 1e-30 the bracket of rho = 0.01, [1.57795,
#: 1.57797], excluded the exact 1.57687; at 1e-40, rho = 10, the upper end was 50, exact 69.87).
PLD_DELTA_MIN = 1e-20
#: Smallest delta of the PLD epsilon of two or more composed queries: ``dp-accounting``'s FFT
#: composition rounds delta by about 1e-16 absolute (-8.3e-17 measured for rhos [0.1, 0.2]
#: at epsilon 5, delta 7.7e-11) and keeps the 1e-15 of tail mass it truncates as an
#: infinite loss: for [0.1, 0.2] the bracket at delta 1e-13 was [5.726200, 5.726586], the
#: exact epsilon 5.726113 (mpmath), at 1e-14 ([0.25] x 4) [11.47006, 11.47382] against
#: 11.46421, and from about 5e-16 on its upper end is infinite (every delta in 1e-12 ..
#: 1e-6 kept the exact epsilon inside, four compositions).
PLD_COMPOSED_DELTA_MIN = 1e-12
#: Largest :math:`\varepsilon + \log(1/\delta)` of a PLD epsilon: ``dp-accounting`` sums
#: :math:`e^{-\text{loss}}` over the losses above epsilon, which fall below the normal doubles
#: beyond about 708 (rho = 800, delta = 0.3: [799.99998, 800] against the exact 799.643;
#: rho = 720: infinite).
PLD_EXPONENT_MAX = 700.0


def cks_delta(delta) -> float:
    """``delta`` checked for the CKS conversion: a probability, at least :data:`CKS_DELTA_MIN`."""
    delta = float(scalar_value(check_probability(delta, "delta"), "delta"))
    if delta < CKS_DELTA_MIN:
        raise ValueError(
            f"delta = {delta!r} is below {CKS_DELTA_MIN!r}, the smallest normal double: the "
            "CKS conversion's product delta * alpha loses its digits there (allowed range for "
            f"the CKS conversion: {CKS_DELTA_MIN!r} <= delta < 1; the Bun-Steinke conversion "
            "covers every delta)")
    return delta


def pld_delta(delta) -> float:
    """``delta`` checked for the PLD epsilons: a probability, at least :data:`PLD_DELTA_MIN`."""
    delta = float(scalar_value(check_probability(delta, "delta"), "delta"))
    if delta < PLD_DELTA_MIN:
        raise ValueError(
            f"delta = {delta!r} is below {PLD_DELTA_MIN:g}: dp-accounting's discrete Gaussian "
            "PLD neglects a noise mass of 1e-30 per query, not negligible there (allowed "
            f"range: {PLD_DELTA_MIN:g} <= delta < 1; the CKS and Bun-Steinke conversions "
            "cover every delta)")
    return delta


def pld_composed_delta(delta: float, queries: int) -> float:
    """``delta`` (checked by :func:`pld_delta`) when ``queries`` composed ones are resolved there.

    One query is not composed (:data:`PLD_DELTA_MIN` applies); two or more need ``delta >=``
    :data:`PLD_COMPOSED_DELTA_MIN`, else ``ValueError`` naming ``delta`` and both ranges.
    """
    if queries < 2 or delta >= PLD_COMPOSED_DELTA_MIN:
        return delta
    raise ValueError(
        f"delta = {delta!r} is below {PLD_COMPOSED_DELTA_MIN:g} for a composition of {queries} "
        "queries: dp-accounting composes their PLDs by FFT (rounding about 1e-16 in delta) and "
        "truncates tails of mass 1e-15, not negligible there (allowed range: "
        f"{PLD_COMPOSED_DELTA_MIN:g} <= delta < 1 for composed queries, {PLD_DELTA_MIN:g} for "
        "one; the CKS and Bun-Steinke conversions cover every delta)")


def pld_resolved(epsilon: float, delta: float) -> float:
    """``epsilon`` when dp-accounting resolves it (:data:`PLD_EXPONENT_MAX`), else ValueError."""
    if epsilon + math.log(1.0 / delta) < PLD_EXPONENT_MAX:
        return epsilon
    raise ValueError(
        f"rhos: the PLD epsilon at delta = {delta!r} is about {epsilon:.6g}, where "
        "dp-accounting's sums of exp(-loss) underflow (allowed range: queries whose epsilon "
        f"+ log(1/delta) < {PLD_EXPONENT_MAX:g}; the CKS and Bun-Steinke conversions cover "
        "them)")
