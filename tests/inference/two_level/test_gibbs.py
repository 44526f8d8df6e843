"""Tests of inference/two_level/gibbs.py: the single-state kernels vs the paper's closed-form full
conditionals (eqs. X1fc, X2fc), the alias tables and the time scan against plain loops, and
the sampler's marginals and lag-1 transitions against exact values within 4 MCSE.

MCSE: batch means (BATCHES batches per chain) of the indicator in question, floored at the
independent-draws value sqrt(q (1 - q) / N) computed from the exact q.
"""

import math

import numpy as np
import pytest
from census_values import CENSUS_TWO_LEVEL as CENSUS
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP

from dprisk.inference.two_level.exact import exact_posterior
from dprisk.inference.two_level.gibbs import (
    ExactConditionals,
    GibbsDraws,
    alias_table,
    gibbs_sample,
    to_datatree,
)
from dprisk.inference.two_level.x1_path import x1_path

NB_SPEC = "models/examples/negative_binomial_prior.py:prior"
Z_MAX = 4.0
BATCHES = 20
MIN_EXPECTED = 20  # compare pmf cells with at least this many expected draws


def mcse(indicator: np.ndarray, exact: float) -> float:
    """Batch-means MCSE of the mean of ``indicator`` (..., chains, draws)."""
    chains_draws = indicator.reshape(-1, indicator.shape[-1])
    n_draws = chains_draws.shape[-1] // BATCHES * BATCHES
    means = chains_draws[:, :n_draws].reshape(chains_draws.shape[0], BATCHES, -1).mean(-1)
    batch_se = means.std(ddof=1) / math.sqrt(means.size)
    iid_se = math.sqrt(exact * (1 - exact) / indicator.size)
    return max(batch_se, iid_se)


def assert_within_mcse(indicator, exact, label):
    estimate = indicator.mean()
    se = mcse(indicator, exact)
    assert abs(estimate - exact) <= Z_MAX * se, f"{label}: {estimate} vs exact {exact} (se {se})"


# -- kernels against the paper's closed forms -------------------------------------------------


@pytest.mark.parametrize("release", [(2, 1, -1), (0, 4, 7), (1, -3, 25)])
def test_kernels_match_paper_full_conditionals(release):
    x1s, x2s, y1s = release
    d, rho1, rho2 = 27, RHO_BLOCK, RHO_BLOCK_GROUP
    cond = ExactConditionals(*release, **CENSUS, p=0.3, known=0)
    # X1 | X2 (eq. X1fc), restricted to k1 <= k2.
    k2 = np.arange(0, 40)
    centre = (d * x1s + (k2 - y1s)) / (d + 1)
    log1 = -(d + 1) / d * rho1 * (1 - centre) ** 2 + math.log(0.3)
    log0 = -(d + 1) / d * rho1 * (0 - centre) ** 2 + math.log(0.7)
    want = np.where(k2 >= 1, 1 / (1 + np.exp(log0 - log1)), 0.0)
    np.testing.assert_allclose(cond.prob_x1_given_x2(k2), want, rtol=1e-12, atol=0)
    # X2 | X1 (eq. X2fc) on {k1, k1+1, ...}, normalised by brute force over a wide range.
    grid = np.arange(-200, 400)
    for k1 in (0, 1):
        mean = (rho2 * x2s + rho1 / d * (y1s + k1)) / (rho2 + rho1 / d)
        weights = np.where(grid >= k1, np.exp(-(rho2 + rho1 / d) * (grid - mean) ** 2), 0.0)
        weights /= weights.sum()
        got = np.zeros_like(weights)
        got[np.searchsorted(grid, cond.k2_values)] = cond.x2_pmf_table[k1]
        np.testing.assert_allclose(got, weights, rtol=1e-10, atol=1e-15)


def test_x1_kernel_outside_window_and_impossible_states():
    cond = ExactConditionals(2, 1, -1, **CENSUS, known=3, prior="truncated:40")
    far = np.array([35, 40])
    assert far.max() > cond.k2_values.max()
    got = cond.prob_x1_given_x2(far)
    # eq. X1fc with known = 3 plus the truncated prior's weights 1/(40 - k1 + 1).
    centre = (27 * 2 + (far + 1)) / 28
    log1 = -28 / 27 * RHO_BLOCK * (4 - centre) ** 2 - math.log(37)
    log0 = -28 / 27 * RHO_BLOCK * (3 - centre) ** 2 - math.log(38)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(log0 - log1)), rtol=1e-12)
    assert cond.prob_x1_given_x2(3) == 0.0  # k2 < m + 1 forces X1 = m
    with pytest.raises(ValueError, match="k2 must be a possible value"):
        cond.prob_x1_given_x2(2)
    with pytest.raises(ValueError, match="k2 must be a possible value"):
        cond.prob_x1_given_x2(41)
    point = ExactConditionals(2, 1, -1, **CENSUS, known=3, prior="point:3")
    assert point.feasible_x1 == (3,)
    with pytest.raises(ValueError, match="feasible"):
        point.x2_given_x1(4, 0.5)
    with pytest.raises(ValueError, match="one release"):
        ExactConditionals([1, 2], 1, -1, **CENSUS)


def test_single_state_kernels_draw_the_tables():
    rng = np.random.default_rng(3)
    cond = ExactConditionals(0, 3, 4, **CENSUS, prior="truncated:10")
    n = 200_000
    for k1 in (0, 1):
        draws = cond.draw_x2_given_x1(np.full(n, k1), rng)
        freq = np.bincount(draws - cond.k2_start, minlength=cond.width) / n
        se = np.sqrt(cond.x2_pmf_table[k1] * (1 - cond.x2_pmf_table[k1]) / n)
        assert np.all(np.abs(freq - cond.x2_pmf_table[k1]) <= Z_MAX * se + 1e-12)
    k2 = np.full(n, 4)
    x1 = cond.draw_x1_given_x2(k2, rng)
    q = float(cond.prob_x1_given_x2(4))
    assert abs((x1 == 1).mean() - q) <= Z_MAX * math.sqrt(q * (1 - q) / n)
    assert int(cond.x1_given_x2(4, 0.0)) == 1 and int(cond.x1_given_x2(4, 0.999999)) == 0
    # The scalar fast paths (for step methods) agree with the array paths draw for draw.
    u = rng.random(500)
    k2 = rng.integers(1, 11, size=500)  # the support of truncated:10 with X1 = 1 possible
    k1 = rng.integers(0, 2, size=500)
    scalar_x1 = [cond.x1_given_x2(int(k), float(v)) for k, v in zip(k2, u, strict=True)]
    scalar_x2 = [cond.x2_given_x1(int(k), float(v)) for k, v in zip(k1, u, strict=True)]
    np.testing.assert_array_equal(scalar_x1, cond.x1_given_x2(k2, u))
    np.testing.assert_array_equal(scalar_x2, cond.x2_given_x1(k1, u))
    assert isinstance(scalar_x1[0], int) and isinstance(scalar_x2[0], int)


# -- building blocks -----------------------------------------------------------------------


def test_alias_tables_reproduce_the_pmf_exactly():
    rng = np.random.default_rng(11)
    prob = rng.random((50, 27)) ** 4
    prob[:, ::5] = 0.0
    prob[0] = 0.0
    prob[0, 3] = 1.0
    prob /= prob.sum(-1, keepdims=True)
    q, alias = alias_table(prob)
    width = prob.shape[-1]
    implied = q / width
    for row in range(prob.shape[0]):
        np.add.at(implied[row], alias[row], (1 - q[row]) / width)
    np.testing.assert_allclose(implied, prob, atol=1e-15)


def test_time_scan_equals_sequential_loop():
    rng = np.random.default_rng(5)
    n, steps = 7, 300
    u = rng.random((n, steps))
    a0 = rng.random((n, 1))
    a1 = rng.random((n, 1))  # some rows a0 > a1 (swaps), some a0 < a1
    first = rng.random(n) < 0.5
    want = np.empty((n, steps + 1), dtype=bool)
    want[:, 0] = first
    for s in range(steps):
        want[:, s + 1] = u[:, s] < np.where(want[:, s], a1[:, 0], a0[:, 0])
    np.testing.assert_array_equal(x1_path(first, u, a0, a1), want)


# -- the sampler against exact values -------------------------------------------------------

CASES = [
    ("improper", 0, [(2, 1, -1), (0, -3, 0), (1, 6, 20), (-1, 2, -15)]),
    ("truncated:10", 0, [(2, 1, -1), (0, 9, 30), (1, 12, 3)]),
    ("point:1", 0, [(2, 1, -1), (0, 5, 5), (1, -2, -10)]),
    ("point:25", 0, [(2, 1, -1), (0, 5, 5)]),
    (NB_SPEC, 0, [(2, 1, -1), (0, 8, 10)]),
    ("improper", 3, [(4, 3, -1), (3, 0, 0)]),
]


@pytest.mark.parametrize(("spec", "known", "releases"), CASES)
def test_marginals_within_mcse_of_exact(spec, known, releases):
    x1s, x2s, y1s = (np.array(c) for c in zip(*releases, strict=True))
    draws = gibbs_sample(
        x1s, x2s, y1s, **CENSUS, known=known, prior=spec, draws=10_000, chains=4, tune=10,
        random_seed=20201,
    )
    post = exact_posterior(x1s, x2s, y1s, **CENSUS, known=known, prior=spec)
    n = draws.x1[0].size
    for i, release in enumerate(releases):
        x1, x2 = draws.x1[i], draws.x2[i]
        assert np.all(x2 >= x1) and set(np.unique(x1)) <= {known, known + 1}
        q = float(post.prob_x1[i])
        if 0 < q < 1:
            assert_within_mcse(x1 == known + 1, q, f"{spec} {release} X1")
        else:
            assert np.all(x1 == known + q)
        for k2, pk in zip(post.k2_values[i], post.x2_pmf[i], strict=True):
            if pk * n >= MIN_EXPECTED and pk < 1:
                assert_within_mcse(x2 == k2, pk, f"{spec} {release} X2={k2}")


def test_support_constraint_dominates_when_x2_is_small():
    # x2* = -4: most posterior X2 mass sits at 0, where X1 = 1 is impossible.
    draws = gibbs_sample(0, -4, 0, **CENSUS, draws=5000, chains=4, random_seed=1)
    post = exact_posterior(0, -4, 0, **CENSUS)
    assert post.x2_pmf_at(0) > 0.4
    at_zero = draws.x2 == 0
    assert at_zero.mean() > 0.3 and np.all(draws.x1[at_zero] == 0)
    assert_within_mcse(draws.x1 == 1, float(post.prob_x1), "X1 with X2 near 0")


def test_point_mass_at_known_forces_x1():
    draws = gibbs_sample([3, -2], [0, 5], [1, 1], **CENSUS, prior="point:0", draws=100,
                         random_seed=2)
    assert np.all(draws.x1 == 0) and np.all(draws.x2 == 0)


def test_lag_one_transitions_match_the_gibbs_kernel():
    # The time-vectorised sampler must have the sequential sampler's path law, not just its
    # marginals: check P[X1_t = i, X1_{t+1} = j] and P[X2_t = k, X1_{t+1} = 1] in
    # stationarity against sums over the single-state kernels' tables.
    release, spec = (1, 2, 4), "truncated:10"
    cond = ExactConditionals(*release, **CENSUS, prior=spec)
    post = exact_posterior(*release, **CENSUS, prior=spec)
    pi1 = float(post.prob_x1)
    x2_pmf = post.x2_pmf_at(cond.k2_values)
    p1 = cond.prob_x1_given_x2(cond.k2_values)
    a = cond.x2_pmf_table @ p1  # P[X1' = 1 | X1 = b]
    draws = gibbs_sample(*release, **CENSUS, prior=spec, draws=20_000, chains=4, tune=10,
                         random_seed=9)
    now, nxt = draws.x1[..., :-1], draws.x1[..., 1:]
    for i, j, want in [
        (1, 1, pi1 * a[1]), (0, 1, (1 - pi1) * a[0]), (1, 0, pi1 * (1 - a[1]))
    ]:
        assert_within_mcse((now == i) & (nxt == j), want, f"X1 pair ({i}, {j})")
    for k2, pk, qk in zip(cond.k2_values, x2_pmf, p1, strict=True):
        want = pk * qk
        if want * now.size >= MIN_EXPECTED:
            assert_within_mcse((draws.x2[..., :-1] == k2) & (nxt == 1), want, f"X2={k2}, X1'=1")


def test_seed_reproducibility_and_shapes():
    kwargs = {**CENSUS, "draws": 50, "chains": 3, "tune": 7}
    first = gibbs_sample(2, 1, -1, **kwargs, random_seed=42)
    again = gibbs_sample(2, 1, -1, **kwargs, random_seed=np.random.default_rng(42))
    other = gibbs_sample(2, 1, -1, **kwargs, random_seed=43)
    assert isinstance(first, GibbsDraws)
    assert first.x1.shape == first.x2.shape == (3, 50)
    np.testing.assert_array_equal(first.x1, again.x1)
    np.testing.assert_array_equal(first.x2, again.x2)
    assert not np.array_equal(first.x2, other.x2)
    batch = gibbs_sample([[2, 0]], [1, 3], -1, **kwargs, random_seed=1)
    assert batch.x1.shape == (1, 2, 3, 50)


def test_datatree_like_pymc():
    import arviz_stats

    draws = gibbs_sample(2, 1, -1, **CENSUS, draws=400, chains=4, random_seed=5)
    tree = to_datatree(draws, attrs={"prior": "improper"})
    posterior = tree["posterior"]
    assert posterior["X2"].dims == ("chain", "draw")
    assert posterior.attrs["prior"] == "improper"
    np.testing.assert_array_equal(posterior["X1"].values, draws.x1)
    ess = arviz_stats.ess(tree, var_names=["X1"])
    assert float(ess["X1"]) > 100
    batch = to_datatree(gibbs_sample([2, 0], 1, -1, **CENSUS, draws=10, chains=2, random_seed=1))
    assert batch["posterior"]["X1"].dims == ("chain", "draw", "release_dim_0")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"draws": 0}, "draws"), ({"chains": 0}, "chains"), ({"tune": -1}, "tune"),
     ({"p": 0.0}, "p"), ({"prior": "truncated:0"}, "prior")],
)
def test_validation(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        gibbs_sample(2, 1, -1, **{**CENSUS, **kwargs})


def test_first_sweep_follows_the_documented_start():
    """One chain starts from X1 drawn from its prior (P[X1 = m + 1] = p), two chains or more
    from X1 = m + 1 (even chains) and m (odd); the first recorded X1 is then one X1-chain step
    later: P[X1 = m + 1] = p a_1 + (1 - p) a_0 for one chain, a_1 and a_0 for chains 0 and 1,
    with a_b = sum_k2 P[X2 = k2 | X1 = m + b] P[X1 = m + 1 | k2] from the tabulated
    conditionals. The release (3, 0, 0) at rho1 = 0.5, rho2 = 1, d = 3 has a_0 = 0.150,
    a_1 = 0.618, so a start from p = 1/2 instead of p = 0.1 moves the first one by 0.19
    (30 binomial standard errors of 4000 releases; the test allows 5)."""
    params = {"rho1": 0.5, "rho2": 1.0, "d": 3, "p": 0.1, "known": 0}
    cond = ExactConditionals(3, 0, 0, **params)
    a0, a1 = (cond.x2_pmf_table * cond.prob_x1_table).sum(-1)
    n = 4000

    def check(x1_first, want):
        got = float(np.mean(x1_first == 1))
        assert abs(got - want) <= 5 * np.sqrt(want * (1 - want) / x1_first.size), (got, want)

    one = gibbs_sample(np.full(n, 3), 0, 0, **params, chains=1, draws=1, random_seed=11)
    check(one.x1[:, 0, 0], 0.1 * a1 + 0.9 * a0)
    two = gibbs_sample(np.full(n, 3), 0, 0, **params, chains=2, draws=1, random_seed=12)
    check(two.x1[:, 0, 0], a1)
    check(two.x1[:, 1, 0], a0)


def test_tables_too_large_are_refused_before_building(monkeypatch):
    """At rho1 = rho2 = 1e-12 one release's first window holds 1.2e7 values of k2 and the
    conditional tables peak near 700 bytes a value (686 measured): 'dprisk posterior --method
    gibbs' at rho 1e-14 was killed by the kernel's OOM killer, at 1e-12 it raised numpy's
    MemoryError under a 6 GB address limit. Now refused naming the window's parameters
    before any table is built (under tracemalloc, below 16 MiB)."""
    import tracemalloc

    monkeypatch.delenv("DPRISK_MEMORY_LIMIT", raising=False)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"^rho1, rho2, d: the Gibbs tables of 1 release"):
            gibbs_sample(1, 1, 0, rho1=1e-12, rho2=1e-12, d=3, draws=10, chains=2,
                         random_seed=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024**2
