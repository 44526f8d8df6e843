"""Tests of inference/privacy/budget.py: the largest single-level rho meeting a risk target.

Round trips (the measure at the returned rho meets the target and exceeds it just above),
monotonicity of both measures in rho on a grid, the binding prior is the one with the
smallest crossing, and bad input names the parameter.
"""

import math

import numpy as np
import pytest

from dprisk.inference.privacy.budget import DGBudget, rho_for_target
from dprisk.inference.single_level import closed_form as single_level

FUNCTIONS = {"marginal-risk": single_level.marginal_risk,
             "marginal-posterior": single_level.marginal_posterior}


@pytest.mark.parametrize("measure", ["marginal-risk", "marginal-posterior"])
@pytest.mark.parametrize("p", [0.01, 0.3, 0.5, 0.9])
def test_measures_increase_in_rho(measure, p):
    rhos = np.geomspace(1e-3, 20.0, 120)
    values = np.array([float(FUNCTIONS[measure](rho, p, 1)) for rho in rhos])
    assert np.all(np.diff(values) > 0)


@pytest.mark.parametrize(("measure", "target", "ps", "known"), [
    ("marginal-risk", 1.5, [0.5], 0),
    ("marginal-risk", 1.2, [0.01, 0.1, 0.5, 0.9], 0),
    ("marginal-risk", 3.0, [0.05, 0.2], 4),
    ("marginal-posterior", 0.9, [0.5], 2),
    ("marginal-posterior", 0.6, [0.01, 0.1, 0.5], 0),
])
def test_round_trip_and_certificate(measure, target, ps, known):
    answer = rho_for_target(measure, target, p=ps, known=known)
    assert isinstance(answer, DGBudget) and isinstance(answer.rho, float)
    compute = FUNCTIONS[measure]
    at = float(compute(answer.rho, answer.binding_p, known))
    assert at == answer.value_at_rho
    assert at <= target and at == pytest.approx(target, rel=1e-12)
    assert answer.value_above > target
    for p in ps:  # the target holds at every prior
        assert float(compute(answer.rho, p, known)) <= target
    # each prior's own crossing is at or above the binding one
    for p in ps:
        if (measure == "marginal-risk" and target < 1 / p) or measure == "marginal-posterior":
            if measure == "marginal-posterior" and target <= p:
                continue
            assert rho_for_target(measure, target, p=[p], known=known).rho >= answer.rho


def test_non_binding_priors_are_skipped():
    """p = 0.9 caps the risk at 1/0.9 < 1.5: only p = 0.5 binds."""
    both = rho_for_target("marginal-risk", 1.5, p=[0.9, 0.5])
    alone = rho_for_target("marginal-risk", 1.5, p=[0.5])
    assert both == alone and both.binding_p == 0.5


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"measure": "p-incorrect", "target": 0.5}, "measure"),
    ({"measure": "marginal-risk", "target": 1.0}, "target"),
    ({"measure": "marginal-risk", "target": float("nan")}, "target"),
    ({"measure": "marginal-risk", "target": 2.0, "p": [0.5]}, "target"),  # sup = 1/p = 2
    ({"measure": "marginal-posterior", "target": 0.4, "p": [0.5]}, "target"),
    ({"measure": "marginal-posterior", "target": 1.0}, "target"),
    ({"measure": "marginal-risk", "target": 1.5, "p": []}, "p"),
    ({"measure": "marginal-risk", "target": 1.5, "p": [0.5, 1.0]}, "p"),
    ({"measure": "marginal-risk", "target": 1.5, "known": -1}, "known"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    measure, target = kwargs.pop("measure"), kwargs.pop("target")
    with pytest.raises(ValueError, match=name):
        rho_for_target(measure, target, **kwargs)


@pytest.mark.parametrize("p", [1e-151, 1e-170, 1e-300])
def test_marginal_posterior_budget_at_a_tiny_prior(p):
    # For small p the marginal posterior is p E_{x* ~ DG(m+1)}[P1/P0] = p exp(2 rho) (up to a
    # relative O(p)), so a target 10 p gives rho* = log(10)/2. The measure's values are then
    # ~1e-150 to 1e-300: the root finder once returned rho = 0.0 (p <= 1e-170: a refusal
    # naming an internal rho) or raised ZeroDivisionError (p = 1e-151, exit 1). Brent's
    # tolerance is 1e-15 relative and the measure is evaluated to about 1e-14: 1e-12 relative.
    answer = rho_for_target("marginal-posterior", 10 * p, p=[p])
    assert answer.rho == pytest.approx(math.log(10.0) / 2.0, rel=1e-12)
    assert answer.value_at_rho <= 10 * p < answer.value_above
