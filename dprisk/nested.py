"""``dr.nested``: Nested levels: h levels of the hierarchy, and a target unique at ℓ levels.

The names of this room without a prefix (``dr.nested.exact_posterior``), each loaded from its
module on first use. ``import dprisk as dr; dir(dr.nested)`` lists them.
"""

from __future__ import annotations

from dprisk._lazy import attach

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "exact_posterior": ("inference.nested.posterior", "exact_posterior"),
    "gibbs_sample": ("inference.nested.posterior", "gibbs_sample"),
    "posterior_unique_levels": ("inference.nested.unique_levels", "posterior_unique_levels"),
    "marginal_unique_levels": ("inference.nested.unique_levels", "marginal_unique_levels"),
    "p_correct_unique_levels": ("inference.nested.unique_levels", "p_correct_unique_levels"),
    "bayes_accuracy_unique_levels": ("inference.privacy.worst_case", "bayes_accuracy_levels"),
    "build_model": ("models.builders.nested", "build_nested_model"),
}

__getattr__, __dir__, __all__ = attach(__name__, _LAZY)
