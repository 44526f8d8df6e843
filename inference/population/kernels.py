r"""Per-person posteriors of a person's category from their group's noisy cells.

A person of block :math:`b` with (hhgq, votingage) group :math:`g` and category :math:`t`
(126 categories) is seen through the group's 126 noisy cells
:math:`y_c = x_c + \eta_c`, :math:`\eta_c` iid discrete Gaussian with pmf
:math:`\propto \exp(-\eta^2/(2\sigma^2))` (the DAS's convention; :math:`\sigma^2` from the
data). :math:`n_c` is the true count of cell :math:`c`, :math:`n = \sum_c n_c` the group's,
:math:`\pi` the adversary's prior on the target's category.

**Informed adversary** (knows every other person's record: the others' counts
:math:`m_c = n_c - [c = t]`). Under hypothesis :math:`t' = c` the cell :math:`c` holds
:math:`m_c + 1` and every other cell :math:`c'` holds :math:`m_{c'}`; the normalising
constants and every factor common to all hypotheses cancel, leaving

.. math::

    P(t' = c \mid y) \propto \pi_c
        \frac{e^{-(y_c - m_c - 1)^2/(2\sigma^2)}}{e^{-(y_c - m_c)^2/(2\sigma^2)}}
        = \pi_c \exp\Bigl(\frac{2(y_c - m_c) - 1}{2\sigma^2}\Bigr),

since :math:`(y - m)^2 - (y - m - 1)^2 = 2(y - m) - 1`. With :math:`m_c = n_c - [c = t]`,
:math:`P(t' = c \mid y) \propto \exp(a_c + [c = t]/\sigma^2)` where
:math:`a_c = \log\pi_c + (2(y_c - n_c) - 1)/(2\sigma^2)` is the group's and the bump
:math:`1/\sigma^2` is the person's: per person, one log-sum-exp update of the group's
(:func:`informed_posteriors`). In floating point the person's own score is not
:math:`a_t + 1/\sigma^2` but the expression every other hypothesis's score is, at
:math:`y_t - m_t = y_t - n_t + 1`. Two scores are equal in exact arithmetic only when the
priors are equal and so are the integers :math:`y_c - m_c`: else they differ by
:math:`\log(\pi_c/\pi_{c'}) + (r_c - r_{c'})/\sigma^2` (:math:`r = y - m`), a nonzero
rational when the priors are equal, the logarithm of a rational other than 1 (irrational)
plus a rational when not. Tied scores are thus made by the same operations on the same
numbers, hence the same float: the smallest index wins, as documented.

**Outsider** (knows :math:`n`; the others' counts independent,
:math:`M_c \sim \mathrm{Poisson}((n - 1)\pi_c)`; no one's category):

.. math::

    P(t' = c \mid y) \propto \pi_c \frac{L_c(1)}{L_c(0)}, \qquad
    L_c(\delta) = \sum_{m \ge 0} \mathrm{Pois}(m; \lambda_c)\,
                  e^{-(y_c - m - \delta)^2/(2\sigma^2)}, \quad \lambda_c = (n - 1)\pi_c,

(the likelihood :math:`\prod_{c'} L_{c'}([c' = c])`, divided by the hypothesis-free
:math:`\prod_{c'} L_{c'}(0)`). It depends on the group, not on the person: computed once
per group (:func:`outsider_posteriors`). The sum runs over a window of
:math:`2H + 1` consecutive :math:`m` around the mode of the summand
(:func:`poisson_gaussian_log_ratio`): the summand is log-concave in :math:`m` with
curvature at least :math:`1/\sigma^2` (and about :math:`1/m` from the Poisson factor), so
:math:`H \approx \min(\sigma, \sqrt{\hat m + 1})\sqrt{2 \ln 10^{18}}` covers it; the
neglected mass is bounded *a posteriori* from the window's edge terms and the ratio of the
last two (successive ratios of a log-concave sequence decrease, so the tail is
below a geometric series), and a cell whose bound exceeds :data:`NEGLECTED_RELATIVE`
(:math:`10^{-15}` of its sum) is summed again over a window twice as wide.

Rounding, not the neglected mass, sets the accuracy: the terms
:math:`m\log\lambda - \log m!` near the mode are about :math:`m\log m` in size, each
rounded to an ulp of that, so the log-ratio is good to a few ulps of :math:`m\log m` at the
count :math:`m`. The compiled twin (:mod:`~dprisk.inference.population.kernels_jit`: other
``lgamma``, other order of summation) agrees to as much, not to the bit: measured at most
1.1e-13 in a logit for counts up to 100, 1.4e-12 up to 1,000 and 1.5e-11 up to 10,000
(:math:`\sigma^2` from :math:`10^{-3}` to :math:`10^4`; at :math:`\sigma^2 = 10.09`:
1.4e-14, 1.1e-13, 1.8e-12), and both 2.8e-3 off an mpmath sum at a count of :math:`10^{12}`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dprisk.inference.population.categories import N_CATEGORIES
from dprisk.inference.population.variances import check_variance_argument

__all__ = [
    "NEGLECTED_RELATIVE",
    "InformedLogits",
    "informed_logits",
    "informed_posteriors",
    "kernel_path",
    "outsider_logits",
    "outsider_posteriors",
    "poisson_gaussian_log_ratio",
]

#: Largest neglected mass of an outsider's Poisson-Gaussian sum, relative to the sum.
NEGLECTED_RELATIVE = 1e-15
#: Cells summed at once (memory: cells x window x 8 bytes per temporary).
CHUNK_CELLS = 65_536


def _log_prior(prior: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(prior)


def _informed_scores(log_prior, residual, variance):
    r"""The informed score :math:`\log\pi_c + (2 r_c - 1)/(2\sigma^2)`, :math:`r_c = y_c - m_c`.

    One sequence of float operations for every hypothesis, the group's (:math:`m = n`) and
    the person's own (:math:`m_t = n_t - 1`): hypotheses whose prior and integer :math:`r`
    are equal get the same float, whatever the arrays' shapes and strides (each operation is
    rounded once, IEEE).
    """
    return log_prior + (2.0 * residual - 1.0) / (2.0 * variance)


class InformedLogits(NamedTuple):
    r"""The groups' informed logits and the parts a person's own score is made of.

    ``logits`` :math:`a_{gc} = \log\pi_{gc} + (2 r_{gc} - 1)/(2\sigma_g^2)`, from
    ``log_prior`` :math:`\log\pi_{gc}` and ``residual`` :math:`r_{gc} = y_{gc} - n_{gc}`
    (float64, exact: integers below :math:`2^{53}`), each (G, 126); ``variance``
    :math:`\sigma_g^2`, (G,).
    """

    logits: np.ndarray
    log_prior: np.ndarray
    residual: np.ndarray
    variance: np.ndarray


def informed_logits(noisy: np.ndarray, true: np.ndarray, prior: np.ndarray,
                    variance: np.ndarray) -> InformedLogits:
    r"""The groups' informed logits :math:`a_c = \log\pi_c + (2(y_c - n_c) - 1)/(2\sigma^2)`.

    Parameters
    ----------
    noisy, true : (G, 126) int arrays
        The groups' noisy cells :math:`y` and true counts :math:`n`.
    prior : (G, 126) float array
        :math:`\pi` of each group (rows sum to 1; zeros allowed: logit :math:`-\infty`).
    variance : (G,) float array (1e-4 <= variance <= 1e8)
        :math:`\sigma^2` of each group's cells (the range of
        :data:`~dprisk.inference.population.variances.VARIANCE_RANGE`).

    Returns
    -------
    InformedLogits
        The logits with their parts, for :func:`informed_posteriors`.
    """
    prior = np.asarray(prior, dtype=np.float64)
    variance = check_variance_argument(variance, shape=prior.shape[:1])
    log_prior = _log_prior(prior)
    residual = np.asarray(noisy, dtype=np.float64) - np.asarray(true, dtype=np.float64)
    return InformedLogits(_informed_scores(log_prior, residual, variance[:, None]),
                          log_prior, residual, variance)


def _top_two(logits: np.ndarray):
    """Per row: the first index of the largest value, that value, and the same among the rest."""
    rows = np.arange(logits.shape[0])
    first = np.argmax(logits, axis=1)
    first_value = logits[rows, first]
    rest = logits.copy()
    rest[rows, first] = -np.inf
    second = np.argmax(rest, axis=1)
    return first, first_value, second, rest[rows, second]


def informed_posteriors(groups: InformedLogits, person_group: np.ndarray,
                        person_category: np.ndarray, *earlier):
    r"""Each person's informed posterior from their group's logits (one pass over the persons).

    For a person of group :math:`g` and category :math:`t`, the group's logits :math:`a_{gc}`
    (:func:`informed_logits`) score every hypothesis :math:`c \ne t`; the person's own is
    :math:`u = \log\pi_{gt} + (2(r_{gt} + 1) - 1)/(2\sigma_g^2)` (:math:`= a_{gt} + b`,
    :math:`b = 1/\sigma_g^2`, but computed as the others are, so that ties are exact: module
    docstring). With :math:`s = \max_c a_{gc}` and :math:`S = \sum_c e^{a_{gc} - s}`:

    .. math::

        \log Z = \log\bigl(S + e^{u - s}(1 - e^{-b})\bigr), \qquad
        P(t' = t \mid y) = e^{u - s - \log Z},

    evaluated as ``logaddexp(log S, u - s + log1p(-exp(-b)))`` (no overflow as
    :math:`\sigma^2 \to 0`). The MAP category maximises the scores, ties to the smallest
    index: :math:`t` against the best other category (the group's first or second largest
    logit). A true category tied with the MAP has ``posterior_true == map_posterior``, to
    the bit.

    Parameters
    ----------
    groups : InformedLogits
        The groups' logits and their parts (:func:`informed_logits`).
    person_group : (P,) int array
        Each person's group (row of ``groups``).
    person_category : (P,) int array
        Each person's category :math:`t` (counted in the group's :math:`n_{gt}`).
    *earlier
        The earlier form, ``informed_posteriors(logits, variance, person_group,
        person_category)`` with ``logits`` the (G, 126) array alone, is still taken: the
        person's own score is then :math:`a_{gt} + b`, the same posterior, with ties exact
        only as far as that sum's rounding allows.

    Returns
    -------
    posterior_true, map_posterior : (P,) float64
    map_category : (P,) int64
    """
    if not isinstance(groups, InformedLogits):
        if len(earlier) != 1:
            raise TypeError("informed_posteriors takes (informed_logits(...), person_group, "
                            "person_category), or the earlier (logits, variance, "
                            "person_group, person_category)")
        logits = np.asarray(groups, dtype=np.float64)
        variance = np.asarray(person_group, dtype=np.float64)
        person_group, person_category = person_category, earlier[0]
        # log_prior + (2 (r + 1) - 1) / (2 sigma^2) = a + 1 / sigma^2 at r = 0
        groups = InformedLogits(logits, logits + 1.0 / (2.0 * variance[:, None]),
                                np.zeros_like(logits), variance)
    elif earlier:
        raise TypeError(f"informed_posteriors got {3 + len(earlier)} arguments; with "
                        "informed_logits(...)'s result it takes 3")
    logits = groups.logits
    g, t = person_group, person_category
    first, first_value, second, second_value = _top_two(logits)
    shift = first_value
    with np.errstate(under="ignore"):
        log_sum = np.log(np.exp(logits - shift[:, None]).sum(axis=1))
    variance = groups.variance[g]
    own = _informed_scores(groups.log_prior[g, t], groups.residual[g, t] + 1.0,
                           variance) - shift[g]
    log_z = np.logaddexp(log_sum[g], own + np.log1p(-np.exp(-1.0 / variance)))
    other_is_second = t == first[g]
    other = np.where(other_is_second, second[g], first[g])
    other_value = np.where(other_is_second, second_value[g], first_value[g]) - shift[g]
    keep = (own > other_value) | ((own == other_value) & (t < other))
    map_category = np.where(keep, t, other)
    with np.errstate(under="ignore"):
        posterior_true = np.exp(own - log_z)
        map_posterior = np.exp(np.where(keep, own, other_value) - log_z)
    return posterior_true, map_posterior, map_category.astype(np.int64)


def _log_factorials(m: np.ndarray) -> np.ndarray:
    r""":math:`\log m!` of each entry of the int array ``m`` (``gammaln(m + 1)``), in its shape.

    Evaluated once per distinct value of :math:`[\min m, \max m]` (a table) when that range
    is no longer than ``m``, else on ``m`` itself: never more values than ``m`` holds, whatever
    the counts' size (a table from 0 would hold :math:`\max m` of them). The same values
    either way: ``gammaln`` of the same float64 numbers.
    """
    from scipy.special import gammaln

    low, high = int(m.min()), int(m.max())
    if high - low + 1 > m.size:
        return gammaln(m.astype(np.float64) + 1.0)
    table = gammaln(np.arange(low, high + 1, dtype=np.int64).astype(np.float64) + 1.0)
    return table[m - low]


def _mode(y: np.ndarray, lam: np.ndarray, variance: np.ndarray) -> np.ndarray:
    r"""The summand's mode in :math:`m` (Newton; :math:`\psi(m + 1) \approx \log(m + 1/2)`).

    Mode of :math:`m \log\lambda - \log m! - (y - 1/2 - m)^2/(2\sigma^2)` over
    :math:`m \ge 0`, from the precision-weighted mean of the Poisson and the Gaussian factor.
    A rough mode only sets where the window lies: the neglected mass is checked afterwards.
    """
    spread = np.maximum(lam, 1.0)
    mode = np.maximum((lam * variance + (y - 0.5) * spread) / (variance + spread), 0.0)
    positive = lam > 0
    log_lam = np.log(np.where(positive, lam, 1.0))
    for _ in range(4):
        grad = log_lam - np.log(mode + 0.5) + (y - 0.5 - mode) / variance
        curvature = 1.0 / (mode + 0.5) + 1.0 / variance
        mode = np.maximum(mode + grad / curvature, 0.0)
    return np.where(positive, mode, 0.0)


def _window_sums(y, lam, variance, start, width):
    """``log L(0)``, ``log L(1)`` over the windows, and the bound of their neglected mass."""
    m = start[:, None] + np.arange(width)[None, :]
    with np.errstate(divide="ignore"):
        log_lam = np.where(lam > 0, np.log(np.where(lam > 0, lam, 1.0)), -1e300)
    base = m * log_lam[:, None] - _log_factorials(m)
    inv = 1.0 / (2.0 * variance)[:, None]
    out, worst = [], np.zeros(y.size)
    for delta in (0.0, 1.0):
        resid = (y - delta)[:, None] - m
        terms = base - resid * resid * inv
        peak = terms.max(axis=1)
        with np.errstate(under="ignore"):
            scaled = np.exp(terms - peak[:, None])
        total = scaled.sum(axis=1)
        out.append(peak + np.log(total))
        with np.errstate(divide="ignore", invalid="ignore", under="ignore", over="ignore"):
            right_q = scaled[:, -1] / scaled[:, -2]
            right = np.where(scaled[:, -1] == 0, 0.0,
                             np.where(right_q < 1, scaled[:, -1] * right_q / (1 - right_q),
                                      np.inf))
            left_q = scaled[:, 0] / scaled[:, 1]
            left = np.where((start == 0) | (scaled[:, 0] == 0), 0.0,
                            np.where(left_q < 1, scaled[:, 0] * left_q / (1 - left_q), np.inf))
        worst = np.maximum(worst, (left + right) / total)
    return out[0], out[1], worst


def poisson_gaussian_log_ratio(y, lam, variance):
    r""":math:`\log L(1) - \log L(0)` of each cell, with the neglected mass checked.

    .. math:: L(\delta) = \sum_{m \ge 0} \mathrm{Pois}(m; \lambda)\,
              e^{-(y - m - \delta)^2/(2\sigma^2)}

    (the :math:`e^{-\lambda}` and the Gaussian's constant cancel in the ratio). The sum runs
    over :math:`m \in [s, s + 2H]`, :math:`s` the summand's mode :math:`\hat m` less
    :math:`H = \lceil w\sqrt{2 \ln 10^{18}}\rceil + 2`, :math:`w = \min(\sigma,
    \sqrt{\hat m + 1})` (the summand's width: the Gaussian factor's, or the Poisson factor's
    near its mode when narrower); a cell whose neglected mass
    (bounded by a geometric series from each edge) exceeds :data:`NEGLECTED_RELATIVE` of its
    sum is summed again with :math:`H` doubled. :math:`\lambda = 0` leaves one term,
    :math:`m = 0`: the ratio :math:`(2y - 1)/(2\sigma^2)`.

    Parameters
    ----------
    y : int array
        Noisy counts.
    lam : float array (>= 0)
        Poisson means :math:`(n - 1)\pi_c`.
    variance : float array (> 0)
        :math:`\sigma^2`, broadcast to ``y``.

    Returns
    -------
    float64 array of the shape of ``y``.
    """
    y, lam, variance = np.broadcast_arrays(np.asarray(y, dtype=np.float64),
                                           np.asarray(lam, dtype=np.float64),
                                           np.asarray(variance, dtype=np.float64))
    shape = y.shape
    (y, lam, variance), inverse = _distinct_cells(y.ravel(), lam.ravel(), variance.ravel())
    result = np.empty(y.size)
    compiled = _compiled(y.size)
    if compiled is not None:
        return compiled.poisson_gaussian_log_ratio(y, lam, variance)[inverse].reshape(shape)
    mode = _mode(y, lam, variance)
    spread = np.minimum(np.sqrt(variance), np.sqrt(mode + 1.0))  # the summand's width
    first_half = np.ceil(spread * math.sqrt(2.0 * math.log(1e18))).astype(np.int64) + 2
    pending = np.arange(y.size)
    factor = 1
    while pending.size:
        retry = []
        half = first_half[pending] * factor
        by_width = np.argsort(half, kind="stable")
        # chunks of one window width each: a cell's sum (its terms and their summation
        # order) depends on the cell alone, never on which other cells share its chunk
        edges = np.flatnonzero(np.diff(half[by_width])) + 1
        for same in np.split(by_width, edges):
            for begin in range(0, same.size, CHUNK_CELLS):
                chosen = same[begin: begin + CHUNK_CELLS]
                part = pending[chosen]
                width = int(2 * half[chosen[0]] + 1)
                start = np.maximum(np.rint(mode[part]).astype(np.int64) - half[chosen], 0)
                log0, log1, neglected = _window_sums(y[part], lam[part], variance[part],
                                                     start, width)
                result[part] = log1 - log0
                retry.append(part[~(neglected <= NEGLECTED_RELATIVE)])
        pending = np.sort(np.concatenate(retry)) if retry else np.empty(0, dtype=np.int64)
        factor *= 2
        if factor > 1024 and pending.size:
            raise FloatingPointError(
                f"{pending.size} Poisson-Gaussian sums did not converge (neglected mass above "
                f"{NEGLECTED_RELATIVE:g} with a window {factor // 2} times the first)")
    return result[inverse].reshape(shape)


def _compiled(cells: int):
    """The compiled kernels' module, or None for the numpy path.

    ``DPRISK_KERNELS`` (:func:`dprisk.inference.kernels.fused_kernels.kernel_mode`):
    ``numpy`` takes the numpy path; ``auto`` and ``compiled`` the compiled one whenever numba
    loads. Not the ski-rental rule of the two-level kernels: that rule depends on what the
    process computed before, and the two paths agree to a few ulps of the terms (about
    1e-13 in a logit at counts up to 100, more at larger counts: module docstring), not to
    the bit, so a partitioned run would depend on which partitions a worker happened to
    run. One path per
    environment keeps every cell's answer a function of the cell alone. ``cells`` is unused
    (kept for the rule's signature).
    """
    from dprisk.inference.kernels.fused_kernels import kernel_mode
    from dprisk.runtime.cache import use_numba_cache

    del cells
    if kernel_mode() == "numpy":
        return None
    use_numba_cache()
    try:
        from dprisk.inference.population import kernels_jit
    except ImportError:
        return None
    return kernels_jit


def kernel_path() -> str:
    """``"compiled"`` or ``"numpy"``: the outsider's path in this process (:func:`_compiled`)."""
    return "numpy" if _compiled(0) is None else "compiled"


def _distinct_cells(*columns: np.ndarray):
    r"""The distinct rows of ``columns`` (sorted) and, for each row, its distinct row's index.

    Cells with the same :math:`(y, \lambda, \sigma^2)` have the same sum: each is summed once.
    """
    if columns[0].size == 0:
        return columns, np.zeros(0, dtype=np.int64)
    order = np.lexsort(columns[::-1])
    ordered = [c[order] for c in columns]
    new = np.ones(order.size, dtype=bool)
    new[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in ordered])
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return tuple(c[new] for c in ordered), inverse


def outsider_logits(noisy: np.ndarray, group_count: np.ndarray, prior: np.ndarray,
                    variance: np.ndarray) -> np.ndarray:
    r"""The outsider's logits :math:`\log\pi_c + \log L_c(1) - \log L_c(0)` of each group.

    Only cells with :math:`\pi_c > 0` are summed (the others' logit is :math:`-\infty`).

    Parameters
    ----------
    noisy : (G, 126) int array
        The groups' noisy cells :math:`y`.
    group_count : (G,) int array (>= 1)
        :math:`n`, the group's true count.
    prior : (G, 126) float array
        :math:`\pi` of each group (rows sum to 1).
    variance : (G,) float array (1e-4 <= variance <= 1e8)
        :math:`\sigma^2` of each group's cells (the range of
        :data:`~dprisk.inference.population.variances.VARIANCE_RANGE`).

    Returns
    -------
    (G, 126) float64 array
        The logits, for :func:`outsider_posteriors`.
    """
    prior = np.asarray(prior, dtype=np.float64)
    variance = check_variance_argument(variance, shape=prior.shape[:1])
    logits = np.full(prior.shape, -np.inf)
    live = prior > 0
    rows, cols = np.nonzero(live)
    lam = (np.asarray(group_count, dtype=np.float64)[rows] - 1.0) * prior[rows, cols]
    ratio = poisson_gaussian_log_ratio(np.asarray(noisy)[rows, cols], lam,
                                       variance[rows])
    logits[rows, cols] = np.log(prior[rows, cols]) + ratio
    return logits


def outsider_posteriors(logits: np.ndarray, person_group: np.ndarray,
                        person_category: np.ndarray):
    r"""Each person's outsider posterior: the group's softmax at their category, and its MAP.

    .. math:: P(c \mid y) = e^{a_{gc} - s} \Big/ \sum_{c'} e^{a_{gc'} - s},
              \quad s = \max_{c'} a_{gc'}

    Parameters
    ----------
    logits : (G, 126) float array
        The groups' logits :math:`a_{gc}` (:func:`outsider_logits`; ``-inf`` where
        :math:`\pi_c = 0`).
    person_group : (P,) int array
        Each person's group (row of ``logits``).
    person_category : (P,) int array (0 <= category < 126)
        Each person's category :math:`t`.

    Returns
    -------
    posterior_true, map_posterior : (P,) float64
        :math:`P(t \mid y)` and the MAP category's posterior :math:`1 / \sum_c e^{a_{gc} - s}`.
    map_category : (P,) int64
        The group's first largest logit (ties to the smallest index).
    """
    shift = logits.max(axis=1)
    with np.errstate(under="ignore"):
        weights = np.exp(logits - shift[:, None])
    norm = weights.sum(axis=1)
    first = np.argmax(logits, axis=1)
    g = person_group
    posterior_true = weights[g, person_category] / norm[g]
    map_posterior = 1.0 / norm[g]
    return posterior_true, map_posterior, first[g].astype(np.int64)


def check_prior_rows(prior: np.ndarray) -> None:
    """Raise ValueError unless every row is a probability vector over the 126 categories."""
    if prior.ndim != 2 or prior.shape[1] != N_CATEGORIES:
        raise ValueError(f"prior must have {N_CATEGORIES} columns, got shape {prior.shape}")
    if not (np.isfinite(prior).all() and (prior >= 0).all()):
        raise ValueError("prior: probabilities must be finite and >= 0")
    if not np.allclose(prior.sum(axis=1), 1.0, rtol=0, atol=1e-9):
        raise ValueError("prior: probabilities must sum to 1")
