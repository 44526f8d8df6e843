"""Tests of inference/privacy/das_noise.py: the Census-block answers at the DAS's noise.

Independent references: the block detailed query's sigma^2 from the DAS's own arithmetic in
exact fractions (global_scale 339/542 of the production ini, the geolevel and query shares of
the production strategy: inverse_scale = share x share / global_scale^2, sigma^2 =
1/inverse_scale); the did-the-target-respond P[correct] from the decision rule applied to every
noise value, the pmf in the DAS's form exp(-x^2/(2 sigma^2)) normalised by a direct fsum
(tolerance 1e-13: rounding of a few hundred terms).
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from dprisk.inference.privacy import das_noise
from dprisk.inference.single_level import closed_form as sl

PRIORS = (1 / 2, 1 / 5, 1 / 10, 1 / 50, 1 / 864)


@pytest.fixture(scope="module")
def census():
    return das_noise.das_noise_comparison(census=True, priors=PRIORS)


def test_census_sigma_sq_is_the_das_inverse_scale():
    inverse_scale = Fraction(165, 4099) * Fraction(3945, 4097) / Fraction(339, 542) ** 2
    assert das_noise.census_block_sigma_sq() == pytest.approx(float(1 / inverse_scale),
                                                              rel=1e-15)
    assert das_noise.census_block_sigma_sq() == pytest.approx(10.0928, abs=1e-4)


def test_census_comparison_states_the_query_rho(census):
    """The census comparison's ``rho_query`` is the block ``detailed`` query's rho, the
    inverse scale 1/sigma^2 (exact fractions, rel 1e-15); before this test 1/(2 sigma^2) there
    went unnoticed (the report prints it beside sigma^2)."""
    inverse_scale = Fraction(165, 4099) * Fraction(3945, 4097) / Fraction(339, 542) ** 2
    assert census.rho_query == pytest.approx(float(inverse_scale), rel=1e-15)
    assert census.sigma_sq * census.rho_query == pytest.approx(1.0, rel=1e-15)


def did_respond_p_correct(sigma_sq: float, p: float) -> float:
    """Decide 'responded' iff p f(x - 1) > (1 - p) f(x), x the noisy count minus the others."""
    x = np.arange(-400, 401)
    weight = np.exp(-x.astype(float) ** 2 / (2 * sigma_sq))
    f = dict(zip(x.tolist(), (weight / math.fsum(weight)).tolist(), strict=True))
    return math.fsum(f[eta] for eta in x.tolist()[1:-1]
                     if p * f[eta] > (1 - p) * f[eta + 1])  # truth responded: x = 1 + eta


def test_did_the_target_respond(census):
    half = census.rows[0]
    assert half.p == 0.5
    expected = did_respond_p_correct(census.sigma_sq, 0.5)
    assert half.one_cell.p_correct == pytest.approx(expected, abs=1e-13)
    assert round(half.one_cell.p_correct, 3) == 0.563  # the number
    assert round(half.paper.p_correct, 3) == 0.589  # the paper's convention
    for row in census.rows:
        assert row.one_cell.p_correct == pytest.approx(
            did_respond_p_correct(census.sigma_sq, row.p), abs=1e-13)
        # half the precision: never more than the paper's posterior
        assert row.p < row.one_cell.marginal_posterior < row.paper.marginal_posterior


def test_two_cells_agree_with_half_the_variance_in_posterior_and_risk(census):
    for measure in ("marginal_posterior", "marginal_risk"):
        diff = census.difference("two_cell", measure, "half_variance")
        assert np.max(np.abs(diff)) <= das_noise.AGREE_TOLERANCE
    # P[correct] and accuracy do not: the lattices differ (a visible 1e-3 at p = 1/2)
    pc, at = census.largest_difference("two_cell", "p_correct", "half_variance")
    assert 5e-4 < pc < 5e-3 and at == 0.5
    # the paper's rho (2.56) differs from the production rho ((542/339)^2) by 0.15 %
    post, _ = census.largest_difference("two_cell", "marginal_posterior")
    assert 1e-6 < post < 1e-4
    text = " ".join(census.agreement())
    assert "agree with one cell of variance" in text and "0.5628" in text


def test_rho_form_reads_one_rho_both_ways():
    result = das_noise.das_noise_comparison(rho=0.25, priors=(0.5, 0.2))
    assert result.sigma_sq == 4.0 and result.rho_query == 0.25 and not result.census
    for row in result.rows:
        assert row.paper == row.half_variance
        assert row.one_cell.marginal_posterior == pytest.approx(
            sl.marginal_posterior(1 / 8, row.p), rel=1e-15)
    payload = result.to_dict()
    assert set(payload) >= {"sigma_sq", "rho_query", "rho_paper", "rows", "agreement",
                            "conventions"}
    assert set(payload["rows"][0]) == {"p", "paper", "one_cell", "two_cell", "half_variance"}
    with pytest.raises(ValueError, match="exactly one"):
        das_noise.das_noise_comparison()
    with pytest.raises(ValueError, match="rho"):
        das_noise.das_noise_comparison(rho=-1.0)
