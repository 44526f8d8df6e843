r"""Exact marginal posterior for a target unique at many levels, in seconds (supplement S1.3).

For a target unique at :math:`\ell` levels (supplement eq. S1.1) the posterior log-odds is
:math:`x = \operatorname{logit}(p) + \sum_i \rho_i (2 j_i + 1)` with independent
:math:`j_i = x_i^* - m - 1 \sim \mathrm{DG}(0, 1/(2\rho_i))` when the target has ``c``, and the
marginal posterior is the finite sum over the joint release grid

.. math::

    M = \sum_{j_1, \ldots, j_\ell} \operatorname{expit}(x(j)) \prod_i P[j_i] .

For the six Census levels the grid has about :math:`10^{10}` points of non-negligible
probability whose log-odds are (almost) all distinct, so
:func:`dprisk.inference.nested.unique_levels.marginal_unique_levels` with ``method="enumerate"``
needs about 20 minutes per prior. This module evaluates *the same finite sum, term by term*,
in a few seconds, by reordering it ("sorted sweep"):

1. The levels are split into two halves ``A`` and ``B`` whose atoms
   :math:`s = \sum_{i \in \text{half}} \rho_i (2 j_i + 1)` and probabilities ``w`` are
   enumerated (each level truncated to a box, then the atoms of a half with the largest
   :math:`\sum \rho_i j_i^2` dropped while their total probability stays within budget);
   ``B`` is sorted by ``s_b``. A pair contributes :math:`w_a w_b \operatorname{expit}(u_a + s_b)`,
   :math:`u_a = \operatorname{logit}(p) + s_a`.
2. ``A`` is sorted and cut into small blocks. For a block, the ``B`` atoms split into a
   prefix with :math:`u_a + s_b \le -\delta` for every ``a`` of the block, a suffix with
   :math:`u_a + s_b \ge \delta`, and a window in between.
3. Window pairs are evaluated one by one: :math:`\operatorname{expit}(u + s) = 1 / (1 +
   e^{-u} e^{-s})` (a dense matrix-vector product), or, where the windows are wide, grouped
   by cells of ``B`` through expit's Taylor expansion, truncated within a rigorous bound
   (:mod:`dprisk.inference.nested.unique_levels_window`).
4. Prefix pairs use the convergent series
   :math:`\operatorname{expit}(x) = \sum_{k \ge 1} (-1)^{k+1} e^{k x}` (``x < 0``), which
   factorises, :math:`e^{k(u_a + s_b)} = e^{k u_a} e^{k s_b}`, so the prefix's contribution
   needs only the power sums :math:`\sum_{b < L} w_b e^{k s_b}`, ``k = 1..K``, computed once
   for all blocks and priors by one scan over sorted ``B``; the block's atoms enter through
   their own power sums :math:`\sum_{a} w_a e^{k (s_a - s^*)}` relative to one atom ``s^*``
   of the block (also computed once for all priors), so each block costs ``K`` terms, not
   ``K`` per atom. Suffix pairs use
   :math:`\operatorname{expit}(x) = 1 - \operatorname{expit}(-x)` and the same series.
   Truncating after ``K`` terms changes each term by at most :math:`e^{-(K+1)\delta}`
   (alternating series with decreasing terms), with ``K`` chosen from the error budget.

Every pair of the truncated grid is counted exactly once (window, prefix or suffix), so the
result differs from the full infinite sum only by the probability left out of the grid
(computed, not estimated: the dropped atoms' weights are summed) and by the series
truncation; both are bounded in :class:`SweepResult` and kept below
``tail_relative * p``. Each term's ``expit`` is thus evaluated to about 1e-16 as usual, just
summed in a different order; rounding makes the result agree with a direct summation to about
1e-14 relative (the alternating series loses about ``log10(2/delta)`` digits).

The sweep runs in two steps on validated values: :func:`plan_sweep` builds the atoms and
counts the window pairs (so its cost is known before any pair is evaluated) and
:func:`run_sweep` evaluates the plan. The validating entry points are
:func:`dprisk.inference.nested.unique_levels.marginal_posterior_sweep` (with the error accounting)
and :func:`dprisk.inference.nested.unique_levels.marginal_unique_levels` (``method="sweep"``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dprisk.inference.nested import unique_levels_window as window
from dprisk.inference.single_level import closed_form_kernels as kernels
from dprisk.models.mechanism.discrete_gaussian import support_halfwidth_kernel
from dprisk.models.numerics import dg_log_normalizer, logit

__all__ = [
    "DEFAULT_DELTA",
    "MAX_HALF_ATOMS",
    "MAX_WINDOW_PAIRS",
    "SweepPlan",
    "SweepResult",
    "plan_sweep",
    "run_sweep",
]

#: Half-width of the window of log-odds evaluated pair by pair (the series handles |x| >= delta).
DEFAULT_DELTA = 0.1
#: Largest number of atoms one half of the levels may hold after truncation.
MAX_HALF_ATOMS = 3_000_000
#: Largest number of window pairs (per prior) the sweep accepts.
MAX_WINDOW_PAIRS = 2_000_000_000
#: Atoms of ``A`` per block (small blocks keep the window close to 2 delta wide).
_BLOCK = 32
#: Elements of one temporary matrix.
_CHUNK = 2_000_000
#: Power sums: exp(k y) = exp((k mod _LOW) y) * exp(_LOW (k div _LOW) y).
_LOW = 32
#: Largest exponent k (s_b - anchor) of a running power sum (overflow guard, e^600 ~ 1e260).
_SPAN = 600.0


class SweepResult(NamedTuple):
    r"""Marginal posterior from the sorted sweep (:func:`run_sweep`) with its error accounting.

    Attributes
    ----------
    marginal_posterior : ndarray
        :math:`M`, one value per prior.
    neglected_mass : float
        Probability of the joint grid left out (box tails bound plus dropped atoms, exact);
        the integrand lies in [0, 1], so it bounds the truncation error of ``M``.
    series_bound : float
        Bound on the error of truncating the exponential series, :math:`e^{-(K+1)\delta}`,
        plus that of the window's Taylor expansion (at most a quarter of it).
    window_pairs : ndarray of int
        Pairs evaluated one by one, per prior.
    series_terms : int
        ``K``.
    split : int
        Number of levels in half ``A``.
    """

    marginal_posterior: np.ndarray
    neglected_mass: float
    series_bound: float
    window_pairs: np.ndarray
    series_terms: int
    split: int


# --------------------------------------------------------------------------- atoms
def _box_halfwidths(rhos: np.ndarray, tail_per_level: float) -> list[int]:
    return [int(support_halfwidth_kernel(r, tail_per_level)) for r in rhos]


def _choose_split(sizes: list[int]) -> int:
    """Number of leading levels in half A, balancing the two halves' box sizes (>= 1 each)."""
    logs = np.cumsum(np.log(sizes))
    cut = int(np.argmin(np.abs(logs[:-1] - logs[-1] / 2.0))) + 1
    return min(max(cut, 1), len(sizes) - 1)


def _box_size(halfwidths: list[int]) -> int:
    """Number of atoms in the box ``|j_i| <= K_i`` of a group of levels."""
    return int(np.prod([2 * k + 1 for k in halfwidths], dtype=float))


def _half_atoms(rhos: np.ndarray, halfwidths: list[int], drop_budget: float):
    """Atoms of a group of levels: sorted ``s``, probabilities ``w`` and the dropped mass.

    ``s = sum_i rho_i (2 j_i + 1)`` and ``w = prod_i P[j_i]`` over the box
    ``|j_i| <= K_i``; the atoms with the largest ``q = sum_i rho_i j_i^2`` (the least likely)
    are dropped while their total probability stays within ``drop_budget``.
    """
    s = np.zeros(1)
    q = np.zeros(1)
    log_w = np.zeros(1)
    for rho, k in zip(rhos, halfwidths, strict=True):
        j = np.arange(-k, k + 1, dtype=float)
        s = (s[:, None] + kernels.odds_term(j + 1.0, rho)[None, :]).ravel()
        q = (q[:, None] + rho * j[None, :] ** 2).ravel()
        level_w = -rho * j**2 - dg_log_normalizer(np.asarray(rho))
        log_w = (log_w[:, None] + level_w[None, :]).ravel()
    w = np.exp(log_w)
    by_q = np.argsort(q, kind="stable")[::-1]
    dropped = np.cumsum(w[by_q])
    n_drop = int(np.searchsorted(dropped, drop_budget, side="right"))
    keep = np.ones(s.size, dtype=bool)
    keep[by_q[:n_drop]] = False
    dropped_mass = float(dropped[n_drop - 1]) if n_drop else 0.0
    s, w = s[keep], w[keep]
    order = np.argsort(s, kind="stable")
    return s[order], w[order], dropped_mass


def _cumsum(x: np.ndarray, block: int = 256) -> np.ndarray:
    """Running sums of ``x`` in two levels (within blocks, then across block totals).

    A plain ``np.cumsum`` over ``n`` terms accumulates rounding like ``sqrt(n)`` ulp (4e-14
    relative for the 1.3e5 atoms of three Census levels); two levels of ``<= sqrt(n)`` terms
    each keep it near 1e-15.
    """
    n = x.size
    pad = (-n) % block
    blocks = np.concatenate([x, np.zeros(pad)]).reshape(-1, block)
    within = np.cumsum(blocks, axis=1)
    offsets = np.concatenate([[0.0], np.cumsum(blocks.sum(axis=1))[:-1]])
    return (within + offsets[:, None]).ravel()[:n]


# --------------------------------------------------------------------------- power sums
def _exp_table(y: np.ndarray, step: float, n_cols: int, base: int) -> np.ndarray:
    r"""``exp(y[:, None] * step * arange(n_cols)[None, :])`` with fewer calls to ``exp``.

    :math:`e^{m (i + b j) y} = e^{m i y}\, e^{m b j y}`: ``base + n_cols / base`` calls per
    row (two exponentials and one product, about 2 ulp; ``exp`` is most of the cost).
    """
    low = np.exp(np.multiply.outer(y, step * np.arange(base, dtype=float)))
    n_high = -(-n_cols // base)
    high = np.exp(np.multiply.outer(y, step * base * np.arange(n_high, dtype=float)))
    return (high[:, :, None] * low[:, None, :]).reshape(y.size, -1)[:, :n_cols]


def _segment_power_sums(s: np.ndarray, w: np.ndarray, cuts: np.ndarray, n_terms: int):
    r"""``Q[i, k-1] = sum_{cuts[i-1] <= b < cuts[i]} w_b exp(k (s_b - s_{cuts[i]-1}))``.

    Each segment between consecutive cuts (``cuts[-1] = 0``) relative to its own last atom,
    so every term lies in ``[0, w_b]``. With ``k = _LOW t + r`` and :math:`y_b = s_b -
    s_{L-1}`, :math:`\sum_b w_b e^{k y_b} = \sum_b (w_b e^{_LOW t y_b})\, e^{r y_b}`: a
    segment's ``(high, _LOW)`` table of sums is one small matrix product of two small
    exponential tables (:func:`_exp_table`: ``8 + 4 + 4 + K / 128`` calls to ``exp`` per
    atom, for a chunk of atoms at a time), so the table of all ``K`` powers of every atom is
    never formed; each power is a product of four exponentials (about 4 ulp).
    """
    n = int(cuts[-1])
    seg_start = np.concatenate([[0], cuts[:-1]])
    atom_seg = np.repeat(np.arange(cuts.size), cuts - seg_start)
    y = s[:n] - s[cuts[atom_seg] - 1]
    high = n_terms // _LOW + 1
    out = np.zeros((cuts.size, high * _LOW))
    rows = max(1, _CHUNK // (high + _LOW))
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        with np.errstate(under="ignore"):
            low_table = _exp_table(y[lo:hi], 1.0, _LOW, 8)
            weighted_high = w[lo:hi, None] * _exp_table(y[lo:hi], float(_LOW), high, 4)
        seg = atom_seg[lo:hi]
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(seg)) + 1, [hi - lo]])
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            out[seg[a]] += (weighted_high[a:b].T @ low_table[a:b]).ravel()
    return out[:, 1 : n_terms + 1]


def _prefix_power_sums(s: np.ndarray, w: np.ndarray, cuts: np.ndarray, n_terms: int):
    r"""``P[i, k-1] = sum_{b < cuts[i]} w_b exp(k (s_b - s_{cuts[i]-1}))`` for ``k = 1..K``.

    ``s`` ascending, ``cuts`` ascending and ``>= 1``. The segments between cuts are summed
    relative to their own last atom (:func:`_segment_power_sums`); their running sum is
    kept relative to an anchor ``r0`` (each segment enters once, times
    ``e^{k (s_{L-1} - r0)} <= e^{_SPAN}``), and a new anchor is taken when a segment's last
    atom lies more than ``_SPAN / K`` above it, so each output is the running sum times one
    factor ``e^{k (r0 - s_{L-1})} <= 1`` and rounding does not accumulate from cut to cut
    beyond that of the running sum. Every entry lies in ``[w_{L-1}, sum w]``.
    """
    k = np.arange(1, n_terms + 1, dtype=float)
    span = _SPAN / (n_terms + _LOW)
    segments = _segment_power_sums(s, w, cuts, n_terms)
    ends = s[cuts - 1]
    out = np.empty((cuts.size, n_terms))
    carry = np.zeros(n_terms)
    anchor = float(ends[0])
    i = 0
    while i < cuts.size:
        if ends[i] > anchor + span:  # re-anchor at this segment's last atom
            with np.errstate(under="ignore"):
                carry = carry * np.exp(k * (anchor - ends[i]))
            anchor = float(ends[i])
        j = int(np.searchsorted(ends, anchor + span, side="right"))  # segments i..j-1
        lift = np.exp(np.outer(ends[i:j] - anchor, k))  # in [1, e^_SPAN]
        running = np.cumsum(segments[i:j] * lift, axis=0) + carry
        with np.errstate(under="ignore"):
            out[i:j] = running / lift
        carry = running[-1]
        i = j
    return out


class _PowerSums(NamedTuple):
    """Signed power sums of one side of ``B`` at the cuts used by any block and prior."""

    s: np.ndarray
    cuts: np.ndarray
    signed: np.ndarray  # (len(cuts), K): (-1)^{k+1} P_k(cut)


def _power_sums(s: np.ndarray, w: np.ndarray, cuts: np.ndarray, n_terms: int) -> _PowerSums:
    unique_cuts = np.unique(cuts[cuts > 0])
    sums = _prefix_power_sums(s, w, unique_cuts, n_terms) if unique_cuts.size else np.empty(
        (0, n_terms))
    sign = np.where(np.arange(1, n_terms + 1) % 2 == 1, 1.0, -1.0)
    return _PowerSums(s, unique_cuts, sums * sign[None, :])


class _BlockPowerSums(NamedTuple):
    r"""Power sums of each block of ``A`` relative to one atom of the block, for one side.

    With :math:`t_a = s_a` (prefix side) or :math:`t_a = -s_a` (suffix side) and the block's
    anchor :math:`t^*` its largest :math:`t_a` (the block's last atom, or its first),
    ``sums[i, k-1]`` :math:`= \sum_{a \in \text{block } i} w_a e^{k (t_a - t^*)}`, every term
    in ``[0, w_a]``.
    """

    anchor: np.ndarray  # (blocks,): t* of each block
    sums: np.ndarray  # (blocks, K)


def _block_power_sums(s_a: np.ndarray, w_a: np.ndarray, starts, ends, n_terms: int):
    """The prefix side's and the suffix side's :class:`_BlockPowerSums` of sorted ``A``."""
    n = s_a.size
    prefix = _BlockPowerSums(s_a[ends - 1], _segment_power_sums(s_a, w_a, ends, n_terms))
    # suffix side: t = -s on reversed A, whose segments are the blocks in reverse order
    reversed_sums = _segment_power_sums(-s_a[::-1], w_a[::-1], (n - starts)[::-1], n_terms)
    suffix = _BlockPowerSums(-s_a[starts], reversed_sums[::-1])
    return prefix, suffix


def _far_sums(offset: float, blocks: _BlockPowerSums, cuts, sums: _PowerSums):
    r"""``sum_a w_a sum_{b < L} w_b expit(offset + t_a + s_b)`` over blocks, by the series.

    ``cuts[block] = L`` (0: empty prefix); ``offset + t_a`` is ``u_a`` (prefix side) or
    ``-u_a`` (suffix side, ``s`` then the reversed, negated ``B``). With
    :math:`y = \text{offset} + t^* + s_{L-1} \le -\delta` for the block's anchor
    :math:`t^*`, every atom of the block has :math:`e^{k(\text{offset} + t_a + s_{L-1})} =
    e^{k y} e^{k (t_a - t^*)}`, so

    .. math:: \sum_{a} w_a \sum_{b<L} w_b \operatorname{expit}(\ldots) \approx
              \sum_{k=1}^{K} (-1)^{k+1} P_k(L)\, e^{k y}\, S_k(\text{block}),

    with the block's power sums :math:`S_k = \sum_a w_a e^{k (t_a - t^*)}`
    (:class:`_BlockPowerSums`, shared by every prior): ``K`` terms per block, not per atom.
    Every factor is positive and at most 1 in size but :math:`P_k`; the alternating sum's
    rounding is below ``K`` ulp of :math:`\sum_k P_k e^{k y} S_k` (as Horner's rule per atom
    was).
    """
    blocks_used = np.nonzero(cuts > 0)[0]
    if blocks_used.size == 0:
        return 0.0
    n_terms = sums.signed.shape[1]
    high = n_terms // _LOW + 1
    step = max(1, _CHUNK // (high * _LOW))  # blocks per chunk
    total = 0.0
    for lo in range(0, blocks_used.size, step):
        chunk = blocks_used[lo : lo + step]
        y = offset + blocks.anchor[chunk] + sums.s[cuts[chunk] - 1]  # <= -delta
        with np.errstate(under="ignore"):  # e^{k y} = e^{_LOW t y} e^{r y}, k = _LOW t + r
            powers = (_exp_table(y, float(_LOW), high, 4)[:, :, None]
                      * _exp_table(y, 1.0, _LOW, 8)[:, None, :])
            terms = powers.reshape(chunk.size, -1)[:, 1 : n_terms + 1] * blocks.sums[chunk]
        # (-1)^{k+1} P_k(L) of every block of the chunk
        terms *= sums.signed[np.searchsorted(sums.cuts, cuts[chunk])]
        total += float(terms.sum())
    return total


# --------------------------------------------------------------------------- the sweep
def _blocks(n: int):
    starts = np.arange(0, n, _BLOCK)
    ends = np.minimum(starts + _BLOCK, n)
    return starts, ends


def _window_sum(u: np.ndarray, w_a: np.ndarray, exp_neg_s: np.ndarray, w_b: np.ndarray, starts,
                ends, lower, upper, blocks) -> float:
    """Pairs with ``-delta < x < delta`` (the windows of ``blocks``), one by one.

    ``expit = 1 / (1 + e^{-u} e^{-s})``; ``exp_neg_s`` holds :math:`e^{-s_b}` of sorted ``B``
    (the same for every prior).
    """
    if blocks.size == 0:
        return 0.0
    with np.errstate(over="ignore"):  # e^{-u} = inf only outside every window (tiny p)
        exp_neg_u = np.exp(-u)
    step = max(1, _CHUNK // _BLOCK)
    total = 0.0
    for blk in blocks:
        a0, a1 = starts[blk], ends[blk]
        for c0 in range(lower[blk], upper[blk], step):
            c1 = min(upper[blk], c0 + step)
            matrix = np.multiply.outer(exp_neg_u[a0:a1], exp_neg_s[c0:c1])
            matrix += 1.0
            np.divide(1.0, matrix, out=matrix)  # numpy's reciprocal is not vectorised
            total += float(w_a[a0:a1] @ (matrix @ w_b[c0:c1]))
    return total


class SweepPlan(NamedTuple):
    """The sorted sweep prepared for a set of priors: its cost is known before any pair.

    Attributes
    ----------
    half_atoms : tuple of int
        Box sizes of halves ``A`` and ``B`` (atoms before dropping).
    window_pairs : ndarray of int or None
        Pairs each prior would evaluate one by one (None when a half exceeds
        ``MAX_HALF_ATOMS``: the atoms are then not built).
    state : tuple or None
        Everything :func:`run_sweep` needs (atoms, cuts, series length, bounds).
    """

    half_atoms: tuple[int, int]
    window_pairs: np.ndarray | None
    state: tuple | None

    def fits(self, max_window_pairs: int) -> bool:
        """Whether both halves fit ``MAX_HALF_ATOMS`` and every prior ``max_window_pairs``."""
        return self.window_pairs is not None and int(self.window_pairs.max()) <= max_window_pairs

    def refusal(self, max_window_pairs: int) -> str:
        """The one-line reason the sweep is refused (for :class:`ValueError`)."""
        big = max(self.half_atoms)
        if big > MAX_HALF_ATOMS:
            return (f"the sorted sweep needs {big} atoms for one half of the levels "
                    f"(> MAX_HALF_ATOMS = {MAX_HALF_ATOMS}); use method='contour' in "
                    "dprisk.inference.nested.unique_levels.marginal_unique_levels")
        return (f"the sorted sweep needs {int(self.window_pairs.max())} window pairs "
                f"(> max_window_pairs = {max_window_pairs}); use method='contour'")


#: Smallest prior probability p of the sorted sweep (its error budget, 1e-16 p, stays a
#: positive double).
P_MIN = 1e-300


def plan_sweep(rhos: np.ndarray, p: np.ndarray, *, tail_relative: float = kernels.TAIL_RELATIVE,
               delta: float = DEFAULT_DELTA) -> SweepPlan:
    r"""Prepare the sorted sweep for validated ``rhos`` (1-d, at least two levels) and priors.

    Chooses the boxes (probability left out below ``tail_relative * min(p) / 4`` by the
    union bound), the split into halves, the atoms (dropping at most
    ``tail_relative * min(p) / 8`` per half), the series length
    :math:`K = \lceil \log(4 / \text{budget}) / \delta \rceil` and, per prior and block of
    ``A``, the window ``[lower, upper)`` of ``B``. The atoms are built only when both halves
    fit ``MAX_HALF_ATOMS``.
    """
    flat_p = p.ravel()
    budget = tail_relative * float(flat_p.min())
    if not budget >= P_MIN * tail_relative:
        raise ValueError(
            f"p = {float(flat_p.min())!r} is too small for the unique-levels sum (its error "
            f"budget {tail_relative:g} * p must not underflow; allowed range: p >= {P_MIN:g})"
        )
    halfwidths = _box_halfwidths(rhos, budget / (4 * rhos.size))
    split = _choose_split([2 * k + 1 for k in halfwidths])
    sizes = (_box_size(halfwidths[:split]), _box_size(halfwidths[split:]))
    if max(sizes) > MAX_HALF_ATOMS:
        return SweepPlan(sizes, None, None)
    s_a, w_a, drop_a = _half_atoms(rhos[:split], halfwidths[:split], budget / 8)
    s_b, w_b, drop_b = _half_atoms(rhos[split:], halfwidths[split:], budget / 8)
    neglected = budget / 4 + drop_a + drop_b  # box tails (union bound) + dropped atoms
    ratio = 4.0 / budget  # overflows for p below ~2e-292: there log(4) - log(budget)
    log_ratio = np.log(ratio) if np.isfinite(ratio) else np.log(4.0) - np.log(budget)
    n_terms = int(np.ceil(log_ratio / delta))
    logits = logit(flat_p)
    starts, ends = _blocks(s_a.size)
    # per prior and block: B prefix with x <= -delta for the whole block, suffix with x >= delta
    lower = np.stack([np.searchsorted(s_b, -delta - (lp + s_a[ends - 1]), side="right")
                      for lp in logits])
    upper = np.stack([np.searchsorted(s_b, delta - (lp + s_a[starts]), side="left")
                      for lp in logits])
    pairs = ((ends - starts)[None, :] * np.maximum(upper - lower, 0)).sum(axis=1)
    state = (p.shape, logits, (s_a, w_a), (s_b, w_b), (starts, ends), (lower, upper),
             float(neglected), n_terms, float(np.exp(-(n_terms + 1) * delta)), split)
    return SweepPlan(sizes, pairs, state)


def run_sweep(plan: SweepPlan) -> SweepResult:
    """Evaluate a feasible :class:`SweepPlan` (see the module notes for the reordering)."""
    (shape, logits, (s_a, w_a), (s_b, w_b), (starts, ends), (lower, upper), neglected,
     n_terms, series_bound, split) = plan.state
    n_b = s_b.size
    prefix = _power_sums(s_b, w_b, lower.ravel(), n_terms)
    suffix = _power_sums(-s_b[::-1], w_b[::-1], (n_b - upper).ravel(), n_terms)
    suffix_mass = np.append(_cumsum(w_b[::-1])[::-1], 0.0)
    block_mass = np.add.reduceat(w_a, starts)
    blocks_prefix, blocks_suffix = _block_power_sums(s_a, w_a, starts, ends, n_terms)
    exp_neg_s = np.exp(-s_b)
    # the window's whole cells by expit's Taylor expansion, within a quarter of the series'
    # bound (unique_levels_window)
    cells = window.window_cells(s_a, w_a, s_b, w_b, starts, ends, series_bound / 4)
    values = np.empty(logits.size)
    for i, lp in enumerate(logits):
        u = lp + s_a

        def pairwise(blocks, u=u, i=i):
            return _window_sum(u, w_a, exp_neg_s, w_b, starts, ends, lower[i], upper[i], blocks)

        values[i] = (
            window.window_sums(float(lp), u, w_a, exp_neg_s, w_b, starts, ends, lower[i],
                               upper[i], cells, pairwise)
            + _far_sums(float(lp), blocks_prefix, lower[i], prefix)
            + float(block_mass @ suffix_mass[upper[i]])  # expit(x) = 1 - expit(-x) ...
            - _far_sums(-float(lp), blocks_suffix, n_b - upper[i], suffix)  # ... reversed B
        )
    values = np.clip(values, 0.0, 1.0)
    return SweepResult(values.reshape(shape), neglected, series_bound + cells.bound,
                       plan.window_pairs.reshape(shape).astype(np.int64), n_terms, split)
