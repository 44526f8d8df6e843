"""The names of ``dr.studies`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.studies.finite_draws import finite_draws_p_correct as finite_draws_p_correct
from dprisk.inference.studies.monte_carlo import MCResult as MCResult
from dprisk.inference.studies.monte_carlo import simulate_p_correct as simulate_p_correct
from dprisk.inference.studies.p_correct import marginal_summary as marginal_summary
from dprisk.inference.sweeps.sweep import sweep as sweep
from dprisk.inference.sweeps.sweep import sweep_table as sweep_table
from dprisk.inference.two_level.prior_check import check_prior as prior_sensitivity
from dprisk.validation.crosschecks.crosscheck import crosscheck as crosscheck
from dprisk.validation.crosschecks.diagnostics import convergence_report as convergence_report

__all__ = [
    "MCResult",
    "convergence_report",
    "crosscheck",
    "finite_draws_p_correct",
    "marginal_summary",
    "prior_sensitivity",
    "simulate_p_correct",
    "sweep",
    "sweep_table",
]
