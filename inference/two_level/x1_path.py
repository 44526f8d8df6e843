r"""The X1 path of the two-block Gibbs sampler as a prefix scan (one uniform per step).

In the exact two-block Gibbs sampler (:mod:`dprisk.inference.two_level.gibbs`) the X1 path is
a two-state Markov chain with :math:`P[X_1' = m + 1 \mid X_1 = m + b] = a_b`; drawing step
``s`` as ``u[s] < a_{b[s]}`` makes each step one of four maps of ``{0, 1}``, so the whole path
is a scan, vectorised over chains and steps.
"""

from __future__ import annotations

import numpy as np

__all__ = ["x1_path"]


def x1_path(first: np.ndarray, u: np.ndarray, a0: np.ndarray, a1: np.ndarray) -> np.ndarray:
    r"""The X1 chain ``b[:, 0] = first``, ``b[:, s + 1] = u[:, s] < a_{b[:, s]}``, as a scan.

    Each step is one of four maps of ``{0, 1}``: constant (``u < min a`` or ``u >= max a``),
    identity or swap. ``b`` at step ``s`` is the value of the last constant map up to ``s``
    flipped by the parity of the swaps after it. Shapes: ``first (N,)``, ``u (N, T)``,
    ``a0, a1 (N, 1)``; returns ``(N, T + 1)`` booleans.
    """
    n, steps = u.shape
    value = np.empty((n, steps + 1), dtype=bool)
    value[:, 0] = first
    np.less(u, a0, out=value[:, 1:])
    other = u < a1
    is_const = np.empty_like(value)
    is_const[:, 0] = True
    np.equal(value[:, 1:], other, out=is_const[:, 1:])
    last = np.where(is_const, np.arange(steps + 1, dtype=np.int32), np.int32(0))
    np.maximum.accumulate(last, axis=1, out=last)
    path = np.take_along_axis(value, last, 1)
    swap = value[:, 1:] & ~other
    if swap.any():
        swaps = np.zeros((n, steps + 1), dtype=np.int32)
        np.cumsum(swap, axis=1, out=swaps[:, 1:])
        path ^= ((swaps - np.take_along_axis(swaps, last, 1)) & 1).astype(bool)
    return path
