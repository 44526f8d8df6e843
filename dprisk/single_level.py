"""``dr.single_level``: One level: the block's noisy count, η ~ DG(0, 1/(2ρ1)) (closed forms).

The names of this room without a prefix (``dr.single_level.posterior``), each loaded from its
module on first use. ``import dprisk as dr; dir(dr.single_level)`` lists them.
"""

from __future__ import annotations

from dprisk._lazy import attach

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "posterior": ("inference.single_level.closed_form", "posterior"),
    "risk": ("inference.single_level.closed_form", "risk"),
    "marginal_posterior": ("inference.single_level.closed_form", "marginal_posterior"),
    "marginal_risk": ("inference.single_level.closed_form", "marginal_risk"),
    "p_correct": ("inference.single_level.closed_form", "p_correct"),
    "decision_threshold": ("inference.single_level.closed_form", "decision_threshold"),
    "release_pmf": ("inference.single_level.closed_form", "release_pmf"),
    "sequential_posterior": ("inference.single_level.sequential", "sequential_posterior"),
    "sequential_risk": ("inference.single_level.sequential", "sequential_risk"),
    "bayes_accuracy": ("inference.privacy.worst_case", "bayes_accuracy"),
    "build_model": ("models.builders.single_level", "build_single_level_model"),
}

__getattr__, __dir__, __all__ = attach(__name__, _LAZY)
