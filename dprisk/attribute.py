"""``dr.attribute``: The whole record: the target's cell among the K cells of a noisy histogram.

The names of this room without a prefix (``dr.attribute.cell_posterior``), each loaded from its
module on first use. ``import dprisk as dr; dir(dr.attribute)`` lists them.
"""

from __future__ import annotations

from dprisk._lazy import attach

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "cell_posterior": ("inference.attribute.posterior", "cell_posterior"),
    "map_cell": ("inference.attribute.posterior", "map_cell"),
    "p_map_correct": ("inference.attribute.design", "p_map_correct"),
    "expected_true_posterior": ("inference.attribute.design", "expected_true_posterior"),
    "strategy_measures": ("inference.attribute.strategy", "strategy_measures"),
    "census_block_design": ("inference.attribute.strategy", "census_block_design"),
    "BlockGroup": ("inference.attribute.strategy", "BlockGroup"),
    "build_model": ("models.builders.attribute", "build_attribute_model"),
}

__getattr__, __dir__, __all__ = attach(__name__, _LAZY)
