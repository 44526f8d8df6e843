r"""Integer rounding of one level of the K-cell product (step 3 of :mod:`histogram_tree`).

The real children :math:`z_{c,k} \ge 0` of a parent become integers :math:`n_{c,k} \in
\{\lfloor z_{c,k} \rfloor, \lceil z_{c,k} \rceil\}` that keep every parent cell
(:math:`\sum_c n_{c,k} = N_k`) and, optionally, every child's total exactly, chosen to minimise
the L1 change :math:`\sum |n - z|`: a 0-1 program over the fractional entries, with cost
:math:`c_i = 1 - 2 f_i` per rounded-up entry (:math:`f` the fractional parts). **Every
optimal rounding is equally likely** (part 1's rule,
:mod:`dprisk.inference.product.projection_kernels`), on every path:

* **Without totals** (``method="milp"`` or ``"largest-remainder"``) the program separates by
  cell: in cell ``k`` the :math:`r_k` units go to the entries of largest ``f``; the optimal
  roundings are the choices of the tied entries at the boundary. A random rank per entry
  (i.i.d. uniform ``u``) added to the cost with step :data:`TIE_BREAK` (above HiGHS's 1e-7
  tolerances) makes the program pick the tied entries of smallest ``u``: a uniformly random
  subset of the needed size, independently per cell, i.e. a uniform optimal rounding.
* **With totals** (rows and columns coupled) a random rank does *not* give uniform ties: two
  optimal roundings differ by alternating cycles, and their rank sums tie with positive
  probability (2 x 2, all :math:`f = 1/2`: ranks {1..4} split into pairs, sums equal in 1 of
  3 splits, and the solver then returns the same one: 1/3 against 2/3, not 1/2). Instead the
  *set* of optimal roundings is found and sampled uniformly (:func:`_sample_optimal`):

  1. HiGHS solves the LP relaxation (totally unimodular: a bipartite transportation
     system, so the LP's optimum is the 0-1 program's); its equality duals :math:`y` give
     reduced costs :math:`\bar c = c - A^\top y`. For *every* feasible ``x``,
     :math:`c^\top x - c^* = \sum_{\bar c_i > 0} \bar c_i x_i + \sum_{\bar c_i < 0}
     |\bar c_i| (1 - x_i)`, so the optimal roundings are exactly the feasible 0-1 ``x``
     with :math:`x_i = 1` where :math:`\bar c_i < 0`, :math:`x_i = 0` where
     :math:`\bar c_i > 0`, free where :math:`\bar c_i = 0` (to :data:`TIE_L1`: L1
     differences below it are the QP solver's round-off, and count as ties).
  2. The free entries form a bipartite graph (children x cells); its connected components
     are independent. In each, a dynamic program over one side's nodes (the state: the
     other side's remaining needs) counts the completions exactly (Python integers), and a
     forward pass picks each node's subset with probability (completions after it) /
     (completions before it): the probabilities telescope to 1 / (number of optimal
     roundings) for every one of them. A choice uses one uniform ``u`` (resolution
     :math:`2^{-53}`).

  The dynamic program keeps at most :data:`MAX_TIE_STATES` states (e.g. 2 children x 864
  cells, all tied: about 400,000); beyond, a ``RuntimeWarning`` says so and the random-rank
  program of the separable case decides (not uniform: the one documented approximation).

See :mod:`dprisk.inference.product.histogram_tree` for the model and the choices.
"""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np
from scipy import optimize, sparse
from scipy.sparse.csgraph import connected_components

from dprisk.models.checks import check_count
from dprisk.models.mechanism.dg_sampling import as_generator

__all__ = ["MAX_TIE_STATES", "ROUNDINGS", "SNAP", "TIE_BREAK", "TIE_L1", "round_children"]

#: Rounding methods.
ROUNDINGS = ("milp", "largest-remainder")
#: Cost step of the MILP's random tie-break (module notes): well above HiGHS's 1e-7 tolerances.
TIE_BREAK = 1e-5
#: A real solution within this of an integer is that integer (solver round-off).
SNAP = 1e-7
#: Reduced costs within this of 0 are ties (L1 units; SLSQP's solution is good to ~1e-9).
TIE_L1 = 1e-6
#: Largest number of dynamic-programming states of the tied roundings (module notes).
MAX_TIE_STATES = 1_000_000


class _TooManyTies(Exception):
    """The tied roundings exceed :data:`MAX_TIE_STATES` states."""


def _split(z: np.ndarray):
    """Floors and fractional parts, snapping values within :data:`SNAP` of an integer."""
    near = np.rint(z)
    z = np.where(np.abs(z - near) <= SNAP, near, z)
    floors = np.floor(z).astype(np.int64)
    return floors, z - floors


def _ranks(u: np.ndarray, fractional: np.ndarray) -> np.ndarray:
    """``1 + `` the rank of ``u`` among the fractional entries (0 elsewhere)."""
    out = np.zeros(u.shape)
    order = np.argsort(u[fractional], kind="stable")
    ranks = np.empty(order.size)
    ranks[order] = np.arange(1, order.size + 1)
    out[fractional] = ranks
    return out


def _pick(u: float, total: int) -> int:
    """``floor(u * total)`` in integer arithmetic (``u`` at its 2**-53 resolution)."""
    return min((int(u * 2.0 ** 53) * total) >> 53, total - 1)


def _sample_component(lines, needs_line, needs_slot, uniforms) -> list:
    r"""One uniformly drawn 0-1 assignment of a bipartite component (module notes, 2).

    ``lines[l]``: list of ``(edge, slot)`` free at line ``l``; line ``l`` takes exactly
    ``needs_line[l]`` of them, slot ``s`` exactly ``needs_slot[s]`` in all. Returns the edges
    taken, or ``None`` if no assignment exists.
    """
    n_lines = len(lines)
    # avail[l][s]: lines l.. with slot s free (a state needing more is dead)
    avail = np.zeros((n_lines + 1, len(needs_slot)), dtype=np.int64)
    for line in range(n_lines - 1, -1, -1):
        avail[line] = avail[line + 1]
        for _, s in lines[line]:
            avail[line, s] += 1
    options = []
    for line, edges in enumerate(lines):
        options.append(list(combinations(range(len(edges)), int(needs_line[line]))))
    layers = [{tuple(int(v) for v in needs_slot): None}]
    size = 1
    for line, edges in enumerate(lines):
        nxt = {}
        for state in layers[-1]:
            for choice in options[line]:
                new = list(state)
                for j in choice:
                    new[edges[j][1]] -= 1
                if min(new, default=0) < 0 or np.any(np.array(new) > avail[line + 1]):
                    continue
                nxt[tuple(new)] = None
        size += len(nxt)
        if size > MAX_TIE_STATES:
            raise _TooManyTies
        layers.append(nxt)
    zero = (0,) * len(needs_slot)
    counts = [None] * n_lines + [{zero: 1} if zero in layers[-1] else {}]
    for line in range(n_lines - 1, -1, -1):
        after, here = counts[line + 1], {}
        for state in layers[line]:
            total = 0
            for choice in options[line]:
                new = list(state)
                for j in choice:
                    new[lines[line][j][1]] -= 1
                total += after.get(tuple(new), 0)
            here[state] = total
        counts[line] = here
    state = next(iter(layers[0]))
    if counts[0].get(state, 0) == 0:
        return None
    taken = []
    for line in range(n_lines):
        t = _pick(next(uniforms), counts[line][state])
        for choice in options[line]:
            new = list(state)
            for j in choice:
                new[lines[line][j][1]] -= 1
            ways = counts[line + 1].get(tuple(new), 0)
            if t < ways:
                taken.extend(lines[line][j][0] for j in choice)
                state = tuple(new)
                break
            t -= ways
    return taken


#: Up to this many free entries the tied graph's components are found by union-find in
#: Python (a few microseconds), beyond by SciPy's ``connected_components`` (which costs
#: about a millisecond of sparse-matrix set-up even on a tiny graph).
SMALL_TIE_GRAPH = 512


def _component_labels(a, b, nodes: int) -> np.ndarray:
    """Component labels of the undirected graph on ``nodes`` nodes with edges ``(a, b)``.

    Labels increase with the smallest node of each component (the numbering of
    :func:`scipy.sparse.csgraph.connected_components`, which the component order of
    :func:`_sample_optimal`, and so its use of the uniforms, follows).
    """
    if a.size > SMALL_TIE_GRAPH:
        graph = sparse.csr_array((np.ones(a.size), (a, b)), shape=(nodes, nodes))
        return connected_components(graph, directed=False)[1]
    root = list(range(nodes))

    def find(v):
        while root[v] != v:
            root[v] = root[root[v]]
            v = root[v]
        return v

    for u, v in zip(a.tolist(), b.tolist(), strict=True):
        ru, rv = find(u), find(v)
        if ru != rv:
            root[max(ru, rv)] = min(ru, rv)  # the root is the component's smallest node
    return np.array([find(v) for v in range(nodes)], dtype=np.int64)


def _sample_optimal(cost, child, cell, need_children, need_cells, uniforms):
    """A uniformly drawn L1-optimal 0-1 rounding with row and column sums (module notes).

    Returns the 0-1 vector over the fractional entries, or ``None`` when the tolerance
    :data:`TIE_L1` leaves no feasible completion (solver round-off; the caller falls back).
    """
    n, k, m = need_children.size, need_cells.size, cost.size
    a = np.zeros((k + n, m))  # dense while small (sparse construction costs more)
    a[cell, np.arange(m)] = 1.0
    a[k + child, np.arange(m)] = 1.0
    if a.size > 100_000:
        a = sparse.csr_array(a)
    b = np.concatenate([need_cells, need_children]).astype(float)
    res = optimize.linprog(cost, A_eq=a, b_eq=b, bounds=(0, 1), method="highs")
    if res.status != 0:
        raise ValueError(f"no integer rounding keeps every sum: {res.message}")
    reduced = cost - a.T @ res.eqlin.marginals
    x = (reduced < -TIE_L1).astype(np.int64)
    free = np.flatnonzero(np.abs(reduced) <= TIE_L1)
    left_cells = need_cells - np.bincount(cell, weights=x, minlength=k).astype(np.int64)
    left_children = need_children - np.bincount(child, weights=x, minlength=n).astype(np.int64)
    if free.size == 0:
        return x if not (left_cells.any() or left_children.any()) else None
    label = _component_labels(child[free], n + cell[free], n + k)
    for comp in np.unique(label[n + cell[free]]):
        edges = free[label[n + cell[free]] == comp]
        kids, cells = np.unique(child[edges]), np.unique(cell[edges])
        # lines: the larger side, in order; slots: the smaller side (the DP's state)
        by_cell = cells.size >= kids.size
        line_ids, slot_ids = (cells, kids) if by_cell else (kids, cells)
        line_of = cell[edges] if by_cell else child[edges]
        slot_of = child[edges] if by_cell else cell[edges]
        slot_index = {int(s): i for i, s in enumerate(slot_ids)}
        lines = [[(int(e), slot_index[int(s)]) for e, s in
                  zip(edges[line_of == ln], slot_of[line_of == ln], strict=True)]
                 for ln in line_ids]
        need_l = (left_cells if by_cell else left_children)[line_ids]
        need_s = (left_children if by_cell else left_cells)[slot_ids]
        if need_l.min() < 0 or need_s.min() < 0:
            return None
        try:
            taken = _sample_component(lines, need_l, need_s, uniforms)
        except _TooManyTies:
            warnings.warn(f"more than {MAX_TIE_STATES} states of tied roundings: decided by "
                          "random ranks, not uniformly", RuntimeWarning, stacklevel=4)
            return None
        if taken is None:
            return None
        x[taken] = 1
    left_cells = need_cells - np.bincount(cell, weights=x, minlength=k).astype(np.int64)
    left_children = need_children - np.bincount(child, weights=x, minlength=n).astype(np.int64)
    return x if not (left_cells.any() or left_children.any()) else None


def round_children(z, parent, *, totals=None, method="milp", random_seed=None,
                   tie_break=None) -> np.ndarray:
    r"""Integers of one parent's children keeping every sum (module notes, step 3).

    Parameters
    ----------
    z : array_like of float (>= 0), shape (n, K)
        The real solution (:func:`solve_children`).
    parent : array_like of int (>= 0), shape (K,)
        :math:`P_k`, kept exactly: :math:`\sum_c n_{c,k} = P_k`.
    totals : array_like of int, shape (n,), optional
        Invariant child totals, kept exactly: :math:`\sum_k n_{c,k} = T_c`.
    method : {"milp", "largest-remainder"}
        HiGHS's 0-1 program, or the part-1 rule directly (no ``totals``).
    random_seed : int or Generator, optional
        Source of the tie-break ``u`` (ignored if ``tie_break`` is given).
    tie_break : array_like of float in [0, 1), shape (n, K), optional
        The tie-break ``u`` itself.

    Returns
    -------
    ndarray of int64, shape (n, K)
    """
    z = np.asarray(z, dtype=float)
    parent = check_count(np.asarray(parent), "parent", minimum=0)
    if z.ndim != 2 or parent.shape != (z.shape[1],) or np.any(z < -SNAP):
        raise ValueError("z must be a non-negative (n, K) array and parent (K,)")
    if method not in ROUNDINGS:
        raise ValueError(f"method must be one of {', '.join(ROUNDINGS)}, got {method!r}")
    floors, frac = _split(z)
    u = (as_generator(random_seed, "random_seed").random(z.shape) if tie_break is None
         else np.asarray(tie_break, dtype=float))
    need_cells = parent - floors.sum(axis=0)
    fractional = frac > 0
    if np.any(need_cells < 0) or np.any(need_cells > fractional.sum(axis=0)):
        raise ValueError("z does not add up to parent within the rounding range")
    if method == "largest-remainder":
        if totals is not None:
            raise ValueError("method 'largest-remainder' cannot keep totals; use 'milp'")
        key = np.where(fractional, -2.0 * frac + TIE_BREAK * _ranks(u, fractional), np.inf)
        rank = np.argsort(np.argsort(key, axis=0, kind="stable"), axis=0)
        return floors + (rank < need_cells[None, :])
    idx = np.flatnonzero(fractional.ravel())
    if idx.size == 0:
        return floors
    n, k = z.shape
    child, cell = np.divmod(idx, k)
    l1_cost = 1.0 - 2.0 * frac.ravel()[idx]  # L1 change of rounding each entry up
    need = [need_cells]
    if totals is not None:
        totals = check_count(np.asarray(totals), "totals", minimum=0)
        need.append(totals - floors.sum(axis=1))
        x = _sample_optimal(l1_cost, child, cell, need[1], need_cells, iter(u.ravel()))
        if x is not None:
            out = floors.ravel().copy()
            out[idx] += x
            return out.reshape(n, k)
    # no totals (separable: the random rank is uniform), or, with totals, round-off left the
    # tied set without a completion (not seen in the tests): the random-rank program
    cost = l1_cost + TIE_BREAK * _ranks(u, fractional).ravel()[idx]
    ones = np.ones(idx.size)
    rows = [sparse.csr_array((ones, (cell, np.arange(idx.size))), shape=(k, idx.size))]
    if totals is not None:
        rows.append(sparse.csr_array((ones, (child, np.arange(idx.size))), shape=(n, idx.size)))
    need = np.concatenate(need).astype(float)
    res = optimize.milp(cost, integrality=np.ones(idx.size),
                        bounds=optimize.Bounds(0, 1),
                        constraints=optimize.LinearConstraint(sparse.vstack(rows), need, need),
                        options={"mip_rel_gap": 0.0})
    if res.x is None:
        raise ValueError(f"no integer rounding keeps every sum: {res.message}")
    out = floors.ravel().copy()
    out[idx] += np.rint(res.x).astype(np.int64)
    return out.reshape(n, k)


# --------------------------------------------------------------------------- top-down
