"""``dr.product``: The published product: post-processed (TopDown) counts.

The names of this room without a prefix (``dr.product.risk``), each loaded from its
module on first use. ``import dprisk as dr; dir(dr.product)`` lists them.
"""

from __future__ import annotations

from dprisk._lazy import attach

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "risk": ("inference.product.exact", "product_risk"),
    "table": ("inference.product.exact", "product_table"),
    "likelihood_mc": ("inference.product.monte_carlo", "product_likelihood_mc"),
    "risk_mc": ("inference.product.monte_carlo_risk", "product_risk_mc"),
    "risk_unknown_others": ("inference.product.unknown_others", "product_risk_unknown_others"),
    "HistogramTree": ("inference.product.histogram_tree", "HistogramTree"),
    "regular_tree": ("inference.product.histogram_tree", "regular_tree"),
    "simulate_measurements": ("inference.product.histogram_tree", "simulate_measurements"),
    "top_down": ("inference.product.histogram_tree", "top_down"),
    "kcell_map_correct": ("inference.product.histogram_attribute", "p_map_correct_mc"),
    "kcell_map_correct_exact": ("inference.product.histogram_attribute", "p_map_correct_exact"),
    "cell_tables": ("inference.product.histogram_attribute", "cell_tables"),
}

__getattr__, __dir__, __all__ = attach(__name__, _LAZY)
