r"""The worst case beside the Bayesian answer: the best accuracy of *any* adversary's test.

Every other risk in the suite is Bayesian: one adversary, one prior, one model. The f-DP view
(Dong, Roth & Su 2022; Kulynych et al. 2025, "Unifying re-identification, attribute inference,
and data reconstruction risk in differential privacy") bounds every adversary at once through
the pair of release distributions with and without the target's characteristic. Here the
adversary knows every count but the target's (the paper's model with ``m`` known others), so
the target moves every count it belongs to by one:

* one level: :math:`x_1^* \sim \mathrm{DG}(m + 1, \cdot)` against :math:`\mathrm{DG}(m, \cdot)`;
* two levels: :math:`(x_1^*, x_2^*)` shift together by one; :math:`y_1^*` (the other blocks)
  has the same distribution under both, so it carries no information about the target and
  the pair is the product of the block's and the block group's pairs;
* ``h`` nested levels, or a target unique at ``ell`` levels: the product of one pair per level;
* the 2020 persons strategy: the product of all 65 query pairs (every query's count changes).

For a prior ``p`` the best prior-weighted accuracy of any test is

.. math:: A^*(p) = \max_\phi\; p\,\mathrm{TPR} + (1 - p)(1 - \mathrm{FPR})
          = \sum_x \max\bigl(p P_1(x), (1 - p) P_0(x)\bigr),

at :math:`p = 1/2` equal to :math:`(1 + \mathrm{TV})/2`
(:mod:`dprisk.inference.privacy.worst_case_kernels`: exact enumeration for a few queries,
``dp-accounting``'s privacy-loss distributions, bracketed, for many). The Bayes rule's own
accuracy on the same weighting (:func:`bayes_accuracy`, :func:`bayes_accuracy_levels`,
:func:`bayes_accuracy_two_level`),

.. math:: A_{\text{Bayes}}(p) = p\,P[\text{decide } m + 1 \mid x_1 = m + 1]
          + (1 - p)\,P[\text{decide } m \mid x_1 = m],

is one test, so :math:`A_{\text{Bayes}} \le A^*`. At one level (and for a target unique at
several levels) the Bayes rule *is* the likelihood-ratio test, and the two coincide; with
the block group the adversary's model (improper prior on X2, a discrete Gaussian for the
noise of ``y1*``) is not the truth's, and the gap is what the model leaves on the table.

Why not the ``riskcal`` package (PyPI 1.5.1)? Its Bayes-risk conversion,
``get_bayes_risk_from_pld``, is ``dp-accounting``'s ``get_delta_for_epsilon`` at
:math:`\operatorname{logit}(p)` on a PLD the caller builds; that is the formula used here
directly (no new dependency), with both discretisations to bracket it.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np

from dprisk.inference.privacy import worst_case_kernels as kernels
from dprisk.inference.privacy.accounting_cache import cached_float
from dprisk.models.census.allocation import CENSUS_RHO_TOTAL
from dprisk.models.checks import check_probability, check_rho
from dprisk.models.scenario import scalar_value
from dprisk.runtime.renamed import renamed_attributes

__all__ = [
    "DEFAULT_INTERVAL",
    "EXACT_TAIL",
    "MAX_EXACT_COMBINATIONS",
    "WORST_CASE_METHODS",
    "WorstCaseAccuracy",
    "bayes_accuracy",
    "bayes_accuracy_levels",
    "bayes_accuracy_two_level",
    "census_worst_case",
    "one_level_accuracy_bound",
    "one_level_worst_case",
    "worst_case_accuracy",
]

#: Methods of :func:`worst_case_accuracy`.
WORST_CASE_METHODS = ("auto", "exact", "pld")
#: Neglected probability of the exact enumeration (all queries together).
EXACT_TAIL = 1e-20
#: ``method="auto"`` enumerates exactly up to this many window combinations, else uses PLDs.
MAX_EXACT_COMBINATIONS = 1e12
#: Loss grid of the PLDs (the 65 Census queries at p = 1/2: [0.871032, 0.871075]).
DEFAULT_INTERVAL = 2e-5


@dataclass(frozen=True)
class WorstCaseAccuracy:
    r"""The best prior-weighted accuracy of any test between the two release distributions.

    Attributes
    ----------
    accuracy : float
        The conservative value, ``upper`` (a guarantee: no test does better).
    lower, upper : float
        :math:`A^*` lies in ``[lower, upper]``: the exact sum and that sum plus the neglected
        mass (``method="exact"``), or the optimistic and pessimistic PLD (``"pld"``).
    p : float
        The prior weight of :math:`P_1` (the target has the characteristic).
    method : str
        ``"exact"`` or ``"pld"``.
    queries : int
        Number of discrete Gaussian queries whose count moves with the target.
    """

    accuracy: float
    lower: float
    upper: float
    p: float
    method: str
    queries: int

    @property
    def total_variation(self) -> float:
        r""":math:`2 A^* - 1` at ``p = 1/2`` (the largest TPR - FPR), else ``ValueError``."""
        if self.p != 0.5:
            raise ValueError(f"total_variation needs p = 1/2, got p = {self.p!r}")
        return 2.0 * self.accuracy - 1.0

    def to_dict(self) -> dict:
        """All fields as a plain dict."""
        return asdict(self)


def _rho_list(rhos) -> np.ndarray:
    values = check_rho(rhos, "rhos").reshape(-1)
    if values.size == 0:
        raise ValueError(f"rhos must be a non-empty list of numbers > 0, got {rhos!r}")
    return values.astype(float)


def _scalar_p(p) -> float:
    return float(scalar_value(check_probability(p, "p"), "p"))


def _pld_bound(rho_values: np.ndarray, p: float, interval: float, pessimistic: bool) -> float:
    queries = sorted(Counter(rho_values.tolist()).items())
    key = {"queries": [[repr(rho), count] for rho, count in queries], "p": repr(p),
           "value_discretization_interval": repr(interval), "pessimistic": pessimistic}
    return cached_float("worst_case_accuracy_pld", key, lambda: kernels.pld_accuracy_bound(
        queries, p, interval, pessimistic=pessimistic))


def worst_case_accuracy(rhos, p=0.5, *, method: str = "auto",
                        value_discretization_interval: float = DEFAULT_INTERVAL
                        ) -> WorstCaseAccuracy:
    r"""The best accuracy :math:`\sum_x \max(p P_1(x), (1 - p) P_0(x))` of any test.

    :math:`P_1` and :math:`P_0` are the joint distributions of independent discrete Gaussian
    releases, query ``i`` with noise :math:`\mathrm{DG}(0, 1/(2\rho_i))` on a count that is
    one higher under :math:`P_1`.

    Parameters
    ----------
    rhos : float or sequence of float (each > 0)
        One zCDP budget per query whose count moves with the target (one level: ``rho1``;
        two levels: ``(rho1, rho2)``; nested levels: every level's rho).
    p : float (0 < p < 1)
        Prior weight of :math:`P_1`.
    method : {"auto", "exact", "pld"}
        ``exact``: enumeration of the log-likelihood ratio's atoms (error below 1e-20);
        ``pld``: ``dp-accounting``'s composed PLDs, optimistic and pessimistic (bracket);
        ``auto``: exact up to :data:`MAX_EXACT_COMBINATIONS` window combinations.
    value_discretization_interval : float (> 0)
        Loss grid of the PLDs (``pld`` only).

    Returns
    -------
    WorstCaseAccuracy

    Examples
    --------
    At the Census block, rho1 = ``census_level("block").rho`` = 0.0992264, and p = 1/2 the
    value is 0.588860 = (1 + TV)/2, equal to the Bayes rule's accuracy (:func:`bayes_accuracy`);
    rho1 = 0.0992 itself gives 0.588849.
    """
    rho_values = _rho_list(rhos)
    prior = _scalar_p(p)
    if method not in WORST_CASE_METHODS:
        raise ValueError(f"method must be one of {WORST_CASE_METHODS}, got {method!r}")
    interval = float(scalar_value(check_rho(value_discretization_interval,
                                            "value_discretization_interval"),
                                  "value_discretization_interval"))
    if method == "auto":
        fits = kernels.atom_count(rho_values, EXACT_TAIL / rho_values.size)
        method = "exact" if fits <= MAX_EXACT_COMBINATIONS else "pld"
    if method == "exact":
        value, neglected = kernels.atoms_accuracy(rho_values, np.asarray(prior), EXACT_TAIL)
        lower = float(value)
        upper = min(1.0, lower + neglected)
    else:
        lower = _pld_bound(rho_values, prior, interval, False)
        upper = _pld_bound(rho_values, prior, interval, True)
    # the prior's mode alone is right with probability max(p, 1 - p), so A* is at least that;
    # the sums' rounding fell up to 9e-14 below it at rhos (1e-9, 1e-9)
    floor = max(prior, 1.0 - prior)
    lower, upper = max(lower, floor), max(upper, floor)
    return WorstCaseAccuracy(upper, lower, upper, prior, method, int(rho_values.size))


def census_worst_case(rho_total=CENSUS_RHO_TOTAL, *, p=0.5, queries: str = "all",
                      value_discretization_interval: float = DEFAULT_INTERVAL
                      ) -> WorstCaseAccuracy:
    r"""The worst-case accuracy against the 2020 persons strategy at global ``rho_total``.

    Parameters
    ----------
    rho_total : float (> 0)
        Global rho; each query's rho is its share (:mod:`dprisk.models.census.strategy`).
    p : float (0 < p < 1)
        Prior weight of :math:`P_1` (the target has ``c``).
    queries : {"all", "detailed"}
        ``all``: the 65 queries (the target's count moves in every one; PLDs, bracketed);
        ``detailed``: the block and block-group ``detailed`` (GVHR) queries alone, the two
        the paper's adversary reads (exact).
    value_discretization_interval : float (> 0)
        PLD loss grid (``all`` only).

    Returns
    -------
    WorstCaseAccuracy
        As :func:`worst_case_accuracy` of the chosen queries' rhos.
    """
    from dprisk.models.census.strategy import strategy_queries

    chosen = strategy_queries(rho_total)
    if queries == "detailed":
        rhos = [q.rho for q in chosen if q.query == "detailed"
                and q.level in ("block", "block-group")]
        return worst_case_accuracy(rhos, p, method="exact")
    if queries != "all":
        raise ValueError(f"queries must be 'all' or 'detailed', got {queries!r}")
    return worst_case_accuracy([q.rho for q in chosen], p, method="pld",
                               value_discretization_interval=value_discretization_interval)


# --------------------------------------------------------------------------- the Bayes rule
def one_level_worst_case(rho: float, p: float) -> float:
    """Kernel of :func:`worst_case_accuracy` for one validated query (exact atoms, no checks)."""
    value, _ = kernels.atoms_accuracy(np.array([float(rho)]), np.asarray(float(p)), EXACT_TAIL)
    return float(value)


def one_level_accuracy_bound(rho: float, p: float) -> float:
    r"""An upper bound of the one-level worst-case accuracy, increasing in ``rho`` (kernel).

    With :math:`\eta \sim \mathrm{DG}(0, 1/(2\rho))`, :math:`c = |\operatorname{logit} p|`
    and :math:`s = (c/\rho - 1)/2`:

    .. math:: A^*(\rho, p) \le B(\rho, p) = \max(p, 1 - p) + \min(p, 1 - p)\,
              \min\bigl(P[\eta = 0],\; e^{-\rho s^2} \text{ if } \rho < c\bigr).

    Why: :math:`A^* = \max(p, 1-p) + \sum_x \max(0, \pi_1 P_1(x) - \pi_0 P_0(x))` with
    :math:`\pi_1 = p`, :math:`\pi_0 = 1 - p` taking the larger as the baseline (for
    :math:`p \le 1/2`; symmetric otherwise). Each positive term is at most
    :math:`\min(p, 1-p)(P_1 - P_0)(x)`, and :math:`\sum_x \max(0, P_1 - P_0) = TV = P[\eta =
    0] = 1/Z(\rho)` (the pmf's differences telescope), increasing in rho. The positive terms
    are where the log-likelihood ratio :math:`\rho(2\eta + 1)` passes ``c``, i.e. :math:`\eta
    > s`, of probability at most :math:`e^{-\rho s^2}` for :math:`s \ge 0` (the discrete
    Gaussian is sub-Gaussian with variance proxy :math:`1/(2\rho)`, Canonne, Kamath & Steinke
    2020), and :math:`\rho s^2 = (c - \rho)^2/(4\rho)` decreases in rho on :math:`(0, c)`. At
    :math:`p = 1/2` the bound is the value: :math:`A^* = (1 + P[\eta = 0])/2`.
    """
    from dprisk.models.numerics import dg_log_normalizer

    rho, p = float(rho), float(p)
    share = math.exp(-float(dg_log_normalizer(rho)))  # P[eta = 0] = 1 / Z(rho)
    cut = abs(math.log(p) - math.log1p(-p))
    if rho < cut:
        share = min(share, math.exp(-(cut - rho) ** 2 / (4.0 * rho)))
    return max(p, 1.0 - p) + min(p, 1.0 - p) * share


def bayes_accuracy(rho, p=0.5, known=0) -> float:
    r"""Prior-weighted accuracy of the single-level 0-1-loss decision (exact).

    .. math:: p\,P[X^* \ge t \mid x_1 = m + 1] + (1 - p)\,P[X^* < t \mid x_1 = m],

    ``t`` the decision threshold
    (:func:`dprisk.inference.single_level.closed_form.decision_threshold`), exact
    discrete Gaussian tails. Equal to :func:`worst_case_accuracy` of ``rho`` (the Bayes rule
    is the likelihood-ratio test).

    Parameters
    ----------
    rho : float (> 0)
        zCDP parameter of the block's release.
    p : float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]` (the weight of the first term).
    known : int (>= 0), default 0
        ``m``, the adversary's count of the other people with characteristics ``c``; the
        accuracy does not depend on it.

    Returns
    -------
    float
        The accuracy, in :math:`[\max(p, 1 - p), 1]`.
    """
    from dprisk.inference.single_level import closed_form as single_level

    accuracy = single_level.design_summary(rho, p, known)["accuracy"]  # checks the ranges
    for value, name in ((rho, "rho"), (p, "p"), (known, "known")):
        scalar_value(value, name)  # one release design, not a batch
    return float(accuracy)


def bayes_accuracy_levels(rhos, p=0.5, known=0) -> float:
    r"""Prior-weighted accuracy of the decision for a target unique at ``ell`` levels (exact).

    .. math:: p\,P[S > -\operatorname{logit} p] + (1 - p)\,P_0[L \le -\operatorname{logit} p],
              \quad S = \sum_i \rho_i (2 j_i + 1),\; j_i \sim \mathrm{DG}(0, 1/(2\rho_i)),

    ``L`` the log-likelihood ratio: the true-positive rate is
    :func:`dprisk.inference.nested.unique_levels.p_correct_unique_levels`, the true-negative
    rate :func:`dprisk.inference.privacy.worst_case_kernels.atoms_true_negative` (a release
    with posterior exactly 1/2, which occurs when the rhos are commensurate, is decided ``m``).

    Parameters
    ----------
    rhos : sequence of float (rho > 0), length ell >= 1
        zCDP parameter of each level at which the target is unique.
    p : float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m+1]`.
    known : int (known >= 0), default 0
        ``m``; validated, the accuracy does not depend on it.

    Returns
    -------
    float
        The accuracy, in :math:`[\max(p, 1 - p), 1]`; equal to :func:`worst_case_accuracy`
        of ``rhos`` (the Bayes rule is the likelihood-ratio test here).
    """
    from dprisk.inference.nested.unique_levels import p_correct_unique_levels

    prior = _scalar_p(p)
    positive = float(p_correct_unique_levels(rhos, prior, known))
    negative = kernels.atoms_true_negative(_rho_list(rhos), prior, EXACT_TAIL)
    # within its documented range: the sums' rounding put it up to 9e-14 below max(p, 1 - p)
    # at rhos (1e-9, 1e-9), which the exact value never is (the prior's mode alone reaches it)
    return min(max(prior * positive + (1.0 - prior) * negative, prior, 1.0 - prior), 1.0)


def bayes_accuracy_two_level(*, x2, rho1, rho2, d, p=0.5, known=0,
                                prior="improper", x1=None) -> float:
    r"""Prior-weighted accuracy of the two-level 0-1-loss decision, exact.

    .. math:: p\,P[\text{correct} \mid x_1 = m + 1, x_2'] + (1 - p)\,
              P[\text{correct} \mid x_1 = m, x_2' - 1]

    (:func:`dprisk.inference.studies.p_correct.p_correct_two_level`; the other blocks'
    count :math:`y_1 = x_2' - m - 1` is the same under both). The pair of truths is the one
    the stated truth belongs to: :math:`x_2' = x_2` when ``x1`` is ``known + 1`` (the
    default), :math:`x_2' = x_2 + 1` when ``x1 = known`` (then :math:`(m, x_2)` is the second
    truth of the pair).

    Parameters
    ----------
    x2 : int (x2 >= x1)
        True block-group count at the stated truth ``x1``.
    rho1, rho2, d, p, known, prior
        As in :func:`dprisk.inference.studies.p_correct.p_correct_two_level`.
    x1 : int, optional
        True block count, ``known`` or ``known + 1`` (default ``known + 1``).

    Returns
    -------
    float
        The accuracy, in [0, 1].
    """
    from dprisk.inference.studies.p_correct import p_correct_two_level

    weight = _scalar_p(p)
    common = {"rho1": rho1, "rho2": rho2, "d": d, "p": p, "known": known, "prior": prior}
    if x1 is not None:  # stated at x1 = known: the pair's block-group count is x2 + 1
        from dprisk.inference.studies.setup import validated_study_params

        params, x1, x2, _ = validated_study_params(x2=x2, x1=x1, **common)
        x2 += int(x1 == params.known)
    positive = p_correct_two_level(x2=x2, x1=None, **common).p_correct
    negative = p_correct_two_level(x2=int(x2) - 1, x1=known, **common).p_correct
    return weight * positive + (1.0 - weight) * negative


#: Old names (issue 35: ``two_level`` for two levels, ``nested`` for h levels), still importable
#: from this module with a FutureWarning naming the new one.
__getattr__ = renamed_attributes(__name__, {
    "bayes_accuracy_hierarchical": "bayes_accuracy_two_level",
})
