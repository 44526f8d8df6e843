"""A ρ too small for the release window is refused naming the command-line option.

The API refuses ``rho = … is too small …`` (the window's half-width would pass 2**53); the
command line adds the option the value came from, so the one stderr line names ``--rho1``.
"""

import re

import pytest
from cli_helpers import run_cli

CASES = [
    ["marginal", "--rho1", "1e-320"],
    ["marginal", "--rho1", "1e-320", "--unknown-others", "3", "--q", "0.2"],
    ["attribute", "--rho1", "1e-320", "--cells", "5"],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda argv: " ".join(argv))
@pytest.mark.parametrize("as_json", [False, True])
def test_tiny_rho_names_rho1(argv, as_json, capsys):
    status, out, err = run_cli(argv + (["--json"] if as_json else []), capsys)
    assert status == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "--rho1: rho = 1e-320 is too small" in lines[0]
    assert "allowed range" in lines[0]


@pytest.mark.parametrize(("grid", "option"), [
    (["--rho1", "1e-320:1:3:log", "--rho2", "0.5"], "--rho1"),
    (["--rho1", "1:1e-40:3:log", "--rho2", "0.5"], "--rho1"),  # the far end
    (["--rho1", "0.5", "--rho2", "1e-40:1:3"], "--rho2"),
])
def test_tiny_rho_of_a_sweep_range_names_its_option(grid, option, capsys, tmp_path,
                                                    monkeypatch):
    """A sweep range ``A:B:N[:log]`` whose end is too small a rho: the refusal named no
    option (``rho = 1e-320 is too small ...``: only comma lists were searched for the value)."""
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli(["sweep", *grid, "--d", "3", "--x2", "2", "--out", "s.nc"],
                               capsys)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert f"error: {option}: rho = " in err and "is too small" in err, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv", [
    ["marginal", "--rho1", "1e-40", "--rho2", "0.5", "--d", "3", "--x2", "2"],
    ["marginal", "--rho1", "0.5", "--rho2", "1e-40", "--d", "3", "--x2", "2"],
    ["product", "--rho1", "1e-40", "--rho2", "0.5", "--others", "3"],
    ["product", "--rho1", "0.5", "--rho2", "1e-40", "--others", "3,3,3"],
])
def test_the_smallest_rho_a_too_small_refusal_states_passes_that_check(argv, capsys):
    """'rho >= 5.89e-31' was stated where every rho below 6.94e-31 is refused the same way;
    the stated rho is now past the window check (refused, if at all, by the memory limit)."""
    status, _, err = run_cli(argv, capsys)
    assert status == 2 and "too small" in err, err
    option, stated = re.search(r"(--rho\d)\b.*>= ([0-9.e+-]+)\)", err).groups()
    again = [stated if word == "1e-40" else word for word in argv]
    status, _, err = run_cli(again, capsys)
    assert "too small" not in err, (option, stated, err)


# Every subcommand x every option given a bogus value: exit 2, one line naming the option as it
# was typed (the API's parameter names -- ``rho1``, ``prior``, ``measure`` -- are replaced by
# the option at the command line, dprisk.cli.main.naming_given_option). A refusal of another
# option that the form then requires first ("--d is required") names that option instead.
ISSUE_CASES = [
    (["attribute", "--strategy", "census-2020", "--rho1", "1", "--rho2", "1", "--d", "3",
      "--x2-prior", "bogus", "--releases", "10", "--seed", "1"], "--x2-prior"),
    (["attribute", "--rho1", "1"], "--cells"),  # no form chosen (was a StopIteration)
    (["posterior", "--rho1", "1", "--rho2", "1", "--d", "3", "--x1-star", "3", "--x2-star", "5",
      "--y1-star", "4", "--prior", "bogus"], "--prior"),
    (["marginal", "--rho1", "1", "--rho2", "1", "--d", "3", "--x2", "3", "--prior", "bogus"],
     "--prior"),
    (["marginal", "--rho1=bogus"], "--rho1"),
    (["budget", "--measure", "marginal-risk", "--target", "1.5", "--census", "--d", "3"],
     "--x2 and --d"),
    (["sweep", "--rho1", "0.5", "--rho2", "0.5", "--d", "3", "--x2", "5", "--out", "o.nc",
      "--scheduler", "bogus"], "--scheduler"),
]


@pytest.mark.parametrize("argv, option", ISSUE_CASES, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else v)
def test_the_issues_messages_name_the_option(argv, option, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == "", err
    assert err.count("\n") == 1 and option in err and "Traceback" not in err, err
    assert not list(tmp_path.iterdir())


def _bases():
    from tests.reliability import test_generated_inputs as first
    from tests.reliability import test_generated_inputs_files as files

    bases = {name: base for name, (base, _) in {**first.BASES, **files.BASES}.items()}
    bases.update({
        "summary": ["summary", "--rho1", "0.5"], "census": ["census"],
        "sweep": ["sweep", "--rho1", "0.5", "--rho2", "0.5", "--d", "3", "--x2", "5", "--out",
                  "o.nc"],
        "prior": ["prior", "improper"],
        "budget two-level": ["budget", "--measure", "marginal-risk", "--target", "1.5", "--rho1",
                             "0.5", "--d", "3", "--x2", "5"]})
    return bases


def _options(command: str) -> list[str]:
    import argparse

    from dprisk.cli.main import build_parser

    parser = build_parser([command])
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [a.option_strings[0] for a in subs.choices[command]._actions
            if a.option_strings and a.nargs != 0 and not isinstance(a, argparse._HelpAction)]


def _bogus_cases():
    cases = {}
    for name, base in _bases().items():
        for option in _options(base[0]):
            argv = list(base)
            if option in argv:
                argv[argv.index(option) + 1] = "bogus"
            else:
                argv += [option, "bogus"]
            cases.setdefault(tuple(argv), (name, option))
    return {f"{name} {option}": (list(argv), option) for argv, (name, option) in cases.items()}


BOGUS = _bogus_cases()
#: Options for which "bogus" is a valid value (a new output path) or which, given "bogus", would
#: start a long computation or a server: left to their own tables.
BOGUS_VALID = {"--out", "--plot", "--plots", "--save-draws"}


@pytest.fixture(scope="module")
def release_files(tmp_path_factory):
    """One directory holding the files of the one-release base, for all the bogus cases (a
    ``tmp_path`` written per case was about a third of these tests' CPU)."""
    folder = tmp_path_factory.mktemp("bogus")
    (folder / "r3.csv").write_text("4,4,5")
    (folder / "k3.csv").write_text("3,4,5")
    return folder


@pytest.mark.parametrize("case", [c for c in BOGUS if BOGUS[c][1] not in BOGUS_VALID])
def test_every_option_given_a_bogus_value_is_named(case, capsys, release_files, monkeypatch):
    argv, option = BOGUS[case]
    monkeypatch.chdir(release_files)
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == "", (status, err)
    line = err.strip()
    assert "\n" not in line and "Traceback" not in err, err
    required = line.split(": error: ", 1)[-1]
    assert option in line.split("usage:")[0] or " is required" in required, line


def _posterior_command():
    from dprisk.cli.main import build_parser
    from dprisk.cli.parsers import subparser

    return subparser(build_parser(["posterior"]), "posterior")


@pytest.mark.parametrize(("words", "named"), [
    (["--tune", "9"], "--draws, --chains, --tune: work"),
    (["--tune=9", "--chains", "2"], "--draws, --chains, --tune: work"),
    (["--x1-star", "1"], "draws, chains, tune: work"),  # none of them given: the API's names
])
def test_several_parameters_are_named_by_their_options(words, named):
    from dprisk.cli.main import naming_given_option

    command = _posterior_command()
    assert naming_given_option("draws, chains, tune: work", command, words) == named
    # a list holding a name that is no option of the command stays as the API wrote it
    assert naming_given_option("draws, bogus: work", command, words) == "draws, bogus: work"
    # one name: replaced only when given, as before
    assert naming_given_option("tune must be >= 0", command, words).startswith(
        "--tune must" if "--tune" in " ".join(words) else "tune must")
