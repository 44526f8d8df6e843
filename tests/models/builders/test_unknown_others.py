"""The PyMC model of the adversary who does not know everyone: structure and joint log density.

Summing the model's joint log density over K (``logsumexp``) at B_t = 1 and B_t = 0 gives
the exact posterior log-odds of :mod:`dprisk.inference.unknown_others.closed_form` to 1e-10 (float64
rounding of a handful of terms); sampling is checked in
``tests/inference/test_unknown_others_sampling.py``.
"""

import numpy as np
import pymc as pm
import pytest

from dprisk.inference.unknown_others import closed_form as uo
from dprisk.models.builders.unknown_others import (
    OTHERS_VAR,
    TARGET_VAR,
    X1_STAR_VAR,
    X1_VAR,
    build_unknown_others_model,
    checked_values,
)
from dprisk.models.numerics import logsumexp


def test_structure_and_steps():
    model = build_unknown_others_model(4, 0.2, 0.3, 1, unknown_others=6, q=0.4)
    assert [rv.name for rv in model.free_RVs] == [TARGET_VAR, OTHERS_VAR]
    assert [rv.name for rv in model.deterministics] == [X1_VAR]
    assert [rv.name for rv in model.observed_RVs] == [X1_STAR_VAR]
    assert np.all(np.isfinite(list(model.point_logps().values())))
    _, selected = pm.sampling.mcmc.assign_step_methods(model)
    assert {cls.__name__ for cls in selected} == {"BinaryGibbsMetropolis", "Metropolis"}


def test_no_unknown_others_is_the_single_level_model():
    model = build_unknown_others_model(4, 0.2, 0.3, 1)
    assert [rv.name for rv in model.free_RVs] == [TARGET_VAR]


@pytest.mark.parametrize(("x1_star", "rho", "p", "known", "n", "q"), [
    (4, 0.2, 0.3, 1, 6, 0.4), (-3, 0.0992, 0.5, 0, 10, 0.1), (25, 1.0, 0.05, 3, 20, 0.9),
])
def test_joint_logp_summed_over_k_is_the_exact_log_odds(x1_star, rho, p, known, n, q):
    model = build_unknown_others_model(x1_star, rho, p, known, unknown_others=n, q=q)
    logp = model.compile_logp()
    joint = np.array([[logp({TARGET_VAR: np.int64(b), OTHERS_VAR: np.int64(k)})
                       for k in range(n + 1)] for b in (0, 1)])
    log_odds = logsumexp(joint[1]) - logsumexp(joint[0])
    exact = uo.log_posterior_odds(x1_star, rho, p, known, unknown_others=n, q=q)
    assert log_odds == pytest.approx(exact, abs=1e-10)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"x1_star": 1.5, "rho": 0.5}, "x1_star"),
    ({"x1_star": 1, "rho": 0.0}, "rho"),
    ({"x1_star": 1, "rho": 0.5, "p": 1.0}, "p"),
    ({"x1_star": 1, "rho": 0.5, "known": -1}, "known"),
    ({"x1_star": 1, "rho": 0.5, "unknown_others": -2, "q": 0.5}, "unknown_others"),
    ({"x1_star": 1, "rho": 0.5, "unknown_others": 2}, "q"),
    ({"x1_star": 1, "rho": 0.5, "unknown_others": 2, "q": 1.2}, "q"),
])
def test_bad_input_names_parameter(kwargs, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        build_unknown_others_model(**kwargs)
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        checked_values(**kwargs)
