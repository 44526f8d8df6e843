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
import warnings

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
    "posterior": ("inference.single_level.closed_form", "posterior"),
    "risk": ("inference.single_level.closed_form", "risk"),
    "marginal_posterior": ("inference.single_level.closed_form", "marginal_posterior"),
    "marginal_risk": ("inference.single_level.closed_form", "marginal_risk"),
    "p_correct": ("inference.single_level.closed_form", "p_correct"),
    "exact_posterior": ("inference.two_level.exact", "exact_posterior"),
    "sample_posterior": ("inference.two_level.sampling", "sample_posterior"),
    "sweep": ("inference.sweeps.sweep", "sweep"),
    "decision_summary": ("inference.privacy.decision_summary", "decision_summary"),
    "live": ("explore.notebook", "live"),
    "serve_explorer": ("explore.app", "serve"),
    "convergence_report": ("validation.crosschecks.diagnostics", "convergence_report"),
    "ConvergenceReport": ("validation.crosschecks.diagnostics", "ConvergenceReport"),
    "crosscheck": ("validation.crosschecks.crosscheck", "crosscheck"),
    "write_report": ("validation.report.build", "write_report"),
}

#: The rooms as namespaces, as PyMC has ``pm.sampling`` and ``pm.math``: ``dr.two_level.p_correct``.
NAMESPACES = ("single_level", "two_level", "nested", "unknown_others", "attribute", "product",
              "population", "privacy", "studies")

#: Old flat name -> its name in a namespace. The old name keeps working and warns once per
#: process with a ``FutureWarning`` naming the new one (docs/api/renames.md lists them all).
RENAMED: dict[str, str] = {
    "HierarchicalPosterior": "two_level.Posterior",
    "HistogramTree": "product.HistogramTree",
    "MCResult": "studies.MCResult",
    "bayes_accuracy": "single_level.bayes_accuracy",
    "bayes_accuracy_hierarchical": "two_level.bayes_accuracy",
    "build_attribute_model": "attribute.build_model",
    "build_hierarchical_model": "two_level.build_model",
    "build_multilevel_model": "nested.build_model",
    "build_single_level_model": "single_level.build_model",
    "build_unknown_others_model": "unknown_others.build_model",
    "cell_posterior": "attribute.cell_posterior",
    "census_epsilon_pld": "privacy.census_epsilon_pld",
    "census_epsilon_pld_bracket": "privacy.census_epsilon_pld_bracket",
    "census_rho_for_target": "privacy.census_rho_for_target",
    "census_worst_case": "privacy.census_worst_case",
    "check_prior": "two_level.prior_sensitivity",
    "decision_threshold": "single_level.decision_threshold",
    "epsilon_bun_steinke": "privacy.epsilon_bun_steinke",
    "epsilon_cks": "privacy.epsilon_cks",
    "epsilon_for_prior": "privacy.epsilon_for_prior",
    "epsilon_pld": "privacy.epsilon_pld",
    "epsilon_pld_bracket": "privacy.epsilon_pld_bracket",
    "expected_true_posterior": "attribute.expected_true_posterior",
    "finite_draws_p_correct": "studies.finite_draws_p_correct",
    "histogram_top_down": "product.top_down",
    "kcell_product_map_correct": "product.kcell_map_correct",
    "kcell_product_map_correct_exact": "product.kcell_map_correct_exact",
    "map_cell": "attribute.map_cell",
    "marginal_summary": "two_level.marginal_summary",
    "marginal_unique_levels": "nested.marginal_unique_levels",
    "nested_exact_posterior": "nested.exact_posterior",
    "nested_gibbs_sample": "nested.gibbs_sample",
    "p_correct_hierarchical": "two_level.p_correct",
    "p_correct_unique_levels": "nested.p_correct_unique_levels",
    "p_map_correct": "attribute.p_map_correct",
    "posterior_summary": "two_level.posterior_summary",
    "posterior_unique_levels": "nested.posterior_unique_levels",
    "posterior_x1": "two_level.posterior_x1",
    "product_likelihood_mc": "product.likelihood_mc",
    "product_risk": "product.risk",
    "product_risk_unknown_others": "product.risk_unknown_others",
    "product_table": "product.table",
    "pure_dp_budget": "privacy.pure_dp_budget",
    "release_pmf": "single_level.release_pmf",
    "rho2_for_target": "privacy.rho2_for_target",
    "rho_for_target": "privacy.rho_for_target",
    "sequential_posterior": "single_level.sequential_posterior",
    "sequential_risk": "single_level.sequential_risk",
    "simulate_p_correct": "studies.simulate_p_correct",
    "strategy_measures": "attribute.strategy_measures",
    "sweep_table": "studies.sweep_table",
    "unknown_others_marginal_posterior": "unknown_others.marginal_posterior",
    "unknown_others_marginal_risk": "unknown_others.marginal_risk",
    "unknown_others_p_correct": "unknown_others.p_correct",
    "unknown_others_posterior": "unknown_others.posterior",
    "unknown_others_risk": "unknown_others.risk",
    "worst_case_accuracy": "privacy.worst_case_accuracy",
}
_warned: set[str] = set()

__all__ = sorted([*_LAZY, *NAMESPACES, "__version__"])


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
    elif name in NAMESPACES:
        value = importlib.import_module(f"dprisk.{name}")
    elif name in RENAMED:
        space, new = RENAMED[name].split(".")
        if name not in _warned:
            _warned.add(name)
            warnings.warn(f"dprisk.{name} is deprecated; use dprisk.{space}.{new}",
                          FutureWarning, stacklevel=2)
        return getattr(importlib.import_module(f"dprisk.{space}"), new)  # not cached: warns
    else:
        raise AttributeError(f"module 'dprisk' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


# xarray asks whether each array it wraps is a Dask array, and imports Dask to answer (about
# 1 s of CPU in every process that makes a Dataset); the answer needs no import while Dask is
# not loaded (dprisk.runtime.deferred_dask: put into xarray when, or as soon as, it is loaded).
from dprisk.runtime.deferred_dask import install as _install_deferred_dask  # noqa: E402

_install_deferred_dask()
