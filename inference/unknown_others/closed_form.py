r"""An adversary who does not know everyone in the block, in closed form (exact sums).

The paper's single-level adversary (§3.1) knows everyone in block :math:`g_1` except the
target. This adversary knows the block except the target and ``n`` others (the paper's first
future-work item), and believes each of them has the characteristics ``c`` with probability
``q``, independently:

.. math::

    X_1 = m + B_t + K, \quad B_t \sim \mathrm{Bernoulli}(p), \quad
    K \sim \mathrm{Binomial}(n, q), \qquad x_1^* = X_1 + \eta_1, \quad
    \eta_1 \sim \mathrm{DG}(0, 1/(2\rho)).

With :math:`f` the DG pmf and :math:`w_k = \binom{n}{k} q^k (1-q)^{n-k}`, the posterior that
the target has ``c`` is a sum over the binomial:

.. math::

    P[B_t = 1 \mid x_1^*] = \frac{p \sum_k w_k f(x_1^* - m - 1 - k)}
        {p \sum_k w_k f(x_1^* - m - 1 - k) + (1 - p) \sum_k w_k f(x_1^* - m - k)}.

The measures follow the single level (:mod:`dprisk.inference.single_level.closed_form`):
:math:`R'(x_1^*) = P[B_t = 1 \mid x_1^*] / p`; the marginal posterior averages it over the
releases when the target has ``c``; :math:`R` = marginal / ``p``; the 0-1-loss decision picks
:math:`B_t = 1` iff the posterior exceeds 1/2, and P[correct] is the probability of that
decision when the target has ``c``. The truth of the ``n`` others is either averaged over the
adversary's :math:`\mathrm{Binomial}(n, q)` (``true_others=None``, the default) or stated
(``true_others=k``: exactly ``k`` of them have ``c``). With ``n = 0`` every function returns
the single-level value (the log-odds bit for bit).

Each public function validates its arguments once (``unknown_others`` and ``q`` through
:meth:`dprisk.models.unknown_others.UnknownOthers.checked`) and computes with the kernels of
:mod:`dprisk.inference.unknown_others.closed_form_kernels`. Every function broadcasts over
``x1_star``,
``rho``, ``p`` and ``known`` and returns a Python scalar for scalar inputs.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.unknown_others import closed_form_kernels as kernels
from dprisk.models.checks import check_count, check_positive_int, check_probability, check_rho
from dprisk.models.numerics import keep_subnormal, probability_ratio, scalar_result
from dprisk.models.numerics import libm_expit as expit
from dprisk.models.numerics import libm_log_expit as log_expit
from dprisk.models.unknown_others import UnknownOthers

__all__ = [
    "accuracy",
    "decision_threshold",
    "log_posterior_odds",
    "marginal_posterior",
    "marginal_risk",
    "p_correct",
    "posterior",
    "risk",
]


def _release_args(x1_star, rho, p, known, unknown_others, q):
    """Validate one release's arguments (each once)."""
    return (check_count(x1_star, "x1_star"), check_rho(rho, "rho"),
            check_probability(p, "p"), check_count(known, "known", minimum=0),
            UnknownOthers.checked(unknown_others, q))


def _design_args(rho, p, known, unknown_others, q, true_others=None):
    """Validate a marginal or decision quantity's arguments (each once); truth log weights."""
    rho, p = check_rho(rho, "rho"), check_probability(p, "p")
    known = check_count(known, "known", minimum=0)
    others = UnknownOthers.checked(unknown_others, q)
    if true_others is not None:
        true_others = check_positive_int(true_others, "true_others", minimum=0)
        if true_others > others.n:
            raise ValueError(f"true_others must be an integer between 0 and unknown_others = "
                             f"{others.n} (allowed range: 0 <= true_others <= "
                             f"unknown_others), got {true_others}")
        if kernels.truth_log_weights(others, None)[true_others] == -np.inf:
            raise ValueError(f"true_others = {true_others} is impossible under q = {others.q} "
                             f"(allowed range: {others.support()[0]} <= true_others <= "
                             f"{others.support()[1]})")
    return rho, p, known, others, kernels.truth_log_weights(others, true_others)


# --------------------------------------------------------------------------- one release
def log_posterior_odds(x1_star, rho, p=0.5, known=0, *, unknown_others=0, q=None):
    r"""Posterior log-odds of :math:`B_t = 1` (the target has ``c``) given the release.

    .. math::

        L(x_1^*) = \log\frac{p \sum_k w_k f(x_1^* - m - 1 - k)}
                            {(1 - p) \sum_k w_k f(x_1^* - m - k)}

    Parameters
    ----------
    x1_star : array_like of int
        Released noisy count(s) of the block.
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1)
        Prior probability that the target has ``c``.
    known : array_like of int (known >= 0)
        ``m``, the count with ``c`` among the people the adversary knows.
    unknown_others : int (0 <= n <= 10000)
        ``n``, the people besides the target whom the adversary does not know.
    q : float (0 <= q <= 1), optional when ``unknown_others = 0``
        Probability that one unknown other has ``c``.

    Returns
    -------
    float or ndarray
        :math:`L(x_1^*)`, broadcast over the inputs (a float for scalar inputs).
    """
    x1_star, rho, p, m, others = _release_args(x1_star, rho, p, known, unknown_others, q)
    return scalar_result(kernels.log_posterior_odds(x1_star, rho, p, m, others))


def posterior(x1_star, rho, p=0.5, known=0, *, unknown_others=0, q=None):
    r"""Posterior probability that the target has ``c``, :math:`P[B_t = 1 \mid x_1^*]`.

    ``expit`` of :func:`log_posterior_odds` (see the module docstring for the sum over the
    binomial).

    Parameters
    ----------
    x1_star : array_like of int
        Released noisy count(s) of the block (may be negative).
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability that the target has ``c``.
    known : array_like of int (known >= 0), default 0
        ``m``, the count with ``c`` among the people the adversary knows.
    unknown_others : int (0 <= n <= 10000), default 0
        ``n``, the people besides the target whom the adversary does not know.
    q : float (0 <= q <= 1), optional when ``unknown_others = 0``
        Probability that one unknown other has ``c``.

    Returns
    -------
    float or ndarray
        The posterior probability in [0, 1], broadcast over the inputs.
    """
    log_odds = log_posterior_odds(x1_star, rho, p, known, unknown_others=unknown_others, q=q)
    return scalar_result(keep_subnormal(expit(log_odds), log_expit(log_odds)))


def risk(x1_star, rho, p=0.5, known=0, *, unknown_others=0, q=None):
    r"""Disclosure risk :math:`R'(x_1^*) = P[B_t = 1 \mid x_1^*] / p` (paper eq. 3.2).

    Formed as in :func:`dprisk.inference.single_level.closed_form.risk` (never above ``fl(1/p)``).

    Parameters
    ----------
    x1_star, rho, p, known, unknown_others, q
        As in :func:`posterior`.

    Returns
    -------
    float or ndarray
        The risk, in :math:`[0, 1/p]`, broadcast over the inputs.
    """
    x1_star, rho, p, m, others = _release_args(x1_star, rho, p, known, unknown_others, q)
    log_odds = kernels.log_posterior_odds(x1_star, rho, p, m, others)
    return scalar_result(probability_ratio(expit(log_odds), log_expit(log_odds), p, np.log(p)))


# --------------------------------------------------------------------------- marginal
def _check_marginal_work(rho, p, others, truth_w) -> None:
    """Refuse up front a marginal whose release sums exceed the work budget."""
    from dprisk.runtime.work_limit import UNKNOWN_OTHERS_TERM_STEPS, check_work

    terms = kernels.marginal_terms(rho, p, others, truth_w)
    check_work(terms * UNKNOWN_OTHERS_TERM_STEPS, parameter="unknown_others and rho",
               what=f"the marginal over the releases with n = {others.n} unknown others "
               f"({terms:.3g} terms)")


def _check_tail_work(rho, p, others, truth_w, sets: int, what: str) -> None:
    """Refuse up front ``sets`` sets of decision tails above the work limit (``what``: the name)."""
    from dprisk.runtime.work_limit import DG_TAIL_TERM_STEPS, check_work

    terms = sets * kernels.tail_terms(rho, p, truth_w)
    check_work(terms * DG_TAIL_TERM_STEPS, parameter="unknown_others and rho",
               what=f"{what} with n = {others.n} unknown others ({terms:.3g} tail terms)")


def work_steps(rho, p=0.5, *, unknown_others=0, q=None, marginals=1, tail_sets=0) -> float:
    r"""Steps of ``marginals`` marginal sums and ``tail_sets`` sets of decision tails.

    ``marginals x`` the terms of :func:`marginal_posterior`'s release sums ``x``
    :data:`dprisk.runtime.work_limit.UNKNOWN_OTHERS_TERM_STEPS` ``+ tail_sets x`` the terms
    of :func:`p_correct`'s exact tails ``x`` :data:`dprisk.runtime.work_limit.DG_TAIL_TERM_STEPS`
    (:func:`accuracy` takes two sets), at the adversary's own truth (``true_others=None``):
    the estimate of a command computing several of them, checked before the first.

    Parameters
    ----------
    rho, p, unknown_others, q
        As in :func:`marginal_posterior`.
    marginals, tail_sets : int
        How many marginal sums and sets of tails are computed.

    Returns
    -------
    float
        The steps (:mod:`dprisk.runtime.work_limit`).
    """
    from dprisk.runtime.work_limit import DG_TAIL_TERM_STEPS, UNKNOWN_OTHERS_TERM_STEPS

    rho, p, _, others, truth_w = _design_args(rho, p, 0, unknown_others, q)
    return (marginals * kernels.marginal_terms(rho, p, others, truth_w)
            * UNKNOWN_OTHERS_TERM_STEPS
            + tail_sets * kernels.tail_terms(rho, p, truth_w) * DG_TAIL_TERM_STEPS)


def marginal_posterior(rho, p=0.5, known=0, *, unknown_others=0, q=None, true_others=None):
    r"""Marginal posterior of the truth, averaged over releases when the target has ``c``.

    .. math::

        \sum_{x_1^*} P[B_t = 1 \mid x_1^*]\; P[X_1^* = x_1^* \mid B_t = 1, \text{truth}],
        \qquad P[X_1^* = x^* \mid B_t = 1] = \sum_k v_k f(x^* - m - 1 - k),

    with :math:`v = w` (``true_others=None``: the others' count drawn from the adversary's
    binomial) or a point mass at ``true_others``. Summed in log space on a release grid whose
    neglected probability is below ``1e-16 p`` (as in paper eq. 3.3). Does not depend on
    ``known`` (validated and ignored). Vectorised over ``rho`` and ``p``.

    Parameters
    ----------
    rho, p, known, unknown_others, q
        As in :func:`posterior`.
    true_others : int (0 <= true_others <= unknown_others), optional
        The stated number of the unknown others who have ``c``; ``None`` averages over
        :math:`\mathrm{Binomial}(n, q)`.

    Returns
    -------
    float or ndarray
        The marginal posterior in [0, 1], broadcast over ``rho`` and ``p``.
    """
    rho, p, _, others, truth_w = _design_args(rho, p, known, unknown_others, q, true_others)
    _check_marginal_work(rho, p, others, truth_w)
    return scalar_result(np.exp(kernels.log_marginal_posterior(rho, p, others, truth_w)))


def marginal_risk(rho, p=0.5, known=0, *, unknown_others=0, q=None, true_others=None):
    r"""Marginal risk :math:`R` = :func:`marginal_posterior` / ``p`` (paper eq. 3.4).

    With ``true_others=None`` (the adversary's model is the truth) :math:`R \ge 1`, since
    :math:`E[P[B_t = 1 \mid X^*] \mid B_t = 1] = E[P[B_t = 1 \mid X^*]^2] / p \ge p`.

    Parameters
    ----------
    rho, p, known, unknown_others, q, true_others
        As in :func:`marginal_posterior`.

    Returns
    -------
    float or ndarray
        The marginal risk, in :math:`[0, 1/p]`, broadcast over ``rho`` and ``p``.
    """
    rho, p, _, others, truth_w = _design_args(rho, p, known, unknown_others, q, true_others)
    _check_marginal_work(rho, p, others, truth_w)
    log_marginal = kernels.log_marginal_posterior(rho, p, others, truth_w)
    # R <= 1/p, one rounding (probability_ratio): inf above the largest double (p < 5.6e-309)
    return scalar_result(probability_ratio(np.exp(log_marginal), log_marginal, p, np.log(p)))


# --------------------------------------------------------------------------- decisions
def decision_threshold(rho, p=0.5, known=0, *, unknown_others=0, q=None):
    r"""Smallest release :math:`\tilde x_1^*` whose posterior exceeds 1/2 (0-1 loss).

    The adversary decides that the target has ``c`` iff :math:`L(x_1^*) > 0`, i.e.
    :math:`x_1^* \ge \tilde x_1^*` (``L`` increases with the release). Found by bisection
    between the single-level thresholds of known counts :math:`m + k_{\min}` and
    :math:`m + k_{\max}`; for ``n = 0`` it is the single-level threshold. A release whose
    posterior is exactly 1/2 (at ``p = q = 1/2`` with ``n`` odd, :math:`x_1^* = m + (n+1)/2`)
    is decided "not c" (ties are found within rounding of the log-odds' terms).

    Parameters
    ----------
    rho, p, known, unknown_others, q
        As in :func:`posterior`.

    Returns
    -------
    int or ndarray of int64
        :math:`\tilde x_1^*`, broadcast over the inputs.
    """
    rho, p, m, others, _ = _design_args(rho, p, known, unknown_others, q)
    return scalar_result(kernels.decision_threshold(rho, p, m, others))


def p_correct(rho, p=0.5, known=0, *, unknown_others=0, q=None, true_others=None, target=1):
    r"""Probability that the 0-1-loss decision is correct (when the target has ``c``).

    .. math::

        P[\hat B_t = B_t \mid B_t = 1] = \sum_k v_k\, P[\eta_1 \ge \tilde x_1^* - m - 1 - k]

    (paper eq. 3.6 with the others' count :math:`k` drawn from the truth's weights :math:`v`,
    see :func:`marginal_posterior`), each tail exact. ``target=0`` gives the probability of
    the correct decision when the target does *not* have ``c``,
    :math:`\sum_k v_k P[\eta_1 \le \tilde x_1^* - 1 - m - k]`; the accuracy averaged over
    the adversary's prior is :func:`accuracy`. Does not depend on ``known``.

    Parameters
    ----------
    rho, p, known, unknown_others, q, true_others
        As in :func:`marginal_posterior`.
    target : {0, 1}, default 1
        The truth :math:`B_t` (1: the target has ``c``, the paper's case).

    Returns
    -------
    float or ndarray
        The probability in [0, 1], broadcast over ``rho`` and ``p``.
    """
    rho, p, _, others, truth_w = _design_args(rho, p, known, unknown_others, q, true_others)
    if isinstance(target, bool) or target not in (0, 1):
        raise ValueError(f"target must be 0 or 1 (the truth B_t), got {target!r}")
    _check_tail_work(rho, p, others, truth_w, 1, "P[correct decision]")
    return scalar_result(np.exp(kernels.log_p_correct(rho, p, others, truth_w, int(target))))


def accuracy(rho, p=0.5, known=0, *, unknown_others=0, q=None, true_others=None):
    r"""Prior-weighted accuracy of the 0-1-loss decision (the Bayes rule), exact.

    .. math::

        A = p\,P[\hat B_t = 1 \mid B_t = 1] + (1 - p)\,P[\hat B_t = 0 \mid B_t = 0]
          = p \sum_k v_k\, P[\eta_1 \ge \tilde x_1^* - m - 1 - k]
          + (1 - p) \sum_k v_k\, P[\eta_1 \le \tilde x_1^* - 1 - m - k],

    :func:`p_correct` at ``target=1`` and ``target=0`` (the truth's weights :math:`v` as in
    :func:`marginal_posterior`). With ``true_others=None`` this is also the worst-case
    accuracy of any test of :math:`B_t = 1` against :math:`B_t = 0` from this release: the
    release :math:`X_1^* = m + B_t + K + \eta_1` is a shift family of a log-concave law (the
    binomial and the discrete Gaussian are log-concave, and so is their convolution), so its
    likelihood ratio is monotone in :math:`x_1^*`, the threshold decision is the
    likelihood-ratio test, and no test is more accurate at prior ``p``. With ``n = 0`` it is
    the single level's accuracy
    (:func:`dprisk.inference.privacy.worst_case.bayes_accuracy`). Does not depend on
    ``known``; vectorised over ``rho`` and ``p``.

    Parameters
    ----------
    rho, p, known, unknown_others, q, true_others
        As in :func:`marginal_posterior`.

    Returns
    -------
    float or ndarray
        :math:`A`, in [0, 1].
    """
    rho, p, _, others, truth_w = _design_args(rho, p, known, unknown_others, q, true_others)
    _check_tail_work(rho, p, others, truth_w, 2, "the accuracy")
    positive = np.exp(kernels.log_p_correct(rho, p, others, truth_w, 1))
    negative = np.exp(kernels.log_p_correct(rho, p, others, truth_w, 0))
    return scalar_result(np.minimum(p * positive + (1.0 - p) * negative, 1.0))  # in [0, 1]
