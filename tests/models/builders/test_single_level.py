"""Tests of the adversary's single-level PyMC model (paper §3.1).

References: the sampled posterior is compared with
``dprisk.inference.single_level.closed_form.posterior``
(paper eq. 3.1); the model's exact log-odds with the log-odds form written out here,
logit P[X1 = known + 1 | x1*] = logit(p) + rho (2 (x1* - known) - 1).

Tolerances: the exact model logp to 1e-12 (rounding); the sampled posterior probability within
N_MCSE Monte Carlo standard errors (ArviZ ``mcse(method="mean")`` of the indicator), from
4 chains x 500 draws: BinaryGibbsMetropolis draws the indicator from its exact conditional,
so the draws are nearly independent (bulk ESS 5,456 of 2,000 at [6-0.25-0.2-3], MCSE 0.0068;
2000 draws per chain gave 23,500 and 0.0033 for 3.4 times the CPU).
"""

import arviz_stats
import numpy as np
import pymc as pm
import pytest
from census_values import RHO_BLOCK
from pymc.step_methods import BinaryGibbsMetropolis
from scipy.special import logit

from dprisk.inference.single_level.closed_form import posterior
from dprisk.models.builders.single_level import (
    TARGET_VAR,
    X1_STAR_VAR,
    X1_VAR,
    build_single_level_model,
)
from dprisk.models.mechanism.pymc_dist import DiscreteGaussian

RHAT_MAX = 1.01
N_MCSE = 4.0
ESS_MIN = 1000

#: (x1_star, rho, p, known): moderate posteriors so the indicator mixes and MCSE is meaningful.
CASES = [
    (1, 0.5, 0.5, 0),
    (6, 0.25, 0.2, 3),
    (-2, RHO_BLOCK, 0.5, 0),
]


class TestStructure:
    def test_variables_and_dtypes(self):
        model = build_single_level_model(4, 0.5, p=0.3, known=3)
        assert [rv.name for rv in model.free_RVs] == [TARGET_VAR]
        assert [rv.name for rv in model.deterministics] == [X1_VAR]
        assert [rv.name for rv in model.observed_RVs] == [X1_STAR_VAR]
        assert isinstance(model[X1_STAR_VAR].owner.op, type(DiscreteGaussian.rv_op))
        assert model[X1_VAR].dtype == "int64"
        assert model.rvs_to_values[model[X1_STAR_VAR]].data == 4
        assert np.all(np.isfinite(list(model.point_logps().values())))

    def test_binary_gibbs_is_assigned(self):
        model = build_single_level_model(2, 0.5)
        _, selected = pm.sampling.mcmc.assign_step_methods(model)
        assert list(selected) == [BinaryGibbsMetropolis]

    @pytest.mark.parametrize(("x1_star", "rho", "p", "known"), [*CASES, (40, 2.0, 0.01, 38)])
    def test_logp_difference_is_closed_form_log_odds(self, x1_star, rho, p, known):
        model = build_single_level_model(x1_star, rho, p=p, known=known)
        logp_fn = model.compile_logp()
        log_odds = logp_fn({TARGET_VAR: np.int64(1)}) - logp_fn({TARGET_VAR: np.int64(0)})
        expected = logit(p) + rho * (2 * (x1_star - known) - 1)
        assert log_odds == pytest.approx(expected, abs=1e-12)


class TestValidation:
    @pytest.mark.parametrize(
        ("kwargs", "name"),
        [
            ({"x1_star": 1.5, "rho": 0.5}, "x1_star"),
            ({"x1_star": [1, 2], "rho": 0.5}, "x1_star"),
            ({"x1_star": 1, "rho": 0.0}, "rho"),
            ({"x1_star": 1, "rho": -0.1}, "rho"),
            ({"x1_star": 1, "rho": 0.5, "p": 1.0}, "p"),
            ({"x1_star": 1, "rho": 0.5, "p": 0.0}, "p"),
            ({"x1_star": 1, "rho": 0.5, "known": -1}, "known"),
            ({"x1_star": 1, "rho": 0.5, "known": 2.5}, "known"),
        ],
    )
    def test_bad_input_names_parameter(self, kwargs, name):
        with pytest.raises(ValueError, match=name):
            build_single_level_model(**kwargs)


class TestSampling:
    @pytest.mark.parametrize(("x1_star", "rho", "p", "known"), CASES)
    def test_posterior_matches_closed_form(self, x1_star, rho, p, known):
        model = build_single_level_model(x1_star, rho, p=p, known=known)
        with model:
            idata = pm.sample(
                draws=500,
                tune=200,
                chains=4,
                cores=1,
                random_seed=1234,
                progressbar=False,
                compute_convergence_checks=False,
            )
        target = idata.posterior[TARGET_VAR]
        np.testing.assert_array_equal(idata.posterior[X1_VAR], known + target)

        sampled = float((idata.posterior[X1_VAR] == known + 1).mean())
        mcse = float(arviz_stats.mcse(idata, var_names=[TARGET_VAR], method="mean")[TARGET_VAR])
        rhat = float(arviz_stats.rhat(idata, var_names=[TARGET_VAR])[TARGET_VAR])
        ess = float(arviz_stats.ess(idata, var_names=[TARGET_VAR], method="bulk")[TARGET_VAR])
        exact = float(posterior(x1_star, rho, p=p, known=known))

        assert 0 < mcse < 0.02
        assert abs(sampled - exact) <= N_MCSE * mcse
        assert rhat < RHAT_MAX
        assert ess > ESS_MIN
