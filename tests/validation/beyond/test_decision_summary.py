"""Tests of validation/beyond/decision_summary.py: the decision summary that opens the report.

The table is decision_summary(census=True) itself (the same numbers, exactly); on the figure's
grid the Bayes accuracy of the two-level adversary never exceeds the worst case of the same
release pair (both are sums of exact tail probabilities, so the tolerance is the study's
TOLERANCE = 1e-9, far above their rounding); at one level the two coincide.
"""

import numpy as np
import pytest
from study_checks import numbers_without_units

from dprisk.inference.privacy.decision_summary import PAPER_PRIORS, decision_summary
from dprisk.validation.beyond import das_noise
from dprisk.validation.beyond import decision_summary as summary_study
from dprisk.validation.figures.captions import DESCRIPTIONS, caption
from dprisk.validation.paper.records import validate_records


@pytest.fixture(scope="module")
def result():
    return summary_study.study()


def test_table_is_the_decision_summary(result):
    table = result.datasets["table"]
    expected = decision_summary(census=True)
    np.testing.assert_array_equal(table["p"].values, PAPER_PRIORS)
    assert list(table["p_label"].values) == ["1/2", "1/5", "1/10", "1/50", "1/864"]
    for name in summary_study.ROW_VARIABLES:
        assert table[name].values.tolist() == [getattr(row, name) for row in expected.rows]
    for key in ("epsilon_bun_steinke", "epsilon_cks", "epsilon_pld_lower",
                "epsilon_pld_upper", "worst_case_accuracy_all", "rho1", "rho2", "delta"):
        assert table.attrs[key] == getattr(expected, key)


def test_bayes_never_exceeds_the_worst_case(result):
    curves = result.datasets["curves"]
    gap = curves["worst_case"] - curves["bayes_two_level"]
    assert float(gap.min()) >= -summary_study.TOLERANCE
    # a visible gap at the Census allocation (the reason for the two-level adversary) ...
    at = gap.sel(rho1=curves.attrs["census_rho1"], p=0.5)
    assert float(at.min()) > 0.01
    # ... and none at one level, where the Bayes rule is the likelihood-ratio test
    table = result.datasets["table"]
    np.testing.assert_allclose(table["accuracy"], table["worst_case_accuracy"],
                               atol=summary_study.TOLERANCE)
    assert curves.attrs["census_rho1"] in curves["rho1"].values


def test_records_hold_and_have_no_published_number(result):
    validate_records(result.records)
    by_id = {record["id"]: record for record in result.records}
    assert set(by_id) == {"summary/bayes_le_worst_case", "summary/one_level_coincidence",
                          "summary/worst_case_all_queries", *das_noise.RECORD_IDS}
    assert all(r["published"] is None and r["status"] == "match" for r in result.records)
    # (1 + TV)/2 at the Census block rho1, p = 1/2 (issue 22)
    assert by_id["summary/one_level_coincidence"]["computed"] == pytest.approx(0.588860,
                                                                                abs=5e-7)


def test_figure_has_its_caption(result):
    assert list(result.figures) == ["decision_summary_accuracy"]
    text = caption(result.figures["decision_summary_accuracy"], "decision_summary_accuracy")
    assert DESCRIPTIONS["decision_summary_accuracy"][1] in text
    assert "two-level adversary" in text and "same two queries" in text


def test_every_number_of_the_section_has_units(result):
    # the decision summary's groups of results.nc had no units at all (17 numeric variables)
    assert not numbers_without_units(result.datasets)
    assert not numbers_without_units(result.datasets, attribute="long_name")
    table, das = result.datasets["table"], result.datasets["das_noise"]
    assert table["marginal_risk"].attrs["units"] == das["marginal_risk"].attrs["units"] == "ratio"
    assert table["accuracy"].attrs["units"] == das["p_correct"].attrs["units"] == "probability"
    assert result.datasets["curves"]["x2"].attrs["units"] == "persons"
