"""Tests of dprisk.cli.grids: grids written on the command line and the records printed back.

Moved from tests/inference/test_sweeps.py with the functions (which left inference.sweeps).
"""

import numpy as np
import pytest
from census_values import RHO_BLOCK

from dprisk.cli.grids import parse_grid, sweep_records
from dprisk.inference.single_level.closed_form import p_correct
from dprisk.inference.sweeps.sweep import DIMS, VARIABLES, sweep

SWEEP_2D = {"rho1": RHO_BLOCK, "d": 27, "progress": False, "rho2": [0.1, 0.25, 1.0],
            "x2": [1, 2, 3, 7, 20], "chunk_size": 2}
N_POINTS = 15  # 3 x 5, in 8 chunks of 2 (the last has 1)


def exact_standin(*, rho1, rho2, d, x2, p=0.5, known=0, prior="improper"):
    """A deterministic quantity that depends on every swept argument."""
    hier = float(p_correct(rho1 + rho2 / (d + x2), p, known))
    return {"p_correct": hier, "p_correct_no_hierarchy": float(p_correct(rho1, p, known)),
            "gain": hier / 10 + len(prior) / 1e4, "loss": x2 / 100}


@pytest.mark.parametrize(
    ("text", "name", "kind", "expected"),
    [
        ("1,2,5", "x2", int, [1, 2, 5]),
        ("7", "x2", int, [7]),
        ("1:4", "x2", int, [1, 2, 3, 4]),
        ("0:10:5", "known", int, [0, 5, 10]),
        ("0.5, 1,2.5", "rho2", float, [0.5, 1.0, 2.5]),
        ("0.1:0.3:3", "rho2", float, [0.1, 0.2, 0.3]),
        ("0.01:100:5:log", "rho2", float, [0.01, 0.1, 1.0, 10.0, 100.0]),
        ("census:block,1", "rho1", float, [RHO_BLOCK, 1.0]),
        ("improper, truncated:10,point:1", "prior", str, ["improper", "truncated:10", "point:1"]),
    ],
)
def test_parse_grid_forms(text, name, kind, expected):
    values = parse_grid(text, name, kind)
    assert all(type(v) is kind for v in values)
    if kind is float:  # linspace/geomspace interior points are rounded
        np.testing.assert_allclose(values, expected, rtol=1e-15)
        assert (values[0], values[-1]) == (expected[0], expected[-1])
    else:
        assert values == expected


@pytest.mark.parametrize(
    ("text", "name", "kind", "match"),
    [
        ("", "x2", int, "x2: the grid is empty"),
        ("  ", "rho2", float, "rho2: the grid is empty"),
        ("1,,2", "x2", int, "x2: grid item '' is not an integer"),
        ("1,a", "rho2", float, "rho2: grid item 'a' is not a number"),
        ("5:1", "x2", int, "x2: range '5:1' needs A <= B"),
        ("1:2:3:4", "d", int, "d: integer range must be"),
        ("0:1:3:log", "rho2", float, "rho2: log range"),
        ("0.1:1", "rho2", float, "rho2: float range must be"),
        ("0:1:3", "rho2", float, "rho2 must be a finite number > 0"),
        ("0,1", "d", int, "d must be an integer >= 1"),
        ("0.5,1.5", "p", float, "p must be a probability"),
        ("census:moon", "rho1", float, "rho1: unknown Census level"),
        ("improper,nonsense", "prior", str, "prior 'nonsense'"),
        ("improper,,point:1", "prior", str, "prior: the grid 'improper,,point:1' has an empty"),
        ("1,2,1", "x2", int, "x2: the grid holds 1 more than once"),
        # an end out of range is refused before the spacing, which warned (numpy's
        # RuntimeWarning, two more stderr lines) on inf or on a step beyond the largest float
        ("0.1:inf:3", "rho1", float, "rho1 must be a finite number > 0 .* got inf"),
        ("0.1:1e400:3:log", "rho1", float, "rho1 must be a finite number > 0 .* got inf"),
        ("-1e308:1e308:3", "p", float, "p must be a probability .* got -1e\\+308"),
    ],
)
def test_parse_grid_errors_name_the_parameter(text, name, kind, match):
    with pytest.raises(ValueError, match=match):
        parse_grid(text, name, kind)


def test_sweep_records_flatten_every_point():
    ds = sweep(**SWEEP_2D, quantity=exact_standin)
    records = sweep_records(ds)
    assert len(records) == N_POINTS
    assert list(records[0]) == ["rho1", "rho2", "d", "x2", "p", "known", "prior", *VARIABLES]
    for record in records:
        assert record["d"] == 27 and record["prior"] == "improper"
        assert type(record["x2"]) is int and type(record["rho2"]) is float
        expected = exact_standin(**{k: record[k] for k in DIMS})
        assert {v: record[v] for v in VARIABLES} == expected
    assert [(r["rho2"], r["x2"]) for r in records[:2]] == [(0.1, 1), (0.1, 2)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1/864", [1 / 864]), ("1/4,1/2", [0.25, 0.5]), ("1/10:1/2:3", [0.1, 0.3, 0.5])],
)
def test_parse_grid_accepts_fractions(text, expected):
    np.testing.assert_allclose(parse_grid(text, "p", float), expected, rtol=1e-15)


@pytest.mark.parametrize(
    ("text", "name", "kind"), [("1/0", "p", float), ("a/2", "p", float), ("1/2", "d", int)]
)
def test_parse_grid_refuses_bad_fractions_naming_the_parameter(text, name, kind):
    with pytest.raises(ValueError, match=f"{name}: grid item"):
        parse_grid(text, name, kind)
