"""A budget search and a single-level command validate each input once (issue: validate once).

The range checks of :mod:`dprisk.models.checks` (``check_rho``, ``check_probability``,
``check_closed_probability``, ``check_count``, ``check_positive_int``) and the tail-mass rule
are wrapped, in every loaded ``dprisk`` module that looks them up, by wrappers that count the
outermost call per parameter name. A search evaluates its measure at hundreds of rho: before,
each evaluation went through a public entry point and checked its inputs again (453 rho
checks in one two-level ``dprisk budget`` run, 4-5 per input in a single-level command); now
the entry point validates once and the search calls kernels on the validated values.
"""

import importlib
import json
import math

import pytest
from cli_helpers import run_cli
from validator_counts import count_outermost_calls

VALIDATORS = ("check_rho", "check_probability", "check_closed_probability", "check_count",
              "check_positive_int")
MODULES = (
    "dprisk.cli.main",
    "dprisk.cli.commands.budget",
    "dprisk.cli.commands.posterior",
    "dprisk.cli.commands.marginal",
    "dprisk.inference.privacy.accounting",
    "dprisk.inference.privacy.budget",
    "dprisk.inference.privacy.budget_jumps",
    "dprisk.inference.privacy.budget_levels",
    "dprisk.inference.privacy.budget_certified",
    "dprisk.inference.privacy.two_level_marginal",
    "dprisk.inference.single_level.closed_form",
    "dprisk.inference.studies.p_correct",
    "dprisk.inference.studies.setup",
    "dprisk.models.census.allocation",
    "dprisk.models.scenario",
)


@pytest.fixture
def calls(monkeypatch):
    """Counter of validated parameter names (outermost validator call only)."""
    for name in MODULES:
        importlib.import_module(name)
    checks = importlib.import_module("dprisk.models.checks")
    numerics = importlib.import_module("dprisk.models.numerics")
    originals = {name: getattr(checks, name) for name in VALIDATORS}
    originals["check_tail_mass"] = numerics.check_tail_mass
    return count_outermost_calls(
        monkeypatch, originals,
        lambda name, args, kwargs: args[1] if len(args) > 1 else kwargs.get("name", name))


def _budget_cli(argv, capsys) -> dict:
    status, out, _ = run_cli(["budget", *argv, "--json"], capsys)
    assert status == 0
    return json.loads(out)


def test_single_level_budget_command_checks_each_input_once(calls, capsys):
    """``dprisk budget --measure p-correct --target 0.6`` (before: p and known 4 times, rho 14).

    Its inputs are p and known (the target is checked against the measure's range by
    ``check_target``, not a validator); rho and delta are the inputs of the accounting call
    that turns the answer into epsilon.
    """
    answer = _budget_cli(["--measure", "p-correct", "--target", "0.6"], capsys)
    # 0.04 pi in closed form; the root-finder stops within ~4e-15 relative and its exp/log
    # differ in the last bits across CPUs (...162 here, ...135 with AVX-512): 1e-13 relative
    assert answer["rho"] == pytest.approx(0.04 * math.pi, rel=1e-13)
    assert dict(calls) == {"p": 1, "known": 1, "rho": 1, "delta": 1}


@pytest.mark.parametrize("argv", [
    ["--measure", "marginal-risk", "--target", "1.2", "--p", "0.5,0.2", "--known", "2"],
    ["--measure", "tail", "--tail-tolerance", "0.1", "--max-ratio", "1.5", "--p", "0.2"],
])
def test_other_single_level_budgets_check_each_input_once(calls, capsys, argv):
    _budget_cli(argv, capsys)
    assert dict(calls) == {"p": 1, "known": 1, "rho": 1, "delta": 1}


@pytest.mark.parametrize(("argv", "expected"), [
    (["posterior", "--rho1", "census:block", "--x1-star", "3"],
     {"x1_star", "rho", "p", "known"}),
    (["marginal", "--rho1", "census:block"], {"rho", "p", "known"}),
])
def test_single_level_command_checks_each_input_once(calls, capsys, argv, expected):
    status, _, _ = run_cli([*argv, "--json"], capsys)
    assert status == 0
    assert dict(calls) == dict.fromkeys(expected, 1)


def test_two_level_budget_search_checks_each_input_once(calls):
    """One rho2 search: before, 727 checks of each scenario parameter (every evaluation)."""
    from dprisk.inference.privacy.budget_levels import rho2_for_target

    answer = rho2_for_target(0.8, rho1=1.0, x2=5, d=2, p=[0.3, 0.5])
    assert answer.certified_to is not None
    # rho2: the scan's low end (the searched value's range), p: the first prior in the
    # scenario and the others as one list
    assert dict(calls) == {"rho1": 1, "rho2": 1, "d": 1, "p": 2, "known": 1, "x2": 1}


def test_census_budget_search_checks_each_input_once(calls):
    from dprisk.inference.privacy.budget_levels import census_rho_for_target

    # x2 = 1, d = 1: the smallest block group (half the CPU of x2 = 5, d = 2); the count of
    # validations does not depend on the values searched over
    census_rho_for_target("marginal-risk", 1.05, x2=1, d=1)
    assert dict(calls) == {"rho1": 1, "rho2": 1, "d": 1, "p": 1, "known": 1, "x2": 1}
