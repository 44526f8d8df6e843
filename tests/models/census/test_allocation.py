"""Tests of models/census/allocation.py against the paper's Table 2 (rho allocation, 2020 Census).

The fractions below are typed in from Table 2 of the paper (columns: total proportion of
rho for the level, GVHR proportion within the level, rounded GVHR rho), independently of
the module's own table.
"""

from fractions import Fraction

import pytest

from dprisk.models.census.allocation import (
    CENSUS_DELTA,
    CENSUS_LEVELS,
    CENSUS_RHO_TOTAL,
    census_level,
    census_rhos,
    parse_rho,
    parse_rhos,
)

# level: (total proportion, GVHR proportion, printed GVHR rho to 4 decimals)
TABLE_2 = {
    "us": (Fraction(104, 4099), Fraction(189, 241), 0.0509),
    "state": (Fraction(1440, 4099), Fraction(230, 4097), 0.0505),
    "county": (Fraction(447, 4099), Fraction(754, 4097), 0.0514),
    "tract": (Fraction(687, 4099), Fraction(241, 2051), 0.0504),
    "block-group": (Fraction(1256, 4099), Fraction(1288, 4099), 0.2465),
    "block": (Fraction(165, 4099), Fraction(3945, 4097), 0.0992),
}
LEVEL_ORDER = ("block", "block-group", "tract", "county", "state", "us")


def test_global_budget():
    assert Fraction(2.56).limit_denominator(100) == CENSUS_RHO_TOTAL == Fraction(64, 25)
    assert CENSUS_DELTA == 1e-10


def test_level_names_and_order():
    assert tuple(level.name for level in CENSUS_LEVELS) == LEVEL_ORDER


@pytest.mark.parametrize("name", LEVEL_ORDER)
def test_exact_fractions_of_table_2(name):
    total_share, query_share, printed = TABLE_2[name]
    level = census_level(name)
    assert level.geolevel_share == total_share
    assert level.query_share == query_share
    assert level.rho_exact == Fraction(256, 100) * total_share * query_share
    assert level.rho == float(level.rho_exact)
    assert round(level.rho, 4) == printed


def test_geolevel_shares_sum_to_one():
    assert sum(level.geolevel_share for level in CENSUS_LEVELS) == 1


def test_block_values_quoted_in_text():
    """Section 2.3: block rho 2.56 x 165/4099 ~ 0.103, GVHR ~ 0.099; design notes to 5 d.p."""
    block = census_level("block")
    assert round(float(CENSUS_RHO_TOTAL * block.geolevel_share), 3) == 0.103
    assert round(block.rho, 3) == 0.099
    assert round(block.rho, 5) == 0.09923
    assert round(census_level("block-group").rho, 5) == 0.24648


def test_census_rhos():
    assert census_rhos(1) == [census_level("block").rho]
    assert census_rhos(6) == [census_level(name).rho for name in LEVEL_ORDER]
    for bad in (0, 7):
        with pytest.raises(ValueError, match="levels"):
            census_rhos(bad)


def test_parse_rho():
    assert parse_rho("census:block") == census_level("block").rho
    assert parse_rho("  census:block-group ") == census_level("block-group").rho
    assert parse_rho("census:us") == census_level("us").rho
    assert parse_rho("0.5") == 0.5
    assert parse_rho(2) == 2.0
    assert isinstance(parse_rho("census:tract"), float)


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ("census:zip", "unknown Census level 'zip'"),
        ("census:", "unknown Census level"),
        ("-1", "rho"),
        ("0", "rho"),
        ("abc", "rho"),
        ("nan", "rho"),
        (-0.5, "rho"),
    ],
)
def test_parse_rho_rejects(value, pattern):
    with pytest.raises(ValueError, match=pattern):
        parse_rho(value)


def test_parse_rho_names_parameter():
    with pytest.raises(ValueError, match="rho1"):
        parse_rho("census:nowhere", name="rho1")


def test_unknown_level():
    with pytest.raises(ValueError, match="known levels: block, block-group"):
        census_level("nation")


def test_parse_rhos_forms():
    block = census_level("block").rho
    assert parse_rhos("census:6") == census_rhos(6)
    assert parse_rhos(" census:2 ") == census_rhos(2)
    assert parse_rhos("0.1, census:block,2") == [0.1, block, 2.0]
    assert parse_rhos("census:us") == [census_level("us").rho]
    assert parse_rhos("census:2", min_levels=2) == census_rhos(2)


@pytest.mark.parametrize("text", ["", "  ", "census:0", "census:7", "abc", "0.1,-1",
                                  "0.1,,0.2", "census:town", "census:2,0.1", "inf", None])
def test_parse_rhos_rejects_bad_input_naming_rhos(text):
    with pytest.raises(ValueError, match="rhos"):
        parse_rhos(text)


@pytest.mark.parametrize(("text", "match"), [
    ("census:1", "census:N needs 2 <= N <= 6"),
    ("census:9", "census:N needs 2 <= N <= 6"),
    ("0.1", "rhos must have at least 2 entries"),
    ("0.1,census:city", "rho_2"),
    ("0.1,-1", "rho_2"),
    ("0.1,,0.2", "no empty entry"),
])
def test_parse_rhos_nested_bounds(text, match):
    """One parser for both callers: the bounds of census:N come from min_levels and the table."""
    with pytest.raises(ValueError, match=match):
        parse_rhos(text, min_levels=2)


def test_parse_rhos_names_the_parameter():
    with pytest.raises(ValueError, match=r"^levels: rho_2"):
        parse_rhos("0.1,0", "levels")


@pytest.mark.parametrize("n_levels", [True, 1.5, 2.0, 0, 7, "2", None])
def test_census_rhos_refuses_what_is_not_a_level_count(n_levels):
    """Before: True gave the block's rho (1 level), 1.5 and 2.0 a TypeError about slice
    indices, "2" a comparison error."""
    with pytest.raises(ValueError, match=r"^n_levels \(the number of Census levels\) must be "
                                         r"an integer from 1 to 6"):
        census_rhos(n_levels)
