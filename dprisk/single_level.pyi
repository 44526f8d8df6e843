"""The names of ``dr.single_level`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.privacy.worst_case import bayes_accuracy as bayes_accuracy
from dprisk.inference.single_level.closed_form import decision_threshold as decision_threshold
from dprisk.inference.single_level.closed_form import marginal_posterior as marginal_posterior
from dprisk.inference.single_level.closed_form import marginal_risk as marginal_risk
from dprisk.inference.single_level.closed_form import p_correct as p_correct
from dprisk.inference.single_level.closed_form import posterior as posterior
from dprisk.inference.single_level.closed_form import release_pmf as release_pmf
from dprisk.inference.single_level.closed_form import risk as risk
from dprisk.inference.single_level.sequential import sequential_posterior as sequential_posterior
from dprisk.inference.single_level.sequential import sequential_risk as sequential_risk
from dprisk.models.builders.single_level import build_single_level_model as build_model

__all__ = [
    "bayes_accuracy",
    "build_model",
    "decision_threshold",
    "marginal_posterior",
    "marginal_risk",
    "p_correct",
    "posterior",
    "release_pmf",
    "risk",
    "sequential_posterior",
    "sequential_risk",
]
