"""The public API of ``dprisk`` for editors and type checkers (``_LAZY`` and the namespaces)."""

from dprisk import attribute as attribute
from dprisk import nested as nested
from dprisk import population as population
from dprisk import privacy as privacy
from dprisk import product as product
from dprisk import single_level as single_level
from dprisk import studies as studies
from dprisk import two_level as two_level
from dprisk import unknown_others as unknown_others
from dprisk.explore.app import serve as serve_explorer
from dprisk.explore.notebook import live as live
from dprisk.inference.privacy.decision_summary import decision_summary as decision_summary
from dprisk.inference.single_level.closed_form import marginal_posterior as marginal_posterior
from dprisk.inference.single_level.closed_form import marginal_risk as marginal_risk
from dprisk.inference.single_level.closed_form import p_correct as p_correct
from dprisk.inference.single_level.closed_form import posterior as posterior
from dprisk.inference.single_level.closed_form import risk as risk
from dprisk.inference.sweeps.sweep import sweep as sweep
from dprisk.inference.two_level.exact import exact_posterior as exact_posterior
from dprisk.inference.two_level.sampling import sample_posterior as sample_posterior
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
    "ImproperUniform",
    "PointMass",
    "Release",
    "Scenario",
    "TruncatedUniform",
    "UserPrior",
    "X2Prior",
    "__version__",
    "attribute",
    "census_level",
    "census_rhos",
    "convergence_report",
    "crosscheck",
    "decision_summary",
    "dp_to_zcdp",
    "exact_posterior",
    "live",
    "load_prior",
    "marginal_posterior",
    "marginal_risk",
    "nested",
    "p_correct",
    "parse_prior",
    "parse_rho",
    "population",
    "posterior",
    "privacy",
    "product",
    "risk",
    "sample_posterior",
    "serve_explorer",
    "single_level",
    "studies",
    "sweep",
    "two_level",
    "unknown_others",
    "write_report",
    "zcdp_to_dp",
]
