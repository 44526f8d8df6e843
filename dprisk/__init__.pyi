"""The public API of ``dprisk`` for editors and type checkers (the names of ``_LAZY``)."""

from dprisk.explore.app import serve as serve_explorer
from dprisk.explore.notebook import live as live
from dprisk.inference.attribute.design import expected_true_posterior as expected_true_posterior
from dprisk.inference.attribute.design import p_map_correct as p_map_correct
from dprisk.inference.attribute.posterior import cell_posterior as cell_posterior
from dprisk.inference.attribute.posterior import map_cell as map_cell
from dprisk.inference.attribute.strategy import strategy_measures as strategy_measures
from dprisk.inference.nested.posterior import exact_posterior as nested_exact_posterior
from dprisk.inference.nested.posterior import gibbs_sample as nested_gibbs_sample
from dprisk.inference.nested.unique_levels import marginal_unique_levels as marginal_unique_levels
from dprisk.inference.nested.unique_levels import p_correct_unique_levels as p_correct_unique_levels
from dprisk.inference.nested.unique_levels import posterior_unique_levels as posterior_unique_levels
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
from dprisk.inference.privacy.worst_case import bayes_accuracy as bayes_accuracy
from dprisk.inference.privacy.worst_case import (
    bayes_accuracy_hierarchical as bayes_accuracy_hierarchical,
)
from dprisk.inference.privacy.worst_case import census_worst_case as census_worst_case
from dprisk.inference.privacy.worst_case import worst_case_accuracy as worst_case_accuracy
from dprisk.inference.product.exact import product_risk as product_risk
from dprisk.inference.product.exact import product_table as product_table
from dprisk.inference.product.histogram_attribute import (
    p_map_correct_exact as kcell_product_map_correct_exact,
)
from dprisk.inference.product.histogram_attribute import (
    p_map_correct_mc as kcell_product_map_correct,
)
from dprisk.inference.product.histogram_tree import HistogramTree as HistogramTree
from dprisk.inference.product.histogram_tree import top_down as histogram_top_down
from dprisk.inference.product.monte_carlo import product_likelihood_mc as product_likelihood_mc
from dprisk.inference.product.unknown_others import (
    product_risk_unknown_others as product_risk_unknown_others,
)
from dprisk.inference.single_level.closed_form import decision_threshold as decision_threshold
from dprisk.inference.single_level.closed_form import marginal_posterior as marginal_posterior
from dprisk.inference.single_level.closed_form import marginal_risk as marginal_risk
from dprisk.inference.single_level.closed_form import p_correct as p_correct
from dprisk.inference.single_level.closed_form import posterior as posterior
from dprisk.inference.single_level.closed_form import release_pmf as release_pmf
from dprisk.inference.single_level.closed_form import risk as risk
from dprisk.inference.single_level.sequential import sequential_posterior as sequential_posterior
from dprisk.inference.single_level.sequential import sequential_risk as sequential_risk
from dprisk.inference.studies.finite_draws import finite_draws_p_correct as finite_draws_p_correct
from dprisk.inference.studies.monte_carlo import MCResult as MCResult
from dprisk.inference.studies.monte_carlo import simulate_p_correct as simulate_p_correct
from dprisk.inference.studies.p_correct import marginal_summary as marginal_summary
from dprisk.inference.studies.p_correct import p_correct_hierarchical as p_correct_hierarchical
from dprisk.inference.sweeps.sweep import sweep as sweep
from dprisk.inference.sweeps.sweep import sweep_table as sweep_table
from dprisk.inference.two_level.exact import HierarchicalPosterior as HierarchicalPosterior
from dprisk.inference.two_level.exact import exact_posterior as exact_posterior
from dprisk.inference.two_level.exact import posterior_x1 as posterior_x1
from dprisk.inference.two_level.prior_check import check_prior as check_prior
from dprisk.inference.two_level.sampling import posterior_summary as posterior_summary
from dprisk.inference.two_level.sampling import sample_posterior as sample_posterior
from dprisk.inference.unknown_others.closed_form import (
    marginal_posterior as unknown_others_marginal_posterior,
)
from dprisk.inference.unknown_others.closed_form import (
    marginal_risk as unknown_others_marginal_risk,
)
from dprisk.inference.unknown_others.closed_form import p_correct as unknown_others_p_correct
from dprisk.inference.unknown_others.closed_form import posterior as unknown_others_posterior
from dprisk.inference.unknown_others.closed_form import risk as unknown_others_risk
from dprisk.models.builders.attribute import build_attribute_model as build_attribute_model
from dprisk.models.builders.nested import build_multilevel_model as build_multilevel_model
from dprisk.models.builders.single_level import build_single_level_model as build_single_level_model
from dprisk.models.builders.two_level import build_hierarchical_model as build_hierarchical_model
from dprisk.models.builders.unknown_others import (
    build_unknown_others_model as build_unknown_others_model,
)
from dprisk.models.census.allocation import CensusLevel as CensusLevel
from dprisk.models.census.allocation import census_level as census_level
from dprisk.models.census.allocation import census_rhos as census_rhos
from dprisk.models.census.allocation import parse_rho as parse_rho
from dprisk.models.mechanism.conversions import dp_to_zcdp as dp_to_zcdp
from dprisk.models.mechanism.conversions import zcdp_to_dp as zcdp_to_dp
from dprisk.models.priors.library import ImproperUniform as ImproperUniform
from dprisk.models.priors.library import PointMass as PointMass
from dprisk.models.priors.library import TruncatedUniform as TruncatedUniform
from dprisk.models.priors.library import UserPrior as UserPrior
from dprisk.models.priors.library import X2Prior as X2Prior
from dprisk.models.priors.library import load_prior as load_prior
from dprisk.models.priors.library import parse_prior as parse_prior
from dprisk.models.scenario import Release as Release
from dprisk.models.scenario import Scenario as Scenario
from dprisk.validation.crosschecks.crosscheck import crosscheck as crosscheck
from dprisk.validation.crosschecks.diagnostics import ConvergenceReport as ConvergenceReport
from dprisk.validation.crosschecks.diagnostics import convergence_report as convergence_report
from dprisk.validation.report.build import write_report as write_report

__version__: str

__all__ = [
    "CensusLevel",
    "ConvergenceReport",
    "HierarchicalPosterior",
    "HistogramTree",
    "ImproperUniform",
    "MCResult",
    "PointMass",
    "Release",
    "Scenario",
    "TruncatedUniform",
    "UserPrior",
    "X2Prior",
    "__version__",
    "bayes_accuracy",
    "bayes_accuracy_hierarchical",
    "build_attribute_model",
    "build_hierarchical_model",
    "build_multilevel_model",
    "build_single_level_model",
    "build_unknown_others_model",
    "cell_posterior",
    "census_epsilon_pld",
    "census_epsilon_pld_bracket",
    "census_level",
    "census_rho_for_target",
    "census_rhos",
    "census_worst_case",
    "check_prior",
    "convergence_report",
    "crosscheck",
    "decision_summary",
    "decision_threshold",
    "dp_to_zcdp",
    "epsilon_bun_steinke",
    "epsilon_cks",
    "epsilon_for_prior",
    "epsilon_pld",
    "epsilon_pld_bracket",
    "exact_posterior",
    "expected_true_posterior",
    "finite_draws_p_correct",
    "histogram_top_down",
    "kcell_product_map_correct",
    "kcell_product_map_correct_exact",
    "live",
    "load_prior",
    "map_cell",
    "marginal_posterior",
    "marginal_risk",
    "marginal_summary",
    "marginal_unique_levels",
    "nested_exact_posterior",
    "nested_gibbs_sample",
    "p_correct",
    "p_correct_hierarchical",
    "p_correct_unique_levels",
    "p_map_correct",
    "parse_prior",
    "parse_rho",
    "posterior",
    "posterior_summary",
    "posterior_unique_levels",
    "posterior_x1",
    "product_likelihood_mc",
    "product_risk",
    "product_risk_unknown_others",
    "product_table",
    "pure_dp_budget",
    "release_pmf",
    "rho2_for_target",
    "rho_for_target",
    "risk",
    "sample_posterior",
    "sequential_posterior",
    "sequential_risk",
    "serve_explorer",
    "simulate_p_correct",
    "strategy_measures",
    "sweep",
    "sweep_table",
    "unknown_others_marginal_posterior",
    "unknown_others_marginal_risk",
    "unknown_others_p_correct",
    "unknown_others_posterior",
    "unknown_others_risk",
    "worst_case_accuracy",
    "write_report",
    "zcdp_to_dp",
]
