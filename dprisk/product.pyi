"""The names of ``dr.product`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.product.exact import product_risk as risk
from dprisk.inference.product.exact import product_table as table
from dprisk.inference.product.histogram_attribute import (
    p_map_correct_exact as kcell_map_correct_exact,
)
from dprisk.inference.product.histogram_attribute import p_map_correct_mc as kcell_map_correct
from dprisk.inference.product.histogram_tree import HistogramTree as HistogramTree
from dprisk.inference.product.histogram_tree import top_down as top_down
from dprisk.inference.product.monte_carlo import product_likelihood_mc as likelihood_mc
from dprisk.inference.product.unknown_others import (
    product_risk_unknown_others as risk_unknown_others,
)

__all__ = [
    "HistogramTree",
    "kcell_map_correct",
    "kcell_map_correct_exact",
    "likelihood_mc",
    "risk",
    "risk_unknown_others",
    "table",
    "top_down",
]
