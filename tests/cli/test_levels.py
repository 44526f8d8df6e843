"""The nested-levels lists of the command line: ``--rhos``, ``--siblings``, ``--stars``."""

import pytest

from dprisk.cli.levels import parse_rhos, parse_siblings, parse_stars
from dprisk.models.census.allocation import census_rhos


def _parse(rhos, siblings, stars):
    levels = parse_rhos(rhos, min_levels=2)
    x_stars, y_stars = parse_stars(stars, len(levels))
    return levels, parse_siblings(siblings, len(levels)), x_stars, y_stars


def test_parse_lists():
    rhos, siblings, x_stars, y_stars = _parse("census:block, census:block-group,0.05", "27,2",
                                              "1,3,-2,0,7")
    assert rhos == pytest.approx([*census_rhos(2), 0.05])
    assert siblings == [27, 2]
    assert x_stars == [1, 3, -2]
    assert y_stars == [0, 7]
    assert parse_rhos("census:4", min_levels=2) == pytest.approx(census_rhos(4))
    assert parse_rhos("1/4,census:tract", min_levels=2)[0] == 0.25


@pytest.mark.parametrize(
    ("rhos", "siblings", "stars", "match"),
    [
        ("0.1", "", "1", "rhos must have at least 2"),
        ("census:1", "", "1", "census:N needs 2 <= N <= 6"),
        ("0.1,-1", "2", "1,2,3", "rho_2"),
        ("0.1,census:city", "2", "1,2,3", "rho_2"),
        ("census:9", "2", "1,2,3", "census:N"),
        ("0.1,0.2,0.3", "2", "1,2,3,4,5", "siblings must have h - 1 = 2"),
        ("0.1,0.2", "0", "1,2,3", "d_2"),
        ("0.1,0.2", "2.5", "1,2,3", "d_2"),
        ("0.1,0.2", "2", "1,2", "stars must have 2h - 1 = 3"),
        ("0.1,0.2", "2", "1,x,3", "stars: x2"),
        ("0.1,,0.2", "2", "1,2,3", "no empty entry"),
    ],
)
def test_parse_errors(rhos, siblings, stars, match):
    with pytest.raises(ValueError, match=match):
        _parse(rhos, siblings, stars)
