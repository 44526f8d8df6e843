"""Simulation-based calibration (validation.sbc): the pieces, the correct samplers, the broken one.

Thresholds and false alarms:
* a correct sampler passes when every uniformity p-value (chi-square and KS, X1 and X2)
  exceeds P_VALUE_MIN = 0.001. Under the null each such assertion fails with probability
  0.001; the default run makes 5 SBC runs x 4 = 20 of them, so a correct sampler trips the
  file with probability <= 2% for a random seed (the seeds are fixed, so the outcome is
  deterministic; the slow tests add 2 runs);
* the broken sampler (X1 update without k1 <= k2) must give a chi-square p-value on X1 below
  P_VALUE_BROKEN = 1e-6. Under BROKEN_PRIOR (truncated:1, rho1 = rho2 = 0.5, d = 3, p = 1/2)
  the exact detection size (chi-square, 10 groups, L = 99, power 0.99) is about 1,900
  simulations (``test_detection_size_of_the_broken_sampler``); the test uses 3,000;
* the generative process is checked against the prior pmf and the DG variance with
  chi-square goodness of fit (p > 0.001) and 4-standard-error bounds;
* closed forms (the X1 rank pmf) are checked against brute-force enumeration to 1e-13.
"""

import itertools
import math
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure
from scipy import stats
from study_checks import numbers_without_units_in_results

from dprisk.inference.studies.variant import variant_prob_x1, variant_stationary
from dprisk.models.mechanism.discrete_gaussian import variance
from dprisk.models.priors.library import parse_prior
from dprisk.validation.paper.two_level import TABLE3_RELEASE, table3_parameters
from dprisk.validation.report.build import validate_records
from dprisk.validation.sbc.calibration import (
    AUTOCORRELATION_MAX,
    BROKEN_PRIOR,
    DEFAULT_PARAMETERS,
    P_VALUE_BROKEN,
    P_VALUE_MIN,
    SAMPLERS,
    USER_PRIOR,
    VARIABLES,
    SBCBudget,
    SBCConditionals,
    SBCRun,
    detection_size,
    expected_x1_rank_pmf,
    prior_x2_pmf,
    rank_statistics,
    run_sbc,
    simulate_releases,
    study,
    two_block_gibbs_sample,
    uniformity_tests,
    x1_rank_pmf,
)
from dprisk.validation.sbc.figures import rank_histograms
from dprisk.validation.sbc.samplers import validated_params
from dprisk.validation.sbc.study import STUDY_PARTS, study_part

N_SE = 4.0


def assert_calibrated(result):
    for variable in VARIABLES:
        test = result.tests[variable]
        assert test.chi2_p_value > P_VALUE_MIN, (result.label, variable, test)
        assert test.ks_p_value > P_VALUE_MIN, (result.label, variable, test)
        assert test.counts.sum() == result.n_simulations


# --------------------------------------------------------------------------- generative
class TestPriorPmf:
    def test_truncated_uniform(self):
        for k1 in (0, 1):
            k2, pmf = prior_x2_pmf("truncated:10", k1)
            np.testing.assert_array_equal(k2, np.arange(k1, 11))
            np.testing.assert_allclose(pmf, 1.0 / (11 - k1), rtol=1e-15)

    def test_user_prior_is_the_negative_binomial(self):
        """X2 - X1 ~ NB(mean 5, alpha 2) = scipy nbinom(n=2, p=2/7); tail left out < 1e-12."""
        k2, pmf = prior_x2_pmf(USER_PRIOR, 1)
        assert k2[0] == 1
        reference = stats.nbinom.pmf(k2 - 1, 2, 2.0 / 7.0)
        np.testing.assert_allclose(pmf, reference, rtol=1e-10, atol=1e-300)
        assert stats.nbinom.sf(k2[-1] - 1, 2, 2.0 / 7.0) < 1e-12

    @pytest.mark.parametrize("spec", ["improper"])
    def test_improper_prior_rejected(self, spec):
        with pytest.raises(ValueError, match="proper"):
            prior_x2_pmf(spec, 0)


class TestSimulateReleases:
    N = 20_000

    @pytest.fixture(scope="class")
    def sims(self):
        return simulate_releases(self.N, **DEFAULT_PARAMETERS, prior="truncated:10", random_seed=11)

    def test_x1_is_bernoulli_p(self, sims):
        p = DEFAULT_PARAMETERS["p"]
        assert set(np.unique(sims.x1)) == {0, 1}
        assert abs(sims.x1.mean() - p) < N_SE * math.sqrt(p * (1 - p) / self.N)

    def test_x2_given_x1_follows_the_prior(self, sims):
        for k1 in (0, 1):
            k2, pmf = prior_x2_pmf("truncated:10", k1)
            values = sims.x2[sims.x1 == k1]
            counts = np.array([(values == k).sum() for k in k2])
            assert counts.sum() == values.size  # nothing outside the support
            assert stats.chisquare(counts, pmf * values.size).pvalue > 1e-3

    def test_release_noise_is_discrete_gaussian(self, sims):
        rho1, rho2, d = (DEFAULT_PARAMETERS[k] for k in ("rho1", "rho2", "d"))
        for noise, rho in ((sims.x1_star - sims.x1, rho1), (sims.x2_star - sims.x2, rho2),
                           (sims.y1_star - (sims.x2 - sims.x1), rho1 / d)):
            var = float(variance(rho))
            assert abs(noise.mean()) < N_SE * math.sqrt(var / self.N)
            # Var of the sample variance ~ (mu4 - var^2)/N <= 2 var^2 (DG is near-Gaussian).
            assert abs(noise.var() - var) < N_SE * var * math.sqrt(3.0 / self.N)

    def test_user_prior_difference_is_negative_binomial(self):
        sims = simulate_releases(5000, **DEFAULT_PARAMETERS, prior=USER_PRIOR, random_seed=12)
        diff = sims.x2 - sims.x1
        top = 30
        counts = np.bincount(np.minimum(diff, top), minlength=top + 1)
        expected = stats.nbinom.pmf(np.arange(top + 1), 2, 2 / 7)
        expected[-1] = stats.nbinom.sf(top - 1, 2, 2 / 7)
        assert stats.chisquare(counts, expected * diff.size).pvalue > 1e-3

    def test_seeded(self):
        a = simulate_releases(50, **DEFAULT_PARAMETERS, prior="truncated:10", random_seed=3)
        b = simulate_releases(50, **DEFAULT_PARAMETERS, prior="truncated:10", random_seed=3)
        for x, y in zip(a.releases, b.releases, strict=True):
            np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------------- ranks, tests
class TestRanks:
    def test_no_ties_is_the_count_below(self, rng):
        ranks = rank_statistics(np.array([2.5, 0.5]), np.array([[1, 2, 3], [1, 2, 3]]), rng)
        np.testing.assert_array_equal(ranks, [2, 0])

    def test_ties_broken_uniformly(self, rng):
        # truth 1 among (0, 1, 1, 2): one below, two ties -> rank uniform on {1, 2, 3}.
        n = 30_000
        ranks = rank_statistics(np.ones(n), np.tile([0, 1, 1, 2], (n, 1)), rng)
        counts = np.bincount(ranks, minlength=5)
        assert counts[0] == 0 and counts[4] == 0
        assert stats.chisquare(counts[1:4]).pvalue > 1e-3

    def test_exchangeable_discrete_draws_give_uniform_ranks(self, rng):
        """The SBC identity with heavy ties: truth and draws iid Bernoulli(0.3)."""
        n, draws = 20_000, 9
        values = (rng.random((n, draws + 1)) < 0.3).astype(int)
        ranks = rank_statistics(values[:, 0], values[:, 1:], rng)
        assert uniformity_tests(ranks, draws, bins=10, random_seed=rng).p_value > 1e-3
        # without the random tie-breaking the ranks are far from uniform
        below = (values[:, 1:] < values[:, :1]).sum(1)
        assert uniformity_tests(below, draws, bins=10, random_seed=rng).chi2_p_value < 1e-6

    def test_shape_checked(self, rng):
        with pytest.raises(ValueError, match="shape"):
            rank_statistics(np.zeros(3), np.zeros((2, 4)), rng)


class TestUniformityTests:
    def test_uniform_passes_and_spike_fails(self, rng):
        uniform = rng.integers(0, 100, size=2000)
        assert uniformity_tests(uniform, 99, random_seed=rng).p_value > 1e-3
        spiked = np.concatenate([uniform, np.zeros(300, dtype=int)])
        result = uniformity_tests(spiked, 99, random_seed=rng)
        assert result.chi2_p_value < 1e-6 and result.ks_p_value < 1e-6
        assert result.counts.sum() == spiked.size

    def test_chi2_statistic_by_hand(self, rng):
        ranks = np.repeat(np.arange(4), [10, 20, 30, 40])
        result = uniformity_tests(ranks, 3, bins=4, random_seed=rng)
        assert result.chi2 == pytest.approx(sum((c - 25) ** 2 / 25 for c in (10, 20, 30, 40)))

    @pytest.mark.parametrize(("ranks", "bins", "match"), [
        ([0, 1, 2], 3, "divide"), ([0, 100], 10, "0..99"), ([], 10, "non-empty")])
    def test_bad_input(self, ranks, bins, match, rng):
        with pytest.raises(ValueError, match=match):
            uniformity_tests(np.array(ranks, dtype=int), 99, bins=bins, random_seed=rng)


class TestX1RankPmf:
    @staticmethod
    def brute_force(q, s, draws):
        """Enumerate truth (m+1 w.p. q), every draw vector (m+1 w.p. s) and every tie-break."""
        pmf = np.zeros(draws + 1)
        for truth in (0, 1):
            p_truth = q if truth else 1 - q
            for vec in itertools.product((0, 1), repeat=draws):
                prob = p_truth * math.prod(s if v else 1 - s for v in vec)
                below = sum(v < truth for v in vec)
                ties = sum(v == truth for v in vec)
                for extra in range(ties + 1):
                    pmf[below + extra] += prob / (ties + 1)
        return pmf

    def test_matches_enumeration(self):
        q, s = np.array([0.3, 0.8, 0.55]), np.array([0.5, 0.6, 0.55])
        expected = np.mean([self.brute_force(a, b, 4) for a, b in zip(q, s, strict=True)], 0)
        np.testing.assert_allclose(x1_rank_pmf(q, s, 4), expected, atol=1e-13)

    def test_repeated_sampler_probabilities(self, rng):
        """Releases sharing ``s`` (the binomial pmf evaluated once per distinct ``s``), more
        than one block of 4096 releases: the mean of the per-release pmfs (each alone, the
        formula on one release), within 1e-15 (sums of 5000 terms of order 1e-2)."""
        q = rng.random(5000)
        s = rng.choice([0.0, 0.25, 0.6, 0.6 + 1e-12, 1.0], size=5000)
        single = {value: x1_rank_pmf([0.0], [value], 4) for value in np.unique(s)}
        upper = {value: x1_rank_pmf([1.0], [value], 4) for value in np.unique(s)}
        expected = np.mean([a * upper[b] + (1 - a) * single[b] for a, b in
                            zip(q, s, strict=True)], 0)
        np.testing.assert_allclose(x1_rank_pmf(q, s, 4), expected, rtol=0, atol=1e-15)

    def test_correct_sampler_gives_exactly_uniform(self, rng):
        q = rng.random(200)
        np.testing.assert_allclose(x1_rank_pmf(q, q, 99), 1 / 100, atol=1e-13)

    def test_detection_size(self):
        pmf = x1_rank_pmf([0.5], [0.6], 99)
        n = detection_size(pmf, bins=10, alpha=1e-6, power=0.99)
        shares = pmf.reshape(10, -1).sum(1)
        nc = 10 * ((shares - 0.1) ** 2).sum()
        crit = stats.chi2.isf(1e-6, 9)
        assert stats.ncx2.sf(crit, 9, n * nc) >= 0.99 > stats.ncx2.sf(crit, 9, (n - 1) * nc)
        with pytest.raises(ValueError, match="uniform"):
            detection_size(np.full(100, 0.01), bins=10)


# --------------------------------------------------------------------------- broken update
class TestBrokenUpdate:
    def test_equals_the_paper_variant_under_the_improper_prior(self):
        """Under the paper's setting the broken update is validation.two_level_paper's."""
        params = table3_parameters()
        release = [np.array([v]) for v in TABLE3_RELEASE]
        tables = SBCConditionals(release, params, "unconstrained")
        k2 = tables.k2_start[0] + np.arange(tables.width)
        expected = variant_prob_x1(k2, x1_star=TABLE3_RELEASE[0], y1_star=TABLE3_RELEASE[2],
                                   rho1=params["rho1"], d=params["d"], p=params["p"])
        np.testing.assert_allclose(tables.p1[0], expected, rtol=1e-12)
        law = variant_stationary(*TABLE3_RELEASE, **{k: v for k, v in params.items()
                                                     if k != "prior"})
        assert tables.stationary_x1[0] == pytest.approx(law.prob_x1, abs=1e-10)

    def test_exact_update_has_the_exact_stationary_law(self):
        sims = simulate_releases(50, **DEFAULT_PARAMETERS, prior="truncated:10", random_seed=5)
        params = {**DEFAULT_PARAMETERS, "prior": parse_prior("truncated:10")}
        tables = SBCConditionals(sims.releases, params, "exact")
        np.testing.assert_allclose(tables.stationary_x1, tables.prob_x1, atol=1e-12)

    def test_loop_runs_match_stationary_law(self):
        """Long runs of the broken loop on one release vs its exact stationary P[X1 = m+1]."""
        params = {**DEFAULT_PARAMETERS, "prior": parse_prior(BROKEN_PRIOR)}
        release = (1, 0, -1)
        tables = SBCConditionals([np.array([v]) for v in release], params, "unconstrained")
        out = two_block_gibbs_sample(*release, **params, x1_update="unconstrained",
                                     draws=4000, chains=20, tune=50, random_seed=8)
        means = (out.x1[0] == 1).mean(axis=1)
        se = means.std(ddof=1) / math.sqrt(means.size)
        assert abs(means.mean() - tables.stationary_x1[0]) < N_SE * se
        assert tables.stationary_x1[0] - tables.prob_x1[0] > 0.1  # a large bias here

    def test_bad_update_name(self):
        with pytest.raises(ValueError, match="x1_update"):
            two_block_gibbs_sample(0, 0, 0, **DEFAULT_PARAMETERS, prior="truncated:10",
                                   x1_update="nope", draws=2)


# --------------------------------------------------------------------------- SBC runs
#: docs/validation.md, where it quotes these runs' p-values (chi-square / KS per variable).
VALIDATION_PAGE = Path(__file__).resolve().parents[3] / "docs" / "validation.md"


def assert_the_page_quotes(result, pattern: str) -> None:
    """The p-values docs/validation.md quotes for ``result`` (``pattern`` matches the four
    numbers: X1's chi-square and KS, then X2's) are the run's, to the digits shown (the runs
    are seeded: the page stated 0.64 / 0.48, 0.16 / 0.22 and 3e-21, 7e-18 long after the
    samplers' draws had changed)."""
    text = " ".join(VALIDATION_PAGE.read_text().split())
    shown = re.search(pattern, text)
    assert shown, pattern
    computed = [result.p_value(variable, test) for variable in VARIABLES
                for test in ("chi2", "ks")]
    for number, value in zip(shown.groups(), computed, strict=True):
        mantissa, _, exponent = number.partition("e")  # 0.53 or 1.6e-22
        digits = len(mantissa.split(".")[1])
        printed = f"{value:.{digits}e}" if exponent else f"{value:.{digits}f}"
        assert float(printed) == float(number), (number, value)


class TestGibbsSBC:
    def test_gibbs_truncated_uniform(self):
        result = run_sbc("gibbs", prior="truncated:10", n_simulations=500, random_seed=101)
        assert_calibrated(result)
        assert_the_page_quotes(result, r"X1 ([\d.]+) / ([\d.]+), X2 ([\d.]+) / ([\d.]+) "
                                       r"under `truncated:10`")

    def test_gibbs_user_prior(self):
        assert_calibrated(run_sbc("gibbs", prior=USER_PRIOR, n_simulations=500,
                                  random_seed=102))

    def test_correct_samplers_pass_under_the_broken_prior(self):
        assert_calibrated(run_sbc("gibbs", prior=BROKEN_PRIOR, n_simulations=3000,
                                  random_seed=103))
        assert_calibrated(run_sbc("reference-loop", prior=BROKEN_PRIOR, n_simulations=1000,
                                  random_seed=104))

    def test_broken_sampler_fails(self):
        result = run_sbc("broken-gibbs", prior=BROKEN_PRIOR, n_simulations=3000,
                         random_seed=105)
        assert result.p_value("X1", "chi2") < P_VALUE_BROKEN
        assert result.p_value("X1", "ks") < P_VALUE_BROKEN
        assert_the_page_quotes(result, r"N = 3000: X1 p = ([\d.e-]+) / ([\d.e-]+), "
                                       r"X2 p = ([\d.e-]+) / ([\d.e-]+)\)")
        # ... and its ranks follow the histogram predicted from its exact stationary law.
        expected = result.extra["x1_rank_pmf"].reshape(result.bins, -1).sum(1)
        observed = result.tests["X1"].counts
        assert stats.chisquare(observed, expected * observed.sum()).pvalue > 1e-3

    @pytest.mark.parametrize("sampler", ["gibbs", "reference-loop", "broken-gibbs"])
    def test_each_release_thinned_by_its_own_interval(self, sampler):
        # per release: the smallest power of 2 at least the interval whose lag autocorrelation
        # |lambda|^thin is below AUTOCORRELATION_MAX (one interval for all, the largest, made
        # every release run as long as the slowest-mixing one)
        result = run_sbc(sampler, prior=BROKEN_PRIOR, n_simulations=300, n_draws=9,
                         random_seed=108)
        update = "unconstrained" if sampler == "broken-gibbs" else "exact"
        tables = SBCConditionals(result.simulations.releases,
                                 validated_params(**DEFAULT_PARAMETERS, prior=BROKEN_PRIOR),
                                 update)
        lam = np.abs(tables.autocorrelation)
        thin = result.thin
        assert np.all(lam**thin <= AUTOCORRELATION_MAX * (1 + 1e-12))
        assert np.all((thin == 1) | (lam ** (thin // 2) > AUTOCORRELATION_MAX))
        assert np.all(thin & (thin - 1) == 0)  # powers of 2
        assert thin.min() < thin.max()
        assert result.ranks["X1"].shape == (300,)

    def test_detection_size_of_the_broken_sampler(self):
        pmf = expected_x1_rank_pmf("unconstrained", prior=BROKEN_PRIOR, n_releases=5000,
                                   random_seed=7)
        assert 1000 < detection_size(pmf, bins=10) < 3000
        np.testing.assert_allclose(
            expected_x1_rank_pmf("exact", prior=BROKEN_PRIOR, n_releases=500), 0.01,
            atol=1e-12)


@pytest.fixture(scope="module")
def pymc_gibbs_result():
    return run_sbc("pymc-gibbs", prior="truncated:10", n_simulations=120, n_draws=19,
                   random_seed=106)


class TestPymcSBC:
    def test_pymc_with_exact_gibbs_step(self, pymc_gibbs_result):
        assert_calibrated(pymc_gibbs_result)
        assert pymc_gibbs_result.thin.min() >= 1
        assert pymc_gibbs_result.ranks["X1"].max() <= 19

    @pytest.mark.slow
    def test_pymc_with_exact_gibbs_step_user_prior(self):
        assert_calibrated(run_sbc("pymc-gibbs", prior=USER_PRIOR, n_simulations=300,
                                  n_draws=19, random_seed=107))

    @pytest.mark.slow
    def test_pymc_own_steps(self):
        assert_calibrated(run_sbc("pymc", prior="truncated:10", n_simulations=300, n_draws=19,
                                  random_seed=108))


class TestRunSbcInputs:
    def test_unknown_sampler_lists_the_supported_ones(self):
        with pytest.raises(ValueError, match="sampler must be one of " + ", ".join(SAMPLERS)):
            run_sbc("nuts", prior="truncated:10", n_simulations=10)

    def test_improper_prior(self):
        with pytest.raises(ValueError, match="proper"):
            run_sbc("gibbs", prior="improper", n_simulations=10)

    def test_bins_must_divide(self):
        with pytest.raises(ValueError, match="bins"):
            run_sbc("gibbs", prior="truncated:10", n_simulations=10, n_draws=20)

    def test_seeded(self):
        a = run_sbc("gibbs", prior="truncated:10", n_simulations=40, random_seed=9)
        b = run_sbc("gibbs", prior="truncated:10", n_simulations=40, random_seed=9)
        for variable in VARIABLES:
            np.testing.assert_array_equal(a.ranks[variable], b.ranks[variable])


# --------------------------------------------------------------------------- report
#: A tiny budget (a few simulations each: the checks are of the study's bookkeeping, not of
#: calibration) with both parts of the report's split: the Gibbs runs (the ``samplers`` part)
#: and a run of PyMC's own steps (the ``pymc`` part). The ``pymc-gibbs`` sampler is checked by
#: TestPymcSBC; a study's PyMC row is the same code for either PyMC sampler.
TINY = SBCBudget(
    runs=(
        SBCRun("gibbs", "truncated:10", 40),
        SBCRun("gibbs", BROKEN_PRIOR, 40),
        SBCRun("broken-gibbs", BROKEN_PRIOR, 40),
        SBCRun("pymc", "truncated:10", 2, 9, 5),
    ),
    detection_releases=200,
)


@pytest.fixture(scope="module")
def tiny_study():
    """The study of :data:`TINY` in one piece, computed once for the module's tests (issue 36:
    it was computed again by a module of its own, tests/validation/sbc/test_study_parts.py,
    with a budget of its own, for the parts check)."""
    return study(budget=TINY)


def test_study_structure(tiny_study, tmp_path):
    result = tiny_study
    assert result.name == "sbc"
    assert result.records == []
    validate_records(result.records)
    assert set(result.figures) == {"sbc_rank_histograms", "sbc_broken_sampler"}
    assert all(isinstance(f, Figure) for f in result.figures.values())
    summary = result.datasets["summary"]
    assert list(summary["run"].values) == ["gibbs/truncated:10", "gibbs/truncated:1",
                                           "broken-gibbs/truncated:1", "pymc/truncated:10"]
    assert summary["chi2_p_value"].dims == ("run", "variable")
    assert summary["rank_counts"].sel(run="pymc/truncated:10").sum("bin").values.tolist() \
        == [2, 2]
    assert set(result.seeds) == {f"sbc/{r}" for r in summary["run"].values} | {
        "sbc/detection_size"}
    assert len(result.diagnostics) == len(TINY.runs)
    assert any("Detection size" in note for note in result.notes)
    # the report writes every dataset as a netCDF group
    tree = xr.DataTree.from_dict({f"/sbc/{k}": ds for k, ds in result.datasets.items()})
    tree.to_netcdf(tmp_path / "sbc.nc")
    back = xr.open_datatree(tmp_path / "sbc.nc")
    assert back["sbc/summary"]["chi2_p_value"].shape == (4, 2)


def test_every_number_of_the_study_has_units(tiny_study, tmp_path):
    # results.nc's sbc groups had no units on any of their numbers (the summary's statistics,
    # p-values, counts, seconds and seeds; each run's truths, releases, thinning and ranks)
    assert not numbers_without_units_in_results(tiny_study.name, tiny_study.datasets,
                                                tmp_path / "results.nc")
    summary = tiny_study.datasets["summary"]
    assert summary["chi2_p_value"].attrs["units"] == "probability"
    assert summary["rank_counts"].attrs["units"] == "simulations"


def test_the_study_joined_from_parts_run_apart_is_the_one_piece_study(tiny_study):
    """The report runs the study's parts in separate workers (``study_part``, pickled back)
    and joins them (``study(parts=...)``): the same datasets (wall-clock ``seconds`` aside),
    notes, seeds and figures as the study in one piece."""
    whole = tiny_study
    parts = {name: pickle.loads(pickle.dumps(study_part(name, budget=TINY)))
             for name in reversed(STUDY_PARTS)}
    assert sorted(parts["pymc"]) == [3] and sorted(parts["samplers"]) == [0, 1, 2]
    joined = study(budget=TINY, parts=parts)
    assert joined.seeds == whole.seeds and joined.notes == whole.notes
    assert joined.figures.keys() == whole.figures.keys()
    assert list(joined.datasets) == list(whole.datasets)
    for key, ds in whole.datasets.items():
        other = joined.datasets[key]
        ds, other = (d.drop_vars("seconds", errors="ignore") for d in (ds, other))
        for d in (ds, other):  # a run's wall-clock time
            d.attrs.pop("seconds", None)
        assert other.identical(ds), key


def test_rank_histograms_figure():
    results = [run_sbc("gibbs", prior="truncated:10", n_simulations=30, random_seed=1),
               run_sbc("broken-gibbs", prior=BROKEN_PRIOR, n_simulations=30, random_seed=2)]
    fig = rank_histograms(results, title="t")
    assert len(fig.axes) == 2 * len(VARIABLES)
    assert fig.axes[0].patches  # bars and band drawn
    # its tight layout (run with ticks placed and texts laid out once) is matplotlib's own
    import contextlib

    import dprisk.validation.sbc.figures as sbc_figures

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sbc_figures, "ticks_placed_once", lambda fig: contextlib.nullcontext())
        patch.setattr(sbc_figures, "texts_laid_out_once", contextlib.nullcontext)
        plain = rank_histograms(results, title="t")
    for ax, want in zip(fig.axes, plain.axes, strict=True):
        assert ax.get_position().bounds == want.get_position().bounds
    with pytest.raises(ValueError, match="at least one"):
        rank_histograms([])


def test_thins_vectorised_as_thin_per_release():
    from dprisk.validation.sbc.samplers import _thin, _thins

    lam = np.concatenate([np.random.default_rng(0).uniform(-1.2, 1.2, 20_000),
                          [0.0, 0.01, -0.01, 1.0, -1.0, np.nextafter(0.01, 1.0)],
                          0.01 ** (1.0 / np.arange(1, 1001))])  # integer ratios exactly
    thins = _thins(lam)
    assert thins.dtype == np.int64
    assert thins.tolist() == [_thin(v) for v in lam]


def test_bars_patch_draws_what_ax_bar_draws():
    # one patch of the bars: the same pixels, limits and legend entry as ax.bar's container
    from matplotlib.figure import Figure

    from dprisk.validation.figures.png import png_bytes
    from dprisk.validation.sbc.figures import BAR_WIDTH, bars_patch

    counts = np.array([5, 0, 9, 3, 7])
    figures = []
    for as_patch in (False, True):
        fig = Figure(figsize=(3, 2))
        ax = fig.subplots()
        ax.axhspan(2, 8, color="0.88", label="band")
        if as_patch:
            ax.add_patch(bars_patch(np.arange(5), counts, width=BAR_WIDTH, facecolor="#1f77b4",
                                     edgecolor="none", alpha=0.85, label="bars"))
            ax.autoscale_view()
        else:
            ax.bar(np.arange(5), counts, width=BAR_WIDTH, color="#1f77b4", alpha=0.85,
                   label="bars")
        ax.legend()
        figures.append((ax.get_xlim(), ax.get_ylim(), png_bytes(fig, 50)))
    assert figures[0] == figures[1]


class TestVerdict:
    """The study's verdict sentence from the p-values (P_VALUE_MIN = 1e-3, P_VALUE_BROKEN = 1e-6).

    A correct sampler passes when every p-value (chi-square and KS, X1 and X2) exceeds
    P_VALUE_MIN; the broken one is "rejected as it must be" only when X1's chi-square p-value
    is below P_VALUE_BROKEN (the size the detection budget is planned for).
    """

    @staticmethod
    def _result(x1=(0.5, 0.5), x2=(0.5, 0.5)):
        from types import SimpleNamespace

        from dprisk.validation.sbc.ranks import UniformityTest
        from dprisk.validation.sbc.samplers import SBCResult

        tests = {name: UniformityTest(np.zeros(10), 1.0, chi2_p, 0.1, ks_p)
                 for name, (chi2_p, ks_p) in (("X1", x1), ("X2", x2))}
        result = SimpleNamespace(tests=tests)
        result.p_value = lambda variable="X1", test="chi2": SBCResult.p_value(result, variable,
                                                                               test)
        return result

    def test_p_value_of_a_variable_is_the_smaller_of_its_two_tests(self):
        assert self._result(x1=(0.3, 2e-4)).tests["X1"].p_value == 2e-4
        assert self._result(x1=(2e-4, 0.3)).tests["X1"].p_value == 2e-4

    def test_correct_sampler_verdict(self):
        from dprisk.validation.sbc.study import SBCRun, _verdict

        run = SBCRun("gibbs", "truncated:10", 100)
        assert _verdict(self._result(), run) == "passes"
        # one test of one variable at 1e-4 (< 1e-3, > 1e-6) is a failure
        assert _verdict(self._result(x2=(0.5, 1e-4)), run).startswith("FAILS")
        assert _verdict(self._result(x1=(1e-4, 0.5)), run).startswith("FAILS")

    def test_broken_sampler_verdict(self):
        from dprisk.validation.sbc.study import SBCRun, _verdict

        run = SBCRun("broken-gibbs", "truncated:10", 100)
        assert _verdict(self._result(x1=(1e-7, 0.5)), run) == "rejected as it must be"
        # 1e-4 is below P_VALUE_MIN but not the planned 1e-6: the check did not bite
        assert _verdict(self._result(x1=(1e-4, 0.5)), run).startswith("NOT REJECTED")
