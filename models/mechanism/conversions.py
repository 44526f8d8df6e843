r"""Conversion between rho-zero-concentrated DP and (epsilon, delta)-DP.

Bun & Steinke (2016), Proposition 1.3 (the paper's Theorem 1): a mechanism that satisfies
rho-zCDP satisfies (epsilon, delta)-DP for every delta > 0 with

.. math:: \varepsilon(\rho, \delta) = \rho + 2\sqrt{\rho \log(1/\delta)}.

The map is increasing in rho, so it has an inverse. Writing :math:`L = \log(1/\delta)` and
:math:`s = \sqrt{\rho}`, the equation :math:`s^2 + 2\sqrt{L}\,s - \varepsilon = 0` has the
positive root :math:`s = \sqrt{L + \varepsilon} - \sqrt{L} = \varepsilon/(\sqrt{L+\varepsilon}
+ \sqrt{L})` (the second form avoids cancellation when epsilon << L), hence
:math:`\rho(\varepsilon, \delta) = s^2`.
"""

from __future__ import annotations

import numpy as np

from dprisk.models.checks import check_probability, check_rho

__all__ = ["RHO_RESULT_MIN", "dp_to_zcdp", "zcdp_to_dp"]

#: Smallest rho :func:`dp_to_zcdp` returns: the smallest normal double (full precision).
RHO_RESULT_MIN = float(np.finfo(float).tiny)


def zcdp_to_dp(rho, delta) -> np.ndarray:
    r"""Epsilon of the (epsilon, delta)-DP guarantee implied by rho-zCDP.

    .. math:: \varepsilon = \rho + 2\sqrt{\rho \log(1/\delta)}

    Parameters
    ----------
    rho : array_like of float (0 < rho <= 1e100)
        zCDP parameter of the release.
    delta : array_like of float (0 < delta < 1)
        The delta of the (epsilon, delta)-DP guarantee.

    Returns
    -------
    numpy.float64 or ndarray
        epsilon (> rho), broadcast over ``rho`` and ``delta``.

    Raises
    ------
    ValueError
        If epsilon would exceed the largest double, or an input is outside its range.

    Examples
    --------
    The 2020 Census total, rho = 2.56 and delta = 1e-10, gives epsilon = 17.91528...
    (the paper quotes 17.91, the value cut off at two decimals)
    """
    rho = check_rho(rho, "rho")
    delta = check_probability(delta, "delta")
    log_inv_delta = -np.log(delta)
    with np.errstate(over="ignore"):
        product = rho * log_inv_delta
        # rho log(1/delta) overflows for rho near the largest double and loses digits when
        # subnormal (rho near 5e-324): split the root there (the product form keeps every
        # other result bit-identical).
        exact_product = np.isfinite(product) & (product >= np.finfo(float).tiny)
        root = np.where(exact_product, np.sqrt(product), np.sqrt(rho) * np.sqrt(log_inv_delta))
        epsilon = rho + 2.0 * root
    if not np.all(np.isfinite(epsilon)):
        raise ValueError(
            f"rho = {float(np.max(rho))!r} gives an epsilon beyond the largest double "
            f"(allowed range: rho + 2 sqrt(rho log(1/delta)) < 1.8e308)"
        )
    return epsilon


def dp_to_zcdp(epsilon, delta) -> np.ndarray:
    r"""The largest rho whose zCDP guarantee converts to (epsilon, delta)-DP (inverse map).

    .. math:: \rho = \Big(\frac{\varepsilon}{\sqrt{\log(1/\delta) + \varepsilon}
                                  + \sqrt{\log(1/\delta)}}\Big)^2

    Parameters
    ----------
    epsilon : array_like of float (0 < epsilon <= 1e100, and rho >= 2.2e-308: see Raises)
        The epsilon of the (epsilon, delta)-DP guarantee.
    delta : array_like of float (0 < delta < 1)
        Its delta.

    Returns
    -------
    numpy.float64 or ndarray
        rho (> 0), broadcast over ``epsilon`` and ``delta``;
        ``zcdp_to_dp(dp_to_zcdp(epsilon, delta), delta)`` is at most ``epsilon`` (a rho
        whose evaluated epsilon rounds above it is moved down, one float at a time) and
        equal to it up to rounding.

    Raises
    ------
    ValueError
        When rho is below the smallest normal double (2.2e-308, where it would lose digits
        or round to 0): epsilon below about :math:`2\sqrt{2.2\cdot 10^{-308} \log(1/\delta)}`
        (about 1.5e-153 at delta = 1e-10); the message states the smallest epsilon.
    """
    epsilon = check_rho(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    log_inv_delta = -np.log(delta)
    root = epsilon / (np.sqrt(log_inv_delta + epsilon) + np.sqrt(log_inv_delta))
    rho = root**2
    for _ in range(8):  # the closed form rounds to either side: keep the side at most epsilon
        above = (rho > 0.0) & (zcdp_to_dp(np.where(rho > 0.0, rho, 1.0), delta) > epsilon)
        if not np.any(above):
            break
        rho = np.where(above, np.nextafter(rho, 0.0), rho)
    too_small = rho < RHO_RESULT_MIN
    if np.any(too_small):
        at = np.argmax(np.broadcast_to(too_small, np.shape(rho)).ravel()) if np.ndim(rho) else 0
        eps_at = float(np.broadcast_to(epsilon, np.shape(rho)).ravel()[at])
        delta_at = float(np.broadcast_to(delta, np.shape(rho)).ravel()[at])
        smallest = float(zcdp_to_dp(RHO_RESULT_MIN, delta_at))
        raise ValueError(
            f"epsilon = {eps_at!r} with delta = {delta_at!r} gives rho = epsilon**2 / "
            f"(4 log(1/delta)) below the smallest normal double {RHO_RESULT_MIN:.3g}; allowed "
            f"range: epsilon >= {smallest * 1.01:.3g} at this delta (and epsilon <= 1e100)"
        )
    return rho
