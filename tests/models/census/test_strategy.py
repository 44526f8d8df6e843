"""Tests of models/census/strategy.py: the 2020 persons strategy (DAS production allocation)."""

from fractions import Fraction

import pytest

from dprisk.models.census.allocation import CENSUS_LEVELS, CENSUS_RHO_TOTAL, census_level
from dprisk.models.census.strategy import (
    PRODUCTION_GLOBAL_SCALE,
    PRODUCTION_RHO,
    QUERY_FRACTIONS,
    STRATEGY_QUERY_NAMES,
    strategy_queries,
)


@pytest.mark.parametrize("level", [level.name for level in CENSUS_LEVELS])
def test_each_level_fractions_sum_to_one(level):
    assert sum(QUERY_FRACTIONS[level].values()) == 1


@pytest.mark.parametrize("level", CENSUS_LEVELS, ids=lambda level: level.name)
def test_detailed_fraction_is_the_gvhr_share_of_table_2(level):
    assert QUERY_FRACTIONS[level.name]["detailed"] == level.query_share


def test_queries_of_each_level():
    assert set(QUERY_FRACTIONS) == {level.name for level in CENSUS_LEVELS}
    for level in CENSUS_LEVELS:
        expected = STRATEGY_QUERY_NAMES[1:] if level.name == "us" else STRATEGY_QUERY_NAMES
        assert tuple(QUERY_FRACTIONS[level.name]) == expected
    assert len(STRATEGY_QUERY_NAMES) == 11


def test_query_rhos_compose_to_the_global_rho():
    queries = strategy_queries()
    assert len(queries) == 65
    assert sum(q.rho_exact for q in queries) == CENSUS_RHO_TOTAL
    assert queries[0].level == "block" and queries[-1].level == "us"
    detailed_block = next(q for q in queries if (q.level, q.query) == ("block", "detailed"))
    assert detailed_block.rho_exact == census_level("block").rho_exact
    for query in queries:
        share = census_level(query.level).geolevel_share
        assert query.rho_exact == CENSUS_RHO_TOTAL * share * query.fraction
        assert isinstance(query.rho, float)


def test_production_rho_from_the_global_scale():
    assert PRODUCTION_GLOBAL_SCALE == Fraction(339, 542)
    assert PRODUCTION_RHO == Fraction(542**2, 339**2)
    assert round(float(PRODUCTION_RHO), 4) == 2.5562
    assert round(float(PRODUCTION_RHO), 2) == 2.56
    assert sum(q.rho_exact for q in strategy_queries(PRODUCTION_RHO)) == PRODUCTION_RHO
    assert sum(q.rho for q in strategy_queries(1.0)) == pytest.approx(1.0, rel=1e-14)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), [1.0, 2.0]])
def test_bad_global_rho(bad):
    with pytest.raises(ValueError, match="rho_total"):
        strategy_queries(bad)


#: ``ProductionCandidate20210527US_mult8_add02_dsepJune3.make`` in
#: ``source/programs/strategies/strategies.py`` of
#: ``uscensusbureau/DAS_2020_Redistricting_Production_Code`` (the strategy
#: ``source/configs/production/pl94/person_US.ini`` names), typed from that file: each level's
#: ``QUERIESPROP`` as (numerator, denominator) in its ``DPQUERIES`` order (the US has no
#: ``total``).
DAS_QUERY_PROPORTIONS = {
    "us": ((52, 4097), (26, 4097), (26, 4097), (26, 4097), (26, 4097), (130, 4097),
           (130, 4097), (26, 4097), (26, 241), (189, 241)),
    "state": ((3773, 4097), (6, 4097), (6, 4097), (6, 4097), (6, 4097), (6, 4097), (12, 4097),
              (12, 4097), (6, 4097), (2, 241), (230, 4097)),
    "county": ((3126, 4097), (10, 4097), (10, 4097), (10, 4097), (10, 4097), (10, 4097),
               (28, 4097), (28, 4097), (10, 4097), (101, 4097), (754, 4097)),
    "tract": ((1567, 4102), (4, 2051), (5, 4102), (5, 4102), (5, 4102), (5, 4102), (1933, 4102),
              (10, 2051), (5, 4102), (67, 4102), (241, 2051)),
    "block-group": ((1705, 4099), (3, 4099), (3, 4099), (3, 4099), (3, 4099), (3, 4099),
                    (1055, 4099), (9, 4099), (3, 4099), (24, 4099), (1288, 4099)),
    "block": ((5, 4097), (9, 4097), (5, 4097), (5, 4097), (5, 4097), (5, 4097), (21, 4097),
              (21, 4097), (5, 4097), (71, 4097), (3945, 4097)),
}


@pytest.mark.parametrize("level", sorted(DAS_QUERY_PROPORTIONS))
def test_every_query_fraction_is_the_production_strategy(level):
    """Each query's share, not only their sum and the detailed one: the block's total and
    cenrace shares (5 and 9 / 4097) swapped passed every test before."""
    names = STRATEGY_QUERY_NAMES[1:] if level == "us" else STRATEGY_QUERY_NAMES
    want = dict(zip(names, (Fraction(*pair) for pair in DAS_QUERY_PROPORTIONS[level]),
                    strict=True))
    assert QUERY_FRACTIONS[level] == want
