"""The constraint-dropping Gibbs variant (inference.variant) against independent references.

* the X1 update in the logit form against the paper's eq. (X1fc) written as a Gaussian in k1
  around ``(d x1* + k2 - y1*) / (d + 1)`` (without ``k1 <= k2``);
* the vectorised stationary log-odds against the one-release law of ``variant_stationary``;
* the two-block sweep on tables against its stationary law (N_MCSE MCSE).
"""

import math

import numpy as np
import pytest
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP
from study_checks import assert_thresholds_are_the_scanned_ones

from dprisk.inference.studies.variant import (
    VariantTables,
    tabulated_gibbs,
    variant_gibbs_sample,
    variant_log_odds,
    variant_prob_x1,
    variant_stationary,
    variant_x1_logit,
)
from dprisk.inference.two_level.gibbs import ExactConditionals
from dprisk.models.scenario import Scenario

RHO1 = RHO_BLOCK
RHO2 = RHO_BLOCK_GROUP
N_MCSE = 4.0


def paper_x1fc(k2, *, x1_star, y1_star, rho1, d, p, known):
    """Eq. (X1fc) for k1 in {m, m+1}, ignoring k1 <= k2, as a Gaussian in k1."""
    centre = (d * x1_star + (k2 - y1_star)) / (d + 1)
    scale = (d + 1) / d * rho1
    log_up = -scale * (known + 1 - centre) ** 2 + math.log(p)
    log_down = -scale * (known - centre) ** 2 + math.log(1.0 - p)
    return 1.0 / (1.0 + np.exp(log_down - log_up))


@pytest.mark.parametrize(("x1_star", "y1_star", "p", "known"),
                         [(2, -1, 0.5, 0), (0, 3, 0.2, 1), (5, 0, 0.9, 2)])
def test_x1_update_is_eq_x1fc_without_the_constraint(x1_star, y1_star, p, known):
    k2 = np.arange(-3, 12)
    kwargs = {"x1_star": x1_star, "y1_star": y1_star, "rho1": 0.7, "d": 4, "p": p,
              "known": known}
    np.testing.assert_allclose(variant_prob_x1(k2, **kwargs), paper_x1fc(k2, **kwargs),
                               rtol=1e-12, atol=1e-15)
    logit = variant_x1_logit(x1_star, y1_star, k2, rho1=0.7, d=4, p=p, known=known)
    np.testing.assert_allclose(1.0 / (1.0 + np.exp(-logit)), paper_x1fc(k2, **kwargs),
                               rtol=1e-12)
    scalar = variant_prob_x1(3, **kwargs)
    assert isinstance(scalar, float)
    assert scalar == pytest.approx(float(paper_x1fc(3, **kwargs)), rel=1e-12)


def test_vectorised_log_odds_matches_one_release_law():
    releases = [(2, 1, -1), (0, 3, 2), (4, 2, 0), (1, 1, 1)]
    for release in releases:
        law = variant_stationary(*release, rho1=RHO1, rho2=RHO2, d=27)
        expected = math.log(law.prob_x1) - math.log1p(-law.prob_x1)
        got = variant_log_odds(*release, rho1=RHO1, rho2=RHO2, d=27)
        assert isinstance(got, float)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
    x1s, x2s, y1s = (np.array(v) for v in zip(*releases, strict=True))
    vector = variant_log_odds(x1s, x2s, y1s, rho1=RHO1, rho2=RHO2, d=27)
    assert vector.shape == (len(releases),)
    params = Scenario.two_level(rho1=RHO1, rho2=RHO2, d=27, p=0.5, known=0,
                                      prior="improper")
    tables = VariantTables(x2s, y1s, params)
    # two evaluations of the same sums (tables, vectorised call): equal here; their exp/log
    # kernels may differ by ulps on other CPUs (issue 32): 1e-13 relative, 1e-13 near 0
    np.testing.assert_allclose(tables.log_odds((x1s - 0).astype(float)), vector, rtol=1e-13,
                               atol=1e-13)


def test_variant_needs_both_values_of_x1():
    with pytest.raises(ValueError, match="rules out X1"):
        variant_log_odds(1, 2, 1, rho1=0.5, rho2=0.5, d=3, known=1, prior="point:1")


def test_tabulated_gibbs_reaches_the_stationary_law():
    release = (2, 1, -1)
    law = variant_stationary(*release, rho1=RHO1, rho2=RHO2, d=27)
    draws = variant_gibbs_sample(*release, rho1=RHO1, rho2=RHO2, d=27, draws=4000, chains=8,
                                 tune=100, random_seed=11)
    assert draws.x1.shape == (8, 4000)
    lam = law.transition[1, 1] - law.transition[0, 1]
    tau = (1 + lam) / (1 - lam)
    mcse = math.sqrt(law.prob_x1 * (1 - law.prob_x1) * tau / draws.x1.size)
    assert abs((draws.x1 == 1).mean() - law.prob_x1) < N_MCSE * mcse
    # Same seed, same draws; the sweep itself is tabulated_gibbs on the release's tables.
    again = variant_gibbs_sample(*release, rho1=RHO1, rho2=RHO2, d=27, draws=4000, chains=8,
                                 tune=100, random_seed=11)
    np.testing.assert_array_equal(draws.x1, again.x1)
    cond = ExactConditionals(*release, rho1=RHO1, rho2=RHO2, d=27)
    p_unc = variant_prob_x1(cond.k2_values, x1_star=2, y1_star=-1, rho1=RHO1, d=27)
    direct = tabulated_gibbs(cond.x2_pmf_table[None], p_unc[None], np.array([cond.k2_start]),
                             p=0.5, known=0, draws=4000, tune=100, chains=8,
                             rng=np.random.default_rng(11))
    np.testing.assert_array_equal(direct.x2[0], draws.x2)


@pytest.mark.parametrize("prior", ["improper", "truncated:10", "point:25"])
def test_variant_thresholds_match_a_scan_of_the_log_odds(prior):
    """The guessed-bracket search (with its bisection fallback) gives the smallest offset j
    with log-odds > TIE_ATOL, found here by scanning every j in [-60, 60] (exact: both are
    integer answers from the same per-row log-odds), and the tie flag at j - 1; the grid holds
    rows where the linear guess misses (the fallback runs: counted)."""
    from dprisk.inference.studies import variant as variant_module

    params = Scenario.two_level(rho1=RHO1, rho2=RHO2, d=27, p=0.5, known=0, prior=prior)
    x2s, y1s = (a.ravel() for a in np.meshgrid(np.arange(-4, 7), np.arange(-40, 41, 3),
                                               indexing="ij"))
    tables = VariantTables(x2s, y1s, params)
    calls = []
    original = variant_module._bracketed_bisection

    def counted(subset):
        calls.append(subset.g.shape[0])
        return original(subset)

    variant_module._bracketed_bisection = counted
    try:
        threshold, tie = variant_module.variant_thresholds(x2s, y1s, params)
    finally:
        variant_module._bracketed_bisection = original
    assert_thresholds_are_the_scanned_ones(threshold, tie, tables,
                                           np.arange(-60, 61, dtype=float))
    if prior != "point:25":
        assert calls and sum(calls) < x2s.size  # the fallback ran, on a few rows only


@pytest.mark.parametrize("index", [np.array([7, 0, 3]), slice(2, 9, 3), "mask"])
def test_rows_of_the_tables_give_those_rows_log_odds(index):
    """``VariantTables.rows`` (the bisection's fallback runs on it) is a ``VariantTables`` of
    the selected releases whose log-odds are the full tables' values of those rows, bit for
    bit: each row's value is the same operations on that row's own numbers (``cond`` and
    ``g`` are copied, not recomputed), in this process on this CPU. Offsets up to 400 reach the
    log-space branch for underflowing sums (all rows at +400)."""
    params = Scenario.two_level(rho1=RHO1, rho2=RHO2, d=27, p=0.5, known=0,
                                prior="truncated:10")
    x2s, y1s = np.arange(-2, 10), np.arange(0, 36, 3)
    tables = VariantTables(x2s, y1s, params)
    if isinstance(index, str):
        index = np.arange(x2s.size) % 3 == 1
    subset = tables.rows(index)
    assert type(subset) is VariantTables and subset.params is params
    np.testing.assert_array_equal(subset.cond, tables.cond[index])
    np.testing.assert_array_equal(subset.g, tables.g[index])
    for offset in (-400.0, -3.0, 0.0, 2.0, 400.0):
        full = tables.log_odds(np.full(x2s.size, offset))
        part = subset.log_odds(np.full(subset.g.shape[0], offset))
        np.testing.assert_array_equal(part, full[index])


def _tabulated_gibbs_loop(x2_pmf, prob_x1, k2_start, *, p, known, draws, tune, chains, rng):
    """The sweep loop :func:`tabulated_gibbs` replaced (one iteration per sweep), as reference."""
    n_releases, _, width = x2_pmf.shape
    rows = np.repeat(np.arange(n_releases), chains)
    cdf = np.cumsum(x2_pmf, axis=-1)[rows].reshape(2 * rows.size, width)
    p1 = prob_x1[rows]
    n = rows.size
    chain_rows = np.arange(n)

    def draw_x2(branch):
        u = rng.random(n)[:, None]
        return np.minimum((u >= cdf.take(2 * chain_rows + branch, axis=0)).sum(axis=1),
                          width - 1)

    branch = (rng.random(n) < p).astype(np.int64)
    index = draw_x2(branch)
    x1_out = np.empty((n, draws), dtype=np.int64)
    x2_out = np.empty((n, draws), dtype=np.int64)
    for sweep in range(tune + draws):
        branch = (rng.random(n) < p1[chain_rows, index]).astype(np.int64)
        index = draw_x2(branch)
        if sweep >= tune:
            x1_out[:, sweep - tune] = branch
            x2_out[:, sweep - tune] = index
    shape = (n_releases, chains, draws)
    return ((x1_out + known).reshape(shape),
            (x2_out + np.asarray(k2_start)[rows][:, None]).reshape(shape))


@pytest.mark.parametrize(("together", "block_cells"),
                         [(1 << 30, 1), (1 << 30, 700), (1 << 30, 1 << 21), (0, 1 << 21)])
@pytest.mark.parametrize("tune", [0, 3, 40])
def test_tabulated_gibbs_draws_what_the_sweep_loop_draws(monkeypatch, together, block_cells,
                                                         tune):
    # The sweeps computed together (resets and flips of the two-state X1 chain, in blocks of
    # sweeps) and the sweep loop (for many chains) give the loop's draws exactly, and leave
    # the generator where the loop leaves it.
    import dprisk.inference.studies.variant as variant

    monkeypatch.setattr(variant, "_TOGETHER_CELLS", together)
    monkeypatch.setattr(variant, "_BLOCK_CELLS", block_cells)
    gen = np.random.default_rng(5)
    width = 7
    x2_pmf = gen.dirichlet(np.full(width, 0.6), size=(4, 2))
    x2_pmf[0, 1, 3:] = 0.0  # an empty tail: the CDF reaches its end early
    prob_x1 = gen.uniform(size=(4, width))
    prob_x1[1] = np.where(np.arange(width) % 2, 1.0, 0.0)  # updates that cannot go both ways
    k2_start = np.array([0, 3, 5, 1])
    args = dict(p=0.3, known=2, draws=57, tune=tune, chains=3)
    rng_new, rng_old = np.random.default_rng(9), np.random.default_rng(9)
    new = tabulated_gibbs(x2_pmf, prob_x1, k2_start, rng=rng_new, **args)
    old_x1, old_x2 = _tabulated_gibbs_loop(x2_pmf, prob_x1, k2_start, rng=rng_old, **args)
    np.testing.assert_array_equal(new.x1, old_x1)
    np.testing.assert_array_equal(new.x2, old_x2)
    assert rng_new.random() == rng_old.random()
