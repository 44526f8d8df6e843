"""``dr.two_level``: Two levels: the block and its block group, D = (x1*, x2*, y1*).

The names of this room without a prefix (``dr.two_level.exact_posterior``), each loaded from its
module on first use. ``import dprisk as dr; dir(dr.two_level)`` lists them.
"""

from __future__ import annotations

from dprisk._lazy import attach

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "exact_posterior": ("inference.two_level.exact", "exact_posterior"),
    "posterior_x1": ("inference.two_level.exact", "posterior_x1"),
    "Posterior": ("inference.two_level.exact", "TwoLevelPosterior"),
    "sample_posterior": ("inference.two_level.sampling", "sample_posterior"),
    "posterior_summary": ("inference.two_level.sampling", "posterior_summary"),
    "prior_sensitivity": ("inference.two_level.prior_check", "check_prior"),
    "p_correct": ("inference.studies.p_correct", "p_correct_two_level"),
    "marginal_summary": ("inference.studies.p_correct", "marginal_summary"),
    "bayes_accuracy": ("inference.privacy.worst_case", "bayes_accuracy_two_level"),
    "rho2_for_target": ("inference.privacy.budget_levels", "rho2_for_target"),
    "build_model": ("models.builders.two_level", "build_two_level_model"),
}

__getattr__, __dir__, __all__ = attach(__name__, _LAZY)
