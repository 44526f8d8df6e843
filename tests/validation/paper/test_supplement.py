"""Tests of validation.supplement: CLI helpers, data builders, records, study; S1.1 shifts.

References: mpmath (variance of the discrete Gaussian at 60 digits), direct Bayes with the
pmf, the other inference modules (closed forms checked elsewhere). The S1.1 tests check the
exact shift by m of the single-level and unique-levels functions (equality to rounding: the
log-odds depend on x* - m only, computed in integers, so rtol 0 where the float path is the
same and 1e-15 where it is not).
"""

import mpmath
import numpy as np
import pytest
from census_values import RHO_BLOCK
from study_checks import numbers_without_units_in_results

from dprisk.inference.nested import unique_levels as ul
from dprisk.inference.single_level import closed_form as sl
from dprisk.inference.single_level import sequential
from dprisk.models.census.allocation import census_rhos
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.mechanism.dg_sums import total_variation
from dprisk.validation.paper import published as pub
from dprisk.validation.paper import supplement as supp
from dprisk.validation.paper import supplement_s6
from dprisk.validation.paper.claims import is_claim
from dprisk.validation.paper.records import CLAIM_STATUSES
from dprisk.validation.report.build import RECORD_KEYS, validate_records

PRIORS = np.array([0.5, 0.2, 0.1, 0.02, 1 / 864])




# --------------------------------------------------------------------------- S1.1 / S1.2
@pytest.mark.parametrize("m", [1, 5, 40])
def test_single_level_results_shift_by_m_exactly(m):
    x = np.arange(-8, 12)
    for rho in (RHO_BLOCK, 0.7):
        for fn in (sl.posterior, sl.risk, sl.log_posterior_odds, sl.log_risk):
            np.testing.assert_array_equal(fn(x + m, rho, PRIORS[:, None], m),
                                          fn(x, rho, PRIORS[:, None], 0))
        np.testing.assert_array_equal(sl.release_pmf(x + m, rho, m), sl.release_pmf(x, rho, 0))
        np.testing.assert_array_equal(sl.decision_threshold(rho, PRIORS, m),
                                      sl.decision_threshold(rho, PRIORS, 0) + m)
        for fn in (sl.marginal_posterior, sl.marginal_risk, sl.p_correct):
            np.testing.assert_array_equal(fn(rho, PRIORS, m), fn(rho, PRIORS, 0))


@pytest.mark.parametrize("m", [1, 7])
def test_unique_levels_and_sequential_results_shift_by_m_exactly(m):
    rhos = np.array(census_rhos(3))
    x = np.random.default_rng(11).integers(-5, 8, size=(20, 3))
    for fn in (ul.posterior_unique_levels, ul.log_posterior_odds_unique_levels,
               sequential.sequential_posterior):
        np.testing.assert_array_equal(fn(x + m, rhos, 0.2, m), fn(x, rhos, 0.2, 0))
    shifted = sequential.sequential_risk(x + m, rhos, 0.2, m)
    base = sequential.sequential_risk(x, rhos, 0.2, 0)
    np.testing.assert_array_equal(shifted.cumulative, base.cumulative)
    for method in ("enumerate", "contour"):
        np.testing.assert_array_equal(
            ul.marginal_posterior_unique_levels(rhos, PRIORS, m, method=method),
            ul.marginal_posterior_unique_levels(rhos, PRIORS, 0, method=method))
    np.testing.assert_array_equal(ul.p_correct_unique_levels(rhos, PRIORS, m),
                                  ul.p_correct_unique_levels(rhos, PRIORS, 0))
    np.testing.assert_array_equal(ul.marginal_posterior_sweep(rhos, PRIORS, m).marginal_posterior,
                                  ul.marginal_posterior_sweep(rhos, PRIORS, 0).marginal_posterior)
    assert ul.unique_levels_summary(rhos, 0.2, m) == ul.unique_levels_summary(rhos, 0.2, 0)


def test_shifted_posterior_equals_direct_bayes_with_known_m():
    """Independent of the shift argument: Bayes with pmfs centred at m and m + 1."""
    m, rho, p = 6, 0.3, 0.1
    x = np.arange(m - 6, m + 9)
    like_1, like_0 = dg.pmf(x, m + 1, rho), dg.pmf(x, m, rho)
    np.testing.assert_allclose(sl.posterior(x, rho, p, m),
                               p * like_1 / (p * like_1 + (1 - p) * like_0), rtol=1e-13)


# --------------------------------------------------------------------------- S2
@pytest.mark.parametrize("s", [0.05, 0.3, 0.5, 0.5 + 1e-9, 1.0, 2.0, 10.0, 100.0])
def test_variance_gap_against_mpmath(s):
    with mpmath.workdps(60):
        rho = 1 / (2 * mpmath.mpf(s))
        k = range(-400, 401)
        z = mpmath.fsum(mpmath.exp(-rho * j * j) for j in k)
        var = mpmath.fsum(j * j * mpmath.exp(-rho * j * j) for j in k) / z
        ref = mpmath.mpf(s) - var
    assert float(supp.variance_gap(s)) == pytest.approx(float(ref), rel=1e-12)


def test_variance_claims_and_figure7_data():
    data = supp.figure7_data(np.logspace(-2, 2, 101))
    np.testing.assert_allclose(data["variance"] + data["gap"], data["s"], rtol=1e-14)
    assert np.all(data["gap"] >= 0)
    assert np.all(data["gap"].where(data["s"] < 30, drop=True) > 0)  # underflows beyond
    records = {r["id"]: r for r in supp._variance_records()}
    assert records["s2/variance_gap/s>0.5"]["computed"] == pytest.approx(1.0209e-3, rel=1e-3)
    assert records["s2/variance_gap/s>1"]["computed"] == pytest.approx(2.112e-7, rel=1e-3)
    # claims of the paper: the bound holds for the measured largest gap (no published number)
    assert all(r["status"] == "holds" and r["published"] is None for r in records.values())


def test_figure8_data_against_dg_sums():
    data = supp.figure8_data()
    assert data["pmf_sum"].dims == ("case", "value") and data.sizes["case"] == 4
    np.testing.assert_allclose(data["pmf_sum"].sum("value"), 1.0, atol=1e-14)
    np.testing.assert_allclose(data["pmf_approximation"].sum("value"), 1.0, atol=1e-14)
    for i, (rho, n) in enumerate(supp.FIGURE8_CASES):
        assert float(data["total_variation"][i]) == pytest.approx(total_variation(n, rho),
                                                                  rel=1e-6, abs=1e-15)
    tv = data["total_variation"].values
    assert tv[2] > 1e-4 and tv[3] > tv[2]  # rho = 1: visible, larger for n = 5
    assert tv[0] < 1e-14 and tv[1] < 1e-14  # rho = 0.0992: rounding level


# --------------------------------------------------------------------------- S5
def test_composition_data_product_identity():
    data = supp.composition_data(x_values=range(-1, 3))
    product = data["per_release_risk"].prod("release")
    np.testing.assert_allclose(product, data["joint_risk"], rtol=1e-13)
    np.testing.assert_allclose(data["cumulative_risk"].isel(release=-1), data["joint_risk"],
                               rtol=1e-13)
    # the joint risk equals direct Bayes over three releases
    x = np.array([2, -1, 1])
    like_1 = np.prod(dg.pmf(x, 1, RHO_BLOCK))
    like_0 = np.prod(dg.pmf(x, 0, RHO_BLOCK))
    direct = like_1 / (0.5 * like_1 + 0.5 * like_0)
    got = data["joint_risk"].sel(x1_star_1=2, x1_star_2=-1, x1_star_3=1, p=0.5)
    assert float(got) == pytest.approx(direct, rel=1e-13)
    # generalised marginal risk after m releases grows with m
    assert np.all(np.diff(data["marginal_risk"].values, axis=0) > 0)
    (record,) = supp._composition_records(data)
    assert record["status"] == "holds" and record["computed"] < 1e-13


# --------------------------------------------------------------------------- S1.3 / S6
def test_figure11_data_small():
    data = supp.figure11_data(n_levels=3)
    assert data["marginal_posterior"].dims == ("levels", "p")
    for ell in (1, 2, 3):
        exact = ul.marginal_posterior_unique_levels(census_rhos(ell), PRIORS, method="enumerate")
        np.testing.assert_allclose(data["marginal_posterior"].sel(levels=ell), exact,
                                   rtol=1e-13)
        np.testing.assert_array_equal(data["p_correct"].sel(levels=ell),
                                      ul.p_correct_unique_levels(census_rhos(ell), PRIORS))
    np.testing.assert_allclose(data["marginal_risk"], data["marginal_posterior"] / data["p"],
                               rtol=1e-15)
    assert list(data["level_name"].values) == ["block", "block-group", "tract"]


def test_figure10_data_small_grids():
    left, right = supplement_s6.figure10_data(rho_grid=[0.03, 1.0, 5.0], x2_tilde_max=12,
                                     x2_tilde_lines=(1, 10))
    assert left.sizes["x2_tilde"] == 12 and right["marginal_posterior"].dims == (
        "rho1", "x2_tilde")
    assert RHO_BLOCK in right["rho1"].values  # the Census rho is always on the grid
    assert np.all(np.diff(left["marginal_posterior"]) > 0)
    assert np.all(left["marginal_posterior"] <= left["before_postprocessing"])
    assert np.all(right["marginal_posterior"] <= right["before_postprocessing"] + 1e-15)
    assert float(left["no_postprocessing"]) == pytest.approx(
        float(sl.marginal_posterior(RHO_BLOCK, 0.5)), rel=1e-15)


# --------------------------------------------------------------------------- the study
def test_study_records_cover_the_published_supplement_claims(supplement_study_result):
    records = supplement_study_result.records
    validate_records(records)
    assert all(tuple(sorted(r)) == tuple(sorted(RECORD_KEYS)) for r in records)
    ids = {r["id"] for r in records}
    mine = [p.id for p in pub.select("s1.3/") + pub.select("s2/")
            if p.computed_by in ("unique_levels", "dg_sums")]
    assert mine and set(mine) <= ids
    assert "s1.3/rho_levels_3_6" not in ids  # reported by the single-level study
    by_id = {r["id"]: r for r in records}
    assert by_id["s1.3/largest_increase_level"]["computed"] == 2
    assert by_id["s5/product_identity"]["status"] == "holds"
    assert by_id["s6/fig10_left/data_processing_bound"]["status"] == "holds"
    assert by_id["s6/fig10_right/data_processing_bound"]["status"] == "holds"
    # every record of a qualitative statement is a claim with its measured quantity
    for rid, record in by_id.items():
        assert (record["status"] in CLAIM_STATUSES) == is_claim(rid)
        if is_claim(rid):
            assert record["published"] is None and np.isfinite(record["computed"])
    for record in records:
        if record["id"] in set(pub.ids()) and not is_claim(record["id"]):
            assert record["published"] == pub.get(record["id"]).value
        assert record["mcse"] is None


def test_every_number_of_the_study_has_units(supplement_study_result, tmp_path):
    # results.nc's supplement groups had no units on rho (Figures 7, 8, 11, 12 right), n
    # (Figure 8), the levels (Figure 11), the S5 release counters and S6's x~2
    result = supplement_study_result
    assert not numbers_without_units_in_results(result.name, result.datasets,
                                                tmp_path / "results.nc")


def test_study_datasets_figures_and_paper_values(supplement_study_result):
    assert supplement_study_result.name == "supplement"
    assert set(supplement_study_result.figures) == {"figure7", "figure8", "figure10", "figure11"}
    f11 = supplement_study_result.datasets["figure11"]
    assert dict(f11["marginal_posterior"].sizes) == {"levels": 6, "p": 5}
    # S1.3: increasing in ell for every prior, largest step from ell = 1 to 2
    steps = np.diff(f11["marginal_risk"].values, axis=0)
    assert np.all(steps > 0) and np.all(np.argmax(steps, axis=0) == 0)
    # ell = 1 is Table 2 of the paper (single level)
    np.testing.assert_allclose(f11["marginal_posterior"].sel(levels=1),
                               sl.marginal_posterior(RHO_BLOCK, PRIORS), rtol=1e-14)
    np.testing.assert_allclose(f11["marginal_posterior_contour"], f11["marginal_posterior"],
                               rtol=1e-13)
    notes = supplement_study_result.notes
    assert notes and all(isinstance(n, str) for n in notes)


def test_supplement_claims_apply_the_criteria_they_state():
    """Each supplement claim's status follows the relation the page states for it
    (:data:`dprisk.validation.paper.claims.CLAIMS`), on data chosen to fail each one: the
    largest step at ell = 2 for EVERY prior, every step of R > 0, contour vs exact sum
    < 1e-13, total variation < 0.01, the product identity <= 1e-12."""
    import xarray as xr

    steps = xr.Dataset(
        {"marginal_posterior": (("ell", "p"), np.cumsum([[0.1, 0.1], [0.3, 0.1], [0.1, 0.3],
                                                          [0.05, 0.05]], axis=0)),
         "marginal_risk": (("ell", "p"), [[1.0, 1.0], [1.2, 1.1], [1.3, 1.099], [1.4, 1.2]]),
         },
        coords={"p_label": ("p", ["1/2", "1/5"])})
    steps["marginal_posterior_contour"] = steps["marginal_posterior"] * (1 + 1e-9)
    status = {r["id"]: r["status"] for r in supp._largest_step_records(steps)}
    assert status == {"s1.3/largest_increase_level": "does not hold",  # ell 2 and 3
                      "s1.3/risk_increases_with_levels": "does not hold",  # a step of -0.001
                      "s1.3/contour_vs_exact_sum": "does not hold"}  # 1e-9 apart
    tv = xr.Dataset({"rho": ("case", [0.0992, 0.0992]), "n": ("case", [27, 5]),
                     "total_variation": ("case", [0.05, 0.009])},
                    coords={"case": ["a", "b"]})
    assert [r["status"] for r in supp._approximation_records(tv)] == ["does not hold", "holds"]
    risks = xr.Dataset({"per_release_risk": (("release", "x"), [[2.0, 1.5], [1.5, 1.0]]),
                        "joint_risk": ("x", [3.0 * (1 + 1e-10), 1.5]),
                        "cumulative_risk": (("release", "x"), [[2.0, 1.5], [3.0, 1.5]])},
                       attrs={"rho": 0.5})
    (record,) = supp._composition_records(risks)
    assert record["status"] == "does not hold" and record["computed"] == pytest.approx(1e-10,
                                                                                        rel=1e-5)


def test_variance_claim_can_fail(monkeypatch):
    """S2's bound verdict compares the largest gap with the published bound itself.

    The measured gaps (1.02e-3 and 2.1e-7) sit 2.0 and 4.7 times below their bounds (2e-3,
    1e-6), so a loosened verdict (10 times the bound) kept "holds": a variance gap five times
    as large must be refused.
    """
    real = supp.variance_gap
    monkeypatch.setattr(supp, "variance_gap", lambda s: 5 * real(s))
    records = supp._variance_records()
    assert [r["status"] for r in records] == ["does not hold"] * 2
