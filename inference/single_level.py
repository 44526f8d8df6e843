r"""The single-level adversary in closed form (paper §3.1, §4.2; supplement S1.1, S1.3, S5).

The adversary knows ``m`` (``known``), the count of the *other* people in block :math:`g_1`
with characteristics :math:`c`, so :math:`X_1 \in \{m, m+1\}` with prior
:math:`P[X_1 = m+1] = p`. The release is :math:`x_1^* = x_1 + \eta_1`,
:math:`\eta_1 \sim \mathrm{DG}(0, 1/(2\rho))`. Because the two likelihoods differ only by
:math:`e^{-\rho (x^* - m - 1)^2} / e^{-\rho (x^* - m)^2} = e^{\rho (2 (x^* - m) - 1)}`,
everything follows from the posterior log-odds

.. math::

    L(x_1^*) = \log\frac{P[X_1 = m+1 \mid x_1^*]}{P[X_1 = m \mid x_1^*]}
             = \operatorname{logit}(p) + \rho\,\bigl(2 (x_1^* - m) - 1\bigr),

and the posterior is :math:`\operatorname{expit}(L)`. All quantities are computed in log space
(``log_expit``, ``logsumexp``), so ``p = 1e-9`` or ``x1_star = 1e4`` neither over- nor
underflow to NaN. Every function broadcasts over its array arguments.

The module also covers targets unique at :math:`\ell` levels (S1.3: the log-odds gains one
term :math:`\rho_i (2 (x_i^* - m) - 1)` per level) and sequential releases (S5: the posterior
after release :math:`i` is the prior of release :math:`i+1`, so :math:`R'` multiplies).
The two are the same likelihood, so they share one implementation.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit, log_expit, logsumexp

from dprisk.models import discrete_gaussian as dg
from dprisk.models.checks import check_count, check_probability, check_rho
from dprisk.models.numerics import dg_log_normalizer

__all__ = [
    "UNIQUE_LEVELS_METHODS",
    "SequentialRisk",
    "decision_threshold",
    "log_marginal_posterior",
    "log_marginal_posterior_unique_levels",
    "log_posterior",
    "log_posterior_odds",
    "log_posterior_odds_unique_levels",
    "log_risk",
    "marginal_posterior",
    "marginal_posterior_unique_levels",
    "marginal_risk",
    "marginal_risk_unique_levels",
    "p_correct",
    "p_correct_unique_levels",
    "posterior",
    "posterior_unique_levels",
    "release_pmf",
    "risk",
    "sequential_posterior",
    "sequential_risk",
]

#: Neglected relative contribution to the marginal risk R from truncating the release grid.
#: Since :math:`R \ge 1` and :math:`R' \le 1/p`, a grid whose neglected probability is below
#: ``TAIL_RELATIVE * p`` changes ``R`` (and the marginal posterior) by less than this, relatively.
TAIL_RELATIVE = 1e-16
#: Neglected probability when the enumeration for :func:`p_correct_unique_levels` truncates.
TAIL_ABSOLUTE = 1e-25
#: Largest release grid (half-width) the exact single-level sum accepts (about rho > 2e-14).
MAX_HALFWIDTH = 50_000_000
#: Largest number of atoms one side of an exact multi-level enumeration may hold.
MAX_ATOMS = 4_000_000
#: Largest number of (atom, atom) pairs an exact multi-level marginal sum evaluates.
MAX_PAIRS = 200_000_000
#: Methods of :func:`marginal_posterior_unique_levels`.
UNIQUE_LEVELS_METHODS = ("auto", "enumerate", "contour")
_CHUNK = 2_000_000


# --------------------------------------------------------------------------- helpers
def _logit(p: np.ndarray) -> np.ndarray:
    """``log(p) - log1p(-p)``, exact in the tails (``p = 1e-300`` gives about -690.8)."""
    return np.log(p) - np.log1p(-p)


def _known(known) -> np.ndarray:
    return check_count(known, "known", minimum=0)


def _odds_term(offset, rho):
    r"""One level's log-likelihood ratio :math:`\rho (2 (x^* - m) - 1)`, ``offset = x^* - m``.

    Every function that compares a log-odds with 0 uses this expression, so decisions made
    here and by :func:`posterior` agree exactly (also at float ties).
    """
    return rho * (2.0 * offset - 1.0)


# --------------------------------------------------------------------------- one release
def log_posterior_odds(x1_star, rho, p=0.5, known=0) -> np.ndarray:
    r"""Posterior log-odds of :math:`X_1 = m+1` against :math:`X_1 = m` given the release.

    .. math:: L = \operatorname{logit}(p) + \rho\,\bigl(2 (x_1^* - m) - 1\bigr)

    Parameters
    ----------
    x1_star : array_like of int
        Released noisy count(s) (may be negative).
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1)
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0)
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    ndarray
        The log-odds, broadcast over the inputs.
    """
    x1_star = check_count(x1_star, "x1_star")
    rho = check_rho(rho, "rho")
    p = check_probability(p, "p")
    m = _known(known)
    return _logit(p) + _odds_term((x1_star - m).astype(float), rho)


def posterior(x1_star, rho, p=0.5, known=0) -> np.ndarray:
    r"""Posterior probability that the target has ``c``, :math:`P[X_1 = m+1 \mid x_1^*]`.

    .. math::

        P[X_1 = m+1 \mid x_1^*] = \frac{p\, e^{-\rho (x_1^* - m - 1)^2}}
            {p\, e^{-\rho (x_1^* - m - 1)^2} + (1-p)\, e^{-\rho (x_1^* - m)^2}}
            = \operatorname{expit}(L)

    (paper eq. 3.1). Parameters as in :func:`log_posterior_odds`.
    """
    return expit(log_posterior_odds(x1_star, rho, p, known))


def log_posterior(x1_star, rho, p=0.5, known=0) -> np.ndarray:
    """Log of :func:`posterior`, ``log_expit(L)``; finite even when the posterior underflows."""
    return log_expit(log_posterior_odds(x1_star, rho, p, known))


def _probability_ratio(num, log_num, den, log_den) -> np.ndarray:
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


def risk(x1_star, rho, p=0.5, known=0) -> np.ndarray:
    r"""Disclosure risk :math:`R'(x_1^*) = P[X_1 = m+1 \mid x_1^*] / p` (paper eq. 3.2).

    Computed from :math:`\operatorname{log\_expit}(L)` and :math:`\log p` (as a plain
    quotient where the posterior is a normal double, see :func:`_probability_ratio`), so it is
    accurate for ``p = 1e-12`` and tiny posteriors, and never exceeds ``fl(1/p)``.
    """
    p_arr = check_probability(p, "p")
    log_odds = log_posterior_odds(x1_star, rho, p, known)
    return _probability_ratio(expit(log_odds), log_expit(log_odds), p_arr, np.log(p_arr))


def log_risk(x1_star, rho, p=0.5, known=0) -> np.ndarray:
    """Log of :func:`risk`: ``log_expit(L) - log(p)``."""
    p_arr = check_probability(p, "p")
    return log_expit(log_posterior_odds(x1_star, rho, p, known)) - np.log(p_arr)


def release_pmf(x1_star, rho, known=0) -> np.ndarray:
    r"""Probability of a release when the target has ``c``: :math:`P[X_1^* = x_1^* | x_1 = m+1]`.

    .. math:: P[X_1^* = x_1^* \mid x_1 = m+1] = e^{-\rho (x_1^* - m - 1)^2} / Z(\rho)

    This is what the caption of the paper's Table 1 says its "Mass" column holds (the printed
    column is in fact :math:`P[X_1^* = x_1^* \mid x_1 = m]`; see
    :mod:`dprisk.validation.single_level_paper`).
    """
    m = _known(known)
    return dg.pmf(x1_star, m + 1, rho)


# --------------------------------------------------------------------------- marginal
def _logsumexp_rows(values: np.ndarray) -> np.ndarray:
    """``log(sum(exp(values), axis=-1))`` for finite rows (a lean ``logsumexp``)."""
    peak = values.max(axis=-1)
    return peak + np.log(np.exp(values - peak[..., None]).sum(axis=-1))


def _log_marginal_rows(rho: np.ndarray, logit_p: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``log sum_j expit(logit_p + rho (2 j + 1)) pmf(j)`` for 1-d arrays of (rho, p) rows.

    Row ``i`` needs offsets ``|j| <= K_i`` (neglected probability below ``TAIL_RELATIVE * p_i``).
    Rows are sorted by ``K`` and processed in blocks sharing the largest grid of the block
    (extra terms are exact, merely tiny), so one vectorised pass serves many ``rho``.
    """
    tail = np.maximum(TAIL_RELATIVE * p, 1e-300)
    halfwidth = np.empty(rho.shape, dtype=np.int64)
    for value in np.unique(tail):  # support_halfwidth takes one tail mass at a time
        rows = tail == value
        halfwidth[rows] = dg.support_halfwidth(rho[rows], float(value))
    if np.any(halfwidth > MAX_HALFWIDTH):
        bad = float(rho[np.argmax(halfwidth)])
        raise ValueError(
            f"rho = {bad!r} is too small for the exact sum over releases (grid half-width "
            f"above {MAX_HALFWIDTH}); allowed range: rho > about 2e-14"
        )
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
        log_odds = logit_p[rows, None] + _odds_term(offset + 1.0, r)
        log_w = -r * offset**2 - log_z[rows, None]
        out[rows] = _logsumexp_rows(log_expit(log_odds) + log_w)
        lo = hi
    return out


def log_marginal_posterior(rho, p=0.5, known=0) -> np.ndarray:
    r"""Log of the marginal posterior :math:`\log P[X_1 = x_1 \mid x_1 = m+1]` (paper eq. 3.3).

    .. math::

        \log \sum_{x^*} \operatorname{expit}\bigl(L(x^*)\bigr)\,
            P[X_1^* = x^* \mid x_1 = m+1]

    summed with ``logsumexp`` over the release grid
    :math:`|x^* - m - 1| \le K(\rho, p)`, where ``K`` comes from
    :func:`dprisk.models.discrete_gaussian.support_halfwidth` so that the neglected probability is
    below ``TAIL_RELATIVE * p`` (hence the neglected part of the result is below
    ``1e-16`` relative, and below 1e-15 absolute). The result does not depend on ``known``
    (supplement S1.1); it is validated and ignored. Vectorised over ``rho`` and ``p``: rows
    are sorted by grid size and evaluated in blocks that share a grid.
    """
    rho = check_rho(rho, "rho")
    p = check_probability(p, "p")
    _known(known)
    rho_b, p_b = np.broadcast_arrays(rho, p)
    flat_rho, flat_p = rho_b.ravel(), p_b.ravel()
    out = _log_marginal_rows(flat_rho, _logit(flat_p), flat_p)
    return out.reshape(rho_b.shape)


def marginal_posterior(rho, p=0.5, known=0) -> np.ndarray:
    r"""Marginal posterior :math:`P[X_1 = x_1 \mid x_1 = m+1]`, averaged over releases.

    .. math::

        \sum_{x_1^*} P[X_1 = m+1 \mid x_1^*]\; P[X_1^* = x_1^* \mid x_1 = m+1]

    (paper eq. 3.3; Table 2 and Figure 2). See :func:`log_marginal_posterior` for the grid.

    Parameters
    ----------
    rho : array_like of float (rho > 0)
    p : array_like of float (0 < p < 1)
    known : int (known >= 0)
        Validated; the result does not depend on it.
    """
    return np.exp(log_marginal_posterior(rho, p, known))


def marginal_risk(rho, p=0.5, known=0) -> np.ndarray:
    r"""Marginal risk :math:`R = P[X_1 = x_1 \mid x_1 = m+1] / p` (paper eq. 3.4).

    Always :math:`1 \le R \le 1/p` (Cauchy–Schwarz gives the lower bound).
    """
    p_arr = check_probability(p, "p")
    return np.exp(log_marginal_posterior(rho, p, known) - np.log(p_arr))


# --------------------------------------------------------------------------- decisions
def decision_threshold(rho, p=0.5, known=0) -> np.ndarray:
    r"""Smallest release :math:`\tilde x_1^*` whose posterior exceeds 1/2 (0-1 loss).

    The adversary decides :math:`\hat X_1 = m+1` iff :math:`L(x_1^*) > 0` (ties go to ``m``).
    Since ``L`` increases with :math:`x_1^*`, the decision region is
    :math:`x_1^* \ge \tilde x_1^*` with

    .. math::

        \tilde x_1^* = m + \Bigl\lfloor \tfrac12 \bigl(1 - \operatorname{logit}(p)/\rho\bigr)
                       \Bigr\rfloor + 1,

    which is then corrected by evaluating ``L`` at the neighbours with the same floating-point
    expression :func:`posterior` uses, so float ties are decided exactly as there.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    ValueError
        If the threshold does not fit in a float's exact integer range (``rho`` extremely
        small relative to ``|logit(p)|``).
    """
    rho = check_rho(rho, "rho")
    p = check_probability(p, "p")
    m = _known(known)
    logit_p = _logit(p)
    with np.errstate(over="ignore"):
        boundary = 0.5 * (1.0 - logit_p / rho)
    if np.any(~np.isfinite(boundary) | (np.abs(boundary) > 2.0**52)):
        raise ValueError(
            "rho is too small for this p: the decision threshold exceeds 2**52 in magnitude "
            "(allowed range: |logit(p)| / rho < 2**53)"
        )
    offset = np.floor(boundary) + 1.0
    for _ in range(4):
        too_high = logit_p + _odds_term(offset - 1.0, rho) > 0
        too_low = ~(logit_p + _odds_term(offset, rho) > 0)
        if not (np.any(too_high) or np.any(too_low)):
            break
        offset = offset - too_high + too_low
    else:  # pragma: no cover - the closed form is off by at most one
        raise RuntimeError("decision threshold correction did not converge")
    return m + offset.astype(np.int64)


def p_correct(rho, p=0.5, known=0) -> np.ndarray:
    r"""Probability that the 0-1-loss decision is correct, :math:`P[\hat X_1 = x_1]` (eq. 3.6).

    .. math::

        P[\hat X_1 = x_1] = P[X_1^* \ge \tilde x_1^* \mid x_1 = m+1]
                          = P[\eta_1 \ge a], \quad a = \tilde x_1^* - m - 1,

    from the exact tail :func:`dprisk.models.discrete_gaussian.log_tail` (no truncated sum): for
    ``a >= 0`` it is ``exp(log_tail(a))``, for ``a < 0`` it is ``-expm1(log_tail(1 - a))``
    (symmetry of the noise).
    """
    m = _known(known)
    threshold = decision_threshold(rho, p, known)
    rho = check_rho(rho, "rho")
    a = threshold - m - 1
    start = np.where(a >= 0, a, 1 - a)
    log_tail = dg.log_tail(start, np.broadcast_to(rho, start.shape))
    return np.where(a >= 0, np.exp(log_tail), -np.expm1(log_tail))


# --------------------------------------------------------------------------- several levels
def _levels(x_stars, rhos, p, known, name="x_stars"):
    x = check_count(x_stars, name)
    rhos = check_rho(rhos, "rhos")
    p = check_probability(p, "p")
    m = _known(known)
    if x.ndim == 0 or rhos.ndim == 0:
        raise ValueError(f"{name} and rhos must have a last axis (one entry per level/release)")
    if x.shape[-1] != rhos.shape[-1] or x.shape[-1] < 1:
        raise ValueError(
            f"{name} and rhos must have the same number of levels (>= 1) on their last axis, "
            f"got {x.shape[-1]} and {rhos.shape[-1]}"
        )
    return x, rhos, p, m


def _cumulative_log_odds(x, rhos, p, m) -> np.ndarray:
    """Log-odds after each level: ``logit(p) + (((0 + t_1) + t_2) + ... + t_i)``."""
    logit_p = _logit(p)[..., None]
    offsets = (x - np.asarray(m)[..., None]).astype(float)
    terms = _odds_term(offsets, rhos)
    partial = np.zeros(terms.shape[:-1])
    out = []
    for i in range(terms.shape[-1]):
        partial = partial + terms[..., i]
        out.append(partial)
    return logit_p + np.stack(out, axis=-1)


def log_posterior_odds_unique_levels(x_stars, rhos, p=0.5, known=0) -> np.ndarray:
    r"""Posterior log-odds for a target unique at :math:`\ell` levels (supplement S1.3).

    .. math:: L = \operatorname{logit}(p) + \sum_{i=1}^{\ell} \rho_i \bigl(2 (x_i^* - m) - 1\bigr)

    Parameters
    ----------
    x_stars : array_like of int, shape (..., ell)
        Released counts, level on the last axis.
    rhos : array_like of float (rho > 0), shape (..., ell)
        zCDP parameter of each level.
    p : array_like of float (0 < p < 1)
        Prior, broadcast against the leading axes.
    known : array_like of int (known >= 0)
        ``m``, broadcast against the leading axes.
    """
    x, rhos, p, m = _levels(x_stars, rhos, p, known)
    return _cumulative_log_odds(x, rhos, p, m)[..., -1]


def posterior_unique_levels(x_stars, rhos, p=0.5, known=0) -> np.ndarray:
    r"""Posterior :math:`P[X_1 = m+1 \mid x_1^*, \ldots, x_\ell^*]` (supplement eq. S1.1).

    .. math::

        \frac{p \prod_i e^{-\rho_i (x_i^* - m - 1)^2}}
             {p \prod_i e^{-\rho_i (x_i^* - m - 1)^2} + (1-p) \prod_i e^{-\rho_i (x_i^* - m)^2}}

    Parameters as in :func:`log_posterior_odds_unique_levels`.
    """
    return expit(log_posterior_odds_unique_levels(x_stars, rhos, p, known))


def _level_atoms(rhos, tail_per_level: float):
    """Distinct values of ``S = sum_i rho_i (2 j_i + 1)`` and their log-probabilities.

    ``j_i = x_i* - m - 1 ~ DG(0, 1/(2 rho_i))`` independently, truncated to
    ``|j_i| <= support_halfwidth(rho_i, tail_per_level)``. Levels are added one at a time
    (a convolution keyed by the exact floating-point partial sum, accumulated in the same
    order as :func:`log_posterior_odds_unique_levels`); atoms with equal keys are merged.
    """
    s_vals = np.zeros(1)
    log_w = np.zeros(1)
    for rho in rhos:
        halfwidth = int(dg.support_halfwidth(rho, tail_per_level))
        j = np.arange(-halfwidth, halfwidth + 1, dtype=float)
        level_s = _odds_term(j + 1.0, rho)
        level_w = -rho * j**2 - dg_log_normalizer(np.asarray(rho))
        size = s_vals.size * j.size
        if size > MAX_ATOMS:
            raise ValueError(
                f"exact enumeration needs {size} atoms (> MAX_ATOMS = {MAX_ATOMS}); use "
                f"method='contour' or fewer levels"
            )
        s_vals = (s_vals[:, None] + level_s[None, :]).ravel()
        log_w = (log_w[:, None] + level_w[None, :]).ravel()
        s_vals, log_w = _merge_atoms(s_vals, log_w)
    return s_vals, log_w


def _merge_atoms(s_vals: np.ndarray, log_w: np.ndarray):
    """Merge atoms with identical keys (log-sum-exp of their weights); keys sorted."""
    uniq, inverse = np.unique(s_vals, return_inverse=True)
    if uniq.size == s_vals.size:
        order = np.argsort(s_vals, kind="stable")
        return s_vals[order], log_w[order]
    peak = np.full(uniq.size, -np.inf)
    np.maximum.at(peak, inverse, log_w)
    total = np.bincount(inverse, weights=np.exp(log_w - peak[inverse]), minlength=uniq.size)
    return uniq, peak + np.log(total)


def _split_atoms(rhos, tail_per_level: float):
    """Atoms of the first levels (as many as fit in MAX_ATOMS) and of the remaining ones."""
    sizes = [2 * int(dg.support_halfwidth(r, tail_per_level)) + 1 for r in rhos]
    cut, count = 0, 1
    while cut < len(rhos) and count * sizes[cut] <= MAX_ATOMS:
        count *= sizes[cut]
        cut += 1
    cut = max(cut, 1)
    first = _level_atoms(rhos[:cut], tail_per_level)
    rest = _level_atoms(rhos[cut:], tail_per_level) if cut < len(rhos) else (
        np.zeros(1), np.zeros(1))
    return first, rest


def _log_marginal_enumerate(rhos: np.ndarray, logit_p: np.ndarray, p_min: float) -> np.ndarray:
    tail = TAIL_RELATIVE * p_min / rhos.size
    (s_a, w_a), (s_b, w_b) = _split_atoms(rhos, tail)
    pairs = s_a.size * s_b.size
    if pairs > MAX_PAIRS:
        raise ValueError(
            f"exact enumeration needs {pairs:.3g} (atom, atom) evaluations per prior "
            f"(> MAX_PAIRS = {MAX_PAIRS:.3g}); use method='contour'"
        )
    out = np.empty(logit_p.shape)
    rows = max(1, _CHUNK // s_b.size)
    for k, lp in enumerate(logit_p):
        parts = []
        for lo in range(0, s_a.size, rows):
            block = lp + s_a[lo : lo + rows, None] + s_b[None, :]
            parts.append(logsumexp(log_expit(block) + w_a[lo : lo + rows, None] + w_b[None, :]))
        out[k] = logsumexp(parts)
    return out


def _log_mgf(s: np.ndarray, rho: float) -> np.ndarray:
    r"""``log E[exp(2 s rho J)]``, ``J ~ DG(0, 1/(2 rho))``, for complex ``s`` with 0 <= Re s <= 1.

    .. math:: \log \sum_k e^{-\rho k^2 + 2 \rho s k} - \log Z(\rho)
              = \rho a^2 + \log \sum_k e^{-\rho (k - a)^2 + 2 i \rho \tau k} - \log Z(\rho)

    with ``s = a + i tau``; every term has modulus <= 1 (no overflow, no cancellation beyond
    the sum's own).
    """
    halfwidth = int(dg.support_halfwidth(rho, 1e-20)) + 1
    k = np.arange(-halfwidth, halfwidth + 2, dtype=float)
    a = s.real[..., None]
    tau = s.imag[..., None]
    terms = np.exp(-rho * (k - a) ** 2 + 2j * rho * tau * k)
    # Far out on the line the sum cancels to rounding noise (|G| ~ e^{-rho tau^2} there); an
    # exact 0 becomes log 0 = -inf, i.e. a zero integrand, which is correct to that noise.
    with np.errstate(divide="ignore"):
        log_sum = np.log(terms.sum(-1))
    return rho * s.real**2 + log_sum - dg_log_normalizer(np.asarray(rho))


def _log_marginal_contour_one(rhos: np.ndarray, logit_p: float, p: float) -> float:
    r"""Marginal posterior for ``ell`` levels by a Mellin–Barnes integral (see module notes).

    With :math:`T = \sum_i \rho_i j_i` and :math:`c = \operatorname{logit}(p) + \sum_i \rho_i`
    the marginal posterior is :math:`M = E[\operatorname{expit}(c + 2T)]`. Using
    :math:`\operatorname{expit}(x) = \frac{1}{2\pi i}\int_{a - i\infty}^{a + i\infty}
    e^{s x} \frac{\pi}{\sin \pi s}\, ds` for :math:`0 < a < 1`,

    .. math::

        M = \frac{1}{2\pi} \int_{-\infty}^{\infty} e^{s c} \prod_i E[e^{2 s \rho_i j_i}]\,
            \frac{\pi}{\sin \pi s}\, d\tau, \qquad s = a + i\tau .

    The integrand is analytic in the strip :math:`|\mathrm{Im}\,\tau| < \min(a, 1-a)` and
    decays like :math:`e^{-\pi|\tau|}`, so the trapezoidal rule converges geometrically; ``a`` is
    the saddle point of the integrand's modulus (fewest digits lost to cancellation) and the
    step is chosen from the strip width and the growth of the integrand inside it.
    """
    c = logit_p + float(rhos.sum())

    def phi(a):  # log of the integrand's modulus scale on the line Re s = a (convex in a)
        a = np.asarray(a, dtype=float)
        total = a * c - np.log(np.sin(np.pi * a))
        for rho in rhos:
            total = total + _log_mgf(a.astype(complex), float(rho)).real
        return total

    grid = np.linspace(0.005, 0.995, 199)
    a = float(grid[np.argmin(phi(grid))])
    d = min(a, 1.0 - a)
    half = 0.5 * d
    growth = float(max(phi(a - half), phi(a + half)) - phi(a))
    log_scale = float(phi(a)) + np.log(np.pi)
    lost = max(0.0, log_scale - np.log(p))  # log(scale / M) <= log(scale / p), since M >= p
    step = 2.0 * np.pi * half / (42.0 + growth + lost)
    tau_max = (44.0 + lost + np.log(1.0 / step)) / np.pi + 1.0
    tau = np.arange(0.0, tau_max + step, step)
    s = a + 1j * tau
    # log(pi / sin(pi s)) via sin(pi s) = e^{-i pi s} (e^{2 i pi s} - 1) / (2i); |e^{2i pi s}| <= 1
    log_sin = -1j * np.pi * s + np.log(np.exp(2j * np.pi * s) - 1.0) - np.log(2j)
    log_f = s * c + np.log(np.pi) - log_sin
    for rho in rhos:
        log_f = log_f + _log_mgf(s, float(rho))
    f = np.exp(log_f - log_scale).real
    integral = step * (0.5 * f[0] + f[1:].sum()) / np.pi
    if not integral > 0:  # pragma: no cover - would mean total cancellation
        raise FloatingPointError("contour integral lost all precision")
    return log_scale + np.log(integral)


def log_marginal_posterior_unique_levels(rhos, p=0.5, known=0, *, method="auto") -> np.ndarray:
    r"""Log of the marginal posterior for a target unique at ``ell`` levels (supplement S1.3).

    .. math::

        \log \sum_{x_1^*, \ldots, x_\ell^*} P[X_1 = m+1 \mid x_1^*, \ldots, x_\ell^*]
        \prod_i P[X_i^* = x_i^* \mid x_1 = m+1]

    The posterior depends on the releases only through
    :math:`S = \sum_i \rho_i (2 (x_i^* - m) - 1)`, so the sum runs over the distinct values
    of ``S``.

    Parameters
    ----------
    rhos : sequence of float (rho > 0), length ell >= 1
    p : array_like of float (0 < p < 1)
    known : int (known >= 0)
        Validated; the result does not depend on it.
    method : {"auto", "enumerate", "contour"}
        ``"enumerate"``: exact finite sum over the joint release grid, built level by level
        with atoms keyed by the partial sum and evaluated as (first levels) x (remaining
        levels) pairs; neglected probability below ``TAIL_RELATIVE * p``. Its cost is the
        product of the per-level grid sizes (about 41, 27, 57, 57, 57, 57 for the Census
        levels at p = 1/2, a little more for small p): 6.3e4 evaluations for ell = 3, 3.6e6
        for ell = 4, 2e8 for ell = 5 and 1.2e10 (2.1e10 at p = 1/864) for ell = 6, i.e. about
        20 minutes per prior at the measured 1.7e7 evaluations/s (refused above
        ``MAX_PAIRS``).
        ``"contour"``: the Mellin–Barnes integral of :func:`_log_marginal_contour_one`,
        accurate to about 1e-13 relative for any ell (a few thousand quadrature nodes,
        milliseconds; tested against ``"enumerate"``; the relative error grows like
        ``ulp(logit p)`` for extreme p, 1e-13 at p = 1e-300). ``"auto"`` enumerates when
        the number of pairs is at most ``5e6`` and integrates otherwise.
    """
    rhos = check_rho(rhos, "rhos")
    p = check_probability(p, "p")
    _known(known)
    if rhos.ndim != 1 or rhos.size < 1:
        raise ValueError(f"rhos must be a 1-d sequence with at least one level, got {rhos!r}")
    if method not in UNIQUE_LEVELS_METHODS:
        raise ValueError(
            f"method must be one of {', '.join(UNIQUE_LEVELS_METHODS)}, got {method!r}"
        )
    flat_p = p.ravel()
    logit_p = _logit(flat_p)
    if method == "auto":
        tail = TAIL_RELATIVE * float(flat_p.min()) / rhos.size
        sizes = [2 * int(dg.support_halfwidth(r, tail)) + 1 for r in rhos]
        method = "enumerate" if float(np.prod(sizes, dtype=float)) <= 5e6 else "contour"
    if method == "enumerate":
        out = _log_marginal_enumerate(rhos, logit_p, float(flat_p.min()))
    else:
        out = np.array([
            _log_marginal_contour_one(rhos, float(lp), float(pp))
            for lp, pp in zip(logit_p, flat_p, strict=True)
        ])
        out = np.minimum(out, 0.0)  # a probability; quadrature rounding may exceed 1 by ~1e-15
    return out.reshape(p.shape)


def marginal_posterior_unique_levels(rhos, p=0.5, known=0, *, method="auto") -> np.ndarray:
    r"""Marginal posterior for a target unique at ``ell`` levels (supplement S1.3, Figure S1).

    See :func:`log_marginal_posterior_unique_levels` for the methods and their cost. With one
    level it equals :func:`marginal_posterior`.
    """
    return np.exp(log_marginal_posterior_unique_levels(rhos, p, known, method=method))


def marginal_risk_unique_levels(rhos, p=0.5, known=0, *, method="auto") -> np.ndarray:
    """Marginal risk for ``ell`` levels: :func:`marginal_posterior_unique_levels` / ``p``."""
    p_arr = check_probability(p, "p")
    return np.exp(
        log_marginal_posterior_unique_levels(rhos, p, known, method=method) - np.log(p_arr)
    )


def p_correct_unique_levels(rhos, p=0.5, known=0) -> np.ndarray:
    r"""Probability that the 0-1-loss decision is correct with ``ell`` unique levels.

    .. math:: P[\operatorname{logit}(p) + S > 0 \mid x_1 = m+1],
              \quad S = \sum_i \rho_i (2 j_i + 1), \; j_i \sim \mathrm{DG}(0, 1/(2\rho_i))

    Exact: the atoms of ``S`` are split into the first levels (``S_A``) and the rest
    (``S_B``); with ``S_B`` sorted and its upper-tail sums accumulated from the top,
    :math:`P = \sum_a w_a P[S_B > -\operatorname{logit}(p) - s_a]` costs
    :math:`O(N_A \log N_B)` (milliseconds for the six Census levels). Neglected probability
    below ``TAIL_ABSOLUTE`` (absolute); one level is delegated to :func:`p_correct` (exact
    tail, accurate relative to arbitrarily small probabilities). When all levels fit in one
    enumeration (``S_B = 0``) the decision is made with exactly the floating-point sum
    :func:`posterior_unique_levels` uses; otherwise a release whose log-odds is within a few
    ulp of 0 may be classified differently.

    Parameters
    ----------
    rhos : sequence of float (rho > 0), length ell >= 1
    p : array_like of float (0 < p < 1)
    known : int (known >= 0)
        Validated; the result does not depend on it.
    """
    rhos = check_rho(rhos, "rhos")
    p = check_probability(p, "p")
    _known(known)
    if rhos.ndim != 1 or rhos.size < 1:
        raise ValueError(f"rhos must be a 1-d sequence with at least one level, got {rhos!r}")
    if rhos.size == 1:
        return p_correct(rhos[0], p, known)
    (s_a, w_a), (s_b, w_b) = _split_atoms(rhos, TAIL_ABSOLUTE / rhos.size)
    prob_b = np.exp(w_b)
    upper = np.cumsum(prob_b[::-1])[::-1]  # upper[i] = P[S_B >= s_b[i]], summed from the top
    upper = np.append(upper, 0.0)
    prob_a = np.exp(w_a)
    out = np.empty(p.size)
    for k, lp in enumerate(_logit(p.ravel())):
        idx = np.searchsorted(s_b, -lp - s_a, side="right")  # first s_b with s_b > -lp - s_a
        out[k] = np.dot(prob_a, upper[idx])
    return out.reshape(p.shape)


# --------------------------------------------------------------------------- sequential
class SequentialRisk(NamedTuple):
    r"""Risks of sequential releases (supplement S5), release on the last axis.

    Attributes
    ----------
    per_release : ndarray
        :math:`R'(x_i^* \mid x_1^*, \ldots, x_{i-1}^*)`: posterior after release ``i`` over
        the posterior after release ``i - 1`` (the prior ``p`` for ``i = 1``).
    cumulative : ndarray
        :math:`R'(x_1^*, \ldots, x_i^*)`: posterior after release ``i`` over ``p``; equal to
        the running product of ``per_release``.
    """

    per_release: np.ndarray
    cumulative: np.ndarray


def sequential_posterior(x1_stars, rhos, p=0.5, known=0) -> np.ndarray:
    r"""Posterior after each of several releases of the same count (supplement S5).

    The prior of release :math:`i+1` is the posterior after release :math:`i`; in log-odds
    this is a running sum,

    .. math:: L_i = \operatorname{logit}(p) + \sum_{k \le i} \rho_k \bigl(2 (x_k^* - m) - 1\bigr),

    so the last entry equals :func:`posterior_unique_levels` of all releases at once.

    Parameters
    ----------
    x1_stars : array_like of int, shape (..., n_releases)
    rhos : array_like of float (rho > 0), shape (..., n_releases)
    p : array_like of float (0 < p < 1)
    known : array_like of int (known >= 0)

    Returns
    -------
    ndarray, shape (..., n_releases)
    """
    x, rhos, p, m = _levels(x1_stars, rhos, p, known, "x1_stars")
    return expit(_cumulative_log_odds(x, rhos, p, m))


def sequential_risk(x1_stars, rhos, p=0.5, known=0) -> SequentialRisk:
    r"""Per-release and cumulative :math:`R'` of sequential releases (supplement S5).

    .. math::

        R'(x_1^*, \ldots, x_n^*) = \prod_{i=1}^{n} R'(x_i^* \mid x_1^*, \ldots, x_{i-1}^*),
        \quad R'(x_i^* \mid \cdot) = \frac{P[X_1 = m+1 \mid x_1^*, \ldots, x_i^*]}
                                          {P[X_1 = m+1 \mid x_1^*, \ldots, x_{i-1}^*]}

    computed from log-posteriors (``log_expit``), so products of many releases neither
    overflow nor underflow: ``cumulative`` is always finite (at most ``1/p``). A single
    ``per_release`` factor can exceed the float range when one release undoes an
    overwhelming earlier one (e.g. rho = 1e4 and releases -1e4 then +1e4: the true factor is
    about e^{2e8}); it is then ``inf`` (without a warning), as IEEE overflow prescribes.
    Parameters as in :func:`sequential_posterior`.
    """
    x, rhos, p, m = _levels(x1_stars, rhos, p, known, "x1_stars")
    log_odds = _cumulative_log_odds(x, rhos, p, m)
    post, log_post = expit(log_odds), log_expit(log_odds)
    prior = np.broadcast_to(p[..., None], (*post.shape[:-1], 1))
    log_prior = np.log(prior)
    previous = np.concatenate([prior, post[..., :-1]], axis=-1)
    log_previous = np.concatenate([log_prior, log_post[..., :-1]], axis=-1)
    return SequentialRisk(
        per_release=_probability_ratio(post, log_post, previous, log_previous),
        cumulative=_probability_ratio(post, log_post, prior, log_prior),
    )
