r"""Kernels of the adversary who does not know everyone: log-odds, release sums, decision rule.

The model (:mod:`dprisk.models.unknown_others`): :math:`X_1 = m + B_t + K`,
:math:`B_t \sim \mathrm{Bernoulli}(p)`, :math:`K \sim \mathrm{Binomial}(n, q)`, release
:math:`x^* = X_1 + \eta`, :math:`\eta \sim \mathrm{DG}(0, 1/(2\rho))`. With :math:`f` the DG
pmf and :math:`w_k = P[K = k]`,

.. math::

    P[B_t = 1 \mid x^*] \propto p \sum_k w_k f(x^* - m - 1 - k), \qquad
    P[B_t = 0 \mid x^*] \propto (1 - p) \sum_k w_k f(x^* - m - k).

Each sum is written relative to its ``k = 0`` term. With :math:`\ell(x, c) = \log f(x - c)`,
:math:`\ell(x, c + k) - \ell(x, c) = \sum_{j < k} \tau(x - c - j)`, where
:math:`\tau(o) = \rho (2 o - 1)` is the one-step log-likelihood ratio of the single level
(:func:`dprisk.inference.single_level.closed_form_kernels.odds_term`). So the posterior log-odds are

.. math::

    L(x^*) = \operatorname{logit}(p) + \tau(x^* - m) + S(x^* - m - 1) - S(x^* - m), \qquad
    S(o) = \log \sum_k w_k\, e^{\sum_{j < k} \tau(o - j)},

and for ``n = 0`` (``S = 0``) they are the single-level log-odds bit for bit.

These kernels take validated values (a :class:`~dprisk.models.unknown_others.UnknownOthers`,
``rho > 0``, ``0 < p < 1``, int64 counts) and never check them again; the public entry points
of :mod:`dprisk.inference.unknown_others.closed_form` validate once and call them.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.single_level import closed_form_kernels as single_level_kernels
from dprisk.inference.single_level.closed_form_kernels import (
    MAX_HALFWIDTH,
    TAIL_RELATIVE,
    odds_term,
)
from dprisk.models.mechanism.discrete_gaussian import (
    logcdf_kernel,
    logpmf_kernel,
    logsf_kernel,
    support_halfwidth_kernel,
)
from dprisk.models.numerics import libm_log_expit as log_expit
from dprisk.models.numerics import logit, logsumexp
from dprisk.models.unknown_others import UnknownOthers

__all__ = [
    "decision_threshold",
    "log_marginal_posterior",
    "log_p_correct",
    "log_posterior_odds",
    "truth_log_weights",
]

#: Elements of one temporary matrix (releases x (n + 1) weights).
_CHUNK = 2_000_000


def _log_odds_flat(offset: np.ndarray, rho: np.ndarray, logit_p: np.ndarray,
                   log_w: np.ndarray) -> np.ndarray:
    """:math:`L` for 1-d arrays ``offset = x* - m`` (int64), ``rho``, ``logit(p)``."""
    single = logit_p + odds_term(offset.astype(float), rho)
    n = log_w.size - 1
    if n == 0:
        return single  # S = log(w_0 e^0) = 0 exactly: the single-level value, unchanged
    out = np.empty(offset.shape)
    step = max(1, _CHUNK // (n + 1))
    j = np.arange(n + 1, dtype=float)
    for lo in range(0, offset.size, step):
        o = offset[lo:lo + step, None].astype(float)
        terms = odds_term(o - j, rho[lo:lo + step, None])  # tau(o - j), j = 0..n
        zero = np.zeros((terms.shape[0], 1))
        cum_0 = np.concatenate([zero, np.cumsum(terms[:, :-1], axis=1)], axis=1)  # S(o)
        cum_1 = np.concatenate([zero, np.cumsum(terms[:, 1:], axis=1)], axis=1)  # S(o - 1)
        out[lo:lo + step] = logsumexp(log_w + cum_1) - logsumexp(log_w + cum_0)
    return single + out


def log_posterior_odds(x1_star: np.ndarray, rho: np.ndarray, p: np.ndarray, m: np.ndarray,
                       others: UnknownOthers) -> np.ndarray:
    r"""Posterior log-odds of :math:`B_t = 1`, broadcast over the array arguments.

    .. math::

        L(x^*) = \log\frac{p \sum_k w_k f(x^* - m - 1 - k)}{(1-p) \sum_k w_k f(x^* - m - k)}
    """
    offset, rho_b, p_b = np.broadcast_arrays(x1_star - m, rho, p)
    flat = _log_odds_flat(offset.ravel(), rho_b.ravel().astype(float),
                          logit(p_b.ravel().astype(float)), others.log_weights())
    return flat.reshape(offset.shape)


def truth_log_weights(others: UnknownOthers, true_others: int | None) -> np.ndarray:
    r"""Log weights of the true :math:`K`: the adversary's binomial, or a point mass.

    ``true_others = None`` averages over :math:`K \sim \mathrm{Binomial}(n, q)`; an integer
    ``k`` states the truth :math:`K = k` (``0 <= k <= n``, checked by the caller).
    """
    if true_others is None:
        return others.log_weights()
    out = np.full(others.n + 1, -np.inf)
    out[true_others] = 0.0
    return out


def _halfwidth(rho: float, p: float) -> int:
    """Release grid half-width around each centre: neglected mass below ``TAIL_RELATIVE p``."""
    tail = max(TAIL_RELATIVE * p, 1e-300)
    halfwidth = int(support_halfwidth_kernel(np.asarray(rho), tail))
    if halfwidth > MAX_HALFWIDTH:
        raise ValueError(
            f"rho = {rho!r} is too small for the exact sum over releases (grid half-width "
            f"above {MAX_HALFWIDTH}); allowed range: rho > about 2e-14"
        )
    return halfwidth


def _log_marginal_one(rho: float, p: float, others: UnknownOthers,
                      truth_w: np.ndarray) -> float:
    """``log sum_{x*} expit(L(x*)) P[x* | B_t = 1, truth]`` for one ``(rho, p)``."""
    halfwidth = _halfwidth(rho, p)
    support = np.flatnonzero(np.isfinite(truth_w))
    k_lo, k_hi = int(support[0]), int(support[-1])
    offsets = np.arange(1 + k_lo - halfwidth, 2 + k_hi + halfwidth, dtype=np.int64)  # x* - m
    centres = 1 + np.arange(k_lo, k_hi + 1, dtype=np.int64)
    log_w = others.log_weights()
    step = max(1, _CHUNK // centres.size)
    parts = []
    for lo in range(0, offsets.size, step):
        o = offsets[lo:lo + step]
        rho_o = np.full(o.shape, rho)
        log_post = log_expit(_log_odds_flat(o, rho_o, np.full(o.shape, logit(p)), log_w))
        log_release = logsumexp(truth_w[k_lo:k_hi + 1]
                                + logpmf_kernel(o[:, None], centres[None, :], rho))
        parts.append(logsumexp(log_post + log_release))
    return float(logsumexp(np.asarray(parts)))


def log_marginal_posterior(rho: np.ndarray, p: np.ndarray, others: UnknownOthers,
                           truth_w: np.ndarray) -> np.ndarray:
    r"""Log marginal posterior of the truth :math:`B_t = 1`, broadcast over ``rho`` and ``p``.

    .. math::

        \log \sum_{x^*} P[B_t = 1 \mid x^*] \sum_k v_k\, f(x^* - m - 1 - k)

    with :math:`v` the truth's weights (:func:`truth_log_weights`), summed on the grid
    :math:`1 + k_{\min} - H \le x^* - m \le 1 + k_{\max} + H`, ``H`` the half-width whose
    neglected DG mass is below ``TAIL_RELATIVE * p`` (so the neglected part of the result is
    below ``1e-16 p``). One grid per ``(rho, p)`` pair, each evaluated in vectorised blocks.
    """
    rho_b, p_b = np.broadcast_arrays(np.asarray(rho, dtype=float), np.asarray(p, dtype=float))
    flat = [_log_marginal_one(float(r), float(q), others, truth_w)
            for r, q in zip(rho_b.ravel(), p_b.ravel(), strict=True)]
    return np.asarray(flat).reshape(rho_b.shape)


def decision_threshold(rho: np.ndarray, p: np.ndarray, m: np.ndarray,
                       others: UnknownOthers) -> np.ndarray:
    r"""Smallest release with :math:`L(x^*) > 0` (decide :math:`B_t = 1` iff :math:`x^* \ge` it).

    :math:`L` increases with :math:`x^*` (the binomial and the DG are log-concave, so is
    their convolution) and lies between the single-level log-odds with known counts
    :math:`m + k_{\max}` and :math:`m + k_{\min}` (an average of one-step ratios
    :math:`\tau(x^* - m - k)` over the support of :math:`K`). The threshold is therefore in
    :math:`[\tilde x_s + k_{\min}, \tilde x_s + k_{\max}]`, :math:`\tilde x_s` the single-level
    threshold (:func:`dprisk.inference.single_level.closed_form_kernels.decision_threshold`), and
    is found
    by bisection on :math:`L`; for ``n = 0`` it is :math:`\tilde x_s`. Returns int64.
    """
    rho_b, p_b, m_b = np.broadcast_arrays(np.asarray(rho, dtype=float),
                                          np.asarray(p, dtype=float), m)
    base = single_level_kernels.decision_threshold(rho_b, p_b, np.zeros(rho_b.shape, np.int64))
    k_lo, k_hi = others.support()
    lo, hi = (base + k_lo).ravel(), (base + k_hi).ravel()
    rho_f, logit_f, log_w = rho_b.ravel(), logit(p_b.ravel()), others.log_weights()
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        positive = _log_odds_flat(mid, rho_f, logit_f, log_w) > 0
        hi = np.where(positive, mid, hi)
        lo = np.where(positive, lo, mid + 1)
    return m_b + hi.reshape(rho_b.shape)


def log_p_correct(rho: np.ndarray, p: np.ndarray, others: UnknownOthers,
                  truth_w: np.ndarray, target: int = 1) -> np.ndarray:
    r"""Log probability that the 0-1-loss decision is correct at the truth :math:`B_t = b`.

    .. math::

        P[\hat B_t = 1 \mid B_t = 1] = \sum_k v_k\, P[\eta \ge \tilde x^* - m - 1 - k],
        \qquad
        P[\hat B_t = 0 \mid B_t = 0] = \sum_k v_k\, P[\eta \le \tilde x^* - 1 - m - k]

    with :math:`v` the truth's weights; each tail from the exact DG survival function or cdf
    (:func:`dprisk.models.mechanism.discrete_gaussian.logsf_kernel`, ``logcdf_kernel``), no
    truncated
    sum.
    """
    rho_b, p_b = np.broadcast_arrays(np.asarray(rho, dtype=float), np.asarray(p, dtype=float))
    threshold = decision_threshold(rho_b, p_b, np.zeros(rho_b.shape, np.int64), others)
    centres = target + np.arange(others.n + 1, dtype=np.int64)
    keep = np.isfinite(truth_w)
    tail = logsf_kernel if target == 1 else logcdf_kernel
    log_tail = tail(threshold[..., None] - 1, centres[keep], rho_b[..., None])
    return logsumexp(truth_w[keep] + log_tail)
