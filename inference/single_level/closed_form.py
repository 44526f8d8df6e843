r"""The single-level adversary in closed form (paper §3.1, §4.2; supplement S1.1).

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
underflow to NaN. Every function broadcasts over its array arguments and returns a Python
``float`` (``int`` for the threshold) when every argument is a scalar.

Each public function validates ``x1_star``, ``rho``, ``p`` and ``known`` once and computes
with the kernels of :mod:`dprisk.inference.single_level.closed_form_kernels`. Targets unique at
:math:`\ell` levels (S1.3) are in :mod:`dprisk.inference.nested.unique_levels`, sequential releases
(S5) in :mod:`dprisk.inference.single_level.sequential`.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.single_level import closed_form_kernels as kernels
from dprisk.inference.single_level.closed_form_kernels import MAX_HALFWIDTH, TAIL_RELATIVE
from dprisk.models.checks import check_count, check_probability, check_rho
from dprisk.models.mechanism.discrete_gaussian import logcdf_kernel, logpmf_kernel
from dprisk.models.numerics import keep_subnormal, probability_ratio, scalar_result
from dprisk.models.numerics import libm_expit as expit
from dprisk.models.numerics import libm_log_expit as log_expit

__all__ = [
    "MAX_HALFWIDTH",
    "TAIL_RELATIVE",
    "decision_threshold",
    "design_summary",
    "log_marginal_posterior",
    "log_posterior",
    "log_posterior_odds",
    "log_risk",
    "marginal_posterior",
    "marginal_risk",
    "p_correct",
    "posterior",
    "release_pmf",
    "release_summary",
    "risk",
]


def _release_args(x1_star, rho, p, known):
    """Validate one release's arguments (each once)."""
    return (check_count(x1_star, "x1_star"), check_rho(rho, "rho"),
            check_probability(p, "p"), check_count(known, "known", minimum=0))


def _design_args(rho, p, known):
    """Validate the arguments of a marginal or decision quantity (each once)."""
    return check_rho(rho, "rho"), check_probability(p, "p"), check_count(known, "known",
                                                                          minimum=0)


# --------------------------------------------------------------------------- one release
def log_posterior_odds(x1_star, rho, p=0.5, known=0):
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
    float or ndarray
        The log-odds, broadcast over the inputs (a float for scalar inputs).
    """
    return scalar_result(kernels.log_posterior_odds(*_release_args(x1_star, rho, p, known)))


def posterior(x1_star, rho, p=0.5, known=0):
    r"""Posterior probability that the target has ``c``, :math:`P[X_1 = m+1 \mid x_1^*]`.

    .. math::

        P[X_1 = m+1 \mid x_1^*] = \frac{p\, e^{-\rho (x_1^* - m - 1)^2}}
            {p\, e^{-\rho (x_1^* - m - 1)^2} + (1-p)\, e^{-\rho (x_1^* - m)^2}}
            = \operatorname{expit}(L)

    (paper eq. 3.1).

    Parameters
    ----------
    x1_star : array_like of int
        Released noisy count(s) :math:`x_1^*` (may be negative).
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    float or ndarray
        The posterior probability in [0, 1], broadcast over the inputs (a float for scalar
        inputs).
    """
    log_odds = kernels.log_posterior_odds(*_release_args(x1_star, rho, p, known))
    return scalar_result(keep_subnormal(expit(log_odds), log_expit(log_odds)))


def log_posterior(x1_star, rho, p=0.5, known=0):
    r"""Log of :func:`posterior`, ``log_expit(L)``; finite even when the posterior underflows.

    Parameters
    ----------
    x1_star : array_like of int
        Released noisy count(s) :math:`x_1^*` (may be negative).
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    float or ndarray
        :math:`\log P[X_1 = m+1 \mid x_1^*] \le 0`, broadcast over the inputs.
    """
    return scalar_result(log_expit(kernels.log_posterior_odds(*_release_args(x1_star, rho, p,
                                                                             known))))


def risk(x1_star, rho, p=0.5, known=0):
    r"""Disclosure risk :math:`R'(x_1^*) = P[X_1 = m+1 \mid x_1^*] / p` (paper eq. 3.2).

    Computed from :math:`\operatorname{log\_expit}(L)` and :math:`\log p` (as a plain
    quotient where the posterior is a normal double, see
    :func:`dprisk.models.numerics.probability_ratio`), so it is accurate for ``p = 1e-12``
    and tiny posteriors, and never exceeds ``fl(1/p)``.

    Parameters
    ----------
    x1_star : array_like of int
        Released noisy count(s) :math:`x_1^*` (may be negative).
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    float or ndarray
        The risk, in :math:`[0, 1/p]`, broadcast over the inputs.
    """
    x1_star, rho, p, m = _release_args(x1_star, rho, p, known)
    log_odds = kernels.log_posterior_odds(x1_star, rho, p, m)
    return scalar_result(probability_ratio(expit(log_odds), log_expit(log_odds), p, np.log(p)))


def log_risk(x1_star, rho, p=0.5, known=0):
    r"""Log of :func:`risk`: ``log_expit(L) - log(p)``.

    Parameters
    ----------
    x1_star : array_like of int
        Released noisy count(s) :math:`x_1^*` (may be negative).
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    float or ndarray
        :math:`\log R'(x_1^*) \le -\log p`, broadcast over the inputs.
    """
    x1_star, rho, p, m = _release_args(x1_star, rho, p, known)
    return scalar_result(log_expit(kernels.log_posterior_odds(x1_star, rho, p, m)) - np.log(p))


def release_pmf(x1_star, rho, known=0):
    r"""Probability of a release when the target has ``c``: :math:`P[X_1^* = x_1^* | x_1 = m+1]`.

    .. math:: P[X_1^* = x_1^* \mid x_1 = m+1] = e^{-\rho (x_1^* - m - 1)^2} / Z(\rho)

    This is what the caption of the paper's Table 4 says its "Mass" column holds (the printed
    column is in fact :math:`P[X_1^* = x_1^* \mid x_1 = m]`; see
    :mod:`dprisk.validation.paper.single_level`).

    Parameters
    ----------
    x1_star : array_like of int
        Released noisy count(s) :math:`x_1^*` (may be negative).
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    float or ndarray
        The probability in [0, 1], broadcast over the inputs.
    """
    x1_star = check_count(x1_star, "x1_star")
    rho = check_rho(rho, "rho")
    m = check_count(known, "known", minimum=0)
    return scalar_result(np.exp(logpmf_kernel(x1_star, m + 1, rho)))


# --------------------------------------------------------------------------- marginal
def log_marginal_posterior(rho, p=0.5, known=0):
    r"""Log of the marginal posterior :math:`\log P[X_1 = x_1 \mid x_1 = m+1]` (paper eq. 3.3).

    .. math::

        \log \sum_{x^*} \operatorname{expit}\bigl(L(x^*)\bigr)\,
            P[X_1^* = x^* \mid x_1 = m+1]

    summed with ``logsumexp`` over the release grid
    :math:`|x^* - m - 1| \le K(\rho, p)`, where ``K`` comes from
    :func:`dprisk.models.mechanism.discrete_gaussian.support_halfwidth` so that the neglected
    probability is
    below ``TAIL_RELATIVE * p`` (hence the neglected part of the result is below
    ``1e-16`` relative, and below 1e-15 absolute). The result does not depend on ``known``
    (supplement S1.1); it is validated and ignored. Vectorised over ``rho`` and ``p``: rows
    are sorted by grid size and evaluated in blocks that share a grid.

    Parameters
    ----------
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0), default 0
        Validated; the result does not depend on it.

    Returns
    -------
    float or ndarray
        The log marginal posterior, in :math:`[\log p, 0]`, broadcast over ``rho`` and ``p``.
    """
    rho, p, _ = _design_args(rho, p, known)
    return scalar_result(kernels.marginal_posterior_and_risk(rho, p)[0])


def marginal_posterior(rho, p=0.5, known=0):
    r"""Marginal posterior :math:`P[X_1 = x_1 \mid x_1 = m+1]`, averaged over releases.

    .. math::

        \sum_{x_1^*} P[X_1 = m+1 \mid x_1^*]\; P[X_1^* = x_1^* \mid x_1 = m+1]

    (paper eq. 3.3; Table 2 and Figure 2). See :func:`log_marginal_posterior` for the grid.

    Parameters
    ----------
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0), default 0
        Validated; the result does not depend on it.

    Returns
    -------
    float or ndarray
        The marginal posterior, in :math:`[p, 1]`, broadcast over ``rho`` and ``p``.
    """
    rho, p, _ = _design_args(rho, p, known)
    return scalar_result(kernels.marginal_posterior_and_risk(rho, p)[1])


def marginal_risk(rho, p=0.5, known=0):
    r"""Marginal risk :math:`R = P[X_1 = x_1 \mid x_1 = m+1] / p` (paper eq. 3.4).

    Always :math:`1 \le R \le 1/p` (Cauchy–Schwarz gives the lower bound).

    Parameters
    ----------
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0), default 0
        Validated; the result does not depend on it.

    Returns
    -------
    float or ndarray
        The marginal risk, broadcast over ``rho`` and ``p``.
    """
    rho, p, _ = _design_args(rho, p, known)
    return scalar_result(kernels.marginal_posterior_and_risk(rho, p)[2])


# --------------------------------------------------------------------------- decisions
def decision_threshold(rho, p=0.5, known=0):
    r"""Smallest release :math:`\tilde x_1^*` whose posterior exceeds 1/2 (0-1 loss).

    The adversary decides :math:`\hat X_1 = m+1` iff :math:`L(x_1^*) > 0` (ties go to ``m``).
    Since ``L`` increases with :math:`x_1^*`, the decision region is
    :math:`x_1^* \ge \tilde x_1^*` with

    .. math::

        \tilde x_1^* = m + \Bigl\lfloor \tfrac12 \bigl(1 - \operatorname{logit}(p)/\rho\bigr)
                       \Bigr\rfloor + 1,

    which is then corrected by evaluating ``L`` at the neighbours with the same floating-point
    expression :func:`posterior` uses, so float ties are decided exactly as there.

    Parameters
    ----------
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    int or ndarray of int64
        :math:`\tilde x_1^*`, broadcast over the inputs.

    Raises
    ------
    ValueError
        If the threshold does not fit in a float's exact integer range (``rho`` extremely
        small relative to ``|logit(p)|``).
    """
    return scalar_result(kernels.decision_threshold(*_design_args(rho, p, known)))


def p_correct(rho, p=0.5, known=0):
    r"""Probability that the 0-1-loss decision is correct, :math:`P[\hat X_1 = x_1]` (eq. 3.6).

    .. math::

        P[\hat X_1 = x_1] = P[X_1^* \ge \tilde x_1^* \mid x_1 = m+1]
                          = P[\eta_1 \ge a], \quad a = \tilde x_1^* - m - 1,

    from the exact tail :func:`dprisk.models.mechanism.discrete_gaussian.log_tail` (no truncated
    sum): for
    ``a >= 0`` it is ``exp(log_tail(a))``, for ``a < 0`` it is ``-expm1(log_tail(1 - a))``
    (symmetry of the noise).

    Parameters
    ----------
    rho : array_like of float (rho > 0)
        zCDP parameter of the release.
    p : array_like of float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : array_like of int (known >= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``.

    Returns
    -------
    float or ndarray
        The probability in [0, 1], broadcast over the inputs. It does not depend on ``known``
        (only :math:`\tilde x_1^* - m` enters).
    """
    return scalar_result(kernels.p_correct(*_design_args(rho, p, known)))


# --------------------------------------------------------------------------- summaries
def release_summary(x1_star, rho, p=0.5, known=0) -> dict:
    r"""``{"posterior": ..., "risk": ...}`` of one release, each input validated once.

    :func:`posterior` and :func:`risk` from one evaluation of the log-odds (the same values
    bit for bit); what ``dprisk posterior --rho1 R --x1-star X`` prints.
    """
    x1_star, rho, p, m = _release_args(x1_star, rho, p, known)
    log_odds = kernels.log_posterior_odds(x1_star, rho, p, m)
    prob, log_prob = expit(log_odds), log_expit(log_odds)
    return {"posterior": scalar_result(keep_subnormal(prob, log_prob)),
            "risk": scalar_result(probability_ratio(prob, log_prob, p, np.log(p)))}


def design_summary(rho, p=0.5, known=0) -> dict:
    r"""The measures of a release design, each input validated once.

    ``{"marginal_posterior", "marginal_risk", "p_correct", "threshold", "accuracy"}``: the
    values of :func:`marginal_posterior`, :func:`marginal_risk`, :func:`p_correct` and
    :func:`decision_threshold` bit for bit (one marginal sum for the first two), and the
    decision's prior-weighted accuracy
    :math:`p\,P[X^* \ge t \mid m + 1] + (1 - p)\,P[X^* < t \mid m]` (``t`` the threshold; the
    value of :func:`dprisk.inference.privacy.worst_case.bayes_accuracy`); what
    ``dprisk marginal --rho1 R`` prints.
    """
    rho, p, m = _design_args(rho, p, known)
    _, marginal, risk = kernels.marginal_posterior_and_risk(rho, p)
    p_correct = kernels.p_correct(rho, p, m)
    threshold = kernels.decision_threshold(rho, p, m)
    true_negative = np.exp(logcdf_kernel(threshold - 1, m, rho))
    # 1 <= R <= 1/p, one rounding (probability_ratio): inf above the largest double
    return {"marginal_posterior": scalar_result(marginal),
            "marginal_risk": scalar_result(risk),
            "p_correct": scalar_result(p_correct),
            "threshold": scalar_result(threshold),
            "accuracy": scalar_result(p * p_correct + (1.0 - p) * true_negative)}
