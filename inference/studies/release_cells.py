r"""Answers kept release by release: a sorted store of values per ``(x2*, y1*)`` (kernel).

The decision studies (:mod:`dprisk.inference.studies.thresholds`,
:mod:`dprisk.inference.studies.finite_draws`) compute, for each release ``(x2*, y1*)`` of a
grid, numbers that depend on that release and the scenario alone; the report asks for many
overlapping grids (Figure 5's for ``x2 = 1..30``, shifted by one release along the diagonal
each). A :class:`CellStore` keeps such numbers by release so that a new grid computes only
the releases not met before.

Each release is one int64 key (:func:`cell_keys`),

.. math:: \text{key} = x_2^* \cdot 2^{31} + (y_1^* + 2^{30}), \qquad
          |x_2^*|, |y_1^*| < 2^{30},

which orders releases as ``(x2*, y1*)`` pairs (x2* first); a store holds its keys sorted,
with one row of each value array per key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["KEY_BOUND", "CellStore", "cell_keys", "remember"]

#: Releases with ``|x2*|`` and ``|y1*|`` below this are kept by key; others are not kept.
KEY_BOUND = 2**30


def cell_keys(x2s, y1s) -> np.ndarray | None:
    """One int64 key per release (flattened, module docstring), or None.

    None when the arrays are not integers, are empty, or hold a value of magnitude
    :data:`KEY_BOUND` or more (such releases are computed as they are, not kept).
    """
    x2s, y1s = np.asarray(x2s), np.asarray(y1s)
    if x2s.size == 0 or x2s.dtype.kind not in "iu" or y1s.dtype.kind not in "iu":
        return None
    x2s, y1s = x2s.ravel(), y1s.ravel()
    for values in (x2s, y1s):
        if int(values.min()) <= -KEY_BOUND or int(values.max()) >= KEY_BOUND:
            return None
    return x2s.astype(np.int64) * (2 * KEY_BOUND) + (y1s.astype(np.int64) + KEY_BOUND)


@dataclass(frozen=True)
class CellStore:
    """Value arrays by release key.

    ``keys`` sorted and unique; row ``i`` of each value array belongs to ``keys[i]``.

    Attributes
    ----------
    keys : ndarray of int64, shape (n,)
    values : tuple of ndarray, each of shape (n, ...)
    """

    keys: np.ndarray
    values: tuple

    @classmethod
    def empty(cls, *dtypes, shape: tuple = ()) -> CellStore:
        """A store without releases, for values of ``dtypes`` with rows of ``shape``."""
        return cls(np.empty(0, dtype=np.int64),
                   tuple(np.empty((0, *shape), dtype=dtype) for dtype in dtypes))

    @property
    def size(self) -> int:
        """Number of releases kept."""
        return int(self.keys.size)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Row of each key in the store, ``-1`` where it is not kept."""
        if self.keys.size == 0:
            return np.full(np.shape(keys), -1, dtype=np.intp)
        rows = np.searchsorted(self.keys, keys)
        inside = rows < self.keys.size
        rows[inside & (self.keys[np.minimum(rows, self.keys.size - 1)] != keys)] = -1
        rows[~inside] = -1
        return rows

    def without(self, keys: np.ndarray) -> CellStore:
        """The store without the releases ``keys`` (those kept; others are ignored)."""
        rows = self.find(keys)
        rows = rows[rows >= 0]
        if rows.size == 0:
            return self
        keep = np.ones(self.keys.size, dtype=bool)
        keep[rows] = False
        return CellStore(self.keys[keep], tuple(v[keep] for v in self.values))

    def merged(self, keys: np.ndarray, values) -> CellStore:
        """The store with the new releases ``keys`` (sorted, unique, none kept yet) added.

        ``values`` holds one array per value of the store, one row per new key.
        """
        all_keys = np.concatenate([self.keys, keys])
        order = np.argsort(all_keys, kind="stable")
        merged = tuple(
            np.concatenate([old, np.asarray(new).reshape(keys.size, *old.shape[1:])])[order]
            for old, new in zip(self.values, values, strict=True))
        return CellStore(all_keys[order], merged)


def remember(cache, key, store: CellStore, keys: np.ndarray, values, *,
             row_size: int = 1) -> CellStore:
    """``store`` with the new releases ``keys`` and their ``values``, kept in ``cache``.

    ``cache`` is a :class:`dprisk.runtime.bounded_cache.BoundedCache` whose sizes are rows
    times ``row_size``; when the merged store would exceed its bound, it starts again from the
    new releases alone (the latest grids are the likeliest to be met again). Returns the
    store holding ``keys`` (kept in ``cache`` if it fits and ``key`` is hashable).
    """
    merged = store.without(keys).merged(keys, values)
    if merged.size * row_size > cache.bound:
        empty = CellStore.empty(*(v.dtype for v in store.values), shape=store.values[0].shape[1:])
        merged = empty.merged(keys, values)
    cache.put(key, merged, merged.size * row_size)
    return merged
