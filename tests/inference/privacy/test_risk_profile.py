"""Tests of inference/privacy/risk_profile.py: Kazan & Reiter's risk-profile epsilon for pure DP.

Published values (the issue, from the authors' paper and R code): max(3, 0.25/p) -> 1.299283
at p = 1/12; max(3, 0.15/p) -> 1.209838; max(3, 0.25/(pq)) -> 0.649641 (their grid: 0.6506).
The minimum is checked against dense grids, and the epsilon it returns against the
definition: at epsilon*, the worst-case posterior-to-prior ratio of an epsilon-DP release
e^eps / (1 + p (e^eps - 1)) meets the profile at every prior (q = 1).
"""

import math
import warnings

import numpy as np
import pytest

from dprisk.inference.privacy.risk_profile import PureDPBudget, epsilon_for_prior, pure_dp_budget


def test_published_values():
    first = pure_dp_budget(3, 0.25)
    assert isinstance(first, PureDPBudget) and isinstance(first.epsilon, float)
    assert first.epsilon == pytest.approx(1.299283, abs=1e-6)
    assert first.epsilon == pytest.approx(math.log(11 / 3), rel=1e-14)
    assert first.binding_p == pytest.approx(1 / 12, rel=1e-14) and first.binding_q == 1.0
    assert pure_dp_budget(3, 0.15).epsilon == pytest.approx(1.209838, abs=1e-6)
    joint = pure_dp_budget(3, 0.25, q=None)
    assert joint.epsilon == pytest.approx(0.649641, abs=1e-6)
    assert joint.epsilon < 0.6506  # below the authors' grid value
    assert joint.binding_p == pytest.approx(1.0, abs=1e-9)
    assert joint.binding_q == pytest.approx(1 / 12, rel=1e-6)


def test_q_formula_tends_to_the_presence_only_formula():
    for p in (0.01, 0.1, 0.3):
        exact = math.log((1 - p) / (1 / max(3, 0.25 / p) - p)) if max(3, 0.25 / p) * p < 1 \
            else math.inf
        assert epsilon_for_prior(p, 1.0, 3, 0.25) == pytest.approx(exact, rel=1e-14)
        assert epsilon_for_prior(p, 1 - 1e-9, 3, 0.25 / (1 - 1e-9)) == pytest.approx(exact,
                                                                                   rel=1e-6)


def test_the_q_formula_equals_its_unrationalised_form():
    for p, q in ((0.2, 0.5), (0.9, 0.1), (1.0, 0.3), (0.05, 0.95)):
        ratio = max(3, 0.25 / (p * q))
        direct = math.log(2 * p * (1 - q) / (math.sqrt(
            (1 - p) ** 2 + 4 * p * (1 - q) * (1 / ratio - p * q)) - (1 - p)))
        assert epsilon_for_prior(p, q, 3, 0.25) == pytest.approx(direct, rel=1e-12)


def _epsilon_grid(p, q, ratio, posterior):
    """The docstring's epsilon(p, q), stable form, over numpy arrays (inf where vacuous)."""
    profile = np.maximum(ratio, posterior / (p * q))
    slack = 1.0 / profile - p * q
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.sqrt((1 - p) ** 2 + 4.0 * p * (1.0 - q) * slack)
        value = np.log((root + (1 - p)) / (2.0 * slack))
    return np.where(slack > 0, value, np.inf)


def test_grid_formula_is_epsilon_for_prior():
    """The vectorised grid below computes epsilon_for_prior itself (to rounding)."""
    rng = np.random.default_rng(20261126)
    for ratio, posterior in [(3, 0.25), (3, 0.15), (10, 0.5), (1.5, 0.05)]:
        for p, q in rng.uniform(1e-3, 1.0, size=(200, 2)):
            assert _epsilon_grid(p, q, ratio, posterior) == pytest.approx(
                epsilon_for_prior(p, q, ratio, posterior), rel=1e-13)


@pytest.mark.parametrize(("ratio", "posterior"), [(3, 0.25), (3, 0.15), (10, 0.5), (1.5, 0.05)])
@pytest.mark.parametrize("q", [1.0, 0.5, 0.1, None])
def test_minimum_is_below_every_grid_point(ratio, posterior, q):
    answer = pure_dp_budget(ratio, posterior, q=q)
    qs = np.linspace(0.01, 1.0, 100) if q is None else np.array([q])
    ps = np.linspace(1e-3, 1.0, 1000)
    p_grid, q_grid = np.meshgrid(ps, qs)
    keep = ~((q_grid == 1.0) & (p_grid == 1.0))
    grid = _epsilon_grid(p_grid[keep], q_grid[keep], ratio, posterior).min()
    assert answer.epsilon <= grid + 1e-12
    assert answer.epsilon >= grid - 0.02  # and close to it
    assert epsilon_for_prior(answer.binding_p, answer.binding_q, ratio, posterior) \
        == pytest.approx(answer.epsilon, rel=1e-12)


def test_profile_met_at_epsilon_star():
    """Round trip (q = 1): at epsilon*, every prior's worst-case ratio is within r*(p)."""
    epsilon = pure_dp_budget(3, 0.25).epsilon
    ps = np.linspace(1e-4, 1 - 1e-4, 5000)
    worst = np.exp(epsilon) / (1 + ps * np.expm1(epsilon))
    assert np.all(worst <= np.maximum(3, 0.25 / ps) * (1 + 1e-12))
    above = epsilon * (1 + 1e-6)
    p = 1 / 12
    assert math.exp(above) / (1 + p * math.expm1(above)) > max(3, 0.25 / p)


def test_closed_form_for_q_1():
    for ratio, posterior in ((3, 0.25), (5, 0.5), (1.2, 0.01)):
        expected = math.log((ratio - posterior) / (1 - posterior))
        assert pure_dp_budget(ratio, posterior).epsilon == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"max_ratio": 1.0, "max_posterior": 0.2}, "max_ratio"),
    ({"max_ratio": float("nan"), "max_posterior": 0.2}, "max_ratio"),
    ({"max_ratio": 3.0, "max_posterior": 1.0}, "max_posterior"),
    ({"max_ratio": 3.0, "max_posterior": 0.0}, "max_posterior"),
    ({"max_ratio": 3.0, "max_posterior": 0.2, "q": 0.0}, "q"),
    ({"max_ratio": 3.0, "max_posterior": 0.2, "q": 1.5}, "q"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    ratio, posterior = kwargs.pop("max_ratio"), kwargs.pop("max_posterior")
    with pytest.raises(ValueError, match=name):
        pure_dp_budget(ratio, posterior, **kwargs)


def test_a_boolean_prior_or_a_string_ratio_is_refused():
    """True was read as p = 1 or q = 1 (epsilon_for_prior(True, 0.5, 3, 0.25) = inf,
    pure_dp_budget(3, 0.25, q=True) = 1.2993, the q = 1 answer) and the string '3' as the
    ratio 3 (epsilon 1.8663): a TypeError naming the parameter, as a boolean max_posterior
    already was."""
    with pytest.raises(TypeError, match=r"^p must be a number"):
        epsilon_for_prior(True, 0.5, 3.0, 0.25)
    with pytest.raises(TypeError, match=r"^q must be a number"):
        epsilon_for_prior(0.5, True, 3.0, 0.25)
    with pytest.raises(TypeError, match=r"^q must be a number"):
        pure_dp_budget(3.0, 0.25, q=True)
    with pytest.raises(TypeError, match=r"^max_ratio must be a number"):
        epsilon_for_prior(0.5, 0.5, "3", 0.25)
    assert epsilon_for_prior(1, 0.5, 3.0, 0.25) == math.inf  # the integer 1 stays p = 1


@pytest.mark.parametrize("q", [None, 1.0, 0.5, 1e-10, 1e-300, 0.9999999999999999])
@pytest.mark.parametrize(("ratio", "posterior"), [
    (1.0000000000000002, 0.9999999999999999), (1.0000000000000002, 0.5), (3.0, 1e-300),
    (1e6, 0.9999999999999999), (1e300, 0.5), (1e300, 0.9999999999999999),
])
def test_extreme_profiles_compute_without_warnings(ratio, posterior, q):
    """Where the profile's two branches meet within rounding (a and r within an ulp of 1, or
    a tiny q), 1/r* - pq cancelled to 0 inside the searched intervals: infinite epsilons
    entered Brent's parabolic step (scipy's RuntimeWarnings, invalid value) and the ratio
    1/(2 slack) overflowed. pytest turns warnings into errors (pyproject's filterwarnings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        answer = pure_dp_budget(ratio, posterior, q=q)
    assert math.isfinite(answer.epsilon) and answer.epsilon >= 0
    if q == 1.0:
        want = math.log(ratio - posterior) - math.log1p(-posterior)
        assert answer.epsilon == pytest.approx(want, rel=1e-12)


def test_presence_and_any_q_at_an_ulp_above_one():
    # q = 1: log[(r - a)/(1 - a)] = log 3; over q as well, half of it (p = 1)
    answer = pure_dp_budget(1.0000000000000002, 0.9999999999999999, q=None)
    assert answer.epsilon == pytest.approx(math.log(3) / 2, rel=1e-9)
    assert pure_dp_budget(1.0000000000000002, 0.9999999999999999).epsilon == pytest.approx(
        math.log(3), rel=1e-12)


def test_a_kink_below_the_smallest_normal_double_is_refused():
    with pytest.raises(ValueError, match=r"^max_posterior / \(q max_ratio\) = .* below 2.23e-308"):
        pure_dp_budget(1e300, 1e-300)
    with pytest.raises(ValueError, match=r"^max_posterior / \(max_ratio\) = .* below 2.23e-308"):
        pure_dp_budget(1e10, 1e-300, q=None)
