"""Per-unknown diagnostics and the verdict (``inference.mcmc.convergence``).

References: ``chain_stats.chain_diagnostics`` (the one ArviZ routine) for the numbers; the
verdict's thresholds RHAT_MAX = 1.01 and ESS_MIN = 400 (Vehtari et al. 2021) on hand-made
tables. Draws from the exact Gibbs sampler (small: 2 chains x 1500 draws).
"""

import numpy as np
import pytest

from dprisk.inference.mcmc.chain_stats import chain_diagnostics
from dprisk.inference.mcmc.convergence import (
    ESS_MIN,
    MIN_DRAWS,
    RHAT_MAX,
    constant_unknowns,
    draws_verdict,
    unknown_diagnostics,
    unknown_names,
    verdict,
)
from dprisk.inference.two_level.sampling import sample_posterior

H = {"rho1": 0.1, "rho2": 0.25, "d": 3}
GOOD = {"r_hat": 1.001, "ess_bulk": 2000.0, "ess_tail": 1500.0, "mcse_mean": 0.01}


@pytest.fixture(scope="module")
def tree():
    return sample_posterior(1, 2, 1, **H, method="gibbs", draws=1500, chains=2,
                            random_seed=3)


def test_every_unknown_gets_the_four_statistics_of_chain_diagnostics(tree):
    posterior = tree["posterior"]
    table = unknown_diagnostics(posterior)
    assert list(table) == unknown_names(posterior) == ["X1", "X2"]
    for name, row in table.items():
        reference = chain_diagnostics(posterior[name].values)
        assert row == pytest.approx({"r_hat": reference["r_hat"],
                                     "ess_bulk": reference["ess_bulk"],
                                     "ess_tail": reference["ess_tail"],
                                     "mcse_mean": reference["mcse"]}, rel=1e-12)
    # X1 = m + indicator: the same R-hat and MCSE as the indicator (an affine function)
    indicator = chain_diagnostics(posterior["X1"].values, known=0)
    assert table["X1"]["r_hat"] == pytest.approx(indicator["r_hat"], rel=1e-12)
    assert table["X1"]["mcse_mean"] == pytest.approx(indicator["mcse"], rel=1e-12)


def test_converged_run_passes_with_its_reason(tree):
    result = verdict(unknown_diagnostics(tree["posterior"]))
    assert result.converged
    assert f"R-hat < {RHAT_MAX}" in result.reason and "X1, X2" in result.reason
    assert result.as_json() == {"converged": True, "reason": result.reason}


def test_each_failing_statistic_is_named():
    bad = {"X1": GOOD, "X2": {**GOOD, "r_hat": 1.05, "ess_tail": 120.0}}
    result = verdict(bad)
    assert not result.converged
    assert "R-hat of X2 is 1.0500 >= 1.01" in result.reason
    assert f"tail ESS of X2 is 120 < {ESS_MIN}" in result.reason
    assert "X1" not in result.reason


def test_constant_unknown_is_named_and_is_not_a_failure():
    constant = {"r_hat": None, "ess_bulk": None, "ess_tail": None, "mcse_mean": 0.0}
    result = verdict({"X1": constant, "X2": GOOD})
    assert result.converged and "X1 is constant" in result.reason


def test_constant_draws_give_undefined_statistics():
    posterior = {"X1": np.zeros((2, 50), dtype=np.int64),
                 "X2": np.arange(100).reshape(2, 50) % 7}
    table = unknown_diagnostics(posterior)
    assert table["X1"] == {"r_hat": None, "ess_bulk": None, "ess_tail": None,
                           "mcse_mean": 0.0}


def test_one_chain_of_varying_draws_is_not_called_constant():
    """One chain: R-hat (which compares chains) is undefined, but X1 varies: not converged."""
    rng = np.random.default_rng(5)
    posterior = {"X1": rng.integers(0, 2, size=(1, 2000)), "X2": rng.integers(3, 9, (1, 2000))}
    table = unknown_diagnostics(posterior)
    assert table["X1"]["r_hat"] is None and table["X1"]["mcse_mean"] > 0
    result = verdict(table)
    assert not result.converged
    assert "constant" not in result.reason and "no unknown varies" not in result.reason
    assert "R-hat of X1 is undefined with one chain" in result.reason
    assert "R-hat of X2 is undefined with one chain" in result.reason


@pytest.mark.parametrize(("chains", "draws"), [(4, 3), (1, 2), (2, 3), (3, 1)])
def test_too_few_draws_of_varying_unknowns_are_not_converged(chains, draws):
    """Fewer than MIN_DRAWS draws a chain: every statistic is undefined (None, MCSE too), yet
    X1 and X2 vary: the verdict reads that from the draws and is "not converged"."""
    assert draws < MIN_DRAWS
    x1 = (np.arange(chains * draws).reshape(chains, draws) + 1) % 2  # both 0 and 1 appear
    x1.flat[0], x1.flat[-1] = 0, 1
    posterior = {"X1": x1, "X2": x1 * 3 + 7}
    table = unknown_diagnostics(posterior)
    assert table["X1"] == {"r_hat": None, "ess_bulk": None, "ess_tail": None,
                           "mcse_mean": None}
    assert constant_unknowns(posterior) == []
    for result in (draws_verdict(posterior), verdict(table)):
        assert not result.converged, result.reason
        assert "constant" not in result.reason and "no unknown varies" not in result.reason
        assert "R-hat of X1 is undefined" in result.reason
    if chains > 1:
        assert f"with {draws} draw" in draws_verdict(posterior).reason


@pytest.mark.parametrize(("chains", "draws"), [(1, 1), (4, 3)])
def test_constant_over_too_few_draws_is_not_converged(chains, draws):
    """Fewer than MIN_DRAWS draws a chain of unknowns that do not vary: one draw is always
    constant, so the run cannot be judged (before: "converged: no unknown varies over the
    draws" for ``dprisk posterior --method gibbs --draws 1 --chains 1``)."""
    posterior = {"X1": np.zeros((chains, draws), dtype=np.int64),
                 "X2": np.full((chains, draws), 4)}
    result = draws_verdict(posterior)
    assert not result.converged, result.reason
    assert "no unknown varies" not in result.reason and "not a failure" not in result.reason
    assert f"X2 is constant over only {draws} draw" in result.reason
    assert f"run at least {MIN_DRAWS} draws per chain" in result.reason


def test_constant_unknown_is_read_from_the_draws():
    posterior = {"X1": np.zeros((4, 3), dtype=np.int64), "X2": np.arange(12).reshape(4, 3)}
    assert constant_unknowns(posterior) == ["X1"]
    result = draws_verdict(posterior)
    assert not result.converged and "X1 is constant" in result.reason
    assert "R-hat of X2 is undefined with 3 draws per chain" in result.reason


def test_stuck_chains_fail():
    posterior = {"X1": np.array([[0] * 500, [1] * 500]),
                 "X2": np.array([[3, 4] * 250, [9, 10] * 250])}
    result = verdict(unknown_diagnostics(posterior))
    assert not result.converged and "R-hat of X2" in result.reason


def test_no_unknowns_is_refused():
    with pytest.raises(ValueError, match="X1"):
        unknown_diagnostics({"Y": np.zeros((2, 3))})


def test_chain_diagnostics_subset_is_the_same_numbers():
    """``statistics=``: only the chosen ones, each the number of the full call (the same
    ArviZ function on the same array, so equal exactly), for varying and constant draws."""
    rng = np.random.default_rng(4)
    for values, known in ((rng.integers(0, 2, size=(3, 400)), 0),
                          (rng.poisson(3.0, size=(2, 300)), None),
                          (np.ones((2, 50), dtype=np.int64), None)):
        full = chain_diagnostics(values, known=known)
        for statistics in (("mcse",), ("mcse", "r_hat", "ess_bulk"), ("ess_tail",), ()):
            part = chain_diagnostics(values, known=known, statistics=statistics)
            assert list(part) == ["mean", *statistics]
            np.testing.assert_array_equal([part[k] for k in part], [full[k] for k in part])
    with pytest.raises(ValueError, match="statistics must be among"):
        chain_diagnostics(np.ones((2, 5)), statistics=("rhat",))


def test_statistics_are_arvizs_on_the_returned_draws(tree):
    """Each reported statistic is ArviZ's own function on the run's ``posterior`` group:
    ``az.rhat`` (default method "rank": the larger of bulk and folded split R-hat),
    ``az.ess`` bulk and tail (default probability), ``az.mcse`` of the mean. The references
    above compare with ``chain_diagnostics``, which this module calls: only this test sees a
    wrong method or probability (measured: ``ess_tail`` at prob 0.5 or ``rhat`` split-only
    passed every other test). Same numbers from the same code: rel 1e-12."""
    import arviz_stats

    posterior = tree["posterior"].to_dataset()[["X1", "X2"]].astype(float)
    reference = {
        "r_hat": arviz_stats.rhat(posterior),
        "ess_bulk": arviz_stats.ess(posterior, method="bulk"),
        "ess_tail": arviz_stats.ess(posterior, method="tail"),
        "mcse_mean": arviz_stats.mcse(posterior, method="mean"),
    }
    table = unknown_diagnostics(tree["posterior"])
    for name in ("X1", "X2"):
        for statistic, values in reference.items():
            assert table[name][statistic] == pytest.approx(float(values[name]), rel=1e-12), (
                name, statistic)
