"""Tests of the exact Gibbs sweep as a PyMC step method (paper §3.2, S3).

References: the exact posterior (``dprisk.inference.two_level.exact.exact_posterior``) for the
stationary law,
and the two-state X1 chain of the sweep for its transition law: with
a_b = sum_k2 P[X2 = k2 | X1 = m + b] P[X1 = m + 1 | X2 = k2] (from the tabulated
conditionals), the stationary flip rate of X1 is (1 - q) a_0 + q (1 - a_1),
q = P[X1 = m + 1 | D].

Tolerance: N_MCSE = 4 Monte Carlo standard errors (ArviZ ``mcse(method="mean")``, which
accounts for autocorrelation); for a correct sampler |z| > 4 has probability ~6e-5 per
comparison under the CLT. R-hat below RHAT_MAX = 1.01 (Vehtari et al. 2021).
"""

import numpy as np
import pymc as pm
import pytest
from census_values import CENSUS_TWO_LEVEL as CENSUS

from dprisk.inference.two_level.exact import exact_posterior
from dprisk.inference.two_level.gibbs_step import ExactGibbsStep
from dprisk.inference.two_level.sampling import chain_diagnostics
from dprisk.models.builders.single_level import build_single_level_model
from dprisk.models.builders.two_level import (
    TARGET_VAR,
    X2_VAR,
    build_two_level_model,
    set_release,
)

N_MCSE = 4.0
RHAT_MAX = 1.01
ESS_MIN = 1000
RELEASE = (2, 1, -1)
DRAWS, CHAINS, TUNE = 2000, 2, 100


def _sample(model, seed, *, cores=1, step=None, draws=DRAWS):
    return pm.sample(
        draws=draws, tune=TUNE, chains=CHAINS, cores=cores, model=model,
        step=step if step is not None else ExactGibbsStep(model=model),
        random_seed=seed, progressbar=False, quiet=True, compute_convergence_checks=False,
    )


def _assert_matches_exact(idata, exact, known):
    post = idata["posterior"]
    x1 = chain_diagnostics(post["X1"].values, known=known)
    assert x1["r_hat"] < RHAT_MAX
    assert x1["ess_bulk"] > ESS_MIN
    assert abs(x1["mean"] - float(exact.prob_x1)) < N_MCSE * x1["mcse"]
    x2 = chain_diagnostics(post["X2"].values)
    if x2["mcse"] > 0:
        assert x2["r_hat"] < RHAT_MAX
        assert abs(x2["mean"] - float(exact.x2_mean())) < N_MCSE * x2["mcse"]
    else:
        assert x2["mean"] == float(exact.x2_mean())


@pytest.fixture(scope="module")
def census_model():
    return build_two_level_model(*RELEASE, **CENSUS)


class TestPosterior:
    def test_table3_release_matches_exact(self, census_model):
        idata = _sample(census_model, 11)
        _assert_matches_exact(idata, exact_posterior(*RELEASE, **CENSUS), known=0)
        assert set(idata["posterior"].data_vars) >= {TARGET_VAR, "X1", X2_VAR}
        assert idata["posterior"]["X2"].dims == ("chain", "draw")

    @pytest.mark.parametrize(("prior", "known", "release"), [
        ("truncated:10", 2, (3, 5, 0)),
        ("point:1", 0, (1, 3, 2)),
        ("point:0", 0, (1, 3, 2)),
    ])
    def test_other_priors_match_exact(self, prior, known, release):
        model = build_two_level_model(*release, **CENSUS, p=0.3, known=known, prior=prior)
        idata = _sample(model, 12)
        exact = exact_posterior(*release, **CENSUS, p=0.3, known=known, prior=prior)
        if prior == "point:0":  # X1 = 1 is impossible: every draw is X1 = 0
            assert np.all(idata["posterior"]["X1"].values == 0)
        else:
            _assert_matches_exact(idata, exact, known)

    def test_flip_rate_is_the_sweeps_transition_law(self, census_model):
        step = ExactGibbsStep(model=census_model)
        idata = _sample(census_model, 13, step=step)
        cond = step.conditionals
        a = cond.x2_pmf_table @ cond.prob_x1_table  # a_b = P[X1' = m+1 | X1 = m+b]
        q = float(exact_posterior(*RELEASE, **CENSUS).prob_x1)
        expected = (1 - q) * a[0] + q * (1 - a[1])
        flips = chain_diagnostics(idata["sample_stats"]["x1_flipped"].values.astype(float))
        assert abs(flips["mean"] - expected) < N_MCSE * flips["mcse"]

    def test_reused_step_follows_set_release(self):
        model = build_two_level_model(*RELEASE, **CENSUS)
        step = ExactGibbsStep(model=model)
        set_release(model, -2, 4, 8)
        idata = _sample(model, 14, step=step)
        assert step.conditionals.release == (-2, 4, 8)
        _assert_matches_exact(idata, exact_posterior(-2, 4, 8, **CENSUS), known=0)


class TestReproducibility:
    def test_same_seed_same_draws(self, census_model):
        first = _sample(census_model, 5, draws=300)
        second = _sample(census_model, 5, draws=300)
        other = _sample(census_model, 6, draws=300)
        for name in ("X1", "X2"):
            np.testing.assert_array_equal(first["posterior"][name], second["posterior"][name])
        assert not np.array_equal(first["posterior"]["X2"], other["posterior"]["X2"])

    def test_cores_1_and_2_give_identical_draws(self, census_model):
        serial = _sample(census_model, 7, draws=300, cores=1)
        parallel = _sample(census_model, 7, draws=300, cores=2)
        for name in ("X1", "X2"):
            np.testing.assert_array_equal(serial["posterior"][name], parallel["posterior"][name])

    def test_step_uses_only_its_rng(self, census_model):
        point = census_model.initial_point()
        runs = []
        for _ in range(2):
            step = ExactGibbsStep(model=census_model, rng=3)
            state, path = point, []
            for _ in range(50):
                state, stats = step.step(state)
                path.append((int(state[TARGET_VAR]), int(state[X2_VAR]), stats[0]["x1_flipped"]))
            runs.append(path)
        assert runs[0] == runs[1]

    @pytest.mark.parametrize("prior", ["improper", "point:3"])
    def test_sweep_is_the_conditionals_draws_from_python_floats(self, prior):
        """The step hands its uniforms over as np.float64 (a faster scalar test): the same
        draws, exactly, as the conditionals given the generator's Python floats."""
        model = build_two_level_model(*RELEASE, **CENSUS, prior=prior)
        step = ExactGibbsStep(model=model, rng=8)
        cond, rng = step.conditionals, np.random.default_rng(8)
        point = model.initial_point()
        free = X2_VAR in point  # under point:3, X2 is the constant 3
        k2 = int(point[X2_VAR]) if free else 3
        for _ in range(400):
            k1 = cond.x1_given_x2(k2, rng.random())
            if free:
                k2 = cond.x2_given_x1(k1, rng.random())
            point, _ = step.step(point)
            assert int(point[TARGET_VAR]) == k1 - step.known
            assert not free or int(point[X2_VAR]) == k2


class TestInterface:
    def test_vars_must_be_the_two_blocks(self, census_model):
        step = ExactGibbsStep([census_model[TARGET_VAR], census_model[X2_VAR]],
                              model=census_model)
        assert [v.name for v in step.vars] == [TARGET_VAR, X2_VAR]
        with pytest.raises(ValueError, match="vars must be"):
            ExactGibbsStep([census_model[X2_VAR]], model=census_model)

    def test_point_mass_updates_only_the_indicator(self):
        model = build_two_level_model(*RELEASE, **CENSUS, prior="point:2")
        step = ExactGibbsStep(model=model)
        assert [v.name for v in step.vars] == [TARGET_VAR]

    def test_needs_a_two_level_model(self):
        with pytest.raises(ValueError, match="build_two_level_model"):
            ExactGibbsStep(model=build_single_level_model(1, 0.5))

    def test_not_auto_assigned(self, census_model):
        _, selected = pm.sampling.mcmc.assign_step_methods(census_model)
        assert ExactGibbsStep not in selected
