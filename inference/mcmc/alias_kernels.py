"""Walker's alias tables: build them for rows of pmfs and draw from them with one uniform.

The exact Gibbs sampler (:mod:`dprisk.inference.two_level.gibbs`) tabulates its conditionals this
way;
:func:`alias_table` has a compiled twin in :mod:`dprisk.inference.kernels.fused_kernels_jit`.
"""

from __future__ import annotations

import heapq

import numpy as np

from dprisk.inference.kernels.fused_kernels import compiled_kernels

__all__ = ["PYTHON_ROWS", "alias_draw", "alias_table"]

#: Tables of at most this many rows are built by the heap pairing (:func:`alias_table`).
PYTHON_ROWS = 8


def alias_table(prob: np.ndarray, *, compiled: bool = False) -> tuple[np.ndarray, np.ndarray]:
    r"""Walker's alias tables for the rows of ``prob`` (each row a pmf over ``W`` cells).

    A draw takes one uniform ``u``: ``x = W u``, ``j = floor(x)``, return ``j`` if
    ``x - j < q[j]`` else ``alias[j]``, so that

    .. math:: P[\text{draw} = k] = \frac{1}{W}\Big(q_k + \sum_{j:\, \text{alias}_j = k}
              (1 - q_j)\Big) = \text{prob}_k.

    Built by pairing, ``W - 1`` times per row, the smallest remaining scaled probability
    (``<= 1``) with the largest (``>= 1``), vectorised over rows; with ``compiled`` by the
    same pairing in compiled code (:func:`dprisk.inference.kernels.fused_kernels_jit.alias_rows`,
    identical tables).

    Parameters
    ----------
    prob : ndarray, shape (..., W)
        Non-negative rows summing to one.
    compiled : bool
        Use the compiled builder (loads numba; see :mod:`dprisk.inference.kernels.fused_kernels`).

    Returns
    -------
    q : ndarray of float, shape (..., W)
    alias : ndarray of int64, shape (..., W)
    """
    prob = np.asarray(prob, dtype=float)
    if prob.ndim < 1 or prob.shape[-1] < 1:
        raise ValueError(f"prob must have a last axis of at least one cell, got shape {prob.shape}")
    if not (np.isfinite(prob).all() and (prob >= 0).all()):
        raise ValueError("prob must hold finite non-negative probabilities")
    if not np.allclose(prob.sum(-1), 1.0, rtol=0.0, atol=1e-9):
        raise ValueError("prob must have rows summing to one (within 1e-9)")
    shape = prob.shape
    width = shape[-1]
    scaled = prob.reshape(-1, width) * width
    kernels = compiled_kernels() if compiled else None
    if kernels is None and scaled.shape[0] <= PYTHON_ROWS:
        q, alias = _alias_rows_heap(scaled)
        return q.reshape(shape), alias.reshape(shape)
    if kernels is not None:
        q = np.empty_like(scaled)
        alias = np.empty(scaled.shape, dtype=np.int64)
        kernels.alias_rows(scaled, q, alias)
        return q.reshape(shape), alias.reshape(shape)
    rows = np.arange(scaled.shape[0])
    q = np.ones_like(scaled)
    alias = np.tile(np.arange(width), (scaled.shape[0], 1))
    # The remaining cells' scaled probabilities, removed cells at +inf (for the smallest) and
    # at -inf (for the largest), updated in place: no masked copy of the table per step.
    for_small = scaled.copy()
    for_large = scaled.copy()
    for _ in range(width - 1):
        small = for_small.argmin(-1)
        large = for_large.argmax(-1)
        s_small = scaled[rows, small]
        q[rows, small] = np.clip(s_small, 0.0, 1.0)
        alias[rows, small] = large
        scaled[rows, large] -= 1.0 - s_small
        for_small[rows, large] = for_large[rows, large] = scaled[rows, large]
        for_small[rows, small] = np.inf  # after the update: ``large == small`` is removed too
        for_large[rows, small] = -np.inf
    return q.reshape(shape), alias.reshape(shape)


def _alias_rows_heap(scaled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`alias_table`'s pairing for a few rows, one row at a time with two heaps.

    The same pairs in the same order as the vectorised loop: the smallest remaining scaled
    probability (first index among equal values, as ``argmin``) with the largest (first
    index among equal values, as ``argmax``), from heaps of ``(value, index)`` and
    ``(-value, index)`` whose stale entries are skipped; the same float operations, so the
    tables are identical, in ``O(W log W)`` Python steps instead of ``W`` vectorised passes
    over the row.
    """
    q = np.ones_like(scaled)
    alias = np.tile(np.arange(scaled.shape[1]), (scaled.shape[0], 1))
    for row in range(scaled.shape[0]):
        values = scaled[row].tolist()
        removed = [False] * len(values)
        smallest = [(v, i) for i, v in enumerate(values)]
        largest = [(-v, i) for i, v in enumerate(values)]
        heapq.heapify(smallest)
        heapq.heapify(largest)
        q_row, alias_row = [1.0] * len(values), list(range(len(values)))
        for _ in range(len(values) - 1):
            while removed[smallest[0][1]] or smallest[0][0] != values[smallest[0][1]]:
                heapq.heappop(smallest)
            while removed[largest[0][1]] or -largest[0][0] != values[largest[0][1]]:
                heapq.heappop(largest)
            small, large = smallest[0][1], largest[0][1]
            s_small = values[small]
            q_row[small] = min(max(s_small, 0.0), 1.0)
            alias_row[small] = large
            values[large] -= 1.0 - s_small
            heapq.heappush(smallest, (values[large], large))
            heapq.heappush(largest, (-values[large], large))
            removed[small] = True  # after the update: ``large == small`` is removed too
        q[row] = q_row
        alias[row] = alias_row
    return q, alias


def alias_draw(q_flat, alias_flat, offset, width: int, u: np.ndarray) -> np.ndarray:
    """Indices in ``[0, W)`` drawn from the alias tables starting at flat ``offset``."""
    x = u * width
    j = np.minimum(x.astype(np.int64), width - 1)
    cell = j + offset
    return np.where(x - j < q_flat[cell], j, alias_flat[cell])
