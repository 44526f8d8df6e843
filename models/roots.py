r"""A bracketing root finder without importing ``scipy.optimize`` (2-4 s on a loaded machine).

:func:`brent_root` is Brent's method (R. P. Brent, *Algorithms for Minimization without
Derivatives*, 1973, ch. 4) in the form SciPy's ``brentq`` implements: each step takes the
inverse-quadratic (or, after the bracket flips, secant) estimate when it is short enough,
else bisects; the iteration stops once half the bracket is below

.. math:: \delta = (\mathrm{xtol} + \mathrm{rtol}\,|x|)/2.

Every step is the same sequence of IEEE double operations as ``scipy.optimize.brentq``, so
both return the same float (the tests compare them bit for bit on the package's searches and
on random smooth functions, and on functions of tiny values). Like ``brentq``, the bracket is
tracked by the *signs* of the function values, not by the sign of their product, which
underflows to 0 when both values are below about 1e-162 (the root was then lost: 0.0
returned for the bracket [1, 10]). The budget searches need that: their answers are records checked
for exact equality. Importing ``scipy.optimize`` loads ``scipy.linalg`` and
``scipy.special``: on the command line that import was most of a single-level budget search.
"""

from __future__ import annotations

import math

__all__ = ["brent_root"]


def _divide(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` as IEEE doubles (and ``brentq``'s C) divide: no exception.

    A zero denominator (differences or products of function values below about 1e-160
    underflow to 0) gives an infinite or NaN estimate, which fails the step-length test, so
    the step bisects as in ``brentq``; Python's ``/`` raised ZeroDivisionError there instead.
    """
    if denominator == 0:
        return math.nan if numerator == 0 or numerator != numerator else math.inf
    return numerator / denominator


def brent_root(func, lower: float, upper: float, *, xtol: float = 2e-12,
               rtol: float = 4 * 2.220446049250313e-16, maxiter: int = 100) -> float:
    r"""A root of ``func`` in ``[lower, upper]``, where ``func`` changes sign (Brent's method).

    Parameters
    ----------
    func : callable float -> float
        Continuous on the bracket, ``func(lower)`` and ``func(upper)`` of opposite signs (or
        one of them zero).
    lower, upper : float
        The bracket.
    xtol, rtol : float (xtol > 0, rtol >= 4 eps)
        Convergence: half the bracket below :math:`(\mathrm{xtol} + \mathrm{rtol}|x|)/2`.
    maxiter : int

    Returns
    -------
    float
        The last estimate ``x`` (``func(x) == 0`` or the bracket converged), as
        ``scipy.optimize.brentq(func, lower, upper, xtol=xtol, rtol=rtol)`` returns it.

    Raises
    ------
    ValueError
        If ``func`` has the same sign at both ends, or returns NaN.
    RuntimeError
        If the bracket has not converged after ``maxiter`` steps.
    """
    def value(x: float) -> float:
        out = float(func(x))
        if out != out:
            raise ValueError(f"the function returned NaN at x = {x!r}")
        return out

    def opposite(a: float, b: float) -> bool:  # nonzero and of opposite signs (no product)
        return a != 0 and b != 0 and math.copysign(1.0, a) != math.copysign(1.0, b)

    prev, cur = float(lower), float(upper)
    f_prev, f_cur = value(prev), value(cur)
    if f_prev == 0:
        return prev
    if f_cur == 0:
        return cur
    if not opposite(f_prev, f_cur):
        raise ValueError("the function must have different signs at the two ends of the "
                         f"bracket, got f({prev!r}) = {f_prev!r} and f({cur!r}) = {f_cur!r}")
    # `cur` is the best estimate, `far` the other end of the bracket, `prev` the last estimate
    far = f_far = step = last_step = 0.0
    for _ in range(maxiter):
        if opposite(f_prev, f_cur):  # the root lies between prev and cur: cur's partner is prev
            far, f_far = prev, f_prev
            last_step = step = cur - prev
        if abs(f_far) < abs(f_cur):  # keep the smaller |f| as the estimate
            prev, cur, far = cur, far, cur
            f_prev, f_cur, f_far = f_cur, f_far, f_cur
        tol = (xtol + rtol * abs(cur)) / 2
        half = (far - cur) / 2
        if f_cur == 0 or abs(half) < tol:
            return cur
        if abs(last_step) > tol and abs(f_cur) < abs(f_prev):
            if prev == far:  # two points: the secant
                trial = _divide(-f_cur * (cur - prev), f_cur - f_prev)
            else:  # three points: inverse quadratic interpolation
                slope_prev = _divide(f_prev - f_cur, prev - cur)
                slope_far = _divide(f_far - f_cur, far - cur)
                trial = _divide(-f_cur * (f_far * slope_far - f_prev * slope_prev),
                                slope_far * slope_prev * (f_far - f_prev))
            limit = 3 * abs(half) - tol
            if abs(last_step) < limit:
                limit = abs(last_step)
            if 2 * abs(trial) < limit:
                last_step, step = step, trial
            else:
                last_step = step = half
        else:
            last_step = step = half
        prev, f_prev = cur, f_cur
        if abs(step) > tol:
            cur += step
        else:
            cur += tol if half > 0 else -tol
        f_cur = value(cur)
    raise RuntimeError(f"Brent's method did not converge in {maxiter} steps (last x = {cur!r})")
