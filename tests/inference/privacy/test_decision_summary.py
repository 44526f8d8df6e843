"""Tests of inference/privacy/decision_summary.py and ``dprisk summary``."""

import json
import math

import pytest
from cli_helpers import assert_refused, run_cli, run_json

from dprisk.inference.privacy.decision_summary import PAPER_PRIORS, decision_summary


def test_census_summary():
    result = decision_summary(census=True)
    assert [row.p for row in result.rows] == list(PAPER_PRIORS)
    first = result.rows[0]
    assert first.posterior_block == pytest.approx(0.5237, abs=1e-4)
    assert first.marginal_risk == pytest.approx(first.posterior_block / 0.5)
    from dprisk.inference.single_level.closed_form import marginal_risk
    from dprisk.models.census.allocation import census_level

    block_rho = census_level("block").rho
    for row in result.rows:
        assert row.p < row.posterior_block < row.posterior_block_group < 1
        assert row.accuracy <= row.worst_case_accuracy + 1e-12
        # R = M / p at every prior (before: divided by 1/2 went unnoticed beyond p = 1/2);
        # against the closed form's exp(log M - log p), rel 1e-14 (a few roundings apart)
        assert row.marginal_risk == pytest.approx(marginal_risk(block_rho, row.p), rel=1e-14)
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


def test_summary_alone_is_the_2020_allocation(capsys):
    """``[--census | --rho1 R …]``: without options the answer is ``--census``'s, bit for bit
    (the same deterministic computation; integers and floats compared exactly on purpose)."""
    alone = run_json(["summary", "--json"], capsys)
    census = run_json(["summary", "--census", "--json"], capsys)
    assert alone == census and alone["census"] is True
    assert alone["rho_total"] == pytest.approx(2.56, rel=1e-12)


@pytest.mark.parametrize(("argv", "option"), [
    (["summary", "--rho2", "0.5"], "--rho2"),
    (["summary", "--census", "--rho2", "0.5"], "--rho2"),
    (["summary", "--census", "--rho1", "0.5"], "--rho1"),
])
def test_summary_refusals_name_the_option(argv, option, capsys):
    assert_refused(argv, option, capsys)


def test_json_carries_the_das_noise_and_keeps_every_old_key(capsys):
    """Keys are added (``das_noise``), none changed: the paper's rows are as before."""
    status, out, _ = run_cli(["summary", "--rho1", "census:block", "--json"], capsys)
    assert status == 0
    payload = json.loads(out)
    assert set(payload) == {"rho1", "rho2", "rho_total", "rows", "epsilon_bun_steinke",
                            "epsilon_cks", "epsilon_pld_lower", "epsilon_pld_upper", "delta",
                            "worst_case_accuracy_all", "census", "das_noise"}
    assert set(payload["rows"][0]) == {"p", "posterior_block", "posterior_block_group",
                                       "marginal_risk", "accuracy", "worst_case_accuracy"}
    das = payload["das_noise"]
    assert set(das) == {"sigma_sq", "rho_query", "rho_paper", "rows", "census", "agreement",
                        "conventions"}
    assert das["sigma_sq"] == pytest.approx(1 / payload["rho1"], rel=1e-15)
    assert [row["p"] for row in das["rows"]] == list(PAPER_PRIORS)
    for row in das["rows"]:
        assert set(row) == {"p", "paper", "one_cell", "two_cell", "half_variance"}
        assert set(row["two_cell"]) == {"marginal_posterior", "marginal_risk", "p_correct",
                                        "accuracy"}
    # the paper's column of the comparison is the summary's own block posterior
    first = payload["rows"][0]
    assert das["rows"][0]["paper"]["marginal_posterior"] == first["posterior_block"]


def test_census_summary_at_the_noise_the_das_drew():
    das = decision_summary(census=True).das_noise
    assert das.census and das.sigma_sq == pytest.approx(10.0928, abs=1e-4)
    half = das.rows[0]
    assert round(half.one_cell.p_correct, 3) == 0.563
    assert round(half.paper.p_correct, 3) == 0.589


def test_census_below_the_pld_delta_gives_no_pld_bracket_like_one_level():
    # below PLD_DELTA_MIN = 1e-20 the PLD bracket is not resolved (accounting_limits): as the
    # one-level path does, the census path reports it as None and still gives the other
    # epsilons, instead of refusing the whole summary
    delta = 1e-25
    result = decision_summary(census=True, delta=delta)
    assert result.epsilon_pld_lower is None and result.epsilon_pld_upper is None
    one_level = decision_summary(rho1=0.5, delta=delta)
    assert one_level.epsilon_pld_lower is None and one_level.epsilon_pld_upper is None
    # Bun-Steinke: rho + 2 sqrt(rho log(1/delta)), closed form; 1e-12 relative is float rounding
    rho = result.rho_total
    assert result.epsilon_bun_steinke == pytest.approx(
        rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-12)
    assert rho < result.epsilon_cks < result.epsilon_bun_steinke
    # the rows do not depend on delta: the same as at the default delta, exactly
    assert result.rows == decision_summary(census=True).rows
    for bad in (0.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match="delta"):
            decision_summary(census=True, delta=bad)
