r"""The target's whole record from a K-cell product beside the noisy cells (issue 21, §2).

**Tree and data.** A block group (the root) over ``d + 1`` blocks, every node a K-cell
histogram (:mod:`.histogram_tree`); block 0 holds the target, whose record is one of the K
cells :math:`C`. True counts: block 0 holds :math:`m + e_C` (``m`` everyone but the target),
the other blocks hold :math:`y^{(1)}, \dots, y^{(d)}`; the block group their sum. Every cell of
every block is measured at :math:`\rho_1`, every cell of the block group at :math:`\rho_2`.

**The adversary** knows ``m`` and every other block's counts (everyone but the target, as the
paper's adversary), a prior :math:`\pi` over ``C`` (uniform in the study), the mechanism and
the post-processing rule, and sees either

* the noisy cells of every node: :math:`\log P[C = c \mid x^*] = \log\pi_c +
  \rho_1 (2 (b^*_{0,c} - m_c) - 1) + \rho_2 (2 (x^*_{2,c} - m_c - y_c) - 1) + \text{const}`
  (:math:`y_c = \sum_i y^{(i)}_c`; the other blocks' noisy cells do not depend on ``C``); or
* the product without invariant: per cell the block group's :math:`\max(0, x^*_{2,c})`, then
  each cell's blocks projected onto it and rounded (largest remainders, uniform ties, as the
  MILP of :mod:`.histogram_tree` with its random tie-break). Every step acts on one cell's
  column alone, so the product's likelihood factorises over cells and only column ``c``
  changes with the hypothesis:

  .. math::

      \log P[C = c \mid w] = \log\pi_c + \log\frac{L_1^{(c)}(w_c)}{L_0^{(c)}(w_c)}
        + \text{const},

  :math:`L_h^{(c)}` the exact one-count product likelihood of part 1
  (:func:`dprisk.inference.product.exact.product_table` with others :math:`y^{(\cdot)}_c`,
  ``m`` :math:`= m_c`; :math:`h = 1`: the target in the cell). The tables are enumerated once
  per distinct :math:`(m_c, y^{(1)}_c, \dots, y^{(d)}_c)` and have neglected mass < 1e-12 each.

With the total invariant (a block's count over its cells held exact) the cells couple and the
likelihood no longer factorises: not done here at K = 864 (:mod:`.histogram_monte_carlo`
simulates it for small trees). An adversary who does not know the other blocks (a prior over
their cells) is not done for K cells either; part 1's
:mod:`dprisk.inference.product.unknown_others` covers one count.

**P[MAP correct]**: the MAP cell of the log posterior (uniform tie-breaking; scores rounded to
10 decimals so that equal scores reached by different floating sums tie). Exact
(:func:`p_map_correct_exact`): with the cells grouped in classes ``j`` of equal tables, ``n_j``
non-target cells each, each cell's score :math:`S` i.i.d. within a class given the truth,

.. math::

    P[\mathrm{MAP} = t] = \sum_s P_t[S = s] \int_0^1 \prod_j
        \bigl(P_j[S < s] + x\, P_j[S = s]\bigr)^{n_j} dx

(the integral is the probability that the uniform tie-break picks the target among the tied
cells), by Gauss–Legendre quadrature exact for the polynomial's degree
:math:`\sum_j n_j`. Monte Carlo (:func:`p_map_correct_mc`): releases simulated from the tree
and post-processed by :func:`.histogram_tree.top_down_batch`, both releases' MAP on the same
draws (a paired comparison); mean and MCSE of the correctness share. The share is near 0 or
1 and the target wins rarely at ED 28-21 (P about 0.01: 2,000 releases give a 20 % relative
error), so the same releases also give the **conditional** estimator
:math:`E[\text{share} \mid \text{other cells}] = P_t[S > M] + P_t[S = M]/(n_M + 1)`
(``M`` the other cells' largest simulated score, ``n_M`` how many have it, :math:`P_t` the
target cell's exact score law; without invariant the target's column is post-processed alone,
independent of the others): the same mean (Rao-Blackwell), with the other 863 cells still
simulated through the product, about 1.7 % relative error at 2,000 releases.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import roots_legendre

from dprisk.inference.product import exact
from dprisk.inference.product.histogram_tree import (
    regular_tree,
    simulate_measurements,
    top_down_batch,
)
from dprisk.models.checks import check_count, check_positive_int, check_rho
from dprisk.models.mechanism.dg_sampling import as_generator
from dprisk.models.scenario import scalar_value
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import check_work

__all__ = ["CellTables", "KCellMapCorrect", "cell_tables", "map_accuracy_exact",
           "p_map_correct_exact", "p_map_correct_mc"]

#: Decimals kept of a score before comparing (module notes).
SCORE_DECIMALS = 10
#: Releases post-processed together (memory: about 60 bytes per cell and release).
_CHUNK = 1000
#: Bytes kept per simulated release of :func:`p_map_correct_mc` (its four shares, their
#: differences and the temporaries of the means; measured about 125, rounded up).
RELEASE_BYTES = 160
#: Work steps (:mod:`dprisk.runtime.work_limit`) of one simulated release: a fixed part plus
#: a part per cell of the tree (``K x (d + 2)``); measured 5,000-20,000 steps a release for
#: K <= 8 and 127 a cell for the 864-cell ED 28-21 (K = 864, d = 1), rounded up.
RELEASE_STEPS, RELEASE_CELL_STEPS = 10_000, 200


@dataclass(frozen=True)
class CellTables:
    r"""Per-class likelihood tables of one cell's release (product or noisy cells).

    Attributes
    ----------
    cell_class : ndarray of int64, shape (K,)
        Class of every cell.
    outputs : list of ndarray of int64
        Per class, the release values of one cell (rows).
    likelihood : list of ndarray of float, shape (2, n)
        Per class, :math:`L_0` (no target) and :math:`L_1` (the target) of every row.
    score : list of ndarray of float
        Per class, :math:`\log L_1 - \log L_0` rounded to :data:`SCORE_DECIMALS`.
    neglected_mass : float
        Largest neglected probability of one table.
    """

    cell_class: np.ndarray
    outputs: list
    likelihood: list
    score: list
    neglected_mass: float


def _check(known, others, rho1, rho2):
    known = check_count(np.asarray(known), "known", minimum=0, nonempty=True)
    others = check_count(np.atleast_2d(others), "others", minimum=0, nonempty=True)
    if known.ndim != 1 or others.ndim != 2 or others.shape[1] != known.size:
        raise ValueError(f"known must be (K,) and others (d, K), got {known.shape} and "
                         f"{others.shape}")
    rho1, rho2 = (float(scalar_value(check_rho(value, name), name))
                  for value, name in ((rho1, "rho1"), (rho2, "rho2")))
    return known, others, rho1, rho2


def _score(likelihood: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.round(np.log(likelihood[1]) - np.log(likelihood[0]), SCORE_DECIMALS)


def cell_tables(known, others, rho1, rho2, *, release="product") -> CellTables:
    r"""Exact per-cell likelihood tables, one per class of equal cells (module notes).

    Parameters
    ----------
    known : array_like of int (>= 0), shape (K,)
        :math:`m`: the target block without the target.
    others : array_like of int (>= 0), shape (d, K)
        The other blocks' counts.
    rho1, rho2 : float (> 0)
        Block and block-group :math:`\rho` of every cell.
    release : {"product", "noisy"}, default "product"
        The product's column :math:`(\tilde x_{2,c}, \tilde b_{0,c}, \dots)` or the informative
        noisy cells :math:`(b^*_{0,c}, x^*_{2,c})`.

    Returns
    -------
    CellTables
        The tables :func:`p_map_correct_exact` and :func:`p_map_correct_mc` read.
    """
    known, others, rho1, rho2 = _check(known, others, rho1, rho2)
    if release not in ("product", "noisy"):
        raise ValueError(f"release must be 'product' or 'noisy', got {release!r}")
    config = np.column_stack([known, others.T])
    classes, cell_class = np.unique(config, axis=0, return_inverse=True)
    outputs, likelihood, score, neglected = [], [], [], 0.0
    for row in classes:
        m, ys = int(row[0]), row[1:].tolist()
        table = (exact.product_table(rho1, rho2, ys, m, "none") if release == "product"
                 else exact.noisy_table(rho1, rho2, ys, m))
        keys = table.outputs
        order = np.lexsort(keys.T[::-1])
        outputs.append(keys[order])
        likelihood.append(table.likelihood[:, order])
        score.append(_score(table.likelihood[:, order]))
        neglected = max(neglected, table.neglected_mass)
    return CellTables(cell_class.ravel().astype(np.int64), outputs, likelihood, score,
                      neglected)


def _check_target(target, k: int) -> int:
    """``target`` as a cell index ``0 <= target < k`` (a negative index named another cell)."""
    try:
        cell = check_positive_int(target, "target", minimum=0)
    except ValueError:
        cell = -1
    if not 0 <= cell < k:
        raise ValueError(f"target must be a cell in 0..{k - 1} (allowed range: 0 <= target <= "
                         f"{k - 1}), got {target!r}")
    return cell


def p_map_correct_exact(tables: CellTables, target: int, *, nodes: int | None = None) -> float:
    r"""Exact :math:`P[\mathrm{MAP} = t]`, uniform prior and uniform ties (module notes).

    .. math::

        P[\mathrm{MAP} = t] = \sum_s P_t[S = s] \int_0^1 \prod_j
            \bigl(P_j[S < s] + x\, P_j[S = s]\bigr)^{n_j} dx

    Parameters
    ----------
    tables : CellTables
        The exact per-cell tables of :func:`cell_tables` (the product or the noisy cells).
    target : int (0 <= target < K)
        The target's true cell ``t``.
    nodes : int (>= 1), optional
        Gauss–Legendre nodes of the integral; by default :math:`\lfloor n/2 \rfloor + 2`
        with :math:`n = \sum_j n_j` the polynomial's degree (exact; fewer nodes are not).

    Returns
    -------
    float
        The probability in [0, 1].
    """
    if not isinstance(tables, CellTables):
        raise TypeError(f"tables must be the CellTables of cell_tables(...), got {tables!r}")
    target = _check_target(target, tables.cell_class.size)
    if nodes is not None:
        nodes = check_positive_int(nodes, "nodes")
    counts = np.bincount(tables.cell_class, minlength=len(tables.score))
    counts[tables.cell_class[target]] -= 1
    t_class = tables.cell_class[target]
    s_t, p_t = _score_law(tables.score[t_class], tables.likelihood[t_class][1])
    degree = int(counts.sum())
    x, wq = _unit_gauss_legendre(nodes or degree // 2 + 2)
    log_g = np.zeros((s_t.size, x.size))
    for j, n_j in enumerate(counts):
        if n_j == 0:
            continue
        s_j, p_j = _score_law(tables.score[j], tables.likelihood[j][0])
        cum = np.concatenate([[0.0], np.cumsum(p_j)])
        below = cum[np.searchsorted(s_j, s_t, side="left")]
        equal = cum[np.searchsorted(s_j, s_t, side="right")] - below
        with np.errstate(divide="ignore"):
            log_g += n_j * np.log(below[:, None] + x[None, :] * equal[:, None])
    return float(np.sum(p_t * (np.exp(log_g) @ wq)))


def map_accuracy_exact(tables: CellTables) -> float:
    r"""Accuracy of the MAP cell over the uniform prior (data-processing bounded).

    .. math:: A = \frac1K \sum_t P[\mathrm{MAP} = t \mid C = t]

    Cells of one class are exchangeable, so one :func:`p_map_correct_exact` per class,
    weighted by the class size. Under the uniform prior the MAP is the Bayes decision, so
    this accuracy obeys data processing: the product's (a randomised function of the noisy
    cells) cannot exceed the noisy cells' (unlike :math:`P[\mathrm{MAP} = t]` for one ``t``).
    """
    counts = np.bincount(tables.cell_class)
    first = np.array([np.flatnonzero(tables.cell_class == j)[0] for j in range(counts.size)])
    return float(sum(n * p_map_correct_exact(tables, int(t)) for n, t in zip(counts, first,
                                                                          strict=True))
                 / tables.cell_class.size)


@lru_cache(maxsize=8)
def _unit_gauss_legendre(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [0, 1] (exact for degree ``2 nodes - 1``)."""
    x, w = roots_legendre(nodes)
    return (x + 1) / 2, w / 2


def _score_law(score: np.ndarray, prob: np.ndarray):
    """Distinct scores (sorted) and their probabilities."""
    values, inverse = np.unique(score, return_inverse=True)
    return values, np.bincount(inverse.ravel(), weights=prob, minlength=values.size)


def _lookup(tables: CellTables, columns: np.ndarray) -> tuple[np.ndarray, int]:
    """Score of every cell's observed column (``(n, K, c)``); unseen values score 0.

    Rows are encoded as mixed-radix integers over the table's range and found by binary
    search in the sorted table keys.
    """
    n, k, _ = columns.shape
    out = np.zeros((n, k))
    unseen = 0
    for j, outputs in enumerate(tables.outputs):
        cells = np.flatnonzero(tables.cell_class == j)
        lo, hi = outputs.min(axis=0), outputs.max(axis=0)
        radix = hi - lo + 1
        stride = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]])
        keys = (outputs - lo) @ stride
        order = np.argsort(keys)
        keys, score = keys[order], tables.score[j][order]
        # the key sum_i (obs_i - lo_i) stride_i in Horner form, one column at a time (the
        # same integers as the (n, cells, c) block's matrix product, without copying it)
        inside = np.ones((n, cells.size), dtype=bool)
        want = np.zeros((n, cells.size), dtype=keys.dtype)
        for i in range(outputs.shape[1]):
            column = columns[:, cells, i] if cells.size < k else columns[:, :, i]
            inside &= (column >= lo[i]) & (column <= hi[i])
            want *= radix[i]
            want += column - lo[i]
        want[~inside] = -1
        at = np.searchsorted(keys, want)
        np.minimum(at, keys.size - 1, out=at)
        found = inside & (keys[at] == want)
        unseen += int(found.size - np.count_nonzero(found))
        out[:, cells] = np.where(found, score[at], 0.0)
    return out, unseen


def _map_share(score: np.ndarray, target: int) -> np.ndarray:
    best = score == score.max(axis=1, keepdims=True)
    return best[:, target] / best.sum(axis=1)


def _conditional_share(score: np.ndarray, target: int, tables: CellTables) -> np.ndarray:
    r""":math:`E[\text{share} \mid \text{the other cells}]`: the target's score integrated exactly.

    With ``M`` the largest simulated score of the other cells and ``n_M`` how many have it,
    :math:`P_t[S > M] + P_t[S = M] / (n_M + 1)` (uniform ties), :math:`P_t` the law of the
    target cell's score from its exact table (independent of the other cells' columns).
    """
    others = np.delete(score, target, axis=1)
    top = others.max(axis=1)
    n_top = np.sum(others == top[:, None], axis=1)
    t_class = tables.cell_class[target]
    values, prob = _score_law(tables.score[t_class], tables.likelihood[t_class][1])
    cum = np.concatenate([[0.0], np.cumsum(prob)])
    upto = cum[np.searchsorted(values, top, side="right")]
    equal = upto - cum[np.searchsorted(values, top, side="left")]
    return (cum[-1] - upto) + equal / (n_top + 1)


@dataclass(frozen=True)
class KCellMapCorrect:
    """P[MAP = the target's cell] from the product and from the noisy cells, Monte Carlo.

    ``difference`` is product minus noisy on the same releases, with its paired MCSE;
    ``unseen`` counts observed cell values missing from the exact tables (scored 0).
    ``*_conditional``: the same releases' conditional estimator (module notes), the target
    cell's score integrated exactly given the simulated other cells (a Rao-Blackwellisation:
    same mean, about a tenth of the MCSE at ED 28-21).
    """

    product: float
    product_mcse: float
    noisy: float
    noisy_mcse: float
    difference: float
    difference_mcse: float
    releases: int
    unseen: int
    random_seed: int
    product_conditional: float = float("nan")
    product_conditional_mcse: float = float("nan")
    noisy_conditional: float = float("nan")
    noisy_conditional_mcse: float = float("nan")
    difference_conditional: float = float("nan")
    difference_conditional_mcse: float = float("nan")


def p_map_correct_mc(known, others, target: int, rho1, rho2, *, releases=2000,
                     random_seed: int = 0, product_tables: CellTables | None = None,
                     noisy_tables: CellTables | None = None) -> KCellMapCorrect:
    r"""P[MAP = target's cell] from the K-cell product and the noisy cells (module notes).

    Parameters
    ----------
    known, others, rho1, rho2
        As in :func:`cell_tables`.
    target : int
        The target's true cell.
    releases : int (>= 2)
        Simulated releases (processed in chunks of 1,000).
    random_seed : int
        Seed of the releases and the rounding tie-breaks (reported).
    product_tables, noisy_tables : CellTables, optional
        Precomputed :func:`cell_tables` (computed if not given).

    Returns
    -------
    KCellMapCorrect
        Both estimates with their MCSE, their paired difference, and the conditional
        estimators of the same releases.

    Raises
    ------
    ValueError
        Naming the parameter; ``releases`` above the memory limit (:data:`RELEASE_BYTES` a
        release) or the work limit (:data:`RELEASE_STEPS` plus :data:`RELEASE_CELL_STEPS`
        per cell of the tree, per release), before any release is simulated.
    """
    known, others, rho1, rho2 = _check(known, others, rho1, rho2)
    releases = check_positive_int(releases, "releases", minimum=2)
    k = known.size
    target = _check_target(target, k)
    what = f"{releases} simulated releases of {k} cells x {others.shape[0] + 2} tree nodes"
    check_memory(float(releases) * RELEASE_BYTES, parameter="releases", what=what)
    check_work(float(releases) * (RELEASE_STEPS + RELEASE_CELL_STEPS * k * (others.shape[0] + 2)),
               parameter="releases", what=what)
    product_tables = product_tables or cell_tables(known, others, rho1, rho2)
    noisy_tables = noisy_tables or cell_tables(known, others, rho1, rho2, release="noisy")
    rng = as_generator(int(random_seed), "random_seed")
    d = others.shape[0]
    tree = regular_tree((d + 1,), (rho2, rho1))
    leaves = np.vstack([known + np.eye(k, dtype=np.int64)[target], others])
    shares, unseen = [], 0
    for start in range(0, releases, _CHUNK):
        n = min(_CHUNK, releases - start)
        noisy = simulate_measurements(tree, leaves, size=n, random_seed=rng)
        root, blocks = top_down_batch(tree, noisy, random_seed=rng)
        columns = np.concatenate([root.transpose(0, 2, 1), blocks.transpose(0, 2, 1)], axis=2)
        score_p, miss_p = _lookup(product_tables, columns)
        pair = np.stack([noisy[1][:, 0, :], noisy[0][:, 0, :]], axis=2)  # (b0*, x2*)
        score_n, miss_n = _lookup(noisy_tables, pair)
        unseen += miss_p + miss_n
        shares.append(np.column_stack([
            _map_share(score_p, target), _map_share(score_n, target),
            _conditional_share(score_p, target, product_tables),
            _conditional_share(score_n, target, noisy_tables)]))
    share = np.concatenate(shares)
    diff = share[:, [0, 2]] - share[:, [1, 3]]
    se = share.std(axis=0, ddof=1) / np.sqrt(releases)
    se_diff = diff.std(axis=0, ddof=1) / np.sqrt(releases)
    mean, mean_diff = share.mean(axis=0), diff.mean(axis=0)
    return KCellMapCorrect(float(mean[0]), float(se[0]), float(mean[1]), float(se[1]),
                           float(mean_diff[0]), float(se_diff[0]), releases, unseen,
                           int(random_seed), float(mean[2]), float(se[2]), float(mean[3]),
                           float(se[3]), float(mean_diff[1]), float(se_diff[1]))
