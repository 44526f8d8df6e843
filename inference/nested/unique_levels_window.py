r"""The sorted sweep's window pairs by a Taylor expansion of expit over cells of ``B``.

:mod:`dprisk.inference.nested.unique_levels_sweep` evaluates, for each block of ``A`` and
prior, the pairs whose log-odds lie near 0 (its window ``[lower, upper)`` of sorted ``B``)
one by one. This module gives the same sum with most pairs grouped: ``B`` is cut into cells
(its atoms with the same :math:`\lfloor (s_b - s_0)/h \rfloor`, centre :math:`c_g`), a block
of ``A`` has its centre :math:`\bar s`, and for a cell lying wholly in the block's window

.. math::

    \sum_{a, b} w_a w_b \operatorname{expit}(x_0 + \gamma_a + \beta_b)
      = \sum_{n \ge 0} c_n(x_0) \sum_{p + q = n} \binom{n}{p} A_p B_q,

with :math:`x_0 = \operatorname{logit}(p) + \bar s + c_g`, :math:`\gamma_a = s_a - \bar s`,
:math:`\beta_b = s_b - c_g`, the block's and the cell's moments
:math:`A_p = \sum_a w_a \gamma_a^p`, :math:`B_q = \sum_b w_b \beta_b^q` (computed once for
all priors) and :math:`c_n(x_0)` the Taylor coefficients of expit at :math:`x_0`, from
:math:`\operatorname{expit}' = \operatorname{expit}(1 - \operatorname{expit})`:
:math:`(n+1) c_{n+1} = c_n - \sum_{k=0}^{n} c_k c_{n-k}`.

Truncation (a rigorous bound): expit is analytic where :math:`|\operatorname{Im} z| <
\pi/2` and there :math:`|1 + e^{-z}| \ge \operatorname{Re}(1 + e^{-z}) \ge 1`, so
:math:`|\operatorname{expit}| \le 1` on every disc of radius :math:`\rho < \pi/2` about a real
:math:`x_0`, and Cauchy's estimate gives :math:`|c_n| \le \rho^{-n}`, hence
:math:`|c_n| \le (2/\pi)^n`. With :math:`|\gamma_a| + |\beta_b| \le r` for every grouped
pair, the terms after order ``N`` change each pair's value by at most
:math:`q^{N+1}/(1-q)`, :math:`q = 2r/\pi`, and the sum (pair weights add up to at most 1) by
as much. ``N`` is the smallest order within the allowance.

The window's atoms of ``B`` outside whole cells (at its two ends), the blocks of ``A`` wider
than ``MAX_BLOCK_SPREAD`` and a prior's windows narrower than ``MIN_WINDOW`` atoms on average
are evaluated pair by pair as before, :math:`1 / (1 + e^{-u_a}
e^{-s_b})`. Every pair of the window is counted once, grouped or not.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["CELL_WIDTH", "MAX_BLOCK_SPREAD", "MIN_WINDOW", "WindowCells", "taylor_order",
           "window_cells", "window_sums"]

#: Width ``h`` of a cell of ``B`` (in log-odds).
CELL_WIDTH = 0.005
#: Blocks of ``A`` wider than this (largest minus smallest ``s``) go pair by pair.
MAX_BLOCK_SPREAD = 0.05
#: Smallest mean window (atoms of ``B``) of the grouped blocks of a prior for which the
#: cells are used (narrower windows hold a few atoms per cell: pair by pair is cheaper).
MIN_WINDOW = 256
#: Elements of one temporary array.
_CHUNK = 2_000_000


def taylor_order(radius: float, allowance: float) -> tuple[int, float]:
    """Smallest order ``N`` with ``q^(N+1) / (1 - q) <= allowance``, and that bound.

    ``q = 2 r / pi`` (module notes); ``radius`` below ``pi / 4``.
    """
    q = 2.0 * radius / math.pi
    order, bound = 0, q / (1.0 - q)
    while bound > allowance:
        order += 1
        bound *= q
    return order, bound


class WindowCells(NamedTuple):
    r"""The cells of sorted ``B`` and the blocks of ``A``, with their moments (all priors).

    Attributes
    ----------
    start : ndarray of int
        First atom of each cell, then ``len(B)`` (length cells + 1).
    cell_of : ndarray of int
        Cell of each atom of ``B``.
    centre : ndarray
        :math:`c_g` of each cell.
    cell_moments : ndarray, shape (N + 1, cells)
        :math:`B_q`.
    block_centre : ndarray
        :math:`\bar s` of each block of ``A``.
    block_moments : ndarray, shape (N + 1, blocks)
        :math:`A_p` (zero for the blocks wider than ``MAX_BLOCK_SPREAD``).
    grouped : ndarray of bool
        Blocks whose whole cells are grouped.
    order : int
        ``N``.
    bound : float
        The truncation bound on the window sum of each prior.
    """

    start: np.ndarray
    cell_of: np.ndarray
    centre: np.ndarray
    cell_moments: np.ndarray
    block_centre: np.ndarray
    block_moments: np.ndarray
    grouped: np.ndarray
    order: int
    bound: float


def _moments(offsets: np.ndarray, weights: np.ndarray, groups: np.ndarray, n_groups: int,
             order: int) -> np.ndarray:
    """``M[q, g] = sum_{i in g} w_i offsets_i^q`` for ``q = 0..order``."""
    out = np.empty((order + 1, n_groups))
    term = weights.copy()
    for q in range(order + 1):
        out[q] = np.bincount(groups, weights=term, minlength=n_groups)
        term *= offsets
    return out


def window_cells(s_a: np.ndarray, w_a: np.ndarray, s_b: np.ndarray, w_b: np.ndarray, starts,
                 ends, allowance: float) -> WindowCells:
    """Cut ``B`` into cells and take both halves' moments (module notes)."""
    key = np.floor((s_b - s_b[0]) / CELL_WIDTH)  # non-decreasing with s_b
    first = np.concatenate([[True], key[1:] != key[:-1]])
    start = np.append(np.flatnonzero(first), s_b.size)
    cell_of = np.cumsum(first) - 1
    centre = s_b[0] + (key[first] + 0.5) * CELL_WIDTH
    beta = s_b - centre[cell_of]
    block_centre = 0.5 * (s_a[starts] + s_a[ends - 1])
    grouped = s_a[ends - 1] - s_a[starts] <= MAX_BLOCK_SPREAD
    block_of = np.repeat(np.arange(starts.size), ends - starts)
    gamma = s_a - block_centre[block_of]
    radius = float(np.abs(beta).max()) + float(np.abs(gamma[grouped[block_of]]).max(initial=0.0))
    order, bound = taylor_order(radius, allowance)
    cell_moments = _moments(beta, w_b, cell_of, start.size - 1, order)
    block_moments = _moments(gamma, np.where(grouped[block_of], w_a, 0.0), block_of,
                             starts.size, order)
    return WindowCells(start, cell_of, centre, cell_moments, block_centre, block_moments,
                       grouped, order, bound)


def _taylor_coefficients(x0: np.ndarray, order: int) -> np.ndarray:
    """``c[n] = expit^(n)(x0) / n!`` for ``n = 0..order`` (module notes' recurrence)."""
    c = np.empty((order + 1, x0.size))
    c[0] = 1.0 / (1.0 + np.exp(-x0))
    for n in range(order):
        conv = c[0] * c[n]
        for k in range(1, n + 1):
            conv += c[k] * c[n - k]
        c[n + 1] = (c[n] - conv) / (n + 1)
    return c


def _grouped_sum(logit_p: float, cells: WindowCells, blocks: np.ndarray, first: np.ndarray,
                 stop: np.ndarray) -> float:
    """Sum over the whole cells ``first[i] .. stop[i] - 1`` of each block ``blocks[i]``."""
    counts = stop - first
    keep = counts > 0
    blocks, first, counts = blocks[keep], first[keep], counts[keep]
    if blocks.size == 0:
        return 0.0
    order = cells.order
    total = 0.0
    per_chunk = max(1, _CHUNK // (4 * (order + 1)))
    pair_block = np.repeat(blocks, counts)
    pair_cell = np.repeat(first - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    pair_cell += np.arange(pair_cell.size)
    binom = [[math.comb(p + q, p) for q in range(order + 1)] for p in range(order + 1)]
    for lo in range(0, pair_block.size, per_chunk):
        blk = pair_block[lo : lo + per_chunk]
        cell = pair_cell[lo : lo + per_chunk]
        c = _taylor_coefficients(logit_p + cells.block_centre[blk] + cells.centre[cell], order)
        a_mom = cells.block_moments[:, blk]
        b_mom = cells.cell_moments[:, cell]
        acc = np.zeros(blk.size)
        for p in range(order + 1):
            inner = binom[p][0] * c[p] * b_mom[0]
            for q in range(1, order + 1 - p):
                inner += binom[p][q] * c[p + q] * b_mom[q]
            acc += a_mom[p] * inner
        total += float(acc.sum())
    return total


def _pairwise_ranges(exp_neg_u: np.ndarray, w_a: np.ndarray, exp_neg_s: np.ndarray,
                     w_b: np.ndarray, starts, ends, blocks, lo, hi) -> float:
    """Pairs of block ``blocks[i]`` with ``B`` atoms ``lo[i] .. hi[i] - 1``, one by one."""
    length = hi - lo
    keep = length > 0
    blocks, lo, length = blocks[keep], lo[keep], length[keep]
    if blocks.size == 0:
        return 0.0
    width_b = int(length.max())
    width_a = int((ends - starts).max())
    per_chunk = max(1, _CHUNK // (width_a * width_b))
    total = 0.0
    for c0 in range(0, blocks.size, per_chunk):
        blk = blocks[c0 : c0 + per_chunk]
        pos_b = lo[c0 : c0 + per_chunk, None] + np.arange(width_b)[None, :]
        valid_b = pos_b < (lo + length)[c0 : c0 + per_chunk, None]
        pos_b = np.where(valid_b, pos_b, lo[c0 : c0 + per_chunk, None])
        pos_a = starts[blk][:, None] + np.arange(width_a)[None, :]
        valid_a = pos_a < ends[blk][:, None]
        pos_a = np.where(valid_a, pos_a, starts[blk][:, None])
        matrix = exp_neg_u[pos_a][:, :, None] * exp_neg_s[pos_b][:, None, :]
        matrix += 1.0
        np.divide(1.0, matrix, out=matrix)
        weights_b = np.where(valid_b, w_b[pos_b], 0.0)
        weights_a = np.where(valid_a, w_a[pos_a], 0.0)
        total += float((weights_a * np.matmul(matrix, weights_b[:, :, None])[:, :, 0]).sum())
    return total


def window_sums(logit_p: float, u: np.ndarray, w_a: np.ndarray, exp_neg_s: np.ndarray,
                w_b: np.ndarray, starts, ends, lower, upper, cells: WindowCells,
                pairwise_blocks) -> float:
    """The window pairs of one prior: whole cells by the expansion, the rest one by one.

    ``pairwise_blocks(blocks)`` sums the windows of the given (ungrouped) blocks pair by pair.
    """
    active = upper > lower
    grouped = np.flatnonzero(active & cells.grouped)
    total = pairwise_blocks(np.flatnonzero(active & ~cells.grouped))
    if grouped.size == 0:
        return total
    lo, hi = lower[grouped], upper[grouped]
    if (hi - lo).mean() < MIN_WINDOW:  # too few atoms per cell to gain: all pair by pair
        return total + pairwise_blocks(grouped)
    n_b = cells.cell_of.size
    cell_lo = cells.cell_of[lo]
    first = np.where(cells.start[cell_lo] == lo, cell_lo, cell_lo + 1)  # first whole cell
    stop = np.where(hi < n_b, cells.cell_of[np.minimum(hi, n_b - 1)], cells.start.size - 1)
    whole = first < stop
    total += _grouped_sum(logit_p, cells, grouped[whole], first[whole], stop[whole])
    # the ends outside whole cells: [lo, start[first]) and [start[stop], hi), or all of it
    left_hi = np.where(whole, cells.start[np.minimum(first, cells.start.size - 1)], hi)
    right_lo = np.where(whole, cells.start[stop], hi)
    with np.errstate(over="ignore"):  # e^{-u} = inf only outside every window (tiny p)
        exp_neg_u = np.exp(-u)
    total += _pairwise_ranges(exp_neg_u, w_a, exp_neg_s, w_b, starts, ends, grouped, lo,
                              left_hi)
    total += _pairwise_ranges(exp_neg_u, w_a, exp_neg_s, w_b, starts, ends, grouped, right_lo,
                              hi)
    return total
