r"""The constraint-dropping Gibbs sampler behind the paper's MCMC numbers (Tables 7-8, Figs 5-6).

The paper's Gibbs sampler, *as its published numbers suggest it was run*, alternates the
model's X2 update (eq. X2fc: ``k2 >= k1`` and the prior) with the X1 update of eq. (X1fc)
*without* its support condition ``k1 <= k2``,

.. math:: P_{\text{unc}}[X_1 = k_1 \mid k_2, D] \propto P[X_1 = k_1]\,
          e^{-\rho_1 (x_1^* - k_1)^2 - (\rho_1/d)(y_1^* - k_2 + k_1)^2},

so that for ``k1 in {m, m+1}`` (:func:`variant_x1_logit`)

.. math:: \operatorname{logit} P_{\text{unc}}[X_1 = m+1 \mid k_2, D]
          = \operatorname{logit} p + \rho_1 (2 (x_1^* - m) - 1)
            - (\rho_1/d)\,(2 (y_1^* - k_2 + m) + 1).

It equals the correct :math:`P[X_1 = m+1 \mid X_2 = k_2]` (improper prior) for
``k2 >= m + 1``; at ``k2 = m`` the correct value is 0, this one is not. Its X1 path is a
two-state Markov chain with

.. math:: T(k_1 \to k_1') = \sum_{k_2 \ge k_1} P[X_2 = k_2 \mid X_1 = k_1, D]\,
          P_{\text{unc}}[X_1 = k_1' \mid k_2, D],

whose stationary probability is :math:`\pi_1 = T_{01} / (T_{01} + T_{10})`
(:func:`variant_stationary` for one release with its X2 law, :func:`variant_log_odds` and
:class:`VariantTables` vectorised over releases). It is NOT the model's posterior: it
reproduces the paper's MCMC Tables 7-8 (P[X1 = 1 | D] = 0.5777 against the exact 0.5033).
:func:`variant_gibbs_sample` runs it; :func:`tabulated_gibbs` is the two-block sweep on
tabulated conditionals that both it and the SBC reference samplers use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit as _scipy_expit
from scipy.special import log_expit, logsumexp

from dprisk.inference.studies.logit_tables import windowed_expit
from dprisk.inference.studies.setup import (
    TIE_ATOL,
    branch_conditionals,
    posterior_table,
    row_chunks,
)
from dprisk.inference.two_level.gibbs import ExactConditionals, GibbsDraws
from dprisk.models.checks import check_count, check_positive_int
from dprisk.models.numerics import expit
from dprisk.models.scenario import Scenario

__all__ = [
    "VariantLaw",
    "VariantTables",
    "tabulated_gibbs",
    "variant_gibbs_sample",
    "variant_log_odds",
    "variant_prob_x1",
    "variant_stationary",
    "variant_thresholds",
    "variant_x1_logit",
    "x1_release_term",
    "x1_update_window",
    "x1_window_term",
]


# --------------------------------------------------------------------------- the X1 update
def x1_release_term(x1_offset, *, rho1: float, p: float):
    """``logit p + rho1 (2 (x1* - m) - 1)``: the part of the X1 update that does not see k2."""
    return math.log(p) - math.log1p(-p) + rho1 * (2.0 * x1_offset - 1.0)


def x1_window_term(y1_star, k2, *, rho1: float, d: int, known: int):
    """``-(rho1/d) (2 (y1* - k2 + m) + 1)``: the part of the X1 update that depends on k2."""
    return -(rho1 / d) * (2.0 * (y1_star - k2 + known) + 1.0)


def x1_update_window(release, base, width: int, params: Scenario, function=expit):
    """``function(release[r] + x1_window_term)`` on row r's k2 window, shape (R, W) (kernel).

    ``base[r] = y1* - k2 + m`` at the row's first k2. Evaluated once per distinct pair of
    release term and k2 term (:func:`dprisk.inference.studies.logit_tables.windowed_expit`):
    the values of ``function(release[:, None] + x1_window_term(y1*, k2))``, bit for bit.
    """
    release, base = np.asarray(release, dtype=float).ravel(), np.asarray(base).ravel()
    if base.dtype.kind not in "iu":  # releases given as floats: the cells directly
        base = base[:, None] - np.arange(width)
        return function(release[:, None] + x1_window_term(base, 0, rho1=params.rho1,
                                                          d=params.d, known=0))
    return windowed_expit(release, base, width, lambda delta: x1_window_term(
        delta, 0, rho1=params.rho1, d=params.d, known=0), function)


def variant_x1_logit(x1_star, y1_star, k2, *, rho1, d, p=0.5, known=0):
    r"""Log-odds of the variant's X1 update (eq. X1fc without ``k1 <= k2``).

    :math:`\operatorname{logit} P_{\text{unc}}[X_1 = m+1 \mid k_2, D]` is

    .. math:: \operatorname{logit} p + \rho_1 (2 (x_1^* - m) - 1)
              - (\rho_1/d)\,(2 (y_1^* - k_2 + m) + 1)

    Kernel: validated parameters; arrays broadcast (a Python float for scalar inputs).
    """
    logit = (x1_release_term(np.asarray(x1_star) - known, rho1=rho1, p=p)
             + x1_window_term(y1_star, k2, rho1=rho1, d=d, known=known))
    return float(logit) if np.ndim(logit) == 0 else logit


def variant_prob_x1(k2, *, x1_star, y1_star, rho1, d, p=0.5, known=0) -> np.ndarray:
    r""":math:`P_{\text{unc}}[X_1 = m + 1 \mid X_2 = k_2]`, the variant's X1 update.

    .. math::

        P_{\text{unc}}[X_1 = k_1 \mid k_2] \propto \exp\Big\{-\tfrac{d+1}{d}\rho_1
        \Big[k_1 - \tfrac{d x_1^* + (k_2 - y_1^*)}{d+1}\Big]^2\Big\}\, P[X_1 = k_1],

    the expit of :func:`variant_x1_logit`. Kernel: validated parameters; a Python float
    for scalar inputs.
    """
    k2 = np.asarray(k2, dtype=float)
    prob = expit(variant_x1_logit(x1_star, y1_star, k2, rho1=rho1, d=d, p=p, known=known))
    return float(prob) if np.ndim(prob) == 0 else prob


# --------------------------------------------------------------------------- many releases
class VariantTables:
    r"""Per ``(x2*, y1*)``: the model's ``P[k2 | k1, D]`` and the variant's X1 update.

    ``log_odds(j)`` is :math:`\log T_{01} - \log T_{10}` at ``x1* = m + j`` with
    :math:`T_{01} = \sum_{k_2} P[k_2 \mid m] \operatorname{expit}(z)`,
    :math:`T_{10} = \sum_{k_2} P[k_2 \mid m+1] \operatorname{expit}(-z)`, ``z`` the
    :func:`variant_x1_logit`. Kernel: ``params`` validated.

    Raises
    ------
    ValueError
        If the prior rules out ``X1 = m + 1`` (the variant needs both values possible).
    """

    def __init__(self, x2s, y1s, params: Scenario):
        table = posterior_table(params.known, x2s, y1s, params)
        if not table.feasible.all():
            raise ValueError(
                f"prior {params.prior.spec!r} rules out X1 = {params.known + 1}; the "
                "constraint-dropping Gibbs variant needs both values of X1 possible"
            )
        self.params = params
        self.cond = branch_conditionals(table)
        # y1* - k2 + m at each row's first k2: the window term's integer (:attr:`g`)
        self.base = np.asarray(y1s).ravel() - table.k2_start + params.known
        # the exact model's log-odds at x1* = m, from the same table (its branch masses):
        # where the variant's threshold search starts (:func:`_bisection`)
        mass = table.log_branch_mass
        with np.errstate(invalid="ignore"):
            self.exact_at_known = mass[:, 1] - mass[:, 0]

    def rows(self, index) -> VariantTables:
        """The tables of the releases ``index`` selects (an index array, mask or slice).

        Each row's :meth:`log_odds` depends on that row's ``cond`` and ``g`` alone, so the
        subset's values are the full tables' values of those rows, bit for bit.
        """
        subset = object.__new__(VariantTables)  # the built tables, not a new posterior table
        subset.params = self.params
        subset.cond = self.cond[index]
        subset.base = self.base[index]
        subset.exact_at_known = self.exact_at_known[index]
        return subset

    @property
    def g(self) -> np.ndarray:
        """The window term :func:`x1_window_term` on each row's k2 window, shape (R, W)."""
        delta = self.base[:, None] - np.arange(self.cond.shape[-1])
        return x1_window_term(delta, 0, rho1=self.params.rho1, d=self.params.d, known=0)

    def log_odds(self, offset: np.ndarray) -> np.ndarray:
        """Stationary log-odds of ``X1 = m + 1`` at ``x1* = m + offset`` (one per row)."""
        release = x1_release_term(offset, rho1=self.params.rho1, p=self.params.p)
        up = x1_update_window(release, self.base, self.cond.shape[-1], self.params,
                              _scipy_expit)
        term = np.multiply(self.cond[:, 0], up)  # reused in place: same values, fewer arrays
        t01 = term.sum(-1)
        np.subtract(1.0, up, out=up)
        t10 = np.multiply(self.cond[:, 1], up, out=term).sum(-1)
        with np.errstate(divide="ignore"):
            out = np.log(t01) - np.log(t10)
        # Far from the boundary the direct sums can underflow: redo those rows in log space.
        tiny = (t01 < 1e-200) | (t10 < 1e-200)
        if tiny.any():
            cond = self.cond[tiny]
            z = release[tiny][:, None] + self.rows(tiny).g
            with np.errstate(divide="ignore"):
                log_t01 = logsumexp(np.log(cond[:, 0]) + log_expit(z), axis=-1)
                log_t10 = logsumexp(np.log(cond[:, 1]) + log_expit(-z), axis=-1)
            out[tiny] = log_t01 - log_t10
        return out


def variant_log_odds(x1_star, x2_star, y1_star, *, rho1, rho2, d, p=0.5, known=0,
                     prior="improper") -> np.ndarray:
    r"""Log-odds of the stationary X1 law of the constraint-dropping Gibbs sampler.

    :math:`\log(\pi_1 / (1 - \pi_1)) = \log T_{01} - \log T_{10}` (module docstring), per
    release (arrays broadcast; a Python float for scalar releases). It is NOT the model's
    posterior (it reproduces the paper's MCMC Tables 7-8).
    """
    params = Scenario.two_level(rho1=rho1, rho2=rho2, d=d, p=p, known=known,
                                      prior=prior)
    x1s, x2s, y1s = (a.ravel() for a in np.broadcast_arrays(check_count(x1_star, "x1_star"),
                                                            check_count(x2_star, "x2_star"),
                                                            check_count(y1_star, "y1_star")))
    shape = np.broadcast_shapes(np.shape(x1_star), np.shape(x2_star), np.shape(y1_star))
    out = np.empty(x1s.size)
    for rows in row_chunks(x1s.size, params):
        tables = VariantTables(x2s[rows], y1s[rows], params)
        out[rows] = tables.log_odds((x1s[rows] - params.known).astype(float))
    return float(out[0]) if shape == () else out.reshape(shape)


def variant_thresholds(x2s, y1s, params: Scenario):
    """Decision thresholds ``t - m`` of the variant and ties, per ``(x2*, y1*)`` (kernel).

    The variant decides ``m + 1`` iff its stationary log-odds exceeds :data:`TIE_ATOL`; the
    log-odds increases with ``x1*``, so the threshold is found by vectorised integer
    bisection. Returns ``(offset, tie)`` as
    :func:`dprisk.inference.studies.thresholds.linear_thresholds`.
    """
    flat2, flaty = np.ravel(x2s), np.ravel(y1s)
    threshold = np.empty(flat2.size)
    tie = np.empty(flat2.size, dtype=bool)
    for rows in row_chunks(flat2.size, params):
        threshold[rows], tie[rows] = _bisection(VariantTables(flat2[rows], flaty[rows], params))
    return threshold.reshape(np.shape(x2s)), tie.reshape(np.shape(x2s))


def _linear_guess(odds: np.ndarray, slope: float) -> np.ndarray:
    """Offsets from ``j`` to the smallest ``j'`` with ``odds + slope (j' - j) > TIE_ATOL``.

    Non-finite guesses (a log-odds of ``±inf`` or NaN) are 0; the others are clipped to
    ``±2**40`` (a guess is only a start: :func:`_bisection` checks it).
    """
    with np.errstate(invalid="ignore", over="ignore"):
        guess = np.floor((TIE_ATOL - odds) / slope) + 1.0
    return np.where(np.isfinite(guess), np.clip(guess, -2.0**40, 2.0**40), 0.0)


def _bisection(tables: VariantTables):
    """Smallest integer offset ``j`` with log-odds above :data:`TIE_ATOL`, and the tie flag.

    The log-odds increases with ``j``, so that offset is unique. It is guessed twice with the
    slope ``2 rho1`` (the exact model's, which the variant shares wherever the dropped
    constraint does not matter): first from the exact model's log-odds at ``j = 0`` (the
    table's branch masses, no pass over the table), then from the variant's log-odds at that
    first guess; the second guess is checked at itself and one below, one of which is
    usually the first guess (its value known): so two passes over the table, plus a pass
    over the rows where neither is. The rows where that bracket fails are found by
    :func:`_bracketed_bisection`. Each row's log-odds depends on that row and its offset
    only, so the answer is the same as bisection everywhere, bit for bit.
    """
    slope = 2.0 * tables.params.rho1
    first = _linear_guess(tables.exact_at_known, slope)
    first_odds = tables.log_odds(first)
    guess = np.clip(first + _linear_guess(first_odds, slope), -2.0**40, 2.0**40)
    first_is_hi = guess == first  # then the value below is needed, else the guess's
    second_odds = tables.log_odds(np.where(first_is_hi, guess - 1.0, guess))
    hi_odds = np.where(first_is_hi, first_odds, second_odds)
    lo_odds = np.where(first_is_hi, second_odds, first_odds)
    below = ~first_is_hi & (guess - 1.0 != first)  # neither value known below the guess
    if below.any():
        rows = np.flatnonzero(below)
        lo_odds[rows] = tables.rows(rows).log_odds(guess[rows] - 1.0)
    failed = ~((hi_odds > TIE_ATOL) & ~(lo_odds > TIE_ATOL))
    tie = np.abs(lo_odds) <= TIE_ATOL
    if failed.any():
        rows = np.flatnonzero(failed)
        guess[rows], tie[rows] = _bracketed_bisection(tables.rows(rows))
    return guess, tie


def _bracketed_bisection(tables: VariantTables):
    """:func:`_bisection` from the bracket ``[-8, 8]``, doubled until it holds."""
    n = tables.base.shape[0]
    lo = np.full(n, -8.0)  # offsets j = x1* - m with log-odds <= TIE_ATOL (to be checked)
    hi = np.full(n, 8.0)   # offsets with log-odds > TIE_ATOL
    for _ in range(60):
        lo_odds = tables.log_odds(lo)  # kept with lo: each row's value depends on its row only
        bad_lo = lo_odds > TIE_ATOL
        bad_hi = ~(tables.log_odds(hi) > TIE_ATOL)
        if not (bad_lo.any() or bad_hi.any()):
            break
        width = hi - lo
        lo = np.where(bad_lo, lo - width, lo)
        hi = np.where(bad_hi, hi + width, hi)
    else:  # pragma: no cover - the log-odds grows like 2 rho1 j
        raise RuntimeError("could not bracket the variant's decision threshold")
    while np.any(hi - lo > 1):
        mid = np.floor((lo + hi) / 2)
        mid_odds = tables.log_odds(mid)
        above = mid_odds > TIE_ATOL
        active = hi - lo > 1
        hi = np.where(active & above, mid, hi)
        lo = np.where(active & ~above, mid, lo)
        lo_odds = np.where(active & ~above, mid_odds, lo_odds)
    return hi, np.abs(lo_odds) <= TIE_ATOL


def variant_chain_up(table, x1_star, y1_star, params: Scenario) -> np.ndarray:
    """The variant's X1 update ``P_unc[X1 = m + 1 | k2, D]`` on a joint table's window.

    Kernel for the X1 chain of :mod:`dprisk.inference.studies.finite_draws`, shape (R, W).

    Raises
    ------
    ValueError
        If the prior rules out ``X1 = m + 1``.
    """
    if not table.feasible.all():
        raise ValueError(f"prior {params.prior.spec!r} rules out X1 = {params.known + 1}; "
                         "the constraint-dropping variant needs both values possible")
    release = x1_release_term(np.asarray(x1_star) - params.known, rho1=params.rho1, p=params.p)
    base = np.asarray(y1_star) - table.k2_start + params.known
    return x1_update_window(release, base, table.width, params)


# --------------------------------------------------------------------------- one release
@dataclass(frozen=True)
class VariantLaw:
    """Stationary law of the variant Gibbs sampler for one release.

    Attributes
    ----------
    prob_x1 : float
        Stationary ``P[X1 = m + 1]``.
    k2_values : ndarray
        The X2 window.
    x2_pmf : ndarray
        Stationary ``P[X2 = k2]`` on the window.
    transition : ndarray, shape (2, 2)
        ``T[b, b'] = P[X1' = m + b' | X1 = m + b]`` of the variant's X1 chain.
    """

    prob_x1: float
    k2_values: np.ndarray
    x2_pmf: np.ndarray
    transition: np.ndarray

    def x2_pmf_at(self, k2) -> np.ndarray:
        """``P[X2 = k2]`` for integer ``k2`` (0 outside the window)."""
        k2 = np.asarray(k2)
        offset = k2 - self.k2_values[0]
        inside = (offset >= 0) & (offset < self.k2_values.size)
        return np.where(inside, self.x2_pmf[np.clip(offset, 0, self.k2_values.size - 1)], 0.0)


def _one_release(x1_star, x2_star, y1_star, *, rho1, rho2, d, p, known):
    """Validated conditionals of one release (improper prior) and the variant's X1 update."""
    cond = ExactConditionals(x1_star, x2_star, y1_star, rho1=rho1, rho2=rho2, d=d, p=p,
                             known=known, prior="improper")
    params = cond.params
    x1, _, y1 = cond.release
    p_unc = variant_prob_x1(cond.k2_values, x1_star=x1, y1_star=y1, rho1=params.rho1,
                            d=params.d, p=params.p, known=params.known)
    return cond, p_unc


def variant_stationary(x1_star, x2_star, y1_star, *, rho1, rho2, d, p=0.5, known=0
                       ) -> VariantLaw:
    r"""Exact stationary law of the variant sampler (improper prior, the paper's setting).

    ``T[b, b'] = sum_k2 P[X2 = k2 | X1 = m + b] P_unc[X1 = m + b' | k2]`` with the correct
    X2 conditional (``k2 >= k1``, :class:`dprisk.inference.two_level.gibbs.ExactConditionals`) and
    :func:`variant_prob_x1`; stationary ``P[X1 = m+1] = T[0, 1] / (T[0, 1] + T[1, 0])`` and
    ``P[X2 = k2] = sum_b pi_b P[X2 = k2 | X1 = m + b]``.
    """
    cond, p_unc = _one_release(x1_star, x2_star, y1_star, rho1=rho1, rho2=rho2, d=d, p=p,
                               known=known)
    to_one = cond.x2_pmf_table @ p_unc
    transition = np.stack([1.0 - to_one, to_one], axis=1)
    prob_x1 = float(transition[0, 1] / (transition[0, 1] + transition[1, 0]))
    x2_pmf = (1.0 - prob_x1) * cond.x2_pmf_table[0] + prob_x1 * cond.x2_pmf_table[1]
    return VariantLaw(prob_x1, cond.k2_values.copy(), x2_pmf, transition)


# --------------------------------------------------------------------------- sampling
#: Table cells (sweeps x chains x window) of one block of :func:`tabulated_gibbs`'s sweeps.
_BLOCK_CELLS = 1 << 21
#: Chains x window up to which :func:`tabulated_gibbs` computes its sweeps together (two
#: candidate draws of X2 per sweep, no Python loop over sweeps); beyond it, a loop over sweeps
#: costs less (its fixed cost per sweep is then small against the table's work).
_TOGETHER_CELLS = 2048


def tabulated_gibbs(x2_pmf, prob_x1, k2_start, *, p, known, draws, tune, chains, rng
                    ) -> GibbsDraws:
    r"""Two-block Gibbs sweeps ``X1 ~ prob_x1[X2]`` then ``X2 ~ x2_pmf[X1]`` on tables (kernel).

    Vectorised over releases and chains: chains start at X1 from its prior
    (``m + Bernoulli(p)``) and X2 from its conditional; X2 is drawn by inverse CDF on the
    window; ``tune`` sweeps are discarded.

    Sweep ``t`` reads two uniforms per chain, ``u`` for X1 and ``v`` for X2 (the stream of
    ``rng.random(n)`` called twice per sweep, the start first): X1's branch is
    ``b_t = [u_t < prob_x1[i_{t-1}]]`` and X2's window index is
    ``i_t = min(#{w: v_t >= F_{b_t}(w)}, W - 1)``, ``F_b`` the CDF of ``x2_pmf[b]``. Both
    candidate indices ``i_t(b)`` depend on ``v_t`` only, so they are computed for every sweep
    at once; the branch then follows ``b_t = g_t(b_{t-1})`` with
    ``g_t(b) = [u_t < prob_x1[i_{t-1}(b)]]``, a map of ``{0, 1}`` that is constant (a reset),
    the identity or the negation. So ``b_t`` is the value of the last reset at or before
    ``t``, flipped once per negation since: a cumulative maximum and a cumulative sum instead
    of a loop over sweeps, the same draws as the loop (the same comparisons of the same
    numbers), in blocks of sweeps that bound the memory. Used for few chains (at most
    :data:`_TOGETHER_CELLS` chains x window), where the loop's cost is its fixed cost per
    sweep; more chains run the loop, one sweep (two draws of ``n``) at a time.

    Parameters
    ----------
    x2_pmf : ndarray, shape (R, 2, W)
        ``P[X2 = k2_start + w | X1 = m + b]``.
    prob_x1 : ndarray, shape (R, W)
        The X1 update ``P[X1 = m + 1 | X2 = k2_start + w]``.
    k2_start : ndarray of int, shape (R,)
    p, known, draws, tune, chains, rng
        Validated; ``rng`` a ``numpy.random.Generator``.

    Returns
    -------
    GibbsDraws
        ``x1``, ``x2`` of shape ``(R, chains, draws)``.
    """
    n_releases, _, width = x2_pmf.shape
    rows = np.repeat(np.arange(n_releases), chains)
    cdf = np.cumsum(x2_pmf, axis=-1)[rows]  # (N, 2, W)
    p1 = prob_x1[rows]
    n = rows.size
    x1_out = np.empty((n, draws), dtype=np.int64)
    x2_out = np.empty((n, draws), dtype=np.int64)
    if n * width > _TOGETHER_CELLS:
        _sweep_loop(x1_out, x2_out, cdf, p1, p=p, tune=tune, rng=rng)
    else:
        _sweeps_together(x1_out, x2_out, cdf, p1, p=p, tune=tune, rng=rng)
    x1_out += known
    x2_out += np.asarray(k2_start)[rows][:, None]
    shape = (n_releases, chains, draws)
    return GibbsDraws(x1_out.reshape(shape), x2_out.reshape(shape))


def _sweep_loop(x1_out, x2_out, cdf, p1, *, p, tune, rng) -> None:
    """:func:`tabulated_gibbs`'s sweeps one at a time, into ``x1_out``, ``x2_out`` (branches)."""
    n, _, width = cdf.shape
    cdf = cdf.reshape(2 * n, width)  # row 2 i + b: the X2 | X1 = m + b CDF of chain i
    last = width - 1
    chain_rows = np.arange(n)
    cdf_rows = 2 * chain_rows
    draws = x1_out.shape[1]

    def draw_x2(branch):
        u = rng.random(n)[:, None]
        return np.minimum((u >= cdf.take(cdf_rows + branch, axis=0)).sum(axis=1), last)

    branch = (rng.random(n) < p).astype(np.int64)
    index = draw_x2(branch)
    for sweep in range(tune + draws):
        branch = (rng.random(n) < p1[chain_rows, index]).astype(np.int64)
        index = draw_x2(branch)
        if sweep >= tune:
            x1_out[:, sweep - tune] = branch
            x2_out[:, sweep - tune] = index


def _sweeps_together(x1_out, x2_out, cdf, p1, *, p, tune, rng) -> None:
    """:func:`tabulated_gibbs`'s sweeps in blocks (:func:`_sweep_block`), into the outputs."""
    n, _, width = cdf.shape
    draws = x1_out.shape[1]
    chain_rows = np.arange(n)
    block = max(1, _BLOCK_CELLS // (2 * n * width))
    sweeps = 1 + tune + draws  # the start, then the sweeps
    first_prob = np.full(n, float(p))  # the start: X1 from its prior
    for start in range(0, sweeps, block):
        stop = min(sweeps, start + block)
        branch, index = _sweep_block(rng.random((stop - start, 2, n)), first_prob, cdf, p1,
                                     chain_rows)
        kept = max(start, tune + 1)  # the sweeps after the start and ``tune`` are kept
        if stop > kept:
            x1_out[:, kept - tune - 1:stop - tune - 1] = branch[kept - start:].T
            x2_out[:, kept - tune - 1:stop - tune - 1] = index[kept - start:].T
        first_prob = p1[chain_rows, index[-1]]


def _sweep_block(uniforms, first_prob, cdf, p1, chain_rows):
    """Branches and X2 indices ``(T, N)`` of ``T`` sweeps (:func:`tabulated_gibbs`'s notes).

    ``uniforms[t, 0]`` decides X1 and ``uniforms[t, 1]`` X2 at sweep ``t``; the first
    sweep's X1 is ``[u_0 < first_prob]``.
    """
    u, v = uniforms[:, 0], uniforms[:, 1]
    last = cdf.shape[-1] - 1
    # candidate X2 index of each sweep under each branch, (2, T, N)
    candidate = np.stack([np.minimum((v[..., None] >= cdf[:, b]).sum(axis=-1), last)
                          for b in (0, 1)])
    # g_t(b) for t >= 1: X1's update from the index sweep t - 1 left under branch b
    g0 = u[1:] < p1[chain_rows, candidate[0, :-1]]
    g1 = u[1:] < p1[chain_rows, candidate[1, :-1]]
    steps = np.arange(u.shape[0])[:, None]
    reset = np.concatenate([np.ones((1, u.shape[1]), dtype=bool), g0 == g1])
    value = np.concatenate([(u[:1] < first_prob), g0])  # a reset's value (g0 = g1 there)
    flips = np.concatenate([np.zeros((1, u.shape[1]), dtype=np.int64),
                            np.cumsum(g0 & ~g1, axis=0)])
    last_reset = np.maximum.accumulate(np.where(reset, steps, 0), axis=0)
    branch = (np.take_along_axis(value, last_reset, axis=0)
              ^ ((flips - np.take_along_axis(flips, last_reset, axis=0)) & 1).astype(bool))
    branch = branch.astype(np.int64)
    index = np.where(branch == 1, candidate[1], candidate[0])
    return branch, index


def variant_gibbs_sample(x1_star, x2_star, y1_star, *, rho1, rho2, d, p=0.5, known=0,
                         draws=10_000, chains=20, tune=1000, random_seed=None) -> GibbsDraws:
    """Run the variant Gibbs sampler: ``X1 ~ P_unc[. | X2]`` then ``X2 ~ P[. | X1]`` per sweep.

    Chains are independent runs (one per "seed"); all are advanced together
    (:func:`tabulated_gibbs` on the release's exact X2 conditionals, the improper prior).

    Parameters
    ----------
    random_seed : int or numpy.random.Generator, optional
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    inference.gibbs.GibbsDraws
        ``x1``, ``x2`` of shape (chains, draws).
    """
    cond, p_unc = _one_release(x1_star, x2_star, y1_star, rho1=rho1, rho2=rho2, d=d, p=p,
                               known=known)
    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    out = tabulated_gibbs(cond.x2_pmf_table[None], p_unc[None], np.array([cond.k2_start]),
                          p=cond.params.p, known=cond.params.known, draws=draws, tune=tune,
                          chains=chains, rng=np.random.default_rng(random_seed))
    return GibbsDraws(out.x1[0], out.x2[0])
