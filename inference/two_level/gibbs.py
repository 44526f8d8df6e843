r"""The exact two-block Gibbs sampler of the two-level model (paper §3.2, supplement S3).

It targets the same joint posterior as :mod:`dprisk.inference.two_level.exact` (see there
for ``beta``, ``c``, ``A``):

.. math:: \log\pi(k_1, k_2) = \beta_{k_1} - A (k_2 - c_{k_1})^2 + \log w(k_2 \mid k_1),

and alternates the two full conditionals, both drawn exactly:

* ``X1 | X2 = k2``: two points ``{m, m+1}``,
  :math:`P[X_1 = m+1 \mid k_2] = \pi(m+1, k_2) / (\pi(m, k_2) + \pi(m+1, k_2))`. For the
  improper uniform prior this is the paper's eq. (X1fc),
  :math:`\propto \exp\{-\tfrac{d+1}{d}\rho_1 [k_1 - (d x_1^* + k_2 - y_1^*)/(d+1)]^2\}
  P[X_1 = k_1]` restricted to ``k1 <= k2``: if ``k2 < m + 1`` then ``X1 = m``. A prior
  whose weight depends on ``k1`` (e.g. ``truncated:U``) adds ``log w(k2 | k1)``.
* ``X2 | X1 = k1``: the discrete Gaussian ``exp(-A (k2 - c_{k1})^2)`` truncated to the
  prior's support times the prior weight (eq. X2fc), on the checked window of
  :func:`dprisk.inference.two_level.exact.joint_log_table` (neglected mass < ``tail_mass``),
  sampled with Walker's alias method (one uniform per draw).

Both conditionals are tabulated once per release D; :class:`ExactConditionals` exposes them
as single-state kernels (for a PyMC step method).

:func:`gibbs_sample` runs many chains (and many releases) at once and is vectorised over time
too. In this two-block sampler ``X1_{t+1}`` depends on the past only through ``X2_t``, which
given ``X1_t = m + b`` is a fresh draw from ``P[X2 | X1 = m + b]``; so the X1 path is a
two-state Markov chain with

.. math:: a_b = P[X_1^{(t+1)} = m+1 \mid X_1^{(t)} = m+b]
              = \sum_{k_2} P[X_2 = k_2 \mid X_1 = m+b]\, P[X_1 = m+1 \mid X_2 = k_2],

and, given the X1 path, ``X2_t`` is drawn from
:math:`P[X_2 = k_2 \mid X_1^{(t)}, X_1^{(t+1)}] \propto P[k_2 \mid X_1^{(t)}]\,
P[X_1^{(t+1)} \mid k_2]`. The joint law of the output path is exactly that of the
sequential sweep (``P[X2_t | b_t] P[b_{t+1} | X2_t] = P[b_{t+1} | b_t] P[X2_t | b_t, b_{t+1}]``).
With one uniform per step each X1 step is one of four maps of ``{0, 1}`` (constant 0,
constant 1, identity, swap), so the whole path is a prefix scan: the last constant map,
flipped by the parity of the swaps since. Each sweep costs two uniforms per chain.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dprisk.inference.kernels.fused_kernels import (
    NUMPY_ALIAS_ROW_SECONDS,
    NUMPY_SWEEPS_PER_SECOND,
    compiled_kernels,
    use_compiled,
)
from dprisk.inference.kernels.table_kernels import (
    DEFAULT_TAIL_MASS,
    MAX_PRECISION,
    JointTable,
    checked_table,
    first_window_rows,
    initial_halfwidth,
    relative_log_joint,
    relative_release,
)
from dprisk.inference.mcmc.alias_kernels import alias_draw, alias_table
from dprisk.inference.mcmc.draws_tree import draws_datatree
from dprisk.inference.mcmc.run_options import check_draws_memory, run_options
from dprisk.inference.two_level.x1_path import x1_path
from dprisk.models.checks import check_count
from dprisk.models.numerics import check_tail_mass
from dprisk.models.scenario import Release, Scenario, two_level_scenario
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import GIBBS_DRAW_STEPS, check_work

__all__ = [
    "ExactConditionals",
    "GibbsDraws",
    "alias_table",
    "gibbs_draws",
    "gibbs_sample",
    "gibbs_x1_counts",
    "run_options",
    "to_datatree",
]

#: Grid cells (sweeps x chains) processed per vectorised block of :func:`gibbs_sample`.
_BLOCK_CELLS = 2**18
#: Peak bytes per k2 value of the first window while :class:`_Tables` is built, for each
#: release and once more: tracemalloc measured 675-686 for one release, 5524 for 16, 88137
#: for 256 (widths 1e3-1e4).
TABLE_VALUE_BYTES = 350


class _Tables:
    """Conditional tables of ``R`` releases on a common window width ``W``.

    ``x2_pmf[r, b]`` is ``P[X2 | X1 = m + b]``, ``p1[r]`` is ``P[X1 = m + 1 | X2]`` on the
    window, ``a[r, b] = P[X1' = m + 1 | X1 = m + b]`` the X1 chain's transition and
    ``pair_pmf[r, 2 b + b']`` is ``P[X2 | X1 = m + b, X1' = m + b']`` (see
    :func:`gibbs_sample`), each with alias tables. With ``pairs=False`` the chain's
    ``a`` and the pair tables (only :func:`gibbs_sample`'s block loop uses them) are not
    built: the single-state kernels of :class:`ExactConditionals` need the rest alone.
    """

    def __init__(self, release: Release | None, params: Scenario, tail_mass: float,
                 compiled: bool = False, *, pairs: bool = True, table: JointTable | None = None):
        if table is None:  # else the releases' checked table, given
            xs, ys = release.flat()
            width = 2 * initial_halfwidth(params.precision, tail_mass) + 3
            check_memory(float(TABLE_VALUE_BYTES) * (len(xs) + 1) * width,
                         parameter="rho1, rho2, d" if len(xs) == 1 else
                         "rho1, rho2, d, x1_star, x2_star, y1_star",
                         what=f"the Gibbs tables of {len(xs)} release(s) x {width} values of k2")
            table = checked_table(xs[:, 0], xs[:, 1], ys[:, 0], params, tail_mass, None)
        self.params = params
        self.start = table.k2_start
        self.width = table.width
        self.feasible = table.feasible
        log_joint = table.log_joint
        # X2 | X1 = known + b: normalise each branch (empty branches: a harmless uniform row).
        mass = np.where(table.feasible, table.log_branch_mass, 0.0)
        prob = np.exp(log_joint - mass[..., None])
        self.x2_pmf = _normalise(np.where(table.feasible[:, None], prob, 0.0))
        self.q, self.alias = alias_table(self.x2_pmf, compiled=compiled)
        # X1 | X2 = k2: P[X1 = known + 1 | k2] (0 where k2 is impossible under both branches).
        with np.errstate(over="ignore", invalid="ignore"):  # log-odds exact where p1 is 0 or 1
            self.log_odds = log_joint[:, 1] - log_joint[:, 0]
            p1 = 1.0 / (1.0 + np.exp(-self.log_odds))
        self.p1 = np.where(np.isfinite(log_joint[:, 1]), p1, 0.0)
        self.q_flat = self.q.ravel()
        self.alias_flat = self.alias.ravel()
        self.p1_flat = self.p1.ravel()
        if pairs:
            self._pair_tables(compiled)

    def row(self, r: int) -> _Tables:
        """The tables of release ``r`` alone (``pairs=False`` tables), as if built for it."""
        one = _Tables.__new__(_Tables)
        one.params, one.width, one.feasible = self.params, self.width, self.feasible
        for name in ("start", "x2_pmf", "q", "alias", "p1", "log_odds"):
            setattr(one, name, getattr(self, name)[r:r + 1])
        one.q_flat, one.alias_flat, one.p1_flat = one.q.ravel(), one.alias.ravel(), one.p1.ravel()
        return one

    def _pair_tables(self, compiled: bool) -> None:
        """``a``, ``pair_pmf`` and the pair alias tables, from ``x2_pmf`` and ``p1``."""
        # The X1 chain and X2 given two consecutive X1 values.
        moves = np.stack([1.0 - self.p1, self.p1], axis=1)  # (R, b', W)
        pair = self.x2_pmf[:, :, None, :] * moves[:, None, :, :]  # (R, b, b', W)
        norm = pair.sum((-2, -1))
        self.a = np.where(norm > 0, pair[:, :, 1].sum(-1) / np.where(norm > 0, norm, 1.0), 0.0)
        self.pair_pmf = _normalise(pair.reshape(len(self.start), 4, self.width))
        self.pair_q, self.pair_alias = alias_table(self.pair_pmf, compiled=compiled)
        self.pair_q_flat = self.pair_q.ravel()
        self.pair_alias_flat = self.pair_alias.ravel()


def _normalise(prob: np.ndarray) -> np.ndarray:
    """Rows scaled to sum to one; all-zero rows (never used) become uniform."""
    total = prob.sum(-1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    return np.where(total > 0, prob / safe, 1.0 / prob.shape[-1])


class ExactConditionals:
    r"""Exact full conditionals of (X1, X2) for one release D, as single-state kernels.

    Parameters are those of :func:`dprisk.inference.two_level.exact.exact_posterior` for a
    scalar release (the loose parameters or ``scenario=``); :meth:`tabulated` builds it from
    validated ones. Kernels take uniforms ``u`` in [0, 1) (or an rng via the ``draw_*``
    methods) and accept arrays of states (e.g. one per chain).

    Attributes
    ----------
    k2_values : ndarray of int64, shape (W,)
        The tabulated window of X2.
    prob_x1_table, log_odds_x1_table : ndarray, shape (W,)
        ``P[X1 = m + 1 | X2 = k2]`` on the window, and its log-odds (exact where it rounds
        to 1 or 0: ``log pi(m + 1, k2) - log pi(m, k2)``; ``-inf`` where it is 0).
    x2_pmf_table : ndarray, shape (2, W)
        ``P[X2 = k2 | X1 = m + b]`` on the window (rows b = 0, 1).
    feasible_x1 : tuple of int
        The values of X1 the prior allows (X1 = m + 1 drops out for ``point:K``, K < m + 1).
    """

    def __init__(
        self, x1_star, x2_star, y1_star, *, scenario: Scenario | None = None,
        tail_mass: float = DEFAULT_TAIL_MASS, **parameters,
    ):
        scenario = two_level_scenario(scenario, **parameters)
        release = Release.two_level(x1_star, x2_star, y1_star)
        release.one("ExactConditionals")
        self._tabulate(release, scenario, check_tail_mass(tail_mass))

    @classmethod
    def tabulated(cls, release: Release, scenario: Scenario, tail_mass: float):
        """The conditionals of one validated release (kernel form, no checks)."""
        self = cls.__new__(cls)
        self._tabulate(release, scenario, tail_mass)
        return self

    @classmethod
    def tabulated_many(cls, releases, scenario: Scenario, tail_mass: float) -> dict:
        """``{(x1*, x2*, y1*): ExactConditionals}`` of the releases ``(x1s, x2s, y1s)`` at once.

        Each the same, bit for bit, as :meth:`tabulated` of its release alone (the batch's
        tables row by row, :func:`dprisk.inference.kernels.table_kernels.first_window_rows`);
        releases needing a wider window than the first are left out (tabulate them alone).
        """
        keys = sorted(set(zip(*(np.asarray(a, dtype=np.int64).ravel().tolist()
                                for a in releases), strict=True)))
        if not keys or scenario.precision > MAX_PRECISION:
            return {}
        table, rows = first_window_rows(*(np.array(column, dtype=np.int64)
                                          for column in zip(*keys, strict=True)),
                                        scenario, tail_mass)
        tables = _Tables(None, scenario, tail_mass, pairs=False, table=table)
        out = {}
        for i, r in enumerate(rows.tolist()):
            out[keys[r]] = self = cls.__new__(cls)
            self._adopt(keys[r], scenario, tables.row(i))
        return out

    def _tabulate(self, release: Release, params: Scenario, tail_mass: float) -> None:
        self._adopt(release.one("ExactConditionals"), params,
                    _Tables(release, params, tail_mass, pairs=False))

    def _adopt(self, release: tuple, params: Scenario, tables: _Tables) -> None:
        """Take the tables of the one release ``release`` (a tuple of ints)."""
        self.params, self.release, self._tables = params, release, tables
        self.k2_start = int(tables.start[0])
        self.width = tables.width
        self.k2_values = self.k2_start + np.arange(self.width)
        self.prob_x1_table = tables.p1[0]
        odds = tables.log_odds[0]  # NaN where X2 = k2 is impossible (never drawn): -inf
        self.log_odds_x1_table = np.where(np.isnan(odds), -np.inf, odds)
        self.x2_pmf_table = tables.x2_pmf[0]
        self.feasible_x1 = tuple(params.known + b for b in (0, 1) if tables.feasible[b])
        # Plain Python lists for the scalar fast paths of the kernels.
        self._p1_list = self.prob_x1_table.tolist()
        self._alias_lists = [(tables.q[0, b].tolist(), tables.alias[0, b].tolist())
                             for b in (0, 1)]

    def _log_joint(self, k1: int, k2: np.ndarray) -> np.ndarray:
        """``log pi(k1, k2)`` up to a constant that depends on ``k2`` (not on ``k1``).

        Evaluated relative to the reference ``r = k2 - known`` itself (module docstring of
        :mod:`dprisk.inference.two_level.exact`), so the difference between the two ``k1`` keeps
        its digits
        even far outside the window.
        """
        params = self.params
        _, gamma, delta_beta = relative_release(params, *self.release)
        log_joint = relative_log_joint(
            params, int(k1) - params.known, gamma, delta_beta, k2 - params.known, 0
        )
        return log_joint + params.prior.log_weight(k2, k1)

    def prob_x1_given_x2(self, k2) -> np.ndarray:
        r"""``P[X1 = m + 1 | X2 = k2, D]`` for any integer ``k2`` (array or scalar).

        Raises
        ------
        ValueError
            If ``X2 = k2`` is impossible under both values of X1 (e.g. ``k2 < m``).
        """
        k2 = check_count(k2, "k2")
        offset = k2 - self.k2_start
        inside = (offset >= 0) & (offset < self.width)
        prob = self.prob_x1_table[np.clip(offset, 0, self.width - 1)]
        if not np.all(inside):
            log0 = self._log_joint(self.params.known, k2)
            log1 = self._log_joint(self.params.known + 1, k2)
            if np.any(~inside & ~np.isfinite(log0) & ~np.isfinite(log1)):
                raise ValueError(
                    f"k2 must be a possible value of X2 (k2 >= known = {self.params.known} "
                    f"and in the prior's support), got {k2!r}"
                )
            with np.errstate(over="ignore", invalid="ignore"):
                direct = np.where(np.isfinite(log1), 1.0 / (1.0 + np.exp(log0 - log1)), 0.0)
            prob = np.where(inside, prob, direct)
        return prob

    def x1_given_x2(self, k2, u):
        """Draw X1 given ``X2 = k2`` from uniforms ``u``: ``m + (u < P[X1 = m+1 | k2])``.

        Scalars in, a Python int out (fast path for step methods); arrays in, an array out.
        """
        if isinstance(k2, (int, np.integer)) and np.ndim(u) == 0:
            offset = int(k2) - self.k2_start
            if 0 <= offset < self.width:
                prob = self._p1_list[offset]
            else:
                prob = float(self.prob_x1_given_x2(k2))
            return self.params.known + int(u < prob)
        return self.params.known + (np.asarray(u) < self.prob_x1_given_x2(k2)).astype(np.int64)

    def x2_given_x1(self, k1, u):
        """Draw X2 given ``X1 = k1`` from uniforms ``u`` (alias method on the window).

        Scalars in, a Python int out (fast path for step methods); arrays in, an array out.
        """
        if isinstance(k1, (int, np.integer)) and np.ndim(u) == 0:
            branch = int(k1) - self.params.known
            if int(k1) not in self.feasible_x1:
                raise ValueError(
                    f"k1 must be one of the feasible values {self.feasible_x1}, got {k1!r}"
                )
            x = float(u) * self.width
            j = min(int(x), self.width - 1)
            q, alias = self._alias_lists[branch]
            return self.k2_start + (j if x - j < q[j] else alias[j])
        k1 = check_count(k1, "k1")
        branch = k1 - self.params.known
        allowed = np.zeros(k1.shape, dtype=bool)  # np.isin(k1, feasible_x1), without its setup
        for value in self.feasible_x1:
            allowed |= k1 == value
        if not np.all(allowed):
            raise ValueError(
                f"k1 must be one of the feasible values {self.feasible_x1}, got {k1!r}"
            )
        return self.x2_given_branch(branch, np.asarray(u, dtype=float))

    def alias_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """The alias tables of ``X2 | X1 = m + b``, rows ``b = 0, 1`` one after the other.

        ``(q, alias)``, each of shape ``(2 W,)``: :meth:`x2_given_branch` draws cell ``j``
        of row ``b`` from entry ``b W + j`` (for callers that draw many releases' X2 at once).
        """
        return self._tables.q_flat, self._tables.alias_flat

    def x2_given_branch(self, branch: np.ndarray, u: np.ndarray) -> np.ndarray:
        """:meth:`x2_given_x1` for ``X1 = m + branch`` on arrays already checked (kernel).

        ``branch`` (int64) holds 0 or 1 with ``m + branch`` feasible, ``u`` float uniforms of
        the same shape; no checks.
        """
        t = self._tables
        return self.k2_start + alias_draw(t.q_flat, t.alias_flat, branch * self.width,
                                          self.width, u)

    def draw_x1_given_x2(self, k2, rng: np.random.Generator):
        """:meth:`x1_given_x2` with uniforms from ``rng`` (one per element of ``k2``)."""
        shape = np.shape(k2)
        return self.x1_given_x2(k2, rng.random() if shape == () else rng.random(shape))

    def draw_x2_given_x1(self, k1, rng: np.random.Generator):
        """:meth:`x2_given_x1` with uniforms from ``rng`` (one per element of ``k1``)."""
        shape = np.shape(k1)
        return self.x2_given_x1(k1, rng.random() if shape == () else rng.random(shape))


class GibbsDraws(NamedTuple):
    """Draws of :func:`gibbs_sample`: ``x1`` and ``x2`` of shape ``S + (chains, draws)``."""

    x1: np.ndarray
    x2: np.ndarray


def _initial_branch(tables: _Tables, p: float, n: int, rng) -> np.ndarray:
    if tables.feasible.all():
        return rng.random(n) < p
    return np.full(n, bool(tables.feasible[1]))


def gibbs_sample(
    x1_star, x2_star, y1_star, *, scenario: Scenario | None = None, draws: int = 1000,
    chains: int = 4, tune: int = 0, random_seed=None, tail_mass: float = DEFAULT_TAIL_MASS,
    **parameters,
) -> GibbsDraws:
    r"""Run the exact Gibbs sampler for one or many releases D, many chains at once.

    With two chains or more, chain ``c`` starts from ``X1 = m + 1`` for even ``c``, ``m`` for
    odd ``c`` (only ``m`` when the prior of X2 rules out ``m + 1``), so that chains which
    cannot leave their start disagree and R-hat shows it; one chain starts from ``X1`` drawn
    from its prior (as :func:`gibbs_x1_counts`). ``X2 | X1`` is drawn from its full
    conditional; a sweep draws ``X1 | X2`` then ``X2 | X1`` (vectorised over sweeps as in the
    module docstring, the law of the sequential loop). The first ``tune`` sweeps are discarded.

    Parameters
    ----------
    x1_star, x2_star, y1_star : array_like of int
        Releases, broadcast to a batch shape ``S`` (``()`` for one release).
    scenario, tail_mass, **parameters
        As in :func:`dprisk.inference.two_level.exact.exact_posterior` (``rho1, rho2, d, p, known,
        prior`` or a validated ``scenario``).
    draws : int (>= 1)
        Recorded sweeps per chain.
    chains : int (>= 1)
        Chains per release.
    tune : int (>= 0)
        Sweeps discarded at the start of every chain.
    random_seed : int, numpy.random.Generator or None
        Source of randomness (``np.random.default_rng(random_seed)``); a seed makes runs
        reproducible.

    Returns
    -------
    GibbsDraws
        ``x1`` and ``x2`` (int64) of shape ``S + (chains, draws)``; ``x1`` holds ``m`` or
        ``m + 1``.
    """
    scenario = two_level_scenario(scenario, **parameters)
    release = Release.two_level(x1_star, x2_star, y1_star)
    run = run_options(draws, chains, tune, random_seed)
    return gibbs_draws(release, scenario, **run, tail_mass=check_tail_mass(tail_mass))


def gibbs_draws(release: Release, params: Scenario, *, draws: int, chains: int, tune: int,
                generator: np.random.Generator, tail_mass: float,
                progress: bool = False) -> GibbsDraws:
    """Kernel of :func:`gibbs_sample` for validated inputs (checks only the budgets).

    ``progress`` shows a progress bar over the sweeps on stderr. The memory limit
    (:mod:`dprisk.runtime.memory_limit`) and the work limit (:mod:`dprisk.runtime.work_limit`,
    ``releases x chains x (tune + draws) x GIBBS_DRAW_STEPS``) are checked first.
    """
    check_draws_memory(2, chains, draws, releases=release.size)
    check_work(float(release.size) * chains * (tune + draws) * GIBBS_DRAW_STEPS,
               parameter="draws, chains",
               what=f"{release.size} release(s) x {chains} chains x {tune + draws} sweeps")
    shape = release.shape
    n_releases = release.size
    n = n_releases * chains
    # The compiled alias builder and block loop give identical draws (fused_kernels rule).
    compiled = use_compiled(n * (tune + draws) / NUMPY_SWEEPS_PER_SECOND
                            + 6 * n_releases * NUMPY_ALIAS_ROW_SECONDS)
    tables = _Tables(release, params, tail_mass, compiled)
    rows = np.repeat(np.arange(n_releases, dtype=np.int64), chains)
    # chain c starts from X1 = m + 1 - c % 2 (both feasible), not all from the prior: chains
    # that cannot leave their start (X2 supports given m and m + 1 apart) then disagree
    first = np.arange(n) % chains % 2 == 0 if chains > 1 and tables.feasible.all() else None
    x1_out, x2_out = _run_chains(tables, rows, params.p, draws, tune, generator, compiled,
                                 progress, first=first)
    x1_out += params.known
    x2_out += np.repeat(tables.start, chains)[:, None]
    return GibbsDraws(
        x1_out.reshape(*shape, chains, draws), x2_out.reshape(*shape, chains, draws)
    )


def gibbs_x1_counts(unique: Release, inverse: np.ndarray, params: Scenario, *, draws: int,
                    generator: np.random.Generator, tail_mass: float,
                    batch: int) -> np.ndarray:
    """Draws with ``X1 = m + 1`` of one exact Gibbs chain per dataset (``draws`` sweeps each).

    Dataset ``i`` has the release ``unique[inverse[i]]``; the conditional tables are built
    once per distinct release. The datasets are run in consecutive batches of ``batch``
    with the random stream of :func:`gibbs_sample` called on each batch (one chain, no
    tuning), so the counts equal ``(gibbs_sample(batch).x1 == m + 1).sum(-1)`` whenever the
    batch's own k2 window has the width of the distinct releases' (always, unless some
    release needs a widened window).
    """
    n = inverse.size
    compiled = use_compiled(n * draws / NUMPY_SWEEPS_PER_SECOND
                            + 6 * unique.size * NUMPY_ALIAS_ROW_SECONDS)
    tables = _Tables(unique, params, tail_mass, compiled)
    count = np.empty(n, dtype=np.int64)
    for lo in range(0, n, batch):
        rows = inverse[lo:lo + batch]
        check_memory(16.0 * rows.size * draws, parameter="draws",
                     what=f"{rows.size} chains x {draws} draws (two int64 arrays)")
        x1_out, _ = _run_chains(tables, rows, params.p, draws, 0, generator, compiled)
        count[lo:lo + batch] = x1_out.sum(-1)
    return count


def _run_chains(tables: _Tables, rows: np.ndarray, p: float, draws: int, tune: int, rng,
                compiled: bool, progress: bool = False,
                first: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run one chain per entry of ``rows`` (a row of ``tables``).

    ``first``: X1 - m (booleans) of each chain's initial state; default drawn from the prior
    (:func:`_initial_branch`).

    Returns X1 - m (0 / 1) and the X2 window offsets, each (len(rows), draws), from the
    compiled or the numpy block loop (the same draws).
    """
    kernels = compiled_kernels() if compiled else None
    n = rows.size
    a0 = tables.a[rows, 0][:, None]
    a1 = tables.a[rows, 1][:, None]
    pair_offset = (rows * 4 * tables.width)[:, None]

    # X1 of the initial state, then X1 of the first sweep (X2 of the initial state integrated
    # out: P[X1' = m + 1 | X1 = m + b] = a_b).
    branch0 = _initial_branch(tables, p, n, rng) if first is None else first
    current = rng.random(n) < np.where(branch0, a1[:, 0], a0[:, 0])
    x1_out = np.empty((n, draws), dtype=np.int64)
    x2_out = np.empty((n, draws), dtype=np.int64)
    total = tune + draws
    block = max(16, _BLOCK_CELLS // n)
    done = 0
    from tqdm import tqdm  # the terminal bar (tqdm.auto warns in notebooks without widgets)

    with tqdm(total=total, desc="gibbs", unit="sweep", disable=not progress) as bar:
        while done < total:
            steps = min(block, total - done)
            u = rng.random((2, n, steps))
            keep_from = max(tune - done, 0)
            if kernels is not None:
                kernels.gibbs_steps(current, u, a0[:, 0], a1[:, 0], tables.pair_q_flat,
                                    tables.pair_alias_flat, pair_offset[:, 0], tables.width,
                                    keep_from, x1_out, x2_out, max(done - tune, 0))
            else:
                path = x1_path(current, u[0], a0, a1)  # X1 at sweeps done .. done + steps
                table_row = (pair_offset + (2 * tables.width) * path[:, :-1]
                             + tables.width * path[:, 1:])
                x2 = alias_draw(tables.pair_q_flat, tables.pair_alias_flat, table_row,
                                 tables.width, u[1])
                current = path[:, -1]
                if keep_from < steps:
                    lo = done + keep_from - tune
                    hi = done + steps - tune
                    x1_out[:, lo:hi] = path[:, keep_from:-1]
                    x2_out[:, lo:hi] = x2[:, keep_from:]
            done += steps
            bar.update(steps)
    return x1_out, x2_out


def to_datatree(samples: GibbsDraws, *, attrs: dict | None = None):
    """Wrap Gibbs draws in an ``xarray.DataTree`` with a ``posterior`` group, like PyMC.

    Variables ``X1`` and ``X2`` have dims ``(chain, draw)`` followed by ``release_dim_0, ...``
    for a batch of releases.

    Parameters
    ----------
    samples : GibbsDraws
        Output of :func:`gibbs_sample`.
    attrs : dict, optional
        Attributes of the posterior group (e.g. the parameters).
    """
    return draws_datatree({"X1": samples.x1, "X2": samples.x2},
                          sampler="exact Gibbs (dprisk.inference.two_level.gibbs)", attrs=attrs)
