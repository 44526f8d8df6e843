r"""A target unique at :math:`\ell` levels (supplement S1.3): the public entry points.

The target is the only person with characteristics ``c`` (beyond the ``m`` the adversary
knows) at each of :math:`\ell` nested levels, each released with its own
:math:`\rho_i`. The posterior log-odds gains one term per level (supplement eq. S1.1),

.. math::

    L = \operatorname{logit}(p) + \sum_{i=1}^{\ell} \rho_i \bigl(2 (x_i^* - m) - 1\bigr),

and the marginal posterior averages :math:`\operatorname{expit}(L)` over the joint release
grid. Every function here validates ``rhos``, ``p``, ``known`` (and the releases) once and
computes with unchecked kernels. :func:`marginal_unique_levels` is the one entry point for
the marginal posterior, with named methods:

``"enumerate"``
    exact finite sum over the joint release grid, built level by level with atoms keyed by
    the partial sum (:func:`dprisk.inference.nested.unique_levels_kernels.log_marginal_enumerate`);
    cost the product of the per-level grid sizes (about 41, 27, 57, 57, 57, 57 for the
    Census levels at p = 1/2): 6.3e4 evaluations for ell = 3, 3.6e6 for ell = 4, 2e8 for
    ell = 5 and 1.2e10 for ell = 6 (refused above ``MAX_PAIRS``).
``"sweep"``
    the same finite sum reordered (:mod:`dprisk.inference.nested.unique_levels_sweep`): seconds
    for the six Census levels; refused when a half of the levels exceeds
    ``MAX_HALF_ATOMS`` atoms or a prior more than ``max_window_pairs`` window pairs.
``"contour"``
    a Mellin–Barnes integral
    (:func:`dprisk.inference.nested.unique_levels_kernels.log_marginal_contour`), accurate to about
    1e-13 relative for any ell in milliseconds.
``"auto"``
    the rule of :func:`choose_method`: one level is the single-level closed-form sum; for
    more levels the sweep when its plan fits the budget (known before any pair is
    evaluated), else the contour integral.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

from dprisk.inference.nested import unique_levels_kernels as exact
from dprisk.inference.nested.unique_levels_sweep import (
    DEFAULT_DELTA,
    MAX_WINDOW_PAIRS,
    SweepPlan,
    SweepResult,
    plan_sweep,
    run_sweep,
)
from dprisk.inference.single_level import closed_form_kernels as kernels
from dprisk.models.checks import check_count, check_levels, check_probability, check_rho
from dprisk.models.mechanism.discrete_gaussian import support_halfwidth_kernel
from dprisk.models.numerics import keep_subnormal, logit, probability_ratio, scalar_result
from dprisk.runtime.memory_limit import check_memory

__all__ = [
    "SUMMARY_MAX_WINDOW_PAIRS",
    "UNIQUE_LEVELS_METHODS",
    "choose_method",
    "log_marginal_posterior_unique_levels",
    "log_posterior_odds_unique_levels",
    "marginal_posterior_sweep",
    "marginal_posterior_unique_levels",
    "marginal_risk_unique_levels",
    "marginal_unique_levels",
    "p_correct_unique_levels",
    "posterior_unique_levels",
    "unique_levels_summary",
]

#: Methods of :func:`marginal_unique_levels`.
UNIQUE_LEVELS_METHODS = ("auto", "enumerate", "contour", "sweep")
#: Sweep budget of :func:`unique_levels_summary` (window pairs per prior, ~3 s).
SUMMARY_MAX_WINDOW_PAIRS = 300_000_000


def _check_design(rhos, p, known):
    """Validate ``rhos`` (1-d, at least one level), ``p`` and ``known``, each once."""
    rhos = check_rho(rhos, "rhos")
    p = check_probability(p, "p")
    check_count(known, "known", minimum=0)
    if rhos.ndim != 1 or rhos.size < 1:
        raise ValueError(f"rhos must be a 1-d sequence with at least one level, got {rhos!r}")
    return rhos, p


# --------------------------------------------------------------------------- posterior
def log_posterior_odds_unique_levels(x_stars, rhos, p=0.5, known=0):
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

    Returns
    -------
    float or ndarray
        :math:`L`, of the inputs' leading (batch) shape (a float for one release).
    """
    return scalar_result(kernels.cumulative_log_odds(*check_levels(x_stars, rhos, p,
                                                                   known))[..., -1])


def posterior_unique_levels(x_stars, rhos, p=0.5, known=0):
    r"""Posterior :math:`P[X_1 = m+1 \mid x_1^*, \ldots, x_\ell^*]` (supplement eq. S1.1).

    .. math::

        \frac{p \prod_i e^{-\rho_i (x_i^* - m - 1)^2}}
             {p \prod_i e^{-\rho_i (x_i^* - m - 1)^2} + (1-p) \prod_i e^{-\rho_i (x_i^* - m)^2}}

    Parameters
    ----------
    x_stars : array_like of int, shape (..., ell)
        Released noisy counts :math:`x_1^*, \ldots, x_\ell^*`, level on the last axis.
    rhos : array_like of float (rho > 0), shape (..., ell)
        zCDP parameter of each level.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`, broadcast against the leading axes.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``,
        broadcast against the leading axes.

    Returns
    -------
    float or ndarray
        The posterior in [0, 1], of the inputs' leading (batch) shape (a float for one
        release).
    """
    log_odds = kernels.cumulative_log_odds(*check_levels(x_stars, rhos, p, known))[..., -1]
    return scalar_result(keep_subnormal(expit(log_odds), log_expit(log_odds)))


# --------------------------------------------------------------------------- marginal
def choose_method(rhos: np.ndarray, p: np.ndarray, *,
                  max_window_pairs: int = MAX_WINDOW_PAIRS) -> tuple[str, SweepPlan | None]:
    """The ``"auto"`` rule of :func:`marginal_unique_levels` for validated ``rhos`` and ``p``.

    One level: ``"closed"`` (the single-level sum, exact). More levels: ``"sweep"`` when
    :func:`dprisk.inference.nested.unique_levels_sweep.plan_sweep` finds both halves within
    ``MAX_HALF_ATOMS`` atoms and every prior within ``max_window_pairs`` window pairs
    (counted before any pair is evaluated), else ``"contour"``.

    Returns
    -------
    (str, SweepPlan or None)
        The method and, for ``"sweep"``, the plan to run.
    """
    if rhos.size == 1:
        return "closed", None
    plan = plan_sweep(rhos, p)
    if plan.fits(max_window_pairs):
        return "sweep", plan
    return "contour", None


def contour_memory(rhos: np.ndarray) -> float:
    r"""Bytes of the largest arrays of the contour integral (``exact.log_marginal_contour``).

    Its ``log_mgf`` holds complex arrays of (points on the line) x (window of the smallest
    rho): :math:`32\,R\,W` bytes (two complex128 arrays) with :math:`R = 500` points (199
    to find the saddle, a few hundred on the line) and
    :math:`W = 2 K(\rho_{\min}, 10^{-20}) + 5`.
    """
    rho_min = np.asarray(float(np.min(rhos)))
    width = 2 * (int(support_halfwidth_kernel(rho_min, 1e-20)) + 1) + 3
    return 32.0 * 500 * width


def _marginal(rhos: np.ndarray, p: np.ndarray, method: str,
              max_window_pairs: int) -> tuple[bool, np.ndarray]:
    """Marginal posterior by ``method`` for validated values, shape of ``p``.

    Returns ``(is_log, values)``: the closed form, the enumeration and the contour integral
    give the log, the sweep the probability itself (each is passed on unrounded).
    """
    if method not in UNIQUE_LEVELS_METHODS:
        raise ValueError(
            f"method must be one of {', '.join(UNIQUE_LEVELS_METHODS)}, got {method!r}"
        )
    plan = None
    if method == "auto":
        method, plan = choose_method(rhos, p, max_window_pairs=max_window_pairs)
    if method == "closed":
        return True, kernels.log_marginal_posterior(rhos[0], p)
    if method == "sweep":
        if rhos.size == 1:  # the sweep of one level is the single-level sum
            return False, np.exp(kernels.log_marginal_posterior(rhos[0], p))
        plan = plan_sweep(rhos, p) if plan is None else plan
        if not plan.fits(max_window_pairs):
            raise ValueError(plan.refusal(max_window_pairs))
        return False, run_sweep(plan).marginal_posterior
    flat_p = p.ravel()
    logit_p = logit(flat_p)
    if method == "enumerate":
        out = exact.log_marginal_enumerate(rhos, logit_p, float(flat_p.min()))
    else:
        check_memory(contour_memory(rhos), parameter="rhos",
                     what=f"the contour integral over the window of rho = {rhos.min():.3g}")
        out = np.array([
            exact.log_marginal_contour(rhos, float(lp), float(pp))
            for lp, pp in zip(logit_p, flat_p, strict=True)
        ])
        out = np.minimum(out, 0.0)  # a probability; quadrature rounding may exceed 1 by ~1e-15
    return True, out.reshape(p.shape)


def marginal_unique_levels(rhos, *, p=0.5, known=0, method="auto",
                           max_window_pairs: int = MAX_WINDOW_PAIRS):
    r"""Marginal posterior for a target unique at ``ell`` levels (supplement S1.3, Figure 7).

    .. math::

        \sum_{x_1^*, \ldots, x_\ell^*} P[X_1 = m+1 \mid x_1^*, \ldots, x_\ell^*]
        \prod_i P[X_i^* = x_i^* \mid x_1 = m+1]

    The posterior depends on the releases only through
    :math:`S = \sum_i \rho_i (2 (x_i^* - m) - 1)`, so the sum runs over the distinct values
    of ``S``. With one level it equals
    :func:`dprisk.inference.single_level.closed_form.marginal_posterior`.

    Parameters
    ----------
    rhos : sequence of float (rho > 0), length ell >= 1
        zCDP parameter of each level at which the target is unique.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : int (known >= 0), default 0
        Validated; the result does not depend on it (supplement S1.1).
    method : {"auto", "enumerate", "contour", "sweep"}, default "auto"
        ``enumerate``: the exact finite sum over the joint release grid (cost the product of
        the levels' grid sizes, 3.6e6 for four Census levels; refused above ``MAX_PAIRS`` =
        2e8); ``sweep``:
        the same sum reordered (seconds for the six Census levels; refused beyond its
        budget); ``contour``: a Mellin–Barnes integral, about 1e-13 relative for any number
        of levels; ``auto``: :func:`choose_method` (one level: the single-level sum; else the
        sweep when it fits, else the contour integral).
    max_window_pairs : int
        Budget of the sweep (window pairs per prior) for ``"sweep"`` and ``"auto"``.

    Returns
    -------
    float or ndarray
        One value per prior (a float for a scalar ``p``).

    Raises
    ------
    ValueError
        Naming the parameter; for an unknown method, naming the supported methods; when
        the requested method is refused (``enumerate`` above ``MAX_PAIRS``, ``sweep`` above
        its budget).
    """
    rhos, p = _check_design(rhos, p, known)
    is_log, values = _marginal(rhos, p, method, max_window_pairs)
    return scalar_result(np.exp(values) if is_log else values)


def log_marginal_posterior_unique_levels(rhos, p=0.5, known=0, *, method="auto"):
    """Log of :func:`marginal_unique_levels` (the enumeration and contour logs unrounded)."""
    rhos, p = _check_design(rhos, p, known)
    is_log, values = _marginal(rhos, p, method, MAX_WINDOW_PAIRS)
    return scalar_result(values if is_log else np.log(values))


def marginal_posterior_unique_levels(rhos, p=0.5, known=0, *, method="auto"):
    """:func:`marginal_unique_levels` with ``p`` and ``known`` also positional."""
    return marginal_unique_levels(rhos, p=p, known=known, method=method)


def marginal_risk_unique_levels(rhos, p=0.5, known=0, *, method="auto"):
    """Marginal risk for ``ell`` levels: :func:`marginal_unique_levels` / ``p``."""
    rhos, p = _check_design(rhos, p, known)
    is_log, values = _marginal(rhos, p, method, MAX_WINDOW_PAIRS)
    if not is_log:
        return scalar_result(values / p)
    # R <= 1/p, one rounding as values / p (probability_ratio), not exp of a log difference
    return scalar_result(probability_ratio(np.exp(values), values, p, np.log(p)))


def marginal_posterior_sweep(rhos, p=0.5, known=0, *,
                             tail_relative: float = kernels.TAIL_RELATIVE,
                             delta: float = DEFAULT_DELTA,
                             max_window_pairs: int = MAX_WINDOW_PAIRS) -> SweepResult:
    r"""Marginal posterior by the sorted sweep, with its error accounting.

    Evaluates the exact finite sum over the joint release grid (see
    :mod:`dprisk.inference.nested.unique_levels_sweep`). The grid leaves out probability below
    ``tail_relative * min(p) / 2`` and the series truncations (the exponential series and the
    window's Taylor expansion) add at most ``5 tail_relative * min(p) / 16``, so the absolute
    error is below ``tail_relative * min(p)``
    (hence the relative error below ``tail_relative``), plus rounding (about 1e-14 relative).

    Parameters
    ----------
    rhos : sequence of float (rho > 0), length ell >= 1
        One level is the single-level sum.
    p : array_like of float (0 < p < 1)
    known : int (known >= 0)
        Validated; the result does not depend on it.
    tail_relative : float (0 < tail_relative < 1)
        Error budget relative to ``min(p)``.
    delta : float (0 < delta <= 2)
        Half-width of the window of log-odds evaluated pair by pair.
    max_window_pairs : int
        Refuse (``ValueError``) when a prior needs more window pairs than this (about 1e8
        pairs per second); the count is known before any pair is evaluated.

    Returns
    -------
    SweepResult

    Raises
    ------
    ValueError
        If a half of the levels would hold more than ``MAX_HALF_ATOMS`` atoms or the window
        more than ``max_window_pairs`` pairs (then use ``method="contour"`` of
        :func:`marginal_unique_levels`).
    """
    rhos, p = _check_design(rhos, p, known)
    if not (isinstance(tail_relative, float) and 0 < tail_relative < 1):
        raise ValueError(f"tail_relative must lie in (0, 1), got {tail_relative!r}")
    if not (isinstance(delta, (int, float)) and 0 < delta <= 2):
        raise ValueError(f"delta must lie in (0, 2], got {delta!r}")
    if rhos.size == 1:
        value = np.exp(kernels.log_marginal_posterior(rhos[0], p))
        return SweepResult(value, float(tail_relative * p.ravel().min()), 0.0,
                           np.zeros(p.shape, dtype=np.int64), 0, 1)
    plan = plan_sweep(rhos, p, tail_relative=tail_relative, delta=delta)
    if not plan.fits(max_window_pairs):
        raise ValueError(plan.refusal(max_window_pairs))
    return run_sweep(plan)


# --------------------------------------------------------------------------- decisions
def p_correct_unique_levels(rhos, p=0.5, known=0):
    r"""Probability that the 0-1-loss decision is correct with ``ell`` unique levels.

    .. math:: P[\operatorname{logit}(p) + S > 0 \mid x_1 = m+1],
              \quad S = \sum_i \rho_i (2 j_i + 1), \; j_i \sim \mathrm{DG}(0, 1/(2\rho_i))

    Exact (:func:`dprisk.inference.nested.unique_levels_kernels.p_correct_levels`; one level is the
    exact single-level tail). Accurate relative to its value, however small, as with one
    level: when the decision cut lies in the far upper tail of the log-odds the enumeration's
    windows are centred on it (rhos 0.5, 0.7 at p = 1e-12: 6.36e-67, within 2e-14 of
    mpmath); a value below the smallest double (about 1e-308) is 0.

    Parameters
    ----------
    rhos : sequence of float (rho > 0), length ell >= 1
        zCDP parameter of each level at which the target is unique.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : int (known >= 0), default 0
        Validated; the result does not depend on it.

    Returns
    -------
    float or ndarray
        The probability in [0, 1], one per prior (a float for a scalar ``p``).
    """
    rhos, p = _check_design(rhos, p, known)
    return scalar_result(exact.p_correct_levels(rhos, p))


# --------------------------------------------------------------------------- summary
def unique_levels_summary(rhos, p=0.5, known=0) -> dict:
    r"""Marginal posterior, marginal risk and P[correct] for a target unique at ``ell`` levels.

    The marginal posterior is :func:`marginal_unique_levels` with ``method="auto"`` and a
    sweep budget of ``SUMMARY_MAX_WINDOW_PAIRS`` window pairs (beyond it, e.g. many levels
    with small rho, the contour integral, which agrees with the finite sum to 1e-15 at the
    six Census levels); ``marginal_risk = marginal_posterior / p``; ``p_correct`` is the
    exact :func:`p_correct_unique_levels` (relative to its value, however small).
    Serves ``dprisk marginal --rhos``.

    Returns
    -------
    dict
        Exactly ``{"marginal_posterior", "marginal_risk", "p_correct"}`` (floats).
    """
    rhos, p_arr = _check_design(rhos, p, known)
    if p_arr.ndim:
        raise ValueError(f"p must be a single number (0 < p < 1), got {p!r}")
    is_log, values = _marginal(rhos, p_arr, "auto", SUMMARY_MAX_WINDOW_PAIRS)
    marginal = float(np.exp(values) if is_log else values)
    p_value = float(p_arr)
    return {
        "marginal_posterior": marginal,
        "marginal_risk": marginal / p_value,
        "p_correct": float(exact.p_correct_levels(rhos, p_arr)),
    }
