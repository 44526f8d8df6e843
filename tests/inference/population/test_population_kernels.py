"""The per-person kernels against independent references (issue 34, part 3).

* informed and outsider: the factorised formulas equal a brute-force enumeration of the joint
  likelihood of every noisy cell (informed: all 2,016 cells of the block for each of the 126
  hypotheses; outsider: the others' counts summed over a box of joint count vectors);
* the Poisson-Gaussian sums equal a direct sum over m = 0..799 (scipy's Poisson pmf);
* sigma^2 -> 0 recovers the exact tables: the informed adversary is certain, the outsider's
  posterior is the group's table n_c / n (a unique's category known with certainty);
* calibration on groups simulated from the outsider's own model;
* ties broken as documented (the MAP is the smallest of the tied categories): the informed
  MAP equals an exact one (integers and mpmath) on random small groups full of ties;
* a noisy count of 10^12 on the numpy path needs memory for its window only.
"""

import importlib
import itertools
import math
import os
import resource
from pathlib import Path

import mpmath
import numpy as np
import pandas as pd
import pytest
from fresh_python import answer_of_a_fork
from population_helpers import Measurements, measure, true_cells
from scipy.stats import poisson

from dprisk.inference.population import kernels
from dprisk.inference.population.categories import (
    N_CATEGORIES,
    N_DETAILED_CELLS,
    category,
    detailed_cell,
    group,
)
from dprisk.inference.population.risk import population_risk
from dprisk.models.mechanism.dg_sampling import sample
from dprisk.models.mechanism.discrete_gaussian import logpmf

# Agreement of two float64 evaluations of the same probabilities (sums of a few hundred
# terms in different orders): a few hundred ulps of 1.
FLOAT_TOL = 1e-12


def _block(rng, persons: int) -> pd.DataFrame:
    """One block's persons: a few categories, households and a group quarters."""
    cats = rng.choice([0, 1, 2, 66, 68], size=persons, p=[0.4, 0.25, 0.15, 0.15, 0.05])
    return pd.DataFrame({
        "geoid": ["011230001001001"] * persons,
        "hhgq": rng.choice([0, 0, 0, 3], size=persons),
        "votingage": rng.integers(0, 2, size=persons),
        "hispanic": cats // 63, "cenrace": cats % 63 + 1,
    })


def test_informed_equals_joint_enumeration(rng):
    persons = _block(rng, 9)
    variance = 3.0
    meas = measure(persons, variance, seed=5)
    prior = rng.dirichlet(np.ones(N_CATEGORIES))
    risk = population_risk(persons, meas, adversary="informed", prior=prior)
    _, truth = true_cells(persons)
    noisy = meas.noisy[0]
    rho = 1.0 / (2.0 * variance)
    cells = detailed_cell(persons.hhgq, persons.votingage, persons.hispanic, persons.cenrace)
    for i in range(len(persons)):
        others = truth[0].copy()
        others[cells[i]] -= 1
        g = int(group(persons.hhgq[i], persons.votingage[i]))
        log_post = np.empty(N_CATEGORIES)
        for c in range(N_CATEGORIES):  # the whole block's likelihood under t = c
            table = others.copy()
            table[g * N_CATEGORIES + c] += 1
            log_post[c] = np.log(prior[c]) + logpmf(noisy, table, rho).sum()
        post = np.exp(log_post - log_post.max())
        post /= post.sum()
        t = int(category(persons.hispanic[i], persons.cenrace[i]))
        assert risk.posterior_true[i] == pytest.approx(post[t], abs=FLOAT_TOL)
        assert risk.map[i] == np.argmax(post)
        assert risk.map_posterior[i] == pytest.approx(post.max(), abs=FLOAT_TOL)


def test_outsider_equals_joint_enumeration(rng):
    """Prior on three categories: the others' count vectors enumerated over a 0..40 box."""
    variance, n = 1.5, 7
    support = np.array([0, 2, 66])
    prior = np.zeros(N_CATEGORIES)
    prior[support] = [0.5, 0.3, 0.2]
    noisy = sample(0, 1.0 / (2 * variance), size=N_CATEGORIES, random_seed=3).astype(np.int64)
    noisy[support] += [4, 2, 1]
    logits = kernels.outsider_logits(noisy[None, :], np.array([n]), prior[None, :],
                                     np.array([variance]))
    post = np.exp(logits[0] - logits[0].max())
    post /= post.sum()
    m = np.arange(41)
    lam = (n - 1) * prior[support]
    joint = np.zeros(3)
    for h in range(3):  # hypothesis t = support[h]
        # the joint's log terms over the 41^3 box: category k's term along axis k, broadcast
        log_terms = np.zeros((m.size,) * 3)
        for k in range(3):
            x = m + (k == h)
            term = poisson.logpmf(m, lam[k]) - (noisy[support[k]] - x) ** 2 / (2 * variance)
            log_terms = log_terms + term.reshape([-1 if axis == k else 1 for axis in range(3)])
        joint[h] = prior[support[h]] * np.exp(log_terms).sum()
    joint /= joint.sum()  # cells outside the support: the same factor under every hypothesis
    np.testing.assert_allclose(post[support], joint, rtol=0, atol=FLOAT_TOL)
    assert post.sum() == pytest.approx(1.0, abs=FLOAT_TOL)
    assert np.all(np.delete(post, support) == 0)


@pytest.mark.parametrize("mode", ["numpy", "compiled"])
@pytest.mark.parametrize("variance", [1e-3, 0.7, 10.09, 60.0])
def test_poisson_gaussian_sum_equals_direct_sum(rng, variance, mode, monkeypatch):
    """Both paths (numpy windows, compiled walk from the mode) against a direct sum."""
    monkeypatch.setenv("DPRISK_KERNELS", mode)
    y = np.concatenate([rng.integers(-30, 80, size=300), [-60, 0, 1, 200, 5, 5]])
    lam = np.concatenate([rng.exponential(8.0, size=300), [0.0, 0.0, 3.0, 0.5, 300.0, 1e-9]])
    got = kernels.poisson_gaussian_log_ratio(y, lam, variance)
    m = np.arange(800)

    def log_l(yv, lv, delta):
        terms = poisson.logpmf(m, lv) - (yv - m - delta) ** 2 / (2 * variance)
        top = terms.max()
        return top + np.log(np.exp(terms - top).sum())

    want = np.array([log_l(a, b, 1) - log_l(a, b, 0) for a, b in zip(y, lam)])
    # log-ratios up to ~1e4 in size at sigma^2 = 1e-3: relative float64 agreement; counts
    # up to a few hundred: a few ulps of m log m (~1e-13, kernels' docstring) absolute
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("variance", [0.7, 10.09, 60.0])
def test_window_neglected_bound_holds_on_either_side(variance):
    """The numpy path's a-posteriori bound of the mass a window leaves out (geometric series
    from each edge) is at least the true share, from a direct sum over m = 0..799, when the
    window cuts the summand's left side, its right side, or both. The first window is wide
    enough (1e-18 of the mass left out) that no other test reaches an edge: without this,
    the right edge's bound set to 0 passed every test."""
    y = np.array([40.0, 40.0, 40.0, 5.0])
    lam = np.array([30.0, 30.0, 30.0, 300.0])
    var = np.full(y.size, variance)
    mode = np.rint(kernels._mode(y, lam, var)).astype(np.int64)
    start = np.maximum(mode - np.array([2, 12, 2, 5]), 0)  # left cut, right cut, both
    width = np.array([18, 15, 5, 11])
    m = np.arange(800)
    for i in range(y.size):
        cut = kernels._window_sums(y[i:i + 1], lam[i:i + 1], var[i:i + 1], start[i:i + 1],
                                   int(width[i]))
        share = 0.0
        for delta, inside in zip((0.0, 1.0), cut[:2], strict=True):
            # the kernel's unnormalised terms (no e^-lam): m log lam - log m! - (y - d - m)^2/2s^2
            terms = (poisson.logpmf(m, lam[i]) + lam[i]
                     - (y[i] - delta - m) ** 2 / (2 * variance))
            top = terms.max()
            whole = top + np.log(np.exp(terms - top).sum())
            share = max(share, -math.expm1(float(inside[0]) - whole))
        # the true share is well above rounding (1e-16) and must not exceed the bound
        assert 1e-12 < share <= float(cut[2][0])


@pytest.mark.parametrize("mode", ["numpy", "compiled", "auto"])
def test_a_cells_sum_does_not_depend_on_its_batch(rng, mode, monkeypatch):
    """Bit for bit: a cell alone, in a small batch and in a large one (partition-invariance).

    ``auto`` too: the path may not be chosen by the batch's size (the two paths agree to
    ~1e-13 only, so a size rule would make a partitioned run differ in the last bits).
    """
    monkeypatch.setenv("DPRISK_KERNELS", mode)
    y = rng.integers(-20, 60, size=3000)
    lam = rng.exponential(6.0, size=3000)
    lam[::7] = 300.0  # wide windows beside narrow ones
    whole = kernels.poisson_gaussian_log_ratio(y, lam, 10.09)
    for i in (0, 1, 7, 1234):
        alone = kernels.poisson_gaussian_log_ratio(y[i:i + 1], lam[i:i + 1], 10.09)
        assert alone[0] == whole[i]
    few = kernels.poisson_gaussian_log_ratio(y[:50], lam[:50], 10.09)
    assert np.array_equal(few, whole[:50])


def test_sigma_to_zero_recovers_exact_tables(rng):
    persons = pd.concat([_block(rng, 12).assign(geoid="011230001001001"),
                         _block(rng, 1).assign(geoid="011230001001002")], ignore_index=True)
    meas = measure(persons, 1e-3, seed=1)
    _, truth = true_cells(persons)
    assert np.array_equal(meas.noisy, truth)  # P[noise != 0] ~ e^-500
    informed = population_risk(persons, meas, adversary="informed", prior="uniform")
    np.testing.assert_allclose(informed.posterior_true, 1.0, rtol=0, atol=FLOAT_TOL)
    outsider = population_risk(persons, meas, adversary="outsider", prior="tract")
    cells = detailed_cell(persons.hhgq, persons.votingage, persons.hispanic, persons.cenrace)
    block = (persons.geoid == "011230001001002").to_numpy().astype(int)
    g = group(persons.hhgq, persons.votingage)
    group_n = pd.Series(1, index=persons.index).groupby([block, g]).transform("sum")
    table = truth[block, cells] / group_n.to_numpy()
    np.testing.assert_allclose(outsider.posterior_true, table, rtol=0, atol=1e-9)
    unique = table == 1.0
    assert unique.any()
    np.testing.assert_allclose(outsider.posterior_true[unique], 1.0, rtol=0, atol=1e-9)


def test_outsider_calibrated_on_its_own_model():
    """Groups drawn from the outsider's model: t ~ pi, others ~ Poisson((n-1) pi_c), noise.

    20,000 independent targets; for each MAP-posterior bin with >= 200 targets, the share of
    right MAPs is within 4 binomial standard errors (sqrt(p(1-p)/count)) of the bin's mean
    posterior: a false alarm has probability < 1e-4 per bin.
    """
    rng = np.random.default_rng(11)
    targets, variance = 20_000, 10.09
    prior = np.zeros(N_CATEGORIES)
    support = np.array([0, 1, 3, 5, 63, 68, 70])
    prior[support] = rng.dirichlet(np.full(support.size, 3.0))
    n = rng.integers(1, 30, size=targets)
    t = rng.choice(N_CATEGORIES, size=targets, p=prior)
    others = rng.poisson((n - 1)[:, None] * prior[None, :])
    noise = sample(0, 1.0 / (2 * variance), size=(targets, N_CATEGORIES), random_seed=12)
    noisy = others + noise.astype(np.int64)
    noisy[np.arange(targets), t] += 1
    logits = kernels.outsider_logits(noisy, n, np.broadcast_to(prior, noisy.shape),
                                     np.full(targets, variance))
    _, map_post, map_cat = kernels.outsider_posteriors(logits, np.arange(targets), t)
    right = map_cat == t
    edges = np.linspace(0, 1, 11)
    checked = 0
    for low, high in itertools.pairwise(edges):
        inside = (map_post >= low) & (map_post < high)
        if inside.sum() < 200:
            continue
        share, mean = right[inside].mean(), map_post[inside].mean()
        se = np.sqrt(mean * (1 - mean) / inside.sum())
        assert abs(share - mean) <= 4 * se, (low, high, share, mean, se)
        assert low - 4 * se <= share < high + 4 * se
        checked += 1
    assert checked >= 3


# The audit's tie: one person of category 0 in group (hhgq 0, votingage 1); y_0 - m_0 = 1 - 0
# (their own cell) and y_1 - m_1 = 1 - 0 (nobody's): under the uniform prior the hypotheses
# t' = 0 and t' = 1 have the same posterior, exactly, at every variance.
TIE_VARIANCES = [0.7, 1.0, 3.0, 10.0928, 25.0]


def _one_person_tie(variance: float):
    persons = pd.DataFrame({"geoid": ["010010001001000"], "hhgq": [0], "votingage": [1],
                            "hispanic": [0], "cenrace": [1]})
    noisy = np.full((1, N_DETAILED_CELLS), -5, dtype=np.int64)
    noisy[0, N_CATEGORIES + 0] = noisy[0, N_CATEGORIES + 1] = 1
    return persons, Measurements(geoids=np.array(["010010001001000"], dtype=object),
                                 noisy=noisy, variance=np.array([variance]))


@pytest.mark.parametrize("mode", ["numpy", "compiled"])
@pytest.mark.parametrize("variance", TIE_VARIANCES)
def test_informed_tie_goes_to_the_smallest_category(variance, mode, monkeypatch):
    """The audit's case: map 0 (the truth) and posterior_true == map_posterior to the bit.

    Before the fix the person's own score was the group's logit plus 1/sigma^2, rounded
    differently from the tied logit of category 1: map 1 at sigma^2 = 0.7 and 3.
    """
    monkeypatch.setenv("DPRISK_KERNELS", mode)
    persons, meas = _one_person_tie(variance)
    risk = population_risk(persons, meas, adversary="informed", prior="uniform")
    assert risk.map[0] == 0
    assert risk.posterior_true[0] == risk.map_posterior[0]
    # the two tied hypotheses share the posterior; the other 124 have y - m = -5
    rest = np.exp(-6.0 / variance)  # e^{(2(-5) - 1)/(2 s2)} / e^{(2(1) - 1)/(2 s2)}
    assert risk.posterior_true[0] == pytest.approx(1.0 / (2.0 + 124.0 * rest), abs=FLOAT_TOL)


@pytest.mark.parametrize("mode", ["numpy", "compiled"])
def test_outsider_tie_goes_to_the_smallest_category(mode, monkeypatch):
    """The same cells for the outsider (n = 1: lambda = 0, ratio (2y - 1)/(2 sigma^2)).

    A guard beside the informed fix: tied cells have the same (y, lambda, sigma^2), summed
    once (``_distinct_cells``), so their logits are one float on both paths.
    """
    monkeypatch.setenv("DPRISK_KERNELS", mode)
    for variance in TIE_VARIANCES:
        persons, meas = _one_person_tie(variance)
        risk = population_risk(persons, meas, adversary="outsider", prior="uniform")
        assert risk.map[0] == 0
        assert risk.posterior_true[0] == risk.map_posterior[0]


# Variances of the property test: the audit's (0.7 and 3 failed) and the production one.
PROPERTY_VARIANCES = np.array([0.7, 1.0, 3.0, 10.092848490022675, 25.0])


def _exact_informed_scores(y_minus_m, log2_weight, variance):
    r"""Exact ranks of the scores :math:`j_c \log 2 + (2(y_c - m_c) - 1)/(2\sigma^2)`.

    The informed score of hypothesis :math:`c` with prior :math:`\pi_c \propto 2^{j_c}`, up to
    terms common to all hypotheses. Two scores are equal exactly when their integers
    :math:`(j, y - m)` are (else they differ by a nonzero rational plus a nonzero multiple of
    :math:`\log 2`, irrational); the distinct ones are ordered with mpmath at 50 digits,
    whose smallest gap is checked to be far above its rounding. Returns integer ranks (equal
    ranks: exact ties) and the scores as floats.
    """
    mpmath.mp.dps = 50
    pairs = np.stack([log2_weight, y_minus_m], axis=-1).reshape(-1, 2)
    distinct, where = np.unique(pairs, axis=0, return_inverse=True)
    exact = [j * mpmath.log(2) + mpmath.mpf(2 * int(r) - 1) / (2 * mpmath.mpf(float(variance)))
             for j, r in distinct]
    order = sorted(range(len(exact)), key=lambda i: exact[i])
    gaps = [exact[b] - exact[a] for a, b in itertools.pairwise(order)]
    assert min(gaps, default=1) > mpmath.mpf(10) ** -30  # distinct pairs: distinct scores
    rank = np.empty(len(exact), dtype=np.int64)
    rank[order] = np.arange(len(exact))
    as_float = np.array([float(v) for v in exact])
    shape = y_minus_m.shape
    return rank[where.ravel()].reshape(shape), as_float[where.ravel()].reshape(shape)


def _small_groups(rng, blocks: int):
    """Blocks of 1-5 persons over few categories and groups; every cell's noise in -2..2."""
    size = rng.integers(1, 6, size=blocks)
    block = np.repeat(np.arange(blocks), size)
    cats = rng.choice([0, 1, 2, 3, 64, 125], size=block.size)
    geoids = np.array([f"0100100{b // 40:04d}{b % 40:04d}" for b in range(blocks)], dtype=object)
    persons = pd.DataFrame({
        "geoid": geoids[block], "hhgq": rng.choice([0, 0, 5], size=block.size),
        "votingage": rng.integers(0, 2, size=block.size),
        "hispanic": cats // 63, "cenrace": cats % 63 + 1,
    })
    _, truth = true_cells(persons)
    noisy = truth + rng.integers(-2, 3, size=truth.shape)
    variance = rng.choice(PROPERTY_VARIANCES, size=blocks)
    return persons, block, truth, Measurements(geoids=geoids, noisy=noisy, variance=variance)


@pytest.fixture(scope="module")
def exact_informed_references() -> dict:
    """The exact ranks and scores of :func:`_exact_informed_scores`, kept by their inputs: the
    numpy and compiled cases of one prior share them (the same persons and measurements), and
    mpmath's ordering of the scores, about 80 % of a case's CPU, is made once per prior."""
    return {}


@pytest.mark.parametrize("mode", ["numpy", "compiled"])
@pytest.mark.parametrize("prior_kind", ["uniform", "powers_of_two"])
def test_informed_map_equals_the_exact_map_on_random_small_groups(prior_kind, mode, monkeypatch,
                                                                   exact_informed_references):
    """Every person's MAP is the exact one, ties to the smallest index (1,500 random blocks).

    The exact MAP from integers (y_c - m_c) and, for the prior pi_c proportional to
    2^(c mod 3), mpmath (:func:`_exact_informed_scores`); a true category tied with the MAP
    has posterior_true == map_posterior to the bit. The posteriors match the exact scores'
    softmax within FLOAT_TOL. Before the fix (the person's own score the group's logit plus
    1/sigma^2, rounded unlike a tied logit) 337 (uniform) and 130 (powers of two) of the
    4,475 persons had another MAP than the exact one.
    """
    monkeypatch.setenv("DPRISK_KERNELS", mode)
    rng = np.random.default_rng(34)
    persons, block, truth, meas = _small_groups(rng, blocks=1500)
    j = np.arange(N_CATEGORIES) % 3
    prior = "uniform" if prior_kind == "uniform" else 2.0 ** j / (2.0 ** j).sum()
    j = np.zeros(N_CATEGORIES, dtype=np.int64) if prior_kind == "uniform" else j
    risk = population_risk(persons, meas, adversary="informed", prior=prior)

    g = np.asarray(group(persons.hhgq, persons.votingage))
    t = np.asarray(category(persons.hispanic, persons.cenrace))
    cols = g[:, None] * N_CATEGORIES + np.arange(N_CATEGORIES)[None, :]
    y_minus_m = meas.noisy[block[:, None], cols] - truth[block[:, None], cols]
    y_minus_m[np.arange(t.size), t] += 1  # m_t = n_t - 1: the others' count
    person_variance = meas.variance[block]
    key = (y_minus_m.shape, y_minus_m.tobytes(), j.tobytes(), person_variance.tobytes())
    if key not in exact_informed_references:
        rank = np.empty_like(y_minus_m)
        score = np.empty(y_minus_m.shape)
        for variance in PROPERTY_VARIANCES:
            who = person_variance == variance
            rank[who], score[who] = _exact_informed_scores(
                y_minus_m[who], np.broadcast_to(j, (who.sum(), N_CATEGORIES)), variance)
        exact_informed_references[key] = rank, score
    rank, score = exact_informed_references[key]
    exact_map = np.argmax(rank, axis=1)  # the first of the largest: ties to the smallest
    true_tied = (rank[np.arange(t.size), t] == rank.max(axis=1)) & (
        (rank == rank.max(axis=1, keepdims=True)).sum(axis=1) > 1)
    assert true_tied.sum() > 100  # the property is exercised
    np.testing.assert_array_equal(risk.map, exact_map)
    np.testing.assert_array_equal(risk.posterior_true[true_tied], risk.map_posterior[true_tied])
    top = score.max(axis=1, keepdims=True)
    softmax = np.exp(score - top) / np.exp(score - top).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(risk.posterior_true, softmax[np.arange(t.size), t],
                               rtol=0, atol=FLOAT_TOL)


#: The address space the huge-count test's fork may map beyond what it holds after a first
#: call (a table of log m! up to 10^12 would be 7.3 TiB).
HUGE_COUNT_HEADROOM = 256 * 2**20


def _numpy_path_under_headroom(y, lam, variance):
    """The numpy path's log ratios in this process (a fork of the test's: see the test) under
    an address-space bound of what it holds after a first call plus HUGE_COUNT_HEADROOM."""
    os.environ["DPRISK_KERNELS"] = "numpy"
    kernels.poisson_gaussian_log_ratio(np.array([5]), np.array([3.0]), 10.0)  # lazy imports
    assert kernels.kernel_path() == "numpy"
    with open("/proc/self/status") as status:
        held = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = held + HUGE_COUNT_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard < 0 else min(limit, hard), hard))
    return kernels.poisson_gaussian_log_ratio(y, lam, variance)


def _mp_log_ratio(y: int, lam: float, variance: float, half: int = 400) -> float:
    """log L(1) - log L(0) by mpmath (50 digits) over 2 * half terms around the mode."""
    mpmath.mp.dps = 50
    lam, var = mpmath.mpf(lam), mpmath.mpf(variance)
    centre = int(y - variance * math.log(y / float(lam)))  # the summand's mode, y >> sigma^2

    def log_l(delta):
        terms = [m * mpmath.log(lam) - mpmath.loggamma(m + 1) - (y - m - delta) ** 2 / (2 * var)
                 for m in range(centre - half, centre + half)]
        top = max(terms)
        assert terms.index(top) not in (0, len(terms) - 1)  # the window holds the mode
        return top + mpmath.log(mpmath.fsum(mpmath.exp(v - top) for v in terms))

    return float(log_l(1) - log_l(0))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmSize (Linux)")
def test_numpy_path_sums_a_huge_count_in_bounded_memory():
    """A noisy count of 10^12 (and 10^9) on the numpy path: memory for its window only.

    Before the fix the numpy path built a table of log m! from 0 to the largest count
    (7.28 TiB at 10^12, 7.45 GiB at 10^9: MemoryError in the child). Its values are the
    compiled path's and mpmath's within 4 ulps of the terms m log(lambda) - log m! (about
    2.7e13 at m = 10^12: an ulp 2^-8; measured 2.8e-3 off mpmath on both paths, equal).
    """
    y = np.array([10**12, 10**9, 5])
    lam = np.array([3.0, 3.0, 3.0])
    variance = 10.0928
    # in a fork of this process (its imports done: no new interpreter), which the bound and
    # the setting leave with it
    got = answer_of_a_fork(lambda: _numpy_path_under_headroom(y, lam, variance))
    term_size = y * np.log(y)  # |m log(lambda) - log m!| ~ m log m at the mode m ~ y
    tolerance = 4 * np.spacing(term_size)
    compiled = importlib.import_module("dprisk.inference.population.kernels_jit")
    want_compiled = compiled.poisson_gaussian_log_ratio(y.astype(float), lam,
                                                        np.full(3, variance))
    assert np.all(np.abs(got - want_compiled) <= tolerance)
    want = [_mp_log_ratio(int(a), float(b), variance) for a, b in zip(y[:2], lam[:2])]
    assert np.all(np.abs(got[:2] - want) <= tolerance[:2])


def test_the_earlier_form_of_informed_posteriors_gives_the_same_posteriors():
    """``dr.population.informed_posteriors(logits, variance, person_group, person_category)``,
    the form before ties were made exact, still answers: the same posteriors within a few
    ulps (the own score is then a + 1/sigma^2, one rounding apart) and the same MAP where no
    two scores tie."""
    rng = np.random.default_rng(7)
    true = rng.integers(0, 4, size=(6, kernels.N_CATEGORIES))
    noisy = true + rng.integers(-3, 4, size=true.shape)
    prior = rng.dirichlet(np.ones(kernels.N_CATEGORIES), size=6)
    variance = np.array([0.7, 1.0, 3.0, 10.09, 25.0, 60.0])
    group, category = np.nonzero(true)
    groups = kernels.informed_logits(noisy, true, prior, variance)
    new = kernels.informed_posteriors(groups, group, category)
    old = kernels.informed_posteriors(groups.logits, variance, group, category)
    np.testing.assert_allclose(old[0], new[0], rtol=1e-13, atol=0)
    np.testing.assert_allclose(old[1], new[1], rtol=1e-13, atol=0)
    np.testing.assert_array_equal(old[2], new[2])
    with pytest.raises(TypeError, match="earlier"):
        kernels.informed_posteriors(groups.logits, variance, group)


def test_numpy_path_windows_do_not_warn_on_an_overflowing_edge_ratio(monkeypatch):
    """The numpy path's neglected-mass bound divides the window's edge terms; with the second
    term subnormal the ratio overflowed and numpy warned 'overflow encountered in divide'
    (a RuntimeWarning in the user's output, an error where warnings are: at y = -4,
    lambda = 0.373, sigma^2 = 0.006, inside the allowed 1e-4 <= sigma^2). The ratio's
    overflow is handled (an infinite ratio: no geometric bound, the window widened); the
    value is mpmath's within 1e-12 relative (a few ulps of terms of size 1e3)."""
    monkeypatch.setenv("DPRISK_KERNELS", "numpy")
    y, lam, variance = -4.0, 0.3734730026382249, 0.00607504738613045
    got = kernels.poisson_gaussian_log_ratio(np.array([y]), np.array([lam]),
                                             np.array([variance]))[0]
    mpmath.mp.dps = 50

    def log_l(delta):
        return mpmath.log(mpmath.fsum(
            mpmath.exp(m * mpmath.log(lam) - mpmath.loggamma(m + 1)
                       - (y - m - delta) ** 2 / (2 * mpmath.mpf(variance)))
            for m in range(60)))

    want = float(log_l(1) - log_l(0))
    assert got == pytest.approx(want, rel=1e-12)
