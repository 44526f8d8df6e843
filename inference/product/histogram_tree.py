r"""K-cell histograms on a tree, post-processed top-down: least squares, then integer rounding.

**The tree.** Level 0 is one root (e.g. a tract); level ``l + 1`` has nodes whose parents are
nodes of level ``l`` (:class:`HistogramTree`, e.g. tract -> block groups -> blocks). Every node
holds a K-cell histogram; the true counts of a node are the sums of its children's (the leaves'
counts are given). Every node's every cell is measured with independent noise,
:math:`x^*_{v,k} = x_{v,k} + \mathrm{DG}(0, 1/(2\rho_l))` at that node's level ``l``.

**The product, top-down** (:func:`top_down`). The root first, then each level given the level
above's *solved integers* (TopDown's order):

1. root: :math:`\tilde z = \max(0, x^*)` cell by cell (already integers); with the total
   invariant (``invariant="total"``) the Euclidean projection of :math:`x^*` onto
   :math:`\{z \ge 0, \sum_k z_k = T\}`, :math:`T` the root's true total, then rounded;
2. each parent :math:`u` with solved cells :math:`P_k` and children :math:`c = 1..n`: the
   weighted least squares

   .. math::

       \min_z \sum_{c,k} w_c (z_{c,k} - x^*_{c,k})^2 \quad\text{s.t.}\quad z \ge 0,\
       \sum_c z_{c,k} = P_k \ (\text{every cell } k),\
       [\sum_k z_{c,k} = T_c \ (\text{every child, total invariant})],

   with weights :math:`w_c = 2\rho_c`, the inverse of the DG variance
   :math:`\approx 1/(2\rho)` (siblings share a level, hence a weight, unless ``weights`` says
   otherwise); then integers (step 3).

**Solvers** (:func:`solve_children`). Without the total invariant and with equal sibling
weights the problem separates into one simplex projection per cell,
:math:`z_{c,k} = \max(0, x^*_{c,k} - \tau_k)`, computed in exact integer arithmetic by
:func:`dprisk.inference.product.projection_kernels.project_floor_rows` (``method="projection"``,
the part-1 kernel: every active entry of a cell has the fractional part
:math:`r_k/|A_k|`). The general problem (unequal weights, or the total invariant, whose row
and column sums couple the cells) is a convex QP with equalities and bounds, solved by SciPy's
SLSQP (``method="slsqp"``: Kraft's sequential least squares, whose subproblem is exactly a
least-squares problem with linear equalities and bounds, so a QP converges in a few
iterations to about 1e-10) or ``"trust-constr"`` (interior point, slower and less precise; kept
for the comparison). ``scipy.optimize.lsq_linear`` takes bounds only: eliminating one child
per cell turns its bound :math:`z \ge 0` into a general inequality, which it cannot take, so it
is not used. OSQP and Clarabel are not installed in this environment (not added). The
benchmark ``bench_histogram_product`` measures the CPU seconds per solve; one run (shared
2-core machine at load 13-14, CPU time, two runs): 4 children x 16 cells, equal weights:
projection 1.5 ms, SLSQP 114-174 ms, trust-constr 5.7-6.0 s; 3 x 8 with the totals: SLSQP
47-155 ms, trust-constr 209-217 ms (and 1e-5 precision against SLSQP's 1e-10 before
polishing). Hence: the projection whenever it applies, SLSQP otherwise.

**Invariants.** ``invariant="total"`` holds every node's total over its cells exact. Holding
the blocks' totals exact holds every ancestor's too (sums of blocks), so this is the
"block-total invariant" of the issue. The tree module is the mechanism and the rule; what the
adversary knows is stated where it is used (:mod:`.histogram_monte_carlo`,
:mod:`.histogram_attribute`).

3. **Rounding** (:func:`round_children`): integers :math:`n_{c,k} \in
   \{\lfloor z_{c,k} \rfloor, \lfloor z_{c,k} \rfloor + 1\}` (controlled rounding) minimising the
   L1 change :math:`\sum |n - z| = \sum f + \sum_{\text{up}} (1 - 2 f)`
   (:math:`f` the fractional parts) while keeping every parent cell :math:`\sum_c n_{c,k} = P_k`
   and every invariant total exactly: a 0-1 integer program solved by HiGHS
   (:func:`scipy.optimize.milp`, ``mip_rel_gap = 0``). Its constraint matrix (cell sums, child
   sums) is that of a bipartite transportation problem, totally unimodular, so a solution
   exists whenever the real solution does. **Ties**: every L1-optimal rounding is equally
   likely (the part-1 rule, and the adversary's likelihood). Without the total invariant the
   program separates by cell and all fractional entries of a cell tie exactly (equal
   weights; the projection's common fractional part): the objective gets a random tie-break
   :math:`\epsilon\, \mathrm{rank}(u_{c,k})` per rounded-up entry (:math:`u` i.i.d. uniform,
   :math:`\epsilon = 10^{-5}`, 100 times HiGHS's 1e-7 tolerances) and the MILP takes the
   tied entries of smallest ``u``: with ``r`` units among ``A`` tied entries, a uniformly
   random ``r``-subset. With the total invariant (rows and columns coupled) random ranks are
   not uniform (rank sums of two optimal roundings tie; 2 x 2 half-table: 1/3 against 2/3):
   the set of optimal roundings is read off the LP's reduced costs and sampled uniformly by
   exact counting (:mod:`.histogram_rounding`, issue 32). ``rounding="largest-remainder"``
   applies the separable rule directly
   (floors, then the ``r`` tied active entries with the smallest ``u``; separable case only):
   with the same ``u`` it returns the same integers as the MILP (a test checks this); it is
   18-22x faster (CPU, 2 x 864 and 4 x 16: 0.4 ms against 7.3 ms per level).

Inputs of :func:`solve_children` and :func:`round_children` are validated; the kernels they
call are not.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse

from dprisk.inference.product.histogram_rounding import ROUNDINGS, round_children
from dprisk.inference.product.projection_kernels import NETWORK_BLOCKS, project_floor_rows
from dprisk.models.checks import check_count, check_positive_int, check_rho
from dprisk.models.mechanism.dg_sampling import as_generator, resolve_random_seed, sample
from dprisk.runtime.memory_limit import check_memory

__all__ = [
    "INVARIANTS",
    "ROUNDINGS",
    "SOLVERS",
    "HistogramTree",
    "TreeProduct",
    "regular_tree",
    "round_children",
    "simulate_measurements",
    "solve_children",
    "solve_root",
    "top_down",
    "top_down_batch",
]

#: Invariants of the K-cell product: none, or every node's total (over its cells) held exact.
INVARIANTS = ("none", "total")
#: Least-squares solvers of one parent's children.
SOLVERS = ("auto", "projection", "slsqp", "trust-constr")


@dataclass(frozen=True)
class HistogramTree:
    r"""A tree of K-cell histograms, level by level from one root.

    Attributes
    ----------
    parents : tuple of ndarray of int64
        ``parents[l][i]``: the index, among the nodes of level ``l``, of node ``i`` of level
        ``l + 1`` (every node of level ``l`` has at least one child).
    rhos : tuple of float
        :math:`\rho_l` of every cell measurement at level ``l`` (``len(parents) + 1``).
    """

    parents: tuple
    rhos: tuple

    def __post_init__(self):
        if len(self.rhos) != len(self.parents) + 1:
            raise ValueError(f"rhos must give one rho per level ({len(self.parents) + 1}), "
                             f"got {len(self.rhos)}")
        check_rho(np.asarray(self.rhos, dtype=float), "rhos")
        above = 1
        for level, parent in enumerate(self.parents):
            parent = np.asarray(parent)
            if parent.ndim != 1 or parent.size == 0 or parent.dtype.kind not in "iu" \
                    or parent.min() < 0 or parent.max() >= above \
                    or np.any(np.bincount(parent, minlength=above) == 0):
                raise ValueError(f"parents[{level}] must map every node of level {level + 1} "
                                 f"to one of the {above} nodes above, each with a child")
            above = parent.size

    @property
    def n_levels(self) -> int:
        """Number of levels (root included)."""
        return len(self.parents) + 1

    def n_nodes(self, level: int) -> int:
        """Number of nodes at ``level``."""
        return 1 if level == 0 else len(self.parents[level - 1])

    def aggregate(self, leaf_counts) -> list[np.ndarray]:
        """True counts of every level (root first) from the leaves' ``(n_leaves, K)`` counts."""
        counts = [check_count(np.asarray(leaf_counts), "leaf_counts", minimum=0)]
        if counts[0].ndim != 2 or counts[0].shape[0] != self.n_nodes(self.n_levels - 1):
            raise ValueError(f"leaf_counts must have shape ({self.n_nodes(self.n_levels - 1)}, "
                             f"K), got {counts[0].shape}")
        for level in range(self.n_levels - 1, 0, -1):
            up = np.zeros((self.n_nodes(level - 1), counts[0].shape[1]), dtype=np.int64)
            np.add.at(up, np.asarray(self.parents[level - 1]), counts[0])
            counts.insert(0, up)
        return counts


def regular_tree(fanout, rhos) -> HistogramTree:
    r"""A tree whose every node of level ``l`` has ``fanout[l]`` children (e.g. ``(2, 3)``).

    Parameters
    ----------
    fanout : sequence of int (each >= 1)
        Children per node, level by level from the root: level ``l + 1`` has
        :math:`\prod_{i \le l}` ``fanout[i]`` nodes (8 bytes each, within the memory limit).
    rhos : sequence of float (each > 0)
        :math:`\rho_l` of every level's cell measurements, root first (``len(fanout) + 1``).

    Returns
    -------
    HistogramTree
        Node ``i`` of level ``l + 1`` has parent ``i // fanout[l]``.
    """
    if isinstance(fanout, (str, bytes)) or np.ndim(fanout) != 1:
        raise TypeError(f"fanout must be a sequence of integers >= 1, got {fanout!r}")
    fanout = [check_positive_int(n, "fanout") for n in fanout]
    nodes = float(np.cumprod(np.array(fanout, dtype=float)).sum())
    check_memory(8.0 * nodes, parameter="fanout", what=f"a tree of {nodes:.3g} nodes")
    above = np.cumprod([1, *fanout[:-1]])  # nodes of each level above (checked small)
    parents = [np.repeat(np.arange(nodes_above), n) for nodes_above, n in zip(above, fanout)]
    return HistogramTree(tuple(parents), tuple(check_rho(rhos, "rhos").ravel().tolist()))


@dataclass(frozen=True)
class TreeProduct:
    """The integer product of every level (root first), each ``(n_nodes, K)`` int64.

    ``random_seed``: the integer seed of the rounding tie-breaks (drawn by :func:`top_down`
    when none was given; None when a numpy Generator was passed): the same seed gives the
    same product.
    """

    levels: tuple
    random_seed: int | None = None


def simulate_measurements(tree: HistogramTree, leaf_counts, *, size: int | None = None,
                          random_seed=None) -> list[np.ndarray]:
    r"""Noisy cells of every node: :math:`x^* = x + \mathrm{DG}(0, 1/(2\rho_l))`.

    Parameters
    ----------
    tree : HistogramTree
        The nodes and each level's :math:`\rho_l`.
    leaf_counts : array_like of int (>= 0)
        The leaves' true cells, ``(n_leaves, K)``; every level's counts are their sums.
    size : int, optional
        Independent releases drawn at once (a leading axis).
    random_seed : int or numpy.random.Generator, optional
        Seed of the exact discrete Gaussian sampler.

    Returns
    -------
    list of ndarray of int64
        One array per level, root first, ``(n_nodes, K)`` (``(size, n_nodes, K)`` with ``size``).
        A ``tree`` that is no HistogramTree, a ``size`` that is no integer >= 0 or whose draws
        (24 bytes a cell) pass the memory limit are refused naming it.
    """
    if not isinstance(tree, HistogramTree):
        raise TypeError(f"tree must be a HistogramTree (regular_tree(...)), got {tree!r}")
    releases = 1 if size is None else check_positive_int(size, "size", minimum=0)
    cells = tree.n_levels * max(np.size(leaf_counts), 1)  # each level: <= the leaves' cells
    check_memory(24.0 * releases * cells, parameter="size", what=f"{releases} releases")
    rng = as_generator(random_seed, "random_seed")
    out = []
    for counts, rho in zip(tree.aggregate(leaf_counts), tree.rhos, strict=True):
        shape = counts.shape if size is None else (size, *counts.shape)
        out.append(counts + sample(np.zeros(shape, dtype=np.int64), rho, size=shape,
                                   random_seed=rng).astype(np.int64))
    return out


# --------------------------------------------------------------------------- solvers
def _exact_projection(noisy: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per-cell simplex projection (rows: children, columns: cells), exact, as floats."""
    floors, active, remainder = project_floor_rows(noisy.T.astype(np.int64),
                                                   np.asarray(parent, dtype=np.int64))
    size = np.maximum(active.sum(axis=1), 1)
    return (floors + active * (remainder / size)[:, None]).T


def _qp(noisy, parent, weights, totals, method):
    n, k = noisy.shape
    w = np.repeat(weights, k)
    x = noisy.ravel().astype(float)
    rows = [sparse.kron(np.ones((1, n)), sparse.eye(k))]  # cell sums (z is child-major)
    rhs = [parent.astype(float)]
    if totals is not None:  # child sums; the last is implied by the others and the cells
        rows.append(sparse.kron(sparse.eye(n), np.ones((1, k))).tocsr()[:-1])
        rhs.append(totals[:-1].astype(float))
    a = sparse.vstack(rows).toarray()
    b = np.concatenate(rhs)
    start = np.repeat(parent[None, :] / n, n, axis=0).ravel()
    if totals is not None:  # a feasible start: the independence table T_c P_k / sum P
        start = (np.outer(totals, parent) / max(parent.sum(), 1)).ravel()

    def objective(z):
        r = z - x
        return float(np.sum(w * r * r)), 2.0 * w * r

    if method == "slsqp":
        res = optimize.minimize(objective, start, jac=True, method="SLSQP",
                                bounds=[(0, None)] * x.size,
                                constraints=[{"type": "eq", "fun": lambda z: a @ z - b,
                                              "jac": lambda z: a}],
                                options={"ftol": 1e-13, "maxiter": 500})
    else:
        res = optimize.minimize(objective, start, jac=True, method="trust-constr",
                                hess=lambda z: np.diag(2.0 * w),
                                bounds=optimize.Bounds(0, np.inf),
                                constraints=[optimize.LinearConstraint(a, b, b)],
                                options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 5000})
    # SLSQP's "positive directional derivative" (status 8) is its line search failing to
    # improve further: accepted when the equalities hold (the tests compare the optimum)
    if method == "slsqp" and not (res.success or (res.status == 8 and np.max(
            np.abs(a @ res.x - b), initial=0.0) <= 1e-8)):
        raise RuntimeError(f"SLSQP did not converge: {res.message}")
    return _polish(np.maximum(res.x, 0.0), x, w, a, b).reshape(n, k)


def _polish(z, x, w, a, b, *, zero=1e-6, tol=1e-9):
    r"""Exact optimum on the solver's active set, when it checks out (OSQP-style polishing).

    With the entries below ``zero`` fixed at 0 and the rest free, the KKT system
    :math:`2 W z_F - A_F^\top \lambda = 2 W x_F`, :math:`A_F z_F = b` is solved by least
    squares; the result replaces ``z`` if it is primal feasible (:math:`z_F \ge 0`,
    :math:`A z = b` to ``tol``) and dual feasible (:math:`\mu = 2 W (z - x) - A^\top\lambda
    \ge -` ``tol`` on the fixed entries, except those in a sum held at 0, which the
    constraints force to 0): then it is the optimum, exactly up to round-off.
    """
    free = z > zero
    nf, nc = int(free.sum()), a.shape[0]
    kkt = np.block([[np.diag(2.0 * w[free]), -a[:, free].T], [a[:, free], np.zeros((nc, nc))]])
    sol = np.linalg.lstsq(kkt, np.concatenate([2.0 * w[free] * x[free], b]), rcond=None)[0]
    polished = np.zeros_like(z)
    polished[free] = sol[:nf]
    mu = 2.0 * w * (polished - x) - a.T @ sol[nf:]
    forced = (np.abs(a[b == 0]) > 0).any(axis=0)  # in a sum held at 0: z = 0 whatever mu
    ok = (polished.min() >= -tol and np.max(np.abs(a @ polished - b), initial=0.0) <= tol
          and np.min(mu[~free & ~forced], initial=0.0) >= -tol
          and np.max(np.abs(mu[free]), initial=0.0) <= tol)
    return np.maximum(polished, 0.0) if ok else z


def solve_root(noisy, total=None) -> np.ndarray:
    r"""The root's real solution: :math:`\max(0, x^*)`, or the projection onto total ``T``.

    Parameters
    ----------
    noisy : array_like of int, shape (K,)
    total : int (>= 0), optional
        The root's invariant total.
    """
    noisy = check_count(np.asarray(noisy), "noisy", nonempty=True)
    if total is None:
        return np.maximum(noisy, 0).astype(float)
    total = int(check_count(total, "total", minimum=0))
    return _exact_projection(noisy[:, None], np.array([total]))[:, 0]


def solve_children(noisy, parent, *, weights=None, totals=None, method="auto") -> np.ndarray:
    r"""Weighted least squares of one parent's children (module notes, step 2).

    Parameters
    ----------
    noisy : array_like of int, shape (n, K)
        The children's noisy cells.
    parent : array_like of int (>= 0), shape (K,)
        The parent's solved cells :math:`P_k`.
    weights : array_like of float (> 0), shape (n,), optional
        :math:`w_c`; equal by default.
    totals : array_like of int (>= 0), shape (n,), optional
        The children's invariant totals; their sum must equal :math:`\sum_k P_k`.
    method : {"auto", "projection", "slsqp", "trust-constr"}
        ``"auto"``: the exact projection when it applies (equal weights, no totals), else SLSQP.

    Returns
    -------
    ndarray of float, shape (n, K)
        :math:`z \ge 0` with the required sums (exact for the projection, to ~1e-9 otherwise).
    """
    noisy = check_count(np.asarray(noisy), "noisy", nonempty=True)
    parent = check_count(np.asarray(parent), "parent", minimum=0)
    if noisy.ndim != 2 or parent.shape != (noisy.shape[1],):
        raise ValueError(f"noisy must be (n, K) and parent (K,), got {noisy.shape} and "
                         f"{parent.shape}")
    n = noisy.shape[0]
    w = np.ones(n) if weights is None else np.asarray(check_rho(weights, "weights"), float)
    if w.shape != (n,):
        raise ValueError(f"weights must have one value per child ({n}), got shape {w.shape}")
    if totals is not None:
        totals = check_count(np.asarray(totals), "totals", minimum=0)
        if totals.shape != (n,) or totals.sum() != parent.sum():
            raise ValueError(f"totals must give n = {n} child totals adding up to the parent's "
                             f"{parent.sum()}, got {totals.tolist()}")
    if method not in SOLVERS:
        raise ValueError(f"method must be one of {', '.join(SOLVERS)}, got {method!r}")
    separable = totals is None and np.all(w == w[0])
    if method == "auto":
        method = "projection" if separable else "slsqp"
    if method == "projection":
        if not separable:
            raise ValueError("method 'projection' needs equal weights and no totals")
        return _exact_projection(noisy, parent)
    if n == 1:
        return parent[None, :].astype(float)
    return _qp(noisy, parent, w, totals, method)


# --------------------------------------------------------------------------- rounding
def top_down(tree: HistogramTree, noisy, *, invariant="none", true_totals=None,
             weights=None, solver="auto", rounding="milp", random_seed=None) -> TreeProduct:
    r"""The integer product of every level, solved from the root down (module notes).

    Parameters
    ----------
    tree : HistogramTree
        The nodes and each level's :math:`\rho_l` (:func:`regular_tree`).
    noisy : list of ndarray of int
        :func:`simulate_measurements`: ``(n_nodes, K)`` per level, root first.
    invariant : {"none", "total"}
        ``"total"``: every node's total over its cells held exact (``true_totals``).
    true_totals : list of ndarray of int, optional
        Every level's node totals (``[c.sum(axis=1) for c in tree.aggregate(leaves)]``);
        needed with ``"total"``.
    weights : list of ndarray of float (> 0), optional
        Per level (root first, its entry unused), the least-squares weight of every node;
        default :math:`2\rho_l` for all.
    solver : {"auto", "projection", "slsqp", "trust-constr"}
        As ``method`` of :func:`solve_children`.
    rounding : {"milp", "largest-remainder"}
        As ``method`` of :func:`round_children`.
    random_seed : int or Generator, optional
        Source of the rounding tie-breaks; without one, a seed is drawn, used and reported
        (``TreeProduct.random_seed``).

    Returns
    -------
    TreeProduct
    """
    if invariant not in INVARIANTS:
        raise ValueError(f"invariant must be one of {', '.join(INVARIANTS)}, got {invariant!r}")
    if invariant == "total" and true_totals is None:
        raise ValueError("invariant 'total' needs true_totals")
    # named here: solve_children and round_children call theirs ``method``
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    if random_seed is None:  # draw one, use it and report it: every random result reproducible
        random_seed = resolve_random_seed(None)
    rng = as_generator(random_seed, "random_seed")
    seed = int(random_seed) if isinstance(random_seed, numbers.Integral) else None
    if len(noisy) != tree.n_levels:
        raise ValueError(f"noisy must hold one array per level ({tree.n_levels})")
    if weights is not None:
        if isinstance(weights, (str, bytes)) or len(weights) != tree.n_levels:
            raise ValueError(f"weights must hold one array per level ({tree.n_levels}, the "
                             f"root's unused), got {weights!r}")
        weights = [None, *(check_rho(np.asarray(w, dtype=float), "weights", nonempty=True)
                           for w in list(weights)[1:])]
        for level in range(1, tree.n_levels):
            nodes = np.asarray(noisy[level]).shape[0]
            if weights[level].shape != (nodes,):
                raise ValueError(f"weights[{level}] must hold one weight > 0 per node of level "
                                 f"{level} ({nodes}), got shape {weights[level].shape}")
    root_noisy = np.asarray(noisy[0])[0]
    if invariant == "total":
        root_total = int(true_totals[0][0])
        z = solve_root(root_noisy, root_total)
        # the root's rounding: one "child" per cell of a parent with one cell (the total)
        root = round_children(z[:, None], np.array([root_total]), method=rounding,
                              random_seed=rng)[:, 0]
    else:
        root = solve_root(root_noisy).astype(np.int64)
    levels = [root[None, :]]
    for level in range(1, tree.n_levels):
        parents = np.asarray(tree.parents[level - 1])
        x = np.asarray(noisy[level])
        solved = np.zeros_like(x, dtype=np.int64)
        w_level = (np.full(x.shape[0], 2.0 * tree.rhos[level]) if weights is None
                   else np.asarray(weights[level], dtype=float))
        for u in range(levels[-1].shape[0]):
            kids = np.flatnonzero(parents == u)
            totals = None if invariant == "none" else np.asarray(true_totals[level])[kids]
            z = solve_children(x[kids], levels[-1][u], weights=w_level[kids], totals=totals,
                               method=solver)
            solved[kids] = round_children(z, levels[-1][u], totals=totals, method=rounding,
                                          random_seed=rng)
        levels.append(solved)
    return TreeProduct(tuple(levels), seed)


# --------------------------------------------------------------------------- batches
def _largest_remainder_rows(floors, active, remainder, rng) -> np.ndarray:
    r"""The part-1 rounding row by row: ``r`` active entries chosen uniformly get one more.

    Entry ``i`` gets one more when its uniform key ranks below ``r`` in its row, inactive
    entries keyed ``inf`` (``r`` is below the number of active entries, so they never do).
    Rows of at most :data:`NETWORK_BLOCKS` entries rank by comparing columns,
    :math:`\#\{j > i: k_j < k_i\} + \#\{j < i: k_j \le k_i\}` (the stable order), wider
    ones by a double argsort: the same entries chosen from the same keys (they differ
    only where two active keys are equal floats).
    """
    key = np.where(active, rng.random(floors.shape), np.inf)
    n_blocks = key.shape[1]
    if n_blocks <= NETWORK_BLOCKS:
        rank = np.zeros(key.shape, dtype=np.int64)
        for i in range(n_blocks):
            for j in range(n_blocks):
                if j != i:
                    rank[:, i] += (key[:, j] < key[:, i]) if j > i else (key[:, j] <= key[:, i])
    else:
        rank = np.argsort(np.argsort(key, axis=1), axis=1)
    return floors + (rank < remainder[:, None])


def top_down_batch(tree: HistogramTree, noisy, *, random_seed=None) -> list[np.ndarray]:
    r""":func:`top_down` for many releases at once (no invariant, equal sibling weights).

    The separable case: every cell of every parent is one simplex projection
    (:func:`project_floor_rows`) and one largest-remainder rounding with uniform ties, the
    law of :func:`top_down` with either rounding (``test_histogram_tree`` checks both).

    Parameters
    ----------
    tree : HistogramTree
    noisy : list of ndarray of int, ``(n, n_nodes, K)`` per level
        :func:`simulate_measurements` with ``size=n``.
    random_seed : int or Generator, optional

    Returns
    -------
    list of ndarray of int64, ``(n, n_nodes, K)`` per level, root first.
    """
    rng = as_generator(random_seed, "random_seed")
    root = np.maximum(np.asarray(noisy[0], dtype=np.int64), 0)
    levels = [root]
    for level in range(1, tree.n_levels):
        parents = np.asarray(tree.parents[level - 1])
        x = np.asarray(noisy[level], dtype=np.int64)
        n, _, k = x.shape
        solved = np.zeros_like(x)
        for u in range(levels[-1].shape[1]):
            kids = np.flatnonzero(parents == u)
            rows = x[:, kids, :].transpose(0, 2, 1).reshape(n * k, kids.size)
            totals = levels[-1][:, u, :].reshape(n * k)
            floors, active, remainder = project_floor_rows(rows, totals)
            out = _largest_remainder_rows(floors, active, remainder, rng)
            solved[:, kids, :] = out.reshape(n, k, kids.size).transpose(0, 2, 1)
        levels.append(solved)
    return levels
