"""The names of ``dr.unknown_others`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.product.unknown_others import product_risk_unknown_others as product_risk
from dprisk.inference.unknown_others.closed_form import marginal_posterior as marginal_posterior
from dprisk.inference.unknown_others.closed_form import marginal_risk as marginal_risk
from dprisk.inference.unknown_others.closed_form import p_correct as p_correct
from dprisk.inference.unknown_others.closed_form import posterior as posterior
from dprisk.inference.unknown_others.closed_form import risk as risk
from dprisk.models.builders.unknown_others import build_unknown_others_model as build_model

__all__ = [
    "build_model",
    "marginal_posterior",
    "marginal_risk",
    "p_correct",
    "posterior",
    "product_risk",
    "risk",
]
