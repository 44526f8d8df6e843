"""Requests too long for the work limit are refused before they start.

Each row is a command line (or API call) whose running time is known from its parameters
(datasets x draws of a Monte Carlo study, chains x (tune + draws) of a sampler, points of a
sweep). Each must give exit status 2 (``ValueError`` from the API) with one line naming the
parameter, the estimate in steps and the budget's environment variable ``DPRISK_WORK_LIMIT``
(:mod:`dprisk.runtime.work_limit`), and write nothing. Every row would run for hours (the
message's estimate says how long), so a row that is not refused fails by not finishing.
"""

from __future__ import annotations

import pytest
from cli_helpers import run_cli

from dprisk.inference.nested.posterior import posterior_summary as nested_summary
from dprisk.inference.studies.monte_carlo import simulate_p_correct
from dprisk.inference.sweeps.sweep import sweep
from dprisk.inference.two_level.gibbs import gibbs_sample
from dprisk.inference.two_level.sampling import sample_posterior
from dprisk.runtime.work_limit import (
    DEFAULT_WORK_LIMIT,
    LIMIT_ENV,
    WorkLimitError,
    check_work,
    mc_study_steps,
    pymc_work_steps,
    work_limit,
)

TWO_LEVEL = ["--rho1", "0.5", "--rho2", "0.5", "--d", "10"]
MC = ["marginal", *TWO_LEVEL, "--x2", "20", "--method", "mc", "--seed", "1"]
RELEASE = ["--x1-star", "1", "--x2-star", "20", "--y1-star", "19"]
NESTED = ["posterior", "--rhos", "0.5,0.5,0.5", "--siblings", "3,3", "--stars", "1,5,15,4,10",
          "--seed", "1"]
SWEEP = ["sweep", "--rho2", "0.5", "--d", "10", "--x2", "20", "--out", "s.nc"]

#: name -> (argv, the options the message names first: every option that sets the work, as
#: typed or in its long spelling, when one of them was given; dprisk.cli.main.naming_given_option)
TOO_LONG = {
    "marginal mc, 1e9 datasets": ([*MC, "--datasets", "1000000000"], "--datasets, --draws"),
    "marginal mc, 1e10 draws": ([*MC, "--draws", "10000000000"], "--datasets, --draws"),
    "marginal mc, 1e6 x 1e6": ([*MC, "--datasets", "1000000", "--draws", "1000000"],
                               "--datasets, --draws"),
    "posterior pymc, 1e8 draws": (["posterior", *TWO_LEVEL, *RELEASE, "--method", "pymc",
                                   "--draws", "100000000", "--seed", "1"],
                                  "--draws, --chains, --tune"),
    "posterior pymc, 1e7 chains": (["posterior", *TWO_LEVEL, *RELEASE, "--method", "pymc",
                                    "--chains", "10000000", "--seed", "1"],
                                   "--draws, --chains, --tune"),
    "posterior pymc, 1e8 tuning steps": (
        ["posterior", *TWO_LEVEL, *RELEASE, "--method", "pymc", "--tune", "100000000",
         "--seed", "1"], "--draws, --chains, --tune"),
    "posterior pymc-gibbs, 1e8 tuning steps": (
        ["posterior", *TWO_LEVEL, *RELEASE, "--method", "pymc-gibbs", "--tune", "100000000",
         "--seed", "1"], "--draws, --chains, --tune"),
    "nested gibbs, 8.5e7 draws (within the memory limit)": (
        [*NESTED, "--method", "gibbs", "--draws", "85000000", "--chains", "1"],
        "--draws, --chains"),
    "nested pymc, 1e8 draws": ([*NESTED, "--method", "pymc", "--draws", "100000000"],
                               "--draws, --chains, --tune"),
    "nested pymc, 1e8 tuning steps": ([*NESTED, "--method", "pymc", "--tune", "100000000"],
                                      "--draws, --chains, --tune"),
    "sweep mc, 1000 points x 1e6 datasets": (
        [*SWEEP, "--rho1", "0.1:1:1000", "--method", "mc", "--datasets", "1000000", "--seed",
         "1"], "--rho1, --datasets, --draws"),
    "sweep mc, 10 points x 1e9 draws": (
        [*SWEEP, "--rho1", "0.1:1:10", "--method", "mc", "--draws", "1000000000", "--seed",
         "1"], "--rho1, --datasets, --draws"),
    "sweep mc, one point x 1e10 datasets (no grid swept: the grid is not named)": (
        [*SWEEP, "--rho1", "0.1", "--method", "mc", "--datasets", "10000000000", "--seed",
         "1"], "--datasets, --draws"),
    "attribute strategy, 1e9 releases": (
        ["attribute", "--rho1", "0.5", "--cells", "2016", "--strategy", "census-2020",
         "--releases", "1000000000", "--seed", "1"], "--releases"),
    "attribute block group, 1e8 other blocks": (
        ["attribute", "--rho1", "0.5", "--cells", "2016", "--strategy", "census-2020",
         "--rho2", "0.5", "--d", "100000000", "--releases", "10", "--seed", "1"],
        "--releases and --d"),
}


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    # the work limit is what refuses: a memory limit the requests stay under (the nested
    # Gibbs case's 8.5e7 draws hold about 18 GiB)
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "1TiB")
    return tmp_path


@pytest.mark.parametrize("case", list(TOO_LONG))
def test_too_long_requests_are_refused_before_they_start(case, in_tmp, capsys):
    argv, parameter = TOO_LONG[case]
    status, out, err = run_cli(argv, capsys)
    lines = err.strip().splitlines()
    assert status == 2, err
    assert out == "" and len(lines) == 1, (out[:200], lines)
    message = lines[0]
    assert f": error: {parameter}: " in message, message
    assert "steps of work" in message and LIMIT_ENV in message
    assert list(in_tmp.iterdir()) == []


#: API calls refused by the work limit (the memory limit would allow them).
API_TOO_LONG = {
    "gibbs_sample, 1e10 tuning sweeps": lambda: gibbs_sample(
        1, 20, 19, rho1=0.5, rho2=0.5, d=10, draws=1, chains=1, tune=10**10, random_seed=1),
    "nested posterior_summary pymc, 1e10 tuning steps": lambda: nested_summary(
        x_stars=[1, 5, 15], y_stars=[4, 10], rhos=[0.5, 0.5, 0.5], siblings=[3, 3],
        method="pymc", draws=1, chains=1, tune=10**10, random_seed=1),
    "two-level sample_posterior pymc, 1e10 tuning steps": lambda: sample_posterior(
        1, 20, 19, rho1=0.5, rho2=0.5, d=10, method="pymc", draws=1, chains=1, tune=10**10,
        random_seed=1),
    "simulate_p_correct, 1e9 x 1e4": lambda: simulate_p_correct(
        x2=20, rho1=0.5, rho2=0.5, d=10, datasets=10**9, draws=10**4, random_seed=1),
    "sweep, mc options": lambda: sweep(
        rho1=[0.1, 0.2], rho2=0.5, d=10, x2=20, method="mc",
        mc_options={"seed": 1, "datasets": 10**9, "draws": 1000}),
}


@pytest.mark.parametrize("case", ["study", "sweep"])
def test_monte_carlo_work_counts_the_other_blocks_noise_sums(case, monkeypatch, tmp_path):
    """Each release's y1* noise is the sum of d DG draws, drawn one other block at a time
    (40-80 us a block of releases, 5-8 steps a draw, measured): before, 2 datasets x 10 draws
    at d = 1e8 passed the check as 2.2e4 steps and ran for hours (still sampling after 60 s;
    d = 1e6 x 100 datasets took 80 s). Now (d - 1) x (12 datasets + 20000) = 2e12 steps,
    refused naming d before any draw (the sampler is replaced by one that fails)."""
    from dprisk.inference.studies import monte_carlo

    def sampled(*args, **kwargs):
        raise AssertionError("sampled before the work check")

    monkeypatch.setattr(monte_carlo, "sample_sum_kernel", sampled)
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    assert mc_study_steps(2, 10, 10**8) == pytest.approx(2.0024e12, rel=1e-4)
    assert mc_study_steps(2, 10, 1) == mc_study_steps(2, 10)  # one draw: MC_DATASET_STEPS
    if case == "study":
        with pytest.raises(WorkLimitError, match=r"^datasets, draws, d: 2 datasets x 10 draws, "
                                                 r"d = 100000000 other blocks is about 2e12"):
            simulate_p_correct(x2=20, rho1=0.5, rho2=0.5, d=10**8, datasets=2, draws=10,
                               random_seed=1)
    else:  # the largest d counted at every point: an upper bound
        with pytest.raises(WorkLimitError, match=r"^d, datasets, draws: a Monte Carlo sweep of "
                                                 r"2 grid points x 2 datasets x 10 draws, d up "
                                                 r"to 100000000 other blocks is about 4e12"):
            sweep(rho1=0.1, rho2=0.5, d=[10, 10**8], x2=20, method="mc",
                  mc_options={"seed": 1, "datasets": 2, "draws": 10},
                  out=str(tmp_path / "s.nc"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case", list(API_TOO_LONG))
def test_api_refuses_too_long_work(case, monkeypatch):
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    with pytest.raises(WorkLimitError, match=LIMIT_ENV) as info:
        API_TOO_LONG[case]()
    if "tuning steps" in case:  # PyMC's tune is named with draws and chains
        assert str(info.value).startswith("draws, chains, tune: 1 PyMC chains x "), info.value


def test_budget_from_the_environment(monkeypatch, capsys):
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    assert work_limit() == DEFAULT_WORK_LIMIT
    steps = mc_study_steps(10**9, 1000)
    assert steps > DEFAULT_WORK_LIMIT
    with pytest.raises(WorkLimitError):
        check_work(steps, parameter="datasets", what="x")
    monkeypatch.setenv(LIMIT_ENV, f"{steps:.0e}")  # raised: now accepted
    check_work(steps, parameter="datasets", what="x")
    monkeypatch.setenv(LIMIT_ENV, "1e3")  # lowered: a small study is refused
    status, out, err = run_cli([*MC, "--datasets", "10"], capsys)
    assert status == 2 and out == "" and "1e3 steps" in err, err


def test_exact_sweep_within_a_raised_memory_budget_is_refused_by_the_work_budget(
        in_tmp, monkeypatch, capsys):
    """1e7 exact points (hours of work) need a raised memory limit to reach the work check."""
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "1TiB")
    status, out, err = run_cli([*SWEEP, "--rho1", "0.1:1:10000000"], capsys)
    assert status == 2 and out == "", err
    assert ": error: --rho1: an exact sweep of 10000000 grid points is about 3e12 steps" in err
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize("value", ["abc", "0", "-1e12", "nan", "inf", "1e400"])
def test_bad_budget_values_are_refused_naming_the_variable(value, monkeypatch, capsys):
    monkeypatch.setenv(LIMIT_ENV, value)
    status, out, err = run_cli([*MC, "--datasets", "10"], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and LIMIT_ENV in err, err


def test_exact_two_level_study_within_a_raised_memory_budget_is_refused_by_the_work_budget(
        in_tmp, monkeypatch, capsys):
    """rho1 = 1e-12, d = 3: 5.4e8 releases (hours of work) once the memory limit allows it."""
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "1TiB")
    status, out, err = run_cli(["marginal", "--rho1", "1e-12", "--rho2", "0.5", "--d", "3",
                                "--x2", "5"], capsys)
    assert status == 2 and out == "", err
    assert ": error: --rho1, --rho2, --d: the exact study's grid of 5.36e+08 releases" in err, err
    assert "steps of work" in err and LIMIT_ENV in err


@pytest.mark.parametrize("command", ["marginal", "sweep"])
def test_a_large_d_is_named_in_the_grid_refusal(command, in_tmp, monkeypatch, capsys):
    """The y1* axis of the exact study's release grid spans the sum of the d other blocks'
    noises (about 2 d K(rho1) values): at d = 1e9 it needs 9.84 TiB. The refusal named only
    '--rho1, --rho2' (the user had set neither small); now '--rho1, --rho2, --d'."""
    monkeypatch.delenv("DPRISK_MEMORY_LIMIT", raising=False)
    argv = ["--rho1", "0.3", "--rho2", "0.7", "--d", "1000000000", "--x2", "3"]
    if command == "sweep":
        argv += ["--out", "s.nc"]
    status, out, err = run_cli([command, *argv], capsys)
    assert status == 2 and out == "", err
    assert ": error: --rho1, --rho2, --d: the grid of releases (x2*, y1*) needs about 9.84 TiB" \
        in err, err
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize("level", ["two-level", "nested"])
def test_pymc_work_counts_each_chains_set_up(level, monkeypatch):
    """Each PyMC chain costs 26-41 ms of CPU besides its draws (set-up, start, trace; measured
    at 4 draws, tune 0): before, 1e6 chains x 4 draws passed the check as 1.2e11 steps (about
    9 min) and would run for about 8 h (1000 chains took 80 s); now chains x ((tune + draws)
    x 30000 + 1e7) = 1e13 steps, refused before sampling (pm.sample replaced by a failure)."""
    import pymc

    def sampled(*args, **kwargs):
        raise AssertionError("sampled before the work check")

    monkeypatch.setattr(pymc, "sample", sampled)
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    assert pymc_work_steps(10**6, 0, 4) == pytest.approx(1.012e13, rel=1e-12)
    with pytest.raises(WorkLimitError, match=r"^draws, chains, tune: 1000000 PyMC chains x "
                                             r"\(0 tuning \+ 4\) draws is about 1\.01e13"):
        if level == "two-level":
            sample_posterior(1, 20, 19, rho1=0.5, rho2=0.5, d=10, method="pymc", draws=4,
                             chains=10**6, tune=0, random_seed=1)
        else:
            nested_summary(x_stars=[1, 5, 15], y_stars=[4, 10], rhos=[0.5, 0.5, 0.5],
                           siblings=[3, 3], method="pymc", draws=4, chains=10**6, tune=0,
                           random_seed=1)


def test_nested_pymc_work_counts_the_models_levels(monkeypatch):
    """Building and compiling the nested-levels PyMC model is paid once and grows with the
    levels h (beyond a fixed 2 s: 7.7 s of CPU at h = 10, 44 s at h = 20, over 120 s at
    h = 30, measured): before, h = 100 levels x 10 draws passed as 4e7 steps (0.2 s) and
    would compile for hours; now + 1.5e6 h^3 steps = 1.5e12, refused naming rhos before the
    model is built (the builder is replaced by a failure)."""
    from dprisk.models.builders import nested as builders

    def built(*args, **kwargs):
        raise AssertionError("model built before the work check")

    monkeypatch.setattr(builders, "build_nested_model", built)
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    h = 100
    with pytest.raises(WorkLimitError, match=r"^rhos: building and compiling the PyMC model "
                                             r"of 100 levels is about 1\.5e12 steps"):
        nested_summary(x_stars=[1] * h, y_stars=[1] * (h - 1), rhos=[0.5] * h,
                       siblings=[3] * (h - 1), method="pymc", draws=10, chains=1, tune=0,
                       random_seed=1)


@pytest.mark.parametrize("option", ["--datasets", "--draws"])
def test_a_monte_carlo_sweep_count_beyond_a_float_is_refused_naming_it(option, in_tmp, capsys):
    """10**400 datasets or draws: the work check's float() overflowed (exit 1, 'failed:
    OverflowError: int too large to convert to float'); now the plan's 2..2**53 check
    names the option."""
    status, out, err = run_cli([*SWEEP, "--rho1", "0.5", "--method", "mc", "--seed", "1",
                                option, str(10**400)], capsys)
    assert status == 2 and out == "", err
    assert err.count("\n") == 1 and f"error: {option} must be an integer >= " in err, err
    assert list(in_tmp.iterdir()) == []
