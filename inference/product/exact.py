r"""Disclosure risk of the post-processed product beside the noisy measurements (exact).

The tree is one block group over ``d + 1`` blocks; block 0 holds the target. True counts:
the target's block :math:`k \in \{m, m+1\}` (prior :math:`P[k = m+1] = p`) and the other
blocks :math:`y_1, \dots, y_d`, which this adversary knows (as the paper's adversary knows
everyone but the target). Noisy measurements: :math:`b_i^* = b_i + e_i`,
:math:`e_i \sim \mathrm{DG}(0, 1/(2\rho_1))` for every block, and
:math:`x_2^* = \sum_i b_i + e'`, :math:`e' \sim \mathrm{DG}(0, 1/(2\rho_2))`.

The product (a TopDown-style post-processing, :mod:`.projection_kernels`): the parent
:math:`\tilde x_2 = x_2` (invariant ``"block-group"``) or :math:`\max(0, x_2^*)`
(``"none"``); the blocks are the projection of :math:`b^*` onto
:math:`\{z \ge 0, \sum z = \tilde x_2\}` rounded by largest remainders with uniformly random
tie-breaking. The adversary sees the whole product :math:`w = (\tilde x_2, \tilde b)` and knows
the rule, so its likelihood is the probability of all noise (and tie-breaks) producing ``w``:

.. math::

    P[w \mid k] = P[\tilde X_2 = \tilde x_2 \mid k]\,
      \sum_{e} P[e]\; P[\mathrm{round}(\mathrm{proj}_{\tilde x_2}(b_k + e)) = \tilde b].

**Enumeration.** The projection onto a simplex commutes with a shift of all blocks by one
constant, so the blocks' product depends on :math:`b^*` only through the differences
:math:`\gamma_i = b_i^* - b_0^* = (y_i - k) + \delta_i`, :math:`\delta_i = e_i - e_0`, whose
law is :math:`Q(\delta) = \sum_{e_0} \phi(e_0) \prod_i \phi(e_0 + \delta_i)`. The sum runs over
:math:`|e_0| \le K_0` and :math:`|\delta_i| \le D` (a ``d``-dimensional grid, one projection
per grid point and parent value, for both hypotheses at once); the parent's law is exact for
:math:`\tilde x_2 \le x_2 + K_2` (the mass of :math:`x_2^* \le 0` at :math:`\tilde x_2 = 0`
from the exact tail). The neglected probability,

.. math::

    P[|e_0| > K_0] + \sum_{|e_0| \le K_0} \phi(e_0)\,\bigl(1 - (1 - t(e_0))^d\bigr)
      + P[e' > K_2], \quad t(e_0) = P[e_1 \ge D + 1 - e_0] + P[e_1 \ge D + 1 + e_0],

is computed from exact discrete-Gaussian tails, kept below :data:`TAIL_MASS` per hypothesis
and reported (``neglected_mass``: the larger of the product's and the noisy side's).

**The noisy side.** Given the others' counts, the others' measurements do not depend on
``k``: the likelihood ratio is that of :math:`(b_0^*, x_2^*)`, a target "unique at two
levels" with :math:`(\rho_1, \rho_2)`; :func:`noisy_table` enumerates that pair. The noisy
measurements hold no invariant: under ``"block-group"`` the noisy side is unchanged, and the
product reveals ``k`` (its parent total is the confidential :math:`x_2 = k + \sum y_i`).

**Risk measures** (:func:`risk_measures`) from the likelihood table of any release:
the marginal posterior :math:`\sum_w \pi(w) P[w \mid m+1]`, with
:math:`\pi(w) = p L_1 / (p L_1 + (1-p) L_0)`; P[correct] of the 0-1 decision "``m+1`` iff
:math:`\pi(w) > 1/2`" at truth ``m+1``; and the prior-weighted accuracy
:math:`p P[\text{correct} \mid m+1] + (1-p) P[\text{correct} \mid m]`. With no invariant the
product is a randomised function of the noisy measurements, so the marginal posterior (a sum
of the convex, positively homogeneous :math:`g(a, b) = p a^2 / (p a + (1-p) b)`) and the
accuracy (the Bayes decision's) cannot exceed the noisy measurements'. P[correct] at the truth
alone is a true-positive rate and has no such bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprisk.inference.product.noise_laws import (
    difference_law,
    noise_log_pmf,
    noise_tail,
    noise_tails,
    parent_law,
    parent_size,
)
from dprisk.inference.product.projection_kernels import (
    project_floor,
    rounding_outcomes,
    subset_bits,
)
from dprisk.models.checks import check_count, check_probability, check_rho
from dprisk.models.mechanism.discrete_gaussian import (
    smallest_window_rho,
    support_halfwidth_kernel,
)
from dprisk.models.numerics import check_tail_mass
from dprisk.models.scenario import scalar_value
from dprisk.runtime.memory_limit import check_memory, memory_limit
from dprisk.runtime.work_limit import check_work, work_limit

__all__ = [
    "ENUMERATION_CELL_STEPS",
    "INVARIANTS",
    "TAIL_MASS",
    "ProductRisk",
    "ReleaseTable",
    "RiskMeasures",
    "check_enumeration",
    "check_noisy",
    "check_product_inputs",
    "check_product_size",
    "enumeration_size",
    "invariant_posterior",
    "noise_log_pmf",
    "noise_tail",
    "noise_tails",
    "noisy_cells",
    "noisy_table",
    "parent_size",
    "product_risk",
    "product_table",
    "risk_measures",
]

#: Post-processing variants: no invariant, or the block-group total held exact.
INVARIANTS = ("none", "block-group")
#: Neglected probability per hypothesis (below the contract's 1e-12 with room to spare).
TAIL_MASS = 1e-13
#: Work-limit steps (:mod:`dprisk.runtime.work_limit`, 4.5 ns each) per (difference-grid
#: point, parent value) of the enumeration: 90-160 ns CPU measured at d = 3..5; rounded up.
ENUMERATION_CELL_STEPS = 40
#: Steps per parent value besides its grid points (the per-value numpy calls, about 1 ms).
PARENT_VALUE_STEPS = 200_000
#: Bytes held per difference-grid point (the sorted grid, its weights and the outcome
#: arrays: about 300 measured at d = 2..4; rounded up).
ENUMERATION_GRID_BYTES = 400
#: Bytes per (b0*, x2*) cell of :func:`noisy_table` (values, likelihoods, temporaries).
NOISY_CELL_BYTES = 120
#: Largest key space counted densely (``np.bincount``; also at most 8 keys per outcome);
#: above, keys are sorted.
DENSE_KEYS = 4_000_000


@dataclass(frozen=True)
class ReleaseTable:
    r"""Likelihoods of the release values under both hypotheses.

    Attributes
    ----------
    outputs : ndarray of int64, shape (n, c)
        The release values: ``(x~2, b~0, ..., b~d)`` for the product, ``(b0*, x2*)`` for the
        noisy measurements.
    likelihood : ndarray of float, shape (2, n)
        Row 0: :math:`P[w \mid k = m]`; row 1: :math:`P[w \mid k = m+1]`.
    neglected_mass : float
        Probability left out of each row (upper bound, the larger of the two).
    """

    outputs: np.ndarray
    likelihood: np.ndarray
    neglected_mass: float


@dataclass(frozen=True)
class RiskMeasures:
    """Averaged risk measures of one release (see the module notes)."""

    marginal_posterior: float
    p_correct: float
    accuracy: float


@dataclass(frozen=True)
class ProductRisk:
    """Risk of the product and of the noisy measurements for the same adversary."""

    marginal_posterior: float
    p_correct: float
    accuracy: float
    noisy_marginal_posterior: float
    noisy_p_correct: float
    noisy_accuracy: float
    neglected_mass: float


# --------------------------------------------------------------------------- checks
def check_product_inputs(rho1, rho2, others, m, invariant):
    """Validate the scenario once; return ``(rho1, rho2, others, m, invariant)``."""
    rho1, rho2 = (float(scalar_value(check_rho(value, name), name))
                  for value, name in ((rho1, "rho1"), (rho2, "rho2")))
    others = check_count(np.atleast_1d(others), "others", minimum=0, nonempty=True)
    if others.ndim != 1:
        raise ValueError(f"others must be a 1-d list of d >= 1 counts, got shape {others.shape}")
    m = int(scalar_value(check_count(m, "m", minimum=0), "m"))
    if invariant not in INVARIANTS:
        raise ValueError(f"invariant must be one of {', '.join(INVARIANTS)}, got {invariant!r}")
    if m + 1 + int(others.sum()) > 2**53:
        raise ValueError(f"others: the block-group count m + 1 + sum(others) = "
                         f"{m + 1 + int(others.sum())} must be <= 2**53 (counts are exact "
                         f"integers only up to there)")
    # the noise windows must be finite (rho too small: refused, naming the parameter); the
    # smallest rho and tail budget any caller uses
    for name, rho, factor, tail in (("rho1", rho1, 2.0, TAIL_MASS / (4.0 * others.size)),
                                    ("rho2", rho2, 1.0, TAIL_MASS / 4.0)):
        try:
            if rho / factor == 0.0:  # 5e-324 / 2 underflows
                raise ValueError
            support_halfwidth_kernel(rho / factor, tail)
        except ValueError:
            smallest = smallest_window_rho(tail, factor)
            raise ValueError(f"{name} = {rho!r} is too small: the half-width of its noise "
                             f"window exceeds 2**53 (allowed range: {name} >= {smallest:.3g})"
                             ) from None
    return rho1, rho2, others, m, invariant


def invariant_posterior(total, others, m=0) -> tuple[int, float]:
    r"""What a published invariant total reveals: ``(k, P[X_1 = m + 1 | N])``.

    With the other blocks known the invariant block-group total is
    :math:`N = k + \sum_i y_i`, :math:`k \in \{m, m + 1\}`, whatever the noise: it reveals
    :math:`k = N - \sum_i y_i`, and the posterior is 1 if :math:`k = m + 1`, else 0.
    ``others`` and ``m`` as in :func:`check_product_inputs`; ``block_group_total`` (``N``)
    must be one of the two feasible totals, else a ``ValueError`` names it.
    """
    others_sum = int(np.sum(check_count(np.atleast_1d(others), "others", minimum=0)))
    m = int(check_count(m, "m", minimum=0))
    total = int(check_count(total, "block_group_total"))
    if total not in (m + others_sum, m + 1 + others_sum):
        raise ValueError(f"block_group_total N = {total} is infeasible: with the other blocks "
                         f"known it is k + sum(others), k in {{m, m + 1}}, so N must be "
                         f"{m + others_sum} (m + sum(others)) or {m + 1 + others_sum} "
                         "(m + 1 + sum(others))")
    return total - others_sum, float(total == m + 1 + others_sum)


# --------------------------------------------------------------------------- noise laws
def _encode(values: np.ndarray, s: int) -> np.ndarray:
    """Integer key of each rounded block vector.

    Mixed radix ``s + 1`` over the first ``d`` blocks (the last is ``s`` minus the others).
    """
    key = np.zeros(values.shape[0], dtype=np.int64)
    for col in range(values.shape[1] - 2, -1, -1):
        key = key * (s + 1) + values[:, col]
    return key


def _decode(keys: np.ndarray, s: int, d: int) -> np.ndarray:
    """Product values ``(s, b~0, ..., b~d)`` of the keys of :func:`_encode`."""
    cols = []
    rest = keys.copy()
    for _ in range(d):
        cols.append(rest % (s + 1))
        rest //= s + 1
    blocks = np.column_stack(cols) if cols else np.zeros((keys.size, 0), dtype=np.int64)
    last = s - blocks.sum(axis=1)
    return np.column_stack([np.full(keys.size, s), blocks, last])


def _as_float(count: int) -> float:
    """``count`` as a float, ``inf`` beyond the float range (``(2D + 2)^d`` at d >= 175)."""
    try:
        return float(count)
    except OverflowError:
        return math.inf


def enumeration_size(rho1: float, d: int, n_values: int, tail_mass: float
                     ) -> tuple[float, float, float]:
    r"""Size of :func:`product_table`'s enumeration, known before it runs.

    Returns ``(grid, steps, nbytes)``: the difference-grid points :math:`(2D+2)^d` (``D``
    from the tail budget, as :func:`difference_law` starts it; ``inf`` beyond the float
    range), the work-limit steps ``grid x parent values x ENUMERATION_CELL_STEPS + parent
    values x PARENT_VALUE_STEPS`` and the bytes ``grid x ENUMERATION_GRID_BYTES`` held at
    once (an upper bound: the grid is pruned to its heaviest points before projecting).
    """
    k0 = int(support_halfwidth_kernel(rho1, tail_mass / 4.0))
    half_guess = max(k0, int(support_halfwidth_kernel(rho1 / 2.0, tail_mass / (4.0 * d))))
    grid = _as_float((2 * half_guess + 2) ** d)
    steps = grid * n_values * ENUMERATION_CELL_STEPS + n_values * PARENT_VALUE_STEPS
    return grid, steps, grid * ENUMERATION_GRID_BYTES


def _fits(rho1: float, d: int, n_values: int, tail_mass: float) -> bool:
    """Whether the enumeration of ``d`` blocks and ``n_values`` parent values is in the limits."""
    _, steps, nbytes = enumeration_size(rho1, d, n_values, tail_mass)
    return nbytes <= memory_limit() and steps <= work_limit()


def check_enumeration(rho1: float, d: int, n_values: int, tail_mass: float = TAIL_MASS
                      ) -> None:
    """Refuse an enumeration above the memory or work limit, naming what makes it large.

    The message starts with ``others`` when fewer other blocks would fit (d too large for
    exact enumeration at these rho), with ``rho2`` when the parent values alone are too
    many (the block-group noise window: fewer blocks would not help), else with ``rho1``
    (one other block's noise window is already too wide).

    Raises
    ------
    dprisk.runtime.memory_limit.MemoryLimitError, dprisk.runtime.work_limit.WorkLimitError
        ``ValueError`` subclasses whose message starts with the parameter's name.
    """
    grid, steps, nbytes = enumeration_size(rho1, d, n_values, tail_mass)
    if nbytes <= memory_limit() and steps <= work_limit():
        return
    if d > 1 and _fits(rho1, 1, n_values, tail_mass):
        parameter = "others"
    elif _fits(rho1, d, 2, tail_mass):
        # fewer parent values would fit: blame the larger factor of the two grids (the
        # parent values set by rho2, or the noise-difference points set by rho1)
        parameter = "rho2" if n_values > grid else "rho1"
    else:
        parameter = "rho1" if d == 1 or not _fits(rho1, 1, 2, tail_mass) else "others"
    what = (f"the exact enumeration of d = {d} other blocks at rho1 = {rho1:g} ({grid:.3g} "
            f"noise-difference points x {n_values:.3g} parent values)")
    check_memory(nbytes, parameter=parameter, what=what)
    check_work(steps, parameter=parameter, what=what)


def noisy_cells(rho1: float, rho2: float, tail_mass: float = TAIL_MASS) -> tuple[int, int]:
    """Half-widths ``(K1, K2)`` of :func:`noisy_table`'s ``(b0*, x2*)`` grid."""
    return (int(support_halfwidth_kernel(rho1, tail_mass / 2.0)),
            int(support_halfwidth_kernel(rho2, tail_mass / 2.0)))


def check_noisy(rho1: float, rho2: float, tail_mass: float = TAIL_MASS) -> None:
    """Refuse a noisy-measurement grid above the memory limit (naming the wider rho)."""
    k1, k2 = noisy_cells(rho1, rho2, tail_mass)
    cells = (2.0 * k1 + 2.0) * (2.0 * k2 + 2.0)
    check_memory(cells * NOISY_CELL_BYTES, parameter="rho1" if k1 > k2 else "rho2",
                 what=f"the noisy measurements' grid of {cells:.3g} (b0*, x2*) values")


def check_product_size(rho1, rho2, others, m=0, invariant="none") -> None:
    """The sizing step of :func:`product_risk`: every table it builds, before any is built.

    The noisy measurements' grid (:func:`check_noisy`) and the product's enumeration
    (:func:`check_enumeration`: the difference grid and the parent values); the inputs are
    validated first (:func:`check_product_inputs`).

    Raises
    ------
    ValueError
        A parameter out of range, or a table above the memory or work limit (naming
        ``rho1``, ``rho2`` or ``others``).
    """
    rho1, rho2, others, m, invariant = check_product_inputs(rho1, rho2, others, m, invariant)
    check_noisy(rho1, rho2)
    totals = (m + int(others.sum()), m + 1 + int(others.sum()))
    check_enumeration(rho1, others.size, parent_size(rho2, totals, invariant, TAIL_MASS / 2.0))


def product_table(rho1, rho2, others, m=0, invariant="none", *,
                  tail_mass=TAIL_MASS) -> ReleaseTable:
    r"""Exact likelihood of every product value under ``k = m`` and ``k = m + 1``.

    Parameters
    ----------
    rho1 : float (rho1 > 0)
        zCDP parameter of every block count.
    rho2 : float (rho2 > 0)
        zCDP parameter of the block-group count.
    others : sequence of int (each >= 0), length d >= 1
        The other blocks' true counts, known to the adversary.
    m : int (m >= 0)
        The target block's count without the target.
    invariant : {"none", "block-group"}
        Whether the block-group total is held exact.
    tail_mass : float (0 < tail_mass <= 1e-3)
        Neglected probability per hypothesis (at most; reported).

    Returns
    -------
    ReleaseTable
        Every product value ``(x~2, b~0, ..., b~d)`` and its likelihood under ``k = m`` and
        ``k = m + 1``.

    Raises
    ------
    ValueError
        A parameter out of range, or an enumeration above the memory or work limit
        (:func:`check_enumeration`, naming ``others``: d too large for exact enumeration at
        these rho).
    """
    rho1, rho2, others, m, invariant = check_product_inputs(rho1, rho2, others, m, invariant)
    tail_mass = check_tail_mass(tail_mass)
    d = others.size
    total = int(others.sum())
    totals = (m + total, m + 1 + total)
    check_enumeration(rho1, d, parent_size(rho2, totals, invariant, tail_mass / 2.0), tail_mass)
    values, parent, neglect_parent = parent_law(rho2, totals, invariant,
                                                tail_mass / 2.0)
    q, half, neglect_blocks = difference_law(rho1, d, tail_mass / 2.0)
    # difference grid gamma = y - m - 1 - D + i, i = 0..2D+1 on every axis; under k = m the
    # law is Q(gamma - y + m) (pad index i), under m + 1 it is Q(gamma - y + m + 1) (i + 1)
    qpad = np.pad(q, 1)
    size = 2 * half + 2
    q_m = qpad[(slice(0, size),) * d].ravel()
    q_m1 = qpad[(slice(1, size + 1),) * d].ravel()
    idx = np.indices((size,) * d).reshape(d, -1).T
    gamma = others[None, :] - m - 1 - half + idx
    weights = np.stack([q_m, q_m1])
    threshold, neglect_pruned = _pair_threshold(weights.max(axis=0), parent.max(axis=0),
                                                tail_mass / 4.0)
    # heaviest first (a prefix is kept); stable: equal weights (the pmf is symmetric) in one
    # order on every CPU, which is each output's order of summation
    order = np.argsort(weights.max(axis=0), kind="stable")[::-1]
    gamma, weights = gamma[order], weights[:, order]
    heaviest = weights.max(axis=0)
    blocks = np.concatenate([np.zeros((gamma.shape[0], 1), dtype=np.int64), gamma], axis=1)
    bits = subset_bits(d + 1)
    outputs, likelihood = [], []
    for j, s in enumerate(values.tolist()):
        p_max = parent[:, j].max()
        if p_max == 0:
            continue
        n_rows = int(np.searchsorted(-heaviest, -threshold / p_max, side="right"))
        if n_rows == 0:
            continue
        part = blocks[:n_rows]
        floors, active, remainder = project_floor(part, s)
        rows, masks, prob = rounding_outcomes(floors, active, remainder)
        # counted densely when the key space is small, also against the outcomes counted
        dense = (s + 1) ** d <= min(DENSE_KEYS, 8 * rows.size)
        if (s + 1) ** d < 2**62:
            # the key is linear in the block vector, so key(floor + 1_S) = key(floor) + key(1_S)
            keys = _encode(floors, s)[rows] + _encode(bits, s)[masks]
            if dense:
                inverse, n_keys = keys, (s + 1) ** d
            else:
                present, inverse = np.unique(keys, return_inverse=True)
                n_keys = present.size
        else:  # keys would overflow int64: the distinct block vectors themselves
            present, inverse = np.unique(floors[rows] + bits[masks], axis=0,
                                         return_inverse=True)
            inverse, n_keys = inverse.ravel(), present.shape[0]
        lik = np.stack([np.bincount(inverse, weights=weights[h, rows] * prob,
                                    minlength=n_keys) * parent[h, j] for h in (0, 1)])
        seen = np.flatnonzero(lik.sum(axis=0) > 0)
        if dense:
            outputs.append(_decode(seen, s, d))
        elif (s + 1) ** d < 2**62:
            outputs.append(_decode(present[seen], s, d))
        else:
            outputs.append(np.column_stack([np.full(seen.size, s), present[seen]]))
        likelihood.append(lik[:, seen])
    return ReleaseTable(np.concatenate(outputs), np.concatenate(likelihood, axis=1),
                        neglect_parent + neglect_blocks + neglect_pruned)


def _pair_threshold(row_weight: np.ndarray, parent_weight: np.ndarray,
                    budget: float) -> tuple[float, float]:
    r"""Smallest product :math:`t` of (grid point, parent value) weights worth projecting.

    The pairs with :math:`w_{\max}(\gamma)\, p_{\max}(s) < t` are skipped (``w_max``,
    ``p_max``: the larger of the two hypotheses' weights, so each hypothesis loses at most the
    sum of those products). ``t`` is the largest power-of-two step (bisection in
    :math:`\log t`) keeping that sum at most ``budget``; returns ``(t, sum)``.
    """
    sorted_w = np.sort(row_weight)
    cum = np.concatenate([[0.0], np.cumsum(sorted_w)])
    live = parent_weight[parent_weight > 0]

    def dropped(t: float) -> float:
        return float(np.sum(live * cum[np.searchsorted(sorted_w, t / live, side="left")]))

    low, high = -800.0, 0.0  # log2 t; dropped(2**-800) = 0 for every budget >= 0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if dropped(2.0**mid) <= budget else (low, mid)
    return 2.0**low, dropped(2.0**low)


def noisy_table(rho1, rho2, others, m=0, *, tail_mass=TAIL_MASS) -> ReleaseTable:
    r"""Exact likelihood of the informative noisy measurements :math:`(b_0^*, x_2^*)`.

    .. math:: P[b_0^*, x_2^* \mid k] = \phi_1(b_0^* - k)\, \phi_2(x_2^* - k - \textstyle\sum y_i)

    on :math:`|b_0^* - k| \le K_1`, :math:`|x_2^* - k - \sum y_i| \le K_2` for both ``k``.
    Parameters as in :func:`product_table`.
    """
    rho1, rho2, others, m, _ = check_product_inputs(rho1, rho2, others, m, "none")
    tail_mass = check_tail_mass(tail_mass)
    total = int(others.sum())
    k1, k2 = noisy_cells(rho1, rho2, tail_mass)
    check_noisy(rho1, rho2, tail_mass)
    b0 = np.arange(m - k1, m + 1 + k1 + 1, dtype=np.int64)
    x2 = np.arange(m + total - k2, m + 1 + total + k2 + 1, dtype=np.int64)
    grid_b0, grid_x2 = (a.ravel() for a in np.meshgrid(b0, x2, indexing="ij"))
    likelihood = np.stack([np.exp(noise_log_pmf(grid_b0 - k, rho1)
                                  + noise_log_pmf(grid_x2 - k - total, rho2))
                           for k in (m, m + 1)])
    neglected = 2.0 * float(noise_tail(k1 + 1, rho1)) + 2.0 * float(noise_tail(k2 + 1, rho2))
    return ReleaseTable(np.column_stack([grid_b0, grid_x2]), likelihood, neglected)


# --------------------------------------------------------------------------- measures
def risk_measures(likelihood: np.ndarray, p: float, tie_rtol: float = 0.0) -> RiskMeasures:
    r"""Marginal posterior, P[correct] and accuracy from a ``(2, n)`` likelihood table.

    .. math::

        M = \sum_w \frac{p L_1(w)^2}{p L_1(w) + (1-p) L_0(w)}, \quad
        P_c = \sum_{w:\, p L_1 > (1-p) L_0} L_1(w), \quad
        A = p P_c + (1-p) \sum_{w:\, p L_1 \le (1-p) L_0} L_0(w)

    Each is at most 1: :math:`p L_1^2 / (p L_1 + (1-p) L_0) \le L_1` term by term, so
    :math:`M \le \sum_w L_1 \le 1`; :math:`P_c \le \sum_w L_1 \le 1`; and
    :math:`A \le p \sum_w L_1 + (1-p) \sum_w L_0 \le 1` (each row is a probability law with
    some mass neglected). The computed sums of rounded likelihoods can land an ulp or two
    above 1 (``noisy_p_correct`` 1.0000000000000002 at p = 1 - 1e-16), so each measure is
    clipped to 1: the clip removes only rounding. A release with :math:`p L_1` within
    ``tie_rtol`` (relative) of :math:`(1-p) L_0` is a tie, decided ``k = m`` (a bound on the
    likelihoods' rounding where ties are not exact in floating point; 0: as computed).
    """
    l0, l1 = likelihood
    num = p * l1
    den = num + (1.0 - p) * l0
    keep = den > 0
    marginal = float(np.sum(num[keep] * l1[keep] / den[keep]))
    decide = num > (1.0 - p) * l0 * (1.0 + tie_rtol)
    p_correct = float(l1[decide].sum())
    accuracy = p * p_correct + (1.0 - p) * float(l0[~decide].sum())
    return RiskMeasures(min(marginal, 1.0), min(p_correct, 1.0), min(accuracy, 1.0))


def product_risk(rho1, rho2, others, m=0, p=0.5, invariant="none") -> ProductRisk:
    r"""Risk of the product and of the noisy measurements for the same adversary (exact).

    Parameters
    ----------
    rho1, rho2, others, m, invariant
        As in :func:`product_table`.
    p : float (0 < p < 1)
        The adversary's prior :math:`P[k = m+1]`.

    Returns
    -------
    ProductRisk
        The product's marginal posterior, P[correct] (truth ``m+1``) and accuracy, the same for
        the noisy measurements, and the neglected probability (< 1e-12).
    """
    rho1, rho2, others, m, invariant = check_product_inputs(rho1, rho2, others, m, invariant)
    p = float(scalar_value(check_probability(p, "p"), "p"))
    check_product_size(rho1, rho2, others, m, invariant)  # every table, before any is built
    product = product_table(rho1, rho2, others, m, invariant)
    noisy = noisy_table(rho1, rho2, others, m)
    a, b = risk_measures(product.likelihood, p), risk_measures(noisy.likelihood, p)
    return ProductRisk(a.marginal_posterior, a.p_correct, a.accuracy, b.marginal_posterior,
                       b.p_correct, b.accuracy,
                       max(product.neglected_mass, noisy.neglected_mass))
