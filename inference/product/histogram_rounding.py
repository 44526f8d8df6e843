r"""Integer rounding of one level of the K-cell product (step 3 of :mod:`histogram_tree`).

The real children :math:`z_{c,k} \ge 0` of a parent become integers :math:`n_{c,k} \in
\{\lfloor z_{c,k} \rfloor, \lceil z_{c,k} \rceil\}` that keep every parent cell
(:math:`\sum_c n_{c,k} = N_k`) and, optionally, every child's total exactly, chosen to minimise
the L1 change :math:`\sum |n - z|`: a 0-1 program over the fractional entries, solved by HiGHS
through :func:`scipy.optimize.milp`. Ties are broken by a random rank in the objective (step
:data:`TIE_BREAK`, above HiGHS's tolerances), so every optimal rounding is equally likely, as in
part 1's largest-remainder rule (:mod:`dprisk.inference.product.projection_kernels`). See
:mod:`dprisk.inference.product.histogram_tree` for the model and the choices.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, sparse

from dprisk.models.checks import check_count
from dprisk.models.mechanism.dg_sampling import as_generator

__all__ = ["ROUNDINGS", "SNAP", "TIE_BREAK", "round_children"]

#: Rounding methods.
ROUNDINGS = ("milp", "largest-remainder")
#: Cost step of the MILP's random tie-break (module notes): well above HiGHS's 1e-7 tolerances.
TIE_BREAK = 1e-5
#: A real solution within this of an integer is that integer (solver round-off).
SNAP = 1e-7


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
    cost = (1.0 - 2.0 * frac.ravel()[idx]) + TIE_BREAK * _ranks(u, fractional).ravel()[idx]
    ones = np.ones(idx.size)
    rows = [sparse.csr_array((ones, (cell, np.arange(idx.size))), shape=(k, idx.size))]
    need = [need_cells]
    if totals is not None:
        totals = check_count(np.asarray(totals), "totals", minimum=0)
        rows.append(sparse.csr_array((ones, (child, np.arange(idx.size))), shape=(n, idx.size)))
        need.append(totals - floors.sum(axis=1))
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
