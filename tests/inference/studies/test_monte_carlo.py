"""Monte Carlo decision studies (inference.mc_studies).

Tolerances: Monte Carlo proportions are compared with exact expectations within
``Z_MAX = 4`` standard errors (binomial MCSE of the run). The finite-draws procedure is
compared with its own exact expectation (finite_draws_p_correct), so no bias term is needed;
the exact-posterior ("stationary") rate is compared with p_correct_two_level.
"""

import functools

import numpy as np
import pytest
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP

from dprisk.inference.studies.finite_draws import finite_draws_p_correct
from dprisk.inference.studies.monte_carlo import BLOCK, _block, simulate_p_correct
from dprisk.inference.studies.p_correct import p_correct_two_level, p_correct_variant
from dprisk.models.scenario import Scenario

RHO1 = RHO_BLOCK
RHO2 = RHO_BLOCK_GROUP
CENSUS = {"rho1": RHO1, "rho2": RHO2, "d": 27}
Z_MAX = 4.0
#: Draws per release of the finite-draws cases (even, so ties matter).
DRAWS = 60


@functools.cache
def expected_finite_draws(x2, variant=False, ties="m"):
    """finite_draws_p_correct (exact, FFT) of the DRAWS-draw procedure, computed once."""
    return finite_draws_p_correct(x2=x2, draws=DRAWS, variant=variant, ties=ties,
                                  method="fft", **CENSUS)


def test_exact_decisions_on_simulated_releases_match_exact_sum():
    """Binomial check of the release simulation: sampler 'exact' vs the exact grid sum."""
    run = simulate_p_correct(x2=2, datasets=20_000, sampler="exact", random_seed=11, progress=False,
                             **CENSUS)
    exact = p_correct_two_level(x2=2, **CENSUS)
    assert abs(run.p_correct - exact.p_correct) < Z_MAX * run.mcse
    assert run.p_correct == run.p_correct_stationary
    single = exact.p_correct_no_hierarchy
    assert abs(run.p_correct_no_hierarchy - single) < Z_MAX * np.sqrt(single * (1 - single)
                                                                       / run.datasets)


@pytest.mark.parametrize(("sampler", "ties", "x2"), [("x1_chain", "m", 6),
                                                     ("variant", "m+1", 1)])
def test_finite_draws_mc_matches_expected(sampler, ties, x2):
    """2e4 releases x 60 draws vs the exact expectation of the same 60-draw procedure.

    Any even number of draws exercises the same code (ties included); the MCSE of the rate
    is set by the 2e4 releases, not by the draws. The exact expectation's cost grows with the
    draws (an FFT over draws + 1 points on 8e4 chains): at 200 draws it took 5.7 s of CPU per
    case, at 60 about 1.5 s, and the draws effect it checks is larger (-0.036 instead of
    -0.012 at x2 = 6).
    """
    run = simulate_p_correct(x2=x2, datasets=20_000, draws=DRAWS, sampler=sampler, ties=ties,
                             random_seed=5, progress=False, **CENSUS)
    expected = expected_finite_draws(x2, variant=sampler == "variant", ties=ties)
    assert abs(run.p_correct - expected["p_correct"]) < Z_MAX * run.mcse
    stationary = (p_correct_two_level if sampler == "x1_chain" else p_correct_variant)(
        x2=x2, ties=ties, **CENSUS).p_correct
    assert expected["p_correct_stationary"] == pytest.approx(stationary, abs=1e-9)
    # The paired draws effect is estimated without the release noise.
    effect = expected["p_correct"] - expected["p_correct_stationary"]
    assert abs(run.draws_effect - effect) < Z_MAX * run.mcse_draws_effect + 1e-4


def test_gibbs_sampler_and_x1_chain_agree():
    """Full Gibbs draws (inference.gibbs) and the collapsed X1 chain: same law.

    At the x1_chain finite-draws case's x2 and draws, so its exact expectation is reused.
    """
    kwargs = {"x2": 6, "datasets": 3000, "draws": DRAWS, "progress": False} | CENSUS
    gibbs = simulate_p_correct(sampler="gibbs", random_seed=8, **kwargs)
    chain = simulate_p_correct(sampler="x1_chain", random_seed=9, **kwargs)
    expected = expected_finite_draws(6)["p_correct"]
    assert abs(gibbs.p_correct - expected) < Z_MAX * gibbs.mcse
    assert abs(chain.p_correct - expected) < Z_MAX * chain.mcse


def test_reproducible_and_blockwise():
    kwargs = {"x2": 3, "draws": 20, "sampler": "variant", "progress": False} | CENSUS
    first = simulate_p_correct(datasets=BLOCK + 300, random_seed=123, **kwargs)
    again = simulate_p_correct(datasets=BLOCK + 300, random_seed=123, **kwargs)
    assert first.p_correct == again.p_correct
    # Each block uses its own child seed: the total is the sum of independent blocks.
    params = Scenario.two_level(p=0.5, known=0, prior="improper", **CENSUS)
    children = np.random.SeedSequence(123).spawn(2)
    correct = 0
    for n, child in zip((BLOCK, 300), children, strict=True):
        out, _, _ = _block(n, params, 1, 3, 2, 20, "variant", 1, np.random.default_rng(child),
                           0.5, "m")
        correct += int(out.sum())
    assert correct == round(first.p_correct * first.datasets)
    unseeded = simulate_p_correct(datasets=100, **kwargs)
    replay = simulate_p_correct(datasets=100, random_seed=unseeded.random_seed, **kwargs)
    assert replay.p_correct == unseeded.p_correct
    assert isinstance(unseeded.random_seed, int) and 0 <= unseeded.random_seed < 2**32


def test_bad_input():
    with pytest.raises(ValueError, match="sampler"):
        simulate_p_correct(x2=1, sampler="nuts", **CENSUS)
    with pytest.raises(ValueError, match="datasets"):
        simulate_p_correct(x2=1, datasets=0, **CENSUS)
    with pytest.raises(ValueError, match="start"):
        simulate_p_correct(x2=1, start=2.0, datasets=10, **CENSUS)


@pytest.mark.parametrize("flag", ["yes", "no", 0, None])
def test_progress_must_be_a_bool(flag):
    """progress="no" used to run the study with a progress bar (any truthy value): refused,
    naming the parameter, before any draw."""
    with pytest.raises(TypeError, match=r"progress must be True or False"):
        simulate_p_correct(x2=1, datasets=10, random_seed=1, progress=flag, **CENSUS)


@pytest.mark.slow
def test_paper_scale_point_matches_expected():
    """1e6 releases x 1e3 draws (the paper's Figure 5 budget) at x2 = 10, variant sampler."""
    run = simulate_p_correct(x2=10, datasets=1_000_000, draws=1000, sampler="variant",
                             ties="m+1", random_seed=2024, progress=False, **CENSUS)
    expected = finite_draws_p_correct(x2=10, draws=1000, variant=True, ties="m+1", **CENSUS)
    assert abs(run.p_correct - expected["p_correct"]) < Z_MAX * run.mcse


def test_finite_draws_mc_starts_each_chain_from_the_prior():
    """One draw per release at p = 0.2: the decision hangs on the chain's start, drawn from
    the prior (P[X1 = m + 1] = p), as finite_draws_p_correct's exact expectation assumes:
    0.2763 (a start from 1/2 would give 0.3166, 13 MCSE of 2e4 releases away)."""
    kw = {"x2": 1, "p": 0.2, "rho1": 0.5, "rho2": 1.0, "d": 3}
    run = simulate_p_correct(**kw, datasets=20_000, draws=1, sampler="x1_chain",
                             random_seed=3, progress=False)
    expected = finite_draws_p_correct(**kw, draws=1, method="fft")["p_correct"]
    assert abs(run.p_correct - expected) < Z_MAX * run.mcse


def test_half_tie_rule_is_a_fair_coin():
    """ties='half' decides m + 1 on half the ties (2e5 ties: within 4 binomial SE of 1/2)."""
    from dprisk.inference.studies.monte_carlo import _resolve

    n = 200_000
    up = _resolve(np.zeros(n, bool), np.ones(n, bool), "half", np.random.default_rng(7))
    assert abs(up.mean() - 0.5) < Z_MAX * np.sqrt(0.25 / n)
    assert _resolve(np.zeros(3, bool), np.array([True, False, True]), "m+1", None).tolist() \
        == [True, False, True]


def test_posterior_tables_are_sized_before_the_study(monkeypatch):
    """Each block's releases get exact tables on a k2 window of 10897 values at rho1 = rho2 =
    1e-6 (d = 3): 600 KB a release measured (1000 releases peaked at 664 MB, 2000 at 1260
    MB); 20,000 datasets failed with numpy's MemoryError asking for 1.33 GiB of one array
    (7 GiB the block), and the tables' work (61 ns a cell) was not counted (2000 datasets x
    100 draws: 2.2e6 steps estimated, 2 s of CPU). Now 64 B and 20 steps a release and k2
    value (less the 1000 a dataset counts): 200 datasets are 1.39e8 bytes and 4.34e7 steps
    (plus the draws), refused under 64 MiB and 1e7."""
    from dprisk.runtime.memory_limit import MemoryLimitError
    from dprisk.runtime.work_limit import WorkLimitError

    study = {"x2": 2, "rho1": 1e-6, "rho2": 1e-6, "d": 3, "datasets": 200, "draws": 10,
             "random_seed": 1, "progress": False}
    with monkeypatch.context() as patch:
        patch.setenv("DPRISK_MEMORY_LIMIT", "64MiB")
        with pytest.raises(MemoryLimitError, match=r"^rho1, rho2, datasets: the posterior "
                           r"tables of 200 releases x 10897 values of k2 needs about 133 MiB"):
            simulate_p_correct(**study)
    with monkeypatch.context() as patch:
        patch.setenv("DPRISK_WORK_LIMIT", "1e7")
        with pytest.raises(WorkLimitError, match=r"^rho1, rho2, datasets: the posterior "
                           r"tables of 200 datasets x 10897 values of k2 is about 4.36e7"):
            simulate_p_correct(**study)
    with monkeypatch.context() as patch:  # the paper's scale is not touched by the tables
        patch.setenv("DPRISK_WORK_LIMIT", "1e7")
        assert 0 <= simulate_p_correct(**{**study, "rho1": 0.5, "rho2": 0.5}).p_correct <= 1


def test_draws_effect_mcse_is_the_paired_differences_standard_error(monkeypatch):
    """MCSE of the draws effect = sd(D) / sqrt(n), D_i = 1[correct_i] - 1[stationary_i].

    With P[D = 1] = a, P[D = -1] = b: Var D = a + b - (a - b)^2. The decisions are replaced
    by seeded Bernoulli arrays with a large effect (a about 0.48, b about 0.1), where dropping
    the -(a - b)^2 term would make the MCSE 15 % too large (it was 0.1 % at the report's
    cases, so no sampler test could see it); the result must equal numpy's sd of the paired
    differences to rounding (rel 1e-12: both are a few float sums of 0/1 counts).
    """
    from dprisk.inference.studies import monte_carlo

    rng = np.random.default_rng(11)
    seen = []

    def fake_block(n, *args):
        correct = rng.random(n) < 0.8
        stationary = np.where(correct, rng.random(n) < 0.4, rng.random(n) < 0.5)
        seen.append(correct.astype(int) - stationary.astype(int))
        return correct, stationary, correct

    monkeypatch.setattr(monte_carlo, "_block", fake_block)
    run = simulate_p_correct(x2=6, datasets=5000, draws=DRAWS, random_seed=1, progress=False,
                             **CENSUS)
    paired = np.concatenate(seen)
    assert run.draws_effect == pytest.approx(paired.mean(), rel=1e-12)
    assert run.mcse_draws_effect == pytest.approx(paired.std() / np.sqrt(paired.size),
                                                  rel=1e-12)


def test_exact_sampler_where_the_chain_cannot_change_x1():
    """A user prior with X2 - X1 = 3 known: the X2 supports given X1 = 0 and 1 are apart, so
    the exact chain's (a0, a1) = (0, 1) and its stationary log-odds from them was NaN, which
    decided m on every release: sampler 'exact' reported 0.0 +- 0.0 against the exact 0.732.
    The stationary law of the exact chain is the posterior: within Z_MAX binomial MCSEs."""
    import pytensor.tensor as pt

    from dprisk.models.priors.library import UserPrior

    known_y1 = UserPrior(lambda k2, k1: pt.zeros_like(k2, dtype="float64"),
                         support=lambda k1: (k1 + 3, k1 + 3), description="X2 - X1 = 3")
    kw = {"x2": 4, "rho1": 0.3, "rho2": 0.5, "d": 3, "prior": known_y1}
    run = simulate_p_correct(**kw, datasets=2000, sampler="exact", random_seed=5,
                             progress=False)
    exact = p_correct_two_level(**kw).p_correct
    assert abs(run.p_correct - exact) < Z_MAX * run.mcse
    assert run.p_correct_stationary == run.p_correct
