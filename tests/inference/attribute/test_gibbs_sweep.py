"""The vectorised sweep of the two-level histogram sampler draws exactly the former draws.

Issue 36: :func:`dprisk.inference.attribute.gibbs.two_level_cell_gibbs` looks up every cell's
log-odds of ``X1_j = m_j + 1`` given ``X2_j`` and draws every cell's ``X2_j`` at once, from uniforms
drawn a block of sweeps at a time. The reference is the former sweep, one cell at a time
with a fresh ``rng.random(chains)`` per use; NumPy's generator yields the same numbers in
one call as in several, so the tolerance is exact equality (draws and the generator's state
afterwards).
"""

import numpy as np
import pytest

from dprisk.inference.attribute import gibbs
from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS
from dprisk.inference.two_level.gibbs import ExactConditionals
from dprisk.models.numerics import logit, logsumexp
from dprisk.models.scenario import Release, Scenario


def _former(x1, x2, y1, known, *, rho1, rho2, d, prior, x2_prior, draws, chains, tune, rng):
    known = np.asarray(known)
    k = known.size
    prior = np.full(k, 1 / k) if prior is None else np.asarray(prior, float)
    conds = [ExactConditionals.tabulated(
        Release.two_level(x1[j], x2[j], y1[j]),
        Scenario.two_level(rho1, rho2, d, p=0.5, known=int(known[j]), prior=x2_prior),
        DEFAULT_TAIL_MASS) for j in range(k)]
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior)
        tables = [logit(c.prob_x1_table) for c in conds]

    def draw_x2(cell):
        return np.stack([c.x2_given_branch((cell == j).astype(np.int64), rng.random(chains))
                         for j, c in enumerate(conds)], -1)

    cell = rng.choice(k, size=chains, p=prior)
    state = draw_x2(cell)
    out_cell, out_x2 = [], []
    for sweep in range(tune + draws):
        scores = log_prior + np.stack([tables[j][state[:, j] - conds[j].k2_start]
                                       for j in range(k)], -1)
        prob = np.exp(scores - logsumexp(scores)[:, None])
        cell = (rng.random(chains)[:, None] > np.cumsum(prob, -1)[:, :-1]).sum(-1)
        state = draw_x2(cell)
        if sweep >= tune:
            out_cell.append(cell)
            out_x2.append(state)
    return np.stack(out_cell, 1), np.stack(out_x2, 1)


@pytest.mark.parametrize("block", [gibbs._UNIFORMS_PER_BLOCK, 50])
@pytest.mark.parametrize(("release", "kw"), [
    (([1, 0, 2, 0, 1], [3, 1, 2, 0, 4], [1, 0, 0, 1, 2], [0, 0, 1, 0, 1]),
     {"rho1": 0.5, "rho2": 0.8, "d": 2, "prior": None, "x2_prior": "truncated:6"}),
    (([0, 2, 1], [1, 2, 5], [0, 1, 3], [0, 1, 0]),
     {"rho1": 0.2, "rho2": 0.3, "d": 3, "prior": [0.2, 0.3, 0.5], "x2_prior": "improper"}),
])
def test_vectorised_sweep_draws_the_former_draws(release, kw, block, monkeypatch):
    monkeypatch.setattr(gibbs, "_UNIFORMS_PER_BLOCK", block)  # 50: blocks of 2-3 sweeps
    rng_new, rng_old = np.random.default_rng(11), np.random.default_rng(11)
    got = gibbs.two_level_cell_gibbs(*release, **kw, draws=40, chains=5, tune=7,
                                     random_seed=rng_new)
    cell, x2 = _former(*release, **kw, draws=40, chains=5, tune=7, rng=rng_old)
    np.testing.assert_array_equal(got.cell, cell)
    np.testing.assert_array_equal(got.x2, x2)
    assert rng_new.random() == rng_old.random()


def test_shared_conditionals_give_the_same_draws():
    """A cache shared by calls (SBC) reuses a cell's tables: same draws, one entry per cell
    release; a second call with a repeated cell release adds no entry for it."""
    kw = {"rho1": 0.5, "rho2": 0.5, "d": 2, "prior": [0.5, 0.3, 0.2],
          "x2_prior": "truncated:5", "draws": 3, "chains": 6, "tune": 5}
    cache = {}
    first = gibbs.two_level_cell_gibbs([1, 0, 2], [2, 1, 3], [0, 1, 1], [0, 1, 0], **kw,
                                       random_seed=3, conditionals=cache)
    assert len(cache) == 3
    again = gibbs.two_level_cell_gibbs([1, 0, 2], [2, 1, 4], [0, 1, 1], [0, 1, 0], **kw,
                                       random_seed=4, conditionals=cache)
    assert len(cache) == 4  # only the third cell's release is new
    for got, seed, x2 in ((first, 3, [2, 1, 3]), (again, 4, [2, 1, 4])):
        plain = gibbs.two_level_cell_gibbs([1, 0, 2], x2, [0, 1, 1], [0, 1, 0], **kw,
                                           random_seed=seed)
        np.testing.assert_array_equal(got.cell, plain.cell)
        np.testing.assert_array_equal(got.x2, plain.x2)


def test_runs_swept_together_draw_their_own_draws():
    """run_cell_gibbs sweeps prepared runs side by side (SBC's runs): each run's draws and the
    generator's state after them are those of two_level_cell_gibbs run by run with the same
    generator, bit for bit; runs of other shapes are grouped apart, and a run with a cell
    whose X1 has one possible value (point:1 at m = 1) comes back finished from prepare."""
    releases = [([1, 0, 2], [2, 1, 3], [0, 1, 1]), ([0, 3, 1], [4, 2, 1], [2, 0, 1]),
                ([2, 2, 0], [3, 3, 1], [1, 1, 0]), ([1, 1, 1], [1, 2, 3], [0, 1, 2])]
    common = {"rho1": 0.5, "rho2": 0.4, "d": 3}
    runs = [dict(zip(("x1_star", "x2_star", "y1_star"), r, strict=True)) for r in releases]
    shapes = [{"known": [0, 1, 0], "x2_prior": "truncated:6", "draws": 2, "chains": 5,
               "tune": 9, "prior": [0.5, 0.3, 0.2]}] * 3 + [
        {"known": [0, 1, 0], "x2_prior": "truncated:6", "draws": 4, "chains": 3, "tune": 2,
         "prior": [0.5, 0.3, 0.2]}]
    # a checked run: X1 = 2 impossible in cell 2 (point mass at X2 = 1), which the prior rules out
    shapes[2] = {**shapes[2], "known": [0, 0, 1], "x2_prior": "point:1",
                 "prior": [0.6, 0.4, 0.0]}
    rng_new, rng_old = np.random.default_rng(5), np.random.default_rng(5)
    prepared = [gibbs.prepare_cell_gibbs(**run, **shape, **common, random_seed=rng_new)
                for run, shape in zip(runs, shapes, strict=True)]
    assert isinstance(prepared[2], gibbs.CellGibbsDraws)
    assert all(isinstance(p, gibbs.PendingCellGibbs) for i, p in enumerate(prepared) if i != 2)
    together = gibbs.run_cell_gibbs(prepared)
    for run, shape, got in zip(runs, shapes, together, strict=True):
        alone = gibbs.two_level_cell_gibbs(**run, **shape, **common, random_seed=rng_old)
        np.testing.assert_array_equal(got.cell, alone.cell)
        np.testing.assert_array_equal(got.x2, alone.x2)
    assert rng_new.random() == rng_old.random()


def test_the_sweeps_memory_is_checked_before_anything_is_drawn(monkeypatch):
    """The uniforms and X2 draws, SWEEP_CELL_BYTES (24; 23.4 measured) a sweep, chain and cell.

    Unchecked, K = 2,016 cells with 4 chains of 20,000 draws (the 2020 histogram) asked for
    3.6 GiB past a 2 GiB limit (peak RSS 814 MB measured at 4,000 draws); now refused
    before any cell is tabulated, naming draws and chains.
    """
    from dprisk.inference.attribute.gibbs import SWEEP_CELL_BYTES, two_level_cell_gibbs
    from dprisk.runtime.memory_limit import MemoryLimitError

    k = 2016
    zeros = np.zeros(k, dtype=np.int64)
    nbytes = SWEEP_CELL_BYTES * (100 + 20_000) * 4 * (k + 1)
    assert 3.8e9 < nbytes < 4.0e9
    with pytest.raises(MemoryLimitError, match=r"^draws, chains: 4 chains x 20100 sweeps x "
                       r"2016 cells .* needs about 3\.62 GiB"):
        two_level_cell_gibbs(zeros, zeros, zeros, zeros, rho1=0.5, rho2=0.3, d=2,
                             draws=20_000, chains=4, random_seed=1)
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "1MiB")
    with pytest.raises(MemoryLimitError, match=r"^draws, chains: 2 chains x 30100 sweeps x 3 "):
        two_level_cell_gibbs([1, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0], rho1=0.5, rho2=0.3,
                             d=2, draws=30_000, chains=2, random_seed=1)
