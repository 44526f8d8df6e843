"""The per-person kernels against independent references (issue 34, part 3).

* informed and outsider: the factorised formulas equal a brute-force enumeration of the joint
  likelihood of every noisy cell (informed: all 2,016 cells of the block for each of the 126
  hypotheses; outsider: the others' counts summed over a box of joint count vectors);
* the Poisson-Gaussian sums equal a direct sum over m = 0..799 (scipy's Poisson pmf);
* sigma^2 -> 0 recovers the exact tables: the informed adversary is certain, the outsider's
  posterior is the group's table n_c / n (a unique's category known with certainty);
* calibration on groups simulated from the outsider's own model.
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from population_helpers import measure, true_cells
from scipy.stats import poisson

from dprisk.inference.population import kernels
from dprisk.inference.population.categories import N_CATEGORIES, category, detailed_cell, group
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
    # log-ratios up to ~1e4 in size at sigma^2 = 1e-3: relative float64 agreement
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("mode", ["numpy", "compiled", "auto"])
def test_a_cells_sum_does_not_depend_on_its_batch(rng, mode, monkeypatch):
    """Bit for bit: a cell alone, in a small batch and in a large one (partition-invariance).

    ``auto`` too: the path may not be chosen by the batch's size (the two paths agree to
    ~1e-14 only, so a size rule would make a partitioned run differ in the last bits).
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
