r"""The TopDown-style block step in exact integer arithmetic: projection, then rounding.

Given integer noisy block counts :math:`b^* = (b_0^*, \dots, b_d^*)` and an integer parent
total :math:`s \ge 0`, the post-processed blocks are

1. the Euclidean projection of :math:`b^*` onto :math:`\{z \ge 0, \sum_i z_i = s\}` (equal
   weights: every block count has the same :math:`\rho_1`, so the weighted least squares of
   TopDown is the plain projection),

   .. math::

       z_i = \max(0, b_i^* - \tau), \qquad \tau = \frac{\sum_{i \in A} b_i^* - s}{|A|},

   with the active set :math:`A = \{i : b_i^* > \tau\}` found by the sort-and-cumulate rule:
   with :math:`u` the values sorted in decreasing order and :math:`C_j = \sum_{l \le j} u_l`,
   :math:`|A| = \max\{j : j u_j - C_j + s > 0\}` (empty when ``s = 0``: then ``z = 0``);

2. integers keeping the sum (largest remainders): :math:`\lfloor z_i \rfloor`, then the
   :math:`r = s - \sum_i \lfloor z_i \rfloor` remaining units to the largest fractional parts.
   Every active :math:`z_i = b_i^* - \tau` has the same fractional part :math:`f` (the
   :math:`b_i^*` are integers) and every inactive one has fractional part 0, so
   :math:`r = |A| f` and, when :math:`r > 0`, all :math:`|A|` active blocks tie: the rule
   chooses ``r`` of them uniformly at random (every size-``r`` subset has probability
   :math:`1/\binom{|A|}{r}`).

All arithmetic is on integers: :math:`|A| z_i = |A| b_i^* - (C_{|A|} - s)` and floors are
integer divisions, so no rounding error can move a block across an integer boundary.

These are kernels: inputs are validated int64 arrays (shape ``(n, B)``, ``B = d + 1``
blocks) and a Python integer ``s >= 0``; nothing is checked here.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb

import numpy as np

__all__ = [
    "NETWORK_BLOCKS",
    "project_floor",
    "project_floor_rows",
    "rounding_outcomes",
    "sort_blocks",
    "subset_bits",
]


#: Widest rows :func:`project_floor_rows` sorts with a sorting network on whole columns
#: rather than with ``np.sort`` along the rows, whose cost per row dominates for a few blocks.
NETWORK_BLOCKS = 8


def sort_blocks(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row of ``b`` sorted in decreasing order, and its cumulative sums.

    Independent of ``s``: computed once for every parent total.
    """
    u = -np.sort(-b, axis=1)
    return u, np.cumsum(u, axis=1)


def _sorted_columns(columns: np.ndarray) -> np.ndarray:
    """Each column of ``columns`` (``(B, n)``) sorted in decreasing order down the rows.

    Up to :data:`NETWORK_BLOCKS` rows: an odd-even transposition network (``B`` rounds of
    ``np.maximum`` / ``np.minimum`` of neighbouring rows), the same sorted integers as
    ``np.sort`` without a call per column.
    """
    n_blocks = columns.shape[0]
    if n_blocks > NETWORK_BLOCKS:
        return -np.sort(-columns, axis=0)
    rows = list(columns)
    for rnd in range(n_blocks):
        for i in range(rnd % 2, n_blocks - 1, 2):
            rows[i], rows[i + 1] = (np.maximum(rows[i], rows[i + 1]),
                                    np.minimum(rows[i], rows[i + 1]))
    return np.stack(rows) if rows else columns.copy()


def project_floor(b: np.ndarray, s: int, presorted=None):
    r"""Floors of the projection of each row of ``b`` onto the simplex of total ``s``.

    Parameters
    ----------
    b : ndarray of int64, shape (n, B)
        Noisy block counts (any integers, negative allowed).
    s : int (s >= 0)
        The parent total the blocks must add up to.
    presorted : tuple, optional
        :func:`sort_blocks` of ``b``.

    Returns
    -------
    floors : ndarray of int64, shape (n, B)
        :math:`\lfloor z_i \rfloor` (0 for inactive blocks).
    active : ndarray of bool, shape (n, B)
        Membership of the active set :math:`A` (:math:`z_i > 0`).
    remainder : ndarray of int64, shape (n,)
        :math:`r = s - \sum_i \lfloor z_i \rfloor`, with :math:`0 \le r < |A|` (0 if ``A``
        is empty).
    """
    n, n_blocks = b.shape
    if s == 0:
        return (np.zeros_like(b), np.zeros(b.shape, dtype=bool), np.zeros(n, dtype=np.int64))
    u, cum = sort_blocks(b) if presorted is None else presorted
    j = np.arange(1, n_blocks + 1, dtype=np.int64)
    size = (j * u - cum + s > 0).sum(axis=1)  # true for j = 1..|A| (a prefix); |A| >= 1
    numerator = np.take_along_axis(cum, (size - 1)[:, None], axis=1) - s  # |A| tau
    scaled = b * size[:, None] - numerator  # |A| z_i for active i, <= 0 otherwise
    active = scaled > 0
    floors = np.where(active, scaled // size[:, None], 0)
    remainder = s - floors.sum(axis=1)
    return floors, active, remainder


def project_floor_rows(b: np.ndarray, s: np.ndarray):
    r""":func:`project_floor` with one total per row.

    The same sort-and-cumulate rule in integers, :math:`|A| = \max\{j : j u_j - C_j + s > 0\}`,
    with ``s`` of shape ``(n,)`` (rows with ``s = 0`` are all zero). Kernel: ``b`` int64
    ``(n, B)``, ``s`` int64 ``(n,)`` with ``s >= 0``. Computed on the transpose ``(B, n)``
    (sorts, cumulative sums and sums down its ``B`` rows are whole-row operations; every
    value an integer, so the same as along the rows of ``b``).
    """
    n_blocks = b.shape[1]
    columns = np.ascontiguousarray(b.T)
    u = _sorted_columns(columns)
    cum = np.cumsum(u, axis=0)
    j = np.arange(1, n_blocks + 1, dtype=np.int64)[:, None]
    size = np.maximum((j * u - cum + s > 0).sum(axis=0), 1)
    numerator = np.take_along_axis(cum, (size - 1)[None, :], axis=0)[0] - s
    scaled = columns * size - numerator
    active = (scaled > 0) & (s > 0)
    floors = np.where(active, scaled // size, 0)
    return floors.T, active.T, s - floors.sum(axis=0)


def subset_bits(n_blocks: int) -> np.ndarray:
    """Row ``S`` holds the indicator vector of the bit mask ``S`` (shape ``(2**B, B)``)."""
    masks = np.arange(1 << n_blocks)
    return ((masks[:, None] >> np.arange(n_blocks)[None, :]) & 1).astype(np.int64)


@lru_cache(maxsize=8)
def _pattern_table(n_blocks: int):
    """For each pattern code ``A + 2**B r``: the size-``r`` subsets of ``A``.

    Returns the subsets (padded with 0), their number and the probability
    ``1 / C(|A|, r)`` of each.
    """
    n_codes = (1 << n_blocks) * (n_blocks + 1)
    width = comb(n_blocks, n_blocks // 2)
    table = np.zeros((n_codes, width), dtype=np.int64)
    count = np.zeros(n_codes, dtype=np.int64)
    prob = np.zeros(n_codes)
    for a_mask in range(1 << n_blocks):
        for r in range(n_blocks + 1):
            code = a_mask + (r << n_blocks)
            subsets = [m for m in range(1 << n_blocks)
                       if m & ~a_mask == 0 and m.bit_count() == r]
            table[code, :len(subsets)] = subsets
            count[code] = len(subsets)
            prob[code] = 1.0 / len(subsets) if subsets else 0.0
    return table, count, prob


def rounding_outcomes(floors: np.ndarray, active: np.ndarray, remainder: np.ndarray):
    r"""Every outcome of the randomised largest-remainder rounding with its probability.

    For each row and each subset :math:`S` of the blocks, the outcome
    :math:`\lfloor z \rfloor + \mathbf 1_S` has probability
    :math:`\mathbf 1[S \subseteq A,\ |S| = r] / \binom{|A|}{r}` (with ``r = 0``: the empty
    set, probability 1).

    Returns
    -------
    rows : ndarray of int64, shape (k,)
        Index of the input row of each outcome with positive probability.
    masks : ndarray of int64, shape (k,)
        The subset :math:`S` as a bit mask (``subset_bits(B)[masks]`` are the indicators):
        the outcome is ``floors[rows] + subset_bits(B)[masks]``.
    weights : ndarray of float, shape (k,)
        Their probabilities; they add up to 1 within each row.
    """
    n_blocks = floors.shape[1]
    table, count, prob = _pattern_table(n_blocks)
    code = (active.astype(np.int64) << np.arange(n_blocks)).sum(axis=1) + (remainder << n_blocks)
    counts = count[code]
    rows = np.repeat(np.arange(code.size), counts)
    starts = np.cumsum(counts) - counts
    within = np.arange(rows.size) - starts[rows]
    return rows, table[code[rows], within], prob[code[rows]]
