r"""A function of a row term plus a window term, evaluated once per distinct pair (kernel).

The variant's X1 update (:mod:`dprisk.inference.studies.variant`) is the logistic function of

.. math:: z_{rk} = a_r + w(\delta_r - k), \qquad k = 0, \dots, W - 1,

with ``a_r`` a term of the release row (the ``x1*`` offset's) and ``w`` a function of one
integer, ``delta_r - k = y1* - k2 + m`` along the row's k2 window. Over a study's tables the
rows hold few distinct ``a_r`` (a few hundred offsets) and the ``delta`` a few hundred
integers, against millions of cells: :func:`windowed_expit` evaluates the function on the
table of distinct pairs and reads each row's window off it. Every cell is the same float sum
of the same two operands as the direct ``a[:, None] + w(...)``, so the same value, bit for
bit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["windowed_expit"]


def windowed_expit(row_term: np.ndarray, base: np.ndarray, width: int,
                   window_term: Callable[[np.ndarray], np.ndarray],
                   function: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    r"""``function(row_term[r] + window_term(base[r] - k))`` for ``k < width``, shape (R, W).

    .. math:: f_{rk} = F\big(a_r + w(\delta_r - k)\big)

    ``function`` (``F``) and ``window_term`` (``w``) must be elementwise (each value depends
    on its element alone). When the ``U`` distinct row terms times the ``L`` integers the
    windows span are fewer than half the ``R W`` cells, ``F`` is evaluated on that ``U x L``
    table (``delta`` descending along a row, so a row's window is a contiguous slice) and each
    row's window copied from it; else on the cells directly. Either way the answer is the
    direct evaluation's, bit for bit.

    Parameters
    ----------
    row_term : ndarray of float, shape (R,)
        ``a_r`` (finite).
    base : ndarray of int, shape (R,)
        ``delta_r``, the integer of each row's first cell.
    width : int
        ``W``, cells per row.
    window_term, function : callable
        ``w`` on an int64 array and ``F`` on a float array, both elementwise.
    """
    row_term = np.asarray(row_term, dtype=float)
    base = np.asarray(base, dtype=np.int64)
    steps = np.arange(width, dtype=np.int64)
    if row_term.size == 0:
        return np.empty((0, width))
    top, bottom = int(base.max()), int(base.min()) - (width - 1)
    span = top - bottom + 1
    values, inverse = np.unique(row_term, return_inverse=True)
    if 2 * values.size * span >= row_term.size * width:
        return function(row_term[:, None] + window_term(base[:, None] - steps))
    table = function(values[:, None] + window_term(top - np.arange(span, dtype=np.int64)))
    windows = sliding_window_view(table.ravel(), width)
    return windows[inverse.ravel() * span + (top - base)]
