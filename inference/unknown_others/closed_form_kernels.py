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

import functools

import numpy as np

from dprisk.inference.single_level import closed_form_kernels as single_level_kernels
from dprisk.inference.single_level.closed_form_kernels import (
    MAX_HALFWIDTH,
    TAIL_RELATIVE,
    odds_term,
)
from dprisk.inference.single_level.replace_one import TIE_RELATIVE
from dprisk.models.mechanism.discrete_gaussian import (
    logcdf_kernel,
    logsf_kernel,
    support_halfwidth_kernel,
)
from dprisk.models.numerics import LIBM_MAX_SIZE, dg_log_normalizer, logit, logsumexp
from dprisk.models.numerics import libm_log_expit as log_expit
from dprisk.models.unknown_others import UnknownOthers

__all__ = [
    "convolution_window",
    "decision_threshold",
    "log_convolution",
    "log_marginal_posterior",
    "log_p_correct",
    "log_posterior_odds",
    "marginal_terms",
    "tail_terms",
    "truth_log_weights",
]

#: Elements of one temporary matrix (releases x window of weights).
_CHUNK = 2_000_000
#: Log of the relative size below which a term of the sum over ``k`` is left out: each left
#: out term is below :math:`e^{-60}` of the largest, all of them together below
#: :math:`(n + 1) e^{-60} < 10^{-22}` of the sum.
_LOG_NEGLIGIBLE = 60.0
#: Widest span of releases (over the brackets of one rho) that :func:`decision_threshold`
#: tabulates at once rather than evaluating at each step of its bisection.
_TABLE_SPAN = 4096


def convolution_window(log_w: np.ndarray, rho: float) -> tuple[int, int, int]:
    r"""``(k_lo, k_hi, W)``: the weights' support and the half-width of the terms that count.

    :math:`g_y(k) = \log w_k - \rho (y - k)^2` is concave in ``k`` (the binomial is
    log-concave) with second differences at most :math:`-c`, :math:`c = 2\rho +
    \min_k(-\Delta^2 \log w_k)` (half the measured minimum, for rounding). From its maximiser
    :math:`k^*` a concave sequence falls by at least :math:`c\,j(j-1)/2` within ``j`` steps,
    so every term beyond :math:`k^* \pm (W - 1)` is below :math:`e^{-60}/(n + 1)` of the
    largest once :math:`c (W-1)(W-2)/2 \ge 60 + \log(n + 1)` (one step more covers a
    maximiser located one step off by rounding). ``W`` covers the whole support when that is
    narrower.
    """
    support = np.flatnonzero(np.isfinite(log_w))
    k_lo, k_hi = int(support[0]), int(support[-1])
    size = k_hi - k_lo + 1
    curvature = 2.0 * rho
    if size >= 3:
        curvature += max(0.0, 0.5 * float(np.min(-np.diff(log_w[k_lo:k_hi + 1], 2))))
    level = _LOG_NEGLIGIBLE + np.log(size)
    half = int(np.ceil((1.0 + np.sqrt(1.0 + 8.0 * level / curvature)) / 2.0)) + 2
    return k_lo, k_hi, min(half, size)


def log_convolution(y: np.ndarray, log_w: np.ndarray, rho: float) -> np.ndarray:
    r""":math:`T(y) = \log \sum_k w_k e^{-\rho (y - k)^2}` for a flat int64 array ``y``.

    The unnormalised log pmf of :math:`K + \eta` (``K`` with weights ``w``, :math:`\eta \sim
    \mathrm{DG}(0, 1/(2\rho))`): :math:`T(y) - \log Z(\rho) = \log P[K + \eta = y]`. Summed
    over the ``2W + 1`` terms around the maximiser :math:`k^*(y)` only
    (:func:`convolution_window`; the rest is below :math:`10^{-22}` of the sum):
    :math:`k^*(y)` is the number of ``k`` whose forward difference
    :math:`b_k + 2\rho y` of :math:`g_y` is positive,
    :math:`b_k = \log w_{k+1} - \log w_k - \rho (2k + 1)` (decreasing in ``k``).
    """
    k_lo, k_hi, half = convolution_window(log_w, rho)
    a = log_w[k_lo:k_hi + 1]
    size = a.size
    width = min(2 * half + 1, size)
    out = np.empty(y.shape)
    if width < size:
        k = np.arange(k_lo, k_hi, dtype=float)
        rising = -(np.diff(a) - rho * (2.0 * k + 1.0))  # -b_k, increasing
    step = max(1, _CHUNK // width)
    lanes = np.arange(width)
    for lo in range(0, y.size, step):
        part = y[lo:lo + step]
        if width < size:
            top = np.searchsorted(rising, 2.0 * rho * part.astype(float), side="left")
            first = np.clip(top - half, 0, size - width)
            index = first[:, None] + lanes
        else:
            index = np.broadcast_to(lanes, (part.size, width))
        distance = (part[:, None] - (k_lo + index)).astype(float)
        out[lo:lo + step] = logsumexp(a[index] - rho * distance ** 2)
    return out


def _log_odds_flat(offset: np.ndarray, rho: np.ndarray, logit_p: np.ndarray,
                   log_w: np.ndarray, *, with_scale: bool = False):
    r""":math:`L` for 1-d arrays ``offset = x* - m`` (int64), ``rho``, ``logit(p)``.

    For ``n > 0``, :math:`L = \operatorname{logit} p + T(o - 1) - T(o)` with
    :math:`T` of :func:`log_convolution` (equal to :math:`\tau(o) + S(o - 1) - S(o)`): each
    :math:`T` is summed around its largest term, so no large terms cancel. (The sums
    :math:`S`, relative to the ``k = 0`` term, hold terms of size :math:`\rho k^2` whose
    difference is :math:`L`: at rho1 = 1e10 and ``n = 10`` the posterior came out 5e-6 off,
    at 1e100 0 for 0.4545, and the decisions of ``dprisk marginal`` wrong from about 1e4.)

    With ``with_scale``, also the magnitude its rounding is relative to (:func:`_decides_c`):
    :math:`|\operatorname{logit} p| + |T(o - 1)| + |T(o)|` (for ``n = 0``,
    :math:`|\operatorname{logit} p| + |\tau(o)|`).
    """
    n = log_w.size - 1
    if n == 0:  # S = log(w_0 e^0) = 0 exactly: the single-level value, unchanged
        term = odds_term(offset.astype(float), rho)
        single = logit_p + term
        return (single, np.abs(logit_p) + np.abs(term)) if with_scale else single
    out = np.empty(offset.shape)
    scale = np.abs(logit_p).astype(float)
    for value in np.unique(rho):
        at = np.flatnonzero(rho == value)
        _log_odds_at(at, offset[at], functools.partial(log_convolution, log_w=log_w,
                                                       rho=float(value)), logit_p, out, scale)
    return (out, scale) if with_scale else out


def _log_odds_at(at: np.ndarray, offset: np.ndarray, log_t, logit_p: np.ndarray,
                 out: np.ndarray, scale: np.ndarray) -> None:
    r"""``out[at] = logit p + (T(o - 1) - T(o))`` and ``scale[at] += |T(o - 1)| + |T(o)|``.

    ``log_t`` gives :math:`T` at an int64 array of offsets ``o`` (``offset``, the entries
    ``at``): :func:`log_convolution` itself (:func:`_log_odds_flat`) or a table of its
    values (:func:`_tabled_decisions`), the same operations in the same order either way.
    """
    before, here = log_t(offset - 1), log_t(offset)
    out[at] = logit_p[at] + (before - here)
    scale[at] += np.abs(before) + np.abs(here)


def _decides_c(offset: np.ndarray, rho: np.ndarray, logit_p: np.ndarray,
               log_w: np.ndarray) -> np.ndarray:
    r"""The rule's decision at releases ``offset = x* - m``: :math:`L > 0`, ties going to 0.

    A log-odds within :data:`dprisk.inference.single_level.replace_one.TIE_RELATIVE` of 0,
    relative to the magnitude of its terms (:func:`_log_odds_flat`'s scale), is a tie: the
    posterior is 1/2 and the rule (decide ``c`` iff the posterior exceeds 1/2) decides 0.
    Ties are exact, not rare: at ``p = q = 1/2`` with ``n`` odd the two sums hold the same
    terms in reverse order (the binomial and the DG are symmetric) at
    :math:`x^* - m = (n + 1)/2`, and the computed log-odds there came out as large as
    0.7 ulp of that magnitude (n up to 3001, rho from 1e-3 to 100), positive or negative.
    """
    log_odds, scale = _log_odds_flat(offset, rho, logit_p, log_w, with_scale=True)
    return log_odds > TIE_RELATIVE * scale


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
        single_level_kernels.refuse_release_grid(rho, p)
    return halfwidth


def _log_marginal_one(rho: float, p: float, others: UnknownOthers,
                      truth_w: np.ndarray) -> float:
    """``log sum_{x*} expit(L(x*)) P[x* | B_t = 1, truth]`` for one ``(rho, p)``.

    Both the log-odds and the release pmf come from one table of :func:`log_convolution`
    over the grid (the truth's own table when its weights differ from the adversary's).
    """
    halfwidth = _halfwidth(rho, p)
    support = np.flatnonzero(np.isfinite(truth_w))
    k_lo, k_hi = int(support[0]), int(support[-1])
    offsets = np.arange(1 + k_lo - halfwidth, 2 + k_hi + halfwidth, dtype=np.int64)  # x* - m
    log_w = others.log_weights()
    y = np.arange(offsets[0] - 1, offsets[-1] + 1, dtype=np.int64)  # o - 1 and o
    if log_w.size == 1:  # n = 0: the single-level log-odds, bit for bit
        log_odds = _log_odds_flat(offsets, np.full(offsets.shape, rho),
                                  np.full(offsets.shape, logit(p)), log_w)
    else:  # tau(o) + S(o - 1) - S(o) = T(o - 1) - T(o): the ratio of the release pmfs
        table = log_convolution(y, log_w, rho)
        log_odds = logit(p) + (table[:-1] - table[1:])
    if log_w.size > 1 and np.array_equal(truth_w, log_w):
        truth_table = table
    elif support.size == 1:  # a point mass: the DG pmf itself
        truth_table = -rho * (y - k_lo).astype(float) ** 2
    else:
        truth_table = log_convolution(y, truth_w, rho)
    log_release = truth_table[:-1] - dg_log_normalizer(rho)  # log P[x* = m + o], o - 1 = K + eta
    log_post = np.concatenate([log_expit(log_odds[lo:lo + LIBM_MAX_SIZE])
                               for lo in range(0, log_odds.size, LIBM_MAX_SIZE)])
    return float(logsumexp(log_post + log_release))


def marginal_terms(rho: np.ndarray, p: np.ndarray, others: UnknownOthers,
                   truth_w: np.ndarray) -> float:
    """Terms of the sums behind :func:`log_marginal_posterior`: grid points x window widths."""
    rho_b, p_b = np.broadcast_arrays(np.asarray(rho, dtype=float), np.asarray(p, dtype=float))
    log_w = others.log_weights()
    support = np.flatnonzero(np.isfinite(truth_w))
    total = 0.0
    for r, q in zip(rho_b.ravel(), p_b.ravel(), strict=True):
        halfwidth = _halfwidth(float(r), float(q))
        points = 2 * halfwidth + 2 + int(support[-1] - support[0])
        width = 2 * convolution_window(log_w, float(r))[2] + 1
        total += points * (width if np.array_equal(truth_w, log_w) else 2 * width)
    return total


def tail_terms(rho: np.ndarray, p: np.ndarray, truth_w: np.ndarray) -> float:
    r"""Terms of the exact DG tail sums behind one :func:`log_p_correct`, over ``rho`` x ``p``.

    Each ``(rho, p)`` pair takes one tail per possible count ``k`` of the others (the finite
    ``truth_w``), and each tail (:func:`dprisk.models.mechanism.discrete_gaussian.logcdf_kernel`)
    sums both of its sides term by term, :math:`h(\rho) + 2` terms each,
    :math:`h(\rho) \approx \sqrt{\log(10^{20}) / \rho}` the half-width of
    :func:`dprisk.models.mechanism.discrete_gaussian.support_halfwidth_kernel` at ``1e-20``:
    ``pairs x kept k x 2 (h + 2)`` (about ``1.4e6`` a tail at ``rho = 1e-10``).
    """
    rho_b, _ = np.broadcast_arrays(np.asarray(rho, dtype=float), np.asarray(p, dtype=float))
    per_tail = 2.0 * (support_halfwidth_kernel(rho_b.ravel(), 1e-20).astype(float) + 2.0)
    return float(np.count_nonzero(np.isfinite(truth_w)) * per_tail.sum())


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
    by bisection on :math:`L`, a tie (posterior 1/2) deciding 0 (:func:`_decides_c`); for
    ``n = 0`` it is :math:`\tilde x_s`. Returns int64. The last few thresholds at ``m = 0``
    are kept (:func:`_thresholds_at_zero`, keyed on the bytes of ``rho`` and ``p``, their
    shape and ``others``): P[correct] at ``target = 1`` and ``0`` (:func:`log_p_correct`)
    share one bisection.
    """
    rho_b, p_b, m_b = np.broadcast_arrays(np.asarray(rho, dtype=float),
                                          np.asarray(p, dtype=float), m)
    at_zero = _thresholds_at_zero(np.ascontiguousarray(rho_b).tobytes(),
                                  np.ascontiguousarray(p_b).tobytes(), rho_b.shape, others)
    return m_b + at_zero


@functools.lru_cache(maxsize=8)
def _thresholds_at_zero(rho_bytes: bytes, p_bytes: bytes, shape: tuple[int, ...],
                        others: UnknownOthers) -> np.ndarray:
    """:func:`decision_threshold` at ``m = 0`` from the float64 bytes of ``rho`` and ``p``."""
    rho_b = np.frombuffer(rho_bytes, dtype=float).reshape(shape)
    p_b = np.frombuffer(p_bytes, dtype=float).reshape(shape)
    base = single_level_kernels.decision_threshold(rho_b, p_b, np.zeros(shape, np.int64))
    k_lo, k_hi = others.support()
    lo, hi = (base + k_lo).ravel(), (base + k_hi).ravel()
    rho_f, logit_f, log_w = rho_b.ravel(), logit(p_b.ravel()), others.log_weights()
    decides = _tabled_decisions(lo, hi, rho_f, logit_f, log_w)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        positive = decides(mid)
        hi = np.where(positive, mid, hi)
        lo = np.where(positive, lo, mid + 1)
    out = hi.reshape(shape)
    out.flags.writeable = False  # shared by the callers of the cache
    return out


def _tabled_decisions(lo: np.ndarray, hi: np.ndarray, rho: np.ndarray, logit_p: np.ndarray,
                      log_w: np.ndarray):
    r""":func:`_decides_c` for the bisection of :func:`decision_threshold`, bit for bit.

    For each ``rho`` whose brackets :math:`[lo, hi]` span at most :data:`_TABLE_SPAN`
    releases together, :math:`T(y)` (:func:`log_convolution`, each value computed alone
    from its own window, so the same in any batch) is tabulated once on
    :math:`\min lo - 1 \le y \le \max hi` and every step of the bisection reads
    :math:`L = \operatorname{logit} p + (T(o - 1) - T(o))` and its scale
    :math:`|\operatorname{logit} p| + (|T(o - 1)| + |T(o)|)` from it (:func:`_log_odds_at`,
    as :func:`_log_odds_flat` does): one vectorised sum instead of two per rho and
    step. Wider brackets are evaluated step by step.
    """
    if log_w.size == 1 or not np.any(lo < hi):
        return lambda mid: _decides_c(mid, rho, logit_p, log_w)
    tables = []
    for value in np.unique(rho):
        at = np.flatnonzero(rho == value)
        first, last = int(lo[at].min()) - 1, int(hi[at].max())
        if last - first + 1 > _TABLE_SPAN:
            return lambda mid: _decides_c(mid, rho, logit_p, log_w)
        y = np.arange(first, last + 1, dtype=np.int64)
        tables.append((at, first, log_convolution(y, log_w, float(value))))

    def decides(mid: np.ndarray) -> np.ndarray:
        log_odds = np.empty(mid.shape)
        scale = np.abs(logit_p).astype(float)
        for at, first, table in tables:
            _log_odds_at(at, mid[at], lambda o, table=table, first=first: table[o - first],
                         logit_p, log_odds, scale)
        return log_odds > TIE_RELATIVE * scale

    return decides


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
    sum. Capped at log 1 = 0: where every tail is about 1 the rounding of the binomial's log
    weights (which sum to 1 only to a few ulp) put the sum up to 6e-15 above 1.
    """
    rho_b, p_b = np.broadcast_arrays(np.asarray(rho, dtype=float), np.asarray(p, dtype=float))
    threshold = decision_threshold(rho_b, p_b, np.zeros(rho_b.shape, np.int64), others)
    centres = target + np.arange(others.n + 1, dtype=np.int64)
    keep = np.isfinite(truth_w)
    tail = logsf_kernel if target == 1 else logcdf_kernel
    log_tail = tail(threshold[..., None] - 1, centres[keep], rho_b[..., None])
    return np.minimum(logsumexp(truth_w[keep] + log_tail), 0.0)  # a probability (docstring)
