r"""Exact two-block Gibbs sampler of the target's cell with the block group (issue 15, §1).

State: the target's cell :math:`C` and the block-group counts :math:`X2_j` of every cell
(:mod:`dprisk.inference.attribute.two_level` for the model). With
:math:`X1_j = m_j + 1[j = C]`, the joint posterior is

.. math::

    \pi(c, k_2) \propto \pi_c \prod_j w(k_{2,j} \mid X1_j)\,
        e^{-\rho_1 (x^*_{1,j} - X1_j)^2} e^{-\rho_2 (x^*_{2,j} - k_{2,j})^2}
        e^{-(\rho_1/d)(y^*_{1,j} - (k_{2,j} - X1_j))^2},

and the sampler alternates its two full conditionals, both exact:

* ``C | X2``: :math:`P[C = c \mid k_2] \propto \pi_c\, \Lambda_c(k_{2,c})`, with
  :math:`\Lambda_c(k) = P[X1_c = m_c + 1 \mid X2_c = k] / P[X1_c = m_c \mid X2_c = k]` of
  the single-cell two-level model at ``p = 1/2`` (only cell ``c``'s factor changes);
* ``X2_j | C``, independently over cells: the single-cell ``X2 | X1 = X1_j`` conditional.

Both single-cell conditionals come from
:class:`dprisk.inference.two_level.gibbs.ExactConditionals` (tabulated once per cell). Chains run in
parallel (vectorised), randomness from ``np.random.default_rng(random_seed)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprisk.inference.attribute.two_level import check_target_possible
from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS
from dprisk.inference.two_level.gibbs import ExactConditionals
from dprisk.models.checks import check_count, check_positive_int
from dprisk.models.mechanism.dg_sampling import as_generator, resolve_random_seed
from dprisk.models.numerics import logsumexp
from dprisk.models.priors.histogram import check_cell_prior, check_known_counts, uniform_prior
from dprisk.models.scenario import Release, Scenario
from dprisk.runtime.memory_limit import check_memory

__all__ = ["SWEEP_CELL_BYTES", "CellGibbsDraws", "PendingCellGibbs", "prepare_cell_gibbs",
           "run_cell_gibbs", "two_level_cell_gibbs"]


@dataclass(frozen=True)
class CellGibbsDraws:
    """Draws of the two-level histogram sampler.

    Attributes
    ----------
    cell : ndarray of int64, shape ``(chains, draws)``
    x2 : ndarray of int64, shape ``(chains, draws, K)``
    random_seed : int or None
        The integer seed of the run (given or drawn); None when a Generator was given.
    """

    cell: np.ndarray
    x2: np.ndarray
    random_seed: int | None

    def cell_frequencies(self, n_cells: int) -> np.ndarray:
        """Share of draws in each cell (the sampler's posterior estimate)."""
        return np.bincount(self.cell.ravel(), minlength=n_cells) / self.cell.size


def two_level_cell_gibbs(x1_star, x2_star, y1_star, known, *, rho1, rho2, d, prior=None,
                         x2_prior="improper", draws: int = 1000, chains: int = 4,
                         tune: int = 100, random_seed=None,
                         conditionals: dict | None = None) -> CellGibbsDraws:
    """Run the exact two-block Gibbs sampler (module docstring) on one release.

    Parameters
    ----------
    x1_star, x2_star, y1_star : array_like of int, shape ``(K,)``
    known : array_like of int (>= 0), shape ``(K,)``
    rho1, rho2 : float (> 0)
    d : int (>= 1)
    prior : array_like, shape ``(K,)``, optional
        Prior over the target's cell (uniform by default).
    x2_prior : str or X2Prior
    draws, chains : int (>= 1)
    tune : int (>= 0)
        Sweeps discarded at the start of each chain.
    random_seed : int or numpy.random.Generator, optional
        Drawn and reported when not given; a Generator is used as is (reported as None).
    conditionals : dict, optional
        A cache of the cells' tabulated conditionals shared by several calls (a caller that
        samples many releases, e.g. SBC, tabulates each distinct cell release once), keyed
        by the model's parameters, the prior the name loads and the cell's release; used when
        ``x2_prior`` is a name.
        The tables are deterministic, so the draws are the same with or without it.

    Returns
    -------
    CellGibbsDraws

    Raises
    ------
    dprisk.runtime.memory_limit.MemoryLimitError
        Naming ``draws, chains``: :data:`SWEEP_CELL_BYTES` per sweep, chain and cell above
        the memory limit, before anything is tabulated or drawn.
    """
    prepared = prepare_cell_gibbs(x1_star, x2_star, y1_star, known, rho1=rho1, rho2=rho2,
                                  d=d, prior=prior, x2_prior=x2_prior, draws=draws,
                                  chains=chains, tune=tune, random_seed=random_seed,
                                  conditionals=conditionals)
    return run_cell_gibbs([prepared])[0]


@dataclass(frozen=True)
class PendingCellGibbs:
    """The sweeps of :func:`two_level_cell_gibbs` with every random number they use drawn.

    Attributes
    ----------
    cells : tuple
        Per cell ``j``: ``(scenario, key)``, the cell's validated scenario (``known = m_j``)
        and its conditionals' key ``(rho1, rho2, d, x2_prior, m_j, x1*, x2*, y1*)``.
    conditionals : dict or None
        The caller's cache of tabulated conditionals (by key), or None.
    log_prior : ndarray, shape ``(K,)``
    cell : ndarray of int64, shape ``(chains,)``
        The chains' first cell.
    first : ndarray, shape ``(K, chains)``
        The uniforms of the chains' first ``X2``.
    uniforms : ndarray, shape ``(tune + draws, K + 1, chains)``
        Sweep ``t``'s uniforms: row 0 for the cell, row ``1 + j`` for cell ``j``'s ``X2``.
    tune, draws : int
    random_seed : int or None
    """

    cells: tuple
    conditionals: dict | None
    log_prior: np.ndarray
    cell: np.ndarray
    first: np.ndarray
    uniforms: np.ndarray
    tune: int
    draws: int
    random_seed: int | None


def prepare_cell_gibbs(x1_star, x2_star, y1_star, known, *, rho1, rho2, d, prior=None,
                       x2_prior="improper", draws: int = 1000, chains: int = 4,
                       tune: int = 100, random_seed=None,
                       conditionals: dict | None = None) -> PendingCellGibbs | CellGibbsDraws:
    """:func:`two_level_cell_gibbs` up to its sweeps, its random numbers drawn.

    Checks the arguments, tabulates the cells' conditionals and draws every random number
    the run uses, in the order the run draws them (the first cell and ``X2``, then the
    sweeps' uniforms in blocks); the sweeps then need no more of them
    (:func:`run_cell_gibbs`). A release with a cell whose ``X1`` has one possible value
    runs its checked sweeps, which draw as they go, here, and returns their draws.

    Parameters
    ----------
    x1_star, x2_star, y1_star, known, rho1, rho2, d, prior, x2_prior, draws, chains, tune,
    random_seed, conditionals
        As in :func:`two_level_cell_gibbs`.

    Returns
    -------
    PendingCellGibbs or CellGibbsDraws
    """
    known = check_known_counts(known)
    k = known.size
    prior = uniform_prior(k) if prior is None else check_cell_prior(prior, k)
    trio = [check_count(v, name) for v, name in
            ((x1_star, "x1_star"), (x2_star, "x2_star"), (y1_star, "y1_star"))]
    if any(v.shape != known.shape for v in trio):
        raise ValueError(f"x1_star, x2_star and y1_star must have one count per cell ({k})")
    draws, chains = check_positive_int(draws, "draws"), check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    check_memory(float(SWEEP_CELL_BYTES) * (tune + draws) * chains * (k + 1),
                 parameter="draws, chains", what=f"{chains} chains x {tune + draws} sweeps "
                 f"x {k} cells (the sweeps' uniforms and the draws)")
    # a Generator has no integer seed to report (0, reported before, did not reproduce it)
    seed = None if isinstance(random_seed, np.random.Generator) else resolve_random_seed(
        random_seed)
    rng = as_generator(random_seed if isinstance(random_seed, np.random.Generator) else seed)
    cache = conditionals if isinstance(x2_prior, str) else None
    cells, scenarios = [], {}  # one scenario per distinct m_j, the prior loaded once
    for j in range(k):
        m = int(known[j])
        if m not in scenarios:
            scenarios[m] = Scenario.two_level(
                rho1, rho2, d, p=0.5, known=m,
                prior=next(iter(scenarios.values())).prior if scenarios else x2_prior)
        scenario = scenarios[m]
        # the prior loaded, not its name: a PATH.py:NAME names another prior once the file
        # is edited (reloaded: another object) or from another working directory
        key = (scenario.rho1, scenario.rho2, scenario.d, scenario.prior, int(known[j]),
               int(trio[0][j]), int(trio[1][j]), int(trio[2][j]))
        cells.append((scenario, key))
    # else C | X2 is 0/0 in every cell (the prior as loaded above: not parsed again)
    check_target_possible(known, cells[0][0].prior, prior)
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior)
    # chains start in a cell that can hold the target (X1 = m_c + 1 possible): the sweeps
    # never enter another (its conditional probability is 0), a start there had no X2
    possible = np.array([scenario.prior.branch_support(int(m) + 1) is not None
                         for scenario, (*_, m, _x1, _x2, _y1) in cells])
    start = prior if possible.all() else prior * possible / np.sum(prior * possible)
    cell = rng.choice(k, size=chains, p=start)
    # both values of each cell's X1 possible (the tables' `feasible`: the prior's supports)
    if not all(scenario.prior.branch_support(m + b) is not None
               for scenario, (*_, m, _x1, _x2, _y1) in cells for b in (0, 1)):
        conds = _conditionals([cells], cache)[0]
        log_ratio_tables = [cond.log_odds_x1_table for cond in conds]
        return _sweeps_checked(conds, known, log_prior, log_ratio_tables, cell, rng,
                               draws, tune, seed)
    first = rng.random(k * chains).reshape(k, chains)
    # the uniforms of a block of sweeps at once, in the order the sweeps use them (one per
    # chain for the cell, then one per chain for each cell's X2): the same numbers
    per_sweep = (k + 1) * chains
    block = max(1, _UNIFORMS_PER_BLOCK // per_sweep)
    uniforms = np.concatenate([
        rng.random(min(block, tune + draws - first_sweep) * per_sweep).reshape(
            -1, k + 1, chains)
        for first_sweep in range(0, tune + draws, block)])
    return PendingCellGibbs(tuple(cells), cache, log_prior, cell, first, uniforms, tune,
                            draws, seed)


def _conditionals(runs: list, cache: dict | None) -> list[list]:
    """The tabulated conditionals of every cell of ``runs`` (lists of ``(scenario, key)``).

    Read from ``cache`` where it holds them; the others are tabulated, each distinct cell
    release of a scenario once, several releases of one scenario in one batch
    (:meth:`dprisk.inference.two_level.gibbs.ExactConditionals.tabulated_many`, each the
    same, bit for bit, as tabulated alone; a release needing a wider window, or of a
    scenario that cannot be a dictionary key, is tabulated alone), and kept in ``cache``.
    """
    out = [[None] * len(cells) for cells in runs]
    pending: dict = {}  # scenario -> {release: [(run, cell), ...]}
    for r, cells in enumerate(runs):
        for j, (scenario, key) in enumerate(cells):
            cond = None if cache is None else cache.get(key)
            if cond is not None:
                out[r][j] = cond
                continue
            try:
                pending.setdefault(scenario, {}).setdefault(key[-3:], []).append((r, j))
            except TypeError:  # a scenario holding an unhashable prior
                out[r][j] = ExactConditionals.tabulated(Release.two_level(*key[-3:]),
                                                        scenario, DEFAULT_TAIL_MASS)
    for scenario, releases in pending.items():
        ordered = sorted(releases)
        batch = ExactConditionals.tabulated_many(
            tuple(np.array(column, dtype=np.int64) for column in zip(*ordered, strict=True)),
            scenario, DEFAULT_TAIL_MASS) if len(ordered) > 1 else {}
        for release in ordered:
            cond = batch.get(release)
            if cond is None:
                cond = ExactConditionals.tabulated(Release.two_level(*release), scenario,
                                                   DEFAULT_TAIL_MASS)
            for r, j in releases[release]:
                out[r][j] = cond
                if cache is not None:
                    cache[runs[r][j][1]] = cond
    return out


def run_cell_gibbs(prepared) -> list[CellGibbsDraws]:
    """The draws of :func:`prepare_cell_gibbs`'s runs, their sweeps side by side.

    Runs with the same cells, chains, sweeps and cell prior are swept together: every chain
    of every run is a row of one array, and each row gets the operations of its run alone
    (a lookup of its run's tables, a log-sum-exp, a cumulative sum and a comparison along
    its own cells, its run's alias draws), so each run's draws are those it gives alone, bit
    for bit, with a sweep's few NumPy calls shared by all of them. The runs' cell
    conditionals are tabulated first, those of one scenario in one batch
    (:func:`_conditionals`), and each run's first ``X2`` drawn from its own tables. Finished
    runs (:class:`CellGibbsDraws`) are passed through.

    Parameters
    ----------
    prepared : sequence of PendingCellGibbs or CellGibbsDraws

    Returns
    -------
    list of CellGibbsDraws
        One per run, in order.
    """
    out = list(prepared)
    groups: dict = {}  # runs swept together: same shapes, sweeps and cell prior
    by_cache: dict = {}  # runs sharing a cache of conditionals: tabulated together
    for i, run in enumerate(out):
        if isinstance(run, PendingCellGibbs):
            key = (run.uniforms.shape, run.tune, run.draws, run.log_prior.tobytes())
            groups.setdefault(key, []).append(i)
            by_cache.setdefault(id(run.conditionals), []).append(i)
    tables = {}
    for members in by_cache.values():
        conds = _conditionals([out[i].cells for i in members], out[members[0]].conditionals)
        for i, run_conds in zip(members, conds, strict=True):
            # the log-odds of X1_j = m_j + 1 given X2_j on each cell's window (every X2_j
            # drawn lies in it: x2_given_x1 draws on the window), so the sweep looks the
            # values up; exact, not the logit of the probability, which rounds to 1 (logit
            # +inf) once they pass 37 and left two such cells' scores inf - inf = NaN
            log_ratio_tables = [cond.log_odds_x1_table for cond in run_conds]
            tables[i] = _FlatTables(run_conds, log_ratio_tables)
    for members in groups.values():
        runs = [out[i] for i in members]
        for i, draws in zip(members, _swept_together(runs, [tables[i] for i in members]),
                            strict=True):
            out[i] = draws
    return out


def _swept_together(runs: list[PendingCellGibbs], tables: list) -> list[CellGibbsDraws]:
    """:func:`run_cell_gibbs` of runs with the same shapes: one array of all their chains."""
    first = runs[0]
    sweeps, _, chains = first.uniforms.shape
    k = first.log_prior.size
    x2 = np.concatenate([run_tables.draw_x2(run.cell, run.first)
                         for run, run_tables in zip(runs, tables, strict=True)])
    tables = _StackedTables(tables, chains)
    uniforms = np.concatenate([run.uniforms for run in runs], axis=2)  # (sweeps, K + 1, N)
    n = x2.shape[0]
    out_cell = np.empty((n, first.draws), dtype=np.int64)
    out_x2 = np.empty((n, first.draws, k), dtype=np.int64)
    for sweep in range(sweeps):
        scores = first.log_prior + tables.log_ratio(x2)
        prob = np.exp(scores - logsumexp(scores)[:, None])
        cell = (uniforms[sweep, 0][:, None] > np.cumsum(prob, -1)[:, :-1]).sum(-1)
        x2 = tables.draw_x2(cell, uniforms[sweep, 1:])
        if sweep >= first.tune:
            out_cell[:, sweep - first.tune] = cell
            out_x2[:, sweep - first.tune] = x2
    return [CellGibbsDraws(out_cell[r * chains:(r + 1) * chains],
                           out_x2[r * chains:(r + 1) * chains], run.random_seed)
            for r, run in enumerate(runs)]


#: Bytes per sweep, chain and cell (plus one for the cell draw) of
#: :func:`two_level_cell_gibbs`: the sweeps' uniforms (8, twice while their blocks are joined)
#: and the ``X2`` draws (8); 23.4 measured (peak RSS at K = 2,016, 4 chains, 1,000 and 4,000
#: draws), rounded up. Checked against the memory limit before anything is drawn.
SWEEP_CELL_BYTES = 24
#: Uniforms drawn at once by :func:`two_level_cell_gibbs` (a block of sweeps; 512 KiB).
_UNIFORMS_PER_BLOCK = 2**16


class _FlatTables:
    """Every cell's lookup and alias tables side by side, for one vectorised sweep.

    ``log_ratio`` is the per-cell lookup of :func:`two_level_cell_gibbs` and ``draw_x2``
    the per-cell alias draw of :meth:`dprisk.inference.two_level.gibbs.ExactConditionals.
    x2_given_branch`, both for all cells at once with the same arithmetic per element.
    """

    def __init__(self, conds, ratio):
        self.starts = np.array([cond.k2_start for cond in conds], dtype=np.int64)
        self.widths = np.array([cond.width for cond in conds], dtype=np.int64)
        self.ratio = np.concatenate(ratio)
        self.ratio_offsets = np.concatenate([[0], np.cumsum(self.widths)[:-1]]) - self.starts
        alias_tables = [cond.alias_tables() for cond in conds]
        self.q = np.concatenate([q for q, _ in alias_tables])
        self.alias = np.concatenate([a for _, a in alias_tables])
        self.alias_offsets = np.concatenate([[0], np.cumsum(2 * self.widths)[:-1]])
        self.cells = np.arange(len(conds))

    def log_ratio(self, x2: np.ndarray) -> np.ndarray:
        """Log-odds of ``X1_j = m_j + 1`` given ``X2_j``, every chain and cell: ``(chains, K)``."""
        return self.ratio[x2 + self.ratio_offsets]

    def draw_x2(self, cell: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``X2_j | X1_j = m_j + 1[j = C]`` from uniforms ``u`` of shape ``(K, chains)``."""
        branch = (cell[:, None] == self.cells).astype(np.int64)
        x = u.T * self.widths
        j = np.minimum(x.astype(np.int64), self.widths - 1)
        at = j + (self.alias_offsets + branch * self.widths)
        return self.starts + np.where(x - j < self.q[at], j, self.alias[at])


class _StackedTables(_FlatTables):
    """The :class:`_FlatTables` of several runs, one row per chain of every run.

    ``log_ratio`` and ``draw_x2`` are :class:`_FlatTables`'s, each row reading its own run's
    tables (the runs' arrays side by side, each run's offsets moved by the lengths before
    it; ``starts``, ``widths`` and the offsets of shape ``(N, K)`` instead of ``(K,)``): the
    same arithmetic per element.
    """

    def __init__(self, tables: list[_FlatTables], chains: int):
        ratio_base = np.cumsum([0] + [t.ratio.size for t in tables[:-1]])
        alias_base = np.cumsum([0] + [t.q.size for t in tables[:-1]])

        def rows(per_run):
            return np.repeat(np.stack(per_run), chains, axis=0)

        self.ratio = np.concatenate([t.ratio for t in tables])
        self.ratio_offsets = rows([t.ratio_offsets + b for t, b in zip(tables, ratio_base,
                                                                        strict=True)])
        self.q = np.concatenate([t.q for t in tables])
        self.alias = np.concatenate([t.alias for t in tables])
        self.alias_offsets = rows([t.alias_offsets + b for t, b in zip(tables, alias_base,
                                                                        strict=True)])
        self.starts = rows([t.starts for t in tables])
        self.widths = rows([t.widths for t in tables])
        self.cells = tables[0].cells


def _sweeps_checked(conds, known, log_prior, log_ratio_tables, cell, rng, draws, tune, seed):
    """The sweeps one cell at a time, through the checked draws (a cell with one feasible X1)."""
    k, chains = known.size, cell.size
    x2 = _draw_x2(conds, known, cell, rng)
    out_cell = np.empty((chains, draws), dtype=np.int64)
    out_x2 = np.empty((chains, draws, k), dtype=np.int64)
    for sweep in range(tune + draws):
        log_ratio = np.stack([log_ratio_tables[j][x2[:, j] - conds[j].k2_start]
                              for j in range(k)], -1)
        scores = log_prior + log_ratio
        prob = np.exp(scores - logsumexp(scores)[:, None])
        cell = (rng.random(chains)[:, None] > np.cumsum(prob, -1)[:, :-1]).sum(-1)
        x2 = _draw_x2(conds, known, cell, rng)
        if sweep >= tune:
            out_cell[:, sweep - tune] = cell
            out_x2[:, sweep - tune] = x2
    return CellGibbsDraws(out_cell, out_x2, seed)


def _draw_x2(conds, known, cell, rng) -> np.ndarray:
    """``X2_j | X1_j = m_j + 1[j = C]`` for every cell and chain."""
    x2 = np.empty((cell.size, known.size), dtype=np.int64)
    for j, cond in enumerate(conds):
        branch = (cell == j).astype(np.int64)
        u = rng.random(cell.size)
        if len(cond.feasible_x1) == 2:  # both values of X1_j possible: no check needed
            x2[:, j] = cond.x2_given_branch(branch, u)
        else:  # checked (an impossible X1_j raises, naming the feasible values)
            x2[:, j] = cond.x2_given_x1(known[j] + branch, u)
    return x2
