"""One public call validates each parameter exactly once (issue: "validate once").

The validators of ``dprisk.models.checks`` are wrapped with counting wrappers in every module
that looks them up (the public entry points, the kernels and the DG module they call), and
one public call must check each of its parameters exactly once.
"""

import importlib
import math
from collections import Counter

import numpy as np
import pytest

from dprisk.models.census.allocation import census_rhos

VALIDATORS = ("check_rho", "check_probability", "check_count", "check_positive_int",
              "check_closed_probability")
MODULES = (
    "dprisk.inference.single_level.closed_form",
    "dprisk.inference.single_level.closed_form_kernels",
    "dprisk.inference.nested.unique_levels",
    "dprisk.inference.nested.unique_levels_kernels",
    "dprisk.inference.nested.unique_levels_sweep",
    "dprisk.inference.single_level.sequential",
    "dprisk.inference.product.one_block",
    "dprisk.inference.unknown_others.closed_form",
    "dprisk.inference.unknown_others.closed_form_kernels",
    "dprisk.models.unknown_others",
    "dprisk.models.mechanism.discrete_gaussian",
    "dprisk.models.mechanism.dg_sums",
    "dprisk.models.numerics",
    "dprisk.models.census.allocation",
    "dprisk.models.checks",
)


@pytest.fixture
def calls(monkeypatch):
    """Counter of validated parameter names, filled by wrappers around every validator."""
    counter = Counter()
    checks = importlib.import_module("dprisk.models.checks")
    for validator in VALIDATORS:
        original = getattr(checks, validator)

        def counting(value, name=None, *args, _original=original, **kwargs):
            counter[name] += 1
            if name is None:
                return _original(value, *args, **kwargs)
            return _original(value, name, *args, **kwargs)

        for module_name in MODULES:
            module = importlib.import_module(module_name)
            if getattr(module, validator, None) is original:
                monkeypatch.setattr(module, validator, counting)
    return counter


def _single_level():
    return importlib.import_module("dprisk.inference.single_level.closed_form")


@pytest.mark.parametrize(("call", "expected"), [
    (lambda sl: sl.posterior(3, 0.1, 0.2, 1), {"x1_star", "rho", "p", "known"}),
    (lambda sl: sl.risk(3, 0.1, 0.2, 1), {"x1_star", "rho", "p", "known"}),
    (lambda sl: sl.log_risk(3, 0.1, 0.2, 1), {"x1_star", "rho", "p", "known"}),
    (lambda sl: sl.release_pmf(3, 0.1, 1), {"x1_star", "rho", "known"}),
    (lambda sl: sl.marginal_posterior(0.1, 0.2, 1), {"rho", "p", "known"}),
    (lambda sl: sl.marginal_risk(0.1, 0.2, 1), {"rho", "p", "known"}),
    (lambda sl: sl.decision_threshold(0.1, 0.2, 1), {"rho", "p", "known"}),
    (lambda sl: sl.p_correct(0.1, 0.2, 1), {"rho", "p", "known"}),
])
def test_single_level_entry_points_validate_each_parameter_once(calls, call, expected):
    call(_single_level())
    assert dict(calls) == dict.fromkeys(expected, 1)


UNKNOWN = {"unknown_others": 4, "q": 0.3}


@pytest.mark.parametrize(("call", "expected"), [
    (lambda uo: uo.posterior(3, 0.1, 0.2, 1, **UNKNOWN),
     {"x1_star", "rho", "p", "known", "unknown_others", "q"}),
    (lambda uo: uo.risk(3, 0.1, 0.2, 1, **UNKNOWN),
     {"x1_star", "rho", "p", "known", "unknown_others", "q"}),
    (lambda uo: uo.marginal_risk(0.1, 0.2, 1, **UNKNOWN, true_others=2),
     {"rho", "p", "known", "unknown_others", "q", "true_others"}),
    (lambda uo: uo.p_correct(0.1, 0.2, 1, **UNKNOWN), {"rho", "p", "known", "unknown_others",
                                                      "q"}),
    (lambda uo: uo.decision_threshold(0.1, 0.2, 1, **UNKNOWN),
     {"rho", "p", "known", "unknown_others", "q"}),
])
def test_unknown_others_entry_points_validate_each_parameter_once(calls, call, expected):
    call(importlib.import_module("dprisk.inference.unknown_others.closed_form"))
    assert dict(calls) == dict.fromkeys(expected, 1)


@pytest.mark.parametrize("method", ["auto", "enumerate", "contour", "sweep"])
def test_unique_levels_entry_point_validates_each_parameter_once(calls, method):
    unique_levels = importlib.import_module("dprisk.inference.nested.unique_levels")
    unique_levels.marginal_unique_levels(census_rhos(2), p=0.2, known=1, method=method)
    assert dict(calls) == {"rhos": 1, "p": 1, "known": 1}


@pytest.mark.parametrize("name", ["p_correct_unique_levels", "marginal_risk_unique_levels",
                                  "unique_levels_summary"])
def test_unique_levels_helpers_validate_each_parameter_once(calls, name):
    unique_levels = importlib.import_module("dprisk.inference.nested.unique_levels")
    getattr(unique_levels, name)(census_rhos(3), 0.2, 1)
    assert dict(calls) == {"rhos": 1, "p": 1, "known": 1}


def test_one_level_delegation_validates_once(calls):
    unique_levels = importlib.import_module("dprisk.inference.nested.unique_levels")
    unique_levels.p_correct_unique_levels(census_rhos(1), 0.2, 1)
    unique_levels.marginal_posterior_sweep(census_rhos(1), 0.2, 1)
    assert dict(calls) == {"rhos": 2, "p": 2, "known": 2}


def test_sequential_entry_points_validate_each_parameter_once(calls):
    sequential = importlib.import_module("dprisk.inference.single_level.sequential")
    sequential.sequential_risk([1, 2, 0], [0.1, 0.2, 0.3], 0.2, 1)
    assert dict(calls) == {"x1_stars": 1, "rhos": 1, "p": 1, "known": 1}


def test_scalar_results_are_python_numbers():
    sl = _single_level()
    for value in (sl.posterior(2, 0.1), sl.risk(2, 0.1), sl.log_posterior_odds(2, 0.1),
                  sl.marginal_posterior(0.1), sl.marginal_risk(0.1), sl.p_correct(0.1, 0.2),
                  sl.release_pmf(1, 0.1), sl.log_marginal_posterior(0.1)):
        assert type(value) is float
        assert math.isfinite(value)
    assert type(sl.decision_threshold(0.1, 0.2)) is int
    # the value too (this was round(v, 5) == approx(v, abs=1e-5), true of any v): P[the
    # decision is m + 1 | x1 = m + 1], m = 0, deciding m + 1 iff log(p/(1-p)) + rho(2x* - 1)
    # > 0, summed over x* in [-200, 201] (DG mass beyond: below e^-4000); float rounding 1e-14
    x_star = np.arange(-200, 202)
    pmf = np.exp(-0.1 * (x_star - 1.0) ** 2)
    pmf /= pmf.sum()
    decide = np.log(0.2 / 0.8) + 0.1 * (2 * x_star - 1) > 0
    assert sl.p_correct(0.1, 0.2) == pytest.approx(pmf[decide].sum(), abs=1e-14)


def test_array_inputs_give_arrays():
    sl = _single_level()
    rho = np.array([0.1, 0.5])
    for value in (sl.posterior([1, 2], rho), sl.p_correct(rho, 0.2), sl.marginal_posterior(rho),
                  sl.decision_threshold(rho, 0.2)):
        assert isinstance(value, np.ndarray) and value.shape == (2,)
    # array against scalar calls: numpy's array and scalar exp kernels differ by ulps on
    # some CPUs (AVX-512, issue 32): 1e-14 relative
    np.testing.assert_allclose(sl.p_correct(rho, 0.2),
                               [sl.p_correct(0.1, 0.2), sl.p_correct(0.5, 0.2)], rtol=1e-14,
                               atol=0)


def test_postprocessing_bound_validates_each_parameter_once(calls):
    postprocessing = importlib.import_module("dprisk.inference.product.one_block")
    postprocessing.marginal_posterior_before_postprocessing(0.1, 27, 0.5)
    assert dict(calls) == {"rho1": 1, "d": 1, "p": 1}


def test_dg_cdf_validates_each_parameter_once(calls):
    dg = importlib.import_module("dprisk.models.mechanism.discrete_gaussian")
    dg.logcdf(2, 0, 0.3)
    assert dict(calls) == {"x": 1, "mu": 1, "rho": 1}
    calls.clear()
    dg.logsf(2, 0, 0.3)
    assert dict(calls) == {"x": 1, "mu": 1, "rho": 1}


def test_dg_sums_validate_each_parameter_once(calls):
    dg_sums = importlib.import_module("dprisk.models.mechanism.dg_sums")
    dg_sums.total_variation(5, 0.3)
    assert dict(calls) == {"n": 1, "rho": 1}
    calls.clear()
    dg_sums.sum_pmf(5, 0.3)
    assert dict(calls) == {"n": 1, "rho": 1}
