"""Command-line help that helps: suggestions for mistyped options and commands, ``dprisk help``.

Every error stays one stderr line with exit status 2; help exits 0 on stdout.
"""

import pytest
from cli_helpers import check_contract, run_cli

POST_2 = ("posterior", "--rho1", "0.1", "--rho2", "0.25", "--d", "3", "--x1-star", "1",
          "--x2-star", "2", "--y1-star", "1")


def _one_error_line(status, out, err):
    assert status == 2
    check_contract(status, out, err)
    return err.strip()


def test_mistyped_option_shows_the_subcommand_usage_and_the_nearest_option(capsys):
    line = _one_error_line(*run_cli(["posterior", "--rho1", "0.1", "--x1-str", "3"], capsys))
    assert line.startswith("dprisk posterior: error: unrecognized arguments: --x1-str;")
    assert "did you mean --x1-star?" in line
    assert "usage: dprisk posterior" in line
    assert "{census," not in line  # not the top-level usage listing the commands


@pytest.mark.parametrize(("argv", "guess"), [
    (["marginal", "--rho1", "0.1", "--datsets", "5"], "--datasets"),
    (["sweep", "--rho1", "0.1", "--out", "x.nc", "--rho-2", "1"], "--rho2"),
    ([*POST_2, "--save-drows=x.nc"], "--save-draws"),
    (["census", "--jsn"], "--json"),
])
def test_nearest_option_of_each_subcommand(argv, guess, capsys):
    line = _one_error_line(*run_cli(argv, capsys))
    assert f"did you mean {guess}?" in line and f"usage: dprisk {argv[0]}" in line


def test_top_level_options_before_the_command_still_work(capsys):
    status, out, _ = run_cli(["--version", "posterior"], capsys)
    assert status == 0 and out.startswith("dprisk ")


def test_far_off_option_gets_no_guess(capsys):
    line = _one_error_line(*run_cli(["census", "--zzzzzzzz"], capsys))
    assert "unrecognized arguments: --zzzzzzzz" in line and "did you mean" not in line


def test_mistyped_subcommand_suggests_the_nearest(capsys):
    line = _one_error_line(*run_cli(["postrior", "--rho1", "0.1"], capsys))
    assert "invalid choice: 'postrior'" in line and "did you mean posterior?" in line
    assert "usage: dprisk" in line


@pytest.mark.parametrize("command", ["posterior", "sweep", "census", "help"])
def test_help_command_prints_the_subcommand_help(command, capsys):
    status, out, err = run_cli(["help", command], capsys)
    assert status == 0 and err == ""
    expected = run_cli([command, "--help"], capsys)[1]
    assert out == expected and out.startswith(f"usage: dprisk {command}")


def test_help_alone_prints_the_top_level_help(capsys):
    status, out, _ = run_cli(["help"], capsys)
    assert status == 0
    assert out == run_cli(["--help"], capsys)[1]
    assert "help" in out and "posterior" in out


def test_help_of_an_unknown_command_is_refused_with_a_suggestion(capsys):
    line = _one_error_line(*run_cli(["help", "posterir"], capsys))
    assert line.startswith("dprisk help: error: COMMAND must be one of")
    assert "did you mean posterior?" in line
    line = _one_error_line(*run_cli(["help", "foo"], capsys))
    assert "'foo'" in line and "did you mean" not in line


def test_every_rho_option_states_its_convention(capsys):
    """Every ``--rho...`` option of every subcommand says which rho it is (issue 34), once."""
    import re

    from dprisk.cli.common import SUBCOMMAND_HELP
    from dprisk.cli.conventions import RHO_CONVENTION
    from dprisk.cli.main import build_parser

    subs = next(a for a in build_parser()._actions if isinstance(getattr(a, "choices", None),
                                                                  dict))
    found = []
    for name in SUBCOMMAND_HELP:
        for action in subs.choices[name]._actions:
            if any(option.startswith("--rho") for option in action.option_strings):
                found.append((name, action.option_strings[0]))
                assert action.help.count(RHO_CONVENTION) == 1, (name, action.option_strings)
    assert ("epsilon", "--rho") in found and ("summary", "--rho1") in found
    assert len(found) >= 15
    # and the printed help shows it (argparse wraps lines: compare without whitespace)
    out = run_cli(["marginal", "--help"], capsys)[1]
    squeeze = re.compile(r"\s+")
    assert squeeze.sub("", RHO_CONVENTION) in squeeze.sub("", out)
    assert "add/remove-one" in RHO_CONVENTION and "DG(0, 1/(2 rho))" in RHO_CONVENTION


def test_rho1_help_states_the_smallest_rho_the_marginal_sums_take(capsys):
    """``marginal --rho1``'s help names the bound its sizing refuses below (1.42e-11, not the
    1e-14 it once said, nor 1.4e-11, rounded below the bound and refused); ``posterior``,
    which sums over no releases, names none."""
    from dprisk.cli.common import RHO1_SUMS_MIN
    from dprisk.inference.nested.unique_levels_kernels import MAX_ATOMS
    from dprisk.inference.privacy.decision_sizing import rounded_up, smallest_rho
    from dprisk.inference.privacy.worst_case import EXACT_TAIL

    assert RHO1_SUMS_MIN == rounded_up(smallest_rho((MAX_ATOMS - 1) // 2, EXACT_TAIL))
    status, out, _ = run_cli(["marginal", "--help"], capsys)
    assert status == 0
    assert f"need rho >= {RHO1_SUMS_MIN}" in " ".join(out.split())
    status, out, _ = run_cli(["posterior", "--help"], capsys)
    assert status == 0 and "need rho >=" not in " ".join(out.split())
    # just below the bound, marginal refuses with the same number; at the bound, it answers
    below = float(RHO1_SUMS_MIN) * 0.99
    status, _, err = run_cli(["marginal", "--rho1", repr(below)], capsys)
    assert status == 2 and f">= {RHO1_SUMS_MIN})" in err
    status, _, err = run_cli(["marginal", "--rho1", RHO1_SUMS_MIN], capsys)
    assert status == 0, err


@pytest.mark.parametrize(("value", "shown"), [
    (1.4157969635403998e-11, "1.42e-11"), (1.42e-11, "1.42e-11"), (0.12345, "0.124"),
    (9.9951e5, "1e+06"), (2.0, "2"),
])
def test_rounded_up_never_states_a_bound_below_the_value(value, shown):
    from dprisk.inference.privacy.decision_sizing import rounded_up

    assert rounded_up(value) == shown and float(shown) >= value


@pytest.mark.parametrize("sub", ["synth", "measure", "risk"])
def test_help_of_a_subcommand_of_a_command(sub, capsys):
    """``dprisk help population risk`` was refused (exit 2, "unrecognized arguments")."""
    status, out, err = run_cli(["help", "population", sub], capsys)
    assert status == 0 and err == ""
    assert out == run_cli(["population", sub, "--help"], capsys)[1]


@pytest.mark.parametrize(("argv", "words"), [
    (["help", "population", "rsik"], ("SUBCOMMAND of population", "did you mean risk?")),
    (["help", "posterior", "x"], ("SUBCOMMAND", "posterior has no subcommands")),
])
def test_help_of_an_unknown_subcommand_is_refused(argv, words, capsys):
    line = _one_error_line(*run_cli(argv, capsys))
    assert all(word in line for word in words)
