"""The names of ``dr.nested`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.nested.posterior import exact_posterior as exact_posterior
from dprisk.inference.nested.posterior import gibbs_sample as gibbs_sample
from dprisk.inference.nested.unique_levels import marginal_unique_levels as marginal_unique_levels
from dprisk.inference.nested.unique_levels import p_correct_unique_levels as p_correct_unique_levels
from dprisk.inference.nested.unique_levels import posterior_unique_levels as posterior_unique_levels
from dprisk.inference.privacy.worst_case import (
    bayes_accuracy_levels as bayes_accuracy_unique_levels,
)
from dprisk.models.builders.nested import build_nested_model as build_model

__all__ = [
    "bayes_accuracy_unique_levels",
    "build_model",
    "exact_posterior",
    "gibbs_sample",
    "marginal_unique_levels",
    "p_correct_unique_levels",
    "posterior_unique_levels",
]
