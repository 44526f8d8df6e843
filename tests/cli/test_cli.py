"""The ``dprisk`` command-line contract: subcommands, JSON keys, exit status 2 on bad input."""

import gc
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from census_values import RHO_BLOCK
from cli_helpers import assert_refused, run_cli, run_json

from dprisk.cli import stopping
from dprisk.inference.single_level import closed_form as single_level
from dprisk.models.census.allocation import CENSUS_LEVELS
from dprisk.models.mechanism.conversions import zcdp_to_dp


def test_census_json_contract(capsys):
    payload = run_json(["census", "--json"], capsys,
                       keys={"rho_total", "delta", "epsilon", "levels", "epsilon_cks",
                             "epsilon_pld", "epsilon_pld_lower", "epsilon_pld_upper",
                             "worst_case_accuracy", "worst_case_accuracy_lower",
                             "worst_case_accuracy_upper", "worst_case_accuracy_detailed"})
    assert payload["epsilon_pld_lower"] <= 16.4795 <= payload["epsilon_pld_upper"]
    assert payload["epsilon_pld_upper"] - payload["epsilon_pld_lower"] <= 1e-3
    assert (payload["worst_case_accuracy_lower"] <= payload["worst_case_accuracy"]
            == payload["worst_case_accuracy_upper"])
    assert 0.5 < payload["worst_case_accuracy_detailed"] < payload["worst_case_accuracy"] < 1
    assert payload["rho_total"] == 2.56 and payload["delta"] == 1e-10
    assert payload["epsilon"] == pytest.approx(float(zcdp_to_dp(2.56, 1e-10)), rel=1e-15)
    assert [lvl["level"] for lvl in payload["levels"]] == [lvl.name for lvl in CENSUS_LEVELS]
    assert all(set(lvl) == {"level", "rho"} for lvl in payload["levels"])
    assert payload["levels"][0]["rho"] == RHO_BLOCK


def test_posterior_json_matches_api(capsys):
    payload = run_json(
        ["posterior", "--rho1", "0.099", "--x1-star", "3", "--p", "1/5", "--known", "2",
         "--json"], capsys, keys={"posterior", "risk"})
    assert payload["posterior"] == pytest.approx(
        float(single_level.posterior(3, 0.099, 0.2, 2)), rel=1e-14)
    assert payload["risk"] == pytest.approx(payload["posterior"] / 0.2, rel=1e-12)


def test_census_level_accepted_for_rho(capsys):
    payload = run_json(["posterior", "--rho1", "census:block", "--x1-star", "2", "--json"],
                       capsys)
    expected = float(single_level.posterior(2, RHO_BLOCK, 0.5, 0))
    assert payload["posterior"] == pytest.approx(expected, rel=1e-14)


def test_marginal_json_contract(capsys):
    payload = run_json(["marginal", "--rho1", "census:block", "--p", "0.5", "--json"], capsys,
                       keys={"marginal_posterior", "marginal_risk", "p_correct", "threshold",
                             "accuracy", "worst_case_accuracy"})
    # at one level and p = 1/2 the Bayes rule is the best test: (1 + TV)/2
    assert payload["accuracy"] == pytest.approx(0.588860, abs=5e-7)
    assert payload["worst_case_accuracy"] == pytest.approx(payload["accuracy"], abs=1e-12)
    rho = RHO_BLOCK
    assert payload["p_correct"] == pytest.approx(float(single_level.p_correct(rho, 0.5)), 1e-14)
    assert payload["threshold"] == int(single_level.decision_threshold(rho, 0.5))
    assert payload["marginal_risk"] == pytest.approx(payload["marginal_posterior"] / 0.5)


def test_human_output_is_readable(capsys):
    status, out, _ = run_cli(["marginal", "--rho1", "0.5", "--p", "1/5"], capsys)
    assert status == 0 and "P[correct decision]" in out


BAD_INPUTS = [
    (["posterior", "--rho1", "0", "--x1-star", "1"], "rho1"),
    (["posterior", "--rho1", "-0.1", "--x1-star", "1"], "rho1"),
    (["posterior", "--rho1", "nan", "--x1-star", "1"], "rho1"),
    (["posterior", "--rho1", "inf", "--x1-star", "1"], "rho1"),
    (["posterior", "--rho1", "abc", "--x1-star", "1"], "rho1"),
    (["posterior", "--rho1", "census:blok", "--x1-star", "1"], "rho1"),
    (["posterior", "--rho1", "0.1", "--x1-star", "1.5"], "x1-star"),
    (["posterior", "--rho1", "0.1", "--x1-star", "one"], "x1-star"),
    (["posterior", "--rho1", "0.1", "--x1-star", "1", "--p", "0"], "p"),
    (["posterior", "--rho1", "0.1", "--x1-star", "1", "--p", "1"], "p"),
    (["posterior", "--rho1", "0.1", "--x1-star", "1", "--p", "1.5"], "p"),
    (["posterior", "--rho1", "0.1", "--x1-star", "1", "--p", "nan"], "p"),
    (["posterior", "--rho1", "0.1", "--x1-star", "1", "--known", "-1"], "known"),
    (["posterior", "--rho1", "0.1", "--x1-star", "1", "--known", "0.5"], "known"),
    (["marginal", "--rho1", "-1"], "rho1"),
    (["marginal", "--rho1", "0.1", "--p", "-0.2"], "p"),
    (["marginal", "--rho1", "0.1", "--known", "-3"], "known"),
    (["marginal"], "rho1"),
    (["census", "--bogus"], "bogus"),
]


@pytest.mark.parametrize(("argv", "parameter"), BAD_INPUTS)
def test_bad_input_exits_2_with_one_line(argv, parameter, capsys):
    assert_refused(argv, parameter, capsys)


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda: single_level.posterior(1, -1.0), "rho"),
        (lambda: single_level.posterior(1, 0.1, p=1.0), "p"),
        (lambda: single_level.posterior(1.5, 0.1), "x1_star"),
        (lambda: single_level.posterior(1, 0.1, known=-1), "known"),
        (lambda: single_level.marginal_posterior(np.nan), "rho"),
    ],
)
def test_python_api_raises_value_error_naming_parameter(call, parameter):
    with pytest.raises(ValueError, match=parameter):
        call()


@pytest.mark.parametrize("how", ["console script", "-m dprisk", "-m dprisk.cli"])
def test_console_script_installed_exit_status_and_stderr(how):
    # The console script is part of the install contract: it sits beside the interpreter;
    # python -m dprisk (and -m dprisk.cli) run the same command line. A success's exit status
    # and stdout are checked through the console script; the -m forms are checked on a refusal
    # (exit status 2 passed on, one stderr line), which shows they run the command line
    # (a new Python process costs about 0.5 s of CPU).
    exe = Path(sys.executable).parent / "dprisk"
    assert exe.exists(), f"dprisk console script missing at {exe}"
    command = [exe] if how == "console script" else [sys.executable, *how.split()]
    if how == "console script":
        ok = subprocess.run([*command, "census", "--json"], capture_output=True, text=True,
                            check=False)
        assert ok.returncode == 0 and json.loads(ok.stdout)["rho_total"] == 2.56
    bad = subprocess.run([*command, "marginal", "--rho1", "-2", "--json"],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "rho1" in bad.stderr


#: A ``dprisk`` process whose exit handlers are recorded, not run: its command, then whether
#: ``gc.freeze`` was registered to run at exit.
_EXIT_HANDLERS = """
import atexit, gc, sys
registered = []
atexit.register = lambda handler, *args, **kwargs: registered.append(handler)
from dprisk.cli.main import main
status = main()
print("freeze at exit:", gc.freeze in registered, status)
"""


def test_a_finished_command_has_the_shutdown_skip_its_collections(monkeypatch, capsys):
    """On its own command line a command that has finished registers ``gc.freeze`` at exit
    (the shutdown's collections walked the heap its libraries left: 1.7 s of CPU after a PyMC
    posterior, 0.1 s after this one); called from a script (``main(argv)``) it does not, the
    script goes on."""
    done = subprocess.run([sys.executable, "-c", _EXIT_HANDLERS, "census", "--json"],
                          capture_output=True, text=True, check=False)
    assert done.stdout.splitlines()[-1] == "freeze at exit: True 0", done.stdout + done.stderr
    registered = []
    monkeypatch.setattr(stopping, "_FREEZE_AT_EXIT", [])
    monkeypatch.setattr(stopping.atexit, "register", registered.append)
    run_json(["census", "--json"], capsys)
    assert gc.freeze not in registered


def test_marginal_two_level_and_levels_accuracy_keys(capsys):
    payload = run_json(["marginal", "--rho1", "census:block", "--rho2", "census:block-group",
                        "--d", "27", "--x2", "3", "--p", "0.2", "--json"], capsys)
    assert {"accuracy", "worst_case_accuracy"} <= set(payload)
    assert payload["accuracy"] <= payload["worst_case_accuracy"]
    # the worst case of the two queries (rho1, rho2) at p (before: rho1 twice went unnoticed,
    # every other two-level case has rho1 = rho2); printed as computed, so equal to the bit
    from dprisk.inference.privacy.worst_case import worst_case_accuracy
    from dprisk.models.census.allocation import census_level

    block, block_group = (census_level(level).rho for level in ("block", "block-group"))
    assert payload["worst_case_accuracy"] == worst_case_accuracy([block, block_group],
                                                                 0.2).accuracy
    payload = run_json(["marginal", "--rhos", "census:2", "--p", "0.1", "--json"], capsys)
    assert payload["accuracy"] == pytest.approx(payload["worst_case_accuracy"], abs=1e-12)


def test_marginal_two_level_accuracy_of_a_truth_stated_at_x1_known(capsys):
    """--x1 = --known: the accuracy of the pair (m + 1, x2 + 1), (m, x2), computed below the CLI."""
    from dprisk.inference.privacy.worst_case import bayes_accuracy_two_level

    payload = run_json(["marginal", "--rho1", "0.5", "--rho2", "0.5", "--d", "2", "--x2", "4",
                        "--x1", "1", "--known", "1", "--p", "0.3", "--json"], capsys)
    assert payload["accuracy"] == bayes_accuracy_two_level(x2=5, rho1=0.5, rho2=0.5, d=2,
                                                           p=0.3, known=1)


def test_a_second_call_reuses_the_parser_and_keeps_its_defaults(capsys):
    """main() builds a subcommand's parser once per process; a value given in one call is not
    a default of the next (parsing leaves the parser as built)."""
    from dprisk.cli.main import _parser_for

    given = run_json(["posterior", "--rho1", "0.5", "--x1-star", "3", "--p", "1/4",
                      "--json"], capsys)
    hits = _parser_for.cache_info().hits
    default = run_json(["posterior", "--rho1", "0.5", "--x1-star", "3", "--json"], capsys)
    assert _parser_for.cache_info().hits == hits + 1
    assert given["posterior"] == pytest.approx(single_level.posterior(3, 0.5, 0.25), rel=1e-12)
    assert default["posterior"] == pytest.approx(single_level.posterior(3, 0.5, 0.5), rel=1e-12)


def test_emit_refuses_a_non_finite_number_in_json(capsys):
    """--json prints strict JSON (allow_nan=False): an undefined number must be None (null);
    a NaN or infinity reaching emit is a loud error, never "NaN"/"Infinity" on stdout."""
    import argparse

    from dprisk.cli.common import emit

    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError, match="JSON compliant"):
            emit(argparse.Namespace(json=True), {"risk": bad}, [])
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("form", [
    ["--rho1", "1", "--x1-star", "9007199254740992"],
    ["--rho1", "1", "--x1-star", "3", "--unknown-others", "2", "--q", "0.5"],
    ["--rho1", "1", "--rho2", "1", "--d", "5", "--x1-star", "1", "--x2-star", "3",
     "--y1-star", "2"],
    ["--rhos", "1,1", "--siblings", "5", "--stars", "1,3,2"],
], ids=["single", "unknown-others", "two-level", "nested"])
def test_posterior_p_below_1e_300_is_refused_in_every_form(form, capsys):
    """p = 5e-324 (subnormal) gave "risk": Infinity (single level: 1 / p overflows) or a
    risk of 3.0 instead of 3.2121 (two-level, nested: the posterior lost its digits)."""
    err = assert_refused(["posterior", *form, "--p", "5e-324", "--json"], "--p", capsys)
    assert "1e-300 <= --p < 1" in err
    payload = run_json(["posterior", *form, "--p", "1e-300"], capsys)  # the smallest allowed
    assert math.isfinite(payload["risk"])
