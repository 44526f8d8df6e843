"""``dr.unknown_others``: The adversary who does not know n others (each with c w.p. q).

The names of this room without a prefix (``dr.unknown_others.posterior``), each loaded from its
module on first use. ``import dprisk as dr; dir(dr.unknown_others)`` lists them.
"""

from __future__ import annotations

from dprisk._lazy import attach

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "posterior": ("inference.unknown_others.closed_form", "posterior"),
    "risk": ("inference.unknown_others.closed_form", "risk"),
    "marginal_posterior": ("inference.unknown_others.closed_form", "marginal_posterior"),
    "marginal_risk": ("inference.unknown_others.closed_form", "marginal_risk"),
    "p_correct": ("inference.unknown_others.closed_form", "p_correct"),
    "product_risk": ("inference.product.unknown_others", "product_risk_unknown_others"),
    "build_model": ("models.builders.unknown_others", "build_unknown_others_model"),
}

__getattr__, __dir__, __all__ = attach(__name__, _LAZY)
