r"""The K-cell adversary under a real query strategy: many marginal queries of one histogram.

The block's histogram (``K`` cells) is released through queries :math:`q`, each a partition of
the cells with its own noise :math:`\mathrm{DG}(0, 1/(2\rho_q))` per query cell
(:mod:`dprisk.models.census.strategy`, :mod:`dprisk.models.census.histogram_2020`). The adversary
knows every query cell's count of everyone but the target, :math:`m_{q,a}`; with
:math:`a_q(c)` the query cell containing cell ``c``, the target in ``c`` moves one count in
each query, so (the single-level log-likelihood ratio per query,
:func:`dprisk.inference.single_level.closed_form_kernels.odds_term`)

.. math::

    \log P[C = c \mid x^*] = \log\pi_c + \sum_q \rho_q\,
        \bigl(2 (x^*_{q, a_q(c)} - m_{q, a_q(c)}) - 1\bigr) + \text{const}.

**Adding the block group.** The detailed query of the block group and the other ``d`` blocks'
detailed queries (noisy sum ``y_1^*``) turn the detailed block term of cell ``c`` into the
two-level log Bayes factor of "the target is in ``c``", the posterior log-odds of the exact
two-level code (:func:`dprisk.inference.two_level.exact.posterior_tables`) at ``p = 1/2`` with
``known = m_c`` and the X2 prior given (swappable, :mod:`dprisk.models.priors.library`). The other
block-group queries are not used.

Cells sharing noise make the maximum of the scores a correlated order statistic, so
:math:`P[\mathrm{MAP} = t]` and :math:`E[P(C = t \mid x^*)]` are estimated here by Monte Carlo
over releases (seeded; the seed and the MCSE are reported), uniform tie-breaking included
as :math:`E[1[t \in \arg\max] / |\arg\max|]`. With the detailed query alone the exact
:mod:`dprisk.inference.attribute.design` applies (the tests compare the two).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprisk.inference.attribute.design import (
    noise_grid,
    shifted_tied_log_terms,
    tied_log_terms,
)
from dprisk.inference.attribute.two_level import (
    check_target_possible,
    two_level_log_bayes_factors,
)
from dprisk.inference.single_level.closed_form_kernels import odds_term
from dprisk.inference.two_level.exact import DEFAULT_TAIL_MASS
from dprisk.models.census.allocation import census_level
from dprisk.models.census.histogram_2020 import GVHR_2020_SHAPE, query_cell_map
from dprisk.models.census.strategy import QUERY_FRACTIONS, STRATEGY_QUERY_NAMES
from dprisk.models.checks import check_positive_int, check_rho
from dprisk.models.mechanism.dg_sampling import (
    as_generator,
    resolve_random_seed,
    sample_kernel,
    sample_sum_kernel,
)
from dprisk.models.mechanism.discrete_gaussian import logcdf_kernel, support_halfwidth_kernel
from dprisk.models.numerics import logsumexp
from dprisk.models.priors.histogram import (
    check_cell_prior,
    check_known_counts,
    check_true_cell,
    uniform_prior,
)
from dprisk.models.scenario import scalar_value

__all__ = [
    "BlockGroup",
    "QueryDesign",
    "StrategyMeasures",
    "census_block_design",
    "strategy_log_likelihood",
    "strategy_measures",
]

#: Releases per simulated chunk.
_CHUNK = 256
#: Bytes per cell of the conditional MAP's log-cdf table (:func:`_p_map_grid`: 57 measured,
#: peak memory at rho = 3e-5, 8.4e6 cells; rounded up).
P_MAP_TABLE_CELL_BYTES = 64
#: Steps per term of that table's exact DG tail sums (5.8 ns measured at rho = 1e-4 and
#: 3e-5; rounded up).
P_MAP_TABLE_TERM_STEPS = 2
#: Work steps per cell and k2-window value of the block group's exact posteriors (2.5-2.8 ns
#: measured at rho1 = rho2 = 1e-7 and 1e-9, d = 3, 2,016 cells; rounded up to one step).
WINDOW_CELL_STEPS = 1


@dataclass(frozen=True)
class QueryDesign:
    r"""The block-level queries the adversary reads.

    Attributes
    ----------
    names : tuple of str
    rhos : ndarray of float, shape ``(Q,)``
        :math:`\rho_q`.
    cell_maps : ndarray of int64, shape ``(Q, K)``
        :math:`a_q(c)`.
    sizes : tuple of int
        Number of cells of each query.
    weights : ndarray of int64, shape ``(Q,)``
        Integers proportional to the rhos (:math:`\rho_q / \rho_{q'} = w_q / w_{q'}`):
        scores in these units are exact integers, so ties are found exactly.
    """

    names: tuple[str, ...]
    rhos: np.ndarray
    cell_maps: np.ndarray
    sizes: tuple[int, ...]
    weights: np.ndarray

    @property
    def n_cells(self) -> int:
        """``K``."""
        return self.cell_maps.shape[1]


def census_block_design(rho_detailed=None, queries=STRATEGY_QUERY_NAMES) -> QueryDesign:
    r"""Block-level queries of the 2020 persons strategy over the 2,016-cell GVHR histogram.

    .. math:: \rho_q = \rho_{\text{detailed}} \times f_q / f_{\text{detailed}}

    with the block-level query fractions :math:`f_q`
    (:data:`dprisk.models.census.strategy.QUERY_FRACTIONS`); ``rho_detailed`` defaults to the
    production block GVHR rho (``census:block``, 0.0992). ``queries`` picks a subset
    (``("detailed",)`` is the paper's scenario).

    Parameters
    ----------
    rho_detailed : float (> 0), optional
        rho of the block's ``detailed`` (GVHR) query; the others' follow from the fractions.
    queries : sequence of str, default every block-level query of the strategy
        The queries the adversary reads, by name (names of the persons strategy).

    Returns
    -------
    QueryDesign
        For :func:`strategy_measures`.
    """
    fractions = QUERY_FRACTIONS["block"]
    if rho_detailed is None:
        rho_detailed = float(census_level("block").rho_exact)
    rho_detailed = float(scalar_value(check_rho(rho_detailed, "rho_detailed"), "rho_detailed"))
    maps, sizes, rhos, weights = [], [], [], []
    denominator = np.lcm.reduce([fractions[name].denominator for name in queries])
    for name in queries:
        cells, size = query_cell_map(name)
        maps.append(cells)
        sizes.append(size)
        rhos.append(rho_detailed * float(fractions[name] / fractions["detailed"]))
        weights.append(int(fractions[name] * denominator))
    return QueryDesign(tuple(queries), np.array(rhos), np.stack(maps), tuple(sizes),
                       np.array(weights, dtype=np.int64))


@dataclass(frozen=True)
class BlockGroup:
    """The block-group level added to the detailed query (see the module docstring).

    Build it with :meth:`BlockGroup.checked`, which validates every field.

    Attributes
    ----------
    rho2 : float (> 0)
        rho of the block group's detailed query.
    d : int (>= 1)
        Other blocks in the block group.
    known : ndarray of int64, shape ``(K,)``
        ``m_c``, the block's counts of everyone but the target.
    others : ndarray of int64, shape ``(K,)``
        True counts of the other ``d`` blocks (the simulation's truth; default 0).
    prior : str or X2Prior
        Prior of X2 given X1 (``improper``, ``truncated:U``, ``point:K``, ...).
    """

    rho2: float
    d: int
    known: np.ndarray
    others: np.ndarray
    prior: object = "improper"

    @classmethod
    def checked(cls, rho2, d, known, others=None, prior="improper") -> BlockGroup:
        """Validate every field once."""
        known = check_known_counts(known)
        others = (np.zeros_like(known) if others is None
                  else check_known_counts(others, known.size, name="others"))
        return cls(float(scalar_value(check_rho(rho2, "rho2"), "rho2")),
                   check_positive_int(d, "d"), known, others, prior)


def strategy_log_likelihood(residuals: list[np.ndarray], design: QueryDesign,
                            detailed_log_bf: np.ndarray | None = None) -> np.ndarray:
    r"""Per-cell log-likelihood :math:`\sum_q \rho_q (2 r_{q, a_q(c)} - 1)` (kernel).

    ``residuals[q]`` holds :math:`r_q = x_q^* - m_q`, shape ``(..., n_q)``. With
    ``detailed_log_bf`` (shape ``(..., K)``) the ``detailed`` query's term is replaced by it.
    """
    total = 0.0
    for q, name in enumerate(design.names):
        if name == "detailed" and detailed_log_bf is not None:
            total = total + detailed_log_bf
            continue
        per_query_cell = odds_term(residuals[q].astype(float), design.rhos[q])
        total = total + per_query_cell[..., design.cell_maps[q]]
    return total


@dataclass(frozen=True)
class StrategyMeasures:
    """Monte Carlo estimates with their MCSE, the seed and the number of releases."""

    p_map_correct: float
    p_map_correct_mcse: float
    expected_true_posterior: float
    expected_true_posterior_mcse: float
    n_releases: int
    random_seed: int


def _factored_maps(design: QueryDesign) -> list[np.ndarray]:
    """Each query's cell map reduced to the axes of the histogram it depends on.

    When ``K`` is the 2020 GVHR size the cells are viewed as the array
    :data:`dprisk.models.census.histogram_2020.GVHR_2020_SHAPE`; a query that is constant along an
    axis keeps length 1 there, so its term broadcasts instead of being gathered cell by cell
    (a marginal query's map covers a few hundred cells, not 2,016). The identity map (the
    detailed query) becomes ``None``: its term is used as it is.
    """
    k = design.n_cells
    shape = GVHR_2020_SHAPE if k == math.prod(GVHR_2020_SHAPE) else (k,)
    identity = np.arange(k)
    maps = []
    for cells in design.cell_maps:
        if np.array_equal(cells, identity):
            maps.append(None)
            continue
        grid = cells.reshape(shape)
        keep = tuple(slice(None) if np.any(grid != grid.take([0], axis=a)) else slice(0, 1)
                     for a in range(grid.ndim))
        maps.append(grid[keep])
    return maps


def _integer_scores(residuals, design: QueryDesign, skip: str | None,
                    maps: list[np.ndarray] | None = None) -> np.ndarray:
    """``sum_q w_q (2 r_{q, a_q(c)} - 1)`` over the queries other than ``skip``, shape (n, K).

    Exact integers: int32 when the sum of the terms' largest magnitudes is below 2**30 (so
    differences of two scores fit too), else int64. ``maps`` from :func:`_factored_maps`.
    """
    maps = _factored_maps(design) if maps is None else maps
    used = [q for q, name in enumerate(design.names) if name != skip]
    bound = sum(int(abs(design.weights[q])) * (2 * int(np.abs(residuals[q]).max()) + 1)
                for q in used)
    dtype = np.int32 if bound < 2**30 else np.int64
    n, k = residuals[0].shape[0], design.n_cells
    shape = (n, *GVHR_2020_SHAPE) if k == math.prod(GVHR_2020_SHAPE) else (n, k)
    total = np.zeros(shape, dtype=dtype)
    for q in used:
        term = (design.weights[q] * (2 * residuals[q] - 1)).astype(dtype)
        if maps[q] is None:
            total += term.reshape(shape)
        else:
            total += term[:, maps[q]]
    return total.reshape(n, k)


def strategy_measures(design: QueryDesign, true_cell: int, n_releases: int, *, prior=None,
                      block_group: BlockGroup | None = None, random_seed=None,
                      conditional: bool = True) -> StrategyMeasures:
    r"""Monte Carlo :math:`P[\mathrm{MAP} = t]` and :math:`E[P(C = t \mid x^*)]`.

    Without ``block_group`` and with the detailed query in the design, the MAP probability
    is conditional Monte Carlo: given the other queries' noise, the detailed query's noise is
    independent across cells, so :math:`P[\mathrm{MAP} = t \mid B]` is the exact sum of
    :func:`dprisk.inference.attribute.design.p_map_kernel` with per-cell offsets
    :math:`\delta_c = (w_t - w_c)/(2\rho_{\text{det}})`, :math:`w_c = \log\pi_c + B_c`
    (from the integer scores, so ties are exact); the expected posterior is plain Monte Carlo.
    With ``block_group`` both are plain Monte Carlo (uniform tie-breaking).

    Parameters
    ----------
    design : QueryDesign
        The block-level queries read (:func:`census_block_design`).
    true_cell : int (0 <= true_cell < K, prior > 0)
        The target's cell.
    n_releases : int (>= 2)
        Simulated releases.
    prior : array_like of float, shape ``(K,)``, optional
        Prior over the target's cell (uniform by default).
    block_group : BlockGroup, optional
        Add the block group's detailed query (needs ``"detailed"`` in the design); its work
        is checked first (``WorkLimitError`` naming ``n_releases``).
    random_seed : int, optional
        Drawn and reported when not given.
    conditional : bool
        Use the conditional (Rao-Blackwellised) MAP probability where it applies; ``False``
        gives plain Monte Carlo (an independent check).

    Returns
    -------
    StrategyMeasures
        Means over releases with MCSE = standard deviation / sqrt(n).
    """
    if not isinstance(design, QueryDesign):
        raise TypeError(f"design must be a QueryDesign (census_block_design(...)), got "
                        f"{design!r}")
    k = design.n_cells
    prior = uniform_prior(k) if prior is None else check_cell_prior(prior, k)
    t = check_true_cell(true_cell, prior)
    n_releases = check_positive_int(n_releases, "n_releases", minimum=2)
    if block_group is not None and "detailed" not in design.names:
        raise ValueError("block_group needs the detailed query in the design")
    if block_group is not None:  # built directly (dr.attribute.BlockGroup): checked here
        if not isinstance(block_group, BlockGroup):
            raise TypeError(f"block_group must be a BlockGroup, got {block_group!r}")
        block_group = BlockGroup.checked(block_group.rho2, block_group.d, block_group.known,
                                         block_group.others, block_group.prior)
        if block_group.known.size != k:
            raise ValueError(f"block_group.known must hold one count per cell ({k}), got "
                             f"{block_group.known.size}")
        check_target_possible(block_group.known, block_group.prior, prior)
        _check_block_group_work(design, block_group, n_releases)
    seed = resolve_random_seed(random_seed)
    rng = as_generator(seed)
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior)
    conditional = conditional and block_group is None and "detailed" in design.names
    shares, posts = [], []
    maps = _factored_maps(design)
    if conditional:
        _check_p_map_grid(design)
    grid = _p_map_grid(design) if conditional else None
    for lo in range(0, n_releases, _CHUNK):
        n = min(_CHUNK, n_releases - lo)
        residuals = []
        for q, size in enumerate(design.sizes):
            hit = np.zeros(size, dtype=np.int64)
            hit[design.cell_maps[q, t]] = 1
            residuals.append(sample_kernel(hit, np.asarray(design.rhos[q]), (n, size), rng))
        log_bf = None
        if block_group is not None:
            log_bf = _simulated_block_group(residuals[design.names.index("detailed")],
                                            design.rhos[design.names.index("detailed")],
                                            block_group, t, rng)
        skip = "detailed" if block_group is not None or conditional else None
        exact_part = _integer_scores(residuals, design, skip, maps)
        if block_group is None:
            # rho_q = unit * w_q: the float log-likelihood from the integer score
            total = exact_part
            if conditional:
                q_det = design.names.index("detailed")
                total = exact_part + design.weights[q_det] * (2 * residuals[q_det] - 1)
            scores = total * (design.rhos[0] / design.weights[0])
            scores += log_prior
        else:
            scores = log_prior + strategy_log_likelihood(residuals, design, log_bf)
        posts.append(np.exp(scores[:, t] - logsumexp(scores)))
        if conditional:
            shares.append(_conditional_p_map(exact_part, grid, prior, log_prior, t))
            continue
        best = np.argmax(scores, axis=-1)[:, None]
        winners = ((exact_part == np.take_along_axis(exact_part, best, -1))
                   & (prior == prior[best]))
        if log_bf is not None:
            winners &= log_bf == np.take_along_axis(log_bf, best, -1)
        shares.append(winners[:, t] / winners.sum(-1))
    share, post = np.concatenate(shares), np.concatenate(posts)
    root_n = np.sqrt(n_releases)
    return StrategyMeasures(float(share.mean()), float(share.std(ddof=1) / root_n),
                            float(post.mean()), float(post.std(ddof=1) / root_n),
                            n_releases, seed)


def _check_block_group_work(design: QueryDesign, group: BlockGroup, n_releases: int) -> None:
    r"""Refuse the block group's exact posteriors above the work limit, naming ``n_releases``.

    Each cell of each release: the two-level posterior on the k2 window of precision
    :math:`\rho_2 + \rho_{\text{det}}/d`, :data:`WINDOW_CELL_STEPS` a value (as ``dprisk
    attribute`` counts). Unchecked, rho = rho2 = 1e-9, d = 3 took 1.6 s of CPU a release.
    """
    from dprisk.inference.kernels.table_kernels import initial_halfwidth
    from dprisk.runtime.work_limit import check_work

    rho_det = float(design.rhos[design.names.index("detailed")])
    window = 2 * initial_halfwidth(group.rho2 + rho_det / group.d, DEFAULT_TAIL_MASS) + 3
    check_work(float(n_releases) * design.n_cells * window * WINDOW_CELL_STEPS,
               parameter="n_releases (and the block group's rho2, d)",
               what=f"{n_releases} releases x {design.n_cells} cells on a k2 window of "
                    f"{window} values")


def _check_p_map_grid(design: QueryDesign) -> None:
    r"""Refuse :func:`_p_map_grid`'s table above the memory or work limit, naming rho.

    The table holds :math:`(2H + 1)(4H + 5)` cells (``H`` the detailed query's noise
    half-width at ``DEFAULT_TAIL_MASS``), each a log-cdf of two exact tail sums of
    :math:`T + 2` terms (``T`` the half-width at 1e-20): :data:`P_MAP_TABLE_CELL_BYTES` bytes
    a cell and :data:`P_MAP_TABLE_TERM_STEPS` steps a term.
    """
    from dprisk.runtime.memory_limit import check_memory
    from dprisk.runtime.work_limit import check_work

    rho_det = np.asarray(design.rhos[design.names.index("detailed")])
    half = int(support_halfwidth_kernel(rho_det, DEFAULT_TAIL_MASS))
    cells = float(2 * half + 1) * float(4 * half + 5)
    terms = cells * 2.0 * (float(support_halfwidth_kernel(rho_det, 1e-20)) + 2.0)
    what = (f"the conditional MAP's log-cdf table of {cells:.3g} cells at the detailed "
            f"query's rho = {float(rho_det):.3g}")
    check_memory(cells * P_MAP_TABLE_CELL_BYTES, parameter="rho", what=what)
    check_work(terms * P_MAP_TABLE_TERM_STEPS, parameter="rho", what=what)


def _p_map_grid(design: QueryDesign) -> dict:
    """What :func:`_conditional_p_map` needs of the detailed query, computed once per run.

    The detailed query's rho and weight, the noise grid ``e`` and its half-width ``H``, the
    log-cdf table ``log F(e + s)`` for the shifts ``s`` in ``[-2H-2, 2H+2]``, and a cache of
    :func:`dprisk.inference.attribute.design.tied_log_terms` by number of tied cells (and of
    :func:`~dprisk.inference.attribute.design.shifted_tied_log_terms` by number and offsets).
    """
    q_det = design.names.index("detailed")
    rho_det = np.asarray(design.rhos[q_det])
    e = noise_grid(rho_det, DEFAULT_TAIL_MASS)
    half = int(e[-1])
    table = logcdf_kernel(e[:, None] + np.arange(-2 * half - 2, 2 * half + 3),
                          np.zeros((1, 1), np.int64), rho_det)
    return {"rho": rho_det, "weight": design.weights[q_det], "e": e, "half": half,
            "table": table, "tied": {}, "shifted": {}}


def _conditional_p_map(score, grid: dict, prior, log_prior, t: int):
    """``P[MAP = t | other queries' noise]`` for each release of a chunk (exact sum).

    ``score`` holds the integer scores of the queries other than the detailed one; ``grid``
    is :func:`_p_map_grid`'s.

    :func:`dprisk.inference.attribute.design.p_map_kernel` vectorised over the chunk: shifts
    are clipped to ``[-2H-2, 2H+2]`` (``H`` the noise half-width), which changes each factor
    ``F(e + shift)`` by less than the tail mass. The target's own column is tied with itself
    and so never counted among the other cells. A cell of the target's prior whose score
    differs from the target's by a multiple of twice the detailed weight ties with it at that
    integer offset of the detailed noises (a probability, not a null set): the releases
    holding such cells take
    :func:`dprisk.inference.attribute.design.shifted_tied_log_terms` (uniform tie-breaking,
    as the plain Monte Carlo); they were counted as the target losing (a design whose two
    queries have equal weights gave 0.5855 for an exact 0.6151).
    """
    n_releases = score.shape[0]
    half, e, rho_det = grid["half"], grid["e"], grid["rho"]
    mine = score[:, t:t + 1]
    tied = score == mine
    same_prior = prior == prior[t]
    if not np.all(same_prior):
        tied &= same_prior
    keep = ~tied
    if np.any(prior <= 0):
        keep &= prior > 0
    step = 2 * int(grid["weight"])
    gap = mine.astype(np.int64) - score
    shifted = keep & same_prior & (gap % step == 0)  # nonzero: tied cells are not kept
    keep &= ~shifted
    delta = (mine - score) / (2.0 * grid["weight"])
    delta += (log_prior[t] - log_prior) / (2.0 * rho_det)
    np.clip(delta, -2 * half - 2, 2 * half + 2, out=delta)
    np.ceil(delta, out=delta)
    width = 4 * half + 5
    index = delta.astype(np.int64)
    index += np.arange(n_releases)[:, None] * width + (2 * half + 2)
    counts = np.bincount(index[keep], minlength=n_releases * width).reshape(
        n_releases, width).astype(float)
    n_tied = tied.sum(-1) - 1
    out = np.empty(n_releases)
    plain = ~shifted.any(-1)
    for n in np.unique(n_tied[plain]):
        sel = plain & (n_tied == n)
        if n not in grid["tied"]:
            grid["tied"][n] = tied_log_terms(rho_det, e, int(n))
        log_terms = grid["tied"][n] + counts[sel] @ grid["table"].T
        out[sel] = np.exp(logsumexp(log_terms))
    rows = np.flatnonzero(~plain)
    if rows.size:  # releases alike in their ties share one integral (the grid's cache)
        offsets = np.clip(gap[rows] // step, -2 * half - 2, 2 * half + 2)
        keys = [(int(n_tied[row]), tuple(sorted(offsets[i, shifted[row]].tolist())))
                for i, row in enumerate(rows)]
        log_tied = np.empty((rows.size, e.size))
        for i, key in enumerate(keys):
            if key not in grid["shifted"]:
                grid["shifted"][key] = shifted_tied_log_terms(rho_det, e, key[0],
                                                              np.array(key[1], np.int64))
            log_tied[i] = grid["shifted"][key]
        out[rows] = np.exp(logsumexp(log_tied + counts[rows] @ grid["table"].T))
    return out


def _simulated_block_group(block_residuals, rho1, group: BlockGroup, t: int, rng):
    """Simulate x2*, y1* for a chunk and return each cell's two-level log Bayes factor."""
    n, k = block_residuals.shape
    truth = group.known.copy()
    truth[t] += 1
    x1s = block_residuals + group.known
    x2s = sample_kernel(truth + group.others, np.asarray(group.rho2), (n, k), rng)
    y1s = group.others + sample_sum_kernel(group.d, np.asarray(rho1), (n, k), rng)
    return two_level_log_bayes_factors(x1s, x2s, y1s, group.known, float(rho1), group.rho2,
                                       group.d, group.prior)
