r"""The discrete Gaussian distribution DG(mu, 1/(2 rho)) in numpy: normaliser, pmf, cdf, variance.

The paper's convention (Kazan & Reiter, Definition 3; Canonne, Kamath & Steinke 2020):

.. math::

    P[X^* = x] = \frac{e^{-\rho (x - \mu)^2}}{Z(\rho)}, \qquad
    Z(\rho) = \sum_{k \in \mathbb{Z}} e^{-\rho k^2}, \qquad x \in \mathbb{Z},

with integer centre ``mu`` and scale ``s = 1/(2 rho)`` (so the variance is close to ``s``
when ``rho < 1``). Everything here is computed in log space.

The normaliser uses one of two rapidly convergent series, split at the self-dual point
``rho = pi`` of the Jacobi theta transformation:

* ``rho > pi``: the direct sum :math:`\log Z = \log1p(2 \sum_{k \ge 1} e^{-\rho k^2})`;
* ``rho <= pi``: Poisson summation
  :math:`Z(\rho) = \sqrt{\pi/\rho}\,(1 + 2 \sum_{n \ge 1} e^{-\pi^2 n^2 / \rho})`.

On either side the first neglected term is below ``exp(-pi * (N+1)^2)`` relative to the
sum, so ``N = 6`` terms give full double precision for every ``rho > 0``.
"""

from __future__ import annotations

import numpy as np

from dprisk.models.checks import check_count, check_rho
from dprisk.models.numerics import N_SERIES_TERMS, dg_log_normalizer

_K = np.arange(1, N_SERIES_TERMS + 1, dtype=float)

__all__ = [
    "DEFAULT_TAIL_MASS",
    "VARIANCE_RHO_MIN",
    "cdf",
    "log_normalizer",
    "log_tail",
    "log_tail_kernel",
    "logcdf",
    "logcdf_kernel",
    "logpmf",
    "logpmf_kernel",
    "logsf",
    "logsf_kernel",
    "pmf",
    "rho_of_das_sigma_sq",
    "sf",
    "smallest_window_rho",
    "support_halfwidth",
    "support_halfwidth_kernel",
    "variance",
]

#: Neglected probability mass allowed when a function truncates the support.
DEFAULT_TAIL_MASS = 1e-17

#: Smallest rho of :func:`variance`: the variance, about ``1/(2 rho)``, stays below the
#: largest double (``5e307`` at this bound).
VARIANCE_RHO_MIN = 1e-308


def log_normalizer(rho) -> np.ndarray:
    r"""Log of the discrete Gaussian normaliser, :math:`\log Z(\rho) = \log \sum_k e^{-\rho k^2}`.

    Parameters
    ----------
    rho : array_like of float (rho > 0)
        Privacy parameter; the distribution has scale ``1/(2 rho)``.

    Returns
    -------
    ndarray
        ``log Z(rho)``, accurate to about 1e-15 relative for every ``rho`` in [1e-6, 1e4]
        (checked against mpmath's Jacobi theta function in the tests).

    Notes
    -----
    For ``rho > pi``: :math:`\log Z = \operatorname{log1p}(2\sum_{k=1}^{6} e^{-\rho k^2})`.
    For ``rho <= pi``: :math:`\log Z = \tfrac12\log(\pi/\rho) +
    \operatorname{log1p}(2\sum_{n=1}^{6} e^{-\pi^2 n^2/\rho})` (Poisson summation).
    """
    return dg_log_normalizer(check_rho(rho, "rho"))


def rho_of_das_sigma_sq(sigma_sq) -> np.ndarray:
    r"""The rho of this module's DG(0, 1/(2 rho)) that is the 2020 DAS's noise of parameter sigma^2.

    The Census DAS writes the discrete Gaussian as
    :math:`P[X = x] \propto e^{-x^2 / (2\sigma^2)}` (``RationalDiscreteGaussianMechanism`` in
    ``source/programs/engine/primitives.py`` of
    ``uscensusbureau/DAS_2020_Redistricting_Production_Code``,
    :math:`\sigma^2 = 1/\text{inverse\_scale}`); this module writes
    :math:`e^{-\rho x^2}`. They are the same distribution when

    .. math:: \rho = \frac{1}{2\sigma^2}.

    This is a change of parametrisation, not of privacy accounting: the DAS's query rho is
    :math:`1/\sigma^2` under its replace-one neighbours (``docs/noise-conventions.md``), twice
    the rho returned here.

    Parameters
    ----------
    sigma_sq : array_like of float (0 < sigma_sq <= 1e100, and rho = 1/(2 sigma_sq) <= 1e100)
        The DAS's variance parameter (its released ``variance`` column for sigma^2 >= about 1,
        where the discrete Gaussian's variance equals sigma^2 to double precision).
    """
    sigma_sq = check_rho(sigma_sq, "sigma_sq")  # a finite number > 0 (and <= 1e100)
    return check_rho(1.0 / (2.0 * sigma_sq), "rho")


def logpmf(x, mu, rho) -> np.ndarray:
    r"""Log probability mass of DG(mu, 1/(2 rho)) at the integer ``x``.

    .. math:: \log P[X = x] = -\rho (x - \mu)^2 - \log Z(\rho)

    Parameters
    ----------
    x : array_like of int
        Value(s) in the support (all integers).
    mu : array_like of int
        Centre (the true count).
    rho : array_like of float (rho > 0)
        Privacy parameter.
    """
    x = check_count(x, "x")
    mu = check_count(mu, "mu")
    rho = check_rho(rho, "rho")
    return logpmf_kernel(x, mu, rho)


def logpmf_kernel(x: np.ndarray, mu: np.ndarray, rho: np.ndarray) -> np.ndarray:
    r"""Kernel of :func:`logpmf` for validated int64 ``x``, ``mu`` and float ``rho > 0``.

    .. math:: \log P[X = x] = -\rho (x - \mu)^2 - \log Z(\rho)
    """
    diff = (x - mu).astype(float)
    return -rho * diff**2 - dg_log_normalizer(rho)


def pmf(x, mu, rho) -> np.ndarray:
    """Probability mass of DG(mu, 1/(2 rho)) at ``x``: ``exp(logpmf(x, mu, rho))``."""
    return np.exp(logpmf(x, mu, rho))


def support_halfwidth(rho, tail_mass: float = DEFAULT_TAIL_MASS) -> np.ndarray:
    r"""Half-width ``K`` such that ``P[|X - mu| > K] < tail_mass`` for DG(mu, 1/(2 rho)).

    Uses the geometric bound on the tail terms (with :math:`Z \ge 1`)

    .. math::

        P[|X-\mu| > K] \le \frac{2 e^{-\rho (K+1)^2}}{1 - e^{-2\rho (K+1)}}
                       \le 2 e^{-\rho (K+1)^2} \Big(1 + \frac{1}{2 \rho (K+1)}\Big)

    and returns an integer ``K`` (conservative, from one fixed-point step of a decreasing
    map started below the root) for which the bound is below ``tail_mass``.

    Parameters
    ----------
    rho : array_like of float (rho > 0)
    tail_mass : float (0 < tail_mass < 1)
    """
    rho = check_rho(rho, "rho")
    if not (isinstance(tail_mass, (int, float, np.floating)) and 0 < tail_mass < 1):
        raise ValueError(f"tail_mass must lie in (0, 1) (allowed range: 0 < tail_mass < 1), "
                         f"got {tail_mass!r}")
    return support_halfwidth_kernel(rho, tail_mass)


def support_halfwidth_kernel(rho, tail_mass: float) -> np.ndarray:
    """Kernel of :func:`support_halfwidth` for validated ``rho > 0`` and ``0 < tail_mass < 1``.

    Raises
    ------
    ValueError
        If ``K + 1`` exceeds ``2**53`` (counts are exact integers only up to there), naming
        ``rho`` and the smallest ``rho`` that ``tail_mass`` allows.
    """
    k_plus_1 = _halfwidth_plus_one(rho, tail_mass)
    if np.any(~(k_plus_1 <= 2.0**53)):
        raise ValueError(
            f"rho = {float(np.min(rho))!r} is too small: the half-width of the release window "
            f"exceeds 2**53 (allowed range for tail_mass = {tail_mass:g}: rho >= "
            f"{smallest_window_rho(tail_mass):.3g})"
        )
    return np.ceil(k_plus_1).astype(np.int64)


def _halfwidth_plus_one(rho, tail_mass: float):
    """``K + 1`` of :func:`support_halfwidth_kernel` as a float (inf where it overflows)."""
    log_target = np.log(tail_mass / 2.0)
    # Solve rho (K+1)^2 >= -log_target + log(1 + 1/(2 rho (K+1))) by one fixed-point step.
    with np.errstate(over="ignore"):  # rho near 5e-324: inf, refused
        k_plus_1 = np.sqrt(-log_target / rho)
        return np.sqrt((-log_target + np.log1p(1.0 / (2.0 * rho * k_plus_1))) / rho)


def smallest_window_rho(tail_mass: float, factor: float = 1.0) -> float:
    r"""The smallest rho whose window :func:`support_halfwidth_kernel` accepts, to 3 digits.

    With ``factor``, the smallest rho for which ``rho / factor`` is accepted (a caller that
    sizes the window of ``rho / factor``).

    With :math:`L = -\log(\text{tail\_mass}/2)` the kernel's :math:`K + 1 = \sqrt{(L +
    \log(1 + 1/(2\rho k)))/\rho}`, :math:`k = \sqrt{L/\rho}`, decreases in rho and is
    :math:`2^{53}` at :math:`\rho = (L + \log(1 + 1/(2\sqrt{L\rho})))/2^{106}` (solved by
    fixed-point iteration: the log term barely moves). The root is rounded up to 3
    significant digits, and up again while the kernel refuses it, so the value stated in a
    refusal is accepted (``L/2^{105}``, the bound once stated, was 5.89e-31 at tail_mass
    8.3e-11, where the smallest accepted is 6.94e-31).
    """
    log_term = -np.log(tail_mass / 2.0)
    rho = log_term / 2.0**106
    for _ in range(8):
        rho = (log_term + np.log1p(1.0 / (2.0 * np.sqrt(log_term * rho)))) / 2.0**106
    rho *= factor
    unit = 10.0 ** (np.floor(np.log10(rho)) - 2)
    digits = np.ceil(rho / unit)
    while not _halfwidth_plus_one(digits * unit / factor, tail_mass) <= 2.0**53:
        digits += 1
    return float(digits * unit)


#: Most terms :func:`_log_tail_sum` holds at once (2**22 float64: 32 MiB per array).
TAIL_SUM_CELLS = 2**22


def _log_tail_sum(start: np.ndarray, rho: np.ndarray) -> np.ndarray:
    r"""``log sum_{k >= start} exp(-rho k^2)`` for integers ``start >= 0`` (unnormalised).

    .. math:: \sum_{k \ge a} e^{-\rho k^2} = e^{-\rho a^2} \sum_{i \ge 0} e^{-\rho (2 a i + i^2)}

    The inner sum has all exponents <= 0 with the largest (0) first, so ``log1p`` of the
    remaining terms is exact to rounding; it is truncated where the neglected terms are below
    1e-20 Z(rho), i.e. below 1e-14 of the first term for every rho >= 1e-6. Where one row
    has more terms than fit at once, :func:`_log_tail_sum_wide`.
    """
    start = start.astype(float)
    out = np.empty(np.broadcast_shapes(start.shape, rho.shape))
    start, rho = np.broadcast_to(start, out.shape).ravel(), np.broadcast_to(rho, out.shape).ravel()
    flat = out.reshape(-1)
    if not flat.size:
        return out
    widest = int(support_halfwidth_kernel(rho.min(), 1e-20)) + 2
    if widest > TAIL_SUM_CELLS:
        # one row's terms would not fit at once (rho near 1e-16 needs 6.5e7: a MemoryError
        # under 2 GiB): the closed form at start 0, blocks of terms elsewhere
        return _log_tail_sum_wide(start, rho, out)
    # rows per chunk: at most TAIL_SUM_CELLS terms held at once (a tiny rho has many terms)
    chunk = max(1, min(2048, TAIL_SUM_CELLS // widest))
    for lo in range(0, flat.size, chunk):
        a = start[lo : lo + chunk, None]
        r = rho[lo : lo + chunk, None]
        n_terms = int(support_halfwidth_kernel(r.min(), 1e-20)) + 2
        i = np.arange(1, n_terms + 1, dtype=float)
        rest = np.exp(-r * (2.0 * a * i + i**2)).sum(-1)
        flat[lo : lo + chunk] = -r[:, 0] * a[:, 0] ** 2 + np.log1p(rest)
    return out


def _log_tail_sum_wide(start: np.ndarray, rho: np.ndarray, out: np.ndarray) -> np.ndarray:
    r""":func:`_log_tail_sum` where a row has more than :data:`TAIL_SUM_CELLS` terms.

    At ``start = 0`` the sum is :math:`\sum_{k \ge 0} e^{-\rho k^2} = (Z(\rho) + 1)/2` exactly
    (symmetry: :math:`Z = 1 + 2 \sum_{k \ge 1}`), taken from :math:`\log Z`'s series with no
    terms summed; other rows sum their terms in blocks of at most :data:`TAIL_SUM_CELLS` cells.
    (Inputs whose rows fit keep the term-by-term path of :func:`_log_tail_sum`, so their values
    are unchanged to the last bit.)
    """
    flat = out.reshape(-1)
    zero = start == 0
    if zero.any():
        log_z = dg_log_normalizer(rho[zero])
        flat[zero] = log_z + np.log1p(np.exp(-log_z)) - np.log(2.0)
    for at in np.flatnonzero(~zero):
        a, r = start[at], rho[at]
        n_terms = int(support_halfwidth_kernel(r, 1e-20)) + 2
        rest = 0.0
        for first in range(1, n_terms + 1, TAIL_SUM_CELLS):
            i = np.arange(first, min(first + TAIL_SUM_CELLS, n_terms + 1), dtype=float)
            rest += np.exp(-r * (2.0 * a * i + i**2)).sum()
        flat[at] = -r * a**2 + np.log1p(rest)
    return out


def log_tail(start, rho) -> np.ndarray:
    r"""Log of the upper tail :math:`P[X - \mu \ge a]` of DG(mu, 1/(2 rho)) for ``a >= 0``.

    .. math:: \log P[X - \mu \ge a] = \log\sum_{k \ge a} e^{-\rho k^2} - \log Z(\rho)

    Accurate far into the tail (no cancellation): ``a = 1e4`` at ``rho = 1`` gives about
    ``-1e8``, not ``-inf``.

    Parameters
    ----------
    start : array_like of int (start >= 0)
    rho : array_like of float (rho > 0)
    """
    start = check_count(start, "start", minimum=0)
    rho = check_rho(rho, "rho")
    return log_tail_kernel(start, rho)


def log_tail_kernel(start: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Kernel of :func:`log_tail` for validated int64 ``start >= 0`` and float ``rho > 0``."""
    return _log_tail_sum(start, rho) - dg_log_normalizer(rho)


def logcdf(x, mu, rho) -> np.ndarray:
    r"""Log of the cumulative distribution :math:`\log P[X \le x]` of DG(mu, 1/(2 rho)).

    With :math:`j = x - \mu`: for ``j < 0`` this is the lower tail
    :math:`\log P[X-\mu \ge -j]` (by symmetry); for ``j >= 0`` it is
    :math:`\log(1 - P[X - \mu \ge j + 1])`, computed with ``log1p(-exp(.))``.
    """
    x = check_count(x, "x")
    mu = check_count(mu, "mu")
    rho = check_rho(rho, "rho")
    return logcdf_kernel(x, mu, rho)


def logcdf_kernel(x: np.ndarray, mu: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Kernel of :func:`logcdf` for validated values (each tail from the exact tail sum)."""
    j = x - mu
    lower = log_tail_kernel(np.maximum(-j, 0), rho)
    upper = log_tail_kernel(np.maximum(j + 1, 0), rho)
    with np.errstate(divide="ignore"):
        return np.where(j < 0, lower, np.log1p(-np.exp(upper)))


def logsf(x, mu, rho) -> np.ndarray:
    r"""Log of the survival function :math:`\log P[X > x]`, i.e. ``logcdf(-x - 1)`` mirrored.

    .. math:: P[X > x] = P[X \le 2\mu - x - 1] \quad\text{(symmetry about } \mu)
    """
    x = check_count(x, "x")
    mu = check_count(mu, "mu")
    rho = check_rho(rho, "rho")
    return logsf_kernel(x, mu, rho)


def logsf_kernel(x: np.ndarray, mu: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Kernel of :func:`logsf` for validated values: ``logcdf_kernel(2 mu - x - 1, mu, rho)``."""
    return logcdf_kernel(2 * mu - x - 1, mu, rho)


def cdf(x, mu, rho) -> np.ndarray:
    r"""Cumulative distribution :math:`P[X \le x]` of DG(mu, 1/(2 rho))."""
    return np.exp(logcdf(x, mu, rho))


def sf(x, mu, rho) -> np.ndarray:
    r"""Survival function :math:`P[X > x]` of DG(mu, 1/(2 rho)), accurate in the upper tail."""
    return np.exp(logsf(x, mu, rho))


def variance(rho) -> np.ndarray:
    r"""Variance of DG(mu, 1/(2 rho)), :math:`\sigma^2 = -\mathrm{d}\log Z/\mathrm{d}\rho`.

    For ``rho > pi`` the direct sum
    :math:`\sigma^2 = 2\sum_{k\ge1} k^2 e^{-\rho k^2} / Z(\rho)`; for ``rho <= pi`` the
    Poisson-summation form

    .. math::

        \sigma^2 = \frac{1}{2\rho} - \frac{2\sum_{n\ge1} (\pi^2 n^2/\rho^2)\, e^{-\pi^2 n^2/\rho}}
                                         {1 + 2\sum_{n\ge1} e^{-\pi^2 n^2/\rho}},

    which shows directly that :math:`\sigma^2 < s = 1/(2\rho)` and that the gap shrinks like
    :math:`2\pi^2 e^{-\pi^2/\rho}/\rho^2` (supplement S2).
    """
    rho = check_rho(rho, "rho")
    if np.any(rho < VARIANCE_RHO_MIN):
        raise ValueError(
            f"rho must be >= {VARIANCE_RHO_MIN:.3g} for the variance (about 1/(2 rho), beyond "
            f"the largest double below; allowed range: {VARIANCE_RHO_MIN:.3g} <= rho < inf), "
            f"got {float(np.min(rho))!r}"
        )
    r = rho[..., None]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        terms = np.exp(-r * _K**2)
        direct = 2.0 * (_K**2 * terms).sum(-1) / (1.0 + 2.0 * terms.sum(-1))
        dual = np.exp(-(np.pi**2) * _K**2 / r)
        # A term whose exponential underflows is 0 (not inf * 0 = NaN when r**2 underflows).
        weighted = np.where(dual > 0, (np.pi**2 * _K**2 / r**2) * dual, 0.0)
        theta = 1.0 / (2.0 * rho) - 2.0 * weighted.sum(-1) / (1.0 + 2.0 * dual.sum(-1))
    return np.where(rho > np.pi, direct, theta)
