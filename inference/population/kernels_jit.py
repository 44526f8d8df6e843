r"""Compiled (numba) twin of the outsider's Poisson-Gaussian sums: one pass per cell, no window.

Imported by :mod:`dprisk.inference.population.kernels` whenever numba loads, unless
``DPRISK_KERNELS=numpy`` (one path per environment: every cell's answer depends on the cell
alone, whatever the partitioning); ``@njit(cache=True)``, so a new process
loads the machine code from numba's cache (:func:`dprisk.runtime.cache.use_numba_cache`).

The quantity is the numpy path's (:func:`dprisk.inference.population.kernels.
poisson_gaussian_log_ratio`), through :math:`L_\delta(y) = F(y - \delta)` with

.. math:: F(z) = \log \sum_{m \ge 0} \exp\bigl(m \log\lambda - \log m!
          - (z - m)^2/(2\sigma^2)\bigr)

(the :math:`e^{-\lambda}` cancels in the ratio :math:`F(y - 1) - F(y)`). Each sum starts at
the summand's mode :math:`\hat m` (Newton, as the numpy path) and walks outwards, term by
term in closed form (``math.lgamma``, ``math.exp``), until the next term is below
:data:`STOP` of the partial sum *and* the geometric bound of everything beyond it
(:math:`t\,q/(1 - q)`, :math:`q < 1` the last ratio: the summand is log-concave in
:math:`m`, so ratios only decrease outwards) is too: the neglected mass is below
:data:`STOP` relative, checked, not assumed. The two paths agree to a few ulps of the terms
(:mod:`~dprisk.inference.population.kernels`: about 1e-13 in a logit at counts up to 100,
1e-12 up to 1,000); the tests compare each with a direct sum within 1e-12 relative and
1e-11 absolute.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dprisk.runtime.numba_locator import use_content_keyed_locator

use_content_keyed_locator()  # cached by the source's contents, not its path (before decorating)

#: Largest neglected share of a sum (each side).
STOP = 1e-17


@njit(cache=True, nogil=True)
def _log_term(m, z, log_lam, inv2):
    if m == 0:
        return -z * z * inv2
    return m * log_lam - math.lgamma(m + 1.0) - (z - m) * (z - m) * inv2


@njit(cache=True, nogil=True)
def _mode(z, lam, variance):
    if lam <= 0.0:
        return 0
    spread = max(lam, 1.0)
    mode = max((lam * variance + z * spread) / (variance + spread), 0.0)
    log_lam = math.log(lam)
    for _ in range(6):
        grad = log_lam - math.log(mode + 0.5) + (z - mode) / variance
        curvature = 1.0 / (mode + 0.5) + 1.0 / variance
        mode = max(mode + grad / curvature, 0.0)
    return math.floor(mode + 0.5)


@njit(cache=True, nogil=True)
def _log_sum(z, lam, variance):
    inv2 = 0.5 / variance
    if lam <= 0.0:
        return -z * z * inv2
    log_lam = math.log(lam)
    # the largest term near the mode: step to a local maximum (log-concave: the global one)
    m0 = _mode(z, lam, variance)
    top = _log_term(m0, z, log_lam, inv2)
    while True:
        right = _log_term(m0 + 1, z, log_lam, inv2)
        if right > top:
            m0, top = m0 + 1, right
            continue
        if m0 > 0:
            left = _log_term(m0 - 1, z, log_lam, inv2)
            if left > top:
                m0, top = m0 - 1, left
                continue
        break
    total = 1.0
    for direction in (1, -1):
        m = m0
        previous = 1.0
        while True:
            m += direction
            if m < 0:
                break
            term = math.exp(_log_term(m, z, log_lam, inv2) - top)
            total += term
            ratio = term / previous
            previous = term
            if term < STOP * total and ratio < 1.0 and term * ratio / (1.0 - ratio) < (
                    STOP * total):
                break
    return top + math.log(total)


@njit(cache=True, nogil=True)
def log_ratio(y, lam, variance, out):
    """``out[i] = F(y[i] - 1) - F(y[i])`` for each cell (module docstring)."""
    for i in range(y.shape[0]):
        out[i] = _log_sum(y[i] - 1.0, lam[i], variance[i]) - _log_sum(y[i], lam[i],
                                                                       variance[i])
    return out


def poisson_gaussian_log_ratio(y: np.ndarray, lam: np.ndarray,
                               variance: np.ndarray) -> np.ndarray:
    r"""The compiled :math:`\log L(1) - \log L(0)` of distinct float64 cells (1-D arrays)."""
    out = np.empty(y.shape[0])
    return log_ratio(np.ascontiguousarray(y, dtype=np.float64),
                     np.ascontiguousarray(lam, dtype=np.float64),
                     np.ascontiguousarray(variance, dtype=np.float64), out)
