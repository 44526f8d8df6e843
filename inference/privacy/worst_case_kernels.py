r"""Kernels of the worst-case (f-DP) accuracy of a test between two release distributions.

The releases are independent discrete Gaussian queries, query ``i`` adding
:math:`\mathrm{DG}(0, 1/(2\rho_i))` to a count that is ``m + 1`` when the target has the
characteristic (:math:`P_1`) and ``m`` when not (:math:`P_0`); every other count is known, so
the two release distributions differ by a shift of one in each query. For a prior ``p`` on
:math:`P_1`, the largest prior-weighted accuracy any test (randomised or not) reaches is

.. math::

    A^*(p) = \max_{\phi}\; p\,\mathrm{TPR}(\phi) + (1 - p)(1 - \mathrm{FPR}(\phi))
           = \sum_x \max\bigl(p P_1(x), (1 - p) P_0(x)\bigr),

the Bayes risk of the pair (Kulynych et al. 2025, Proposition D.1; at :math:`p = 1/2` it is
:math:`(1 + \mathrm{TV}(P_0, P_1))/2`). Two ways are implemented, on validated inputs:

* **exact** (:func:`atoms_accuracy`): the log-likelihood ratio is
  :math:`L = \sum_i \rho_i (2 j_i + 1)` with :math:`j_i = x_i^* - m - 1`, so
  :math:`A^* = E_{P_1}[\max(p, (1 - p) e^{-L})]`; the atoms of ``L`` (its distinct values
  and their :math:`P_1` probabilities, and the :math:`P_0` probabilities
  :math:`w\,e^{-L}`) are enumerated level by level
  (:func:`dprisk.inference.nested.unique_levels_kernels.split_atoms`, windows with
  neglected probability below ``tail`` per query) and split in two sides; the second side
  is sorted, and prefix sums of its :math:`P_0` mass and suffix sums of its :math:`P_1` mass
  give the sum in :math:`O(N_A \log N_B)`. The mass outside the windows bounds the error:
  the returned value is a lower bound, within ``neglected`` of :math:`A^*`.
* **privacy-loss distributions** (:func:`pld_accuracy_bound`): ``dp-accounting``'s PLD of
  each discrete Gaussian query, composed
  (:func:`dprisk.inference.privacy.accounting.composed_pld`), and the hockey-stick divergence
  :math:`\delta(\varepsilon)` at :math:`\varepsilon = |\operatorname{logit} p|`:

  .. math:: A^*(p) = \max(p, 1 - p) + \min(p, 1 - p)\,\delta(|\operatorname{logit} p|)

  (the pair is symmetric, so both directions give the same divergence). The pessimistic
  discretisation (connect-the-dots) is an upper bound on :math:`\delta`, the optimistic one
  (losses rounded down, truncated tails dropped) a lower bound, so the two bracket
  :math:`A^*`; their gap is the discretisation error.
"""

from __future__ import annotations

import numpy as np

from dprisk.inference.nested.unique_levels_kernels import split_atoms, tie_tolerance
from dprisk.inference.privacy.accounting import composed_pld
from dprisk.models.numerics import logit

__all__ = ["atom_count", "atoms_accuracy", "atoms_true_negative", "pld_accuracy_bound"]


def atom_count(rhos: np.ndarray, tail: float) -> float:
    """Number of (query-window) combinations the exact enumeration would visit (upper bound)."""
    from dprisk.models.mechanism.discrete_gaussian import support_halfwidth_kernel

    sizes = [2.0 * float(support_halfwidth_kernel(r, tail)) + 1.0 for r in rhos]
    return float(np.prod(sizes))


def atoms_accuracy(rhos: np.ndarray, p: np.ndarray, tail: float) -> tuple[np.ndarray, float]:
    r"""Exact :math:`A^*(p) = E_{P_1}[\max(p, (1 - p) e^{-L})]` by enumerating the atoms of ``L``.

    Parameters
    ----------
    rhos : 1-d float array (each > 0)
        One zCDP budget per query whose count moves by one with the target.
    p : float array (0 < p < 1)
    tail : float (0 < tail < 1)
        Neglected probability per query (each side of its window).

    Returns
    -------
    (accuracy, neglected)
        ``accuracy`` shaped like ``p`` (a lower bound of :math:`A^*`), and ``neglected``, the
        largest :math:`p\,n_1 + (1 - p)\,n_0` over ``p`` (:math:`n_k` the :math:`P_k` mass
        outside the windows): :math:`A^* \le` accuracy + neglected.
    """
    (s_a, w_a), (s_b, w_b) = split_atoms(rhos, tail / rhos.size)
    prob1_a, prob0_a = np.exp(w_a), np.exp(w_a - s_a)
    prob1_b, prob0_b = np.exp(w_b), np.exp(w_b - s_b)
    upper1 = np.append(np.cumsum(prob1_b[::-1])[::-1], 0.0)   # P1 mass of b >= i
    lower0 = np.concatenate([[0.0], np.cumsum(prob0_b)])       # P0 mass of b < i
    n1 = max(0.0, 1.0 - float(prob1_a.sum()) * float(prob1_b.sum()))
    n0 = max(0.0, 1.0 - float(prob0_a.sum()) * float(prob0_b.sum()))
    flat = np.ravel(p)
    out = np.empty(flat.size)
    for k, prior in enumerate(flat):
        cut = -float(logit(prior))          # p P1 > (1 - p) P0  iff  L > cut
        idx = np.searchsorted(s_b, cut - s_a, side="right")
        out[k] = prior * np.dot(prob1_a, upper1[idx]) + (1.0 - prior) * np.dot(prob0_a,
                                                                                lower0[idx])
    neglected = float(np.max(flat * n1 + (1.0 - flat) * n0))
    return out.reshape(np.shape(p)), neglected


def atoms_true_negative(rhos: np.ndarray, p: float, tail: float) -> float:
    r"""The rule's true-negative rate, :math:`P_0[L \le -\operatorname{logit} p]`.

    The rule decides ``m + 1`` iff the posterior exceeds 1/2, i.e. iff
    :math:`L > -\operatorname{logit} p`; a release with log-odds exactly 0 (possible when the
    rhos are commensurate; within
    :func:`dprisk.inference.nested.unique_levels_kernels.tie_tolerance` of it) goes to ``m``.
    Under :math:`P_0` the noise of query ``i`` is
    :math:`k_i = j_i + 1 \sim \mathrm{DG}`, so :math:`L = \sum_i \rho_i (2 k_i - 1)`, which has
    the law of :math:`-L` under :math:`P_1` (the discrete Gaussian is symmetric): the rate is
    summed with the :math:`P_1` weights of the same atoms as :func:`atoms_accuracy`. Summing
    the :math:`P_0` weights :math:`w\,e^{-L}` instead loses digits when a large
    :math:`\rho` makes ``log w`` and ``L`` large and nearly equal (at
    :math:`\rho = 10^5` the rate came out :math:`1 + 9 \times 10^{-13}`); here every term is a
    probability, so the sum never exceeds 1 beyond summation rounding.
    """
    (s_a, w_a), (s_b, w_b) = split_atoms(rhos, tail / rhos.size)
    upper1 = np.append(np.cumsum(np.exp(w_b)[::-1])[::-1], 0.0)   # P1 mass of b >= i
    logit_p = float(logit(p))  # the ties (tie_tolerance of 0) are counted as decided m
    idx = np.searchsorted(s_b, logit_p - s_a - tie_tolerance(logit_p, s_a, s_b), side="left")
    return min(1.0, float(np.dot(np.exp(w_a), upper1[idx])))


def pld_accuracy_bound(queries: list[tuple[float, int]], p: float, interval: float, *,
                       pessimistic: bool) -> float:
    r"""An upper (``pessimistic``) or lower bound of :math:`A^*(p)` from the composed PLD.

    :math:`A^* = \max(p, 1-p) + \min(p, 1-p)\,\delta(|\operatorname{logit} p|)`.
    """
    epsilon = abs(float(logit(p)))
    pld = composed_pld(queries, interval, pessimistic=pessimistic, connect_dots=True)
    delta = pld.get_delta_for_epsilon(epsilon)
    return max(p, 1.0 - p) + min(p, 1.0 - p) * min(max(float(delta), 0.0), 1.0)
