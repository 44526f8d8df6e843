"""Bayesian disclosure-risk assessment of differentially private count data.

``import dprisk as dr`` gives the verbs users call, as ``pm.sample`` and ``az.summary`` do::

    import dprisk as dr

    block = dr.census_level("block")
    dr.p_correct(block.rho, p=0.5)                     # single level, closed form
    post = dr.exact_posterior(3, 5, 2, rho1=block.rho, rho2=0.25, d=3)
    draws = dr.sample_posterior(3, 5, 2, rho1=block.rho, rho2=0.25, d=3, method="gibbs")
    dr.convergence_report(draws)

Each name is loaded from its room on first use (Scientific Python SPEC 1), so ``import dprisk``
stays as cheap as importing nothing; ``__init__.pyi`` lists the same names for editors and type
checkers. The module tree below (``dprisk.models``, ``dprisk.inference``, ``dprisk.validation``,
``dprisk.runtime``, ``dprisk.cli``) is internal and may move; see docs/architecture.md.
"""

from __future__ import annotations

import importlib

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "Scenario": ("models.scenario", "Scenario"),
    "Release": ("models.scenario", "Release"),
    "census_level": ("models.census.allocation", "census_level"),
    "census_rhos": ("models.census.allocation", "census_rhos"),
    "CensusLevel": ("models.census.allocation", "CensusLevel"),
    "parse_rho": ("models.census.allocation", "parse_rho"),
    "X2Prior": ("models.priors.library", "X2Prior"),
    "ImproperUniform": ("models.priors.library", "ImproperUniform"),
    "TruncatedUniform": ("models.priors.library", "TruncatedUniform"),
    "PointMass": ("models.priors.library", "PointMass"),
    "UserPrior": ("models.priors.library", "UserPrior"),
    "load_prior": ("models.priors.library", "load_prior"),
    "parse_prior": ("models.priors.library", "parse_prior"),
    "zcdp_to_dp": ("models.mechanism.conversions", "zcdp_to_dp"),
    "dp_to_zcdp": ("models.mechanism.conversions", "dp_to_zcdp"),
    "build_single_level_model": ("models.builders.single_level", "build_single_level_model"),
    "build_hierarchical_model": ("models.builders.two_level", "build_hierarchical_model"),
    "build_multilevel_model": ("models.builders.nested", "build_multilevel_model"),
    "build_unknown_others_model": ("models.builders.unknown_others", "build_unknown_others_model"),
    "build_attribute_model": ("models.builders.attribute", "build_attribute_model"),
    "posterior": ("inference.single_level.closed_form", "posterior"),
    "risk": ("inference.single_level.closed_form", "risk"),
    "marginal_posterior": ("inference.single_level.closed_form", "marginal_posterior"),
    "marginal_risk": ("inference.single_level.closed_form", "marginal_risk"),
    "p_correct": ("inference.single_level.closed_form", "p_correct"),
    "decision_threshold": ("inference.single_level.closed_form", "decision_threshold"),
    "release_pmf": ("inference.single_level.closed_form", "release_pmf"),
    "sequential_posterior": ("inference.single_level.sequential", "sequential_posterior"),
    "sequential_risk": ("inference.single_level.sequential", "sequential_risk"),
    "exact_posterior": ("inference.two_level.exact", "exact_posterior"),
    "posterior_x1": ("inference.two_level.exact", "posterior_x1"),
    "HierarchicalPosterior": ("inference.two_level.exact", "HierarchicalPosterior"),
    "sample_posterior": ("inference.two_level.sampling", "sample_posterior"),
    "posterior_summary": ("inference.two_level.sampling", "posterior_summary"),
    "check_prior": ("inference.two_level.prior_check", "check_prior"),
    "nested_exact_posterior": ("inference.nested.posterior", "exact_posterior"),
    "nested_gibbs_sample": ("inference.nested.posterior", "gibbs_sample"),
    "posterior_unique_levels": ("inference.nested.unique_levels", "posterior_unique_levels"),
    "marginal_unique_levels": ("inference.nested.unique_levels", "marginal_unique_levels"),
    "p_correct_unique_levels": ("inference.nested.unique_levels", "p_correct_unique_levels"),
    "p_correct_hierarchical": ("inference.studies.p_correct", "p_correct_hierarchical"),
    "marginal_summary": ("inference.studies.p_correct", "marginal_summary"),
    "simulate_p_correct": ("inference.studies.monte_carlo", "simulate_p_correct"),
    "MCResult": ("inference.studies.monte_carlo", "MCResult"),
    "finite_draws_p_correct": ("inference.studies.finite_draws", "finite_draws_p_correct"),
    "sweep": ("inference.sweeps.sweep", "sweep"),
    "sweep_table": ("inference.sweeps.sweep", "sweep_table"),
    "epsilon_bun_steinke": ("inference.privacy.accounting", "epsilon_bun_steinke"),
    "epsilon_cks": ("inference.privacy.accounting", "epsilon_cks"),
    "epsilon_pld": ("inference.privacy.accounting", "epsilon_pld"),
    "census_epsilon_pld": ("inference.privacy.accounting", "census_epsilon_pld"),
    "epsilon_pld_bracket": ("inference.privacy.accounting", "epsilon_pld_bracket"),
    "census_epsilon_pld_bracket": ("inference.privacy.accounting", "census_epsilon_pld_bracket"),
    "rho_for_target": ("inference.privacy.budget", "rho_for_target"),
    "rho2_for_target": ("inference.privacy.budget_levels", "rho2_for_target"),
    "census_rho_for_target": ("inference.privacy.budget_levels", "census_rho_for_target"),
    "pure_dp_budget": ("inference.privacy.risk_profile", "pure_dp_budget"),
    "epsilon_for_prior": ("inference.privacy.risk_profile", "epsilon_for_prior"),
    "worst_case_accuracy": ("inference.privacy.worst_case", "worst_case_accuracy"),
    "bayes_accuracy": ("inference.privacy.worst_case", "bayes_accuracy"),
    "bayes_accuracy_hierarchical": ("inference.privacy.worst_case", "bayes_accuracy_hierarchical"),
    "census_worst_case": ("inference.privacy.worst_case", "census_worst_case"),
    "decision_summary": ("inference.privacy.decision_summary", "decision_summary"),
    "cell_posterior": ("inference.attribute.posterior", "cell_posterior"),
    "map_cell": ("inference.attribute.posterior", "map_cell"),
    "p_map_correct": ("inference.attribute.design", "p_map_correct"),
    "expected_true_posterior": ("inference.attribute.design", "expected_true_posterior"),
    "strategy_measures": ("inference.attribute.strategy", "strategy_measures"),
    "unknown_others_posterior": ("inference.unknown_others.closed_form", "posterior"),
    "unknown_others_risk": ("inference.unknown_others.closed_form", "risk"),
    "unknown_others_marginal_posterior": ("inference.unknown_others.closed_form",
                                          "marginal_posterior"),
    "unknown_others_marginal_risk": ("inference.unknown_others.closed_form", "marginal_risk"),
    "unknown_others_p_correct": ("inference.unknown_others.closed_form", "p_correct"),
    "product_risk": ("inference.product.exact", "product_risk"),
    "product_table": ("inference.product.exact", "product_table"),
    "product_likelihood_mc": ("inference.product.monte_carlo", "product_likelihood_mc"),
    "product_risk_unknown_others": ("inference.product.unknown_others",
                                    "product_risk_unknown_others"),
    "HistogramTree": ("inference.product.histogram_tree", "HistogramTree"),
    "histogram_top_down": ("inference.product.histogram_tree", "top_down"),
    "kcell_product_map_correct": ("inference.product.histogram_attribute", "p_map_correct_mc"),
    "kcell_product_map_correct_exact": ("inference.product.histogram_attribute",
                                        "p_map_correct_exact"),
    "live": ("explore.notebook", "live"),
    "serve_explorer": ("explore.app", "serve"),
    "convergence_report": ("validation.crosschecks.diagnostics", "convergence_report"),
    "ConvergenceReport": ("validation.crosschecks.diagnostics", "ConvergenceReport"),
    "crosscheck": ("validation.crosschecks.crosscheck", "crosscheck"),
    "write_report": ("validation.report.build", "write_report"),
}

__all__ = sorted([*_LAZY, "__version__"])


def __getattr__(name: str):
    """Load a public name from its room on first use; ``__version__`` from the metadata."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("dp-disclosure-risk")
        except PackageNotFoundError:  # pragma: no cover - a source tree without install
            value = "0+unknown"
    elif name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(f"dprisk.{module}"), attribute)
    else:
        raise AttributeError(f"module 'dprisk' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
