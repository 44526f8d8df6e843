r"""Monte Carlo risk of a K-cell tree product: likelihoods, posterior and P[MAP correct].

For trees too large to enumerate, the adversary's likelihood of the observed product
:math:`w` (every level's integers, :mod:`.histogram_tree`) under each hypothesis ``h`` (a
full set of true leaf counts; the adversary knows everything else, e.g. every record but the
target's) is estimated by simulating the mechanism and the post-processing:

.. math::

    \hat L_h(w) = \frac1N \sum_{n=1}^N \mathbf 1[w_h^{(n)} = w], \qquad
    \mathrm{MCSE} = \sqrt{\hat L_h (1 - \hat L_h) / N},

with :math:`w_h^{(n)}` the product of ``N`` independent releases under ``h`` (a *bank* per
hypothesis, reused for every observed product). The random rounding tie-break is simulated
with the product (not averaged: unlike :mod:`.monte_carlo`, the K-cell rounding has no
closed-form law). The posterior is :math:`\hat\pi_h \propto \pi_h \hat L_h`.

**P[MAP correct]** (:func:`p_map_correct_mc`): ``R`` releases under the true hypothesis,
independent of the banks, each decided by the MAP of :math:`\pi_h \hat L_h` (ties uniform; a
product seen in no bank: MAP of the prior). The estimate is the mean of the ``R`` decisions'
correctness shares; its MCSE (sd / sqrt R) is conditional on the banks. The banks' own
error can flip decisions where two hypotheses' likelihoods are within noise:
``undecided_mass`` reports the share of releases whose top two :math:`\pi_h \hat L_h` are within
4 standard errors of each other, a bound on the probability that bank noise changed a decision
(the tests allow it on top of 4 MCSE). The plug-in decision is only as good as the banks:
where the product is weakly informative many releases are near-ties and bank noise flips
them, which biases P[MAP correct at the truth] (a true-positive rate, not bounded by the
Bayes decision's); e.g. one other block of 2, :math:`\rho_1 = 0.4`, :math:`\rho_2 = 0.6`:
exact 0.627, plug-in with banks of 3,000 draws 0.753 (undecided mass 0.26), with 50,000
draws 0.629 (0.12). Read ``undecided_mass`` before the estimate.

Simulated products use :func:`.histogram_tree.top_down_batch` without the total invariant
(the vectorised exact projection and largest-remainder rounding: the law of the MILP path,
which with the same tie-break gives the same integers, tested in ``test_histogram_tree``),
the per-release :func:`.histogram_tree.top_down` with the HiGHS MILP with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprisk.inference.product.histogram_tree import (
    HistogramTree,
    simulate_measurements,
    top_down,
    top_down_batch,
)
from dprisk.models.checks import check_positive_int
from dprisk.models.mechanism.dg_sampling import as_generator
from dprisk.models.priors.histogram import check_cell_prior

__all__ = ["McTreeRisk", "p_map_correct_mc", "simulate_products", "tree_likelihood_mc"]

#: Standard errors within which two hypotheses' scores count as undecided.
N_SE = 4.0


@dataclass(frozen=True)
class McTreeRisk:
    r"""Monte Carlo likelihoods (or decisions) of a K-cell tree product.

    Attributes
    ----------
    likelihood : ndarray, shape (H,) or (R, H)
        :math:`\hat L_h` of the observed product(s).
    mcse : ndarray
        Their Monte Carlo standard errors.
    posterior : ndarray
        :math:`\pi_h \hat L_h / \sum_j \pi_j \hat L_j` (prior where every estimate is 0).
    draws : int
        Bank size per hypothesis.
    """

    likelihood: np.ndarray
    mcse: np.ndarray
    posterior: np.ndarray
    draws: int


def simulate_products(tree: HistogramTree, leaf_counts, n: int, *, invariant="none",
                      random_seed=None) -> np.ndarray:
    """``n`` independent products of ``leaf_counts``, each flattened (all levels, root first).

    Returns
    -------
    ndarray of int64, shape (n, number of nodes x K)
    """
    n = check_positive_int(n, "n")
    rng = as_generator(random_seed, "random_seed")
    counts = tree.aggregate(leaf_counts)
    totals = [c.sum(axis=1) for c in counts]
    noisy = simulate_measurements(tree, leaf_counts, size=n, random_seed=rng)
    if invariant == "none":
        return np.concatenate([lv.reshape(n, -1) for lv in top_down_batch(
            tree, noisy, random_seed=rng)], axis=1)
    rounding = "largest-remainder" if invariant == "none" else "milp"
    return np.array([np.concatenate([lv.ravel() for lv in top_down(
        tree, [x[i] for x in noisy], invariant=invariant, true_totals=totals,
        rounding=rounding, random_seed=rng).levels]) for i in range(n)])


def _frequencies(observed: np.ndarray, bank: np.ndarray) -> np.ndarray:
    """Share of the bank's rows equal to each observed row."""
    values, counts = np.unique(bank, axis=0, return_counts=True)
    both = np.concatenate([values, observed])
    _, inverse = np.unique(both, axis=0, return_inverse=True)
    lookup = np.zeros(inverse.max() + 1)
    lookup[inverse[:values.shape[0]]] = counts / bank.shape[0]
    return lookup[inverse[values.shape[0]:]]


def _posterior(likelihood: np.ndarray, prior: np.ndarray) -> np.ndarray:
    joint = prior * likelihood
    total = joint.sum(axis=-1, keepdims=True)
    return np.where(total > 0, joint / np.where(total > 0, total, 1.0), prior)


def _check(tree, hypotheses, prior, draws):
    hypotheses = [np.asarray(h) for h in hypotheses]
    if len(hypotheses) < 2:
        raise ValueError("hypotheses must list at least 2 sets of leaf counts")
    for h in hypotheses:
        tree.aggregate(h)  # validates shape and counts
    prior = check_cell_prior(prior, len(hypotheses)) if prior is not None else \
        np.full(len(hypotheses), 1.0 / len(hypotheses))
    draws = check_positive_int(draws, "draws", minimum=2)
    return hypotheses, np.asarray(prior, dtype=float), draws


def tree_likelihood_mc(observed, tree: HistogramTree, hypotheses, *, prior=None,
                       invariant="none", draws=10_000, random_seed=None) -> McTreeRisk:
    r"""Estimate :math:`P[w \mid h]` for every hypothesis, and the posterior (module notes).

    Parameters
    ----------
    observed : array_like of int
        The observed product flattened as by :func:`simulate_products` (or a ``TreeProduct``).
    tree : HistogramTree
    hypotheses : sequence of array_like of int, each (n_leaves, K)
        The true leaf counts under each hypothesis.
    prior : array_like of float, optional
        :math:`\pi_h` (uniform by default).
    invariant : {"none", "total"}
    draws : int (>= 2)
        Bank size per hypothesis.
    random_seed : int or Generator, optional
    """
    hypotheses, prior, draws = _check(tree, hypotheses, prior, draws)
    if hasattr(observed, "levels"):
        observed = np.concatenate([lv.ravel() for lv in observed.levels])
    observed = np.asarray(observed, dtype=np.int64).reshape(1, -1)
    width = sum(tree.n_nodes(lv) for lv in range(tree.n_levels)) * np.asarray(
        hypotheses[0]).shape[1]
    if observed.shape[1] != width:
        raise ValueError(f"observed must hold every node's K cells ({width} values, root "
                         f"first), got {observed.shape[1]}")
    rng = as_generator(random_seed, "random_seed")
    lik = np.array([_frequencies(observed, simulate_products(
        tree, h, draws, invariant=invariant, random_seed=rng))[0] for h in hypotheses])
    return McTreeRisk(lik, np.sqrt(lik * (1 - lik) / draws), _posterior(lik, prior), draws)


@dataclass(frozen=True)
class McMapCorrect:
    """P[MAP correct] by Monte Carlo (module notes)."""

    p_map_correct: float
    mcse: float
    undecided_mass: float
    releases: int
    draws: int


def p_map_correct_mc(tree: HistogramTree, hypotheses, true_index: int, *, prior=None,
                     invariant="none", releases=2000, draws=10_000,
                     random_seed=None) -> McMapCorrect:
    r"""P[the MAP hypothesis is the true one] from the product, by Monte Carlo.

    Parameters
    ----------
    tree, hypotheses, prior, invariant, draws
        As in :func:`tree_likelihood_mc`.
    true_index : int
        Index of the true hypothesis.
    releases : int (>= 2)
        Releases simulated under the truth (independent of the banks).
    """
    hypotheses, prior, draws = _check(tree, hypotheses, prior, draws)
    releases = check_positive_int(releases, "releases", minimum=2)
    if not 0 <= int(true_index) < len(hypotheses):
        raise ValueError(f"true_index must be in 0..{len(hypotheses) - 1}, got {true_index}")
    rng = as_generator(random_seed, "random_seed")
    seen = simulate_products(tree, hypotheses[true_index], releases, invariant=invariant,
                             random_seed=rng)
    lik = np.stack([_frequencies(seen, simulate_products(tree, h, draws, invariant=invariant,
                                                         random_seed=rng))
                    for h in hypotheses], axis=1)
    score = np.where(lik.sum(axis=1, keepdims=True) > 0, prior * lik, prior)
    best = score == score.max(axis=1, keepdims=True)
    share = best[:, true_index] / best.sum(axis=1)
    se = prior * np.sqrt(lik * (1 - lik) / draws)
    top2 = np.sort(score, axis=1)[:, -2:]
    order = np.argsort(score, axis=1)[:, -2:]
    se_gap = np.sqrt(np.take_along_axis(se, order, axis=1) ** 2 @ np.ones(2))
    undecided = np.mean((top2[:, 1] - top2[:, 0] <= N_SE * se_gap) & (se_gap > 0))
    return McMapCorrect(float(share.mean()), float(share.std(ddof=1) / np.sqrt(releases)),
                        float(undecided), releases, draws)
