"""Tests of inference/nested/posterior.py: the h-level exact posterior (forward-backward) vs the
two-level enumeration (h = 2, to 1e-10) and against brute-force sums over wide grids (h = 3,
4, written out here from the joint posterior of models/builders/nested.py), its cost (pairwise
factor evaluations grow linearly in h), the Gibbs sampler and PyMC against it within 4 MCSE,
the CLI helpers and the input errors.

MCSE: ArviZ ``mcse(method="mean")`` of the draws in question (ESS-based), floored at the
independent-draws value computed from the exact posterior.
"""

import math
import re

import arviz_stats
import numpy as np
import pytest
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP
from scipy.special import logsumexp
from scipy.stats import nbinom

from dprisk.inference.nested import box_kernels as nested_box
from dprisk.inference.nested import gibbs as nested_gibbs
from dprisk.inference.nested import posterior as ml
from dprisk.inference.two_level.exact import GridTooNarrowError, exact_posterior
from dprisk.models.census.allocation import census_rhos
from dprisk.models.priors.library import ImproperUniform

NB_SPEC = "models/examples/negative_binomial_prior.py:prior"
TAIL_MASS = 1e-12
ATOL = 1e-10  # numerical agreement of two exact computations
Z_MAX = 4.0
RHAT_MAX = 1.01
ESS_MIN = 1000
#: A three-level case with a moderately informative release (posterior near 0.3).
H3 = {"rhos": [0.3, 0.2, 0.1], "siblings": [5, 3], "p": 0.4, "known": 1}
H3_RELEASE = ([1, 4, 9], [3, 5])


# -- brute force ------------------------------------------------------------------------------


def log_weight_reference(spec, upper, lower):
    """log w(upper | lower) written out independently of models.priors."""
    if spec == "improper":
        return np.where(upper >= lower, 0.0, -np.inf)
    if spec.startswith("truncated:"):
        top = int(spec.split(":")[1])
        inside = (upper >= lower) & (upper <= top)
        with np.errstate(divide="ignore"):
            return np.where(inside, -np.log(np.maximum(top - lower + 1, 1)), -np.inf)
    if spec.startswith("point:"):
        k = int(spec.split(":")[1])
        return np.where((upper == k) & (lower <= k), 0.0, -np.inf)
    if spec == NB_SPEC:  # X_l - X_(l-1) ~ NegativeBinomial(mean 5, alpha 2)
        gap = upper - lower
        with np.errstate(divide="ignore"):
            return np.where(gap >= 0, nbinom.logpmf(np.maximum(gap, 0), 2.0, 2.0 / 7.0), -np.inf)
    raise AssertionError(spec)


def brute_force(x_stars, y_stars, rhos, siblings, p, known, priors, n_values):
    """Joint posterior on {m, m+1} x [m, m + n)^(h-1) by direct summation.

    Returns P[X1 = m+1 | D], the level marginals on [m, m + n) and the largest posterior mass
    on the outer edge of the grid (to show the grid is wide enough).
    """
    h = len(rhos)
    priors = [priors] * (h - 1) if isinstance(priors, str) else list(priors)
    axes = [known + np.arange(2)] + [known + np.arange(n_values)] * (h - 1)
    grids = np.meshgrid(*axes, indexing="ij")
    log_joint = np.where(grids[0] == known + 1, math.log(p), math.log1p(-p))
    for i in range(h):
        log_joint = log_joint - rhos[i] * (x_stars[i] - grids[i]) ** 2
    for i in range(1, h):
        gap = grids[i] - grids[i - 1]
        log_joint = log_joint - rhos[i - 1] / siblings[i - 1] * (y_stars[i - 1] - gap) ** 2
        log_joint = log_joint + log_weight_reference(priors[i - 1], grids[i], grids[i - 1])
    joint = np.exp(log_joint - logsumexp(log_joint))
    marginals = [joint.sum(tuple(j for j in range(h) if j != i)) for i in range(h)]
    edge = max(float(m[-1]) for m in marginals[1:])
    return float(marginals[0][1]), marginals, edge


# -- h = 2 equals the two-level enumeration ----------------------------------------------------


@pytest.mark.parametrize("prior", ["improper", "truncated:12", "point:3", NB_SPEC])
def test_two_levels_equal_two_level_exact(prior):
    rng = np.random.default_rng(7)
    n = 40
    x1 = rng.integers(-6, 9, n)
    x2 = rng.integers(-6, 16, n)
    y1 = rng.integers(-25, 35, n)
    rho1, rho2 = RHO_BLOCK, RHO_BLOCK_GROUP
    ref = exact_posterior(x1, x2, y1, rho1=rho1, rho2=rho2, d=27, p=0.3, known=1, prior=prior)
    got = ml.exact_posterior(
        np.stack([x1, x2], -1), y1[:, None], rhos=[rho1, rho2], siblings=[27], p=0.3, known=1,
        prior=prior,
    )
    np.testing.assert_allclose(got.prob_x1, ref.prob_x1, rtol=0, atol=ATOL)
    k2 = np.arange(-10, 120)[:, None]
    np.testing.assert_allclose(got.level_pmf_at(2, k2), ref.x2_pmf_at(k2), rtol=0, atol=ATOL)
    assert np.all(got.neglected_mass < TAIL_MASS)


# -- h = 3, 4 against brute force --------------------------------------------------------------

H3_CASES = [
    # (x_stars, y_stars, priors)
    ([1, 4, 9], [3, 5], "improper"),
    ([0, 0, 0], [0, 0], "improper"),
    ([-3, 20, 10], [-5, 40], "improper"),  # conflicting release
    ([0, 60, 0], [0, 0], "improper"),  # X3 >= X2 binds: the first windows are too narrow
    ([2, 6, 11], [4, 6], "truncated:15"),
    ([2, 6, 11], [4, 6], ["improper", "point:9"]),
    ([0, 1, 0], [2, 1], ["improper", "point:40"]),  # point mass far from the data
    ([3, 8, 15], [5, 7], ["truncated:20", NB_SPEC]),
    ([1, 5, 12], [4, 6], NB_SPEC),
]


@pytest.mark.parametrize(("x_stars", "y_stars", "priors"), H3_CASES)
def test_three_levels_match_brute_force(x_stars, y_stars, priors):
    post = ml.exact_posterior(x_stars, y_stars, **H3, prior=priors)
    n_values = 70
    prob, marginals, edge = brute_force(
        x_stars, y_stars, H3["rhos"], H3["siblings"], H3["p"], H3["known"], priors, n_values
    )
    assert edge < 1e-14, "brute-force grid too narrow"
    assert abs(float(post.prob_x1) - prob) < ATOL
    k = H3["known"] + np.arange(n_values)
    for level in (2, 3):
        np.testing.assert_allclose(post.level_pmf_at(level, k), marginals[level - 1], atol=ATOL)
    assert float(post.neglected_mass) < TAIL_MASS


def test_four_levels_match_brute_force():
    rhos, siblings = [0.5, 0.4, 0.3, 0.25], [3, 2, 4]
    x_stars, y_stars = [1, 3, 6, 12], [2, 3, 5]
    post = ml.exact_posterior(x_stars, y_stars, rhos=rhos, siblings=siblings, p=0.5, known=0)
    prob, marginals, edge = brute_force(x_stars, y_stars, rhos, siblings, 0.5, 0, "improper", 40)
    assert edge < 1e-14
    assert abs(float(post.prob_x1) - prob) < ATOL
    k = np.arange(40)
    for level in (2, 3, 4):
        np.testing.assert_allclose(post.level_pmf_at(level, k), marginals[level - 1], atol=ATOL)
    for level in (2, 3, 4):
        mean = (k * marginals[level - 1]).sum()
        assert abs(float(post.level_mean(level)) - mean) < 1e-9


def test_impossible_branch_gives_zero_posterior():
    # point:0 at level 2 with known = 0: X2 = 0 forces X1 = 0.
    params = {**H3, "known": 0}
    post = ml.exact_posterior([3, 1, 5], [0, 4], **params, prior=["point:0", "improper"])
    assert float(post.prob_x1) == 0.0
    np.testing.assert_allclose(post.level_pmf_at(2, 0), 1.0)


def test_vectorised_matches_one_release_at_a_time():
    rng = np.random.default_rng(3)
    xs = rng.integers(-2, 12, (6, 2, 3))
    ys = rng.integers(-5, 15, (6, 2, 2))
    batch = ml.exact_posterior(xs, ys, **H3)
    assert batch.prob_x1.shape == (6, 2)
    for index in np.ndindex(6, 2):
        one = ml.exact_posterior(xs[index], ys[index], **H3)
        assert abs(float(one.prob_x1) - batch.prob_x1[index]) < 1e-13
        k = np.arange(-5, 60)
        for level in (2, 3):
            batch_pmf = batch.level_pmf_at(level, k[:, None, None])[:, index[0], index[1]]
            np.testing.assert_allclose(batch_pmf, one.level_pmf_at(level, k), atol=1e-13)


def test_census_six_levels_neglected_mass_and_normalisation():
    rng = np.random.default_rng(11)
    xs = rng.integers(0, 30, (50, 6)) + np.array([0, 0, 5, 50, 500, 5000])
    ys = rng.integers(0, 60, (50, 5))
    post = ml.exact_posterior(xs, ys, rhos=census_rhos(6), siblings=[27, 2, 25, 61, 50])
    assert np.all(post.neglected_mass < TAIL_MASS)
    for pmf in post.level_pmf:
        np.testing.assert_allclose(pmf.sum(-1), 1.0, atol=1e-12)
    assert np.all((post.prob_x1 > 0) & (post.prob_x1 < 1))


def test_grid_too_narrow_raises(monkeypatch):
    # This release needs wider windows than the first ones (38 values at level 3).
    monkeypatch.setattr(nested_box, "MAX_WIDTH", 40)
    with pytest.raises(GridTooNarrowError, match="tail_mass"):
        ml.exact_posterior([0, 60, 0], [0, 0], **H3)
    with pytest.raises(GridTooNarrowError, match="tail_mass"):
        ml.gibbs_sample([0, 60, 0], [0, 0], **H3)


# -- cost: linear in h ---------------------------------------------------------------------------


class CountingPrior(ImproperUniform):
    """The improper uniform prior, counting the pairwise cells it is evaluated on."""

    def __init__(self):
        self.cells = 0

    def log_weight(self, k2, k1):
        out = super().log_weight(k2, k1)
        self.cells += out.size
        return out

    __eq__ = object.__eq__
    __hash__ = object.__hash__


def test_pairwise_factor_evaluations_grow_linearly_in_h():
    # h = 2 is the two-level enumeration (one prior evaluation per cell of its k2 window);
    # forward-backward runs from h = 3 on.
    prior = CountingPrior()
    post = ml.exact_posterior([3, 3], [10], rhos=[0.2] * 2, siblings=[5], prior=prior)
    assert prior.cells == int(post.pairwise_cells)
    counts = []
    for h in range(3, 10):
        prior = CountingPrior()
        post = ml.exact_posterior([3] * h, [10] * (h - 1), rhos=[0.2] * h,
                                  siblings=[5] * (h - 1), prior=prior)
        assert prior.cells == int(post.pairwise_cells)  # one evaluation per pairwise cell
        widths = [pmf.shape[-1] for pmf in post.level_pmf]
        counts.append((prior.cells, max(widths)))
    cells = np.array([c for c, _ in counts])
    widest = max(w for _, w in counts)
    # Window widths do not grow with h, so each added level adds a bounded number of cells:
    assert widest == counts[0][1]
    increments = np.diff(cells)
    assert np.all(increments <= widest**2)
    # ... and with identical levels every added level costs the same (exactly linear).
    assert np.all(increments[2:] == increments[2])
    # A joint table (no chain structure) would need prod(W) cells: exponential in h.
    assert cells[-1] < 8 * widest**2


# -- Gibbs sampler -------------------------------------------------------------------------------


def mcse_floor(draws: np.ndarray, exact_sd: float) -> float:
    return max(float(arviz_stats.mcse(draws.astype(float))), exact_sd / math.sqrt(draws.size))


def assert_close(draws, exact_mean, exact_sd, label):
    se = mcse_floor(draws, exact_sd)
    est = float(draws.mean())
    assert abs(est - exact_mean) <= Z_MAX * se, f"{label}: {est} vs exact {exact_mean} (se {se})"


def _h3_gibbs(priors):
    return ml.gibbs_sample(*H3_RELEASE, **H3, prior=priors, draws=10_000, chains=4,
                           random_seed=5)


@pytest.fixture(scope="module")
def h3_gibbs_improper():
    """One 4 x 10,000-draw Gibbs run of H3 (improper prior), shared by the level-mean and the
    top-level pmf checks (each check's tolerance is its own MCSE of these draws)."""
    return _h3_gibbs("improper")


@pytest.mark.parametrize("priors", ["improper", ["truncated:15", NB_SPEC]])
def test_gibbs_matches_exact(priors, h3_gibbs_improper):
    post = ml.exact_posterior(*H3_RELEASE, **H3, prior=priors)
    samples = h3_gibbs_improper if priors == "improper" else _h3_gibbs(priors)
    assert samples.x.shape == (3, 4, 10_000)
    prob = float(post.prob_x1)
    assert_close(samples.target, prob, math.sqrt(prob * (1 - prob)), "P[X1 = m+1]")
    for level in (2, 3):
        x = samples.level(level)
        assert_close(x, float(post.level_mean(level)), float(post.level_sd(level)), f"X{level}")
        assert float(arviz_stats.rhat(x.astype(float))) < RHAT_MAX
        assert float(arviz_stats.ess(x.astype(float))) > ESS_MIN
    # Every draw satisfies the chain's support constraint X_l >= X_(l-1).
    assert np.all(np.diff(samples.x, axis=0) >= 0)
    assert set(np.unique(samples.x[0])) <= {H3["known"], H3["known"] + 1}


def test_gibbs_pmf_of_top_level_matches_exact(h3_gibbs_improper):
    """On the level-mean check's draws (its own run at seed 8 before issue 36)."""
    post = ml.exact_posterior(*H3_RELEASE, **H3)
    samples = h3_gibbs_improper
    x3 = samples.level(3)
    for k in (6, 9, 12):
        q = float(post.level_pmf_at(3, k))
        assert_close((x3 == k).astype(float), q, math.sqrt(q * (1 - q)), f"P[X3 = {k}]")


def test_gibbs_spread_of_each_level_matches_exact(h3_gibbs_improper):
    """The posterior variance of X2 and X3, not only their means: a conditional with the
    wrong precision (every X_l | neighbours table tempered by 0.95, a 5 % error in rho) leaves
    the means but widens the levels. E[(X_l - mu_l)^2] against the exact variance, within
    Z_MAX MCSE of the squared deviations (floored at their exact sd / sqrt(draws), with the
    fourth central moment from the exact level pmf)."""
    post = ml.exact_posterior(*H3_RELEASE, **H3)
    for level in (2, 3):
        values = np.asarray(post.level_values(level), dtype=float)
        pmf = np.asarray(post.level_pmf[level - 1])
        mu = float(post.level_mean(level))
        var = float((pmf * (values - mu) ** 2).sum())
        fourth = float((pmf * (values - mu) ** 4).sum())
        squared = (h3_gibbs_improper.level(level) - mu) ** 2.0
        assert_close(squared, var, math.sqrt(fourth - var**2), f"Var X{level}")


def test_gibbs_is_reproducible_and_seeded():
    a = ml.gibbs_sample(*H3_RELEASE, **H3, draws=200, chains=3, random_seed=1)
    b = ml.gibbs_sample(*H3_RELEASE, **H3, draws=200, chains=3,
                        random_seed=np.random.default_rng(1))
    c = ml.gibbs_sample(*H3_RELEASE, **H3, draws=200, chains=3, random_seed=2)
    np.testing.assert_array_equal(a.x, b.x)
    assert not np.array_equal(a.x, c.x)


def test_gibbs_reports_the_seed_it_drew():
    """Without a seed the run draws one and reports it (before: no seed anywhere, the draws
    could not be reproduced); the DataTree records it; a Generator reports none."""
    a = ml.gibbs_sample(*H3_RELEASE, **H3, draws=50, chains=2)
    assert isinstance(a.random_seed, int) and a.random_seed >= 0
    again = ml.gibbs_sample(*H3_RELEASE, **H3, draws=50, chains=2, random_seed=a.random_seed)
    np.testing.assert_array_equal(a.x, again.x)
    assert again.random_seed == a.random_seed
    assert nested_gibbs.to_datatree(a)["posterior"].attrs["random_seed"] == a.random_seed
    generator = np.random.default_rng(1)
    b = ml.gibbs_sample(*H3_RELEASE, **H3, draws=50, chains=2, random_seed=generator)
    assert b.random_seed is None
    assert "random_seed" not in nested_gibbs.to_datatree(b)["posterior"].attrs


def test_summary_records_the_seed_of_its_draws(monkeypatch):
    """The h-level summary (``dprisk posterior --rhos ... --save-draws``) records its seed in
    the draws' posterior group, as the two-level form does: before, neither a given nor a
    missing seed was recorded (a saved file could not be rerun) and without one the run was
    unseeded. The Gibbs run without a seed replays from the recorded one; PyMC's seed is read
    from a spy standing in for ``pm.sample`` (its draws are ``pm.sample``'s, tested below)."""
    kwargs = {"x_stars": H3_RELEASE[0], "y_stars": H3_RELEASE[1], **H3, "draws": 50,
              "chains": 2}
    drawn = ml.summarize_posterior(**kwargs, method="gibbs")
    seed = drawn.result["posterior"].attrs["random_seed"]
    assert isinstance(seed, int) and seed >= 0
    again = ml.summarize_posterior(**kwargs, method="gibbs", random_seed=seed)
    assert again.result["posterior"].attrs["random_seed"] == seed
    for name in ("X1", "X2", "X3"):
        np.testing.assert_array_equal(drawn.result["posterior"][name].values,
                                      again.result["posterior"][name].values)
    given = ml.summarize_posterior(**kwargs, method="gibbs", random_seed=7)
    assert given.result["posterior"].attrs["random_seed"] == 7
    generator = ml.summarize_posterior(**kwargs, method="gibbs",
                                       random_seed=np.random.default_rng(7))
    assert "random_seed" not in generator.result["posterior"].attrs
    unseeded = _spied_sample_calls(monkeypatch, random_seed=None)["random_seed"]
    assert isinstance(unseeded, int) and unseeded >= 0


def test_gibbs_point_mass_level_is_constant():
    samples = ml.gibbs_sample([2, 6, 11], [4, 6], **H3, prior=["improper", "point:9"],
                              draws=500, chains=2, random_seed=0)
    assert np.all(samples.level(3) == 9)


def test_to_datatree_has_one_variable_per_level():
    samples = ml.gibbs_sample(*H3_RELEASE, **H3, draws=50, chains=2, random_seed=0)
    tree = ml.to_datatree(samples, attrs={"h": 3})
    posterior = tree["posterior"]
    assert set(posterior.data_vars) == {"X1", "X2", "X3"}
    assert posterior["X2"].dims == ("chain", "draw")
    np.testing.assert_array_equal(posterior["X3"].values, samples.level(3))
    assert posterior.attrs["h"] == 3


# -- the three methods agree (h = 3) -------------------------------------------------------------


#: PyMC's tuning iterations per chain in the agreement check: 500 instead of pm.sample's 1000
#: (a sixth of its 4 x 3000 iterations). Metropolis adapts its proposal scale every 100 tuning
#: steps; measured over seeds 4-7 (4 chains x 2000 draws), the ESS of X2 and X3 is 1290-1780 at
#: tune = 500 against 1315-1660 at tune = 1000 (MCSE within 5 %), but 740-1150 at tune = 200
#: (MCSE 20-25 % larger): 500 keeps the check's power, which ESS_MIN below guards.
AGREEMENT_TUNE = 500
#: PyMC's draws per chain in the agreement check (4 chains): 1000. The tolerance is Z_MAX of the
#: check's own MCSE, so fewer draws widen it as 1/sqrt(draws) and the check stays calibrated;
#: at seed 4 the bulk ESS of X2 and X3 is 779 and 720 (2000 draws: 1783 and 1438), X3's MCSE
#: 0.066 (0.047), so a bias of 0.26 in X3's posterior mean (0.19 before) still fails. The
#: 1,000 fewer draws per chain save 40 % of the test's CPU (2.5 of 6.3 s).
AGREEMENT_DRAWS = 1_000
#: The bulk ESS each PyMC level must reach at AGREEMENT_DRAWS (720-779 measured at seed 4): half
#: of ESS_MIN, as the draws are half of what ESS_MIN was set for.
AGREEMENT_PYMC_ESS_MIN = 500


@pytest.mark.parametrize(("pymc_chains", "pymc_ess_min"), [
    # 4 chains: the check at full power (make bench)
    pytest.param(4, AGREEMENT_PYMC_ESS_MIN, marks=pytest.mark.slow),
    # 2 chains (half the PyMC sampling, the default run): the tolerance is Z_MAX of the
    # run's own MCSE, about sqrt(2) wider (X3's 0.094 at seed 4, so a bias of 0.38 in X3's
    # mean still fails); the bulk ESS needed is halved with the draws (measured at seeds 4-6:
    # 286-394 for X2 and X3, 2500-2800 for X1; R-hat <= 1.01)
    (2, AGREEMENT_PYMC_ESS_MIN // 2),
])
def test_exact_gibbs_and_pymc_agree_for_three_levels(pymc_chains, pymc_ess_min):
    """Each sampler's level means within Z_MAX of their MCSE of the exact means, R-hat < 1.02,
    bulk ESS >= ESS_MIN (pymc_ess_min for PyMC; at 4 chains X1's MCSE about 0.0065, X2's
    0.044, X3's 0.066 for PyMC)."""
    kwargs = {"rhos": H3["rhos"], "siblings": H3["siblings"], "x_stars": H3_RELEASE[0],
              "y_stars": H3_RELEASE[1], "p": H3["p"], "known": H3["known"]}
    exact = ml.posterior_summary(**kwargs, method="exact")
    gibbs = ml.posterior_summary(**kwargs, method="gibbs", draws=10_000, random_seed=4)
    pymc = ml.posterior_summary(**kwargs, method="pymc", draws=AGREEMENT_DRAWS,
                                chains=pymc_chains, tune=AGREEMENT_TUNE, random_seed=4)
    prob = exact["posterior"]
    for result in (gibbs, pymc):
        assert result["method"] in {"gibbs", "pymc"}
        se = result["level_posteriors"]["1"]["mcse_mean"]
        assert abs(result["posterior"] - prob) <= Z_MAX * se, (result["method"], prob)
        for level in ("1", "2", "3"):
            stats = result["level_posteriors"][level]
            assert stats["r_hat"] < 1.02
            ess_min = ESS_MIN if result["method"] == "gibbs" else pymc_ess_min
            assert stats["ess_bulk"] >= ess_min, (result["method"], level, stats["ess_bulk"])
            assert abs(stats["mean"] - exact["level_posteriors"][level]["mean"]) <= (
                Z_MAX * stats["mcse_mean"]
            ), (result["method"], level)
    joint_se = math.hypot(gibbs["level_posteriors"]["1"]["mcse_mean"],
                          pymc["level_posteriors"]["1"]["mcse_mean"])
    assert abs(gibbs["posterior"] - pymc["posterior"]) <= Z_MAX * joint_se


# -- PyMC's tune ---------------------------------------------------------------------------------


#: A cheap PyMC case (h = 2) for the tune checks.
TUNE_CASE = {"x_stars": [1, 2], "y_stars": [1], "rhos": [0.1, 0.25], "siblings": [3],
             "method": "pymc", "draws": 20, "chains": 1, "random_seed": 9}


def _spied_sample_calls(monkeypatch, **extra):
    """The keyword arguments :func:`ml.summarize_posterior` hands to ``pm.sample`` (a spy
    standing in for it, so nothing is compiled or sampled)."""
    import pymc as pm

    class Sampled(Exception):
        pass

    calls = []

    def spy(**sample_kwargs):
        calls.append(sample_kwargs)
        raise Sampled

    with monkeypatch.context() as patch:
        patch.setattr(pm, "sample", spy)
        with pytest.raises(Sampled):
            ml.summarize_posterior(**{**TUNE_CASE, **extra})
    assert len(calls) == 1
    return calls[0]


def test_pymc_tune_default_is_pm_sample_s_and_a_given_tune_is_passed_down(monkeypatch):
    """The default hands ``pm.sample`` its own default ``tune`` (what the method ran before it
    took ``tune``) with the release's model, seed, draws and chains; ``tune=7`` reaches
    ``pm.sample`` as ``tune=7``. A spy stands in for ``pm.sample``: compiling and sampling a
    model costs 1.5-2 s of CPU and would only show that ``pm.sample`` is deterministic given
    its arguments; the draws themselves are compared bit for bit with ``pm.sample``'s in the
    slow twin below."""
    import pymc as pm

    default = _spied_sample_calls(monkeypatch)
    # pm.sample's tune=None is its step methods' default steps, 1000 where a method sets none;
    # the X's are integers, which PyMC steps with Metropolis (setting none)
    assert getattr(pm.Metropolis, "default_tune_steps", None) in (None, 1000)
    assert default["tune"] == 1000
    assert (default["draws"], default["chains"], default["random_seed"]) == (20, 1, 9)
    model = default["model"]
    assert isinstance(model, pm.Model)
    assert {"X1", "X2"} <= set(model.named_vars)
    given = _spied_sample_calls(monkeypatch, tune=7)
    assert (given["tune"], given["draws"], given["chains"], given["random_seed"]) == (
        7, 20, 1, 9)


@pytest.mark.slow
def test_pymc_tune_default_gives_pm_sample_s_draws_bit_for_bit():
    """The default's draws are those ``pm.sample`` gives without ``tune`` on the same model,
    bit for bit (slow: two compiled models and two samplings; the default run checks the
    arguments handed to ``pm.sample`` instead)."""
    import pymc as pm

    from dprisk.models.builders.nested import build_nested_model

    default = ml.summarize_posterior(**TUNE_CASE)
    model = build_nested_model(default.release.x_stars, default.release.y_stars,
                               scenario=default.scenario)
    with np.errstate(over="ignore"):
        reference = pm.sample(draws=20, chains=1, cores=1, random_seed=9, model=model,
                              progressbar=False, quiet=True,
                              compute_convergence_checks=False)["posterior"]
    for name in ("X1", "X2"):
        np.testing.assert_array_equal(default.result["posterior"][name].values,
                                      reference[name].values)


@pytest.mark.parametrize(("tune", "error"), [
    (-1, ValueError), (1.5, ValueError), (2**53 + 1, ValueError), (math.nan, ValueError),
    (True, TypeError), ("200", TypeError)])
def test_pymc_bad_tune_is_refused_naming_tune(tune, error):
    with pytest.raises(error, match=r"^tune must be an integer >= 0"):
        ml.posterior_summary(x_stars=H3_RELEASE[0], y_stars=H3_RELEASE[1], **H3, method="pymc",
                             draws=10, chains=1, tune=tune, random_seed=1)


# -- summary and command-line helpers ------------------------------------------------------------


def test_posterior_summary_exact_fields():
    out = ml.posterior_summary(rhos=H3["rhos"], siblings=H3["siblings"], x_stars=[1, 4, 9],
                               y_stars=[3, 5], p=0.4, known=1)
    assert set(out) == {"posterior", "risk", "level_posteriors", "method"}
    post = ml.exact_posterior(*H3_RELEASE, **H3)
    assert out["posterior"] == pytest.approx(float(post.prob_x1), abs=1e-15)
    assert out["risk"] == pytest.approx(out["posterior"] / 0.4)
    assert set(out["level_posteriors"]) == {"1", "2", "3"}
    level3 = out["level_posteriors"]["3"]
    assert level3["mean"] == pytest.approx(float(post.level_mean(3)))
    assert level3["q025"] <= level3["median"] <= level3["q975"]
    assert out["level_posteriors"]["1"]["mean"] == pytest.approx(1 + out["posterior"])


def test_posterior_summary_rejects_unknown_method():
    with pytest.raises(ValueError, match="method must be one of exact, gibbs, pymc"):
        ml.posterior_summary(rhos=[0.1, 0.2], siblings=[2], x_stars=[0, 0], y_stars=[0],
                             method="mcmc")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rhos": [0.1]}, "rhos must have at least 2 entries"),
        ({"rhos": [0.1, 0.2, 0.3]}, r"siblings must have h - 1 = 2 entries"),
        ({"siblings": [0]}, "d_2"),
        ({"siblings": [1.5]}, "d_2"),
        ({"rhos": [0.1, 0.0]}, "rho_2"),
        ({"p": 1.0}, "p must be a probability"),
        ({"known": -1}, "known"),
        ({"x_stars": [1, 2, 3]}, "x_stars must have h = 2 entries"),
        ({"y_stars": [1, 2]}, r"y_stars must have h - 1 = 1 entries"),
        ({"x_stars": [1, 2.5]}, "x_stars must be an integer"),
        ({"prior": ["improper", "improper"]}, r"prior must be one prior or a list of h - 1 = 1"),
        ({"prior": "uniform"}, "prior 'uniform'"),
        ({"prior": "truncated:0", "known": 0}, "truncated:0"),
        ({"tail_mass": 0.0}, "tail_mass"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, match):
    base = {"x_stars": [1, 2], "y_stars": [0], "rhos": [0.1, 0.2], "siblings": [3]}
    args = {**base, **kwargs}
    with pytest.raises(ValueError, match=match):
        ml.exact_posterior(args.pop("x_stars"), args.pop("y_stars"), **args)


def test_no_possible_chain_is_an_error():
    # X2 >= X1 >= known = 2, but the level-3 prior puts X3 = 1 < X2.
    with pytest.raises(ValueError, match="no possible"):
        ml.exact_posterior([2, 3, 4], [0, 0], rhos=[0.1, 0.2, 0.3], siblings=[2, 2], known=2,
                           prior=["improper", "point:1"])


def test_gibbs_takes_one_release():
    with pytest.raises(ValueError, match="one release"):
        ml.gibbs_sample([[1, 4, 9], [1, 4, 9]], [3, 5], **H3)


def test_gibbs_without_stored_tables_gives_the_same_draws(monkeypatch):
    stored = ml.gibbs_sample(*H3_RELEASE, **H3, draws=300, chains=3, random_seed=6)
    # conditionals recomputed every sweep
    monkeypatch.setattr(nested_gibbs, "MAX_TABLE_CELLS", 1)
    recomputed = ml.gibbs_sample(*H3_RELEASE, **H3, draws=300, chains=3, random_seed=6)
    np.testing.assert_array_equal(stored.x, recomputed.x)


# -- h = 2: the nested form is computed by the two-level code -----------------------------------


def test_two_level_nested_summary_matches_the_two_level_form():
    from dprisk.inference.two_level.sampling import posterior_summary as two_level_summary

    rho1, rho2 = census_rhos(2)
    params = {"p": 0.3, "known": 1, "prior": "truncated:40"}
    nested = ml.posterior_summary(rhos=[rho1, rho2], siblings=[27], x_stars=[3, 4],
                                  y_stars=[-2], **params)
    flat = two_level_summary(3, 4, -2, rho1=rho1, rho2=rho2, d=27, **params)
    assert set(nested) == {"posterior", "risk", "level_posteriors", "method"}
    assert nested["posterior"] == flat["posterior"] and nested["risk"] == flat["risk"]
    x2_mean = sum(int(k) * mass for k, mass in flat["x2_posterior"].items())
    assert nested["level_posteriors"]["2"]["mean"] == pytest.approx(x2_mean, abs=1e-9)
    assert nested["level_posteriors"]["1"]["mean"] == pytest.approx(1 + flat["posterior"])
    gibbs = ml.posterior_summary(rhos=[rho1, rho2], siblings=[27], x_stars=[3, 4],
                                 y_stars=[-2], **params, method="gibbs", draws=5000,
                                 random_seed=3)
    se = gibbs["level_posteriors"]["1"]["mcse_mean"]
    assert abs(gibbs["posterior"] - flat["posterior"]) <= Z_MAX * se
    stats2 = gibbs["level_posteriors"]["2"]
    assert abs(stats2["mean"] - x2_mean) <= Z_MAX * stats2["mcse_mean"]


def test_scalar_results_are_python_floats():
    post = ml.exact_posterior(*H3_RELEASE, **H3)
    assert type(post.prob_x1) is float and round(post.prob_x1, 5) == round(post.prob_x1, 5)
    two = ml.exact_posterior([1, 4], [3], rhos=[0.3, 0.2], siblings=[5])
    assert type(two.prob_x1) is float


def _quadratic_prior(coefficient, log_weight_max):
    """An improper user prior of log weights ``coefficient (k2 - k1)^2``."""
    import pytensor.tensor as pt

    from dprisk.models.priors.library import UserPrior

    def quadratic(k2, k1):
        return np.float64(coefficient) * pt.cast(k2 - k1, "float64") ** 2

    quadratic.__name__ = "growing" if coefficient > 0 else "decaying"
    return UserPrior(quadratic, is_proper=False, log_weight_max=log_weight_max)


def _quadratic_prior_file(tmp_path, coefficient):
    """``FILE:prior`` of :func:`_quadratic_prior` declaring log_weight_max = 1e6."""
    path = tmp_path / "quadratic.py"
    path.write_text(
        "import numpy as np\nimport pytensor.tensor as pt\n"
        "from dprisk.models.priors.library import UserPrior\n"
        f"prior = UserPrior(lambda k2, k1: np.float64({coefficient!r}) * "
        "pt.cast(k2 - k1, 'float64') ** 2, is_proper=False, log_weight_max=1e6)\n")
    return f"{path}:prior"


def _two_level_argv(spec):
    """``dprisk posterior`` at two levels, rhos 1e-5, the release (1, 3, 2), prior ``spec``."""
    return ["posterior", "--rho1", "1e-5", "--rho2", "1e-5", "--d", "1", "--x1-star", "1",
            "--x2-star", "3", "--y1-star", "2", "--prior", spec]


def _nested_argv(spec, method):
    """``dprisk posterior`` at three levels, rhos 1e-5, prior ``spec``, ``method``."""
    return ["posterior", "--rhos", "1e-5,1e-5,1e-5", "--siblings", "1,1",
            "--stars", "1,3,5,2,2", "--prior", spec, "--method", method]


#: (method, rho) of the refusals at the nested windows' widest: every method at rho = 1e-5
#: (windows of 2512 and 3082 values, about 0.5-1.3 s of CPU a refusal) in ``make bench``
#: (``SLOW_CASES``), and in the default run at rho = 4e-5, where the first windows (1248 and
#: 1532 values) are already the widest, so the same refusal (``box_kernels.too_narrow``) is
#: reached at a quarter of the cells (about 0.15 s). The refusals at rho = 1e-5 stay in the
#: default run through the command line's exact cases below (the same priors, release and
#: rhos through the same ``summarize_posterior``, their messages' words checked as here).
WIDEST_REFUSALS = [("exact", 1e-5), ("gibbs", 1e-5), ("pymc", 1e-5), ("exact", 4e-5),
                   ("gibbs", 4e-5), ("pymc", 4e-5)]
#: The bound the widest windows close per level (``log_weight_max <= ...`` in the refusal)
#: at each rho of :data:`WIDEST_REFUSALS`, measured.
CLOSED_BOUND = {1e-5: "64.9", 4e-5: "64.1"}


@pytest.mark.parametrize(("method", "rho"), WIDEST_REFUSALS)
def test_pymc_refuses_a_prior_the_exact_windows_refuse(method, rho):
    """Log weights 1e-4 (k2 - k1)^2 (log_weight_max = 1e6) pass the 4096-value probe but
    outgrow the likelihood at rho = 1e-5 (and 4e-5): the posterior has no finite mass. Exact
    and Gibbs refuse it; before the fix method="pymc" sampled it and reported
    P[X1 = 1 | D] = 0.004. The refusal is the two-level form's (a ValueError naming the
    prior: its weights pass log_weight_max near k2 - k1 = 1e5, where the bound must reach),
    not the GridTooNarrowError "leave out up to inf" (a RuntimeError, exit status 1 at the
    CLI) reported before."""
    prior = _quadratic_prior(1e-4, log_weight_max=1e6)
    kwargs = {"x_stars": [1, 3, 5], "y_stars": [2, 2], "rhos": [rho] * 3, "siblings": [1, 1],
              "prior": prior}
    with pytest.raises(ValueError, match="log weight is NaN or above log_weight_max"):
        ml.posterior_summary(**kwargs, method=method, draws=20, tune=20, chains=2,
                             random_seed=1)


@pytest.mark.parametrize("method", ["exact", "gibbs"])
def test_cli_refuses_a_prior_without_finite_posterior_mass_as_the_two_level_form(
        method, tmp_path, capsys):
    """``dprisk posterior --rhos ... --prior FILE:NAME`` with weights 1e-4 (k2 - k1)^2: exit
    status 2 and one line naming --prior, as the two-level form (--rho2) refuses the same
    prior; before the fix: "failed: GridTooNarrowError", status 1. The gibbs case is in
    ``make bench`` (``SLOW_CASES``): every method's refusal is checked in the API by
    test_pymc_refuses_a_prior_the_exact_windows_refuse, and the command passes --method to
    the same ``summarize_posterior`` and words its ValueError alike whatever the method."""
    from cli_helpers import assert_refused

    spec = _quadratic_prior_file(tmp_path, 1e-4)
    refusal = assert_refused(_two_level_argv(spec), "--prior", capsys).split("error: ", 1)[1]
    line = assert_refused(_nested_argv(spec, method), "--prior", capsys)
    assert line.split("error: ", 1)[1] == refusal
    assert refusal.startswith(f"--prior {spec!r}: log weight is NaN or above log_weight_max")


def _decaying_prior(log_weight_max):
    """Log weights -1e-4 (k2 - k1)^2 <= 0 (a valid prior), declaring ``log_weight_max``."""
    return _quadratic_prior(-1e-4, log_weight_max)


@pytest.mark.parametrize(("method", "rho"), WIDEST_REFUSALS)
def test_every_method_refuses_a_declared_bound_the_nested_windows_cannot_close(method, rho):
    """A valid prior declaring log_weight_max = 1e6 (its weights are <= 1) at rhos 1e-5: the
    nested windows (3082 values at most here, not widened past 2048) close the tail bound
    only up to log_weight_max = 64.9 per level (measured: 64.925, the tail bound enters as
    exp(2 L) over the two levels; 64.1 at rhos 4e-5). Before the fix every method raised
    GridTooNarrowError "leave out up to inf" (status 1 at the CLI); now a ValueError naming
    the prior and the bound the windows close."""
    kwargs = {"x_stars": [1, 3, 5], "y_stars": [2, 2], "rhos": [rho] * 3, "siblings": [1, 1]}
    closed = CLOSED_BOUND[rho].replace(".", r"\.")
    with pytest.raises(ValueError, match=r"^prior 'user:decaying': log_weight_max = "
                       r"1e\+06 is too loose for the nested-levels windows .*allowed range "
                       rf"here: log_weight_max <= {closed}\); declare a tighter") as err:
        ml.posterior_summary(**kwargs, prior=_decaying_prior(1e6), method=method,
                             draws=20, tune=20, chains=2, random_seed=1)
    assert "\n" not in str(err.value)


#: (rho, the sum of two levels' bounds the windows close) of
#: test_refuses_a_declared_bound_the_nested_windows_cannot_close: rho 4e-5 in the default run
#: (about 0.5 s of CPU), 1e-5 (windows widened past 2048 values, about 2.5 s) in ``make bench``
#: (``SLOW_CASES``).
DECLARED_BOUND_CASES = [(1e-5, "129.8"), (4e-5, "128.3")]


@pytest.mark.parametrize(("rho", "bounds_sum"), DECLARED_BOUND_CASES)
def test_refuses_a_declared_bound_the_nested_windows_cannot_close(rho, bounds_sum):
    """The prior of test_every_method_refuses_a_declared_bound_the_nested_windows_cannot_close
    at rhos ``rho``: at log_weight_max = CLOSED_BOUND[rho] (just under the bound the windows
    close) the answer is the one of the default bound 0 to the 1e-9 the exact method is checked
    to, and priors differing per level are refused by the sum of their bounds."""
    kwargs = {"x_stars": [1, 3, 5], "y_stars": [2, 2], "rhos": [rho] * 3, "siblings": [1, 1]}
    tight = ml.exact_posterior(**kwargs, prior=_decaying_prior(float(CLOSED_BOUND[rho])))
    default = ml.exact_posterior(**kwargs, prior=_decaying_prior(0.0)).prob_x1
    assert tight.prob_x1 == pytest.approx(default, abs=1e-9)
    # Different priors per level: the sum of their bounds is what the windows close.
    summed = bounds_sum.replace(".", r"\.")
    with pytest.raises(ValueError, match=rf"log_weight_max summing to at most {summed}\)"):
        ml.exact_posterior(**kwargs, prior=[_decaying_prior(1e6), _decaying_prior(3.0)])


def test_too_narrow_message_states_widths_consistently():
    """The too-narrow message listed widths [2, 2512, 3082] and said "windows cannot grow
    beyond 2048 values per level": the initial windows may pass 2048; only their widening
    (doubling) stops there."""
    from dprisk.inference.nested import box_kernels as bk

    scenario = ml.nested_scenario(None, rhos=[1e-5] * 3, siblings=[1, 1], prior="improper")
    xs, ys = np.array([[1, 3, 5]]), np.array([[2, 2]])
    box = bk.Box(xs, ys, scenario, 0, 1e-12)
    assert box.width == [2, 2512, 3082] and bk.at_widest(box)
    message = str(bk.too_narrow(box, 0, xs[0], ys[0], 1e-12))
    assert "cannot grow beyond" not in message
    assert message.endswith("windows are widened (doubled) only up to 2048 values per level, "
                            "and doubling the widest (3082 values) would pass that")


@pytest.mark.parametrize("method", ["exact", "gibbs", "pymc"])
def test_cli_refuses_a_declared_bound_the_nested_windows_cannot_close(method, tmp_path, capsys):
    """``dprisk posterior --rhos 1e-5,1e-5,1e-5 --prior FILE:NAME`` with a valid prior
    declaring log_weight_max = 1e6: exit status 2, one line naming --prior and the bound the
    windows close, nothing on stdout (before the fix: "failed: GridTooNarrowError ... leave out
    up to inf", status 1). The two-level form answers the same prior (posterior 0.499758).
    The gibbs and pymc cases are in ``make bench`` (``SLOW_CASES``): every method's refusal
    is checked in the API by test_every_method_refuses_a_declared_bound_the_nested_windows_
    cannot_close, and the command line passes --method to the same
    ``summarize_posterior`` and words its ValueError alike whatever the method."""
    from cli_helpers import assert_refused, run_cli

    spec = _quadratic_prior_file(tmp_path, -1e-4)
    status, out, err = run_cli(_two_level_argv(spec), capsys)
    assert status == 0 and "0.499758" in out, err
    line = assert_refused(_nested_argv(spec, method), "--prior", capsys)
    refusal = line.split("error: ", 1)[1]
    assert re.match(rf"{re.escape(repr(spec))}: log_weight_max = 1e\+06 is too loose for the "
                    r"nested-levels windows .*allowed range here: log_weight_max <= 64\.9\); "
                    "declare a tighter", refusal.removeprefix("--prior ")), refusal
    assert "larger rhos" in refusal and "\n" not in refusal


@pytest.mark.parametrize("method", ["gibbs", "pymc"])
def test_chains_stuck_at_their_start_are_not_called_converged(method):
    """``X2 - X1 = 3`` known at the first level: no sampler leaves its X1. PyMC (every chain
    from X1 = 1) reported 1.0 "converged" against the exact 0.498; Gibbs (starts uniform on
    {0, 1}) did so when the four starts agreed (seed 4 of 1..6). Chains now start from X1 = 1
    and 0 in turn."""
    import pytensor.tensor as pt

    from dprisk.models.priors.library import UserPrior

    known_y1 = UserPrior(lambda k2, k1: pt.zeros_like(k2, dtype="float64"),
                         support=lambda k1: (k1 + 3, k1 + 3), description="X2 - X1 = 3")
    kwargs = {"rhos": [0.3, 0.5, 0.8], "siblings": [3, 2], "prior": [known_y1, "improper"]}
    assert 0.4 < ml.exact_posterior([1, 3, 9], [3, 5], **kwargs).prob_x1 < 0.6
    payload = ml.posterior_summary(x_stars=[1, 3, 9], y_stars=[3, 5], **kwargs, method=method,
                                   draws=200, chains=4, tune=50, random_seed=4)
    assert not payload["verdict"]["converged"], payload["verdict"]
    assert "R-hat of X1" in payload["verdict"]["reason"]


def test_level_spread_and_quantiles_match_brute_force():
    """The exact posterior's sd and quantiles of every level (``level_sd``,
    ``level_quantile`` and ``dprisk posterior --rhos``'s ``level_posteriors``) against the
    brute-force marginals on a 70-value grid (edge mass < 1e-14). Before this test the
    variance in place of the sd, or a quantile one value too high, went unnoticed (the sd
    was only used as a tolerance, the quantiles only checked for their order). The pmfs
    agree to ATOL, so the sd to about 1e-9; quantiles are integers, and no cdf of this
    release lies within 1e-6 of 0.025, 0.5 or 0.975 (checked), so they agree exactly."""
    post = ml.exact_posterior(*H3_RELEASE, **H3)
    out = ml.posterior_summary(rhos=H3["rhos"], siblings=H3["siblings"], x_stars=H3_RELEASE[0],
                               y_stars=H3_RELEASE[1], p=H3["p"], known=H3["known"])
    _, marginals, edge = brute_force(*H3_RELEASE, H3["rhos"], H3["siblings"], H3["p"],
                                     H3["known"], "improper", 70)
    assert edge < 1e-14
    k = H3["known"] + np.arange(70)
    for level in (2, 3):
        pmf = marginals[level - 1]
        mean = float((k * pmf).sum())
        sd = math.sqrt(float((pmf * (k - mean) ** 2).sum()))
        cdf = np.cumsum(pmf)
        stats = out["level_posteriors"][str(level)]
        assert float(post.level_sd(level)) == pytest.approx(sd, abs=1e-9)
        assert stats["sd"] == pytest.approx(sd, abs=1e-9)
        for q, key in ((0.025, "q025"), (0.5, "median"), (0.975, "q975")):
            assert np.min(np.abs(cdf - q)) > 1e-6
            want = int(k[np.argmax(cdf >= q)])
            assert int(post.level_quantile(level, q)) == want
            assert stats[key] == want


def test_one_release_too_much_work_names_the_rhos():
    """One release at rhos = 1e-9 (windows of 3.1e5 and 3.6e5 values, 4.4e12 steps) was
    refused naming 'x_stars, y_stars' (printed as such by 'dprisk posterior --rhos'), which no
    value of the release changes; its windows come from rhos and siblings."""
    with pytest.raises(ValueError, match=r"^rhos, siblings: the level posteriors of 1 release"):
        ml.exact_posterior([1, 1, 1], [0, 0], rhos=[1e-9] * 3, siblings=[2, 2])
