r"""The replace-one question: which of two cells holds the target (exact, discrete).

The adversary knows the others' counts :math:`m_a, m_b` of two cells ``a`` and ``b`` and that
the target is in exactly one of them, ``a`` with prior probability ``p``. Both cells are
released, each with its own noise: :math:`y_a = x_a + \eta_a`, :math:`y_b = x_b + \eta_b`,
:math:`\eta_a, \eta_b` independent :math:`\mathrm{DG}(0, 1/(2\rho))` (this package's
convention, pmf :math:`\propto e^{-\rho x^2}`; the 2020 DAS's cell of variance parameter
:math:`\sigma^2` is :math:`\rho = 1/(2\sigma^2)`,
:func:`dprisk.models.mechanism.discrete_gaussian.rho_of_das_sigma_sq`). This is what moving one
person from cell ``b`` to cell ``a`` (replace-one neighbours) changes in a histogram query.

With :math:`u_c = y_c - m_c`, the likelihood ratio of "in a" to "in b" is

.. math::

    \frac{e^{-\rho (u_a - 1)^2 - \rho u_b^2}}{e^{-\rho u_a^2 - \rho (u_b - 1)^2}}
    = e^{2\rho D}, \qquad D = u_a - u_b,

so ``D`` is sufficient: :math:`D = 1 + N` if the target is in ``a``, :math:`D = -1 + N` if in
``b``, with :math:`N = \eta_a - \eta_b`. The posterior log-odds are
:math:`L(D) = \operatorname{logit}(p) + 2\rho D`. In the Gaussian limit ``N`` is
:math:`\mathcal N(0, 1/\rho)` and the question is the paper's single cell at
:math:`2\rho` (one cell of half the variance: :math:`\pm 1 + 2\eta`, :math:`2\eta` of variance
:math:`1/\rho` too). For the discrete Gaussian it is not: ``N`` is not a discrete Gaussian
and lives on every integer, where :math:`2\eta` lives on the even ones. Its pmf is summed
exactly over the lattice,

.. math:: P[N = k] = \sum_{j \in \mathbb Z} P[\eta = j]\, P[\eta = j - k],

each factor from :func:`dprisk.models.mechanism.discrete_gaussian.logpmf_kernel` on
:math:`|j| \le K` (``K`` from ``support_halfwidth``: the neglected mass of each factor is
below ``tail_mass``, so every result below is exact to ``2 * tail_mass`` absolute).

The measures, with ties (:math:`L(D) = 0`, which happens at ``p = 1/2``, ``D = 0``) split
evenly between the two answers (the Bayes rule is indifferent there):

* marginal posterior :math:`\sum_D \operatorname{expit}(L(D))\, P[N = D - 1]` and the marginal
  risk (it over ``p``);
* ``p_correct``: :math:`P[\text{decide } a \mid a] = \sum_{L(D) > 0} P[N = D - 1]
  + \tfrac12 \sum_{L(D) = 0} P[N = D - 1]`;
* ``accuracy``: :math:`\sum_D \max\bigl(p P[N = D - 1], (1 - p) P[N = D + 1]\bigr)`.
"""

from __future__ import annotations

import numpy as np

from dprisk.models.checks import check_probability, check_rho
from dprisk.models.mechanism.discrete_gaussian import (
    DEFAULT_TAIL_MASS,
    logpmf_kernel,
    support_halfwidth_kernel,
)
from dprisk.models.numerics import check_tail_mass, libm_expit, logit, scalar_result
from dprisk.models.scenario import scalar_value

__all__ = ["MAX_HALFWIDTH", "TIE_RELATIVE", "difference_pmf", "replace_one_summary"]

#: A log-odds within this relative distance of 0 (relative to its two terms) is a tie.
TIE_RELATIVE = 8 * np.finfo(float).eps
#: Largest half-width of one cell's noise window (rho >= about 1e-7 at the default tail mass):
#: the lattice sum costs (2K + 1)^2 products.
MAX_HALFWIDTH = 20_000


def _rho_scalar(rho) -> float:
    return float(scalar_value(check_rho(rho, "rho"), "rho"))


def difference_pmf(rho, tail_mass: float = DEFAULT_TAIL_MASS) -> tuple[np.ndarray, np.ndarray]:
    r"""The pmf of :math:`N = \eta_a - \eta_b`, :math:`\eta` iid DG(0, 1/(2 rho)), exact.

    .. math:: P[N = k] = \sum_{|j| \le K} P[\eta = j]\, P[\eta = j - k], \qquad |k| \le 2K,

    ``K`` the half-width beyond which each factor's neglected mass is below ``tail_mass``
    (so the values are exact to ``2 * tail_mass`` absolute and sum to 1 within it).

    Parameters
    ----------
    rho : float (0 < rho <= 1e100)
        Each cell's rho (this package's convention; the DAS's sigma^2 is 1/(2 rho)).
    tail_mass : float (0 < tail_mass <= 1e-3)

    Returns
    -------
    k : ndarray of int64
        ``-2K, ..., 2K``.
    pmf : ndarray of float
        :math:`P[N = k]`.

    Raises
    ------
    ValueError
        For a bad ``rho`` or ``tail_mass``, or a window wider than :data:`MAX_HALFWIDTH`
        (``rho`` below about 1e-7).
    """
    rho = _rho_scalar(rho)
    tail_mass = check_tail_mass(tail_mass)
    half = int(support_halfwidth_kernel(np.asarray(rho), tail_mass))
    if half > MAX_HALFWIDTH:
        raise ValueError(f"rho = {rho!r} is too small for the exact lattice sum: each cell's "
                         f"noise window would be {2 * half + 1} wide (allowed: half-width <= "
                         f"{MAX_HALFWIDTH}, rho >= about 1e-7)")
    j = np.arange(-half, half + 1, dtype=np.int64)
    cell = np.exp(logpmf_kernel(j, np.zeros_like(j), np.asarray(rho)))
    # The noise is symmetric, so the sum over j of P[eta = j] P[eta = j - k] is a convolution.
    return np.arange(-2 * half, 2 * half + 1, dtype=np.int64), np.convolve(cell, cell)


def replace_one_summary(rho, p=0.5, tail_mass: float = DEFAULT_TAIL_MASS) -> dict:
    r"""The measures of the replace-one (two-cell) question, exact (module docstring).

    .. math::

        \text{marginal posterior} = \sum_D \operatorname{expit}\bigl(\operatorname{logit}(p)
            + 2\rho D\bigr)\, P[N = D - 1], \qquad R = \text{marginal posterior} / p,

    ``p_correct`` and ``accuracy`` over the same lattice, ties split evenly.

    Parameters
    ----------
    rho : float (0 < rho <= 1e100)
        Each cell's rho (DG(0, 1/(2 rho)); the DAS's sigma^2 is 1/(2 rho)).
    p : array_like of float (0 < p < 1)
        Prior probability that the target is in cell ``a``.
    tail_mass : float (0 < tail_mass <= 1e-3)
        Each cell's neglected noise mass: the results are exact to ``2 * tail_mass`` absolute.

    Returns
    -------
    dict
        ``marginal_posterior``, ``marginal_risk``, ``p_correct``, ``accuracy``: floats for a
        scalar ``p``, arrays over ``p`` otherwise.
    """
    rho = _rho_scalar(rho)
    p = check_probability(p, "p")
    k, pmf = difference_pmf(rho, tail_mass)
    d = np.arange(int(k[0]) - 1, int(k[-1]) + 2, dtype=np.int64)  # D = N + 1 or N - 1
    given_a = np.concatenate([[0.0, 0.0], pmf])  # P[N = D - 1]
    given_b = np.concatenate([pmf, [0.0, 0.0]])  # P[N = D + 1]
    prior = np.asarray(p, dtype=float)[..., None]
    prior_term = logit(prior)
    data_term = 2.0 * rho * d.astype(float)
    log_odds = prior_term + data_term
    tie = np.abs(log_odds) <= TIE_RELATIVE * (np.abs(prior_term) + np.abs(data_term))
    says_a = np.where(tie, 0.5, (log_odds > 0).astype(float))
    posterior = (libm_expit(log_odds) * given_a).sum(-1)
    p_correct = (says_a * given_a).sum(-1)
    accuracy = (says_a * prior * given_a + (1.0 - says_a) * (1.0 - prior) * given_b).sum(-1)
    return {"marginal_posterior": scalar_result(posterior),
            "marginal_risk": scalar_result(posterior / np.asarray(p, dtype=float)),
            "p_correct": scalar_result(p_correct),
            "accuracy": scalar_result(accuracy)}
