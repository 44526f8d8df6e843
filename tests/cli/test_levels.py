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


#: Valid lists of two levels; each error case changes some of them.
VALID = {"rhos": "0.1,0.2", "siblings": "2", "stars": "1,2,3"}


def _changed(match: str, **lists) -> tuple[str, str, str, str]:
    """``(rhos, siblings, stars, match)``: :data:`VALID` with ``lists`` changed."""
    changed = {**VALID, **lists}
    return changed["rhos"], changed["siblings"], changed["stars"], match


@pytest.mark.parametrize(
    ("rhos", "siblings", "stars", "match"),
    [
        _changed("rhos must have at least 2", rhos="0.1", siblings="", stars="1"),
        _changed("census:N needs 2 <= N <= 6", rhos="census:1", siblings="", stars="1"),
        _changed("rho_2", rhos="0.1,-1"),
        _changed("rho_2", rhos="0.1,census:city"),
        _changed("census:N", rhos="census:9"),
        _changed("siblings must have h - 1 = 2", rhos="0.1,0.2,0.3", stars="1,2,3,4,5"),
        _changed("d_2", siblings="0"),
        _changed("d_2", siblings="2.5"),
        _changed("stars must have 2h - 1 = 3", stars="1,2"),
        _changed("stars: x2", stars="1,x,3"),
        _changed("no empty entry", rhos="0.1,,0.2"),
    ],
)
def test_parse_errors(rhos, siblings, stars, match):
    with pytest.raises(ValueError, match=match):
        _parse(rhos, siblings, stars)
