r"""Kernels of the single-level adversary: posterior log-odds, marginal sum, decision rule.

These functions take validated values (``rho > 0`` float arrays, ``0 < p < 1`` float arrays,
int64 release values and ``m = known >= 0``) and do not re-check them; the public entry
points of :mod:`dprisk.inference.single_level.closed_form`,
:mod:`dprisk.inference.nested.unique_levels` and
:mod:`dprisk.inference.single_level.sequential` validate once and call them.

Everything follows from one level's log-likelihood ratio: with release :math:`x^*` and known
count ``m``,

.. math::

    \log\frac{e^{-\rho (x^* - m - 1)^2}}{e^{-\rho (x^* - m)^2}} = \rho\,\bigl(2 (x^* - m) - 1\bigr),

so the posterior log-odds of :math:`X_1 = m+1` after releases :math:`x_1^*, \ldots, x_\ell^*`
is :math:`\operatorname{logit}(p) + \sum_i \rho_i (2 (x_i^* - m) - 1)`.
"""

from __future__ import annotations

import numpy as np

from dprisk.models.mechanism.discrete_gaussian import log_tail_kernel, support_halfwidth_kernel
from dprisk.models.numerics import dg_log_normalizer, logit, logsumexp, probability_ratio
from dprisk.models.numerics import libm_log_expit as log_expit

__all__ = [
    "MAX_HALFWIDTH",
    "TAIL_RELATIVE",
    "cumulative_log_odds",
    "decision_threshold",
    "log_marginal_posterior",
    "log_posterior_odds",
    "marginal_posterior_and_risk",
    "odds_term",
    "p_correct",
]

#: Neglected relative contribution to the marginal risk R from truncating the release grid.
#: Since :math:`R \ge 1` and :math:`R' \le 1/p`, a grid whose neglected probability is below
#: ``TAIL_RELATIVE * p`` changes ``R`` (and the marginal posterior) by less than this, relatively.
TAIL_RELATIVE = 1e-16
#: Largest release grid (half-width) the exact single-level sum accepts (rho >= 2.07e-14
#: at p = 1/2, 2.83e-13 at p = 1e-300: :func:`refuse_release_grid`).
MAX_HALFWIDTH = 50_000_000
#: Elements of one temporary matrix.
_CHUNK = 2_000_000


def odds_term(offset, rho):
    r"""One level's log-likelihood ratio :math:`\rho (2 (x^* - m) - 1)`, ``offset = x^* - m``.

    Every function that compares a log-odds with 0 uses this expression, so decisions made
    by the decision rule and by the posterior agree exactly (also at float ties).
    """
    return rho * (2.0 * offset - 1.0)


def log_posterior_odds(x1_star: np.ndarray, rho: np.ndarray, p: np.ndarray,
                       m: np.ndarray) -> np.ndarray:
    r"""Posterior log-odds :math:`L = \operatorname{logit}(p) + \rho (2 (x_1^* - m) - 1)`."""
    return logit(p) + odds_term((x1_star - m).astype(float), rho)


def cumulative_log_odds(x: np.ndarray, rhos: np.ndarray, p: np.ndarray,
                        m: np.ndarray) -> np.ndarray:
    r"""Log-odds after each level (last axis): ``logit(p) + (((0 + t_1) + t_2) + ... + t_i)``.

    .. math:: L_i = \operatorname{logit}(p) + \sum_{k \le i} \rho_k \bigl(2 (x_k^* - m) - 1\bigr)
    """
    logit_p = logit(p)[..., None]
    offsets = (x - np.asarray(m)[..., None]).astype(float)
    terms = odds_term(offsets, rhos)
    partial = np.zeros(terms.shape[:-1])
    out = []
    for i in range(terms.shape[-1]):
        partial = partial + terms[..., i]
        out.append(partial)
    return logit_p + np.stack(out, axis=-1)


def refuse_release_grid(rho: float, p: float) -> None:
    r"""Refuse ``rho``: its release grid at ``p`` passes :data:`MAX_HALFWIDTH`, naming the bound.

    The grid neglects less than ``TAIL_RELATIVE * p`` (not below 1e-300), so the smallest
    ``rho`` depends on ``p``: with :math:`L = -\log(\text{tail}/2)`, :math:`K + 1 \approx
    \sqrt{L/\rho}`: 2.07e-14 at ``p = 1/2``, 2.83e-13 at ``p = 1e-300``. The bound
    stated is rounded up to 3 digits and up again until the grid fits, so it is accepted.

    Raises
    ------
    ValueError
        Always: ``rho``, ``p`` and the smallest ``rho`` allowed at that ``p``.
    """
    tail = max(TAIL_RELATIVE * p, 1e-300)
    smallest = float(f"{-np.log(tail / 2.0) / MAX_HALFWIDTH**2:.2e}")
    while support_halfwidth_kernel(np.asarray(smallest), tail) > MAX_HALFWIDTH:
        smallest = float(f"{smallest * 1.01:.2e}")
    raise ValueError(
        f"rho = {rho!r} is too small for the exact sum over releases at p = {p:g} (grid "
        f"half-width above {MAX_HALFWIDTH}); allowed range at this p: rho >= {smallest:.3g}")


def _log_marginal_rows(rho: np.ndarray, logit_p: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``log sum_j expit(logit_p + rho (2 j + 1)) pmf(j)`` for 1-d arrays of (rho, p) rows.

    Row ``i`` needs offsets ``|j| <= K_i`` (neglected probability below ``TAIL_RELATIVE * p_i``).
    Rows are sorted by ``K`` and processed in blocks sharing the largest grid of the block
    (extra terms are exact, merely tiny), so one vectorised pass serves many ``rho``.
    """
    tail = np.maximum(TAIL_RELATIVE * p, 1e-300)
    halfwidth = np.empty(rho.shape, dtype=np.int64)
    for value in np.unique(tail):  # the half-width takes one tail mass at a time
        rows = tail == value
        halfwidth[rows] = support_halfwidth_kernel(rho[rows], float(value))
    if np.any(halfwidth > MAX_HALFWIDTH):
        worst = np.argmax(halfwidth)
        refuse_release_grid(float(rho[worst]), float(p[worst]))
    order = np.argsort(halfwidth, kind="stable")
    log_z = dg_log_normalizer(rho)
    out = np.empty(rho.shape)
    lo = 0
    while lo < order.size:
        hi = lo + 1
        # grow the block while it stays within the element budget at its largest grid
        while hi < order.size and (hi - lo + 1) * (2 * int(halfwidth[order[hi]]) + 1) <= _CHUNK:
            hi += 1
        rows = order[lo:hi]
        k_max = int(halfwidth[rows[-1]])
        offset = np.arange(-k_max, k_max + 1, dtype=float)[None, :]
        r = rho[rows, None]
        log_odds = logit_p[rows, None] + odds_term(offset + 1.0, r)
        log_w = -r * offset**2 - log_z[rows, None]
        out[rows] = logsumexp(log_expit(log_odds) + log_w)
        lo = hi
    return out


def marginal_posterior_and_risk(rho: np.ndarray, p: np.ndarray):
    r"""``(log M, M, R)``: the marginal posterior in log and linear form and :math:`R = M/p`.

    Each is held to its exact range :math:`p \le M \le 1`, :math:`1 \le R \le 1/p`
    (Cauchy–Schwarz): the grid's sum of expit-weighted probabilities is rounded, and at a tiny
    rho it put :math:`M` two ulps below ``p`` (rho = 1e-12, p = 0.999: R = 0.9999999999999998).
    :math:`R` is the one-rounding quotient of :func:`dprisk.models.numerics.probability_ratio`.
    """
    log_p = np.log(p)
    log_marginal = np.maximum(log_marginal_posterior(rho, p), log_p)
    marginal = np.maximum(np.exp(log_marginal), p)
    risk = np.maximum(probability_ratio(marginal, log_marginal, p, log_p), 1.0)
    return log_marginal, marginal, risk


def log_marginal_posterior(rho: np.ndarray, p: np.ndarray) -> np.ndarray:
    r"""``log sum_{x*} expit(L(x*)) P[X_1^* = x^* | x_1 = m+1]`` over the truncated grid.

    .. math::

        \log \sum_{|x^* - m - 1| \le K(\rho, p)} \operatorname{expit}\bigl(L(x^*)\bigr)\,
            P[X_1^* = x^* \mid x_1 = m+1]

    broadcast over ``rho`` and ``p``; rows are sorted by grid size and evaluated in blocks
    that share a grid.
    """
    rho_b, p_b = np.broadcast_arrays(rho, p)
    flat_rho, flat_p = rho_b.ravel(), p_b.ravel()
    out = _log_marginal_rows(flat_rho, logit(flat_p), flat_p)
    return out.reshape(rho_b.shape)


def decision_threshold(rho: np.ndarray, p: np.ndarray, m: np.ndarray) -> np.ndarray:
    r"""Smallest release with :math:`L(x_1^*) > 0`: the closed form corrected at float ties.

    .. math::

        \tilde x_1^* = m + \Bigl\lfloor \tfrac12 \bigl(1 - \operatorname{logit}(p)/\rho\bigr)
                       \Bigr\rfloor + 1,

    then ``L`` is evaluated at the neighbours with :func:`odds_term`, so float ties are decided
    exactly as by the posterior. Returns int64.
    """
    logit_p = logit(p)
    with np.errstate(over="ignore"):
        boundary = 0.5 * (1.0 - logit_p / rho)
    if np.any(~np.isfinite(boundary) | (np.abs(boundary) > 2.0**52)):
        raise ValueError(
            "rho is too small for this p: the decision threshold exceeds 2**52 in magnitude "
            "(allowed range: |logit(p)| / rho < 2**53)"
        )
    offset = np.floor(boundary) + 1.0
    for _ in range(4):
        too_high = logit_p + odds_term(offset - 1.0, rho) > 0
        too_low = ~(logit_p + odds_term(offset, rho) > 0)
        if not (np.any(too_high) or np.any(too_low)):
            break
        offset = offset - too_high + too_low
    else:  # pragma: no cover - the closed form is off by at most one
        raise RuntimeError("decision threshold correction did not converge")
    return m + offset.astype(np.int64)


def p_correct(rho: np.ndarray, p: np.ndarray, m: np.ndarray) -> np.ndarray:
    r""":math:`P[\eta_1 \ge a]`, :math:`a = \tilde x_1^* - m - 1`, from the exact DG tail.

    For ``a >= 0`` it is ``exp(log_tail(a))``, for ``a < 0`` it is
    ``-expm1(log_tail(1 - a))`` (symmetry of the noise).
    """
    threshold = decision_threshold(rho, p, m)
    a = threshold - m - 1
    start = np.where(a >= 0, a, 1 - a)
    log_tail = log_tail_kernel(start, np.broadcast_to(rho, start.shape))
    return np.where(a >= 0, np.exp(log_tail), -np.expm1(log_tail))
