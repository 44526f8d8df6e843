"""``dr.privacy``: accounting (ε of a release), budgets (ρ for a risk target), the worst case.

The names of this room without a prefix (``dr.privacy.epsilon_bun_steinke``), each loaded from its
module on first use. ``import dprisk as dr; dir(dr.privacy)`` lists them.
"""

from __future__ import annotations

from dprisk._lazy import attach

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "epsilon_bun_steinke": ("inference.privacy.accounting", "epsilon_bun_steinke"),
    "epsilon_cks": ("inference.privacy.accounting", "epsilon_cks"),
    "epsilon_pld": ("inference.privacy.accounting", "epsilon_pld"),
    "epsilon_pld_bracket": ("inference.privacy.accounting", "epsilon_pld_bracket"),
    "census_epsilon_pld": ("inference.privacy.accounting", "census_epsilon_pld"),
    "census_epsilon_pld_bracket": ("inference.privacy.accounting", "census_epsilon_pld_bracket"),
    "rho_for_target": ("inference.privacy.budget", "rho_for_target"),
    "rho2_for_target": ("inference.privacy.budget_levels", "rho2_for_target"),
    "census_rho_for_target": ("inference.privacy.budget_levels", "census_rho_for_target"),
    "pure_dp_budget": ("inference.privacy.risk_profile", "pure_dp_budget"),
    "epsilon_for_prior": ("inference.privacy.risk_profile", "epsilon_for_prior"),
    "worst_case_accuracy": ("inference.privacy.worst_case", "worst_case_accuracy"),
    "census_worst_case": ("inference.privacy.worst_case", "census_worst_case"),
    "decision_summary": ("inference.privacy.decision_summary", "decision_summary"),
    "zcdp_to_dp": ("models.mechanism.conversions", "zcdp_to_dp"),
    "dp_to_zcdp": ("models.mechanism.conversions", "dp_to_zcdp"),
}

__getattr__, __dir__, __all__ = attach(__name__, _LAZY)
