"""The names of ``dr.product`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.product.exact import product_risk as risk
from dprisk.inference.product.exact import product_table as table
from dprisk.inference.product.histogram_attribute import cell_tables as cell_tables
from dprisk.inference.product.histogram_attribute import (
    p_map_correct_exact as kcell_map_correct_exact,
)
from dprisk.inference.product.histogram_attribute import p_map_correct_mc as kcell_map_correct
from dprisk.inference.product.histogram_tree import HistogramTree as HistogramTree
from dprisk.inference.product.histogram_tree import regular_tree as regular_tree
from dprisk.inference.product.histogram_tree import simulate_measurements as simulate_measurements
from dprisk.inference.product.histogram_tree import top_down as top_down
from dprisk.inference.product.monte_carlo import product_likelihood_mc as likelihood_mc
from dprisk.inference.product.monte_carlo_risk import product_risk_mc as risk_mc
from dprisk.inference.product.unknown_others import (
    product_risk_unknown_others as risk_unknown_others,
)

__all__ = [
    "HistogramTree",
    "cell_tables",
    "kcell_map_correct",
    "kcell_map_correct_exact",
    "likelihood_mc",
    "regular_tree",
    "risk",
    "risk_mc",
    "risk_unknown_others",
    "simulate_measurements",
    "table",
    "top_down",
]
