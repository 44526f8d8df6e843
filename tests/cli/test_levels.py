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
        # beyond 2**53: named by the star (the model's check said only x_stars / y_stars)
        _changed(r"stars: x2\* must be an integer >= -2\*\*53 and <= 2\*\*53",
                 stars="1,99999999999999999999999,3"),
        _changed(r"stars: y1\* must be an integer", stars="1,2,-9007199254740993"),
        _changed("no empty entry", rhos="0.1,,0.2"),
    ],
)
def test_parse_errors(rhos, siblings, stars, match):
    with pytest.raises(ValueError, match=match):
        _parse(rhos, siblings, stars)


def test_posterior_rhos_limits_are_the_tables_own():
    from dprisk.cli.commands import posterior
    from dprisk.inference.kernels.table_kernels import MAX_PRECISION
    from dprisk.inference.nested.box_kernels import NESTED_RHO_MAX

    assert posterior.NESTED_RHO_MAX == NESTED_RHO_MAX
    assert posterior.TWO_LEVEL_PRECISION_MAX == MAX_PRECISION


HELP_RANGE = "each 0 < rho <= 1e+15 (with two levels, h = 2: rho_2 + rho_1/d_2 <= 1e+06)"


@pytest.mark.parametrize(("rhos", "siblings", "stars", "shown"), [
    ("1,1e14", "2", "1,1,1", "rho_2 + rho_1/d_2 = 1e+14 is above 1e+06"),
    ("1e7,1", "2", "1,1,1", "rho_2 + rho_1/d_2 = 5e+06 is above 1e+06"),
    ("1,1e101", "2", "1,1,1", "rho_2 = 1e101 is above 1e+15"),
    ("1,1,1e16", "2,2", "1,1,1,1,1", "rho_3 = 1e16 is above 1e+15"),
    ("1,1,1e101", "2,2", "1,1,1,1,1", "rho_3 = 1e101 is above 1e+15"),
])
def test_posterior_rhos_refusals_name_rhos_and_state_the_help_range(rhos, siblings, stars,
                                                                    shown, capsys):
    from cli_helpers import assert_refused, run_cli

    err = assert_refused(["posterior", "--rhos", rhos, "--siblings", siblings, "--stars", stars],
                         "--rhos", capsys)
    assert err.split("error: ")[1].startswith("--rhos") and shown in err, err
    assert f"allowed range: {HELP_RANGE}" in err, err
    _, out, _ = run_cli(["posterior", "--help"], capsys)
    assert HELP_RANGE in " ".join(out.split())
