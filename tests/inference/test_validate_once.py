"""Each parameter of a public call is validated exactly once (issue: validate once).

Every validator of :mod:`dprisk.models.checks` (``check_rho``, ``check_probability``,
``check_count``, ``check_positive_int``), the tail-mass rule of :mod:`dprisk.models.numerics`,
:func:`dprisk.models.priors.library.check_support` and the priors' own support checks are replaced,
in every ``dprisk`` module that looks them up, by wrappers that count calls per parameter
name. Derived values (the precision ``rho2 + rho1/d`` that sizes a grid, the releases of a
study's grid) go to kernels unchecked, so every count below is of an input parameter.
"""

import pytest
from validator_counts import count_outermost_calls

from dprisk.inference.nested import posterior as nested
from dprisk.inference.studies import p_correct as studies
from dprisk.inference.two_level import exact, sampling
from dprisk.models import checks, numerics
from dprisk.models.census.allocation import census_rhos
from dprisk.models.priors import library as priors

CENSUS = {"rho1": census_rhos(2)[0], "rho2": census_rhos(2)[1], "d": 27}
DEFAULT_NAMES = {"check_rho": "rho", "check_probability": "p", "check_tail_mass": "tail_mass"}


def _parameter(name, args, kwargs):
    """The parameter a validator call checks: its name argument, or the validator's default."""
    if name == "check_support":
        return "prior"
    return args[1] if len(args) > 1 else kwargs.get("name", DEFAULT_NAMES.get(name))


@pytest.fixture
def calls(monkeypatch):
    originals = {
        **{name: getattr(checks, name) for name in
           ("check_rho", "check_probability", "check_count", "check_positive_int")},
        "check_tail_mass": numerics.check_tail_mass,
        "check_support": priors.check_support,
    }

    counts = count_outermost_calls(monkeypatch, originals, _parameter)
    for cls in (priors.X2Prior, priors.PointMass):
        original = cls.__dict__["check_support"]

        def method(self, known, original=original):
            counts["prior"] += 1
            return original(self, known)
        monkeypatch.setattr(cls, "check_support", method)
    return counts


def test_two_level_exact_posterior_validates_each_parameter_once(calls):
    post = exact.exact_posterior(2, 1, -1, **CENSUS, p=0.3, known=1, prior="truncated:12")
    assert 0 < post.prob_x1 < 1
    assert calls == {name: 1 for name in (
        "x1_star", "x2_star", "y1_star", "rho1", "rho2", "d", "p", "known", "prior",
        "upper", "tail_mass")}  # upper: of the prior truncated:12, checked when it is parsed


def test_nested_exact_posterior_validates_each_parameter_once(calls):
    nested.exact_posterior([1, 4, 9], [3, 5], rhos=[0.3, 0.2, 0.1], siblings=[5, 3],
                               p=0.4, known=1, prior="truncated:40")
    assert calls == {name: 1 for name in (
        "x_stars", "y_stars", "rhos: rho_1", "rhos: rho_2", "rhos: rho_3", "siblings: d_2",
        "siblings: d_3", "p", "known", "prior", "upper", "tail_mass")}


@pytest.mark.parametrize("method", ["exact", "gibbs"])
def test_posterior_summary_validates_each_parameter_once(calls, method):
    options = {"draws": 100, "chains": 2, "random_seed": 1} if method == "gibbs" else {}
    sampling.posterior_summary(2, 1, -1, **CENSUS, p=0.3, known=1, method=method, **options)
    expected = ["x1_star", "x2_star", "y1_star", "rho1", "rho2", "d", "p", "known", "prior"]
    if method == "gibbs":
        expected += ["draws", "chains", "tune", "cores"]
    assert calls == dict.fromkeys(expected, 1)


def test_nested_posterior_summary_validates_each_parameter_once(calls):
    nested.posterior_summary(x_stars=[1, 4, 9], y_stars=[3, 5], rhos=[0.3, 0.2, 0.1],
                                 siblings=[5, 3], p=0.4, known=1)
    assert calls == {name: 1 for name in (
        "x_stars", "y_stars", "rhos: rho_1", "rhos: rho_2", "rhos: rho_3", "siblings: d_2",
        "siblings: d_3", "p", "known", "prior", "tail_mass")}


@pytest.mark.parametrize("method", ["exact", "mc"])
def test_two_level_marginal_validates_each_parameter_once(calls, method):
    """The call behind ``dprisk marginal --rho2 …`` (before: 58 validator calls, 22 on a ρ)."""
    options = {"datasets": 50, "draws": 20, "random_seed": 1} if method == "mc" else {}
    studies.marginal_summary(**CENSUS, x2=3, p=0.3, known=1, method=method, **options)
    expected = ["rho1", "rho2", "d", "p", "known", "prior", "x2"]
    expected += ["datasets", "draws"] if method == "mc" else ["tail_mass"]
    assert calls == dict.fromkeys(expected, 1)
