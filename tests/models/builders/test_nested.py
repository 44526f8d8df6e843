"""Tests of models/builders/nested.py: the h-level PyMC model's variables, initial point and log
density, and the nested Scenario's validation and support bounds.

References: for h = 2 the model's logp equals the two-level model of models/builders/two_level.py
at every point (1e-12); for h = 3 differences of the model's logp between points equal the
joint posterior written out here (DG normalisers cancel; 1e-9). Sampling from the model is
checked against the exact posterior in tests/inference/nested/test_posterior.py (h = 3).
"""

import math

import numpy as np
import pytest

from dprisk.models.builders.nested import build_nested_model, nested_params
from dprisk.models.builders.two_level import build_two_level_model
from dprisk.models.priors.library import PointMass, TruncatedUniform
from dprisk.models.scenario import Scenario

H3 = {"rhos": [0.3, 0.2, 0.1], "siblings": [5, 3], "p": 0.4, "known": 1}


def test_variables_of_a_four_level_model():
    model = build_nested_model([1, 3, 6, 12], [2, 3, 5], rhos=[0.5, 0.4, 0.3, 0.2],
                                   siblings=[3, 2, 4])
    assert {rv.name for rv in model.free_RVs} == {"target_has_c", "X2", "X3", "X4"}
    assert {rv.name for rv in model.deterministics} == {"X1"}
    assert {rv.name for rv in model.observed_RVs} == {
        "x1_star", "x2_star", "x3_star", "x4_star", "y1_star", "y2_star", "y3_star",
    }
    params, xs, ys = nested_params(model)
    assert params.h == 4 and xs == (1, 3, 6, 12) and ys == (2, 3, 5)


@pytest.mark.parametrize(
    "prior",
    ["improper", ["truncated:30", "point:12"], "models/examples/negative_binomial_prior.py:prior"],
)
def test_initial_point_is_inside_the_support(prior):
    model = build_nested_model([1, 4, 9], [3, 5], **H3, prior=prior)
    logps = model.point_logps()
    assert all(np.isfinite(v) for v in logps.values()), logps


def test_two_levels_equal_the_two_level_model():
    kwargs = {"p": 0.3, "known": 2}
    ml = build_nested_model([3, 5], [-1], rhos=[0.1, 0.25], siblings=[27], **kwargs)
    two = build_two_level_model(3, 5, -1, rho1=0.1, rho2=0.25, d=27, **kwargs)
    f_ml, f_two = ml.compile_logp(), two.compile_logp()
    for target, x2 in [(0, 2), (1, 3), (0, 9), (1, 20), (1, 2)]:
        point = {"target_has_c": target, "X2": x2}
        assert f_ml(point) == pytest.approx(f_two(point), abs=1e-12)


def log_joint(k, xs, ys, rhos, siblings, p, known):
    """The unnormalised joint posterior of models/builders/nested.py (improper priors)."""
    if any(k[i] < k[i - 1] for i in range(1, len(k))):
        return -math.inf
    out = math.log(p) if k[0] == known + 1 else math.log1p(-p)
    out -= sum(r * (x - kk) ** 2 for r, x, kk in zip(rhos, xs, k, strict=True))
    for i in range(1, len(k)):
        out -= rhos[i - 1] / siblings[i - 1] * (ys[i - 1] - (k[i] - k[i - 1])) ** 2
    return out


def test_three_level_logp_differences_match_the_joint_posterior():
    xs, ys = [1, 4, 9], [3, 5]
    model = build_nested_model(xs, ys, **H3)
    logp = model.compile_logp()
    points = [(1, 1, 1), (2, 4, 9), (1, 6, 6), (2, 2, 15), (1, 3, 8)]
    ref = [log_joint(k, xs, ys, H3["rhos"], H3["siblings"], H3["p"], H3["known"])
           for k in points]
    got = [float(logp({"target_has_c": k[0] - H3["known"], "X2": k[1], "X3": k[2]}))
           for k in points]
    for i in range(1, len(points)):
        assert got[i] - got[0] == pytest.approx(ref[i] - ref[0], abs=1e-9)
    # Outside the support (X3 < X2) the density is zero.
    assert logp({"target_has_c": 0, "X2": 5, "X3": 4}) == -np.inf


def test_params_level_bounds_follow_the_priors():
    params = Scenario.nested(rhos=[0.1, 0.2, 0.3], siblings=[2, 2], known=1,
                                        prior=[TruncatedUniform(10), PointMass(5)])
    assert params.level_bounds(1) == [(1, 1), (1, 10), (5, 5)]
    assert params.level_bounds(2) == [(2, 2), (2, 10), (5, 5)]
    assert params.feasible == (True, True)
    improper = Scenario.nested(rhos=[0.1, 0.2, 0.3], siblings=[2, 2])
    assert improper.level_bounds(0) == [(0, 0), (0, None), (0, None)]
    assert improper.pair_precisions == pytest.approx((0.05, 0.1))
    point = Scenario.nested(rhos=[0.1, 0.2, 0.3], siblings=[2, 2],
                                       prior=["point:0", "improper"])
    assert point.feasible == (True, False)
    # The command-line form: specs separated by ';'.
    text = Scenario.nested(rhos=[0.1, 0.2, 0.3], siblings=[2, 2],
                                      prior="truncated:10; point:5", known=1)
    assert text.priors == (TruncatedUniform(10), PointMass(5))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rhos": 0.1}, "rhos must be a list"),
        ({"rhos": [0.1]}, "at least 2 entries"),
        ({"siblings": [2, 3]}, r"siblings must have h - 1 = 1 entries"),
        ({"siblings": [0]}, "d_2"),
        ({"rhos": [0.1, -0.2]}, "rho_2"),
        ({"p": 0.0}, "p must be a probability"),
        ({"prior": ["improper"] * 3}, "h - 1 = 1 priors"),
        ({"prior": "improper;improper"}, "h - 1 = 1 priors"),
    ],
)
def test_bad_parameters_name_the_parameter(kwargs, match):
    args = {"rhos": [0.1, 0.2], "siblings": [3], **kwargs}
    with pytest.raises(ValueError, match=match):
        build_nested_model([1, 2], [0], **args)


def test_model_takes_one_release():
    with pytest.raises(ValueError, match="one release"):
        build_nested_model([[1, 2], [3, 4]], [0], rhos=[0.1, 0.2], siblings=[3])


def test_nested_params_rejects_other_models():
    two = build_two_level_model(3, 5, -1, rho1=0.1, rho2=0.25, d=27)
    with pytest.raises(ValueError, match="build_nested_model"):
        nested_params(two)
