"""The names of ``dr.two_level`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.privacy.budget_levels import rho2_for_target as rho2_for_target
from dprisk.inference.privacy.worst_case import bayes_accuracy_two_level as bayes_accuracy
from dprisk.inference.studies.p_correct import marginal_summary as marginal_summary
from dprisk.inference.studies.p_correct import p_correct_two_level as p_correct
from dprisk.inference.two_level.exact import TwoLevelPosterior as Posterior
from dprisk.inference.two_level.exact import exact_posterior as exact_posterior
from dprisk.inference.two_level.exact import posterior_x1 as posterior_x1
from dprisk.inference.two_level.prior_check import check_prior as prior_sensitivity
from dprisk.inference.two_level.sampling import posterior_summary as posterior_summary
from dprisk.inference.two_level.sampling import sample_posterior as sample_posterior
from dprisk.models.builders.two_level import build_two_level_model as build_model

__all__ = [
    "Posterior",
    "bayes_accuracy",
    "build_model",
    "exact_posterior",
    "marginal_summary",
    "p_correct",
    "posterior_summary",
    "posterior_x1",
    "prior_sensitivity",
    "rho2_for_target",
    "sample_posterior",
]
