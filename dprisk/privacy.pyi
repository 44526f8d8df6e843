"""The names of ``dr.privacy`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.privacy.accounting import census_epsilon_pld as census_epsilon_pld
from dprisk.inference.privacy.accounting import (
    census_epsilon_pld_bracket as census_epsilon_pld_bracket,
)
from dprisk.inference.privacy.accounting import epsilon_bun_steinke as epsilon_bun_steinke
from dprisk.inference.privacy.accounting import epsilon_cks as epsilon_cks
from dprisk.inference.privacy.accounting import epsilon_pld as epsilon_pld
from dprisk.inference.privacy.accounting import epsilon_pld_bracket as epsilon_pld_bracket
from dprisk.inference.privacy.budget import rho_for_target as rho_for_target
from dprisk.inference.privacy.budget_levels import census_rho_for_target as census_rho_for_target
from dprisk.inference.privacy.budget_levels import rho2_for_target as rho2_for_target
from dprisk.inference.privacy.decision_summary import decision_summary as decision_summary
from dprisk.inference.privacy.risk_profile import epsilon_for_prior as epsilon_for_prior
from dprisk.inference.privacy.risk_profile import pure_dp_budget as pure_dp_budget
from dprisk.inference.privacy.worst_case import census_worst_case as census_worst_case
from dprisk.inference.privacy.worst_case import worst_case_accuracy as worst_case_accuracy
from dprisk.models.mechanism.conversions import dp_to_zcdp as dp_to_zcdp
from dprisk.models.mechanism.conversions import zcdp_to_dp as zcdp_to_dp

__all__ = [
    "census_epsilon_pld",
    "census_epsilon_pld_bracket",
    "census_rho_for_target",
    "census_worst_case",
    "decision_summary",
    "dp_to_zcdp",
    "epsilon_bun_steinke",
    "epsilon_cks",
    "epsilon_for_prior",
    "epsilon_pld",
    "epsilon_pld_bracket",
    "pure_dp_budget",
    "rho2_for_target",
    "rho_for_target",
    "worst_case_accuracy",
    "zcdp_to_dp",
]
