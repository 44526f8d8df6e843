"""Tests of validation.single_level_paper: computed tables and published-vs-computed records."""

import numpy as np
import pytest
import xarray as xr
from census_values import RHO_BLOCK
from study_checks import numbers_without_units_in_results

from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.validation.paper import published as pub
from dprisk.validation.paper.claims import is_claim
from dprisk.validation.report.build import RECORD_KEYS, validate_records


@pytest.fixture(scope="module")
def tables(single_level_study_result):
    """``slp.computed_tables()``, as the study holds them (``tests/validation/conftest.py``)."""
    return single_level_study_result.datasets["tables"]


@pytest.fixture(scope="module")
def records(single_level_study_result):
    """``slp.compare_to_published`` of the tables (about 0.2 s of CPU), as the study holds it."""
    return {r["id"]: r for r in single_level_study_result.records}


def test_records_have_report_keys_and_cover_every_single_level_number(records):
    validate_records(list(records.values()))
    assert all(tuple(sorted(r)) == tuple(sorted(RECORD_KEYS)) for r in records.values())
    expected = {r.id for r in pub.PUBLISHED if r.computed_by in ("single_level", "census")}
    expected |= {r.id for r in pub.PUBLISHED if r.kind == "count"}
    assert set(records) == expected
    assert all(r["mcse"] is None for r in records.values())
    for rid, record in records.items():
        if is_claim(rid):  # a qualitative statement: the measured quantity, holds or not
            assert record["published"] is None and np.isfinite(record["computed"])
            assert record["status"] == ("holds" if pub.agrees(pub.get(rid), record["computed"])
                                        else "does not hold")
            continue
        assert record["published"] == pub.get(rid).value
        assert record["status"] == ("match" if pub.agrees(pub.get(rid), record["computed"])
                                    or rid.startswith(("table2/geolevel", "table2/query",
                                                       "text4.2/p=1/2/threshold",
                                                       "text4.2/risk_above"))
                                    else "differs")


def test_tables_against_direct_bayes(tables):
    """Independent reference: Bayes' rule with the pmf, not the log-odds closed form."""
    x = tables["x1_star"].values[:, None]
    p = tables["p"].values[None, :]
    like_1, like_0 = dg.pmf(x, 1, RHO_BLOCK), dg.pmf(x, 0, RHO_BLOCK)
    posterior = p * like_1 / (p * like_1 + (1 - p) * like_0)
    np.testing.assert_allclose(tables["posterior"], posterior, rtol=1e-12)
    np.testing.assert_allclose(tables["risk"], posterior / p, rtol=1e-12)
    grid = np.arange(-80, 83)  # pmf > 1e-280, neglected mass < 1e-270
    g_1, g_0 = dg.pmf(grid, 1, RHO_BLOCK)[:, None], dg.pmf(grid, 0, RHO_BLOCK)[:, None]
    marginal = np.sum(g_1 * p * g_1 / (p * g_1 + (1 - p) * g_0), axis=0)
    np.testing.assert_allclose(tables["marginal_posterior"], marginal, rtol=1e-13)
    np.testing.assert_allclose(tables["mass"], dg.pmf(tables["x1_star"], 1, RHO_BLOCK),
                               rtol=0)


def test_table1_posterior_and_risk_columns_match(records):
    table1 = [r for rid, r in records.items() if rid.startswith("table1/") and
              not rid.endswith("/mass")]
    assert len(table1) == 45
    assert all(r["status"] == "match" for r in table1)
    # the unrounded rho is needed: at 0.099 some cells would not round to the printed value
    assert sum("would give" in r["explanation"] for r in table1) >= 3


def test_table1_mass_column_is_the_release_pmf_given_x1_zero(records, tables):
    for k in range(1, 6):
        record = records[f"table1/x1_star={k}/mass"]
        assert record["status"] == "differs"
        assert "P[X1*=x1*|X1=0]" in record["explanation"]
        assert "alternative=" in record["explanation"]
        assert pub.agrees(pub.get(f"table1/x1_star={k}/mass"),
                          float(tables["mass_given_x1_0"].sel(x1_star=k)))
        # ... which is the caption's quantity one row down
        assert float(tables["mass_given_x1_0"].sel(x1_star=k)) == pytest.approx(
            float(dg.pmf(k + 1, 1, RHO_BLOCK)), rel=1e-15)
    for k in (4, 5):
        assert records[f"text4.2/x1_star={k}/mass"]["status"] == "differs"


def test_table2_and_quoted_probabilities_match(records):
    for label in ("1/2", "1/5", "1/10", "1/50", "1/864"):
        assert records[f"table2/p={label}/posterior"]["status"] == "match"
        assert records[f"table2/p={label}/risk"]["status"] == "match"
    for rid in ("text4.2/p=1/2/p_correct", "text4.2/p=1/5/rho=0.5/p_correct",
                "text4.2/p=1/5/rho=0.6/p_correct", "fig6/no_hierarchy/p_correct",
                "text4.3/no_hierarchy/posterior", "text4.2/p=1/5/rho=0.5/threshold",
                "text4.2/p=1/2/threshold", "text4.2/risk_above_one_from"):
        assert records[rid]["status"] == "match", rid
    assert records["text4.2/p=1/2/p_correct"]["computed"] == pytest.approx(0.58886, abs=1e-5)


def test_census_numbers(records):
    for level in ("us", "state", "county", "tract", "block-group", "block"):
        assert records[f"table2/census_rho/{level}"]["status"] == "match"
        assert records[f"table2/geolevel_share/{level}"]["status"] == "match"
        assert records[f"table2/query_share/{level}"]["status"] == "match"
    epsilon = records["text2.3/epsilon"]
    assert epsilon["status"] == "differs" and "truncated" in epsilon["explanation"]
    assert epsilon["computed"] == pytest.approx(17.9153, abs=1e-4)
    assert records["text4.3/rho2"]["status"] == "match"
    assert records["fig5/caption/rho2"]["status"] == "differs"


def test_differing_records_are_exactly_the_known_ones(records):
    differs = {rid for rid, r in records.items() if r["status"] == "differs"}
    expected = {f"table1/x1_star={k}/mass" for k in range(1, 6)}
    expected |= {"text4.2/x1_star=4/mass", "text4.2/x1_star=5/mass",
                 "text4.2/table2_risk_range/max", "text2.3/epsilon", "fig5/caption/rho2"}
    assert differs == expected
    assert all(records[rid]["explanation"] for rid in differs)
    fails = {rid for rid, r in records.items() if r["status"] == "does not hold"}
    claimed = {f"text4.2/fig2/rho=0.25/p={lab}/risk" for lab in
               ("1/2", "1/5", "1/10", "1/50", "1/864")}
    claimed |= {"text4.2/fig2/rho=5/p=1/50/posterior", "text4.2/fig2/rho=5/p=1/864/posterior"}
    assert fails == claimed
    assert all(records[rid]["explanation"] for rid in fails)


def test_dataset_is_labelled_and_writes_to_netcdf(tables, tmp_path):
    assert tables["posterior"].dims == ("x1_star", "p")
    assert list(tables["p_label"].values) == ["1/2", "1/5", "1/10", "1/50", "1/864"]
    assert tables["p"].values[-1] == pytest.approx(1 / 864)
    assert list(tables["x1_star"].values) == [1, 2, 3, 4, 5]
    assert tables.attrs["rho1"] == RHO_BLOCK
    path = tmp_path / "tables.nc"
    tables.to_netcdf(path, engine="netcdf4")
    back = xr.open_dataset(path, engine="netcdf4").load()
    xr.testing.assert_allclose(back, tables)


def test_study_for_the_report(single_level_study_result, tmp_path):
    result = single_level_study_result
    # the Census allocation (census_rho, geolevel_share, query_share) had no units
    assert not numbers_without_units_in_results(result.name, result.datasets,
                                                tmp_path / "results.nc")
    assert result.name == "single_level"
    assert set(result.figures) == {"figure1", "figure2", "figure3"}
    assert {"tables", "figure1", "figure2", "figure3"} <= set(result.datasets)
    validate_records(result.records)
    tree = xr.DataTree.from_dict({f"/{result.name}/{k}": v for k, v in result.datasets.items()})
    assert "figure2" in tree[result.name].children
