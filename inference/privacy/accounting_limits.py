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
stay normal doubles. Outside, the bracket excluded the exact epsilon (brute-force
enumeration with mpmath), so it is refused rather than reported.
"""

from __future__ import annotations

import math
import sys

from dprisk.models.checks import check_probability
from dprisk.models.scenario import scalar_value

__all__ = ["CKS_DELTA_MIN", "PLD_DELTA_MIN", "PLD_EXPONENT_MAX", "cks_delta", "pld_delta",
           "pld_resolved"]

#: Smallest delta of the CKS conversion: the smallest normal double (module docstring).
CKS_DELTA_MIN = sys.float_info.min

#: Smallest delta of the PLD epsilons: ``dp-accounting`` truncates each discrete Gaussian where
#: its neglected noise mass is 1e-30 (its default ``truncation_bound``, 11.6 sigma), which
#: must stay negligible beside delta (at delta = 1e-30 the bracket of rho = 0.01, [1.57795,
#: 1.57797], excluded the exact 1.57687; at 1e-40, rho = 10, the upper end was 50, exact 69.87).
PLD_DELTA_MIN = 1e-20
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


def pld_resolved(epsilon: float, delta: float) -> float:
    """``epsilon`` when dp-accounting resolves it (:data:`PLD_EXPONENT_MAX`), else ValueError."""
    if epsilon + math.log(1.0 / delta) < PLD_EXPONENT_MAX:
        return epsilon
    raise ValueError(
        f"rhos: the PLD epsilon at delta = {delta!r} is about {epsilon:.6g}, where "
        "dp-accounting's sums of exp(-loss) underflow (allowed range: queries whose epsilon "
        f"+ log(1/delta) < {PLD_EXPONENT_MAX:g}; the CKS and Bun-Steinke conversions cover "
        "them)")
