r"""The f-DP worst case beside each person's Bayes answer: no attack on the block cells beats it.

**The bound.** Fix everything but the target's record; let :math:`P_c` be the law of the
target's group's noisy cells :math:`y` when the target's category is :math:`c` and
:math:`P_\varnothing` when the target is absent (every cell at the others' count). With the
target absent and present in category :math:`c` only cell :math:`c` moves, by one: the pair
:math:`(P_\varnothing, P_c)` is one discrete Gaussian's shift,
:math:`\mathrm{DG}(0, \sigma^2)` against :math:`\mathrm{DG}(1, \sigma^2)` (pmf
:math:`\propto e^{-x^2/(2\sigma^2)}`), whose trade-off function :math:`f` (the least type-II
error at type-I error :math:`\alpha`) is :func:`tradeoff`. Any attack :math:`A(y)` guessing
the category, with the category drawn from :math:`\pi` and :math:`a_c = P_\varnothing[A = c]`
(:math:`\sum_c a_c \le 1`: the events are disjoint), succeeds with probability

.. math::

    \sum_c \pi_c P_c[A = c] \le \sum_c \pi_c\,(1 - f(a_c))
    \le 1 - f\Bigl(\sum_c \pi_c a_c\Bigr) \le 1 - f(\kappa), \qquad \kappa = \max_c \pi_c,

by the f-DP inequality :math:`P_c[E] \le 1 - f(P_\varnothing[E])`, Jensen
(:math:`1 - f` is concave) and monotonicity (:math:`\sum_c \pi_c a_c \le \kappa`). This is
the reconstruction-robustness bound (Hayes et al. 2023; Kaissis et al. 2023; Kulynych et al.
2025) at baseline :math:`\kappa`, the best a guess from the prior alone achieves. It holds
for any adversary who knows at most everything but the target's category, the informed and
the outsider alike, and it averages over the noise: it bounds a person's expected
correctness (``map_correct`` averaged over draws), never a single posterior.

**Its scope: attacks on** :math:`y`. The bound is for attacks :math:`A(y)` on the group's
block ``detailed`` cells, the measurements the adversaries of this package read. The released
file measures the person in other queries and at every level above the block too, each
independently noised; an attack reading them faces the product of those queries' pairs,
a steeper trade-off, and can beat :math:`1 - f(\kappa)`. At the production variances
(block ``detailed`` :math:`\sigma^2 = 10.0928`, block-group ``detailed`` 4.0630), choosing
between two categories at :math:`\kappa = 1/2`, the informed Bayes rule is right with
probability 0.5877 from the block's cells (bound 0.6225) and 0.6611 from both levels' cells.

**The trade-off function** of the shift, by Neyman-Pearson: the likelihood ratio
:math:`e^{(2x - 1)/(2\sigma^2)}` increases with :math:`x`, so the optimal tests reject for
large :math:`x` (randomised at the boundary). At the threshold :math:`k`,
:math:`\alpha_k = P[X \ge k]` and :math:`\beta_k = P[X \le k - 2]` (:math:`X \sim
\mathrm{DG}(0, \sigma^2)`), and :math:`f` interpolates linearly between consecutive points
:math:`(\alpha_k, \beta_k)`. In the Gaussian limit
:math:`1 - f(\kappa) = \Phi(\Phi^{-1}(\kappa) + 1/\sigma)`.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.population.variances import check_variance_argument
from dprisk.models.mechanism.discrete_gaussian import logpmf_kernel, support_halfwidth_kernel

__all__ = ["TAIL_MASS", "success_bound", "tradeoff"]

#: Probability left outside the pmf's window (both tails together).
TAIL_MASS = 1e-18


def _curve(variance: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The points :math:`(\alpha_k, \beta_k)` of the trade-off curve, :math:`\alpha` ascending."""
    rho = np.asarray([1.0 / (2.0 * variance)])
    half = int(support_halfwidth_kernel(rho, TAIL_MASS)[0]) + 2
    x = np.arange(-half, half + 1)
    pmf = np.exp(logpmf_kernel(x, np.zeros(1), rho))
    sf = np.cumsum(pmf[::-1])[::-1]  # P[X >= x], x = -half..half
    cdf = np.cumsum(pmf)  # P[X <= x]
    # thresholds k = half + 2 down to -half: alpha_k = P[X >= k] ascends, beta_k descends
    k = np.arange(half + 2, -half - 1, -1)
    alpha = np.where(k > half, 0.0, sf[np.clip(k + half, 0, x.size - 1)])
    beta = np.where(k - 2 < -half, 0.0, cdf[np.clip(k - 2 + half, 0, x.size - 1)])
    alpha = np.concatenate([[0.0], alpha, [1.0]])  # accept all / reject all
    beta = np.concatenate([[1.0], beta, [0.0]])
    alpha = np.maximum.accumulate(np.minimum(alpha, 1.0))
    last = np.append(alpha[1:] > alpha[:-1], True)  # equal alphas: the smallest beta
    return alpha[last], np.minimum(beta[last], 1.0)


def tradeoff(alpha, variance: float) -> np.ndarray:
    r"""The trade-off function :math:`f(\alpha)` of DG(0, sigma^2) against DG(1, sigma^2).

    Parameters
    ----------
    alpha : float array in [0, 1]
    variance : float (> 0)
        :math:`\sigma^2` (the DAS's convention, pmf :math:`\propto e^{-x^2/(2\sigma^2)}`).
    """
    if not (np.isfinite(variance) and variance > 0):
        raise ValueError(f"variance must be a finite number > 0, got {variance!r}")
    a, b = _curve(float(variance))
    return np.interp(np.asarray(alpha, dtype=np.float64), a, b)


def success_bound(kappa, variance) -> np.ndarray:
    r"""The worst-case success :math:`1 - f(\kappa)` of guessing a category (module docstring).

    Parameters
    ----------
    kappa : float array in (0, 1]
        :math:`\max_c \pi_c` of each person's prior.
    variance : float array (1e-4 <= variance <= 1e8), broadcast to ``kappa``
        :math:`\sigma^2` of each person's cells (computed once per distinct value).

    Returns
    -------
    ndarray of float
        :math:`1 - f(\kappa)` in :math:`[\kappa, 1]`, of the broadcast shape.

    Raises
    ------
    TypeError
        A ``kappa`` or ``variance`` that is not numbers (booleans and strings included).
    ValueError
        A ``kappa`` outside ``(0, 1]`` (NaN included: no prior's largest share) or a
        ``variance`` outside :data:`~dprisk.inference.population.variances.VARIANCE_RANGE`
        (the trade-off curve's window grows with :math:`\sigma`: 16 GiB at 1e16), naming it.
    """
    if isinstance(kappa, (str, bytes)) or np.asarray(kappa).dtype.kind not in "iuf":
        raise TypeError(f"kappa must be numbers, got {kappa!r}")
    kappa, variance = np.broadcast_arrays(np.asarray(kappa, dtype=np.float64),
                                          check_variance_argument(variance))
    outside = ~((kappa > 0) & (kappa <= 1))
    if outside.any():
        raise ValueError(f"kappa must be in (0, 1] (a prior's largest share; allowed range: "
                         f"0 < kappa <= 1), got {float(kappa[outside].flat[0])!r}")
    out = np.empty(kappa.shape)
    values, inverse = np.unique(variance, return_inverse=True)
    inverse = inverse.reshape(kappa.shape)
    for i, value in enumerate(values):
        chosen = inverse == i
        out[chosen] = 1.0 - tradeoff(kappa[chosen], float(value))
    return out
