"""Tests of validation/beyond/das_noise.py: the records and the table at the DAS's noise.

The records are computed (the table is das_noise_comparison's numbers, exactly), keep their
ids (RECORD_IDS, in order), carry no published number and hold their checks; the page renders
the table in the decision summary. The numbers themselves are tested independently in
tests/inference/privacy/test_das_noise.py and tests/inference/single_level/test_replace_one.py.
"""

import numpy as np
import pytest

from dprisk.inference.privacy.das_noise import MEASURES, das_noise_comparison
from dprisk.validation.beyond import das_noise
from dprisk.validation.figures.paper_priors import PAPER_PRIORS
from dprisk.validation.paper.records import validate_records


@pytest.fixture(scope="module")
def comparison():
    return das_noise_comparison(census=True, priors=[p for _, p in PAPER_PRIORS])


@pytest.fixture(scope="module")
def table(comparison):
    return das_noise.das_noise_table(comparison)


def test_table_is_the_comparison(table, comparison):
    assert list(table["question"].values) == list(das_noise.QUESTIONS)
    assert list(table["p_label"].values) == ["1/2", "1/5", "1/10", "1/50", "1/864"]
    for measure in MEASURES:
        for question in das_noise.QUESTIONS:
            expected = [getattr(getattr(row, question), measure) for row in comparison.rows]
            assert table[measure].sel(question=question).values.tolist() == expected
    assert table.attrs["sigma_sq"] == comparison.sigma_sq
    assert "Did the target respond" in table.attrs["agreement"]


def test_records_exist_keep_their_ids_and_hold(table, comparison):
    records = das_noise.das_noise_records(table, comparison)
    validate_records(records)
    assert tuple(r["id"] for r in records) == das_noise.RECORD_IDS
    assert all(r["published"] is None and r["status"] == "match" for r in records)
    by_id = {r["id"]: r["computed"] for r in records}
    assert by_id["das_noise/block_sigma_sq"] == pytest.approx(10.0928, abs=1e-4)
    assert by_id["das_noise/did_respond/p_correct"] == pytest.approx(0.5628, abs=1e-4)
    assert by_id["das_noise/replace_one/p_correct"] == pytest.approx(0.5877, abs=1e-4)
    assert by_id["das_noise/replace_one/posterior_vs_half_variance"] <= 1e-12
    # the records are the comparison's numbers, not constants
    half = comparison.rows[0]
    assert by_id["das_noise/did_respond/marginal_posterior"] == half.one_cell.marginal_posterior
    diff = np.abs(comparison.difference("two_cell", "accuracy")).max()
    assert by_id["das_noise/replace_one/accuracy_vs_paper"] == diff


def test_a_wrong_sigma_sq_is_caught(table, comparison):
    """The checks can fail: a comparison at the paper's variance is not the DAS's noise."""
    from dataclasses import replace

    wrong = replace(comparison, sigma_sq=comparison.sigma_sq / 2)
    records = {r["id"]: r for r in das_noise.das_noise_records(table, wrong)}
    assert records["das_noise/block_sigma_sq"]["status"] == "differs"
    assert records["das_noise/did_respond/p_correct"]["status"] == "differs"


def test_page_shows_the_table(table):
    from dprisk.validation.report.page import _das_noise

    html = "\n".join(_das_noise(table))
    assert "At the noise the 2020 DAS drew" in html and "two cells (which one)" in html
    assert "0.5628" in html and "0.5889" in html
