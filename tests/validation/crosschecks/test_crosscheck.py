"""Tests of the cross-check of exact vs standalone Gibbs vs PyMC (Gibbs step, default steps).

The small battery (2 releases x 5 priors x 3 methods, 60 comparisons) must pass: each
estimate within N_MCSE = 4 MCSE of exact enumeration (for a correct sampler |z| > 4 has
probability ~6e-5 per comparison, ~0.4% for the battery; every run is seeded, so the
outcome is deterministic) and every defined R-hat < 1.01. The table's exact column is
checked against ``exact_posterior`` directly and its z against the formula.

The battery runs one method at a time (the small battery's budgets and seeds unchanged), and
the table's layout, the point-mass cells and the failure detection are checked on the three
methods' tables joined. The ``pymc`` method (PyMC's own steps) costs about 14 s of CPU on the
whole small battery: about half compiling its five models' steps, a quarter sampling each
release. The default run checks it on the battery's first release, the Table 6 release
(2, 1, -1), with the battery's budgets and seeds (the seeds are drawn in the same order, so
these runs are the first-release runs of the whole battery, cell for cell); the whole battery
runs in ``make bench`` for every method (``SLOW_CASES`` in ``tests/conftest.py``: the second
release's runs, about 1.2 s of CPU for ``gibbs``, 2.5 s for ``pymc-gibbs``, 4 s for ``pymc``),
where it also checks that the first release's runs are the whole battery's. The joined table
is the three methods' on that release.
"""

import numpy as np
import pytest
import xarray as xr
from study_checks import numbers_without_units_in_results

from dprisk.inference.two_level.exact import exact_posterior
from dprisk.inference.two_level.sampling import SAMPLING_METHODS
from dprisk.validation.crosschecks.crosscheck import (
    BATTERIES,
    N_MCSE,
    PRIORS,
    RHAT_MAX,
    Battery,
    CrosscheckResult,
    crosscheck,
    crosscheck_cells,
    crosscheck_table,
    table_failures,
)

SEED = 20260401
#: The first release of the small battery (its budgets), as a battery of its own.
FIRST_RELEASE = Battery(releases=BATTERIES["small"].releases[:1],
                        budgets=BATTERIES["small"].budgets)


@pytest.fixture(scope="module")
def one_method():
    """Lazily, the small battery of one method (budgets as in BATTERIES["small"]); with
    ``first=True``, its first release only."""
    done = {}

    def run(method, first=False):
        if (method, first) not in done:
            with pytest.MonkeyPatch.context() as patch:
                if first:
                    patch.setitem(BATTERIES, "small", FIRST_RELEASE)
                done[method, first] = crosscheck("small", methods=(method,), random_seed=SEED)
        return done[method, first]
    return run


@pytest.fixture(scope="module")
def small(one_method):
    """The three methods' runs on the battery's first release as one table (joined along
    ``method``)."""
    table = xr.concat([one_method(m, first=True).table for m in SAMPLING_METHODS],
                      dim="method", combine_attrs="drop_conflicts")
    failures = table_failures(table)
    return CrosscheckResult(table=table, passed=not failures, failures=failures)


def _assert_passes(result):
    assert result.passed, result.summary()
    assert result.failures == []
    table = result.table
    assert np.all(np.abs(table["z"]) < N_MCSE)
    rhat = table["r_hat"].values
    assert np.all(rhat[np.isfinite(rhat)] < RHAT_MAX)


@pytest.mark.parametrize("method", SAMPLING_METHODS)
def test_small_battery_passes(one_method, method):
    # every case in make bench (SLOW_CASES): the default run checks each method on the first
    # release (test_small_battery_passes_on_its_first_release), the same runs cell for cell
    result = one_method(method)
    _assert_passes(result)
    assert result.table.sizes["release"] == len(BATTERIES["small"].releases) == 2
    first = one_method(method, first=True).table  # the same runs as the whole battery's
    xr.testing.assert_identical(first.drop_vars("seconds"),
                                result.table.isel(release=[0]).drop_vars("seconds"))


@pytest.mark.parametrize("method", SAMPLING_METHODS)
def test_small_battery_passes_on_its_first_release(one_method, method):
    result = one_method(method, first=True)
    _assert_passes(result)
    assert result.table.sizes["release"] == 1


def test_table_layout(small):
    table = small.table
    assert table["estimate"].dims == ("release", "prior", "method", "quantity")
    assert list(table["prior"].values) == list(PRIORS)
    assert list(table["method"].values) == ["gibbs", "pymc-gibbs", "pymc"]
    assert list(table["quantity"].values) == ["prob_x1", "x2_mean"]
    assert table.sizes["release"] == 1  # the first release (module docstring)
    for name in ("estimate", "mcse", "exact", "z", "r_hat", "ess_bulk", "seconds", "seed"):
        assert name in table


def test_every_number_of_the_table_has_units(one_method, tmp_path):
    # results.nc's two-level crosscheck group had units on seconds alone: 11 of its 12
    # numeric variables and coordinates had none (estimate, mcse, exact, z, r_hat, ess_bulk,
    # seed, the release index and its x1*, x2*, y1*)
    table = one_method("gibbs", first=True).table
    assert not numbers_without_units_in_results("hierarchical", {"crosscheck": table},
                                                tmp_path / "results.nc")
    # one variable holds a probability (prob_x1) and a count (x2_mean): its units say which
    for name in ("estimate", "mcse", "exact"):
        assert table[name].attrs["units"] == "probability (prob_x1), persons (x2_mean)"
    assert table["z"].attrs["units"] == table["r_hat"].attrs["units"] == "1"


def test_exact_column_and_z(small):
    table = small.table
    for i in range(table.sizes["release"]):
        cell = table.isel(release=i)
        release = tuple(int(cell[c]) for c in ("x1_star", "x2_star", "y1_star"))
        for prior in table["prior"].values:
            exact = exact_posterior(*release, rho1=table.attrs["rho1"], rho2=table.attrs["rho2"],
                                    d=int(table.attrs["d"]), prior=str(prior))
            values = cell.sel(prior=prior)["exact"]
            np.testing.assert_allclose(values.sel(quantity="prob_x1"), float(exact.prob_x1),
                                       rtol=0, atol=1e-14)
            np.testing.assert_allclose(values.sel(quantity="x2_mean"), float(exact.x2_mean()),
                                       rtol=0, atol=1e-12)
    spread = table["mcse"] > 0
    z = (table["estimate"] - table["exact"]) / table["mcse"]
    np.testing.assert_allclose(table["z"].where(spread), z.where(spread), rtol=1e-12)
    # Constant draws (point priors' X2) have no spread: z is 0 exactly when they equal exact.
    assert np.all(table["z"].where(~spread).fillna(0) == 0)


def test_point_mass_x2_is_constant(small):
    cell = small.table.sel(prior="point:25", quantity="x2_mean")
    assert np.all(cell["estimate"] == 25) and np.all(cell["mcse"] == 0)


def test_failures_are_detected(small):
    table = small.table.copy(deep=True)
    table["z"][:] = 0.0  # a passing table, then two failures
    table["r_hat"][:] = 1.0
    table["z"][0, 0, 0, 0] = 4.5
    table["r_hat"][0, 2, 2, 1] = 1.02
    failures = table_failures(table)
    assert len(failures) == 2
    assert "z = 4.50" in failures[0] and "R-hat = 1.0200" in failures[1]


def test_summary_names_every_prior(small):
    summary = small.summary()
    assert "PASSED" in summary
    assert all(prior in summary for prior in PRIORS)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"battery": "huge"}, "battery must be one of"),
    ({"methods": ("nuts",)}, "methods must be among"),
    # before: an empty list checked nothing and the result said PASSED; a bare string was
    # read letter by letter ("prior 'i': unrecognised"); -1 gave numpy's "expected
    # non-negative integer" and True ran as the seed 1
    ({"methods": ()}, r"^methods must be a non-empty sequence of names"),
    ({"priors": []}, r"^priors must be a non-empty sequence of names"),
    ({"methods": "gibbs"}, r"^methods must be a non-empty sequence .* \('gibbs',\) for one"),
    ({"priors": "improper"}, r"^priors must be a non-empty sequence"),
    ({"random_seed": -1}, r"^random_seed must be an integer >= 0, got -1"),
    ({"random_seed": True}, r"^random_seed must be an integer >= 0, got True"),
    # before: both ran, labelled 'improper' twice (each summary row the worse of the two)
    ({"priors": ("improper", "improper")}, r"^priors must have distinct labels .*'improper' 2"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        crosscheck(**kwargs)


def test_prior_objects_are_labelled_by_their_spec_and_must_differ():
    """Two UserPriors of functions named logp (geometric q = 0.2 and 0.5: exact P[X1 = 1 | D]
    0.5296 and 0.5176 at the first release) were both labelled "UserPrior(spec='user:logp')",
    and the summary printed the same row twice (the worse of the two). Now refused; with
    their own spec they are labelled by it."""
    import pytensor.tensor as pt

    from dprisk.models.priors.library import UserPrior

    def geometric(q, **kwargs):
        def logp(k2, k1):
            return np.log(q) + pt.cast(k2 - k1, "float64") * np.log1p(-q)
        return UserPrior(logp, **kwargs)

    with pytest.raises(ValueError, match=r"^priors must have distinct labels .*'user:logp'"):
        crosscheck(methods=("gibbs",), priors=(geometric(0.2), geometric(0.5)))
    result = crosscheck(methods=("gibbs",), priors=(geometric(0.2, spec="q=0.2"),
                                                    geometric(0.5, spec="q=0.5")))
    assert list(result.table["prior"].values) == ["q=0.2", "q=0.5"]
    rows = result.summary().splitlines()[2:]
    assert rows[0].startswith("q=0.2") and rows[1].startswith("q=0.5")


def test_cells_the_caller_sampled_are_compared_from_its_draws_not_run_again():
    # a cell given in ``sampled`` (the Tables 7-8 runs of the Table 6 release, in the report)
    # is compared from those draws, with their seed and no time of its own; the others run
    rng = np.random.default_rng(5)
    x1 = rng.integers(0, 2, size=(2, 400))
    draws = {"X1": x1, "X2": x1 + rng.integers(0, 3, size=(2, 400))}
    result = crosscheck("small", methods=("gibbs",), priors=("truncated:10",), random_seed=3,
                        sampled={((2, 1, -1), "truncated:10", "gibbs"): (draws, 77)})
    # sel with a dict: ``method=`` is a keyword of sel
    given = result.table.sel({"release": 0, "prior": "truncated:10", "method": "gibbs"})
    assert int(given["seed"]) == 77 and float(given["seconds"]) == 0.0
    np.testing.assert_allclose(given["estimate"].values, [x1.mean(), draws["X2"].mean()],
                               rtol=1e-14)
    sampled_here = result.table.sel({"release": 1, "prior": "truncated:10", "method": "gibbs"})
    assert float(sampled_here["seconds"]) > 0.0
    # the made-up draws are not of the posterior: their cell fails, the sampled one passes
    assert result.failures and all("release (2, 1, -1)" in line for line in result.failures)


def test_statistics_given_with_the_callers_draws_are_used_as_given():
    # ``sampled`` values (draws, seed, estimates): the cell's statistics as the caller
    # computed them (the Tables 7-8 study: from the runs' convergence reports), not again
    x1 = np.array([[0, 1, 1, 0], [1, 1, 0, 0]])
    draws = {"X1": x1, "X2": x1 + 2}
    stats = {"mean": 0.25, "mcse": 0.5, "r_hat": 1.5, "ess_bulk": 7.0}
    given = {"prob_x1": stats, "x2_mean": {**stats, "mean": 0.75}}
    cells = crosscheck_cells("small", methods=("gibbs",), priors=("truncated:10",),
                             random_seed=3,
                             sampled={((2, 1, -1), "truncated:10", "gibbs"): (draws, 77, given)})
    cell = (0, 0, 0)
    assert cells["estimate"][cell].tolist() == [0.25, 0.75]
    assert cells["mcse"][cell].tolist() == [0.5, 0.5]
    assert cells["r_hat"][cell].tolist() == [1.5, 1.5]
    assert cells["ess_bulk"][cell].tolist() == [7.0, 7.0]
    assert cells["seed"][cell] == 77 and cells["seconds"][cell] == 0.0


def test_a_given_pymc_model_is_used_for_its_prior():
    from dprisk.inference.mcmc.compiled_chain import CompiledChain
    from dprisk.inference.two_level.sampling import pymc_steps
    from dprisk.models.builders.two_level import build_two_level_model
    from dprisk.models.census.allocation import census_level

    model = build_two_level_model(2, 1, -1, rho1=census_level("block").rho,
                                  rho2=census_level("block-group").rho, d=27, prior="point:1")
    chain = CompiledChain(model, pymc_steps(model, "pymc-gibbs"))
    runs = []
    original = chain.run
    chain.run = lambda **kwargs: runs.append(kwargs) or original(**kwargs)
    result = crosscheck("small", methods=("pymc-gibbs",), priors=("point:1",), random_seed=3,
                        pymc_models={"point:1": (model, {"pymc-gibbs": chain})})
    assert len(runs) == 2 and result.passed, result.summary()
    assert [r["random_seed"] for r in runs] == list(result.table["seed"].values.ravel())


def test_cells_of_each_prior_run_apart_and_joined_are_the_table_of_one_call(monkeypatch):
    """The report runs the cross-check's priors in separate workers (crosscheck_cells) and
    joins them (crosscheck_table): each run's seed is drawn for the whole table, so the
    joined table is that of one call, bit for bit (the wall-clock ``seconds`` aside).
    Small budgets: the check is of the bookkeeping, not of the estimates."""
    monkeypatch.setitem(BATTERIES, "small", Battery(
        releases=BATTERIES["small"].releases,
        budgets={"gibbs": {"draws": 300, "chains": 2, "tune": 20}}))
    priors, kwargs = ("point:1", "truncated:10"), {"methods": ("gibbs",), "random_seed": 3}
    whole = crosscheck("small", priors=priors, **kwargs).table
    cells = [crosscheck_cells("small", priors=priors, run_priors=(prior,), **kwargs)
             for prior in reversed(priors)]
    assert [c["done"][:, j].all() and not c["done"][:, 1 - j].any()
            for c, j in zip(cells, (1, 0), strict=True)] == [True, True]
    joined = crosscheck_table("small", cells, priors=priors, **kwargs).table
    assert joined.drop_vars("seconds").identical(whole.drop_vars("seconds"))
    with pytest.raises(ValueError, match="computed by no part"):
        crosscheck_table("small", cells[:1], priors=priors, **kwargs)
