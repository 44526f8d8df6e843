"""Nothing on a ``dprisk`` command line is silently ignored; every random result is reproducible.

* An option that does not apply to the requested computation exits 2 with one stderr line
  naming the option and the form it was given to.
* Each subcommand's ``--help`` states every default; ``dprisk --version``; bare ``dprisk``.
* A sampled answer reports its seed (JSON ``seed``, a summary line); the same command with
  that seed gives the same JSON.
"""

import json
import re

import pytest
from cli_helpers import assert_refused, check_contract, run_cli, run_json

import dprisk

TWO = ("--rho1", "0.1", "--rho2", "0.25", "--d", "3")
POST_1 = ("posterior", "--rho1", "0.1", "--x1-star", "1")
POST_2 = ("posterior", *TWO, "--x1-star", "1", "--x2-star", "2", "--y1-star", "1")
POST_H = ("posterior", "--rhos", "0.1,0.25", "--siblings", "3", "--stars", "1,2,1")
MARG_1 = ("marginal", "--rho1", "0.1")
MARG_2 = ("marginal", *TWO, "--x2", "2")
MARG_U = ("marginal", "--rhos", "0.1,0.25")
SWEEP = ("sweep", "--rho1", "0.1", "--rho2", "0.25", "--d", "3", "--x2", "2")
GIBBS = ("--method", "gibbs", "--draws", "60", "--chains", "2")
MC = ("--method", "mc", "--datasets", "40", "--draws", "20")




def _given_to(base, form: str, *options) -> list[tuple]:
    """Cases of each ``(FLAG, VALUE)`` in ``options`` added to ``base``: FLAG must be named,
    with ``form``."""
    return [((*base, flag, value), flag, form) for flag, value in options]


# (argv, the option that must be named, a word of the form it was given to)
IGNORED_BEFORE = [
    # the example: two-level options without --rho2 (single-level marginal)
    *_given_to(MARG_1, "single-level", ("--x2", "5"), ("--x1", "1"), ("--d", "27"),
               ("--prior", "improper"), ("--datasets", "10"), ("--draws", "10"),
               ("--seed", "1"), ("--method", "mc"), ("--chains", "2")),
    # two-level marginal: Monte Carlo options with --method exact; --chains never applies
    *_given_to(MARG_2, "exact", ("--datasets", "10"), ("--seed", "3")),
    ((*MARG_2, "--method", "exact", "--draws", "10"), "--draws", "exact"),
    ((*MARG_2, "--method", "mc", "--chains", "2"), "--chains", "two-level"),
    # unique-levels marginal: --rhos mixed with the other forms' options
    *_given_to(MARG_U, "unique-levels", ("--rho1", "0.1"), ("--rho2", "0.1"), ("--x2", "2"),
               ("--prior", "improper"), ("--seed", "1"), ("--method", "mc")),
    # single-level posterior: exact only, no two-level or nested options
    *_given_to(POST_1, "single-level", ("--method", "gibbs"), ("--method", "pymc"),
               ("--d", "3"), ("--x2-star", "2"), ("--y1-star", "2"), ("--prior", "improper"),
               ("--draws", "10"), ("--chains", "2"), ("--seed", "1"), ("--siblings", "3"),
               ("--stars", "1,2,1")),
    # two-level posterior: sampling options with --method exact, nested options
    *_given_to(POST_2, "exact", ("--draws", "10"), ("--seed", "1")),
    ((*POST_2, "--method", "exact", "--chains", "2"), "--chains", "exact"),
    *_given_to(POST_2, "two-level", ("--siblings", "3"), ("--stars", "1,2,1")),
    # nested-levels posterior: --rhos mixed with --rho1 & co, sampling options with exact
    *_given_to(POST_H, "nested-levels", ("--rho1", "0.1"), ("--rho2", "0.1"), ("--d", "3"),
               ("--x1-star", "1")),
    *_given_to(POST_H, "exact", ("--seed", "1"), ("--draws", "10"), ("--tune", "200")),
    # --tune: PyMC's tuning, for --method pymc (and pymc-gibbs) only
    ((*POST_1, "--tune", "200"), "--tune", "single-level"),
    ((*POST_2, "--tune", "200"), "--tune", "exact"),
    ((*POST_2, *GIBBS, "--tune", "200"), "--tune", "pymc|pymc-gibbs"),
    ((*POST_H, *GIBBS, "--tune", "200"), "--tune", "--method pymc"),
    # --siblings / --stars without --rhos
    (("posterior", "--rho1", "0.1", "--siblings", "3", "--x1-star", "1"), "--siblings",
     "single-level"),
    ((*POST_2, "--stars", "1,2,1", "--siblings", "3"), "--siblings", "two-level"),
    # sweep: Monte Carlo options with the exact study
    *_given_to((*SWEEP, "--out", "{tmp}/s.nc"), "exact", ("--seed", "1"), ("--datasets", "10"),
               ("--draws", "10")),
    *_given_to((*SWEEP, "--out", "{tmp}/s.nc"), "exact, mc", ("--method", "gibbs")),
]


@pytest.mark.parametrize(("argv", "option", "form"), IGNORED_BEFORE,
                         ids=[" ".join(case[0]) for case in IGNORED_BEFORE])
def test_option_that_does_not_apply_is_refused(argv, option, form, capsys, tmp_path):
    argv = [item.replace("{tmp}", str(tmp_path)) for item in argv]
    line = assert_refused(argv, option, capsys, root=tmp_path)  # nothing written
    assert form in line, line


@pytest.mark.parametrize(
    "argv",
    [(*POST_1, "--method", "exact"), (*MARG_1, "--method", "exact"),
     (*MARG_U, "--method", "exact"), (*POST_2, "--method", "exact"),
     (*MARG_2, "--method", "exact", "--x1", "1", "--prior", "improper")],
)
def test_options_that_apply_are_accepted_and_exact_answers_carry_no_seed(argv, capsys):
    status, out, err = run_cli([*argv, "--json"], capsys)
    assert status == 0, err
    assert "seed" not in json.loads(out)


# --------------------------------------------------------------------------- help
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("posterior", ["(default: 0.5)", "(default: 0)", "(default: exact)",
                       "(default: improper)", "(default: 5000)", "(default: 4)",
                       "(default: a random seed, reported)"]),
        ("marginal", ["(default: 0.5)", "(default: 0)", "(default: exact)",
                      "(default: improper)", "(default: 1000)", "(default: 20000)",
                      "(default: known + 1)", "(default: a random seed, reported)"]),
        ("sweep", ["A:B:N", "A:B:N:log", "A:B", "1/864", "(default: 0.5)", "(default: 0)",
                   "(default: improper)", "(default: exact)", "(default: 20000)",
                   "(default: 1000)", "(default: a random seed, reported)"]),
    ],
)
def test_help_shows_every_default_and_the_grid_syntax(command, expected, capsys):
    status, out, _ = run_cli([command, "--help"], capsys)
    assert status == 0
    flat = " ".join(out.split())  # argparse wraps lines
    for text in expected:
        assert text in flat, (text, out)


def test_version(capsys):
    status, out, _ = run_cli(["--version"], capsys)
    assert status == 0
    assert out.strip() == f"dprisk {dprisk.__version__}"


def test_bare_dprisk_prints_usage_and_commands_and_exits_2(capsys):
    status, out, err = run_cli([], capsys)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "usage: dprisk" in lines[0]
    for command in ("census", "posterior", "marginal", "sweep", "reproduce"):
        assert command in lines[0]


def test_top_level_help_lists_commands_and_exit_statuses(capsys):
    status, out, _ = run_cli(["--help"], capsys)
    flat = " ".join(out.split())
    assert status == 0 and "--version" in flat and "2 bad input" in flat
    for command in ("census", "posterior", "marginal", "sweep", "reproduce"):
        assert command in flat


# --------------------------------------------------------------------------- fractions
def test_sweep_accepts_fraction_probabilities(capsys, tmp_path):
    out_file = tmp_path / "s.nc"
    status, out, err = run_cli([*SWEEP, "--p", "1/864,1/2", "--out", str(out_file), "--json"],
                               capsys)
    assert status == 0, err
    records = json.loads(out)["records"]
    assert [r["p"] for r in records] == [1 / 864, 0.5]
    assert "seed" not in json.loads(out)


# --------------------------------------------------------------------------- seeds
RANDOM_COMMANDS = {
    "posterior two-level gibbs": (*POST_2, *GIBBS),
    "posterior nested gibbs": (*POST_H, *GIBBS),
    # 200 tuning steps (not PyMC's 1000): the seed, not the tuning length, is under test
    "posterior two-level pymc": (*POST_2, "--method", "pymc", "--draws", "30", "--chains", "1",
                                 "--tune", "200"),
    "posterior nested pymc": (*POST_H, "--method", "pymc", "--draws", "30", "--chains", "1",
                              "--tune", "200"),
    "marginal mc": (*MARG_2, *MC),
    "sweep mc": (*SWEEP, "--rho2", "0.25,1", *MC, "--out", "{tmp}/s.nc"),
}


def _with_out(argv, tmp_path, name: str) -> list[str]:
    """``argv`` with the sweep's ``--out`` placeholder replaced by ``tmp_path/NAME.nc``."""
    return [str(tmp_path / f"{name}.nc") if item == "{tmp}/s.nc" else item for item in argv]


@pytest.mark.parametrize("argv", list(RANDOM_COMMANDS.values()), ids=list(RANDOM_COMMANDS))
def test_random_result_reports_its_seed_and_the_seed_reproduces_it(argv, capsys, tmp_path):
    first = run_json(_with_out(argv, tmp_path, "first"), capsys)
    seed = first["seed"]
    assert type(seed) is int and 0 <= seed < 2**32
    again = run_json(_with_out([*argv, "--seed", str(seed)], tmp_path, "again"), capsys)
    if "out" in first:  # the sweep's output path differs between the two runs
        first.pop("out"), again.pop("out")
    assert again == first


@pytest.mark.parametrize("argv", list(RANDOM_COMMANDS.values()), ids=list(RANDOM_COMMANDS))
def test_readable_summary_reports_the_seed(argv, capsys, tmp_path):
    status, out, err = run_cli(_with_out(argv, tmp_path, "drawn"), capsys)
    assert status == 0, err
    match = re.search(r"seed\s+(\d+) \(drawn at random; --seed (\d+) reproduces this run\)", out)
    assert match and match[1] == match[2], out
    status, out, _ = run_cli([*_with_out(argv, tmp_path, "given"), "--seed", "7"], capsys)
    assert status == 0 and re.search(r"seed\s+7 \(from --seed\)", out), out


def test_given_seed_is_reported_in_json(capsys, tmp_path):
    payload = run_json(_with_out([*MARG_2, *MC, "--seed", "11"], tmp_path, "a"), capsys)
    assert payload["seed"] == 11


def test_mc_sweep_seed_is_in_the_dataset_and_a_rerun_resumes_with_it(capsys, tmp_path):
    import xarray as xr

    argv = (*SWEEP, *MC, "--out", str(tmp_path / "s.nc"))
    first = run_json(_with_out(argv, tmp_path, "a"), capsys)
    assert xr.load_dataset(tmp_path / "s.nc").attrs["mc_seed"] == first["seed"]
    status, out, err = run_cli(argv, capsys)  # no --seed: the stored sweep's seed is used
    assert status == 0, err
    assert re.search(rf"seed\s+{first['seed']} \(of the sweep already at ", out), out


def test_mc_sweep_seed_above_2_53_is_refused_naming_seed(capsys, tmp_path):
    """The sweep stores its seed (manifest, ``mc_seed``): at most 2**53, refused as --seed.

    The refusal named the API's ``mc_options['seed']``, no option of ``dprisk sweep``.
    """
    argv = (*SWEEP, *MC, "--seed", str(2**53 + 1), "--out", str(tmp_path / "s.nc"))
    line = assert_refused(argv, "--seed", capsys, root=tmp_path)
    assert "mc_options" not in line and "2**53" in line, line


@pytest.mark.parametrize(
    ("fraction", "decimal"),
    [(("posterior", "--rho1", "1/10", "--x1-star", "1", "--p", "1/4"),
      ("posterior", "--rho1", "0.1", "--x1-star", "1", "--p", "0.25")),
     (("marginal", "--rhos", "1/10,1/4"), ("marginal", "--rhos", "0.1,0.25")),
     (("marginal", "--rho1", "1/10", "--rho2", "1/4", "--d", "3", "--x2", "2"),
      ("marginal", "--rho1", "0.1", "--rho2", "0.25", "--d", "3", "--x2", "2"))],
)
def test_numbers_accept_fractions_everywhere(fraction, decimal, capsys):
    status, out, err = run_cli([*fraction, "--json"], capsys)
    assert status == 0, err
    assert json.loads(out) == json.loads(run_cli([*decimal, "--json"], capsys)[1])


@pytest.mark.parametrize("argv", [("posterior", "--rho1", "1/0", "--x1-star", "1"),
                                  ("marginal", "--rhos", "1/0,1")])
def test_bad_fraction_names_the_option(argv, capsys):
    status, out, err = run_cli(argv, capsys)
    assert status == 2
    check_contract(status, out, err)
    assert "rho" in err


@pytest.mark.parametrize(("argv", "option", "shown"), [
    # a 309-digit integer before, and the range named x1_star
    ([*POST_1[:3], "--x1-star", "1e308"], "--x1-star",
     "(allowed range: -2**53 <= --x1-star <= 2**53), got 1e+308"),
    ([*POST_1[:3], "--x1-star", "-1" + "0" * 40], "--x1-star",
     "(allowed range: -2**53 <= --x1-star <= 2**53), got -1e+40"),
    # "got -1.0" and no upper bound before
    ([*POST_1, "--known", "-1"], "--known", "(allowed range: 0 <= --known <= 2**53), got -1"),
    ([*MARG_1, "--known", "1e30"], "--known", "(allowed range: 0 <= --known <= 2**53), got 1e+30"),
    ([*MARG_1, "--p", "2"], "--p", "(allowed range: 0 < --p < 1)"),
])
def test_count_refusals_name_the_option_show_the_value_and_the_whole_range(argv, option, shown,
                                                                         capsys):
    err = assert_refused(list(argv), option, capsys)
    assert shown in err and "x1_star" not in err, err


@pytest.mark.parametrize("base", [MARG_2, (*SWEEP, "--out", "s.nc"), ("product", "--rho1", "0.5",
                                                                       "--rho2", "0.5",
                                                                       "--others", "3")])
def test_one_monte_carlo_data_set_is_refused_everywhere(base, capsys, tmp_path, monkeypatch):
    """``marginal``/``sweep --method mc --datasets 1`` reported ``mcse: 0.0`` (undefined with
    one data set) where ``product`` refused it: every Monte Carlo form needs two."""
    monkeypatch.chdir(tmp_path)
    argv = [*base, "--method", "mc", "--datasets", "1", "--seed", "1"]
    if base[0] != "product":
        argv += ["--draws", "20"]
    err = assert_refused(argv, "--datasets", capsys, root=tmp_path)
    assert "--datasets must be an integer >= 2" in err, err
    _, out, _ = run_cli([base[0], "--help"], capsys)
    assert "2 <= N" in " ".join(out.split())
