"""``dprisk budget --pure-dp``: the JSON contract, published values and bad input."""

import json

import pytest
from cli_helpers import assert_refused, record_calls, run_cli


@pytest.mark.parametrize(("extra", "epsilon", "p", "q"), [
    (["--max-posterior", "0.25"], 1.299283, 1 / 12, 1.0),
    (["--max-posterior", "0.15"], 1.209838, 0.05, 1.0),
    (["--max-posterior", "1/4", "--q", "any"], 0.649641, 1.0, 1 / 12),
])
def test_published_values_json(extra, epsilon, p, q, capsys):
    status, out, err = run_cli(["budget", "--pure-dp", "--max-ratio", "3", *extra, "--json"],
                               capsys)
    assert status == 0 and err == ""
    payload = json.loads(out)
    assert set(payload) == {"epsilon", "binding_p", "binding_q"}
    assert payload["epsilon"] == pytest.approx(epsilon, abs=1e-6)
    assert payload["binding_p"] == pytest.approx(p, rel=1e-6)
    assert payload["binding_q"] == pytest.approx(q, rel=1e-6)


def test_summary_and_help(capsys):
    status, out, _ = run_cli(["budget", "--pure-dp", "--max-ratio", "3", "--max-posterior",
                              "0.25", "--q", "0.5"], capsys)
    assert status == 0 and "epsilon*" in out and "binding p" in out
    status, out, _ = run_cli(["budget", "--help"], capsys)
    assert status == 0 and "(default: 1.0)" in " ".join(out.split())
    # the measure form's usage names every measure it accepts (it left out worst-case-accuracy)
    from dprisk.cli.commands.budget import MEASURE
    from dprisk.inference.privacy.budget import MEASURES

    shown = MEASURE.usage.replace("--measure tail", "--measure tail|").split("--measure ")
    named = {word for part in shown[1:] for word in part.split(" ")[0].split("|") if word}
    assert named == set(MEASURES)


@pytest.mark.parametrize(("argv", "parameter"), [
    (["--max-ratio", "3", "--max-posterior", "0.2"], "--pure-dp"),
    (["--pure-dp", "--max-posterior", "0.2"], "--max-ratio"),
    (["--pure-dp", "--max-ratio", "3"], "--max-posterior"),
    *[(["--pure-dp", "--max-ratio", ratio, "--max-posterior", "0.2"], "--max-ratio")
      for ratio in ("1", "0.5", "inf")],
    *[(["--pure-dp", "--max-ratio", "3", "--max-posterior", posterior], "--max-posterior")
      for posterior in ("1", "-0.1")],
    *[(["--pure-dp", "--max-ratio", "3", "--max-posterior", "0.2", "--q", q], "--q")
      for q in ("0", "2", "x")],
])
def test_bad_input_exits_2_naming_the_parameter(argv, parameter, capsys):
    assert_refused(["budget", *argv], parameter, capsys)


def test_measure_form_json(capsys):
    from dprisk.inference.privacy.accounting import epsilon_cks
    from dprisk.inference.privacy.budget import rho_for_target

    status, out, err = run_cli(["budget", "--measure", "marginal-risk", "--target", "1.5",
                                "--p", "0.01,1/10,0.5", "--json"], capsys)
    assert status == 0 and err == ""
    payload = json.loads(out)
    assert set(payload) == {"rho", "epsilon_cks", "measure", "target", "binding_p",
                            "value_at_rho", "value_above"}
    expected = rho_for_target("marginal-risk", 1.5, p=[0.01, 0.1, 0.5])
    assert payload["rho"] == expected.rho and payload["binding_p"] == 0.01
    assert payload["epsilon_cks"] == epsilon_cks(expected.rho, 1e-10)
    assert payload["value_at_rho"] <= 1.5 < payload["value_above"]


@pytest.mark.parametrize(("argv", "parameter"), [
    (["--measure", "foo", "--target", "1.5"], "measure"),
    (["--measure", "marginal-risk"], "--target"),
    (["--measure", "marginal-risk", "--target", "1"], "target"),
    (["--measure", "marginal-risk", "--target", "1.5", "--p", "0,0.5"], "p"),
    (["--measure", "marginal-risk", "--target", "1.5", "--p", "x"], "--p"),
    (["--measure", "marginal-risk", "--target", "1.5", "--known", "-1"], "known"),
    (["--measure", "marginal-risk", "--target", "1.5", "--max-ratio", "3"], "--max-ratio"),
    (["--pure-dp", "--max-ratio", "3", "--max-posterior", "0.2", "--target", "2"], "--target"),
])
def test_measure_form_bad_input(argv, parameter, capsys):
    status, out, err = run_cli(["budget", *argv], capsys)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and parameter in lines[0] and "Traceback" not in err


KEYS = {"rho", "epsilon_cks", "measure", "target", "binding_p", "value_at_rho", "value_above"}


@pytest.mark.parametrize(("argv", "api"), [
    (["--measure", "p-correct", "--target", "0.3", "--p", "0.05,0.2"],
     ("p-correct", 0.3, {"p": [0.05, 0.2]})),
    (["--measure", "tail", "--tail-tolerance", "0.05", "--max-ratio", "3", "--max-posterior",
      "1/4", "--p", "0.01,0.05,0.1,0.25,0.5"],
     ("tail", 0.05, {"p": [0.01, 0.05, 0.1, 0.25, 0.5], "max_ratio": 3.0,
                     "max_posterior": 0.25})),
    (["--measure", "tail", "--tail-tolerance", "0.01", "--max-ratio", "1.5"],
     ("tail", 0.01, {"p": [0.5], "max_ratio": 1.5})),
])
def test_step_measures_json(argv, api, capsys):
    from dprisk.inference.privacy.budget import rho_for_target

    status, out, err = run_cli(["budget", *argv, "--json"], capsys)
    assert status == 0 and err == ""
    payload = json.loads(out)
    assert set(payload) == KEYS
    measure, target, kwargs = api
    expected = rho_for_target(measure, target, **kwargs)
    assert payload["rho"] == expected.rho and payload["target"] == target
    assert payload["value_at_rho"] <= target < payload["value_above"]


def test_census_and_two_level_forms_json(capsys):
    from dprisk.inference.privacy.accounting import epsilon_cks
    from dprisk.inference.privacy.budget_levels import census_rho_for_target

    status, out, _ = run_cli(["budget", "--census", "--measure", "marginal-risk", "--target",
                              "1.5", "--json"], capsys)
    payload = json.loads(out)
    assert status == 0 and set(payload) == KEYS
    assert payload["rho"] == census_rho_for_target("marginal-risk", 1.5).rho
    assert payload["epsilon_cks"] == epsilon_cks(payload["rho"], 1e-10)
    status, out, _ = run_cli(["budget", "--measure", "p-correct", "--target", "0.8",
                              "--rho1", "1", "--d", "2", "--x2", "5", "--json"], capsys)
    payload = json.loads(out)
    assert status == 0 and set(payload) == KEYS
    assert payload["value_at_rho"] <= 0.8 < payload["value_above"]
    rho1 = 1.0
    assert payload["epsilon_cks"] == pytest.approx(epsilon_cks(rho1 + payload["rho"], 1e-10),
                                                   rel=1e-15)


@pytest.mark.parametrize(("argv", "parameter"), [
    (["--measure", "tail", "--target", "0.1", "--max-ratio", "3"], "--target"),
    (["--measure", "tail", "--max-ratio", "3"], "--tail-tolerance"),
    (["--measure", "tail", "--tail-tolerance", "0.1"], "--max-ratio"),
    (["--measure", "tail", "--tail-tolerance", "1.5", "--max-ratio", "3"], "--tail-tolerance"),
    (["--measure", "tail", "--tail-tolerance", "0.1", "--max-ratio", "0.9"], "--max-ratio"),
    (["--measure", "tail", "--tail-tolerance", "0.1", "--max-ratio", "3", "--max-posterior",
      "2"], "--max-posterior"),
    (["--measure", "tail", "--tail-tolerance", "0.1", "--max-ratio", "3", "--p", "0.5"],
     "--max-ratio"),
    (["--measure", "p-correct", "--target", "0.3", "--tail-tolerance", "0.1"],
     "--tail-tolerance"),
    (["--measure", "p-correct", "--target", "0.3", "--p", "0.7"], "p"),
    (["--measure", "p-correct", "--target", "1.2"], "target"),
    (["--measure", "p-correct", "--target", "0.3", "--p", ""], "--p"),
    (["--measure", "p-correct", "--target", "0.3", "--x2", "4"], "--x2"),
    (["--measure", "tail", "--target", "0.1", "--rho1", "0.1", "--d", "5", "--x2", "10"],
     "--target"),
    (["--measure", "tail", "--tail-tolerance", "0.1", "--rho1", "0.1", "--d", "5", "--x2",
      "10"], "--max-ratio"),
    (["--measure", "p-correct", "--target", "0.6", "--max-ratio", "2", "--rho1", "0.1", "--d",
      "5", "--x2", "10"], "--max-ratio"),
    (["--measure", "marginal-risk", "--target", "0.9", "--rho1", "0.1", "--d", "5", "--x2",
      "10"], "target"),
    (["--measure", "marginal-posterior", "--target", "0.3", "--rho1", "0.1", "--d", "5",
      "--x2", "10"], "target"),
    (["--measure", "marginal-posterior", "--target", "0.7", "--rho1", "0.1", "--d", "0",
      "--x2", "10"], "d"),
    (["--census", "--measure", "tail", "--tail-tolerance", "2", "--max-ratio", "3", "--d",
      "5", "--x2", "10"], "--tail-tolerance"),
    (["--measure", "p-correct", "--target", "0.6", "--rho1", "0.1", "--x2", "10"], "--d"),
    (["--measure", "p-correct", "--target", "0.6", "--rho1", "-1", "--d", "5", "--x2", "10"],
     "--rho1"),
    (["--census", "--target", "0.6"], "--measure"),
    (["--census", "--measure", "p-correct", "--target", "0.6", "--d", "5"], "x2"),
    (["--census", "--measure", "p-correct", "--target", "0.6", "--rho1", "0.1"], "--census"),
    (["--pure-dp", "--max-ratio", "3", "--max-posterior", "0.2", "--census"], "--census"),
])
def test_step_and_level_forms_bad_input(argv, parameter, capsys):
    assert_refused(["budget", *argv], parameter, capsys)


#: The two-level case of the marginal searches below (block group at rho2, block at rho1).
MARGINAL_CASE = {"rho1": 0.5, "x2": 10, "d": 2}


@pytest.mark.parametrize(("measure", "target", "field"), [
    ("marginal-posterior", "0.62", "marginal_posterior"),
    ("marginal-risk", "1.25", "marginal_risk"),
])
def test_two_level_marginal_forms_json_round_trip_and_brute_force(measure, target, field,
                                                                  capsys, monkeypatch):
    """The CLI prints the answer of rho2_for_target called as the API's defaults would be, and
    that answer round-trips with its certificate and agrees with a brute-force scan.

    The search is deterministic, so checking the arguments the CLI passes (bound with their
    defaults, against those of ``rho2_for_target(target, rho1=0.5, x2=10, d=2,
    measure=measure)``) and that it prints the returned rho tests CLI == API without running
    each search a second time through the API (4 searches, 8 s of CPU, before). The round
    trip and the scan below (tests/inference/privacy/test_budget_two_level.py's, before) check
    the API's answer, the one the command's call returned: one search of about 0.8 s of CPU
    for both checks.
    """
    import inspect

    import numpy as np

    from dprisk.inference.privacy import budget_levels
    from dprisk.inference.privacy.two_level_marginal import marginal_two_level

    signature = inspect.signature(budget_levels.rho2_for_target)
    calls = record_calls(monkeypatch, budget_levels, "rho2_for_target")
    status, out, _ = run_cli(["budget", "--measure", measure, "--target", target,
                              "--rho1", "0.5", "--d", "2", "--x2", "10", "--json"], capsys)
    payload = json.loads(out)
    assert status == 0 and set(payload) == KEYS and payload["measure"] == measure
    (given, answer), = calls
    expected = signature.bind(float(target), **MARGINAL_CASE, measure=measure)
    for bound in (given, expected):
        bound.apply_defaults()
        bound.arguments["p"] = [float(v) for v in bound.arguments["p"]]
    assert given.arguments == expected.arguments and given.arguments["p"] == [0.5]
    assert payload["rho"] == answer.rho
    assert payload["value_at_rho"] == answer.value_at_rho <= float(target)
    assert float(target) < payload["value_above"] == answer.value_above
    # the API's answer: round trip with its certificate, and a brute-force scan below it
    target = float(target)

    def at(rho2):
        return getattr(marginal_two_level(rho2=rho2, p=0.5, **MARGINAL_CASE), field)

    assert answer.measure == measure and answer.binding_p == 0.5
    assert answer.value_at_rho <= target < answer.value_above
    # a continuous increasing measure: the root to the sums' rounding
    assert answer.value_at_rho == pytest.approx(target, abs=1e-12)
    assert at(answer.rho) == answer.value_at_rho
    below = np.geomspace(budget_levels.RHO2_RANGE[0], answer.rho, 17)
    assert all(at(rho2) <= target for rho2 in below)
    assert at(answer.rho * 1.001) > target


def test_two_level_tail_form_json(capsys):
    status, out, _ = run_cli(["budget", "--measure", "tail", "--tail-tolerance", "0.1",
                              "--max-ratio", "1.5", "--p", "0.25", "--rho1", "0.05", "--d", "1",
                              "--x2", "5", "--json"], capsys)
    payload = json.loads(out)
    assert status == 0 and set(payload) == KEYS and payload["measure"] == "tail"
    assert payload["binding_p"] == 0.25 and payload["target"] == 0.1
    assert payload["value_at_rho"] <= 0.1 < payload["value_above"]


@pytest.mark.parametrize("argv", [
    # the stated ends themselves: 1.0/1e-300 rounds below 1e300, which refused R = 1e300
    ["--pure-dp", "--max-ratio", "1e300", "--max-posterior", "0.5"],
    ["--pure-dp", "--max-ratio", "1e300", "--max-posterior", "0.5", "--q", "any"],
    ["--measure", "tail", "--tail-tolerance", "1e-300", "--max-ratio", "1.5"],
    # an ulp from 1: three scipy RuntimeWarnings on stderr before
    ["--pure-dp", "--max-ratio", "1.0000000000000002", "--max-posterior",
     "0.9999999999999999", "--q", "any"],
    ["--pure-dp", "--max-ratio", "3", "--max-posterior", "0.9999999999999999", "--q", "1e-300"],
])
def test_pure_dp_and_tail_ends_are_accepted_silently(argv, capsys):
    status, out, err = run_cli(["budget", *argv, "--json"], capsys)
    assert status == 0 and err == "", err
    assert json.loads(out)["epsilon" if "--pure-dp" in argv else "rho"] > 0


@pytest.mark.parametrize(("argv", "named"), [
    (["--max-ratio", "1e300", "--max-posterior", "1e-300"], "--max-posterior, --max-ratio, --q"),
    (["--max-ratio", "1e10", "--max-posterior", "1e-300", "--q", "any"],
     "--max-posterior, --max-ratio:"),
])
def test_pure_dp_kink_below_the_normal_doubles_is_refused_naming_the_options(argv, named,
                                                                            capsys):
    # before: ZeroDivisionError, exit 1
    err = assert_refused(["budget", "--pure-dp", *argv], "--max-posterior", capsys)
    assert f"error: {named}" in err and "allowed range: A/" in err and ">= 2.23e-308" in err


@pytest.mark.parametrize("form", [["--rho1", "1", "--d", "2", "--x2", "3"],
                                  ["--census", "--d", "2", "--x2", "3"]])
def test_a_tail_tolerance_below_the_scanned_measure_names_tail_tolerance(form, capsys):
    err = assert_refused(["budget", *form, "--measure", "tail", "--tail-tolerance", "1e-300",
                          "--max-ratio", "1.5"], "--tail-tolerance", capsys)
    assert "error: --tail-tolerance must be at least" in err and "target" not in err, err


def test_a_ratio_bound_no_release_exceeds_names_max_ratio_once(capsys):
    err = assert_refused(["budget", "--measure", "tail", "--tail-tolerance", "0.1",
                          "--max-ratio", "3"], "--max-ratio", capsys)
    assert "error: --max-ratio times p is at least 1" in err and "(--max-ratio)" not in err


@pytest.mark.parametrize(("argv", "option", "end", "accepted"), [
    # delta = logit(1/2) - logit(p) must be at least 4 log(1/T)/(2 * 5000 - 1) = 3.67e-4 at
    # T = 0.4 (5000 pieces enumerated): p <= expit(-3.67e-4) = 0.4999083; the stated end
    # (6 digits, rounded down) is accepted
    (["--measure", "p-correct", "--target", "0.4", "--p", "0.4999999999"], "--p",
     "0 < --p <= 0.499908", ["--measure", "p-correct", "--target", "0.4", "--p", "0.499908"]),
    # the tail at p = 0.1, tolerance 0.05: r* p >= expit(logit(0.1) + 4 log(20)/9999)
    (["--measure", "tail", "--tail-tolerance", "0.05", "--max-ratio", "1.0000001", "--p",
      "0.1"], "--max-ratio", "--max-ratio >= 1.00108",
     ["--measure", "tail", "--tail-tolerance", "0.05", "--max-ratio", "1.00108", "--p", "0.1"]),
])
def test_too_many_pieces_names_the_option_and_its_range(argv, option, end, accepted, capsys,
                                                        monkeypatch):
    # once "the measure has 4581453280 pieces ... allowed: at most 5000 pieces", naming
    # neither the option nor a range of it
    import inspect

    from dprisk.inference.privacy import budget

    err = assert_refused(["budget", *argv], option, capsys)
    assert f"error: {option} = " in err and f"allowed range: {end}" in err, err
    signature = inspect.signature(budget.rho_for_target)
    calls = record_calls(monkeypatch, budget, "rho_for_target")
    assert run_cli(["budget", *accepted, "--json"], capsys)[0] == 0
    if option == "--p":
        # the API's stated end, rho_for_target("p-correct", 0.4, p=[0.499908]), answered: the
        # command's call is that one (test_budget_jumps' refusals of the API's neighbours
        # rely on this case for its acceptance, not a second 5,000-piece search, 1.8 s)
        (given, answer), = calls
        expected = signature.bind("p-correct", 0.4, p=[0.499908])
        for bound in (given, expected):
            bound.apply_defaults()
            bound.arguments["p"] = [float(v) for v in bound.arguments["p"]]
        assert given.arguments == expected.arguments and answer.rho > 0
