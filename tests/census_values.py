"""The Census values the tests share, computed once: the 2020 allocation's rho per level.

Tests import these instead of recomputing ``census_level(...)`` (the allocation itself is
tested in tests/models/census/test_allocation.py).
"""

from dprisk.models.census.allocation import census_level

#: rho of the block-level detailed GVHR query (paper Table 2), about 0.09923.
RHO_BLOCK = census_level("block").rho
#: rho of the block-group-level detailed GVHR query, about 0.24648.
RHO_BLOCK_GROUP = census_level("block-group").rho
#: The paper's two-level Census scenario (block and block group, d = 27 other blocks).
CENSUS_TWO_LEVEL = {"rho1": RHO_BLOCK, "rho2": RHO_BLOCK_GROUP, "d": 27}

#: Scenario keywords, x1 and tie/threshold value of the kernel tests' Census cases: the built-in
#: priors at the two-level Census scenario (tests/inference/kernels).
CENSUS_PRIOR_CASES = [
    ({**CENSUS_TWO_LEVEL, "prior": "improper"}, 0, 0.5),
    ({**CENSUS_TWO_LEVEL, "prior": "truncated:10"}, 0, 0.3),
    ({**CENSUS_TWO_LEVEL, "prior": "point:3"}, 0, 0.5),
    ({**CENSUS_TWO_LEVEL, "prior": "point:0"}, 0, 0.5),
]
