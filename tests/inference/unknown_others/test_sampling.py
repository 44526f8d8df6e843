"""PyMC's samplers on the unknown-others model agree with the exact sum over the binomial.

A small battery (one compiled model per structure, a few seconds): every case within
``N_MCSE`` Monte Carlo standard errors of the exact posterior, with R-hat below ``RHAT_MAX``
and bulk ESS above ``ESS_MIN`` (2 chains x 500 draws; the tolerance is the MCSE itself, so it
widens as 1/sqrt(draws): at 1000 draws the bulk ESS was 2010-4769, at 500 986-2016 (seed 11),
still above ESS_MIN; the sampling was a third of the test's CPU, the compiled steps the rest).
"""

import pytest

from dprisk.inference.unknown_others.sampling import pymc_posterior, pymc_posterior_battery

N_MCSE = 4
RHAT_MAX = 1.01
ESS_MIN = 400

CASES = [
    {"x1_star": 3, "rho": 0.1, "p": 0.5, "known": 0, "unknown_others": 5, "q": 0.3},
    {"x1_star": 12, "rho": 0.0992, "p": 0.2, "known": 2, "unknown_others": 20, "q": 0.4},
    {"x1_star": 1, "rho": 0.5, "p": 0.5, "known": 1},
]


def test_battery_within_mcse_of_exact(monkeypatch):
    import pymc as pm

    built = []  # the K step (Metropolis) of each structure, built once (not once per case)
    original_init = pm.Metropolis.__init__

    def counting_init(self, *args, **kwargs):
        built.append(self)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(pm.Metropolis, "__init__", counting_init)
    results = pymc_posterior_battery(CASES, draws=500, chains=2, tune=200, random_seed=11)
    assert len(built) == 1  # two structures, one with K (issue 36: steps compiled once)
    assert [r["random_seed"] for r in results] == [11, 12, 13]
    for case, result in zip(CASES, results, strict=True):
        assert abs(result["posterior"] - result["exact"]) <= N_MCSE * result["mcse"], case
        assert result["r_hat"] < RHAT_MAX and result["ess_bulk"] > ESS_MIN, case


def test_bad_case_is_refused_before_sampling():
    with pytest.raises(ValueError, match=r"\bq\b"):
        pymc_posterior(1, 0.1, unknown_others=3, draws=10, chains=1, tune=0)


@pytest.mark.slow
def test_battery_draws_what_one_case_at_a_time_draws():
    """Steps reused across a structure's cases (their state put back) draw what new steps draw."""
    battery = pymc_posterior_battery(CASES, draws=200, chains=2, tune=100, random_seed=21)
    for i, case in enumerate(CASES):
        alone = pymc_posterior(**case, draws=200, chains=2, tune=100, random_seed=21 + i)
        assert alone == battery[i]
