"""Tests of inference/privacy/decision_summary.py and ``dprisk summary``."""

import json

import pytest
from cli_helpers import run_cli

from dprisk.inference.privacy.decision_summary import PAPER_PRIORS, decision_summary


def test_census_summary():
    result = decision_summary(census=True)
    assert [row.p for row in result.rows] == list(PAPER_PRIORS)
    first = result.rows[0]
    assert first.posterior_block == pytest.approx(0.5237, abs=1e-4)
    assert first.marginal_risk == pytest.approx(first.posterior_block / 0.5)
    for row in result.rows:
        assert row.p < row.posterior_block < row.posterior_block_group < 1
        assert row.accuracy <= row.worst_case_accuracy + 1e-12
    assert result.epsilon_pld_lower <= 16.4795 <= result.epsilon_pld_upper
    assert result.epsilon_pld_upper < result.epsilon_cks < result.epsilon_bun_steinke
    assert result.worst_case_accuracy_all > result.rows[0].worst_case_accuracy


def test_one_level_and_bad_input():
    result = decision_summary(rho1=0.5)
    assert result.rho2 is None and all(r.posterior_block_group is None for r in result.rows)
    with pytest.raises(ValueError, match="rho1"):
        decision_summary()
    with pytest.raises(ValueError, match="census"):
        decision_summary(census=True, rho1=0.5)


def test_cli(capsys):
    status, out, _ = run_cli(["summary", "--rho1", "census:block", "--rho2",
                              "census:block-group", "--json"], capsys)
    assert status == 0
    payload = json.loads(out)
    assert len(payload["rows"]) == 5 and payload["census"] is False
    status, _, err = run_cli(["summary"], capsys)
    assert status == 2 and "--census" in err
