import arviz_base
import numpy as np
import pytest
import xarray as xr

from dprisk.validation.crosschecks.diagnostics import ESS_MIN, RHAT_MAX, convergence_report


def _tree(x1, x2):
    return arviz_base.from_dict({"posterior": {"X1": x1, "X2": x2}})


def test_iid_chains_converge_and_mcse_matches_iid_formula(rng, tmp_path):
    x1 = rng.binomial(1, 0.3, size=(4, 2000)) + 2  # known m = 2, target X1 = 3
    x2 = rng.poisson(4, size=(4, 2000)) + x1
    # no out_dir: the plots' names and sizes are checked in the plots test below (two plots of
    # 8,000 draws each, 1.2 s of CPU, not drawn twice)
    report = convergence_report(_tree(x1, x2), known=2)
    assert report.converged, report.reasons
    assert report.posterior == pytest.approx(float((x1 == 3).mean()), abs=1e-15)
    # iid draws: MCSE ≈ sd / sqrt(n); ESS estimates wobble by ~10% at n = 8000.
    iid_mcse = float((x1 == 3).std()) / np.sqrt(x1.size)
    assert report.posterior_mcse == pytest.approx(iid_mcse, rel=0.15)
    assert float(report.table["r_hat"].max()) < RHAT_MAX
    assert float(report.table["ess_bulk"].min()) >= ESS_MIN
    assert report.figures == {} and "converged" in report.summary()


def test_stuck_chain_is_flagged_with_reasons(rng):
    x1 = rng.binomial(1, 0.5, size=(4, 1000))
    x2 = rng.poisson(3, size=(4, 1000)) + x1
    x2[0] += 6  # one chain stuck elsewhere
    report = convergence_report(_tree(x1, x2))
    assert not report.converged
    assert any("R-hat of X2" in reason for reason in report.reasons)


def test_constant_indicator_is_not_a_failure(rng):
    x1 = np.zeros((4, 1000), dtype=int)  # X1 = m on every draw
    x2 = rng.poisson(3, size=(4, 1000))
    report = convergence_report(_tree(x1, x2))
    assert report.converged
    assert report.posterior == 0.0 and report.posterior_mcse == 0.0
    assert any("constant" in reason for reason in report.reasons)


@pytest.mark.parametrize("draws", [1, 3])
def test_constant_over_too_few_draws_is_not_converged(draws):
    """One draw is always constant: below MIN_DRAWS = 4 draws per chain constancy cannot
    tell a point mass from a stuck chain. Before, 2 chains x 1 draw gave "converged"."""
    x1 = np.zeros((2, draws), dtype=int)  # a Dataset: from_dict warns at chains > draws
    posterior = xr.Dataset({"X1": (("chain", "draw"), x1), "X2": (("chain", "draw"), x1 + 5)})
    report = convergence_report(posterior, known=0)
    assert not report.converged, report.reasons
    assert report.reasons[0].startswith(f"target is constant over only {draws} draw")
    assert "run at least 4 draws per chain" in report.reasons[0]


def test_bad_inputs():
    with pytest.raises(TypeError, match="idata"):
        convergence_report(np.zeros((4, 10)))
    one_chain = xr.Dataset({"X1": (("chain", "draw"), np.zeros((1, 10))),
                            "X2": (("chain", "draw"), np.zeros((1, 10)))})
    with pytest.raises(ValueError, match="2 chains"):
        convergence_report(one_chain)
    with pytest.raises(ValueError, match="X2"):
        convergence_report(xr.Dataset({"X1": (("chain", "draw"), np.zeros((2, 10)))}))


def test_known_is_read_from_the_recorded_scenario():
    from dprisk.inference.two_level.exact import exact_posterior
    from dprisk.inference.two_level.sampling import chain_diagnostics, sample_posterior

    params = {"rho1": 0.0992, "rho2": 0.2465, "d": 27, "p": 0.5, "known": 5}
    tree = sample_posterior(7, 6, 0, **params, method="gibbs", draws=4000, chains=4,
                            random_seed=3)
    assert tree["posterior"].attrs["known"] == 5
    report = convergence_report(tree)  # known not passed again
    assert report.scenario["known"] == 5 and report.table.attrs["known"] == 5
    direct = chain_diagnostics(tree["posterior"]["X1"].values, known=5)
    assert report.posterior == direct["mean"] and report.posterior_mcse == direct["mcse"]
    assert report.posterior_mcse > 0
    exact = float(exact_posterior(7, 6, 0, **params).prob_x1)
    assert abs(report.posterior - exact) < 4 * report.posterior_mcse
    assert convergence_report(tree, known=5).posterior == report.posterior


def test_h_level_sampling_results_are_reported():
    from dprisk.inference.nested import posterior as ml

    h3 = {"rhos": [0.3, 0.2, 0.1], "siblings": [5, 3], "p": 0.4, "known": 1}
    samples = ml.gibbs_sample([1, 4, 9], [3, 5], **h3, draws=4000, chains=4, random_seed=2)
    report = convergence_report(ml.to_datatree(samples))  # known = 1 from the attributes
    assert list(report.table["variable"].values) == ["target", "X2", "X3"]
    exact = ml.exact_posterior([1, 4, 9], [3, 5], **h3)
    assert abs(report.posterior - exact.prob_x1) < 4 * report.posterior_mcse
    x3 = report.table.sel(variable="X3")
    assert abs(float(x3["mean"]) - float(exact.level_mean(3))) < 4 * float(x3["mcse_mean"])
    assert report.converged, report.reasons


def test_plots_never_write_through_a_link_and_a_file_out_dir_is_refused(rng, tmp_path,
                                                                         monkeypatch):
    """``out_dir/trace.png`` a symbolic link to the user's file: savefig followed it and
    overwrote that file. A file as ``out_dir`` raised FileExistsError, not a refusal naming
    it; a failed plot left half a PNG in place of the earlier one."""
    from dprisk.validation.crosschecks import trace_rank_plots

    x1 = rng.binomial(1, 0.3, size=(2, 300))
    tree = _tree(x1, rng.poisson(4, size=(2, 300)) + x1)
    mine = tmp_path / "mine.txt"
    mine.write_bytes(b"the user's file")
    (tmp_path / "run_trace.png").symlink_to(mine.name)
    report = convergence_report(tree, out_dir=tmp_path, prefix="run_")
    assert mine.read_bytes() == b"the user's file"
    assert not report.figures["trace"].is_symlink()
    assert report.figures["trace"].read_bytes()[:4] == b"\x89PNG"
    for kind in ("trace", "rank"):  # named with the prefix, whole plots
        path = report.figures[kind]
        assert path.name == f"run_{kind}.png" and path.stat().st_size > 5000
    with pytest.raises(ValueError, match=r"^out_dir .* is not a directory"):
        convergence_report(tree, out_dir=mine)
    earlier = report.figures["rank"].read_bytes()

    def failing(posterior, path, **options):
        path.write_bytes(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    def written(posterior, path, **options):  # the trace drawn above, not again (0.6 s)
        path.write_bytes(b"\x89PNG whole")

    monkeypatch.setattr(trace_rank_plots, "save_trace_plot", written)
    monkeypatch.setattr(trace_rank_plots, "save_rank_plot", failing)
    with pytest.raises(OSError):
        convergence_report(tree, out_dir=tmp_path, prefix="run_")
    assert report.figures["rank"].read_bytes() == earlier
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt", "run_rank.png",
                                                          "run_trace.png"]


def test_known_that_contradicts_the_draws_is_refused(rng):
    """A ``known`` the draws of X1 rule out raises, naming known, instead of P = 0 "converged".

    Before the fix: draws with X1 in {5, 6} and ``known=0`` gave posterior 0.0, MCSE 0.0 and a
    converged verdict (the indicator 1[X1 = 1] is constant).
    """
    x1 = rng.binomial(1, 0.5, size=(4, 500)) + 5
    x2 = rng.poisson(3, size=(4, 500)) + x1
    tree = _tree(x1, x2)
    tree["posterior"].attrs["known"] = 5
    assert convergence_report(tree).posterior == pytest.approx(float((x1 == 6).mean()), abs=0)
    with pytest.raises(ValueError, match=r"known = 0 does not match the draws: X1 takes the "
                                         r"value 5, outside .* recorded known = 5"):
        convergence_report(tree, known=0)
    with pytest.raises(ValueError, match="known = 6 does not match"):
        convergence_report(tree, known=6)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"rhat_max": float("nan")}, ValueError, r"rhat_max must be a finite number > 1 .*got nan"),
    ({"rhat_max": 1.0}, ValueError, r"allowed range: 1 < rhat_max < inf"),
    ({"rhat_max": -1}, ValueError, "rhat_max"),
    ({"rhat_max": float("inf")}, ValueError, "rhat_max"),
    ({"rhat_max": "1.01"}, TypeError, "rhat_max must be a number"),
    ({"rhat_max": True}, TypeError, "rhat_max must be a number"),
    ({"ess_min": float("nan")}, ValueError, r"ess_min must be a finite number > 0"),
    ({"ess_min": -5}, ValueError, r"allowed range: 0 < ess_min < inf"),
    ({"ess_min": None}, TypeError, "ess_min must be a number"),
])
def test_verdict_thresholds_out_of_range_are_refused(rng, kwargs, error, message):
    """Before the fix NaN thresholds gave "R-hat 1.0007 >= nan" (not converged), ess_min = -5
    a converged verdict, and "1.01" a TypeError from a comparison deep inside."""
    x1 = rng.binomial(1, 0.3, size=(4, 500))
    x2 = rng.poisson(4, size=(4, 500)) + x1
    with pytest.raises(error, match=message):
        convergence_report(_tree(x1, x2), **kwargs)
    assert convergence_report(_tree(x1, x2), rhat_max=1.05, ess_min=100).converged
