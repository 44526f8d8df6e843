"""``dprisk epsilon`` (both forms) and the accounting keys of ``dprisk census --json``."""


import re

import pytest
from census_values import RHO_BLOCK
from cli_helpers import assert_refused, run_cli, run_json

from dprisk.inference.privacy.accounting import (
    census_epsilon_pld,
    epsilon_bun_steinke,
    epsilon_cks,
    rho_bun_steinke,
    rho_cks,
)
from dprisk.models.census.allocation import CENSUS_LEVELS


def test_rho_to_epsilon_json(capsys):
    payload = run_json(["epsilon", "--rho", "2.56", "--json"], capsys,
                       keys={"rho", "delta", "epsilon_bun_steinke", "epsilon_cks",
                             "epsilon_pld_lower", "epsilon_pld_upper"})
    assert payload["epsilon_pld_lower"] <= payload["epsilon_pld_upper"] <= payload["epsilon_cks"]
    assert payload["rho"] == 2.56 and payload["delta"] == 1e-10
    assert payload["epsilon_bun_steinke"] == epsilon_bun_steinke(2.56, 1e-10)
    assert round(payload["epsilon_bun_steinke"], 4) == 17.9153
    assert payload["epsilon_cks"] == epsilon_cks(2.56, 1e-10)
    assert round(payload["epsilon_cks"], 3) == 17.158


def test_epsilon_to_rho_json_round_trips(capsys):
    payload = run_json(["epsilon", "--epsilon", "17.14", "--delta", "1e-10", "--json"], capsys,
                       keys={"epsilon", "delta", "rho_bun_steinke", "rho_cks"})
    assert payload["rho_bun_steinke"] == rho_bun_steinke(17.14, 1e-10)
    assert payload["rho_cks"] == rho_cks(17.14, 1e-10)
    assert epsilon_cks(payload["rho_cks"], 1e-10) == pytest.approx(17.14, rel=1e-12)
    assert epsilon_bun_steinke(payload["rho_bun_steinke"], 1e-10) == pytest.approx(17.14,
                                                                                  rel=1e-13)


def test_census_level_and_fractions_accepted(capsys):
    payload = run_json(["epsilon", "--rho", "census:block", "--delta", "1/100000", "--json"],
                       capsys)
    assert payload["rho"] == RHO_BLOCK and payload["delta"] == 1e-5


def test_summary_names_both_conversions(capsys):
    status, out, _ = run_cli(["epsilon", "--rho", "1"], capsys)
    assert status == 0 and "Bun-Steinke" in out and "Canonne-Kamath-Steinke" in out
    status, out, _ = run_cli(["epsilon", "--help"], capsys)
    assert status == 0 and "(default: 1e-10)" in " ".join(out.split())


@pytest.mark.parametrize(("argv", "parameter"), [
    (["epsilon"], "--rho"),
    (["epsilon", "--rho", "0"], "--rho"),
    (["epsilon", "--rho", "nan"], "--rho"),
    (["epsilon", "--rho", "census:blok"], "--rho"),
    (["epsilon", "--rho", "1", "--delta", "0"], "--delta"),
    (["epsilon", "--rho", "1", "--delta", "1.5"], "--delta"),
    (["epsilon", "--epsilon", "-2"], "--epsilon"),
    (["epsilon", "--epsilon", "inf"], "--epsilon"),
    (["epsilon", "--epsilon", "1", "--delta", "-1"], "--delta"),
    (["epsilon", "--epsilon", "1", "--rho", "1"], "--rho"),
    (["epsilon", "--epsilon", "one"], "--epsilon"),
])
def test_bad_input_exits_2_naming_the_parameter(argv, parameter, capsys):
    assert_refused(argv, parameter, capsys)


def test_census_json_gains_the_tighter_epsilons(capsys):
    payload = run_json(["census", "--json"], capsys)
    assert payload["epsilon_cks"] == epsilon_cks(2.56, 1e-10)
    assert payload["epsilon_pld"] == census_epsilon_pld()
    assert payload["epsilon_pld"] < payload["epsilon_cks"] < payload["epsilon"]
    assert 16.4 < payload["epsilon_pld"] < 16.5


def test_census_strategy_lists_every_query(capsys):
    from dprisk.models.census.strategy import strategy_queries

    queries = run_json(["census", "--strategy", "--json"], capsys)["queries"]
    assert len(queries) == 65
    assert all(set(q) == {"level", "query", "fraction", "rho"} for q in queries)
    assert [(q["level"], q["query"], q["rho"]) for q in queries] == [
        (q.level, q.query, q.rho) for q in strategy_queries()]
    detailed = {q["level"]: q["rho"] for q in queries if q["query"] == "detailed"}
    assert detailed == {level.name: level.rho for level in CENSUS_LEVELS}
    assert sum(q["rho"] for q in queries) == pytest.approx(2.56, rel=1e-14)


@pytest.mark.parametrize("epsilon", ["1.45e-153", "1e-6", "234000"])
def test_every_epsilon_the_help_allows_at_the_default_delta_is_computed(epsilon, capsys):
    payload = run_json(["epsilon", "--epsilon", epsilon, "--json"], capsys)
    assert 0 < payload["rho_bun_steinke"] <= payload["rho_cks"]


@pytest.mark.parametrize(("argv", "option", "shown"), [
    (["--epsilon", "1e100"], "--epsilon", "at delta = 1e-10: about 0 < epsilon <= 2.34e+05"),
    (["--epsilon", "1e-9", "--delta", "1e-300"], "--epsilon",
     "at delta = 1e-300: about 1.33e-09 <= epsilon <= 7.04e+06"),
    (["--rho", "1e-21"], "--rho", "at delta = 1e-10: about 1.36e-20 < rho <= 2.3e+05"),
    (["--rho", "1e-22", "--delta", "1e-300"], "--rho", "at delta = 1e-300: about 6.66e-22 <= rho"),
    (["--rho", "1", "--delta", "0.999999999999"], "--delta", "0 < delta < about 0.9896"),
    (["--epsilon", "1", "--delta", "0.999999999999"], "--delta", "0 < delta < about 0.9896"),
])
def test_cks_refusals_name_the_option_given_and_the_range_at_its_delta(argv, option, shown,
                                                                      capsys):
    err = assert_refused(["epsilon", *argv], option, capsys)
    assert err.split("error: ")[1].startswith(option) and shown in err, err


def test_pld_keys_are_null_where_the_accountant_does_not_resolve_them(capsys):
    # rho = 800, delta = 0.3: the exact epsilon of one query is 800 + log(0.7) = 799.643, the
    # accountant's bracket was [799.99998, 800] (JSON numbers); now null, the answer exit 0
    payload = run_json(["epsilon", "--rho", "800", "--delta", "0.3", "--json"], capsys)
    assert payload["epsilon_pld_lower"] is None and payload["epsilon_pld_upper"] is None
    assert payload["epsilon_cks"] == epsilon_cks(800.0, 0.3)


def test_summary_with_an_unresolved_pld_bracket(capsys):
    # one query of rho1 = 720: dp-accounting's bracket was infinite, and summary --json
    # failed ("Out of range float values are not JSON compliant: inf", exit 2)
    payload = run_json(["summary", "--rho1", "720", "--json"], capsys)
    assert payload["epsilon_pld_lower"] is None and payload["epsilon_pld_upper"] is None
    status, out, _ = run_cli(["summary", "--rho1", "720"], capsys)
    assert status == 0 and "PLD bracket not resolved" in out


@pytest.mark.parametrize("delta", ["1e-10", "1e-300", "0.5"])
@pytest.mark.parametrize(("option", "outside"), [("--epsilon", "1e100"), ("--rho", "1e-40"),
                                                 ("--rho", "1e100")])
def test_the_ends_a_cks_refusal_states_are_accepted(option, outside, delta, capsys):
    """Each end of the stated range is rounded inwards to its 3 digits, so both are computed:
    at delta = 1e-10 the top epsilon, 234597, was shown as 'epsilon <= 2.35e+05' and 234990
    was refused with that same line."""
    err = assert_refused(["epsilon", option, outside, "--delta", delta], option, capsys)
    low, high = re.search(r"about (\S+) <=? \w+ <= (\S+);", err).groups()
    for end in (high,) if float(low) == 0 else (low, high):
        run_json(["epsilon", option, end, "--delta", delta], capsys)
