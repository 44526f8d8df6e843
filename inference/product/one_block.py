r"""Disclosure risk after a simplified block-level post-processing step (supplement S6).

The data holder releases post-processed counts. With the block-group count
:math:`\tilde x_2` held fixed, the block count is the least-squares solution of
:math:`\tilde x_2 = \tilde x_1 + \sum_i \tilde y_1^{(i)}` closest to the noisy counts,

.. math::

    \bar x_1 = \frac{d\, x_1^* + (\tilde x_2 - y_1^*)}{d + 1},

truncated to :math:`[0, \tilde x_2]` and rounded to the nearest integer:
:math:`\tilde x_1 = f(x_1^*, y_1^*, \tilde x_2)`. The paper does not say how ties
(:math:`\bar x_1 = k + 1/2`, which happen whenever :math:`d + 1` is even, e.g. d = 27) are
rounded; ``ties="even"`` (the default) rounds them to the even neighbour, as R's and numpy's
``round`` do; ``"up"`` and ``"down"`` are available to show the (small) effect.

The adversary (paper S6) knows ``m`` (``known``) and the block-group count :math:`x_2`
exactly, so under :math:`X_1 = k_1` the other blocks hold :math:`y_1 = x_2 - k_1`, and
observes only :math:`(\tilde x_1, \tilde x_2)`. With :math:`x_1^* \sim \mathrm{DG}(k_1,
1/(2\rho_1))` and :math:`y_1^* = y_1 + \eta`, :math:`\eta \sim \mathrm{DG}(0, d/(2\rho_1))`
(the S2 approximation the paper uses; ``y_noise="exact"`` uses the exact d-fold sum):

.. math::

    P[\tilde X_1 = v \mid X_1 = k_1, \tilde X_2 = \tilde x_2]
      = \sum_{x_1^*, y_1^*} \mathbf 1[v = f(x_1^*, y_1^*, \tilde x_2)]\,
        P[x_1^* \mid k_1]\, P[y_1^* \mid k_1] .

For fixed :math:`y_1^*`, ``f`` is non-decreasing in :math:`x_1^*`, so
:math:`\{f = v\} = \{g_v(y_1^*) \le x_1^* < g_{v+1}(y_1^*)\}` for integer thresholds
:math:`g_v` (exact integer arithmetic, see :func:`thresholds`) and the inner sum over
:math:`x_1^*` is a difference of exact discrete-Gaussian tails. Only the sum over
:math:`y_1^*` is truncated, at ``tail_mass``; the neglected probability is returned.

The marginal quantity of eq. (S6 marg_risk) and of Figure 12 is the marginal posterior

.. math::

    P[X_1 = m+1 \mid x_1 = m+1, \tilde X_2 = \tilde x_2] = \sum_{v=0}^{\tilde x_2}
      P[X_1 = m+1 \mid \tilde x_1 = v, \tilde x_2]\, P[\tilde X_1 = v \mid x_1 = m+1,
      \tilde x_2],

which the paper calls the marginal disclosure risk; :func:`marginal_risk` divides it by ``p``
(the main text's ``R``). Two references: the paper's "no post-processing" line is the
single-level marginal posterior from :math:`x_1^*` alone
(:func:`dprisk.inference.single_level.closed_form.marginal_posterior`); the data-processing bound
is the
marginal posterior from :math:`(x_1^*, y_1^*)` with :math:`x_2` known
(:func:`marginal_posterior_before_postprocessing`). Post-processing can only lower the
latter: :math:`M = \sum_D g(P[D|1], P[D|0])` with
:math:`g(a, b) = p a^2 / (p a + (1-p) b)` convex and positively homogeneous, so merging
release values (a deterministic ``f``) cannot increase it (Jensen).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import log_expit, logsumexp

from dprisk.inference.nested.unique_levels_kernels import MAX_PAIRS, log_marginal_enumerate
from dprisk.inference.single_level.closed_form_kernels import TAIL_RELATIVE
from dprisk.models.checks import check_count, check_positive_int, check_probability, check_rho
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.mechanism.dg_sums import sum_pmf
from dprisk.models.numerics import dg_log_normalizer, logit, scalar_result

__all__ = [
    "TIES",
    "Y_NOISE",
    "PostprocessedLikelihood",
    "likelihood",
    "logsumexp_columns",
    "marginal_posterior",
    "marginal_posterior_before_postprocessing",
    "marginal_risk",
    "posterior",
    "postprocess_block",
    "thresholds",
]

#: Rounding rules for ties of the post-processed block count.
TIES = ("even", "up", "down")
#: Models of the noise on the other blocks' total.
Y_NOISE = ("approximation", "exact")
#: Neglected probability of the y1* sum (absolute, per hypothesis).
DEFAULT_TAIL_MASS = 1e-17


def _check_ties(ties: str) -> str:
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    return ties


def _ceil_div(num: np.ndarray, den: int) -> np.ndarray:
    return -((-num) // den)


def _min_numerator(v: np.ndarray, d: int, ties: str) -> np.ndarray:
    r"""Smallest integer :math:`N = d x_1^* + \tilde x_2 - y_1^*` with ``round(N/(d+1)) >= v``.

    ``round(x) >= v`` iff ``x > v - 1/2``, or ``x = v - 1/2`` and the tie goes up:
    with :math:`h = (2v - 1)(d + 1)`, :math:`x \ge v - 1/2 \iff 2N \ge h`.
    """
    h = (2 * v - 1) * (d + 1)
    tie_possible = h % 2 == 0
    if ties == "up":
        tie_up = np.ones_like(v, dtype=bool)
    elif ties == "down":
        tie_up = np.zeros_like(v, dtype=bool)
    else:  # to the even neighbour: v - 1/2 -> v iff v is even
        tie_up = v % 2 == 0
    return np.where(tie_possible, h // 2 + np.where(tie_up, 0, 1), (h + 1) // 2)


def postprocess_block(x1_star, y1_star, x2_tilde, d, *, ties="even") -> np.ndarray:
    r"""The simplified post-processing :math:`f(x_1^*, y_1^*, \tilde x_2)` (supplement S6).

    .. math::

        \bar x_1 = \frac{d x_1^* + (\tilde x_2 - y_1^*)}{d + 1}, \qquad
        f = \begin{cases} 0 & \bar x_1 < 0 \\ \tilde x_2 & \bar x_1 > \tilde x_2 \\
            [\bar x_1] & \text{otherwise} \end{cases}

    computed in exact integer arithmetic (``[.]`` rounds to the nearest integer, ties by
    ``ties``).

    Parameters
    ----------
    x1_star, y1_star : array_like of int
        Noisy block count and noisy total of the other ``d`` blocks.
    x2_tilde : array_like of int (x2_tilde >= 0)
        Post-processed block-group count, held fixed.
    d : int (d >= 1)
        Number of other blocks in the block group.
    ties : {"even", "up", "down"}
        Rounding of :math:`\bar x_1 = k + 1/2`.
    """
    x1_star = check_count(x1_star, "x1_star")
    y1_star = check_count(y1_star, "y1_star")
    x2_tilde = check_count(x2_tilde, "x2_tilde", minimum=0)
    d = check_positive_int(d, "d")
    ties = _check_ties(ties)
    numerator = d * x1_star + x2_tilde - y1_star
    twice = 2 * numerator  # round(N / D): floor((2N + D) / (2D)), then fix ties
    den = d + 1
    rounded = (twice + den) // (2 * den)
    is_tie = (twice + den) % (2 * den) == 0
    if ties == "down":
        rounded = np.where(is_tie, rounded - 1, rounded)
    elif ties == "even":
        rounded = np.where(is_tie & (rounded % 2 != 0), rounded - 1, rounded)
    return np.clip(rounded, 0, x2_tilde)


def thresholds(y1_star, x2_tilde, d, *, ties="even") -> np.ndarray:
    r"""Integer thresholds :math:`g_v(y_1^*)`: :math:`f \ge v \iff x_1^* \ge g_v`.

    For :math:`1 \le v \le \tilde x_2`,
    :math:`g_v = \lceil (N_{\min}(v) - \tilde x_2 + y_1^*) / d \rceil` with
    :math:`N_{\min}(v)` the smallest numerator rounding to at least ``v``.

    Returns
    -------
    ndarray of int64, shape ``y1_star.shape + (x2_tilde,)``
        Column ``v - 1`` holds :math:`g_v`; non-decreasing along the last axis.
    """
    y1_star = check_count(y1_star, "y1_star")
    x2_tilde = int(check_count(x2_tilde, "x2_tilde", minimum=0))
    d = check_positive_int(d, "d")
    ties = _check_ties(ties)
    v = np.arange(1, x2_tilde + 1, dtype=np.int64)
    n_min = _min_numerator(v, d, ties)
    return _ceil_div(n_min[None, :] - x2_tilde + y1_star.reshape(-1, 1), d).reshape(
        (*y1_star.shape, x2_tilde))


# --------------------------------------------------------------------------- tails
def _log1mexp(x: np.ndarray) -> np.ndarray:
    """``log(1 - exp(x))`` for ``x <= 0`` (``-inf`` at 0), accurate on both branches."""
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape)
    near = x > -np.log(2.0)
    with np.errstate(divide="ignore"):
        out[near] = np.log(-np.expm1(x[near]))
    out[~near] = np.log1p(-np.exp(x[~near]))
    return out


def _interval_log_prob(a, b, u_a, u_b, l_a, l_b) -> np.ndarray:
    """``log P[a <= J < b]`` from ``log U(a)``, ``log U(b)``, ``log L(a-1)``, ``log L(b-1)``.

    Elementwise (the rule of :func:`_log_cells`); ``a = b`` gives ``-inf``.
    """
    out = np.full(a.shape, -np.inf)
    upper_side = (a >= 1) & (b > a)
    lower_side = (b <= 0) & (b > a)
    middle = (a <= 0) & (b >= 1)
    out[upper_side] = u_a[upper_side] + _log1mexp(u_b[upper_side] - u_a[upper_side])
    out[lower_side] = l_b[lower_side] + _log1mexp(l_a[lower_side] - l_b[lower_side])
    out[middle] = np.log1p(-(np.exp(l_a[middle]) + np.exp(u_b[middle])))
    return out


def _log_cells(g: np.ndarray, rho: float) -> np.ndarray:
    r"""``log P[g_{c-1} <= J < g_c]`` for cells ``c = 0..V`` (``g_{-1} = -inf``, ``g_V = inf``).

    ``g`` has shape ``(n, V)``, non-decreasing along rows. With :math:`U(o) = P[J \ge o]`
    and :math:`L(o) = P[J \le o] = U(-o)`, a cell ``[a, b)`` is computed without
    cancellation as :math:`U(a) - U(b)` when ``a >= 1``, as :math:`L(b-1) - L(a-1)` when
    ``b <= 0`` and as :math:`1 - L(a-1) - U(b)` (two tails of at most 1/2) otherwise;
    empty cells (``a = b``) are ``-inf``.

    A cell's value depends only on its two integer ends, and the thresholds of a row span a
    short range with consecutive gaps of about ``(d + 1) / d``: the interior cells are
    evaluated once per distinct ``(a, b - a)`` on the grid of the range and gathered, the
    first and last columns once per distinct end. Every value is the elementwise rule of
    :func:`_interval_log_prob` on the same inputs, so the result equals evaluating every
    cell of the ``(n, V + 1)`` array (to the bit).
    """
    n, v = g.shape
    low, high = int(g.min()), int(g.max())
    ends = np.arange(low, high + 1)
    # log U(o) and log L(o - 1) = log U(1 - o) for o = low..high: o >= 1 is the exact tail
    # (dg.log_tail), o <= 0 is log(1 - U(1 - o)) by symmetry (the subtracted tail at most
    # 1/2); both need the exact tail at max(o, 1 - o) only, evaluated once per integer
    log_tail = dg.log_tail_kernel(np.where(ends >= 1, ends, 1 - ends),
                                  np.asarray(rho, dtype=float))
    complement = _log1mexp(np.minimum(log_tail, 0.0))
    log_u = np.where(ends >= 1, log_tail, complement)
    log_l = np.where(ends <= 0, log_tail, complement)
    big = np.iinfo(np.int64).max // 4
    out = np.empty((n, v + 1))
    # first column [-inf, g_0): a = -big, U(a) = 1, L(a - 1) = 0
    col = ends[:, None]
    first = _interval_log_prob(np.full(col.shape, -big), col, np.zeros(col.shape),
                               log_u[:, None], np.full(col.shape, -np.inf), log_l[:, None])
    out[:, 0] = first[g[:, 0] - low, 0]
    # last column [g_{V-1}, inf): b = big, U(b) = 0, L(b - 1) = 1
    last = _interval_log_prob(col, np.full(col.shape, big), log_u[:, None],
                              np.full(col.shape, -np.inf), log_l[:, None], np.zeros(col.shape))
    out[:, v] = last[g[:, v - 1] - low, 0]
    if v > 1:
        a, b = g[:, :-1], g[:, 1:]
        gap = b - a
        widths = np.arange(int(gap.max()) + 1)
        ends_b = np.minimum(ends[:, None] + widths[None, :], high)  # beyond high: unused
        a_grid = np.broadcast_to(col, ends_b.shape)
        pairs = _interval_log_prob(a_grid, ends_b, log_u[a_grid - low], log_u[ends_b - low],
                                   log_l[a_grid - low], log_l[ends_b - low])
        out[:, 1:v] = pairs[a - low, gap]
    return out


def logsumexp_columns(a: np.ndarray) -> np.ndarray:
    """``scipy.special.logsumexp(a, axis=0)`` for a 2-d float64 ``a``, to the bit, faster.

    SciPy's real-input algorithm (1.15+) step by step with the same NumPy reductions: the
    maxima of each column are set aside (``log1p`` of the sum of the other terms relative to
    the maximum, plus the log of the number of maxima), and a column whose result is not
    finite takes ``log(sum(exp(a)))``; SciPy evaluates that fallback for every column on
    every call, here only when some column needs it (same values: a column's sum over axis
    0 of the whole array adds its rows in order either way).
    """
    a_max = np.max(a, axis=0, keepdims=True)
    mask = a == a_max
    rest = a.copy()
    rest[mask] = -np.inf
    m = np.sum(mask.astype(a.dtype), axis=0, keepdims=True, dtype=a.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.sum(np.exp(rest - a_max), axis=0, keepdims=True, dtype=a.dtype)
        s = np.where(s == 0, s, s / m)
        sgn = np.sign(s + 1) * np.sign(m)
        s = np.where(s < -1, -s - 2, s)
        out = np.log1p(s) + np.log(np.abs(m)) + a_max
    out[sgn < 0] = np.nan
    finite = np.isfinite(out)
    if not finite.all():
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out_inf = np.log(np.sum(np.exp(a), axis=0, keepdims=True))
        out = np.where(finite, out, out_inf)
    return out[0]


# --------------------------------------------------------------------------- likelihood
class PostprocessedLikelihood(NamedTuple):
    r"""Log-likelihoods :math:`\log P[\tilde X_1 = v \mid X_1 = k_1, \tilde x_2]`.

    Attributes
    ----------
    log_likelihood : ndarray, shape (2, x2_tilde + 1)
        Row 0: :math:`k_1 = m`; row 1: :math:`k_1 = m + 1`; column ``v``.
    neglected_mass : ndarray, shape (2,)
        Probability of the noise values :math:`\eta` left out of the sum, per row (exact
        for the approximation, the guaranteed bound for the exact d-fold sum); each row sums
        to ``1 - neglected_mass``.
    """

    log_likelihood: np.ndarray
    neglected_mass: np.ndarray


def _y_noise(rho1: float, d: int, y_noise: str, tail_mass: float, reach: int):
    """Noise values ``eta`` on the other blocks' total and their log-probabilities.

    The grid is the tail half-width ``K`` widened by ``reach``: a cell ``v`` far in a tail is
    dominated by noise values near its own optimum (``|eta| <= reach``), so every cell, not
    only the total, is summed to within ``tail_mass`` of its own size.
    """
    if y_noise == "approximation":
        rho_y = rho1 / d
        k = int(dg.support_halfwidth_kernel(rho_y, tail_mass)) + reach
        eta = np.arange(-k, k + 1, dtype=np.int64)
        log_p = -rho_y * eta.astype(float) ** 2 - dg_log_normalizer(np.asarray(rho_y))
        outside = 2.0 * float(np.exp(dg.log_tail_kernel(  # P[|eta| > k], exact
            np.asarray(k + 1, dtype=np.int64), np.asarray(rho_y, dtype=float))))
        return eta, log_p, outside
    exact = sum_pmf(d, rho1, tail_mass=tail_mass)  # exact convolution, its own grid
    with np.errstate(divide="ignore"):
        return exact.values, np.log(exact.pmf), exact.tail_mass  # a bound, see dg_sums


def likelihood(x2_tilde, rho1, d, *, known=0, x2=None, ties="even", y_noise="approximation",
               tail_mass=DEFAULT_TAIL_MASS) -> PostprocessedLikelihood:
    r"""Likelihood of the post-processed block count under both hypotheses (supplement S6).

    .. math::

        P[\tilde X_1 = v \mid X_1 = k_1, \tilde X_2 = \tilde x_2]
          = \sum_{\eta} P[\eta]\; P\bigl[g_v(y_1^*) \le X_1^* < g_{v+1}(y_1^*)
            \bigm| X_1 = k_1\bigr], \quad y_1^* = x_2 - k_1 + \eta,

    with :math:`g_0 = -\infty`, :math:`g_{\tilde x_2 + 1} = +\infty` (:func:`thresholds`)
    and exact discrete-Gaussian tails for the :math:`x_1^*` intervals. The sum over
    :math:`\eta` runs over :math:`|\eta| \le K + \tilde x_2 + x_2 + 1`, ``K`` the tail
    half-width of ``tail_mass``: this covers the most likely :math:`\eta` behind every cell
    (:math:`x_1^* - k_1 \approx -\eta \approx ((d+1) v - \tilde x_2 - y_1) / (d+1)`), so
    cells far in the tails keep their relative precision (posteriors there are meaningful).

    Parameters
    ----------
    x2_tilde : int (x2_tilde >= 0)
        Post-processed block-group count.
    rho1 : float (rho1 > 0)
        zCDP parameter of every block count.
    d : int (d >= 1)
        Number of other blocks.
    known : int (known >= 0)
        ``m``: the adversary's count of the others in the target's block.
    x2 : int (x2 >= known + 1), optional
        The block-group count the adversary knows; default ``known + 1`` (the paper: 1).
    ties : {"even", "up", "down"}
    y_noise : {"approximation", "exact"}
        Noise on :math:`y_1^*`: DG(0, d/(2 rho1)) (paper) or the exact sum of ``d`` DG (on
        the grid of :func:`dprisk.models.mechanism.dg_sums.sum_pmf`: cells are then accurate to
        ``tail_mass``
        absolutely, not relative to their own size).
    tail_mass : float (0 < tail_mass < 1)
        Probability of the noise values left out of the sum over :math:`y_1^*`.
    """
    x2_tilde = int(check_count(x2_tilde, "x2_tilde", minimum=0))
    rho1 = float(check_rho(rho1, "rho1"))
    d = check_positive_int(d, "d")
    m = int(check_count(known, "known", minimum=0))
    x2 = m + 1 if x2 is None else int(check_count(x2, "x2", minimum=m + 1))
    ties = _check_ties(ties)
    if y_noise not in Y_NOISE:
        raise ValueError(f"y_noise must be one of {', '.join(Y_NOISE)}, got {y_noise!r}")
    if not (isinstance(tail_mass, float) and 0 < tail_mass < 1):
        raise ValueError(f"tail_mass must lie in (0, 1), got {tail_mass!r}")
    # the most likely noise behind cell v satisfies |eta| <= |(d+1) v - x~2 - y1| / (d+1) + 1
    eta, log_eta, neglected = _y_noise(rho1, d, y_noise, tail_mass, reach=x2_tilde + x2 + 1)
    if x2_tilde == 0:  # f is identically 0
        row = np.array([logsumexp(log_eta)])
        return PostprocessedLikelihood(np.stack([row, row]), np.array([neglected, neglected]))
    # offsets of X1* - k1 for k1 = m (first eta.size rows) and m + 1, in one array: every cell
    # depends only on its two ends, so one _log_cells call gives each row's values
    g = np.concatenate([thresholds(x2 - k1 + eta, x2_tilde, d, ties=ties) - k1
                        for k1 in (m, m + 1)])
    log_cell = _log_cells(g, rho1).reshape(2, eta.size, x2_tilde + 1) + log_eta[:, None]
    rows = [logsumexp_columns(log_cell[0]), logsumexp_columns(log_cell[1])]
    return PostprocessedLikelihood(np.stack(rows), np.array([neglected, neglected]))


def posterior(x1_tilde, x2_tilde, rho1, d, p=0.5, *, known=0, x2=None, ties="even",
              y_noise="approximation") -> np.ndarray:
    r"""Posterior :math:`P[X_1 = m+1 \mid \tilde x_1, \tilde x_2]` from post-processed counts.

    .. math::

        \frac{p\, P[\tilde x_1 \mid m+1, \tilde x_2]}
             {p\, P[\tilde x_1 \mid m+1, \tilde x_2] + (1-p)\, P[\tilde x_1 \mid m, \tilde x_2]}

    Parameters
    ----------
    x1_tilde : array_like of int (0 <= x1_tilde <= x2_tilde)
    x2_tilde, rho1, d, known, x2, ties, y_noise
        As in :func:`likelihood`.
    p : float (0 < p < 1)
    """
    x2_tilde = int(check_count(x2_tilde, "x2_tilde", minimum=0))
    x1_tilde = check_count(x1_tilde, "x1_tilde", minimum=0)
    if np.any(x1_tilde > x2_tilde):
        raise ValueError(f"x1_tilde must lie in [0, x2_tilde = {x2_tilde}]")
    p = float(check_probability(p, "p"))
    table = likelihood(x2_tilde, rho1, d, known=known, x2=x2, ties=ties, y_noise=y_noise)
    log_odds = logit(p) + table.log_likelihood[1] - table.log_likelihood[0]
    return scalar_result(np.exp(log_expit(log_odds))[x1_tilde])


def _log_marginal(table: PostprocessedLikelihood, p: np.ndarray) -> np.ndarray:
    r"""``log sum_v expit(logit(p) + log L1(v) - log L0(v)) L1(v)``, one value per prior.

    Each prior's row is summed by :func:`logsumexp_columns` as a single column (the values of
    ``scipy.special.logsumexp(row)``, to the bit, without SciPy's per-call overhead).
    """
    log_odds = (logit(p)[..., None] + table.log_likelihood[1]
                - table.log_likelihood[0])
    terms = log_expit(log_odds) + table.log_likelihood[1]
    rows = terms.reshape(-1, terms.shape[-1])
    return np.array([logsumexp_columns(row[:, None])[0] for row in rows]).reshape(
        terms.shape[:-1])


def marginal_posterior(x2_tilde, rho1, d, p=0.5, *, known=0, x2=None, ties="even",
                       y_noise="approximation") -> np.ndarray:
    r"""Marginal posterior with post-processing (eq. S6 marg_risk), averaged over releases.

    .. math::

        \sum_{v=0}^{\tilde x_2} P[X_1 = m+1 \mid \tilde x_1 = v, \tilde x_2]\,
            P[\tilde X_1 = v \mid x_1 = m+1, \tilde x_2]

    (the y-axis of Figure 12). Absolute error below
    :math:`(2 + (1-p)/p)\,` ``tail_mass`` from the truncated :math:`y_1^*` sum.

    Parameters
    ----------
    x2_tilde, rho1, d, known, x2, ties, y_noise
        As in :func:`likelihood`.
    p : array_like of float (0 < p < 1)
    """
    p = check_probability(p, "p")
    table = likelihood(x2_tilde, rho1, d, known=known, x2=x2, ties=ties, y_noise=y_noise)
    return scalar_result(np.exp(_log_marginal(table, p)))


def marginal_risk(x2_tilde, rho1, d, p=0.5, *, known=0, x2=None, ties="even",
                  y_noise="approximation") -> np.ndarray:
    """Marginal risk ``R`` with post-processing: :func:`marginal_posterior` / ``p``."""
    p = check_probability(p, "p")
    table = likelihood(x2_tilde, rho1, d, known=known, x2=x2, ties=ties, y_noise=y_noise)
    return scalar_result(np.exp(_log_marginal(table, p)) / p)


#: Smallest error budget ``TAIL_RELATIVE * min(p) / 2`` of the regrouped sum in
#: :func:`marginal_posterior_before_postprocessing` (its weights then stay normal doubles);
#: a smaller one goes to the log-space enumeration.
_REGROUPED_TAIL_MIN = 1e-280


def _log_marginal_regrouped(rho1: float, d: int, logit_p: np.ndarray, k1: int, k2: int):
    r"""Log of the two-level marginal posterior, the pairs regrouped by :math:`n = d j_1 + j_2`.

    With :math:`j_1 \sim \mathrm{DG}(0, 1/(2\rho_1))` and :math:`j_2 \sim \mathrm{DG}(0,
    d/(2\rho_1))`, :math:`S = \rho_1 (2 j_1 + 1) + (\rho_1/d)(2 j_2 + 1) =
    (\rho_1/d)(2n + d + 1)` depends on the pair only through the integer ``n``, so

    .. math:: M = \sum_n \operatorname{expit}(\operatorname{logit}(p) + S_n)\, P[N = n],
              \qquad P[N = n] = \sum_{j_1} w_1(j_1)\, w_2(n - d j_1),

    the same finite sum over the same boxes :math:`|j_1| \le k_1`, :math:`|j_2| \le k_2` as
    :func:`log_marginal_enumerate` (:func:`_regrouped_boxes`: neglected probability below
    ``TAIL_RELATIVE * min(p)``), grouped by the exact integer key instead of the
    floating-point sum (no sort). Pairs whose weight underflows (each below 1e-308) are
    dropped: far below the budget, which is at least ``_REGROUPED_TAIL_MIN``.
    """
    rho2 = rho1 / d
    j1 = np.arange(-k1, k1 + 1, dtype=float)
    j2 = np.arange(-k2, k2 + 1, dtype=float)
    w1 = np.exp(-rho1 * j1**2 - dg_log_normalizer(np.asarray(rho1)))
    w2 = np.exp(-rho2 * j2**2 - dg_log_normalizer(np.asarray(rho2)))
    # P[N = n] for n = -d k1 - k2 .. d k1 + k2: w2 added at stride d, weighted by w1
    mass = np.zeros(2 * (d * k1 + k2) + 1)
    for i, weight in enumerate(w1):
        mass[d * i : d * i + w2.size] += weight * w2
    n = np.arange(-(d * k1 + k2), d * k1 + k2 + 1, dtype=float)
    keep = mass > 0
    log_odds = rho2 * (2.0 * n[keep] + d + 1)
    return logsumexp(log_expit(logit_p[:, None] + log_odds[None, :]) + np.log(mass[keep]),
                     axis=1)


def _regrouped_boxes(rho1: float, d: int, p_min: float) -> tuple[int, int] | None:
    """Half-widths ``(k1, k2)`` of :func:`_log_marginal_regrouped`'s boxes, or None.

    Each box leaves out ``TAIL_RELATIVE * p_min / 2`` of its DG's mass; None when that
    budget is below ``_REGROUPED_TAIL_MIN`` or the boxes hold more than ``MAX_PAIRS`` pairs
    (the enumeration then sums in log space, or refuses).
    """
    tail = TAIL_RELATIVE * p_min / 2
    if tail < _REGROUPED_TAIL_MIN:
        return None
    k1, k2 = (int(dg.support_halfwidth_kernel(np.asarray(r), tail)) for r in (rho1, rho1 / d))
    return (k1, k2) if (2.0 * k1 + 1) * (2.0 * k2 + 1) <= MAX_PAIRS else None


def marginal_posterior_before_postprocessing(rho1, d, p=0.5) -> np.ndarray:
    r"""Marginal posterior from :math:`(x_1^*, y_1^*)` with :math:`x_2` known (no post-processing).

    :math:`x_2 - Y_1^* = k_1 - \eta` with :math:`-\eta \sim \mathrm{DG}(0, d/(2\rho_1))`, so
    this is a target "unique at two levels" with parameters :math:`(\rho_1, \rho_1/d)`:
    the exact finite sum of
    :func:`dprisk.inference.nested.unique_levels.marginal_unique_levels` with
    ``method="enumerate"``, its pairs grouped by the integer :math:`d j_1 + j_2` that fixes
    the log-odds (:func:`_log_marginal_regrouped`; for ``min(p)`` below about 1e-264 or
    beyond ``MAX_PAIRS`` pairs, the enumeration itself, which refuses the latter).
    It bounds :func:`marginal_posterior` from above for every :math:`\tilde x_2` (data
    processing; module notes).
    """
    rho1 = float(check_rho(rho1, "rho1"))
    d = check_positive_int(d, "d")
    p = check_probability(p, "p")
    flat_p = p.ravel()
    p_min = float(flat_p.min())
    boxes = _regrouped_boxes(rho1, int(d), p_min)
    if boxes is not None:
        log_marginal = _log_marginal_regrouped(rho1, int(d), logit(flat_p), *boxes)
    else:  # the enumeration's own refusal (or its log-space sum for a tiny p)
        log_marginal = log_marginal_enumerate(np.array([rho1, rho1 / d]), logit(flat_p), p_min)
    return scalar_result(np.exp(log_marginal.reshape(p.shape)))
