"""Tests of inference/two_level/prior_check.py and of the three worked prior files.

Each worked file (docs/priors.md) loads, is found proper with mass 1 (summed exactly: the
tolerance 1e-12 is rounding of at most ~10^4 terms), and its exact posterior equals a
brute-force sum of the joint posterior over k2 computed from weights typed in from the
file's formula (paper §3.2, S3), to 1e-10 (the exact path's tail mass is 1e-12 per branch).
"""

import math

import numpy as np
import pytest

from dprisk.inference.two_level.exact import exact_posterior
from dprisk.inference.two_level.prior_check import CENSUS_RELEASES, check_prior
from dprisk.models.census.allocation import census_rhos

RHO1, RHO2 = census_rhos(2)


def _geometric(k2, k1):
    return math.log(0.2) + (k2 - k1) * math.log(0.8) if k2 >= k1 else -math.inf


def _table(k2, k1):
    bins = ((0, 0), (1, 2), (3, 5), (6, 10), (11, 20), (21, 40))
    counts = (120, 210, 260, 230, 130, 50)
    j = k2 - k1
    for (first, last), count in zip(bins, counts, strict=True):
        if first <= j <= last:
            return math.log(count / sum(counts) / (last - first + 1))
    return -math.inf


def _mixture(k2, k1):
    if not k1 <= k2 <= 60:
        return -math.inf
    uniform = 1 / (60 - k1 + 1)
    return math.log(0.7 * (k2 == 12) + 0.3 * uniform if 12 >= k1 else uniform)


WORKED = {
    "models/examples/geometric_prior.py:prior": _geometric,
    "models/examples/table_prior.py:prior": _table,
    "models/examples/mixture_prior.py:prior": _mixture,
}


def _brute_posterior(weight, x1s, x2s, y1s, d=27, p=0.5):
    terms = {0: 0.0, 1: 0.0}
    for k1 in (0, 1):
        for k2 in range(k1, 400):
            log_w = weight(k2, k1)
            if log_w == -math.inf:
                continue
            terms[k1] += math.exp(log_w - RHO1 * (x1s - k1) ** 2 - RHO2 * (x2s - k2) ** 2
                                  - RHO1 / d * (y1s - (k2 - k1)) ** 2)
    return p * terms[1] / (p * terms[1] + (1 - p) * terms[0])


@pytest.mark.parametrize("spec", list(WORKED))
def test_worked_files_checked_and_exact_posterior(spec):
    check = check_prior(spec)
    assert check.labelled_proper and check.proper
    for row in check.branches.values():
        assert row["mass_settled"] and abs(row["mass"] - 1) < 1e-12
    for i, release in enumerate(CENSUS_RELEASES):
        want = _brute_posterior(WORKED[spec], *release)
        assert check.posterior_prior[i] == pytest.approx(want, rel=1e-10)
        got = exact_posterior(*release, rho1=RHO1, rho2=RHO2, d=27, prior=spec).prob_x1
        assert got == pytest.approx(want, rel=1e-10)


def test_default_prior_moves_nothing_and_improper_found_improper():
    check = check_prior("improper")
    assert check.max_posterior_shift == 0.0
    assert not check.proper and not check.labelled_proper
    assert not check.branches[0]["mass_settled"]
    payload = check.to_json()
    assert set(payload) == {"spec", "description", "labelled_proper", "proper",
                            "log_weight_max", "branches", "census", "max_posterior_shift"}
    assert set(payload["branches"]["0"]) == {"lower", "upper", "mass", "mass_upto",
                                             "mass_settled"}


def test_point_mass_below_known_plus_one_has_an_empty_branch():
    check = check_prior("point:0")
    assert check.branches[1]["mass_upto"] is None
    assert check.branches[0]["mass"] == 1.0 and check.proper
    np.testing.assert_array_equal(check.posterior_prior, 0.0)


@pytest.mark.parametrize(("releases", "error", "match"), [
    # before: int() truncated 1.5 to 1 and compared at the release (1, 2, 3) silently
    ([(1.5, 2, 3)], ValueError, r"^releases must be an integer, got 1.5"),
    ([], ValueError, r"^releases must not be empty"),  # before: "not enough values to unpack"
    ("abc", TypeError, r"^releases must be a sequence of \(x1\*, x2\*, y1\*\) integer triples"),
    ([(1, 2)], ValueError, r"shape \(n, 3\) with n >= 1, got shape \(1, 2\)"),
    ([(2**60, 1, 1)], ValueError, r"^releases must be an integer >= -2\*\*53"),
])
def test_bad_releases_are_refused(releases, error, match):
    with pytest.raises(error, match=match):
        check_prior("improper", releases=releases)
    assert check_prior("improper", releases=np.array([[1, 3, 2]])).releases == ((1, 3, 2),)


def test_the_float_constant_rule_of_priors_md_holds_for_its_example():
    """Rule 5 said 'PyTensor makes a bare `0.2` a float32 constant': 0.2 becomes float64
    (float32 does not hold it); floats float32 holds exactly (5.0) become float32, and
    pt.log(5.0) is 3.0e-8 off log 5. The rule's example must be such a constant."""
    import re
    from pathlib import Path

    import pytensor.tensor as pt

    text = (Path(__file__).resolve().parents[3] / "docs" / "priors.md").read_text()
    rule = re.search(r"5\. \*\*Float constants.*?(?=\n6\. )", text, re.S).group(0)
    example = re.search(r"makes a bare `([0-9.]+)` a float32 constant", rule).group(1)
    assert pt.as_tensor_variable(float(example)).dtype == "float32"
    assert pt.as_tensor_variable(0.2).dtype == "float64"
    assert abs(float(pt.log(5.0).eval()) - math.log(5.0)) == pytest.approx(3.0e-8, rel=0.01)
