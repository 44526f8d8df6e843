r"""The branch masses of the two-level joint tables without the tables (numpy kernels).

Many callers of :func:`dprisk.inference.kernels.table_kernels.checked_table` use only
``log_branch_mass`` and ``log_neglected`` (the exact log-odds of the P[correct] studies, the
budget searches, the batch posteriors). :func:`checked_log_masses` returns those two arrays
**bit for bit** as ``checked_table`` computes them, at a fraction of the time for the
usual shapes (thousands of releases, windows of tens of k2 values).

Why it is faster. The table of a branch is, per release ``i`` and window position ``c``,

.. math::

    T_{ic} = b\,\Delta\beta_i - \max(\Delta\beta_i, 0)
        - \bigl(A\,(\ell_{ic} - b\delta)\bigr)\,
          \bigl(((2 r_i + \ell_{ic}) - 2\gamma_i) - b\delta\bigr)
        + \log w(k_{2,ic} \mid m + b), \qquad \ell_{ic} = j_{ic} - r_i,

and :math:`\log \sum_c e^{T_{ic}} = s_i + \log \sum_c e^{T_{ic} - s_i}`, :math:`s_i = \max_c
T_{ic}` (:mod:`dprisk.inference.kernels.table_kernels` derives it). With releases along the
rows (``R x W``, ``W`` about 29) every operation that combines a per-release number with the
table runs NumPy's inner loop once per row, 29 elements at a time; here the table is laid out
``W x R`` (window positions along the rows, releases along the columns), so each operation
is a few long loops. Every cell gets the same floating-point operations in the same order
as in ``checked_table`` (the same bits), the maximum is order-free, and the sum over the
window is NumPy's own pairwise summation replayed row by row (:func:`pairwise_row_sum`):
for ``n`` terms, ``n < 8`` one by one; ``n <= 128`` eight running sums over blocks of eight,
combined as :math:`((r_0 + r_1) + (r_2 + r_3)) + ((r_4 + r_5) + (r_6 + r_7))`, then the
remaining terms one by one; larger ``n`` split at :math:`\lfloor n/2 \rfloor` rounded down to
a multiple of 8 (numpy ``_core/src/umath/loops_utils.h.src``, ``pairwise_sum``; a reduction
starts from 0). That order is a NumPy implementation detail: a NumPy that sums otherwise
fails ``tests/inference/kernels/test_mass_kernels.py`` (bytes compared), it cannot pass
silently. The layout is used when it pays (at least :data:`MIN_RELEASES` releases and a
window of at most :data:`MAX_WIDTH`); otherwise the masses come from
:func:`~dprisk.inference.kernels.table_kernels.window_table`. The large work arrays are kept
between calls (:func:`work_array`): the page faults of fresh ones were a quarter of the time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from dprisk.inference.kernels.table_kernels import (
    branch_log_neglected,
    branch_offset,
    constant_log_weight,
    widened,
    window_geometry,
    window_table,
)
from dprisk.models.scenario import Scenario

__all__ = ["MAX_WIDTH", "MIN_RELEASES", "WORKSPACE_CELLS", "WindowMasses",
           "checked_log_masses", "pairwise_row_sum", "window_masses", "work_array"]

#: Largest window (k2 values) laid out window-major: one pairwise block of NumPy's sum.
MAX_WIDTH = 128
#: Fewest releases for the window-major layout (below, the row loops cost little).
MIN_RELEASES = 64
#: Integers below this are exact in float64, and so are sums of two of them.
_EXACT_INTEGER = 2**52
#: Largest work array (float64 elements) kept between calls, per array and thread (4 MiB).
WORKSPACE_CELLS = 2**19

_workspace = threading.local()


@dataclass(frozen=True)
class WindowMasses:
    """The masses of :class:`dprisk.inference.kernels.table_kernels.JointTable`, no table.

    Attributes
    ----------
    log_branch_mass, log_neglected : ndarray, shape (R, 2)
    feasible : ndarray of bool, shape (2,)
    width : int
    """

    log_branch_mass: np.ndarray
    log_neglected: np.ndarray
    feasible: np.ndarray
    width: int

    @property
    def neglected_share(self) -> np.ndarray:
        """Per release and branch: bound of neglected / included mass (0 for empty branches)."""
        with np.errstate(invalid="ignore"):
            share = np.exp(self.log_neglected - self.log_branch_mass)
        return np.where(self.feasible, share, 0.0)


def work_array(name: str, shape: tuple) -> np.ndarray:
    """An uninitialised float64 array of ``shape``, its memory kept for the next call.

    A fresh array of a few hundred kB costs its page faults on first write (about a quarter
    of a Census-sized P[correct] point); arrays of up to :data:`WORKSPACE_CELLS` elements
    are therefore reused, one per ``name`` and thread. The caller must not keep the array
    (its contents change at the next call with that ``name``).
    """
    size = 1
    for extent in shape:
        size *= extent
    if size > WORKSPACE_CELLS:
        return np.empty(shape)
    arrays = _workspace.__dict__
    memory = arrays.get(name)
    if memory is None or memory.size < size:
        memory = arrays[name] = np.empty(max(size, 1024))
    return memory[:size].reshape(shape)


def pairwise_row_sum(rows: np.ndarray) -> np.ndarray:
    """``rows.sum(axis=0)`` added in the order of NumPy's pairwise sum (module docstring).

    Equal bit for bit to ``np.sum`` of each column taken as a contiguous vector: a reduction
    starts from 0 (so a sum of ``-0.0`` is ``0.0``), then adds the pairwise sum of the terms.
    """
    total = _pairwise(rows, 0, rows.shape[0])
    total += 0.0
    return total


def _pairwise(rows: np.ndarray, lo: int, n: int) -> np.ndarray:
    """NumPy's ``pairwise_sum`` of ``rows[lo:lo + n]``, row operations over the columns."""
    if n < 8:
        total = np.zeros(rows.shape[1:])
        for i in range(lo, lo + n):
            total += rows[i]
        return total
    if n <= 128:
        run = work_array("pairwise", (8, *rows.shape[1:]))
        run[...] = rows[lo:lo + 8]
        i = 8
        while i < n - n % 8:
            run += rows[lo + i:lo + i + 8]
            i += 8
        total = ((run[0] + run[1]) + (run[2] + run[3])) + ((run[4] + run[5]) + (run[6] + run[7]))
        for k in range(lo + i, lo + n):
            total += rows[k]
        return total
    half = n // 2
    half -= half % 8
    return _pairwise(rows, lo, half) + _pairwise(rows, lo + half, n - half)


def _add_log_weight(table, prior, k1: int, support, start, offsets) -> None:
    """``table += log w(k2 | k1)`` on the window-major table, ``k2 = start + offsets``.

    A weight constant on the support is added as that number (also 0.0, which turns -0.0 into
    0.0 as adding the array does) and the cells off the support set to ``-inf`` (what adding
    ``-inf`` to a finite value gives); any other prior's ``log_weight`` is evaluated on the
    window.
    """
    constant = constant_log_weight(prior, k1, support)
    if constant is None:
        table += prior.log_weight(offsets[:, None] + start, k1)
        return
    table += constant
    low, high = support
    below = low - start  # positions c < low - start are off the support
    count = int(below.max(initial=0))
    if count > 0:
        count = min(count, offsets.size)
        np.copyto(table[:count], -np.inf, where=offsets[:count, None] < below)
    if high is not None:
        above = high - start  # positions c > high - start are off the support
        begin = max(int(above.min(initial=offsets.size)) + 1, 0)
        if begin < offsets.size:
            np.copyto(table[begin:], -np.inf, where=offsets[begin:, None] > above)


def window_masses(x1s, x2s, y1s, params: Scenario, halfwidth: int) -> WindowMasses:
    """The masses of :func:`~dprisk.inference.kernels.table_kernels.window_table`, bit for bit.

    Window-major layout (module docstring) when there are at least :data:`MIN_RELEASES`
    releases and the window is at most :data:`MAX_WIDTH`; else the table itself.
    """
    n = x1s.shape[0]
    width = 2 * halfwidth + 3
    if n < MIN_RELEASES or width > MAX_WIDTH:
        table = window_table(x1s, x2s, y1s, params, halfwidth)
        return WindowMasses(table.log_branch_mass, table.log_neglected, table.feasible, width)
    window = window_geometry(x1s, x2s, y1s, params, halfwidth)
    precision = params.precision
    offsets = np.arange(width)
    first_minus_ref = window.first - window.ref  # in [-(W - 1), 0]: small exact integers
    if (first_minus_ref == first_minus_ref[0]).all():  # the usual case: one column
        first_minus_ref = first_minus_ref[:1]
    j_minus_ref = np.add(offsets.astype(float)[:, None], first_minus_ref.astype(float),
                         out=work_array("j_minus_ref", (width, first_minus_ref.size)))
    twice_ref = 2 * window.ref
    j_plus_ref = work_array("j_plus_ref", (width, n))
    if int(np.abs(twice_ref).max()) + width < _EXACT_INTEGER:  # exact: float sum = int sum
        np.add(j_minus_ref, twice_ref.astype(float), out=j_plus_ref)
    else:
        j_plus_ref[...] = (offsets[:, None] + first_minus_ref) + twice_ref  # int64, converted
    twice_gamma = 2.0 * window.gamma

    log_mass = np.full((n, 2), -np.inf)
    log_neglected = np.full((n, 2), -np.inf)
    table = work_array("table", (width, n))
    scale = work_array("scale", j_minus_ref.shape)
    for b, k1 in enumerate((params.known, params.known + 1)):
        if window.supports[b] is None:
            continue
        # relative_log_joint: bo - (A (l - step)) * (((2r + l) - 2 gamma) - step)
        step = b * (params.rho1 / params.d) / precision
        np.subtract(j_plus_ref, twice_gamma, out=table)
        np.subtract(j_minus_ref, step, out=scale)
        if step != 0.0:  # x - 0.0 is x, bit for bit
            table -= step
        scale *= precision
        table *= scale
        np.subtract(branch_offset(b, window.delta_beta), table, out=table)
        _add_log_weight(table, params.prior, k1, window.supports[b], window.start, offsets)
        # logsumexp over the window (dprisk.models.numerics.logsumexp's operations)
        top = table.max(axis=0)
        top = np.where(np.isfinite(top), top, 0.0)
        table -= top
        np.exp(table, out=table)
        total = pairwise_row_sum(table)
        with np.errstate(divide="ignore"):
            np.log(total, out=total)
        log_mass[:, b] = total + top
        log_neglected[:, b] = branch_log_neglected(params, window, b)
    return WindowMasses(log_mass, log_neglected, window.feasible, width)


def checked_log_masses(x1s, x2s, y1s, params: Scenario, tail_mass: float,
                       halfwidth: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(log_branch_mass, log_neglected)`` of ``checked_table``, bit for bit, no table.

    The same window rule and errors as
    :func:`~dprisk.inference.kernels.table_kernels.checked_table`.
    """
    masses = widened(window_masses, x1s, x2s, y1s, params, tail_mass, halfwidth)
    return masses.log_branch_mass, masses.log_neglected
