r"""Compiled (numba) twins of the two-level table kernels: one pass per release, no tables.

Imported only by :mod:`dprisk.inference.kernels.fused_kernels` when its policy decides that the
compiled kernels pay (importing this module imports numba). Every function is
``@njit(cache=True)``, so a new process loads the machine code from numba's cache instead of
compiling it. The formulas are those of :mod:`dprisk.inference.kernels.table_kernels` (the numpy
reference, whose docstring derives them) evaluated per release in the same coordinates
relative to ``known``; the tests compare the two within 1e-13.

Gaussian sums by recurrence. On a branch's window the terms relative to the largest one,
at ``j* + n`` with ``e = j* - c`` the offset of that term from the centre, are

.. math::

    t_n = e^{-A n (n + 2e)}, \qquad \frac{t_{n+1}}{t_n} = e^{-A (2n + 1 + 2e)}
        = r_n, \qquad r_{n+1} = r_n\, e^{-2A},

so a branch costs one exponential (the first terms on both sides: their product is
:math:`e^{-2A}`) and one logarithm instead of one exponential per cell. The recurrence is
restarted from the closed form every :data:`RESTART` steps, which bounds its rounding at
about ``RESTART**2 / 2`` ulps of the terms far from the centre (those near the centre, which
carry the mass, are within a few ulps); the sum stops once a term is below ``STOP`` times
the partial sum (terms decrease from ``n = 1`` on, and the rest of a run is below ``term /
(1 - r)``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dprisk.runtime.numba_locator import use_content_keyed_locator

use_content_keyed_locator()  # cached by the source's contents, not its path (before decorating)

#: Steps of the ratio recurrence between two closed-form restarts.
RESTART = 16
#: A run stops once its term is below this share of the partial sum.
STOP = 1e-20


@njit(cache=True, nogil=True)  # nogil: a stop signal's watchdog runs meanwhile
def gauss_run(e, precision, decay, count, first):
    """``sum_{n=1}^{count} exp(-A n (n + 2e))`` by the ratio recurrence (``decay = e^{-2A}``).

    ``first`` is the ``n = 1`` term ``e^{-A (1 + 2e)}``; its ratio to the next term is
    ``first * decay``.
    """
    total = 0.0
    term = first
    ratio = first * decay
    for n in range(1, count + 1):
        if n > 1:
            if (n - 1) % RESTART == 0:
                term = math.exp(-precision * n * (n + 2.0 * e))
                ratio = math.exp(-precision * (2.0 * n + 1.0 + 2.0 * e))
            else:
                term *= ratio
                ratio *= decay
        total += term
        if term < STOP * total:
            break
    return total


@njit(cache=True, nogil=True)  # nogil: a stop signal's watchdog runs meanwhile
def log_gauss_tail(t, precision, excess, whole):
    """Compiled twin of :func:`dprisk.models.numerics.log_gauss_tail` (``whole`` precomputed)."""
    if t > 0.0:
        geometric = -precision * excess - math.log(-math.expm1(-2.0 * precision * t))
        return min(geometric, whole)
    return whole


@njit(cache=True, nogil=True)  # nogil: a stop signal's watchdog runs meanwhile
def logaddexp(a, b):
    """``log(e^a + e^b)`` with ``-inf`` handled."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    top = max(a, b)
    return top + math.log1p(math.exp(-abs(a - b)))


@njit(cache=True, nogil=True)  # nogil: a stop signal's watchdog runs meanwhile
def expit(x):
    """Compiled twin of :func:`dprisk.models.numerics.expit` for one value."""
    small = math.exp(-abs(x))
    if x >= 0.0:
        return 1.0 / (1.0 + small)
    return small / (1.0 + small)


@njit(cache=True, nogil=True)  # nogil: a stop signal's watchdog runs meanwhile
def two_level_masses(x1s, x2s, y1s, known, rho1, rho2, d, logit_p, feasible, lows, highs,
                     has_high, log_weights, log_weight_max, halfwidth, fixed, max_window,
                     log_tail_mass, want_neglected, out_mass, out_neglected, out_start,
                     out_halfwidth, out_prob):
    r"""Per release: ``log sum_k2 pi(m + b, k2)`` and its neglected-mass bound, b = 0, 1.

    The compiled twin of :func:`dprisk.inference.kernels.table_kernels.checked_table` for priors
    whose log weight is constant on each branch's support (``log_weights[b]`` on
    ``[lows[b], highs[b]]``, the upper end absent unless ``has_high[b]``), keeping only the
    branch masses. The window is widened per release (``K -> 2K + 1``) until the check
    passes. Without ``want_neglected`` a cheap upper bound of the neglected mass
    (``-log(1 - e^{-2 A t}) <= -log(1 - e^{-2 A K})`` for ``t >= K``) settles the check
    when it suffices and ``out_neglected`` then holds that bound.

    When ``out_prob`` has one entry per release, it also receives
    :math:`P[X_1 = m + 1 \mid D] = \operatorname{expit}(\text{mass}_1 - \text{mass}_0)`,
    evaluated as :func:`dprisk.models.numerics.expit` does (only :math:`e^{-|x|}`); pass an
    empty array to skip it.

    Returns the index of the first release whose check fails at the fixed or largest
    window, or ``-1``.
    """
    want_prob = out_prob.shape[0] == x1s.shape[0]
    precision = rho2 + rho1 / d
    rho1_d = rho1 / d
    shrink = rho2 * rho1_d / precision
    delta = rho1_d / precision
    decay = math.exp(-2.0 * precision)
    any_high = False
    upper = 0
    lower = 0
    first_lower = True
    for b in range(2):
        if feasible[b]:
            if first_lower or lows[b] < lower:
                lower = lows[b]
                first_lower = False
    all_high = True
    for b in range(2):
        if feasible[b]:
            if has_high[b]:
                if not any_high or highs[b] > upper:
                    upper = highs[b]
                any_high = True
            else:
                all_high = False
    any_high = all_high and any_high
    whole_base = math.log1p(math.sqrt(math.pi / precision))
    k0 = halfwidth
    cheap_k = k0
    cheap = np.inf
    if cheap_k > 0:
        cheap = -math.log(-math.expm1(-2.0 * precision * cheap_k)) + math.log(2.0)
    for i in range(x1s.shape[0]):
        u = float(x1s[i] - known)
        v = float(x2s[i] - known)
        w = float(y1s[i])
        gamma = (rho2 * v + rho1_d * w) / precision
        delta_beta = logit_p + rho1 * (2.0 * u - 1.0) + shrink * (2.0 * (v - w) - 1.0)
        floor_gamma = np.int64(math.floor(gamma))
        k = k0
        while True:
            width = 2 * k + 3
            start = known + floor_gamma - k
            if any_high:
                start = min(start, upper - width + 1)
            start = max(start, lower)
            first = start - known
            ref_hi = first + width - 1
            if any_high:
                ref_hi = max(min(ref_hi, upper - known), first)
            ref = min(max(floor_gamma, first), ref_hi)
            a = float(ref) - gamma
            whole = whole_base + precision * a * a
            bad = False
            for b in range(2):
                if not feasible[b]:
                    out_mass[i, b] = -np.inf
                    out_neglected[i, b] = -np.inf
                    continue
                step = b * delta
                offset = min(delta_beta, 0.0) if b else -max(delta_beta, 0.0)
                lo_j = max(first, lows[b] - known)
                hi_j = first + width - 1
                if has_high[b]:
                    hi_j = min(hi_j, highs[b] - known)
                # neglected-mass parts (module docstring of two_level_table)
                left = start > lows[b]
                right = (not has_high[b]) or highs[b] >= start + width
                t_left = (gamma - first + 1.0) + step
                x_left = ((ref - first + 1) + step) * ((2.0 * gamma - (ref + first - 1)) + step)
                t_right = (first + width - gamma) - step
                x_right = (((first + width + ref) - 2.0 * gamma) - step) * (
                    (first + width - ref) - step)
                shift = offset + log_weight_max
                if lo_j > hi_j:
                    log_mass = -np.inf
                else:
                    centre = gamma + step
                    j_star = np.int64(math.floor(centre + 0.5))
                    j_star = min(max(j_star, lo_j), hi_j)
                    value = offset - precision * (float(j_star - ref) - step) * (
                        float(2 * ref + (j_star - ref)) - 2.0 * gamma - step) + log_weights[b]
                    e = float(j_star) - centre
                    # e^{-A(1+2e)} e^{-A(1-2e)} = e^{-2A}: one exponential for both runs
                    up = math.exp(-precision * (1.0 + 2.0 * e))
                    down = decay / up if up > 1e-300 else math.exp(-precision * (1.0 - 2.0 * e))
                    total = 1.0 + gauss_run(e, precision, decay, hi_j - j_star, up)
                    total += gauss_run(-e, precision, decay, j_star - lo_j, down)
                    log_mass = value + math.log(total)
                out_mass[i, b] = log_mass
                settled = False
                if not want_neglected and k == cheap_k and (
                        (not left or t_left >= k) and (not right or t_right >= k)):
                    top = -np.inf
                    if left:
                        top = -precision * x_left
                    if right:
                        top = max(top, -precision * x_right)
                    bound = shift + top + cheap if (left or right) else -np.inf
                    if bound - log_mass < log_tail_mass:
                        out_neglected[i, b] = bound
                        settled = True
                if not settled:
                    tail = -np.inf
                    if left:
                        tail = log_gauss_tail(t_left, precision, x_left, whole)
                    if right:
                        tail = logaddexp(tail, log_gauss_tail(t_right, precision, x_right,
                                                              whole))
                    log_neglected = shift + tail if (left or right) else -np.inf
                    out_neglected[i, b] = log_neglected
                    if log_neglected - log_mass >= log_tail_mass:
                        bad = True
            if not bad:
                out_start[i] = start
                out_halfwidth[i] = k
                if want_prob:
                    out_prob[i] = expit(out_mass[i, 1] - out_mass[i, 0])
                break
            if fixed or 2 * (2 * k + 1) + 3 > max_window:
                return i
            k = 2 * k + 1
    return -1


@njit(cache=True, nogil=True)  # nogil: a stop signal's watchdog runs meanwhile
def alias_rows(scaled, q, alias):
    """Walker's alias tables of the rows of ``scaled`` (``W`` times each pmf), in place.

    The compiled twin of :func:`dprisk.inference.two_level.gibbs.alias_table` (same pairing order:
    the first smallest remaining cell with the first largest, ``W - 1`` times per row), so
    the tables are identical. ``scaled`` is overwritten; ``q`` and ``alias`` are filled.
    """
    rows, width = scaled.shape
    for_small = np.empty(width)
    for_large = np.empty(width)
    for r in range(rows):
        for k in range(width):
            q[r, k] = 1.0
            alias[r, k] = k
            for_small[k] = scaled[r, k]
            for_large[k] = scaled[r, k]
        for _ in range(width - 1):
            small = 0
            large = 0
            for k in range(1, width):
                if for_small[k] < for_small[small]:
                    small = k
                if for_large[k] > for_large[large]:
                    large = k
            s_small = scaled[r, small]
            q[r, small] = min(max(s_small, 0.0), 1.0)
            alias[r, small] = large
            scaled[r, large] -= 1.0 - s_small
            for_small[large] = scaled[r, large]
            for_large[large] = scaled[r, large]
            for_small[small] = np.inf
            for_large[small] = -np.inf


@njit(cache=True, nogil=True)  # nogil: a stop signal's watchdog runs meanwhile
def gibbs_steps(current, u, a0, a1, pair_q, pair_alias, pair_offset, width, keep_from,
                x1_out, x2_out, column):
    """Advance the exact Gibbs chains by ``u.shape[2]`` sweeps from the uniforms ``u``.

    The compiled twin of the block loop of :func:`dprisk.inference.two_level.gibbs.gibbs_draws`,
    with
    the same uniforms and the same arithmetic, so the draws are identical: X1 moves
    ``b' = u[0] < a_b``, X2 is drawn with ``u[1]`` from the alias table of
    ``P[X2 | X1 = m + b, X1' = m + b']`` (row ``pair_offset + 2 W b + W b'``). Sweeps from
    ``keep_from`` on are written to ``x1_out, x2_out`` (0 / 1 and window offsets) from
    ``column``; ``current`` (X1 of each chain) is updated in place.
    """
    n = u.shape[1]
    steps = u.shape[2]
    for i in range(n):
        low = a0[i]
        high = a1[i]
        b = np.int64(current[i])
        base = pair_offset[i]
        for s in range(min(keep_from, steps)):  # tuning sweeps: X2 is not kept
            b = np.int64(u[0, i, s] < (high if b else low))
        for s in range(min(keep_from, steps), steps):
            moved = np.int64(u[0, i, s] < (high if b else low))
            x = u[1, i, s] * width
            j = min(np.int64(x), width - 1)
            cell = base + 2 * width * b + width * moved + j
            out = column + s - keep_from
            x1_out[i, out] = b
            # j if x - j < q else alias, without a branch (the comparison is unpredictable):
            # for floats a < b exactly when a - b is negative and not zero (this spelling
            # compiles to branch-free code, about 2x faster than the comparison)
            alias = pair_alias[cell]
            gap = (x - j) - pair_q[cell]
            keep = np.int64(np.signbit(gap)) if gap != 0.0 else 0
            x2_out[i, out] = alias + keep * (j - alias)
            b = moved
        current[i] = b != 0
