"""The names of ``dr.attribute`` for editors and type checkers (its ``_LAZY``)."""

from dprisk.inference.attribute.design import expected_true_posterior as expected_true_posterior
from dprisk.inference.attribute.design import p_map_correct as p_map_correct
from dprisk.inference.attribute.posterior import cell_posterior as cell_posterior
from dprisk.inference.attribute.posterior import map_cell as map_cell
from dprisk.inference.attribute.strategy import BlockGroup as BlockGroup
from dprisk.inference.attribute.strategy import census_block_design as census_block_design
from dprisk.inference.attribute.strategy import strategy_measures as strategy_measures
from dprisk.models.builders.attribute import build_attribute_model as build_model

__all__ = [
    "BlockGroup",
    "build_model",
    "cell_posterior",
    "census_block_design",
    "expected_true_posterior",
    "map_cell",
    "p_map_correct",
    "strategy_measures",
]
