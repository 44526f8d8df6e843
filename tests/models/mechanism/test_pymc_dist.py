"""Tests of the PyMC discrete Gaussian against the numpy reference in models.discrete_gaussian.

Sampling tolerances are Monte Carlo errors: means and variances within 4 standard errors
(the variance's standard error from the exact fourth central moment), frequencies by a
chi-square goodness-of-fit test at level 1e-3. Fixed seeds make every test deterministic.
"""

import arviz_stats
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pymc.logprob.utils import ParameterValueError
from pytensor.graph.replace import graph_replace
from scipy import stats

from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.mechanism.pymc_dist import (
    DiscreteGaussian,
    DiscreteGaussianRV,
    log_normalizer_pt,
)

#: rho values spanning both sides of the series switch at pi and the extremes.
RHO_GRID = np.array([1e-6, 0.099, 1.0, 3.14159, np.pi, 3.15, 100.0, 1e4])
N_SE = 4.0
CHI2_LEVEL = 1e-3
N_DRAWS = 20_000


def _exact_moments(rho):
    """Variance and fourth central moment of DG(0, 1/(2 rho)) by summing the pmf table."""
    halfwidth = int(dg.support_halfwidth(rho, 1e-20))
    k = np.arange(-halfwidth, halfwidth + 1)
    mass = dg.pmf(k, 0, rho)
    return float(np.sum(mass * k**2)), float(np.sum(mass * k**4))


def _chi2_pvalue(draws, mu, rho):
    """Chi-square goodness of fit of integer draws to DG(mu, rho), tails lumped (E >= 5)."""
    n = draws.size
    halfwidth = int(dg.support_halfwidth(rho, 1e-20))
    k = np.arange(mu - halfwidth, mu + halfwidth + 1)
    expected = n * dg.pmf(k, mu, rho)
    keep = expected >= 5
    if keep.sum() < 2:
        pytest.skip("distribution too concentrated for a chi-square test")
    lo, hi = k[keep][0], k[keep][-1]
    bins = np.arange(lo, hi + 1)
    observed = np.array(
        [np.sum(draws <= lo)] + [np.sum(draws == b) for b in bins[1:-1]] + [np.sum(draws >= hi)]
    )
    exp_binned = np.concatenate(
        [[n * dg.cdf(lo, mu, rho)], n * dg.pmf(bins[1:-1], mu, rho), [n * dg.sf(hi - 1, mu, rho)]]
    )
    return stats.chisquare(observed, exp_binned * n / exp_binned.sum()).pvalue


class TestLogNormalizer:
    def test_matches_numpy_reference(self):
        rho = np.concatenate([RHO_GRID, np.geomspace(1e-6, 1e4, 41)])
        got = log_normalizer_pt(rho).eval()
        np.testing.assert_allclose(got, dg.log_normalizer(rho), rtol=1e-13, atol=1e-15)

    def test_float64_for_float32_input(self):
        assert log_normalizer_pt(pt.fscalar("rho")).dtype == "float64"

    def test_constant_is_the_series_as_pytensor_folds_it(self):
        """A constant rho gives the constant PyTensor's compilation folds the series into
        (the series built on a symbolic rho, the constant put in its place), bit for bit."""
        rng = np.random.default_rng(5)
        rho = np.concatenate([np.geomspace(1e-7, 1e5, 300), rng.uniform(0.0, 10.0, 100),
                              RHO_GRID, [np.nextafter(np.pi, 0.0), np.nextafter(np.pi, 4.0)],
                              [0.5, 0.5 / 3, 0.0992, 0.0992 / 27]])
        constant = log_normalizer_pt(rho)
        assert isinstance(constant, pt.TensorConstant)
        symbolic = pt.dvector("rho")
        series = graph_replace(log_normalizer_pt(symbolic), {symbolic: pt.constant(rho)})
        folded = pytensor.function([], series)()
        assert np.array_equal(constant.data, folded)

    def test_log_density_of_a_constant_rho_is_the_series_one(self):
        """The compiled log density with the folded constant equals the one compiled from
        the series (the same model graph otherwise), bit for bit."""
        x, mu, rho = (v.ravel() for v in np.meshgrid(
            np.arange(-40, 41), np.arange(-3, 12), [0.0992, 0.2465, 0.0992 / 27, 0.5, 4.0]))
        mu_var, symbolic = pt.lvector("mu"), pt.dvector("rho")
        logps = [pm.logp(DiscreteGaussian.dist(mu=mu_var, rho=r), x) for r in (rho, symbolic)]
        logps[1] = graph_replace(logps[1], {symbolic: pt.constant(rho)})
        got, expected = (pytensor.function([mu_var], logp)(mu) for logp in logps)
        assert np.array_equal(got, expected)


class TestLogp:
    def test_grid_matches_numpy_logpmf(self):
        x, mu, rho = np.meshgrid(np.arange(-6, 9), np.array([0, 1, 3, 7]), RHO_GRID, indexing="ij")
        x, mu, rho = x.ravel(), mu.ravel(), rho.ravel()
        rv = DiscreteGaussian.dist(mu=mu, rho=rho)
        got = pm.logp(rv, x).eval()
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, dg.logpmf(x, mu, rho), rtol=1e-12, atol=1e-12)

    def test_pmf_sums_to_one(self):
        k = np.arange(-60, 61)
        rv = DiscreteGaussian.dist(mu=2, rho=0.05)
        total = np.exp(pm.logp(rv, k + 2).eval()).sum()
        assert total == pytest.approx(1.0, abs=1e-13)

    @pytest.mark.parametrize("bad_rho", [0.0, -1.0])
    def test_invalid_symbolic_rho_raises(self, bad_rho):
        rho = pt.dscalar("rho")
        logp = pm.logp(DiscreteGaussian.dist(mu=0, rho=rho), 1)
        with pytest.raises(ParameterValueError, match="rho > 0"):
            logp.eval({rho: bad_rho})

    def test_invalid_rho_gives_minus_inf_in_model_logp(self):
        # PyMC's compiled model logp turns check_parameters into a switch to -inf
        with pm.Model() as model:
            rho = pm.Data("rho", 0.5)
            DiscreteGaussian("x", mu=0, rho=rho, observed=1)
        logp_fn = model.compile_logp()
        assert logp_fn({}) == pytest.approx(dg.logpmf(1, 0, 0.5))
        model.set_data("rho", -1.0)
        assert logp_fn({}) == -np.inf

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"mu": 0, "rho": -0.5}, "rho"),
            ({"mu": 0, "rho": np.inf}, "rho"),
            ({"mu": 0.5, "rho": 1.0}, "mu"),
        ],
    )
    def test_constant_inputs_validated(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            DiscreteGaussian.dist(**kwargs)

    def test_float_symbolic_mu_rejected(self):
        with pytest.raises(TypeError, match="mu"):
            DiscreteGaussian.dist(mu=pt.dscalar("mu"), rho=1.0)


class TestRandom:
    @pytest.mark.parametrize("backend", ["numba", "c"])
    def test_draw_moments(self, backend):
        rho = np.array([1e-6, 0.099, 1.0, 3.15, 100.0, 1e4])
        mu = np.array([5, 0, 3, -2, 1, 7])
        # one call with size=(N_DRAWS, 6): the "c" backend runs rng_fn once, not N_DRAWS times
        rv = DiscreteGaussian.dist(mu=mu, rho=rho, size=(N_DRAWS, rho.size))
        draws = pm.draw(rv, random_seed=11, backend=backend)
        assert draws.dtype == np.int64
        assert draws.shape == (N_DRAWS, rho.size)
        variance = dg.variance(rho)
        moments = np.array([_exact_moments(r) for r in rho])
        np.testing.assert_allclose(moments[:, 0], variance, rtol=1e-10)
        se_mean = np.sqrt(variance / N_DRAWS)
        se_var = np.sqrt((moments[:, 1] - variance**2) / N_DRAWS)
        assert np.all(np.abs(draws.mean(0) - mu) <= N_SE * se_mean)
        assert np.all(np.abs(draws.var(0) - variance) <= N_SE * se_var + 1e-12 * variance)

    @pytest.mark.parametrize("backend", ["numba", "c"])
    @pytest.mark.parametrize(("mu", "rho"), [(0, 0.099), (4, 0.5), (-3, 3.15)])
    def test_draw_frequencies(self, backend, mu, rho):
        rv = DiscreteGaussian.dist(mu=mu, rho=rho, size=N_DRAWS)
        draws = pm.draw(rv, random_seed=5, backend=backend)
        assert _chi2_pvalue(draws, mu, rho) > CHI2_LEVEL

    def test_draw_reproducible(self):
        rv = DiscreteGaussian.dist(mu=0, rho=0.1, size=50)
        np.testing.assert_array_equal(pm.draw(rv, random_seed=3), pm.draw(rv, random_seed=3))

    def test_size_and_broadcasting(self):
        rv = DiscreteGaussian.dist(mu=[0, 100], rho=[[0.5], [1e4]], size=(3, 2, 2))
        draws = pm.draw(rv, random_seed=1)
        assert draws.shape == (3, 2, 2)
        np.testing.assert_array_equal(draws[:, 1, :], [[0, 100]] * 3)  # rho = 1e4: no noise

    def test_numba_core_rejects_bad_rho(self):
        rho = pt.dscalar("rho")
        draw_fn = pytensor.function([rho], DiscreteGaussian.dist(mu=0, rho=rho))
        assert isinstance(draw_fn(0.5).item(), int)
        with pytest.raises(ValueError, match="rho"):
            draw_fn(-1.0)


class TestRngFn:
    """``rng_fn`` (used by the Python/C backends) delegates to models.dg_sampling.sample."""

    def test_broadcasts_and_honours_size(self, rng):
        out = DiscreteGaussianRV.rng_fn(rng, np.array([0, 10]), np.array(0.5), (4, 2))
        assert out.shape == (4, 2) and out.dtype == np.int64
        out = DiscreteGaussianRV.rng_fn(rng, np.array([0, 10]), np.array([[0.5], [2.0]]), None)
        assert out.shape == (2, 2)
        with pytest.raises(ValueError, match="size"):
            DiscreteGaussianRV.rng_fn(rng, np.array([0, 10]), np.array(0.5), (3,))

    def test_uses_the_given_generator(self):
        first = DiscreteGaussianRV.rng_fn(np.random.default_rng(8), 0, 0.2, (100,))
        again = DiscreteGaussianRV.rng_fn(np.random.default_rng(8), 0, 0.2, (100,))
        np.testing.assert_array_equal(first, again)

    def test_rejects_bad_rho(self, rng):
        with pytest.raises(ValueError, match="rho"):
            DiscreteGaussianRV.rng_fn(rng, 0, 0.0, (3,))


class TestInModel:
    def test_prior_predictive(self):
        with pm.Model():
            k = DiscreteGaussian("k", mu=10, rho=0.2)
            DiscreteGaussian("x_star", mu=k, rho=0.5, observed=12)
            idata = pm.sample_prior_predictive(draws=500, random_seed=4)
        assert idata.prior["k"].dtype == np.int64
        assert idata.prior_predictive["x_star"].dtype == np.int64
        assert idata.prior_predictive["x_star"].shape == (1, 500)
        total_var = dg.variance(0.2) + dg.variance(0.5)
        assert abs(idata.prior_predictive["x_star"].mean() - 10) < N_SE * np.sqrt(total_var / 500)

    def test_latent_initial_point_and_logps(self):
        with pm.Model() as model:
            DiscreteGaussian("k", mu=[3, 8], rho=[0.1, 2.0])
        assert model.initial_point()["k"].tolist() == [3, 8]
        assert model.initial_point()["k"].dtype == np.int64
        logps = model.point_logps()
        assert np.isfinite(logps["k"])
        assert logps["k"] == pytest.approx(np.round(dg.logpmf([3, 8], [3, 8], [0.1, 2.0]).sum(), 2))

    def test_latent_sampled_with_metropolis_matches_enumeration(self):
        """Posterior of k in k ~ DG(4, rho0), x* ~ DG(k, rho1) against exact enumeration.

        2 x 1500 draws (3000 before): the tolerance is N_SE of the run's own MCSE, which grows
        as 1/sqrt(draws), so the check stays calibrated (MCSE 0.047 at seed 21: a bias of 0.19
        in k's mean fails)."""
        rho0, rho1, x_star = 0.1, 0.3, 9
        with pm.Model():
            k = DiscreteGaussian("k", mu=4, rho=rho0)
            DiscreteGaussian("x_star", mu=k, rho=rho1, observed=x_star)
            idata = pm.sample(draws=1500, tune=500, chains=2, cores=1, random_seed=21,
                              progressbar=False, compute_convergence_checks=False)
        grid = np.arange(-40, 60)
        log_post = dg.logpmf(grid, 4, rho0) + dg.logpmf(x_star, grid, rho1)
        post = np.exp(log_post - log_post.max())
        exact_mean = float(np.sum(grid * post) / post.sum())
        samples = idata.posterior["k"].values
        assert samples.dtype == np.int64
        mcse = float(arviz_stats.mcse(idata, var_names=["k"], method="mean")["k"])
        assert abs(samples.mean() - exact_mean) <= N_SE * mcse
