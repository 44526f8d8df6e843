"""``dprisk posterior --tune N``: PyMC's tuning iterations per chain (``pm.sample(tune=N)``).

* It reaches ``pm.sample``: the command line's answer is the API's with the same ``tune``
  (nested ``pymc`` at the range's edge 0, two-level ``pymc-gibbs`` at 7), and without
  ``--tune`` the API's default (1000, PyMC's own: the draws of before the option).
* A bad value (negative, not an integer, above 2**53, above the work limit) is exit 2 with one
  stderr line naming ``--tune`` (the work limit names ``draws, chains, tune``), nothing on
  stdout and nothing written (not even the requested ``--save-draws`` file).
* With ``--method gibbs`` or ``exact``, or in the single-level form, it is refused
  (``tests/cli/test_options.py``); it is not echoed in the JSON (like ``--draws``).
"""


import pytest
from cli_helpers import check_contract, record_calls, run_cli, run_json

from dprisk.inference.nested.posterior import posterior_summary as nested_summary
from dprisk.inference.two_level.sampling import posterior_summary as two_level_summary
from dprisk.models.builders.two_level import validated_spec

TWO = {"rho1": 0.1, "rho2": 0.25, "d": 3}
POST_2 = ("posterior", "--rho1", "0.1", "--rho2", "0.25", "--d", "3", "--x1-star", "1",
          "--x2-star", "2", "--y1-star", "1")
POST_H = ("posterior", "--rhos", "0.1,0.25", "--siblings", "3", "--stars", "1,2,1")
SMALL = ("--draws", "10", "--chains", "1", "--seed", "3")
SMALL_API = {"draws": 10, "chains": 1, "random_seed": 3}


def _sampled(payload: dict) -> dict:
    """The payload without its seed (3, as given); ``tune`` is not echoed."""
    assert payload.pop("seed") == 3 and "tune" not in payload
    return payload


def test_nested_pymc_tune_reaches_pm_sample(capsys, monkeypatch):
    """The command line calls the API as ``nested_summary(..., method="pymc", tune=0, ...)``
    would (the arguments bound to its signature, defaults applied) and prints that call's
    payload; that the API's ``tune`` reaches ``pm.sample`` is checked in
    ``tests/inference/nested/test_posterior.py::test_pymc_tune_default_is_pm_sample_s_and_a_
    given_tune_is_passed_down``. (Before: the API sampled a second time, a second compiled
    model, about 0.9 s of CPU.)"""
    import inspect

    from dprisk.inference.nested import posterior

    calls = record_calls(monkeypatch, posterior, "summarize_posterior")
    got = _sampled(run_json([*POST_H, "--method", "pymc", *SMALL, "--tune", "0"], capsys))
    (given, answer), = calls
    expected = inspect.signature(nested_summary).bind(
        rhos=[0.1, 0.25], siblings=[3], x_stars=[1, 2], y_stars=[1], method="pymc", tune=0,
        **SMALL_API)
    for bound in (given, expected):
        bound.apply_defaults()
        bound.arguments.pop("progressbar")  # no bar: not a terminal either way
        # The model's inputs as checked (the CLI passes its own p, known and prior defaults)
        bound.arguments["parameters"] = posterior.nested_scenario(
            bound.arguments.pop("scenario"), **bound.arguments["parameters"])
    assert given.arguments["tune"] == 0
    assert given.arguments == expected.arguments
    assert got == answer.nested_json(2)


def test_two_level_pymc_gibbs_tune_reaches_pm_sample(capsys):
    got = _sampled(run_json([*POST_2, "--method", "pymc-gibbs", *SMALL, "--tune", "7"], capsys))
    assert got == two_level_summary(1, 2, 1, **TWO, method="pymc-gibbs", tune=7, **SMALL_API)


def test_without_tune_the_default_is_unchanged(capsys, monkeypatch):
    """The command line calls the API with the API's default ``tune``.

    The arguments the CLI passes to ``summarize_posterior`` (bound with their defaults) must
    equal those of ``posterior_summary(1, 2, 1, ..., method="pymc", draws=10, chains=1,
    random_seed=3)``, whose ``tune`` is its default. A spy stands in for
    ``summarize_posterior`` and stops the run there: the sampling (a compiled model and 1,010
    PyMC steps, about 1.2 s of CPU) would only show again what
    test_two_level_pymc_gibbs_tune_reaches_pm_sample shows with sampling, through the same
    code: that the CLI prints the payload of the call it made.
    """
    import inspect

    from dprisk.inference.two_level import sampling

    class Stopped(BaseException):  # not an Exception: past the CLI's one-line handler
        pass

    signature, calls = inspect.signature(sampling.summarize_posterior), []

    def spy(*args, **kwargs):
        calls.append(signature.bind(*args, **kwargs))
        raise Stopped

    monkeypatch.setattr(sampling, "summarize_posterior", spy)
    with pytest.raises(Stopped):
        run_cli([*POST_2, "--method", "pymc", *SMALL, "--json"], capsys)
    (given,) = calls
    api = inspect.signature(two_level_summary)
    expected = api.bind(1, 2, 1, **TWO, method="pymc", **SMALL_API)
    for bound in (given, expected):
        bound.apply_defaults()
        bound.arguments.pop("progressbar")  # no bar: not a terminal either way
        # The model's inputs as checked (the CLI passes its own p, known and prior defaults)
        bound.arguments["parameters"] = validated_spec(
            *(bound.arguments.pop(k) for k in ("x1_star", "x2_star", "y1_star")),
            scenario=bound.arguments.pop("scenario"), **bound.arguments["parameters"])
    assert given.arguments["tune"] == api.parameters["tune"].default == 1000
    assert given.arguments == expected.arguments


BAD = ["-1", "1.5", "abc", "nan", "inf", "", "1e20", "9007199254740993"]


@pytest.mark.parametrize("value", [*BAD, "100000000"])
@pytest.mark.parametrize(("base", "method"), [(POST_2, "pymc"), (POST_2, "pymc-gibbs"),
                                              (POST_H, "pymc")],
                         ids=["two-level pymc", "two-level pymc-gibbs", "nested pymc"])
def test_bad_tune_is_exit_2_naming_it_and_writes_nothing(base, method, value, capsys,
                                                        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DPRISK_WORK_LIMIT", raising=False)
    monkeypatch.delenv("DPRISK_WORK_BUDGET", raising=False)
    status, out, err = run_cli([*base, "--method", method, *SMALL, f"--tune={value}",
                                "--save-draws", "d.nc", "--json"], capsys)
    assert status == 2, err
    check_contract(status, out, err)
    if value == "100000000":  # 1 chain x (1e8 + 10) x 30000 steps: above the work limit
        assert ": error: --draws, --chains, --tune: 1 PyMC chains x (100000000 tuning" in err, err
    else:
        assert ": error: --tune " in err or "argument --tune: " in err, err
    assert list(tmp_path.iterdir()) == []
