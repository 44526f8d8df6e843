"""``dprisk posterior`` with a sampler: every unknown diagnosed, verdict, --save-draws, --plots.

Small runs (2 chains x 300-600 draws) keep it fast. Output targets follow the writers' rules:
a refused target exits 2 with one stderr line naming the option, before sampling, and leaves
the directory as it was.
"""

import os

import pytest
import xarray as xr
from cli_helpers import assert_refused, check_contract, run_cli, run_json

TWO = ("--rho1", "0.1", "--rho2", "0.25", "--d", "3")
POST_2 = ("posterior", *TWO, "--x1-star", "1", "--x2-star", "2", "--y1-star", "1")
POST_H = ("posterior", "--rhos", "0.1,0.25,0.5", "--siblings", "3,2", "--stars", "1,2,4,1,2")
GIBBS = ("--method", "gibbs", "--draws", "600", "--chains", "2", "--seed", "3")
STATS = {"r_hat", "ess_bulk", "ess_tail", "mcse_mean"}
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("argv", "unknowns"), [
    ((*POST_2, *GIBBS), ["X1", "X2"]),
    ((*POST_2, "--method", "pymc", "--draws", "300", "--chains", "2", "--seed", "1"),
     ["X1", "X2"]),
    ((*POST_2, "--method", "pymc-gibbs", "--draws", "300", "--chains", "2", "--seed", "1"),
     ["X1", "X2"]),
    ((*POST_H, *GIBBS), ["X1", "X2", "X3"]),
], ids=["two-level gibbs", "two-level pymc", "two-level pymc-gibbs", "nested gibbs"])
def test_every_unknown_is_diagnosed_and_one_verdict_given(argv, unknowns, capsys):
    payload = run_json(argv, capsys)
    assert list(payload["diagnostics"]) == unknowns
    for row in payload["diagnostics"].values():
        assert set(row) == STATS
    assert set(payload["verdict"]) == {"converged", "reason"}
    assert isinstance(payload["verdict"]["converged"], bool) and payload["verdict"]["reason"]
    if "x2_posterior" in payload:  # the two-level keys are kept as they were
        assert {"mcse", "r_hat", "ess_bulk"} <= set(payload)
        assert payload["mcse"] == pytest.approx(payload["diagnostics"]["X1"]["mcse_mean"])


def test_readable_summary_has_the_table_and_the_verdict(capsys):
    status, out, err = run_cli([*POST_2, *GIBBS], capsys)
    assert status == 0, err
    assert "r_hat" in out and "ess_tail" in out and "mcse_mean" in out
    assert any(line.strip().startswith("X2 ") for line in out.splitlines())
    assert "verdict" in out and "converged" in out


def test_exact_answer_has_no_diagnostics(capsys):
    payload = run_json(POST_2, capsys)
    assert "diagnostics" not in payload and "verdict" not in payload


def test_save_draws_round_trip_and_plots(tmp_path, capsys):
    draws, plots = tmp_path / "sub" / "draws.nc", tmp_path / "plots"
    payload = run_json([*POST_2, *GIBBS, "--prior", "truncated:8", "--save-draws", str(draws),
                     "--plots", str(plots)], capsys)
    assert payload["saved_draws"] == str(draws)
    tree = xr.open_datatree(draws)
    try:
        assert {"posterior", "sample_stats", "observed_data", "constant_data", "prior",
                "prior_predictive", "posterior_predictive", "log_likelihood"} == set(tree.children)
        assert set(tree["posterior"].data_vars) == {"X1", "X2"}
        assert tree["posterior"].sizes == {"chain": 2, "draw": 600}
        assert tree["posterior"].attrs["random_seed"] == 3
        import arviz_stats

        summary = arviz_stats.summary(tree, var_names=["X2"], round_to="none")
        assert summary.loc["X2", "ess_bulk"] == pytest.approx(
            payload["diagnostics"]["X2"]["ess_bulk"], rel=1e-9)
    finally:
        tree.close()
    assert sorted(os.listdir(plots)) == ["rank.png", "trace.png"]
    assert payload["plots"] == [str(plots / "trace.png"), str(plots / "rank.png")]
    for name in ("rank.png", "trace.png"):
        assert (plots / name).read_bytes()[:8] == PNG
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plots", "sub"]  # no temporaries


def test_nested_save_draws(tmp_path, capsys):
    draws = tmp_path / "h.nc"
    run_json([*POST_H, *GIBBS, "--save-draws", str(draws)], capsys)
    with xr.open_datatree(draws) as tree:
        assert set(tree["posterior"].data_vars) == {"X1", "X2", "X3"}
        assert "prior" not in tree.children  # improper default prior: no prior draws
        # the run's seed, as the two-level form records it (before: none in the h-level file)
        assert tree["posterior"].attrs["random_seed"] == tree.attrs["random_seed"] == 3


@pytest.mark.parametrize(("make", "option", "words"), [
    (lambda d: (d / "old.nc").write_bytes(b"keep") and "old.nc", "--save-draws", "exists"),
    (lambda d: "draws.txt", "--save-draws", ".nc"),
    (lambda d: (d / "dir.nc").mkdir() or "dir.nc", "--save-draws", "exists"),
    (lambda d: (d / "full").mkdir() or ((d / "full" / "x").write_text("x") and "full"),
     "--plots", "non-empty"),
    (lambda d: (d / "file").write_text("x") and "file", "--plots", "not a directory"),
    (lambda d: (d / "f").write_text("x") and "f/plots", "--plots", "not a writable directory"),
    (lambda d: (d / "f").write_text("x") and "f/d.nc", "--save-draws", "not a writable"),
])
def test_refused_targets_exit_2_naming_the_option_and_touch_nothing(make, option, words,
                                                                    tmp_path, capsys):
    target = tmp_path / make(tmp_path)
    line = assert_refused([*POST_2, *GIBBS, option, str(target)], option, capsys,
                          root=tmp_path)  # nothing touched
    assert words in line, line


def test_unwritable_parent_is_refused(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        status, _, err = run_cli([*POST_2, *GIBBS, "--plots", str(locked / "p")], capsys)
        assert status == 2 and "--plots" in err and "writable" in err
    finally:
        locked.chmod(0o700)


def _cheap_plot(posterior, path, **kwargs):
    """Stands in for a plot writer of ``trace_rank_plots`` (drawing the two plots costs about
    1.5 s of CPU; what they draw is checked by test_save_draws_round_trip_and_plots)."""
    assert set(posterior) == {"X1", "X2"}
    path.write_bytes(PNG)


def test_empty_plots_directory_is_accepted(tmp_path, capsys, monkeypatch):
    from dprisk.validation.crosschecks import trace_rank_plots

    monkeypatch.setattr(trace_rank_plots, "save_trace_plot", _cheap_plot)
    monkeypatch.setattr(trace_rank_plots, "save_rank_plot", _cheap_plot)
    (tmp_path / "empty").mkdir()
    run_json([*POST_2, *GIBBS, "--plots", str(tmp_path / "empty")], capsys)
    assert sorted(os.listdir(tmp_path / "empty")) == ["rank.png", "trace.png"]


@pytest.mark.parametrize(("argv", "words"), [
    ((*POST_2, "--save-draws", "x.nc"), "--save-draws does not apply to --method exact"),
    ((*POST_2, "--plots", "p"), "--plots does not apply to --method exact"),
    (("posterior", "--rho1", "0.1", "--x1-star", "1", "--plots", "p"),
     "--plots does not apply to the single-level form"),
    ((*POST_H, "--method", "pymc-gibbs"), "pymc-gibbs belongs to the two-level form"),
])
def test_options_that_do_not_apply_are_refused(argv, words, capsys, tmp_path):
    status, out, err = run_cli(argv, capsys)
    assert status == 2, err
    check_contract(status, out, err)
    assert words in err, err


def test_a_failure_while_writing_leaves_nothing_half_written(tmp_path, capsys, monkeypatch):
    from dprisk.validation.crosschecks import trace_rank_plots

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(trace_rank_plots, "save_trace_plot", _cheap_plot)  # written, then
    monkeypatch.setattr(trace_rank_plots, "save_rank_plot", broken)
    status, out, err = run_cli([*POST_2, *GIBBS, "--save-draws", str(tmp_path / "d.nc"),
                                "--plots", str(tmp_path / "p")], capsys)
    assert status == 1 and out == "" and "disk full" in err
    assert list(tmp_path.iterdir()) == []  # no file, no directory, no temporaries


@pytest.mark.parametrize("argv", [
    (*POST_2, "--method", "gibbs", "--draws", "3", "--chains", "4", "--seed", "3"),
    (*POST_2, "--method", "gibbs", "--draws", "2", "--chains", "1", "--seed", "3"),
    (*POST_H, "--method", "gibbs", "--draws", "3", "--chains", "4", "--seed", "3"),
    (*POST_2, "--method", "pymc-gibbs", "--draws", "3", "--chains", "2", "--seed", "3"),
    (*POST_2, "--method", "pymc", "--draws", "3", "--chains", "2", "--seed", "3"),
], ids=["two-level gibbs 4x3", "two-level gibbs 1x2", "nested gibbs 4x3", "pymc-gibbs 2x3",
        "pymc 2x3"])
def test_too_few_draws_are_not_converged_and_undefined_numbers_are_null(argv, capsys):
    """Fewer than 4 draws a chain: ArviZ's statistics (MCSE too) are undefined; the unknowns
    that vary make the run "not converged" (not "constant"), every undefined number is null
    (strict JSON, checked by run_json)."""
    payload = run_json(argv, capsys)
    verdict = payload["verdict"]
    assert not verdict["converged"], verdict["reason"]
    assert "no unknown varies" not in verdict["reason"]
    if "x2_posterior" in payload and len(payload["x2_posterior"]) > 1:
        assert "X2 is constant" not in verdict["reason"]
        assert "R-hat of X2 is undefined" in verdict["reason"]
    for row in payload.get("level_posteriors", {}).values():
        assert row["mcse_mean"] is None or row["sd"] == 0


@pytest.mark.parametrize("seed", [2**64 - 1, 10**23])
def test_save_draws_of_a_seed_beyond_netcdf_integers(seed, tmp_path, capsys):
    """--seed takes any integer >= 0; netCDF attributes hold integers up to 2**64 - 1 only.

    ``--seed 10**23`` sampled, then failed writing the draws (exit 2, "illegal data type for
    attribute b'random_seed'"); such a seed is now recorded as its exact decimal digits, and
    a seed netCDF holds stays an integer.
    """
    draws = tmp_path / "big.nc"
    argv = [*POST_2, "--method", "gibbs", "--draws", "100", "--chains", "2", "--seed", str(seed)]
    payload = run_json([*argv, "--save-draws", str(draws)], capsys)
    assert payload["seed"] == seed
    with xr.open_datatree(draws) as tree:
        recorded = tree["posterior"].attrs["random_seed"]
    assert int(recorded) == seed and isinstance(recorded, str) == (seed >= 2**64)
