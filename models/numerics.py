r"""Shared numerical kernels: the one home of each small formula used across the package.

Everything here is a kernel: it takes validated numbers (or arrays) and does not re-check them,
except :func:`check_tail_mass`, the one rule for the neglected-mass argument of every function
that truncates a sum.

* :func:`logsumexp` -- :math:`\log \sum_i e^{a_i}` along an axis, ``-inf`` for empty mass.
* :func:`expit` -- :math:`1 / (1 + e^{-x})` without overflow.
* :func:`libm_expit`, :func:`libm_log_expit` -- SciPy's ``expit`` and ``log_expit``, bit for bit,
  without importing ``scipy.special`` (0.2 s) for small inputs.
* :func:`dg_log_normalizer` -- :math:`\log Z(\rho) = \log \sum_{k \in \mathbb{Z}} e^{-\rho k^2}`
  of the discrete Gaussian (two rapidly convergent series split at :math:`\rho = \pi`).
* :func:`log_gauss_tail` -- a finite upper bound of a one-sided Gaussian-kernel sum.
* :func:`logit` -- :math:`\log p - \log(1 - p)`, exact in the tails.
* :func:`probability_ratio` -- a quotient of probabilities given with their logs.
* :func:`scalar_result` -- a 0-d result as a Python ``float`` (or ``int``), arrays unchanged.
"""

from __future__ import annotations

import math

import numpy as np

from dprisk.models.checks import check_probability

__all__ = [
    "N_SERIES_TERMS",
    "TAIL_MASS_MAX",
    "check_tail_mass",
    "dg_log_normalizer",
    "expit",
    "keep_subnormal",
    "libm_expit",
    "libm_log_expit",
    "log_gauss_tail",
    "logit",
    "logsumexp",
    "probability_ratio",
    "scalar_result",
]

#: Largest input size :func:`libm_expit` and :func:`libm_log_expit` evaluate element by element
#: with :mod:`math`; larger float64 arrays go to ``scipy.special`` (same C library, same bits).
LIBM_MAX_SIZE = 4096

#: Number of series terms on each side of ``rho = pi`` in :func:`dg_log_normalizer`.
N_SERIES_TERMS = 6
#: Largest neglected probability mass a truncating function accepts (``0 < tail_mass <= 1e-3``).
TAIL_MASS_MAX = 1e-3

_K = np.arange(1, N_SERIES_TERMS + 1, dtype=float)


def logsumexp(a: np.ndarray, axis: int = -1) -> np.ndarray:
    r"""``log(sum(exp(a), axis))``, with ``-inf`` for slices that are all ``-inf``; no warnings.

    .. math:: \log \sum_i e^{a_i} = s + \log \sum_i e^{a_i - s}, \qquad s = \max_i a_i
    """
    a = np.asarray(a, dtype=float)
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    shifted = np.subtract(a, top)
    np.exp(shifted, out=shifted)  # in place: one array of a's shape, same values
    with np.errstate(divide="ignore"):
        out = np.log(shifted.sum(axis))
    return out + np.squeeze(top, axis)


def expit(x: np.ndarray) -> np.ndarray:
    r"""The logistic function :math:`1 / (1 + e^{-x})` without overflow.

    Only :math:`e^{-|x|} \le 1` is evaluated: :math:`1/(1 + e^{-|x|})` for ``x >= 0`` and
    :math:`e^{-|x|}/(1 + e^{-|x|})` otherwise (``expit(+inf) = 1``, ``expit(-inf) = 0``). One
    quotient per element, its numerator chosen first, the rest in place: the same
    float operations per element as evaluating both quotients, with two arrays fewer (the
    budget searches call it over blocks of 2**16 cells).
    """
    small = np.asarray(np.abs(x, dtype=np.result_type(x, 1.0)))  # integers: as floats
    np.negative(small, out=small)
    np.exp(small, out=small)
    numerator = np.where(x >= 0, 1.0, small)
    np.add(small, 1.0, out=small)
    numerator /= small
    return numerator


def _exp_or_inf(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _expit_scalar(v: float) -> float:
    return 1.0 / (1.0 + _exp_or_inf(-v))


def _log_expit_scalar(v: float) -> float:
    if v < 0:
        return v - math.log1p(math.exp(v))
    return -math.log1p(math.exp(-v))


def _elementwise(x, scalar_func, scipy_name: str):
    """``scalar_func`` over ``x`` for small float inputs, else ``scipy.special.<scipy_name>``."""
    arr = np.asarray(x)
    if arr.size > LIBM_MAX_SIZE or arr.dtype.kind not in "fiub" or arr.dtype.itemsize > 8 or (
            arr.dtype.kind == "f" and arr.dtype != np.float64):
        from scipy import special  # large or non-float64 input: the ufunc itself

        return getattr(special, scipy_name)(x)
    values = np.fromiter(map(scalar_func, arr.astype(float).ravel().tolist()), float,
                         count=arr.size).reshape(arr.shape)
    return values if values.ndim else values[()]


def libm_expit(x) -> np.ndarray:
    r"""SciPy's ``expit``, bit for bit: :math:`1 / (1 + e^{-x})` with the C library's ``exp``.

    ``scipy.special.expit`` evaluates ``1 / (1 + exp(-x))`` with the C library's ``exp``, which
    can differ in the last bit from NumPy's vectorised ``np.exp`` (so :func:`expit` is not a
    drop-in replacement where results are recorded). Inputs of at most ``LIBM_MAX_SIZE``
    elements are evaluated with :func:`math.exp` (the same C function) and never import
    ``scipy.special``; larger or non-float64 arrays call ``scipy.special.expit``. Results below
    the smallest normal double may be flushed to 0 exactly as SciPy does (see
    :func:`keep_subnormal`).
    """
    return _elementwise(x, _expit_scalar, "expit")


def libm_log_expit(x) -> np.ndarray:
    r"""SciPy's ``log_expit``, bit for bit, without importing SciPy for small inputs.

    .. math::

        \log \operatorname{expit}(x) = \begin{cases} x - \operatorname{log1p}(e^{x}) & x < 0 \\
            -\operatorname{log1p}(e^{-x}) & x \ge 0 \end{cases}

    with the C library's ``exp`` and ``log1p`` (:mod:`math`), as ``scipy.special.log_expit``
    computes it; inputs larger than ``LIBM_MAX_SIZE`` go to ``scipy.special.log_expit``.
    """
    return _elementwise(x, _log_expit_scalar, "log_expit")


def keep_subnormal(prob, log_prob) -> np.ndarray:
    r"""``prob``, with values below the smallest normal double recomputed as ``exp(log_prob)``.

    Some expit implementations flush results below ``2.2e-308`` to 0; a posterior such as
    ``1.65e-310`` is still a valid (subnormal) double, and :math:`e^{\log P}` gives it.
    Every other value is returned unchanged (bit for bit).
    """
    prob = np.asarray(prob, dtype=float)
    tiny = np.finfo(float).tiny
    return np.where(prob < tiny, np.exp(log_prob), prob)


def logit(p: np.ndarray) -> np.ndarray:
    r"""``log(p) - log1p(-p)``, exact in the tails (``p = 1e-300`` gives about -690.8).

    .. math:: \operatorname{logit}(p) = \log p - \log(1 - p)
    """
    return np.log(p) - np.log1p(-p)


def probability_ratio(num, log_num, den, log_den) -> np.ndarray:
    r"""``num / den`` for probabilities given with their logs (``num <= 1``).

    Where both are normal doubles the quotient is formed directly: one rounding, so
    :math:`R' = \text{posterior}/p` never exceeds ``fl(1/p)`` (``exp`` of the difference of
    the logs would carry ~``eps |log p|`` relative error and can exceed it). Elsewhere
    ``exp(log_num - log_den)`` (no underflow to 0/0); a ratio beyond the float range is
    ``inf`` without a warning.
    """
    tiny = np.finfo(float).tiny
    normal = (num >= tiny) & (den >= tiny)
    with np.errstate(over="ignore"):
        via_logs = np.exp(log_num - log_den)
    return np.where(normal, num / np.where(normal, den, 1.0), via_logs)


def scalar_result(value):
    """Return a 0-d result as a Python ``float`` (``int`` for integer dtypes); arrays as they are.

    The public functions return Python scalars for scalar inputs (``round(result, 5)``
    works) and arrays, broadcast over the inputs, otherwise. The value is not changed.
    """
    if np.ndim(value) != 0:
        return value
    if np.asarray(value).dtype.kind in "iu":
        return int(value)
    return float(value)


def dg_log_normalizer(rho) -> np.ndarray:
    r"""Log of the discrete Gaussian normaliser :math:`\log Z(\rho)` (kernel: ``rho > 0`` assumed).

    For ``rho > pi``: :math:`\log Z = \operatorname{log1p}(2\sum_{k=1}^{6} e^{-\rho k^2})`.
    For ``rho <= pi``: :math:`\log Z = \tfrac12\log(\pi/\rho) +
    \operatorname{log1p}(2\sum_{n=1}^{6} e^{-\pi^2 n^2/\rho})` (Poisson summation). The first
    neglected term is below ``exp(-pi (N+1)^2)`` relative to the sum on either side. The
    validated public form is :func:`dprisk.models.mechanism.discrete_gaussian.log_normalizer`.
    """
    rho = np.asarray(rho, dtype=float)[..., None]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        direct = np.log1p(2.0 * np.exp(-rho * _K**2).sum(-1))
        ratio = np.pi / rho[..., 0]
        # pi/rho overflows for rho < 1.75e-308: there log(pi) - log(rho) (same value elsewhere
        # up to rounding; the quotient keeps the results of every other rho bit-identical).
        log_ratio = np.where(np.isfinite(ratio), np.log(ratio), np.log(np.pi) - np.log(rho[..., 0]))
        theta = 0.5 * log_ratio + np.log1p(
            2.0 * np.exp(-(np.pi**2) * _K**2 / rho).sum(-1)
        )
    return np.where(rho[..., 0] > np.pi, direct, theta)


def log_gauss_tail(t, precision: float, *, excess=None, offset: float = 0.0) -> np.ndarray:
    r"""Upper bound of :math:`\log \sum_{i \ge 0} e^{-A (t + i)^2} + A a^2`, finite for every ``t``.

    ``A = precision`` and ``a = offset``. For ``t > 0`` the geometric bound
    :math:`e^{-A (t^2 - a^2)} / (1 - e^{-2 A t})`; always at most the whole sum over the
    integers, :math:`Z(A)\,e^{A a^2} \le (1 + \sqrt{\pi / A})\,e^{A a^2}`.

    Parameters
    ----------
    t : array_like of float
        Start of the one-sided sum.
    precision : float (> 0)
        ``A``.
    excess : array_like of float, optional
        ``t^2 - a^2``, when the caller has it in a more accurate factored form
        (default ``t^2 - a^2`` computed here, ``t^2`` when ``offset = 0``).
    offset : float
        ``a``, the offset of the reference point from the centre.
    """
    t = np.asarray(t, dtype=float)
    whole = math.log1p(math.sqrt(math.pi / precision)) + precision * offset**2
    t_pos = np.maximum(t, 1e-300)
    if excess is None:
        excess = t_pos**2 - offset**2
    with np.errstate(divide="ignore", over="ignore"):
        geometric = -precision * excess - np.log(-np.expm1(-2.0 * precision * t_pos))
    return np.where(t > 0, np.minimum(geometric, whole), whole)


def check_tail_mass(tail_mass, name: str = "tail_mass") -> float:
    """The one rule for a neglected-mass argument: a single number with ``0 < tail_mass <= 1e-3``.

    Raises
    ------
    ValueError
        Naming ``name`` and the allowed range.
    """
    value = check_probability(tail_mass, name)
    if np.ndim(value) != 0:
        raise ValueError(f"{name} must be a single number (0 < {name} <= {TAIL_MASS_MAX:g})")
    value = float(value)
    if value > TAIL_MASS_MAX:
        raise ValueError(
            f"{name} must be <= {TAIL_MASS_MAX:g} (allowed range: 0 < {name} <= "
            f"{TAIL_MASS_MAX:g}), got {value!r}"
        )
    return value
