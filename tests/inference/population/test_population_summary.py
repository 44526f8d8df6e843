"""The population summary: exact sums, the f-DP bound, baselines, partitioning (issue 34).

* :class:`ExactSum` rounds once, as ``math.fsum`` does: equal to the last bit, whatever the
  order or the partitioning;
* the f-DP trade-off function against the project's worst-case accuracy (an independent
  computation: exact atoms of the likelihood ratio), its Gaussian limit, and a simulated
  informed adversary never beating the bound;
* the band metrics and the baselines against a per-person Python loop;
* the summary is identical to the last bit across partitionings (and the per-person
  answers are the same arrays).
"""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from population_helpers import measure
from scipy.stats import norm

from dprisk.inference.population import fdp, pipeline, synth
from dprisk.inference.population.categories import (
    BAND_LABELS,
    N_CATEGORIES,
    band_index,
    category,
    group,
)
from dprisk.inference.population.exact_sum import ExactSum
from dprisk.inference.population.risk import population_risk
from dprisk.inference.privacy.worst_case import one_level_worst_case


@pytest.fixture(scope="module")
def population():
    with pytest.MonkeyPatch.context() as patch:  # small tracts: many partitions possible
        patch.setattr(synth, "TRACT_SIZE", (300, 900))
        persons = synth.synthesize(6000, 7)
    return persons, measure(persons, 10.09, seed=8)


def test_exact_sum_is_fsum_to_the_last_bit(rng):
    values = rng.random(50_000) ** rng.integers(1, 80, size=50_000)
    values[:5] = 5e-324
    want = math.fsum(values)
    assert ExactSum.of(values).value() == want
    shuffled = values[rng.permutation(values.size)]
    parts = sum((ExactSum.of(p) for p in np.array_split(shuffled, 13)), ExactSum())
    assert parts.value() == want
    groups = rng.integers(0, 4, size=values.size)
    for k, total in enumerate(ExactSum.by_group(values, groups, 4)):
        assert total.value() == math.fsum(values[groups == k])
    few = values[:2000]
    exact_mean = sum(Fraction(v) for v in few) / few.size
    assert ExactSum.of(few).mean(few.size) == float(exact_mean)  # rounded once
    assert ExactSum().mean(0) is None


def test_exact_sum_of_any_finite_doubles_is_fsum(rng):
    """Signs, exponents from the subnormals to 1e300, and 1.0 itself (a certain posterior):
    the contract is any finite doubles. The probabilities above are all in [0, 1) and their
    five subnormals vanish beside a total of about 700, so neither the negative parts' sign
    nor the subnormals' shift was checked (dropping either passed)."""
    magnitudes = 10.0 ** rng.uniform(-320, 300, size=5_000)
    values = np.concatenate([magnitudes * rng.choice([-1.0, 1.0], size=magnitudes.size),
                             [1.0, -0.5, 5e-324, -5e-324, 2.2250738585072014e-308]])
    assert ExactSum.of(values).value() == math.fsum(values)
    tiny = np.array([5e-324] * 5 + [3 * 5e-324, -2 * 5e-324])  # subnormals alone: 6 x 2^-1074
    assert ExactSum.of(tiny).value() == math.fsum(tiny) == 6 * 5e-324
    groups = rng.integers(0, 3, size=values.size)
    for k, total in enumerate(ExactSum.by_group(values, groups, 3)):
        assert total.value() == math.fsum(values[groups == k])


@pytest.mark.parametrize("variance", [0.5, 3.0, 10.09])
def test_tradeoff_matches_worst_case_accuracy(variance):
    """max over the curve of p (1 - f(a)) + (1 - p)(1 - a) is the best test's accuracy A*(p)
    (worst_case: exact atoms, error < 1e-20); the maximum lies at a vertex of the curve."""
    alpha, beta = fdp._curve(variance)
    assert np.all(np.diff(alpha) > 0) and np.all(np.diff(beta) <= 0)
    np.testing.assert_allclose(fdp.tradeoff(alpha, variance), beta, rtol=0, atol=1e-15)
    rho = 1.0 / (2.0 * variance)
    for p in (0.1, 0.5, 0.8):
        best = np.max(p * (1 - beta) + (1 - p) * (1 - alpha))
        assert best == pytest.approx(one_level_worst_case(rho, p), abs=1e-12)


def test_success_bound_limits():
    kappa = np.array([1 / 126, 0.05, 0.3, 0.5, 0.9])
    wide = fdp.success_bound(kappa, 1e6)  # Gaussian limit: Phi(Phi^-1(kappa) + 1/sigma)
    np.testing.assert_allclose(wide, norm.cdf(norm.ppf(kappa) + 1e-3), rtol=0, atol=1e-6)
    np.testing.assert_allclose(fdp.success_bound(kappa, 1e-4), 1.0, rtol=0, atol=1e-12)
    assert np.all(fdp.success_bound(kappa, 10.09) >= kappa)


def test_informed_adversary_never_beats_the_bound(rng):
    """Simulated informed adversaries (10,000 persons, prior with kappa = 0.4): their mean MAP
    correctness stays below the bound (4 binomial standard errors of slack)."""
    persons = 10_000
    variance = 2.0
    prior = np.full(N_CATEGORIES, 0.6 / 125)
    prior[0] = 0.4
    cats = rng.choice(N_CATEGORIES, size=persons, p=prior)
    frame = pd.DataFrame({"geoid": [f"01001000100{1000 + i // 5:04d}" for i in range(persons)],
                          "hhgq": 0, "votingage": 1, "hispanic": cats // 63,
                          "cenrace": cats % 63 + 1})
    risk = population_risk(frame, measure(frame, variance, seed=4), adversary="informed",
                           prior=prior)
    right = (risk.map == category(frame.hispanic, frame.cenrace)).mean()
    bound = fdp.success_bound(0.4, variance)
    assert np.allclose(risk.fdp_bound, bound)
    assert right <= bound + 4 * np.sqrt(bound * (1 - bound) / persons)


def _binary_bayes_success(*variances):
    r"""Exact Bayes success of an informed adversary choosing between two categories a, b
    (prior 1/2 each) from one pair of cells per variance (one query each, DAS convention, pmf
    :math:`\propto e^{-x^2/(2\sigma^2)}`): under a, :math:`D = r_a - r_b = 1 + \eta_a - \eta_b`
    per query and the log-likelihood ratio is :math:`\sum D_q / \sigma_q^2`; success =
    P[LLR > 0 | a] + P[LLR = 0 | a] / 2. Plain numpy: pmfs normalised on +-200 (tail below
    exp(-200^2 / (2 * 20)), nothing), so the sums are good to a few 1e-16."""
    llr, mass = np.zeros(1), np.ones(1)
    for variance in variances:
        x = np.arange(-200, 201)
        pmf = np.exp(-x * x / (2.0 * variance))
        pmf /= pmf.sum()
        diff = np.convolve(pmf, pmf[::-1])  # eta_a - eta_b on -400..400
        keep = diff > 1e-40
        shift = (np.arange(-400, 401) + 1)[keep] / variance
        llr = (llr[:, None] + shift[None, :]).ravel()
        mass = (mass[:, None] * diff[keep][None, :]).ravel()
    tie = np.abs(llr) <= 1e-12
    return float(mass[(llr > 0) & ~tie].sum() + 0.5 * mass[tie].sum())


def test_bound_covers_the_block_cells_only():
    """``fdp_bound`` is the worst case of attacks on the block's ``detailed`` cells (what the
    adversaries read); the released file measures the person again one level up. At the
    production variances (block ``detailed`` 10.0928, block-group ``detailed`` 4.0630) an
    informed adversary choosing between two categories (kappa = 1/2) is right with
    probability 0.5877 from the block cells (below the bound 0.6225) and 0.6611 from both
    levels (above it), as docs/population.md states (to the 4 decimals quoted)."""
    from dprisk.inference.population.noise import LevelNoise

    block = LevelNoise("Block", 0).variance("detailed")
    block_group = LevelNoise("Block_Group", 0).variance("detailed")
    bound = float(fdp.success_bound(0.5, block))
    one, two = _binary_bayes_success(block), _binary_bayes_success(block, block_group)
    assert round(block, 4) == 10.0928 and round(block_group, 4) == 4.0630
    assert (round(one, 4), round(bound, 4), round(two, 4)) == (0.5877, 0.6225, 0.6611)
    assert one <= bound < two


def test_metrics_equal_a_per_person_loop(population):
    """Every share of the summary (each band, all persons, each calibration bin) against a
    loop over the persons. Counts are exact; means of floats against math.fsum within
    1e-15 relative (the summary's exact sums are rounded once), the prg baseline within
    1e-12 (its per-person quotients are computed in another order)."""
    persons, meas = population
    risk = population_risk(persons, meas, adversary="outsider")
    summary = risk.summary()
    cats = category(persons.hispanic, persons.cenrace)
    groups = group(persons.hhgq, persons.votingage)
    row_of = {g: i for i, g in enumerate(meas.geoids)}
    tally = {label: {"persons": 0, "nonmodal": 0, "map": 0, "map_nm": 0, "mdg": 0,
                     "prg": [], "post": [], "half": 0, "fdp": []}
             for label in (*BAND_LABELS, "all")}
    bins = [{"persons": 0, "map": 0, "post": []} for _ in range(10)]
    for geoid, rows in persons.groupby("geoid").indices.items():
        noisy = meas.noisy[row_of[geoid]].reshape(16, N_CATEGORIES)
        counts = np.bincount(cats[rows], minlength=N_CATEGORIES)
        modal = int(np.argmax(counts))
        noisy_modal = int(np.argmax(noisy.sum(axis=0)))
        for r in rows:
            for band in (tally[BAND_LABELS[int(band_index(len(rows)))]], tally["all"]):
                band["persons"] += 1
                band["post"].append(risk.posterior_true[r])
                band["fdp"].append(risk.fdp_bound[r])
                band["half"] += risk.posterior_true[r] >= 0.5
                band["map"] += risk.map[r] == cats[r]
                if cats[r] != modal:
                    band["nonmodal"] += 1
                    band["map_nm"] += risk.map[r] == cats[r]
                    band["mdg"] += noisy_modal == cats[r]
                    positive = np.maximum(noisy[groups[r]], 0)
                    band["prg"].append(positive[cats[r]] / positive.sum() if positive.sum()
                                       else 1 / N_CATEGORIES)
            # bins [k/10, (k+1)/10), the last one closed
            calibration = bins[min(int(risk.map_posterior[r] * 10), 9)]
            calibration["persons"] += 1
            calibration["map"] += risk.map[r] == cats[r]
            calibration["post"].append(risk.map_posterior[r])
    for row in (*summary["by_block_size"], {"band": "all", **summary["all"]}):
        want = tally[row["band"]]
        assert row["persons"] == want["persons"]
        assert row["nonmodal_persons"] == want["nonmodal"]
        if want["persons"] == 0:
            assert row["map_correct"] is None and row["mean_posterior_true"] is None
            continue
        assert row["map_correct"] == want["map"] / want["persons"]
        assert row["posterior_true_ge_half"] == want["half"] / want["persons"]
        assert row["mean_posterior_true"] == pytest.approx(
            math.fsum(want["post"]) / want["persons"], rel=1e-15)
        # the mean of the persons' f-DP bounds (before: any band sum went unnoticed here,
        # e.g. the posteriors' in its place, and so did the "all" row and the bins below)
        assert row["mean_fdp_bound"] == pytest.approx(
            math.fsum(want["fdp"]) / want["persons"], rel=1e-15)
        if want["nonmodal"]:
            assert row["map_correct_nonmodal"] == want["map_nm"] / want["nonmodal"]
            assert row["mdg_correct_nonmodal"] == want["mdg"] / want["nonmodal"]
            assert row["prg_correct_nonmodal"] == pytest.approx(
                math.fsum(want["prg"]) / want["nonmodal"], rel=1e-12)
    assert summary["persons"] == len(persons)
    assert sum(b["persons"] for b in bins) == len(persons)
    for row, want in zip(summary["calibration"], bins, strict=True):
        assert row["persons"] == want["persons"]
        if want["persons"]:
            assert row["map_correct"] == want["map"] / want["persons"]
            assert row["mean_map_posterior"] == pytest.approx(
                math.fsum(want["post"]) / want["persons"], rel=1e-15)


@pytest.mark.parametrize("variance", [1.0, 3.3, 10.092848490022675])
def test_exact_ties_are_at_one_half_and_at_the_calibration_edges(variance):
    """Two categories of prior 1/2 each, the rest 0, and equal residuals y_c - m_c: the
    informed posterior is exactly 1/2 (k = 5 such categories: exactly 1/5, a calibration
    edge too). Computed through the kernel's log-sum correction it came out
    0.49999999999999994 (sigma^2 = 10.09; 0.5 or 0.5000000000000001 at others), so such a
    person was not counted in posterior_true_ge_half and fell in the bin below; within
    metrics.AT_EDGE_RELATIVE (64 eps; the kernel's error measured up to 3 eps) it is 1/2."""
    from dprisk.inference.population.kernels import informed_logits, informed_posteriors
    from dprisk.inference.population.metrics import CALIBRATION_EDGES, Tally

    for k in (2, 5):
        n = 40
        prior = np.zeros((n, N_CATEGORIES))
        prior[:, :k] = 1.0 / k
        true = np.zeros((n, N_CATEGORIES), dtype=np.int64)
        true[:, :k] = 3
        noisy = true + np.arange(n)[:, None] - 20  # residual r in every tied cell
        noisy[:, 0] -= 1  # the person's own cell: y_0 - (n_0 - 1) = r, as the others'
        post, map_post, map_cat = informed_posteriors(
            informed_logits(noisy, true, prior, np.full(n, variance)), np.arange(n),
            np.zeros(n, dtype=np.int64))
        np.testing.assert_allclose(post, 1.0 / k, rtol=4 * np.finfo(float).eps)
        zeros = np.zeros(n, dtype=np.int64)
        tally = Tally.of(band=zeros, block_band=zeros, category=zeros, modal=zeros,
                         map_category=map_cat, posterior_true=post, map_posterior=map_post,
                         fdp_bound=np.ones(n), mdg_guess=zeros, prg_probability=np.ones(n))
        assert tally.counts["posterior_true_ge_half"][0] == (n if k == 2 else 0)
        edge = CALIBRATION_EDGES.index(1.0 / k)
        assert tally.calibration_persons[edge] == n


@pytest.mark.parametrize("adversary", ["informed", "outsider"])
def test_summary_identical_across_partitionings(population, adversary):
    persons, meas = population
    whole = population_risk(persons, meas, adversary=adversary)
    split = population_risk(persons, meas, adversary=adversary, partition_persons=700)
    assert whole.partitions == 1 and split.partitions > 3
    assert split.summary() == whole.summary()  # floats compared to the last bit
    for name in ("posterior_true", "map", "map_posterior", "fdp_bound"):
        assert np.array_equal(getattr(split, name), getattr(whole, name))


def test_streamed_partitions_equal_in_memory(population, tmp_path):
    """A loader called per partition (each reads only its blocks) gives the same bits; a
    refused input removes what the call stored."""
    persons, meas = population

    def loader(geoids):
        rows = np.searchsorted(meas.geoids.astype(str), geoids)
        return type(meas)(geoids=meas.geoids[rows], noisy=meas.noisy[rows],
                          variance=meas.variance[rows])

    whole = population_risk(persons, meas, adversary="outsider")
    streamed = population_risk(persons, loader, adversary="outsider", partition_persons=700,
                               store=tmp_path / "store")
    assert streamed.partitions > 3 and streamed.summary() == whole.summary()
    assert np.array_equal(streamed.posterior_true, whole.posterior_true)
    assert streamed.variance_range == (10.09, 10.09)
    with pytest.MonkeyPatch.context() as patch:  # resumed: every partition from the store
        patch.setattr(pipeline, "partition_risk", None)
        again = population_risk(persons, loader, adversary="outsider", partition_persons=700,
                                store=tmp_path / "store")
    assert again.summary() == whole.summary()
    assert np.array_equal(again.map_posterior, whole.map_posterior)

    def refusing(geoids):
        if geoids[0] > persons.geoid.min():
            raise ValueError("noisy: refused")
        return loader(geoids)

    with pytest.raises(ValueError, match="refused"):
        population_risk(persons, refusing, adversary="outsider", partition_persons=700,
                        store=tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_a_store_is_not_reused_across_kernel_paths(population, tmp_path, monkeypatch):
    """The outsider's numpy and compiled paths agree to about 1e-14 here, not to the bit; a
    run resumed under another DPRISK_KERNELS took every stored partition of the other path
    (its posteriors and summary equal the compiled run's, not a fresh numpy run's: 10,631
    persons of a 20,000-person state differed, at most 2.4e-14). The outsider's key now
    names the path."""
    from dprisk.inference.population import kernels

    persons, meas = population
    monkeypatch.setenv("DPRISK_KERNELS", "compiled")
    if kernels.kernel_path() != "compiled":
        pytest.skip("numba does not load here: one path only")
    compiled = population_risk(persons, meas, adversary="outsider", partition_persons=700,
                               store=tmp_path)
    monkeypatch.setenv("DPRISK_KERNELS", "numpy")
    fresh = population_risk(persons, meas, adversary="outsider", partition_persons=700)
    assert not np.array_equal(fresh.posterior_true, compiled.posterior_true)
    resumed = population_risk(persons, meas, adversary="outsider", partition_persons=700,
                              store=tmp_path)
    assert np.array_equal(resumed.posterior_true, fresh.posterior_true)
    assert resumed.summary() == fresh.summary()


@pytest.mark.parametrize("kappa", [float("nan"), 0.0, -0.2, 1.5])
def test_success_bound_refuses_kappa_outside_its_range(kappa):
    """Before: NaN gave NaN, 0 gave 0 and 1.5 gave 1.0, silently."""
    from dprisk.inference.population.fdp import success_bound

    with pytest.raises(ValueError, match=r"^kappa must be in \(0, 1\]"):
        success_bound(np.array([0.5, kappa]), 10.08)
    assert success_bound(1.0, 10.08) == pytest.approx(1.0, abs=0)


@pytest.mark.parametrize(("variance", "error"), [
    (-10.0, ValueError), (0.0, ValueError), (float("nan"), ValueError), (1e9, ValueError),
    (True, TypeError), ("10", TypeError)])
def test_public_kernels_refuse_a_variance_outside_the_pipelines_range(variance, error):
    """dr.population.success_bound(0.5, 1e16) tried to allocate 16.1 GiB (the trade-off
    curve's window grows with sigma; 1e12 took 9 s), -10 gave a negative-variance logit
    (informed -4.886 against -4.786 at +10), 0 gave inf or a ZeroDivisionError, NaN a NaN
    logit, a (1,) variance for 2 groups an IndexError: each public kernel now refuses a
    variance outside the pipeline's VARIANCE_RANGE (1e-4..1e8), or of the wrong shape, naming
    it and the range."""
    from dprisk.inference.population.fdp import success_bound
    from dprisk.inference.population.kernels import informed_logits, outsider_logits

    noisy = np.zeros((2, N_CATEGORIES), np.int64)
    noisy[:, 0] = 3
    true = np.zeros((2, N_CATEGORIES), np.int64)
    true[:, 0] = 2
    prior = np.full((2, N_CATEGORIES), 1 / N_CATEGORIES)
    message = r"^variance must be" if error is ValueError else r"^variance must be numbers"
    if error is ValueError:
        message += r".*allowed range: 0\.0001 <= sigma\^2 <= 1e\+08"
    with pytest.raises(error, match=message):
        success_bound(0.5, variance)
    pair = np.array([variance, 10.0], dtype=object if error is TypeError else float)
    with pytest.raises(error, match=message):
        informed_logits(noisy, true, prior, pair)
    with pytest.raises(error, match=message):
        outsider_logits(noisy, np.array([3, 3]), prior, pair)
    with pytest.raises(ValueError, match=r"^variance must have shape \(2,\), got \(1,\)"):
        outsider_logits(noisy, np.array([3, 3]), prior, np.array([10.0]))


@pytest.mark.parametrize("partition_persons", [0, -1, 1.5, True, "10"])
def test_partition_persons_must_be_a_positive_integer(partition_persons):
    """Before: int() truncated 1.5 to 1 (and read True as 1) silently."""
    from dprisk.inference.population.partitions import partition_size

    with pytest.raises(ValueError, match=r"^partition_persons must be an integer >= 1"):
        partition_size(partition_persons)
    assert partition_size(np.int64(7)) == 7


def test_calibration_intervals_are_wilsons_not_zero_width(tmp_path, monkeypatch):
    """The calibration figure's "95 % interval" was p +- 1.96 sqrt(p (1 - p) / n): no width at
    all for a bin whose persons were all right or all wrong (2 of 2 drawn as certain), and
    past [0, 1] for small bins. Now Wilson's score interval, equal to scipy's to 1e-12."""
    from matplotlib.axes import Axes
    from scipy.stats import binomtest

    from dprisk.inference.population import risk_files

    counts, rights = np.array([2, 3, 8, 100, 1]), np.array([0, 3, 3, 50, 1])
    low, high = risk_files.wilson_interval(rights / counts, counts)
    for k, n, lo, hi in zip(rights, counts, low, high, strict=True):
        ci = binomtest(int(k), int(n)).proportion_ci(0.95, method="wilson")
        assert lo == pytest.approx(ci.low, abs=1e-12)
        assert hi == pytest.approx(ci.high, abs=1e-12)
    drawn = {}
    monkeypatch.setattr(Axes, "errorbar", lambda self, x, y, yerr=None, **kw:
                        drawn.setdefault("yerr", np.asarray(yerr)))
    calibration = [{"persons": 0} for _ in range(10)]
    for i, (k, n) in enumerate(zip(rights, counts, strict=True)):
        calibration[2 * i] = {"persons": int(n), "mean_map_posterior": 0.1 * (2 * i) + 0.05,
                              "map_correct": k / n}
    rows = [{"band": b, "map_correct_nonmodal": None, "mdg_correct_nonmodal": None,
             "prg_correct_nonmodal": None} for b in BAND_LABELS]
    risk_files._figures(tmp_path, {"by_block_size": rows, "calibration": calibration}, "t")
    below, above = drawn["yerr"]
    np.testing.assert_allclose(below, rights / counts - low, atol=1e-15)
    np.testing.assert_allclose(above, high - rights / counts, atol=1e-15)
    assert (below + above > 0.19).all()  # 0 of 2, 3 of 3 and 1 of 1 too (50 of 100: 0.193)


def test_proportional_guess_of_a_group_without_a_positive_cell_is_uniform():
    """The prg baseline guesses in proportion to the positive parts of the group's noisy
    cells, 1/126 each when none is positive (metrics docstring). No group of the test
    population has every cell at or below 0, so a share of 0 there (a guess that is never
    right) went unnoticed; exact values: 3/5 and 2/5 are correctly rounded quotients."""
    from dprisk.inference.population.metrics import proportional_guess

    noisy = np.zeros((2, N_CATEGORIES), dtype=np.int64)
    noisy[0, :] = -np.arange(N_CATEGORIES)  # 0, -1, -2, ...: nothing positive
    noisy[1, [3, 7, 9]] = [3, 2, -4]
    share = proportional_guess(noisy)
    assert np.all(share[0] == 1.0 / N_CATEGORIES)
    assert share[1, 3] == 3 / 5 and share[1, 7] == 2 / 5
    assert np.count_nonzero(share[1]) == 2
