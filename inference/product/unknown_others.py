r"""Product and noisy measurements when the adversary does not know the other blocks (exact).

The adversary of :mod:`dprisk.inference.product.exact` knows every other block's count. Here
it knows only a prior over them, built from two stated choices:

* a prior :math:`\pi(Y)` over the others' **total** :math:`Y = \sum_i y_i` on
  :math:`\{0, \dots, U\}` (any weights: the paper's truncated uniform X2 prior shifted by the
  target's block, a point mass (the adversary knows the total), or any other);
* the **split law**: given the total, the counts of the ``d`` blocks are
  :math:`\mathrm{Multinomial}(Y; 1/d, \dots, 1/d)` (every person of the other blocks lives in
  each of them with equal probability, independently), so
  :math:`\pi(y) = \pi(Y)\, Y! / (d^Y \prod_i y_i!)`.

The total is independent of the target (:math:`k`). The likelihood of a release ``w`` is the
mixture :math:`L_k(w) = \sum_y \pi(y) P[w \mid k, y]`, for the product (the exact tables of
:func:`dprisk.inference.product.exact.product_table` for each configuration, merged on equal
product values) and for the noisy measurements (now the others' measurements matter: the
full vector :math:`(b_0^*, b_1^*, \dots, b_d^*, x_2^*)` on a grid covering every
configuration's :math:`K`-window, truncation as in the exact module). The risk measures of
:func:`dprisk.inference.product.exact.risk_measures` then average over the truth drawn from
the adversary's own prior (the convention of :mod:`dprisk.inference.unknown_others`), and
the data-processing bound still holds (the product is a randomised function of the
measurements for every configuration).

Exact only where enumerable: the noisy grid has about :math:`(U + 2K)^{d+1}` points per
configuration; requests above :data:`MAX_NOISY_CELLS` configuration-cells are refused
(naming ``d``); a Monte Carlo path for larger trees is
:func:`dprisk.inference.product.monte_carlo.product_likelihood_mc` (one product value).
"""

from __future__ import annotations

import itertools
from math import comb, factorial

import numpy as np

from dprisk.inference.product.exact import (
    TAIL_MASS,
    ProductRisk,
    ReleaseTable,
    check_product_inputs,
    product_table,
    risk_measures,
)
from dprisk.models.checks import check_positive_int, check_probability
from dprisk.models.mechanism.discrete_gaussian import support_halfwidth_kernel
from dprisk.models.numerics import dg_log_normalizer
from dprisk.models.scenario import scalar_value

__all__ = ["MAX_NOISY_CELLS", "product_risk_unknown_others", "split_prior"]

#: Largest (configuration x noisy grid point) count of one exact noisy mixture.
MAX_NOISY_CELLS = 40_000_000


def split_prior(total_prior, d) -> list[tuple[tuple[int, ...], float]]:
    r"""Prior of the others' counts from a prior of their total and the equal multinomial split.

    Parameters
    ----------
    total_prior : sequence of float (>= 0, not all 0)
        Weights of :math:`Y = 0, 1, \dots, U` (normalised here).
    d : int (d >= 1)
        Number of other blocks.

    Returns
    -------
    list of (counts, probability)
        Every configuration :math:`(y_1, \dots, y_d)` of positive probability.
    """
    d = check_positive_int(d, "d")
    weights = _total_weights(total_prior)
    out = []
    for total, weight in enumerate(weights):
        if weight == 0:
            continue
        # stars and bars: the C(total + d - 1, d - 1) compositions, in lexicographic order
        for bars in itertools.combinations(range(total + d - 1), d - 1):
            edges = (-1, *bars, total + d - 1)
            y = tuple(edges[i + 1] - edges[i] - 1 for i in range(d))
            ways = factorial(total) / np.prod([factorial(c) for c in y]) / d**total
            out.append((y, float(weight * ways)))
    return out


def _total_weights(total_prior) -> np.ndarray:
    """``total_prior`` normalised, after the checks of :func:`split_prior` (naming it)."""
    message = ("total_prior must be a non-empty list of finite weights >= 0 (of Y = 0..U), "
               f"not all 0, got {total_prior!r}")
    if isinstance(total_prior, (str, bytes)):
        raise ValueError(message)
    try:
        weights = np.asarray(total_prior, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if weights.ndim != 1 or weights.size == 0 or not np.all(np.isfinite(weights)) \
            or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError(message)
    return weights / weights.sum()


def _count_configs(weights: np.ndarray, d: int) -> int:
    """How many configurations :func:`split_prior` lists: ``sum_Y C(Y + d - 1, d - 1)``."""
    return sum(comb(int(total) + d - 1, d - 1) for total in np.flatnonzero(weights))


def _merge(outputs: list[np.ndarray], likelihoods: list[np.ndarray]) -> tuple:
    rows = np.concatenate(outputs)
    lik = np.concatenate(likelihoods, axis=1)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    merged = np.stack([np.bincount(inverse.ravel(), weights=lik[h], minlength=len(unique))
                       for h in (0, 1)])
    return unique, merged


def _noisy_axes(rho1, rho2, n_configs: int, m, d, upper) -> list[np.ndarray]:
    """The noisy grid's axes; ValueError naming ``d`` above :data:`MAX_NOISY_CELLS`."""
    k1 = int(support_halfwidth_kernel(rho1, TAIL_MASS / (2 * (d + 1))))
    k2 = int(support_halfwidth_kernel(rho2, TAIL_MASS / 2))
    sizes = [2 * k1 + 2] + [upper + 2 * k1 + 1] * d + [upper + 2 * k2 + 2]
    cells = float(np.prod(sizes, dtype=float)) * float(n_configs)
    if cells > MAX_NOISY_CELLS:
        raise ValueError(f"d = {d} other blocks with totals up to {upper} need {cells:.3g} "
                         f"noisy-grid cells (allowed: at most MAX_NOISY_CELLS = "
                         f"{MAX_NOISY_CELLS:.3g}); use fewer blocks, a smaller U or larger rho")
    return [np.arange(m - k1, m + 1 + k1 + 1)] + \
        [np.arange(-k1, upper + k1 + 1)] * d + [np.arange(m - k2, m + 1 + upper + k2 + 1)]


def _noisy_tie_rtol(rho1, rho2, d, upper, n_configs: int) -> float:
    r"""Relative rounding bound of :func:`_noisy_mixture`'s likelihoods, twice (two compared).

    A likelihood sums ``n_configs`` positive terms, each a product of exponentials of
    :math:`d + 2` log-pmfs :math:`-\rho x^2 - \log Z` no larger in magnitude than
    :math:`A = \max_\ell \rho_\ell (U + K_\ell + 1)^2 + |\log Z_\ell|` on the grid (``U`` the
    largest total, :math:`K_\ell` the window half-widths): relative error at most
    :math:`\epsilon (4 (d + 2)(A + 1) + n + 4)`. Releases whose two sides agree within twice
    that are ties: with the others' total known (a point mass) and equal rhos at ``p = 1/2``
    these are exact ties, which the sums' rounding decided either way (measured up to 140
    ulp apart).
    """
    k1 = int(support_halfwidth_kernel(rho1, TAIL_MASS / (2 * (d + 1))))
    k2 = int(support_halfwidth_kernel(rho2, TAIL_MASS / 2))
    largest = max(rho * (upper + k + 1) ** 2 + abs(float(dg_log_normalizer(np.asarray(rho))))
                  for rho, k in ((rho1, k1), (rho2, k2)))
    eps = float(np.finfo(float).eps)
    return 2.0 * eps * (4.0 * (d + 2) * (largest + 1.0) + n_configs + 4.0)


def _noisy_mixture(rho1, rho2, configs, m, d, upper) -> ReleaseTable:
    """The full noisy vector's mixture likelihood (module notes)."""
    axes = _noisy_axes(rho1, rho2, len(configs), m, d, upper)
    log_z1, log_z2 = dg_log_normalizer(np.asarray(rho1)), dg_log_normalizer(np.asarray(rho2))

    def log_phi(x, rho, log_z):
        return -rho * x.astype(float) ** 2 - log_z

    grid = np.meshgrid(*axes, indexing="ij")
    lik = np.zeros((2, grid[0].size))
    for h, k in enumerate((m, m + 1)):
        total = np.zeros(grid[0].shape)
        for y, weight in configs:
            log_l = log_phi(grid[-1] - k - sum(y), rho2, log_z2)
            for i in range(d):
                log_l = log_l + log_phi(grid[1 + i] - y[i], rho1, log_z1)
            total += weight * np.exp(log_l)
        lik[h] = (total * np.exp(log_phi(grid[0] - k, rho1, log_z1))).ravel()
    outputs = np.column_stack([g.ravel() for g in grid])
    # union bound: d + 1 block windows, each missing < TAIL_MASS / (2 (d + 1)), and x2*'s
    return ReleaseTable(outputs, lik, TAIL_MASS)


def product_risk_unknown_others(rho1, rho2, d, total_prior, m=0, p=0.5,
                                invariant="none") -> ProductRisk:
    r"""Risk of the product and of the noisy measurements when the others are unknown (exact).

    Parameters
    ----------
    rho1, rho2 : float (> 0)
        zCDP parameters of every block count and of the block-group count.
    d : int (d >= 1)
        Number of other blocks.
    total_prior : sequence of float (>= 0, not all 0)
        Prior weights of the others' total :math:`Y = 0..U` (normalised; split equally
        among the ``d`` blocks, multinomially).
    m : int (m >= 0), default 0
        The target block's count without the target.
    p : float (0 < p < 1), default 0.5
        The adversary's prior :math:`P[k = m+1]`.
    invariant : {"none", "block-group"}, default "none"
        Whether the block-group total is held exact.

    Returns
    -------
    ProductRisk
        As :func:`dprisk.inference.product.exact.product_risk`, averaged over the others'
        counts drawn from the adversary's prior.
    """
    d = check_positive_int(d, "d")
    weights = _total_weights(total_prior)
    rho1, rho2, _, m, invariant = check_product_inputs(rho1, rho2, [0] * d, m, invariant)
    p = float(scalar_value(check_probability(p, "p"), "p"))
    upper = int(np.flatnonzero(weights)[-1])
    # refuse before any work: the configurations are counted, not listed
    _noisy_axes(rho1, rho2, _count_configs(weights, d), m, d, upper)
    configs = split_prior(weights, d)
    outputs, likelihoods, neglected = [], [], 0.0
    for y, weight in configs:
        table = product_table(rho1, rho2, list(y), m, invariant)
        outputs.append(table.outputs)
        likelihoods.append(weight * table.likelihood)
        neglected = max(neglected, table.neglected_mass)
    _, product_lik = _merge(outputs, likelihoods)
    noisy = _noisy_mixture(rho1, rho2, configs, m, d, upper)
    a = risk_measures(product_lik, p)
    b = risk_measures(noisy.likelihood, p, _noisy_tie_rtol(rho1, rho2, d, upper, len(configs)))
    return ProductRisk(a.marginal_posterior, a.p_correct, a.accuracy, b.marginal_posterior,
                       b.p_correct, b.accuracy, max(neglected, noisy.neglected_mass))
