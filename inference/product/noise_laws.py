r"""The noise laws of the product's exact enumeration (DG tails, difference and parent laws).

Split from :mod:`dprisk.inference.product.exact` (which re-exports these names): the discrete
Gaussian's log pmf and tails on a window, the law of the noise difference of the d other blocks
in closed form (``O(d)`` per grid point), and the block group's law under an invariant.
"""

from __future__ import annotations

import numpy as np

from dprisk.models.mechanism.discrete_gaussian import log_tail_kernel, support_halfwidth_kernel
from dprisk.models.numerics import dg_log_normalizer

__all__ = ["difference_law", "noise_log_pmf", "noise_tail", "noise_tails", "parent_law",
           "parent_size"]


def noise_tail(start, rho: float) -> np.ndarray:
    """``P[J >= start]`` for ``J ~ DG(0, 1/(2 rho))`` and integers ``start`` (below 0 as 0)."""
    start = np.asarray(start, dtype=np.int64)
    return np.exp(log_tail_kernel(np.maximum(start, 0), np.asarray(rho)))


def noise_log_pmf(values: np.ndarray, rho: float) -> np.ndarray:
    """``log phi(x) = -rho x^2 - log Z(rho)`` of ``DG(0, 1/(2 rho))`` at int64 ``values``."""
    return -rho * values.astype(float) ** 2 - dg_log_normalizer(np.asarray(rho))


def noise_tails(low: int, high: int, rho: float) -> np.ndarray:
    """``P[J >= s]`` for every integer ``s`` in ``[low, high]`` (``low >= 0``), in one pass.

    The probabilities of ``low .. high + W`` summed from the far end (a reversed cumulative
    sum of positive terms, smallest first), plus the exact tail beyond ``high + W`` (``W``: the
    half-width whose tail is below 1e-30): ``O(high - low + W)`` time and memory, where
    :func:`noise_tail` at each start costs ``O(W)`` apiece (minutes at rho1 = 1e-7). The
    sequential sum's rounding (relative ``n`` x 1.1e-16 at most) is added, so the result
    bounds the tail from above.
    """
    width = int(support_halfwidth_kernel(rho, 1e-30)) + 1
    values = np.arange(low, high + width + 1, dtype=np.int64)
    pmf = np.exp(noise_log_pmf(values, rho))
    tails = np.cumsum(pmf[::-1])[::-1] + float(noise_tail(high + width + 1, rho))
    return tails[: high - low + 1] * (1.0 + values.size * 1.2e-16)


def _difference_neglect(phi0: np.ndarray, e0: np.ndarray, rho1: float, d: int, k0: int,
                        half: int) -> float:
    """Neglected mass of the truncation ``|e0| <= K0``, ``|e_i - e0| <= D`` (module notes).

    ``t(e0) = P[e_1 >= D + 1 - e0] + P[e_1 >= D + 1 + e0]`` for every ``|e0| <= K0`` from one
    pass of :func:`noise_tails` over the starts ``D + 1 - K0 .. D + 1 + K0`` (``D >= K0``).
    """
    low = half + 1 - k0
    tails = noise_tails(low, half + 1 + k0, rho1)
    t = tails[half + 1 - e0 - low] + tails[half + 1 + e0 - low]
    inside = float(np.sum(phi0 * -np.expm1(d * np.log1p(-t))))
    return 2.0 * float(noise_tail(k0 + 1, rho1)) + inside


def difference_law(rho1: float, d: int, tail_mass: float):
    r"""Law :math:`Q(\delta)` of :math:`\delta_i = e_i - e_0` (``i = 1..d``) on a box.

    The sum over :math:`e_0` has a closed form: with :math:`\delta_0 = 0`,
    :math:`S = \sum_i \delta_i` and :math:`n = d + 1`,
    :math:`\sum_{i=0}^{d} (e_0 + \delta_i)^2 = n (e_0 + S/n)^2 + (n |\delta|^2 - S^2)/n`, so

    .. math::

        Q(\delta) = Z^{-n}\, e^{-\rho_1 (n |\delta|^2 - S^2)/n}\, T_{S \bmod n}, \qquad
        T_r = \sum_{e \in \mathbb{Z}} e^{-\rho_1 n (e + r/n)^2}

    (shifting :math:`e_0` by :math:`\lfloor S/n \rfloor` leaves the residue ``r``). The
    quadratic form is computed in exact integers and each :math:`T_r` over a window whose
    left-out terms are below 1e-30 of it, so ``Q`` costs ``O(d)`` per grid point
    and no ``(e_0, \delta)`` table: the time and memory are those of the grid alone (the
    direct sum over :math:`|e_0| \le K_0` held a :math:`(2K_0 + 1) \times (2D + 1)^d`
    table: 1.55 GiB at rho1 = 1e-6, d = 1).

    Returns
    -------
    q : ndarray of float, shape ``(2D+1,) * d``
        :math:`Q` at :math:`\delta \in [-D, D]^d` (axis ``i`` holds :math:`\delta_{i+1} + D`),
        the sum over every :math:`e_0`.
    half : int
        ``D``.
    neglected : float
        An upper bound of the probability left out (module notes: the bound of the truncated
        sum, which left out more), at most ``tail_mass``.
    """
    k0 = int(support_halfwidth_kernel(rho1, tail_mass / 2.0))
    e0 = np.arange(-k0, k0 + 1, dtype=np.int64)
    phi0 = np.exp(noise_log_pmf(e0, rho1))
    half = max(k0, int(support_halfwidth_kernel(rho1 / 2.0, tail_mass / (2.0 * d))))
    while _difference_neglect(phi0, e0, rho1, d, k0, half) > tail_mass:
        half += 1
    neglected = _difference_neglect(phi0, e0, rho1, d, k0, half)
    n = d + 1
    # T_r, r = 0..d: the terms exp(-rho1 n (e + r/n)^2) beyond |e| <= window sum to < 1e-30
    # of T_r (a relative error far below the float64 rounding of Q)
    window = int(support_halfwidth_kernel(rho1 * n, 1e-30)) + 1
    e = np.arange(-window, window + 1, dtype=float)
    log_t = np.array([np.logaddexp.reduce(-rho1 * n * (e + r / n) ** 2) for r in range(n)])
    delta = np.arange(-half, half + 1, dtype=np.int64)
    grids = np.meshgrid(*([delta] * d), indexing="ij", sparse=True)
    total = sum(grids)  # S, broadcast to the grid
    squares = sum(g * g for g in grids)
    quadratic = (n * squares - total * total).astype(float) / n  # exact integers, then / n
    log_q = -rho1 * quadratic + log_t[np.mod(total, n)] - n * float(dg_log_normalizer(
        np.asarray(rho1)))
    return np.exp(log_q), half, neglected


def parent_size(rho2: float, totals: tuple[int, int], invariant: str, tail_mass: float) -> int:
    """Number of parent values :func:`parent_law` returns (known before it allocates)."""
    if invariant == "block-group":
        return 2
    k2 = int(support_halfwidth_kernel(rho2, tail_mass))
    return max(totals) + k2 + 1 - max(0, min(totals) - k2)


def parent_law(rho2: float, totals: tuple[int, int], invariant: str, tail_mass: float):
    r"""Law of the product's parent :math:`\tilde x_2` under both hypotheses.

    ``totals`` are the block-group counts :math:`x_2` under ``k = m`` and ``m + 1``. With
    ``"none"``: :math:`P[\tilde x_2 = 0] = P[e' \le -x_2]` and
    :math:`P[\tilde x_2 = s] = \phi_2(s - x_2)` for :math:`1 \le s \le \max x_2 + K_2`;
    values below :math:`\min x_2 - K_2` (possible only when that is above 0) are left out
    with the lower tail :math:`P[e' < -K_2]` (counted in ``neglected``).

    Returns
    -------
    values : ndarray of int64, shape (n,)
    prob : ndarray of float, shape (2, n)
    neglected : float
    """
    if invariant == "block-group":
        values = np.array(totals, dtype=np.int64)
        return values, np.eye(2), 0.0
    k2 = int(support_halfwidth_kernel(rho2, tail_mass))
    low = max(0, min(totals) - k2)  # below: e' < -K2 (with x2* <= 0), neglected
    values = np.arange(low, max(totals) + k2 + 1, dtype=np.int64)
    rows = []
    for x2 in totals:
        prob = np.exp(noise_log_pmf(values - x2, rho2))
        if low == 0:
            prob[0] = float(noise_tail(x2, rho2)) if x2 >= 1 else 1.0 - float(noise_tail(1, rho2))
        rows.append(prob)
    # e' > K2 under the larger total (less otherwise); and e' < -K2 when the values start > 0
    neglected = float(noise_tail(k2 + 1, rho2)) * (1 if low == 0 else 2)
    return values, np.stack(rows), neglected


# --------------------------------------------------------------------------- tables
