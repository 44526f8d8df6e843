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
independent of the banks, each decided by the MAP of :math:`\pi_h \hat L_h` (ties shared: a
``k``-way tie credits ``1/k``, the exact code's rule; a product seen in no bank: MAP of the
prior). **Exact ties** are not left to the banks' noise: hypotheses with equal priors whose
leaf counts differ by a permutation :math:`\sigma` of the cells (e.g. the target in cell
``a`` or ``b``) have :math:`L_j(\sigma w) = L_i(w)` (every cell is measured and
post-processed alike), so on a release with :math:`\sigma w = w` their likelihoods are
equal; there the bank estimates are pooled (the group's mean) and the hypotheses tie (two
identical empty cells at the Census rho: a quarter of the releases; before issue 32 the
banks decided them, 0.777 against the exact 0.670). The estimate is the mean of the ``R`` decisions'
correctness shares; its MCSE (sd / sqrt R) is conditional on the banks. The banks' own
error can flip decisions where two hypotheses' likelihoods are within noise:
``undecided_mass`` reports the share of releases whose top two :math:`\pi_h \hat L_h` are within
4 standard errors of each other, a bound on the probability that bank noise changed a decision
(the tests allow it on top of 4 MCSE); exact ties are decided, not undecided. The reported
interval ``[lower, upper]`` covers both errors: every undecided release counted wrong, then
right, widened by 4 MCSE of the releases. The plug-in decision is only as good as the banks:
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
    """P[MAP correct] by Monte Carlo (module notes).

    ``lower``/``upper``: the interval covering the releases' sampling error (``N_SE`` MCSE)
    and the bank noise (every undecided release counted as wrong, then as right).
    """

    p_map_correct: float
    mcse: float
    undecided_mass: float
    releases: int
    draws: int
    lower: float = 0.0
    upper: float = 1.0
    exact_tie_mass: float = 0.0


def _cell_permutation(h_from: np.ndarray, h_to: np.ndarray):
    """``to`` with ``h_to[:, to[k]] == h_from[:, k]`` (a permutation of the cells), or None.

    Cells where the two agree stay; the others are matched by sorting their columns (so a
    target moved from one cell to another gives the transposition of the two cells).
    """
    if h_from.shape != h_to.shape:
        return None
    k = h_from.shape[1]
    to = np.arange(k)
    moved = np.flatnonzero(np.any(h_from != h_to, axis=0))
    a = moved[np.lexsort(h_from[:, moved][::-1])]
    b = moved[np.lexsort(h_to[:, moved][::-1])]
    if not np.array_equal(h_from[:, a], h_to[:, b]):
        return None
    to[a] = b
    return to


def _tie_groups(tree, hypotheses, prior, seen):
    r"""Per release, a label per hypothesis: equal labels have exactly equal likelihoods.

    Hypotheses ``i`` and ``j`` with equal priors whose leaf counts differ by a permutation
    :math:`\sigma` of the cells (:math:`h_j = \sigma h_i`) have
    :math:`L_j(\sigma w) = L_i(w)` (every cell is measured and post-processed alike), so a
    release with :math:`\sigma w = w` is an exact tie: :math:`L_i(w) = L_j(w)`.
    """
    n_rel, n_h = seen.shape[0], len(hypotheses)
    k = hypotheses[0].shape[1]
    nodes = sum(tree.n_nodes(lv) for lv in range(tree.n_levels))
    labels = np.broadcast_to(np.arange(n_h), (n_rel, n_h)).copy()
    pairs = []
    for i in range(n_h):
        for j in range(i + 1, n_h):
            to = _cell_permutation(hypotheses[i], hypotheses[j])
            if to is None or prior[i] != prior[j]:
                continue
            flat = (np.arange(nodes)[:, None] * k + to[None, :]).ravel()
            # (sigma w)[node, to[c]] = w[node, c]: sigma w = w iff w[:, to] == w
            pairs.append((i, j, np.all(seen[:, flat] == seen, axis=1)))
    for _ in range(n_h):  # propagate the smallest label through the tied pairs
        for i, j, tied in pairs:
            low = np.minimum(labels[:, i], labels[:, j])
            labels[:, i] = np.where(tied, low, labels[:, i])
            labels[:, j] = np.where(tied, low, labels[:, j])
    return labels


def _pool(values: np.ndarray, labels: np.ndarray, *, squares=False) -> np.ndarray:
    """Every hypothesis's value replaced by its tie group's mean (of squares: root mean/size)."""
    out = values.copy()
    for g in range(values.shape[1]):
        members = labels == g
        size = members.sum(axis=1)
        if not np.any(size > 1):
            continue
        v = values ** 2 if squares else values
        total = np.sum(np.where(members, v, 0.0), axis=1) / np.maximum(size, 1)
        if squares:
            total = np.sqrt(total / np.maximum(size, 1))
        out = np.where(members & (size[:, None] > 1), total[:, None], out)
    return out


def p_map_correct_mc(tree: HistogramTree, hypotheses, true_index: int, *, prior=None,
                     invariant="none", releases=2000, draws=10_000,
                     random_seed=None) -> McMapCorrect:
    r"""P[the MAP hypothesis is the true one] from the product, by Monte Carlo.

    Exact ties (module notes): hypotheses with equal priors that differ by a permutation of
    the cells tie exactly on every release the permutation leaves unchanged; there their
    bank estimates are pooled (the group's mean), so they tie and share the decision
    (``1/k`` for a ``k``-way tie, the exact code's rule), instead of the banks' noise
    deciding. ``exact_tie_mass``: the share of such releases.

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
    labels = _tie_groups(tree, hypotheses, prior, seen)
    score = np.where(lik.sum(axis=1, keepdims=True) > 0, prior * lik, prior)
    score = _pool(score, labels)
    se = _pool(prior * np.sqrt(lik * (1 - lik) / draws), labels, squares=True)
    top = score.max(axis=1, keepdims=True)
    best = score == top
    share = best[:, true_index] / best.sum(axis=1)
    # undecided: a hypothesis outside the top's tie set within N_SE standard errors of it
    se_top = np.max(np.where(best, se, 0.0), axis=1, keepdims=True)
    se_gap = np.sqrt(se_top ** 2 + se ** 2)
    close = ~best & (top - score <= N_SE * se_gap) & (se_gap > 0)
    undecided = np.any(close, axis=1)
    mcse = float(share.std(ddof=1) / np.sqrt(releases))
    lower = float(np.mean(np.where(undecided, 0.0, share))) - N_SE * mcse
    upper = float(np.mean(np.where(undecided, 1.0, share))) + N_SE * mcse
    tied = np.mean(np.any(labels != np.arange(len(hypotheses)), axis=1))
    return McMapCorrect(float(share.mean()), mcse, float(undecided.mean()), releases, draws,
                        max(lower, 0.0), min(upper, 1.0), float(tied))
