"""Tests of models/mechanism/dg_sampling.py: both samplers against the exact pmf (chi-square GOF).

Every goodness-of-fit test uses a fixed seed and requires p > P_MIN; bins are contiguous
runs of the support with expected count >= MIN_EXPECTED, the outermost bins absorbing the
tails. A correct sampler fails one such test with probability P_MIN; ``test_gof_bites``
shows the same test rejects a plausible wrong sampler.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dprisk.models.census.allocation import census_level
from dprisk.models.mechanism import dg_exact, dg_sampling
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.mechanism.dg_sampling import sample, sample_exact, sample_sum

P_MIN = 1e-3
MIN_EXPECTED = 5.0
RHOS = [0.01, 0.099, 1.0, 10.0]
N_FAST = 1_000_000
# Exact sampler (~3e4 draws/s): enough draws for >= 2 bins with expected >= 5 per side;
# at rho = 10 P[X != mu] = 9e-5, so it needs 1.2e5 draws for the +-1 bins.
N_EXACT = {0.01: 20_000, 0.099: 20_000, 1.0: 20_000, 10.0: 120_000}


def binned_chisquare(noise, values, probs):
    """Chi-square GOF of integer ``noise`` against ``probs`` on ``values`` (contiguous grid).

    ``probs`` must carry all but a negligible (< 1e-12) part of the mass; values outside the
    grid fall into the first/last bin. Returns (p-value, number of bins).
    """
    noise = np.ravel(noise)
    expected = noise.size * np.asarray(probs)
    uppers, acc = [], 0.0
    for value, e in zip(values, expected, strict=True):
        acc += e
        if acc >= MIN_EXPECTED:
            uppers.append(value)
            acc = 0.0
    inner_edges = np.asarray(uppers[:-1])  # the remainder joins the last bin
    n_bins = inner_edges.size + 1
    assert n_bins >= 2, "too few draws for a chi-square test"
    bin_of_value = np.searchsorted(inner_edges, values, side="left")
    expected_bins = np.bincount(bin_of_value, weights=expected, minlength=n_bins)
    observed = np.bincount(np.searchsorted(inner_edges, noise, side="left"), minlength=n_bins)
    expected_bins *= noise.size / expected_bins.sum()
    return stats.chisquare(observed, expected_bins).pvalue, n_bins


def dg_grid(rho):
    k = int(dg.support_halfwidth(rho, 1e-17))
    values = np.arange(-k, k + 1)
    return values, dg.pmf(values, 0, rho)


def dg_pvalue(noise, rho):
    return binned_chisquare(noise, *dg_grid(rho))[0]


# ---------------------------------------------------------------- goodness of fit


@pytest.mark.parametrize("rho", RHOS)
def test_fast_sampler_matches_pmf(rho):
    draws = sample(7, rho, size=N_FAST, random_seed=20260101)
    assert draws.dtype == np.int64
    assert dg_pvalue(draws - 7, rho) > P_MIN


@pytest.mark.parametrize("rho", RHOS)
def test_exact_sampler_matches_pmf(rho):
    draws = sample_exact(-3, rho, size=N_EXACT[rho], random_seed=20260102)
    assert draws.dtype == np.int64
    assert dg_pvalue(draws + 3, rho) > P_MIN


@pytest.mark.parametrize("rho", RHOS)
def test_rejection_path_matches_pmf(rho):
    noise = dg_sampling.rejection_noise(np.full(N_FAST // 4, rho), np.random.default_rng(5))
    assert dg_pvalue(noise, rho) > P_MIN


def test_gof_bites():
    """A rounded continuous N(0, 1/(2 rho)) at rho = 1 (P[0] = 0.52 vs 0.56) is rejected."""
    rng = np.random.default_rng(20260103)
    rounded = np.rint(rng.normal(0.0, np.sqrt(0.5), size=N_FAST)).astype(np.int64)
    assert dg_pvalue(rounded, 1.0) < 1e-12
    # and the fast sampler at a 1% wrong rho is already detected with 1e6 draws
    assert dg_pvalue(sample(0, 1.01, size=N_FAST, random_seed=1), 1.0) < P_MIN


def test_exact_sampler_accepts_census_fraction():
    rho_block = census_level("block").rho_exact
    draws = sample_exact(0, rho_block, size=20_000, random_seed=11)
    assert dg_pvalue(draws, float(rho_block)) > P_MIN


def test_sample_sum_matches_convolution():
    rho, n_terms = 0.099, 5
    values, probs = dg_grid(rho)
    conv = probs
    for _ in range(n_terms - 1):
        conv = np.convolve(conv, probs)
    k = n_terms * int(values[-1])
    draws = sample_sum(n_terms, rho, size=200_000, random_seed=3)
    p_value, _ = binned_chisquare(draws, np.arange(-k, k + 1), conv)
    assert p_value > P_MIN


def test_many_distinct_rho_use_rejection_and_fit():
    rhos = np.geomspace(0.05, 5.0, dg_sampling.MAX_TABLES_PER_CALL + 2)
    draws = sample(0, rhos, size=(50_000, rhos.size), random_seed=8)
    for column, rho in enumerate(rhos):
        assert dg_pvalue(draws[:, column], rho) > P_MIN


def test_few_distinct_rho_use_tables_and_fit():
    rhos = np.array([0.01, 1.0, 10.0])
    draws = sample([0, 5, -5], rhos, size=(200_000, 3), random_seed=9)
    for column, (mu, rho) in enumerate(zip([0, 5, -5], rhos, strict=True)):
        assert dg_pvalue(draws[:, column] - mu, rho) > P_MIN


def test_tiny_rho_variance():
    """rho = 1e-10 (no table): sample variance within 5 MCSE (sqrt(2/n) relative) of 1/(2 rho)."""
    rho, n = 1e-10, 100_000
    draws = sample(0, rho, size=n, random_seed=4)
    assert abs(draws.var() / (0.5 / rho) - 1.0) < 5 * np.sqrt(2.0 / n)


# ---------------------------------------------------------------- exact building blocks


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_frequency(gamma):
    bits = dg_exact.RandomBits(np.random.default_rng(12))
    n = 20_000
    hits = sum(
        dg_exact._bernoulli_exp(gamma.numerator, gamma.denominator, bits) for _ in range(n)
    )
    p = float(np.exp(-float(gamma)))
    if gamma == 0:
        assert hits == n
    else:
        assert stats.binomtest(hits, n, p).pvalue > P_MIN


def test_discrete_laplace_matches_pmf():
    t = 3
    bits = dg_exact.RandomBits(np.random.default_rng(13))
    noise = np.array([dg_exact._discrete_laplace(t, bits) for _ in range(20_000)])
    values = np.arange(-150, 151)
    probs = np.exp(-np.abs(values) / t)
    assert binned_chisquare(noise, values, probs / probs.sum())[0] > P_MIN


def test_random_bits_below_large_bound():
    bound = 3 * 2**70 + 1
    bits = dg_exact.RandomBits(np.random.default_rng(14))
    draws = [bits.below(bound) for _ in range(4_000)]
    assert all(0 <= d < bound for d in draws)
    # each third of the range should hold a third of the draws
    thirds = np.bincount([3 * d // bound for d in draws], minlength=3)
    assert stats.chisquare(thirds).pvalue > P_MIN
    assert bits.below(1) == 0


# ---------------------------------------------------------------- exact sampler: same draws

#: First 12 draws of sample_exact(0, rho, size=12, random_seed=20260102), recorded from the
#: Fraction-based implementation before the integer rewrite; they must never change.
PINNED_EXACT_DRAWS = [
    (census_level("block").rho_exact, [1, -1, -1, 1, 0, 1, -2, 0, 3, -1, 2, 0]),
    (Fraction(1, 3), [-1, 0, 1, 0, 0, 0, 0, 1, 0, -2, -2, 1]),
    (0.01, [-4, 15, -2, 10, 4, -3, 7, -16, 7, -4, -6, -1]),
    (1.0, [0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0]),
    (10.0, [0] * 12),
    (1e-06, [-274, -2258, 940, 120, 1603, -1, 1249, 884, -599, -606, -94, 169]),
    (3, [0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0, -1]),
]


@pytest.mark.parametrize(("rho", "expected"), PINNED_EXACT_DRAWS)
def test_exact_sampler_pinned_draws(rho, expected):
    assert sample_exact(0, rho, size=12, random_seed=20260102).tolist() == expected


def test_exact_sampler_pinned_generator_state():
    """300 draws at rho = 0.099 leave the Generator where the Fraction version left it."""
    rng = np.random.default_rng(5)
    sample_exact(0, 0.099, size=300, random_seed=rng)
    assert rng.integers(0, 2**63, size=2).tolist() == [7032922419469868976, 6478242258367422973]


def reference_exact_draws(rho, n_draws, bits):
    """CKS Algorithm 3 function by function, gamma as a Fraction (the original implementation)."""
    sigma2 = 1 / (2 * Fraction(rho))
    t = math.isqrt(sigma2.numerator * sigma2.denominator) // sigma2.denominator + 1
    shift, two_sigma2 = sigma2 / t, 2 * sigma2
    draws = []
    while len(draws) < n_draws:
        y = dg_exact._discrete_laplace(t, bits)
        gamma = (abs(y) - shift) ** 2 / two_sigma2
        if dg_exact._bernoulli_exp(gamma.numerator, gamma.denominator, bits):
            draws.append(y)
    return draws


@pytest.mark.parametrize(
    "rho",
    [census_level("block").rho_exact, Fraction(1, 3), 0.099, 1.0, 10, 1e6, Fraction(10**12 + 1, 3),
     1e-4, Fraction(1, 2 * 33**2)],  # t = 71 and t = 34: no Laplace attempt table
)
def test_exact_noise_draws_what_the_building_blocks_draw(rho):
    """Same draws, same bits consumed: the reference continues identically on the same source."""
    fast = dg_exact.RandomBits(np.random.default_rng(17), words_per_refill=8)
    slow = dg_exact.RandomBits(np.random.default_rng(17), words_per_refill=8)
    sigma2 = 1 / (2 * dg_exact.exact_rho(rho))
    t = math.isqrt(sigma2.numerator * sigma2.denominator) // sigma2.denominator + 1
    for n_draws in (1, 400, 7):
        assert dg_exact.exact_noise(sigma2, t, n_draws, fast) == reference_exact_draws(
            rho, n_draws, slow)
        assert fast.bits(64) == slow.bits(64)
        assert fast.below(10**30) == slow.below(10**30)
    assert fast._rng.integers(2**63) == slow._rng.integers(2**63)


def test_exp_minus_one_coin_table_matches_coin():
    table = dg_exact._exp_minus_one_coin_table()
    source = dg_exact.RandomBits(np.random.default_rng(18))
    rng = np.random.default_rng(19)
    for key in rng.integers(0, len(table), size=3000).tolist():
        pool = key | int(rng.integers(2**62)) << dg_exact._TABLE_BITS
        heads, rest, rest_bits = dg_exact._exp_minus_one_coin(pool, 100, source)
        if table[key]:
            assert (heads, 100 - rest_bits) == (table[key] & 1, table[key] >> 1)
            assert rest == pool >> (table[key] >> 1)
    assert 0.99 < np.mean([entry != 0 for entry in table]) < 1


@pytest.mark.parametrize("t", [1, 3, 8, dg_exact._MAX_TABLE_SCALE])
def test_laplace_attempt_table_matches_attempt(t):
    table = dg_exact._laplace_attempt_table(t)
    source = dg_exact.RandomBits(np.random.default_rng(20))
    rng = np.random.default_rng(21)
    for key in rng.integers(0, len(table), size=3000).tolist():
        pool = key | int(rng.integers(2**62)) << dg_exact._TABLE_BITS
        magnitude, negative, rest, rest_bits = dg_exact._laplace_attempt(t, pool, 100, source)
        entry = table[key]
        if entry:
            used = entry & 31
            assert (100 - rest_bits, rest) == (used, pool >> used)
            if entry & 32:
                assert negative == -1
            else:
                assert (magnitude, negative) == (entry >> 7, entry >> 6 & 1)


def test_exact_sampler_accepts_numpy_integer_rho():
    np.testing.assert_array_equal(sample_exact(0, np.int64(3), size=12, random_seed=20260102),
                                  sample_exact(0, 3, size=12, random_seed=20260102))


# ---------------------------------------------------------------- the alias table itself


@pytest.mark.parametrize("rho", [1e-6, 0.099, 1.0, 10.0, 1e4])
def test_alias_table_reproduces_pmf(rho):
    """Table probabilities equal the double pmf to 2**-64 absolute + 1e-14 relative."""
    table = dg_sampling._alias_table(rho)
    n_columns = 1 << table.index_bits
    capacity = 2 ** (64 - table.index_bits)
    own, alias = table.values[0::2], table.values[1::2]
    keep = table.thresholds.astype(float)
    assert np.all(table.thresholds <= capacity)
    halfwidth = -int(own[0])
    implied = np.zeros(n_columns)
    np.add.at(implied, own + halfwidth, keep / capacity / n_columns)
    np.add.at(implied, alias + halfwidth, (capacity - keep) / capacity / n_columns)
    values = np.arange(-halfwidth, halfwidth + 1)
    assert np.all(implied[values.size :] == 0.0)  # padding columns never yield their own value
    implied = implied[: values.size]
    probs = dg.pmf(values, 0, rho)
    allowed = 2.0**-64 + 1e-14 * probs
    # the mode also absorbs the amount by which the double pmf misses 1 (about 1e-16)
    allowed[halfwidth] += abs(1.0 - math.fsum(probs)) + n_columns * 2.0**-64
    assert np.all(np.abs(implied - probs) <= allowed)
    assert abs(math.fsum(implied) - 1.0) < 1e-15
    # the truncated tail is below the 2**-64 resolution of the random words
    assert float(dg.sf(halfwidth, 0, rho)) * 2 < dg_sampling.TABLE_TAIL_MASS < 2.0**-64


# ---------------------------------------------------------------- shapes, seeds, inputs


def test_broadcasting_of_mu_and_rho():
    mu = np.array([0, 100, 1_000])
    draws = sample(mu, 50.0, size=(4, 3), random_seed=1)
    assert draws.shape == (4, 3)
    assert np.all(np.abs(draws - mu) <= 1)  # P[|X - mu| > 1] = 2e-87 at rho = 50
    assert sample(mu, 1.0, random_seed=1).shape == (3,)
    assert sample(0, np.ones((2, 1)), size=(2, 5), random_seed=1).shape == (2, 5)
    assert sample(mu[:, None], [0.5, 1.0], random_seed=1).shape == (3, 2)
    assert sample(0, 1.0, random_seed=1).shape == ()
    assert sample_exact([10, 20], 50.0, random_seed=1).tolist() == [10, 20]
    assert sample_exact(mu, 1.0, size=(2, 3), random_seed=1).shape == (2, 3)
    assert sample_sum(3, [0.5, 1.0], size=(4, 2), random_seed=1).shape == (4, 2)


def test_seed_reproduces_draws():
    def same(a, b):
        return np.array_equal(a, b)

    assert same(sample(3, 0.099, size=1000, random_seed=42),
                sample(3, 0.099, size=1000, random_seed=42))
    assert not same(sample(3, 0.099, size=1000, random_seed=42),
                    sample(3, 0.099, 1000, random_seed=43))
    assert same(sample_exact(0, 0.5, size=50, random_seed=42),
                sample_exact(0, 0.5, 50, random_seed=42))
    assert same(sample_sum(4, 0.1, size=50, random_seed=42),
                sample_sum(4, 0.1, 50, random_seed=42))
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    first = sample(0, 1.0, size=10, random_seed=rng_a)
    assert same(first, sample(0, 1.0, size=10, random_seed=rng_b))
    # a Generator passed down is advanced, not reset
    assert not same(sample(0, 0.01, size=100, random_seed=rng_a),
                    sample(0, 0.01, 100, random_seed=7))



def test_sample_sum_is_the_sum_of_sample_draws():
    """sample_sum draws exactly what n calls of sample(0, rho) on one generator draw."""
    rng = np.random.default_rng(11)
    expected = sum(sample(0, [0.3, 2.0], size=(6, 2), random_seed=rng) for _ in range(4))
    np.testing.assert_array_equal(sample_sum(4, [0.3, 2.0], size=(6, 2), random_seed=11),
                                  expected)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: sample(0, -1.0, 5), "rho"),
        (lambda: sample(0, [1.0, np.nan], 2), "rho"),
        (lambda: sample(0.5, 1.0, 5), "mu"),
        (lambda: sample([0, 1, 2], 1.0, size=(2,)), "size"),
        (lambda: sample(0, 1.0, size=-3), "size"),
        (lambda: sample_exact(0, 0.0, 5), "rho"),
        (lambda: sample_exact(0, Fraction(-1, 2), 5), "rho"),
        (lambda: sample_exact(0, [1.0, 2.0], 5), "rho"),
        (lambda: sample_exact(1.5, 1.0, 5), "mu"),
        (lambda: sample_sum(0, 1.0, 5), "n_terms"),
        (lambda: sample_sum(2, -1.0, 5), "rho"),
    ],
)
def test_bad_input_names_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("seed", [True, False, np.bool_(True)])
def test_a_bool_is_not_a_seed(seed):
    """numpy takes True as the seed 1: before the fix sample_posterior(..., method="gibbs",
    random_seed=True) ran with seed 1 and recorded no seed (simulate_p_correct refused it)."""
    from dprisk.inference.two_level.sampling import sample_posterior
    from dprisk.models.mechanism.dg_sampling import as_generator

    with pytest.raises(TypeError, match=r"^random_seed must be a numpy Generator, a seed"):
        as_generator(seed, "random_seed")
    with pytest.raises(TypeError, match=r"^random_seed must be"):
        sample_posterior(1, 2, 1, rho1=0.5, rho2=0.5, d=3, method="gibbs", draws=10,
                         random_seed=seed)
