"""Tests of models/scenario.py: the validated Scenario and Release value objects."""

import numpy as np
import pytest

from dprisk.models.numerics import scalar_result
from dprisk.models.priors.library import ImproperUniform, PointMass, TruncatedUniform
from dprisk.models.scenario import (
    Release,
    Scenario,
    nested_scenario,
    scalar_value,
    two_level_scenario,
)


def test_two_level_scenario_values_and_names():
    scenario = Scenario.two_level(0.1, 0.25, 27, p=0.3, known=2, prior="truncated:10")
    assert scenario.rhos == (0.1, 0.25) and scenario.siblings == (27,)
    assert (scenario.rho1, scenario.rho2, scenario.d, scenario.p, scenario.known) == (
        0.1, 0.25, 27, 0.3, 2)
    assert scenario.h == 2 and scenario.prior == TruncatedUniform(10)
    assert scenario.precision == pytest.approx(0.25 + 0.1 / 27, rel=1e-15)
    assert Scenario.two_level(0.1, 0.25, 3).prior == ImproperUniform()
    assert isinstance(scenario.rho1, float) and isinstance(scenario.known, int)


def test_nested_scenario_equals_two_level_at_h2():
    nested = Scenario.nested([0.1, 0.25], [27], p=0.3, known=2, prior="truncated:10")
    assert nested == Scenario.two_level(0.1, 0.25, 27, p=0.3, known=2, prior="truncated:10")
    assert hash(nested) == hash(Scenario.two_level(0.1, 0.25, 27, p=0.3, known=2,
                                                   prior="truncated:10"))


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        (Scenario.two_level(0.1, 0.25, 27, p=0.3, known=2, prior="point:5"),
         {"rho1": 0.1, "rho2": 0.25, "d": 27, "p": 0.3, "known": 2, "prior": "point:5"}),
        (Scenario.nested([0.3, 0.2, 0.1], [5, 3], p=0.4, known=1,
                         prior=["truncated:30", "point:12"]),
         {"rhos": [0.3, 0.2, 0.1], "siblings": [5, 3], "p": 0.4, "known": 1,
          "prior": "truncated:30;point:12"}),
    ],
)
def test_attrs_round_trip(scenario, expected):
    assert scenario.attrs() == expected
    assert Scenario.from_attrs(scenario.attrs()) == scenario


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"rho1": 0.0}, "rho1"), ({"rho2": [0.1, 0.2]}, "rho2"), ({"d": 0}, "d"),
     ({"p": 1.0}, "p"), ({"known": -1}, "known"), ({"known": 2, "prior": "truncated:2"},
                                                    "truncated:2")],
)
def test_two_level_errors_name_the_parameter(kwargs, name):
    args = {"rho1": 0.1, "rho2": 0.25, "d": 3, **kwargs}
    with pytest.raises(ValueError, match=name):
        Scenario.two_level(args.pop("rho1"), args.pop("rho2"), args.pop("d"), **args)


def test_scenario_or_loose_parameters_not_both():
    scenario = Scenario.two_level(0.1, 0.25, 3)
    assert two_level_scenario(scenario) is scenario
    assert two_level_scenario(None, rho1=0.1, rho2=0.25, d=3) == scenario
    with pytest.raises(TypeError, match="scenario"):
        two_level_scenario(scenario, rho1=0.1)
    with pytest.raises(TypeError, match="scenario must be a Scenario"):
        two_level_scenario({"rho1": 0.1})
    with pytest.raises(ValueError, match="h = 2"):
        two_level_scenario(Scenario.nested([0.1, 0.2, 0.3], [2, 2]))
    with pytest.raises(TypeError, match="rho2"):
        two_level_scenario(rho1=0.1, d=3)
    assert nested_scenario(None, rhos=[0.1, 0.25], siblings=[3]) == scenario


def test_release_shapes_and_values():
    release = Release.two_level([1, 2], 3, [[-1], [4]])
    assert release.shape == (2, 2) and release.h == 2 and release.size == 4
    np.testing.assert_array_equal(release.x1_star, [[1, 2], [1, 2]])
    np.testing.assert_array_equal(release.y1_star, [[-1, -1], [4, 4]])
    assert release.x_stars.dtype == np.int64
    one = Release.nested([1, 4, 9], [3, 5], h=3)
    assert one.shape == () and one.one("test") == (1, 4, 9, 3, 5)
    with pytest.raises(ValueError, match="one release"):
        release.one("test")
    with pytest.raises(ValueError, match="y1_star"):
        Release.two_level(1, 2, [1, 2], single=True)
    with pytest.raises(ValueError, match="x_stars must have h = 3"):
        Release.nested([1, 2], [3, 5], h=3)


def test_point_mass_scenario_and_scalars():
    assert Scenario.two_level(0.1, 0.2, 2, known=3, prior=PointMass(3)).feasible == (True, False)
    assert isinstance(scalar_result(np.float64(0.5)), float)
    assert scalar_result(np.ones(2)).shape == (2,)
    with pytest.raises(ValueError, match="x must be a scalar"):
        scalar_value(np.ones(2), "x")
