"""``dr.studies``: Studies: P[correct] by simulation, finite draws, sweeps over grids, cross-checks.

The names of this room without a prefix (``dr.studies.simulate_p_correct``), each loaded from its
module on first use. ``import dprisk as dr; dir(dr.studies)`` lists them.
"""

from __future__ import annotations

from dprisk._lazy import attach

#: Public name -> (module below ``dprisk``, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "simulate_p_correct": ("inference.studies.monte_carlo", "simulate_p_correct"),
    "MCResult": ("inference.studies.monte_carlo", "MCResult"),
    "finite_draws_p_correct": ("inference.studies.finite_draws", "finite_draws_p_correct"),
    "marginal_summary": ("inference.studies.p_correct", "marginal_summary"),
    "sweep": ("inference.sweeps.sweep", "sweep"),
    "sweep_table": ("inference.sweeps.sweep", "sweep_table"),
    "crosscheck": ("validation.crosschecks.crosscheck", "crosscheck"),
    "convergence_report": ("validation.crosschecks.diagnostics", "convergence_report"),
    "prior_sensitivity": ("inference.two_level.prior_check", "check_prior"),
}

__getattr__, __dir__, __all__ = attach(__name__, _LAZY)
