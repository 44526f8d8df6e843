r"""Risk of the product by Monte Carlo over releases, each release's likelihood exact.

The exact module (:mod:`dprisk.inference.product.exact`) enumerates every product value; its
grid grows as :math:`(2D+2)^d`, so large ``d`` (or small :math:`\rho_1`) is out of reach.
Here the *releases* are simulated and each simulated release's likelihood under both
hypotheses is computed exactly by a closed sum that is polynomial in ``d``.

**The likelihood of one product value.** Let :math:`w = (s, \tilde b_0, \dots, \tilde b_d)`,
:math:`s \ge 1`, true block counts :math:`b` (:math:`b_0 = k`), noisy blocks
:math:`b^* = b + e`, :math:`e_i \sim \mathrm{DG}(0, 1/(2\rho_1))` i.i.d.
(:mod:`.projection_kernels`: projection :math:`z_i = \max(0, b_i^* - \tau)`, active set
:math:`A`, floors, remainder :math:`r = |A| f` shared by the active blocks, a uniformly random
size-:math:`r` subset :math:`S \subseteq A` gets one more unit). Write
:math:`\tau = c - r/|A|` with the integer :math:`c = \lceil \tau \rceil`. Then the release is
:math:`w` exactly when

* :math:`b_i^* = \tilde b_i + c - \mathbf 1_S(i)` for :math:`i \in A` (so every
  :math:`\tilde b_i \ge 1` is active, and :math:`S \subseteq \{i : \tilde b_i \ge 1\}`;
  a zero block is active only when :math:`r \ge 1`, with :math:`b_i^* = c`);
* :math:`b_i^* \le c - [r \ge 1]` for the inactive blocks (all with :math:`\tilde b_i = 0`).

These events are disjoint over :math:`(c, A, S)` (the projection is unique), so with
:math:`\phi` the noise pmf and :math:`\Phi_i(x) = P[e_i \le x - b_i]`,

.. math::

    P[\tilde b \mid s, k] = \sum_c \Bigl[ \prod_{\tilde b_i \ge 1} \phi(\tilde b_i + c - b_i)
        \prod_{\tilde b_i = 0} \Phi_i(c)
      + \sum_{j \ge 0} \sum_{r = 1}^{\min(n_+,\, n_+ + j - 1)}
        \frac{E_r(c)\, Z_j(c)}{\binom{n_+ + j}{r}} \Bigr],

where :math:`n_+ = |\{i : \tilde b_i \ge 1\}|`,
:math:`E(v) = \prod_{\tilde b_i \ge 1} (\phi(\tilde b_i + c - b_i)
+ v\, \phi(\tilde b_i + c - 1 - b_i))` (coefficient of :math:`v^r`: ``r`` of them in ``S``) and
:math:`Z(u) = \prod_{\tilde b_i = 0} (\Phi_i(c - 1) + u\, \phi(c - b_i))` (coefficient of
:math:`u^j`: ``j`` zero blocks active). Both polynomials are built by a product over the
blocks (:math:`O(d^2)` per ``c``); ``c`` runs over the window that keeps one active block's
noise within :math:`\pm K` (neglected probability :math:`P[|e| > K]` per likelihood). With
``s = 0`` every block is 0 with probability 1. The parent's law is exact:
:math:`P[\tilde x_2 = s \mid k] = \phi_2(s - x_2)` for ``s >= 1`` and
:math:`P[x_2^* \le 0]` at ``s = 0`` (``"none"``), or :math:`\mathbf 1[s = x_2]`
(``"block-group"``). Every block other than the target's has the same true count under both
hypotheses, so its factors are divided by their largest value (a common factor of both
likelihoods, kept in the log-likelihood): no underflow for large ``d``.

**The Monte Carlo.** For each truth :math:`t \in \{m+1, m\}`, ``datasets`` releases are
simulated (noise, parent, projection, rounding with the random tie-break); each release's
posterior :math:`\pi(w) = p L_{m+1} / (p L_{m+1} + (1-p) L_m)` is exact, so

.. math::

    \hat M = \frac1n \sum_{j} \pi(w_j^{(m+1)}), \quad
    \hat P_c = \frac1n \sum_j \mathbf 1[\pi(w_j^{(m+1)}) > 1/2], \quad
    \hat A = p \hat P_c + (1 - p) \frac1n \sum_j \mathbf 1[\pi(w_j^{(m)}) \le 1/2]

are unbiased, with the textbook MCSE (sample standard deviation over :math:`\sqrt n`; the two
truths' samples are independent, so
:math:`\mathrm{MCSE}(\hat A)^2 = p^2 \mathrm{MCSE}(\hat P_c)^2 + (1-p)^2 \mathrm{MCSE}_m^2`).
The only error besides the Monte Carlo one is the window truncation above (reported).

Why not the simulated likelihood of :mod:`.monte_carlo`: a posterior built from two
estimated likelihoods is biased (a ratio of noisy estimates), the chance that a simulated
release hits a given ``w`` exactly falls geometrically with ``d`` (no hit: no estimate), and
its exact tie-break average tabulates every subset of :math:`d + 1` blocks. The exact
per-release likelihood has none of these; :mod:`.monte_carlo` stays as an independent check
(the tests compare the two).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import gammaln

from dprisk.inference.product.exact import (
    TAIL_MASS,
    ProductRisk,
    check_product_inputs,
    noise_log_pmf,
    noise_tail,
    noisy_table,
    risk_measures,
)
from dprisk.inference.product.projection_kernels import project_floor
from dprisk.models.checks import check_positive_int, check_probability
from dprisk.models.mechanism.dg_sampling import resolve_random_seed, sample
from dprisk.models.mechanism.discrete_gaussian import support_halfwidth_kernel
from dprisk.models.scenario import scalar_value
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import check_work

__all__ = [
    "LIKELIHOOD_TERM_STEPS",
    "MAX_BLOCKS",
    "ProductRiskMC",
    "inverse_binomials",
    "log_likelihoods",
    "mc_steps",
    "product_risk_mc",
    "simulate_releases",
]

#: Work-limit steps (:mod:`dprisk.runtime.work_limit`, 4.5 ns each) per term of one
#: release's likelihood: one (hypothesis, window value c, block, polynomial degree) update,
#: about 25 ns CPU measured at d = 10..30 (numpy, chunks of 2**21 terms); rounded up.
LIKELIHOOD_TERM_STEPS = 8
#: Steps per simulated release besides its likelihood (noise, projection, tie-break, the
#: per-chunk numpy calls): about 50 us CPU measured at d = 1.
RELEASE_STEPS = 12_000
#: Most blocks (d + 1): the binomial weights 1 / C(|A|, r) of the tie-breaks stay within
#: the range of a float64 (C(1000, 500) is about 2.7e299; C(1030, 515) overflows).
MAX_BLOCKS = 1000
#: Array elements of one chunk of releases x window x polynomial coefficients.
CHUNK_ELEMENTS = 1 << 21
#: Releases simulated at once.
RELEASE_CHUNK = 2_000
#: Steps per block per chunk of likelihoods (its 20 or so numpy calls on small arrays: up
#: to about 400 us measured at d = 998, rho1 = 1e100).
BLOCK_PASS_STEPS = 100_000


@dataclass(frozen=True)
class ProductRiskMC(ProductRisk):
    """Product risk by Monte Carlo over releases (MCSE per measure); noisy side exact.

    The fields of :class:`~dprisk.inference.product.exact.ProductRisk`, then these.
    """

    mcse_marginal_posterior: float
    mcse_p_correct: float
    mcse_accuracy: float
    datasets: int
    random_seed: int


def _window(rho1: float) -> int:
    """``K``: the half-width of the window of one block's noise (tail below TAIL_MASS / 2)."""
    return int(support_halfwidth_kernel(rho1, TAIL_MASS / 2.0))


def mc_steps(rho1: float, d: int, datasets: int) -> float:
    r"""Work-limit steps of :func:`product_risk_mc`.

    ``2 truths x datasets x (RELEASE_STEPS + 2 hypotheses x (2K + 2) x (d + 1) x (d + 10) x
    LIKELIHOOD_TERM_STEPS)``, with ``K`` the noise window's half-width: per window value,
    ``d + 1`` block updates of ``d + 2`` polynomial coefficients plus about 8 table look-ups
    and exponentials per block, and the combination as much again (measured: the estimate
    was 0.9 to 2.9 times the CPU time at d = 1..60 and rho1 from 1e-6 to the Census rho;
    since the polynomials are updated in place up to their degree, 1.3 to 5.8 times at the
    Census rho and d = 1..20: the same requests are refused, and run 1.5 to 4 times faster
    at d = 3..20; ``benchmarks/bench_product.py`` measures it).
    """
    width = 2 * _window(rho1) + 2
    blocks = d + 1.0
    # plus the per-block numpy calls of every chunk of likelihoods (at large d, small window)
    rows = min(RELEASE_CHUNK, _rows_per_chunk(width, d + 1))
    passes = 2.0 * 2.0 * -(-datasets // rows) * blocks * BLOCK_PASS_STEPS
    return passes + 2.0 * datasets * (RELEASE_STEPS + 2.0 * width * blocks * (blocks + 9.0)
                                      * LIKELIHOOD_TERM_STEPS)


def _rows_per_chunk(width: int, n_blocks: int) -> int:
    """Releases per chunk of likelihoods (at least 1).

    The (rows, window, coefficients) arrays and the (rows, coefficients, coefficients)
    binomial weights each within :data:`CHUNK_ELEMENTS`.
    """
    return max(1, min(CHUNK_ELEMENTS // (width * (n_blocks + 1)),
                      CHUNK_ELEMENTS // (n_blocks + 1) ** 2))


class _NoiseTables:
    r"""``log phi(x)`` and ``log P[e <= x]`` of the block noise, looked up from tables.

    Tabulated on :math:`|x| \le L = 2K + 4` (``K``: :func:`_window`); beyond, the pmf is taken
    as 0 and the cdf as 0 (below) or 1 (above), an error below :math:`P[e \ge L]`
    (about the square of the window's tail mass: negligible).
    """

    def __init__(self, rho1: float):
        self.half = 2 * _window(rho1) + 4
        x = np.arange(-self.half - 1, self.half + 2, dtype=np.int64)
        self.log_pmf = noise_log_pmf(x, rho1)
        # P[e <= x]: the lower tail summed from the left for x < 0, 1 - the upper tail summed
        # from the right for x >= 0 (sums of positive terms: no cancellation); the mass
        # beyond the table (about P[e >= L]) is left out
        pmf = np.exp(self.log_pmf)
        lower = np.cumsum(pmf)
        upper = np.cumsum(pmf[::-1])[::-1]  # P[e >= x]
        upper_next = np.append(upper[1:], 0.0)  # P[e >= x + 1]
        with np.errstate(divide="ignore"):
            self.log_cdf = np.where(x < 0, np.log(lower), np.log1p(-np.minimum(upper_next, 1.0)))
        self.log_pmf[[0, -1]] = -np.inf
        self.log_cdf[0], self.log_cdf[-1] = -np.inf, 0.0

    def _index(self, x: np.ndarray) -> np.ndarray:
        return np.clip(x, -self.half - 1, self.half + 1) + self.half + 1

    def pmf(self, x: np.ndarray) -> np.ndarray:
        return self.log_pmf[self._index(x)]

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return self.log_cdf[self._index(x)]


@lru_cache(maxsize=4)
def inverse_binomials(n_blocks: int) -> np.ndarray:
    r"""``weight[a, r] = 1 / C(a, r)`` for ``1 <= r < a <= n_blocks``, else 0.

    :math:`\exp(\ln r! + \ln (a-r)! - \ln a!)` (relative error about 1e-13 at a = 1000).
    """
    a = np.arange(n_blocks + 1, dtype=float)[:, None]
    r = np.arange(n_blocks + 1, dtype=float)[None, :]
    inside = (r >= 1) & (r < a)
    log_c = gammaln(a + 1) - gammaln(np.where(inside, r, 0) + 1) \
        - gammaln(np.where(inside, a - r, 0) + 1)
    return np.where(inside, np.exp(-log_c), 0.0)


def _times_linear(poly: np.ndarray, degree: int, constant: np.ndarray,
                  linear: np.ndarray) -> None:
    """``poly`` times ``constant + linear v``, in place, coefficient ``r`` in ``poly[r]``.

    Only the coefficients up to ``degree`` (the product's degree) are computed: the ones
    above are 0 before and after. Each is ``poly[r] * constant + poly[r - 1] * linear``, the
    same products and sum as the whole-array product with a shifted copy, so the same
    numbers (the shifted copy's 0 added to ``poly[0] * constant`` changed nothing: every
    factor is finite and >= 0).
    """
    for r in range(min(degree, poly.shape[0] - 1), 0, -1):
        poly[r] *= constant
        poly[r] += poly[r - 1] * linear
    poly[0] *= constant


def _block_log_likelihood(outputs: np.ndarray, blocks: np.ndarray, rho1: float,
                          scale: np.ndarray, tables: _NoiseTables) -> np.ndarray:
    r"""``log P[blocks = b~ | s]`` for rows ``(s, b~)`` of ``outputs`` and true ``blocks``.

    ``scale`` (shape ``(n, B)``): the log factor each block's terms are divided by (module
    notes); the result includes it back.
    """
    n, n_blocks = outputs.shape[0], blocks.size
    s = outputs[:, 0]
    tilde = outputs[:, 1:]
    result = np.zeros(n)
    live = np.flatnonzero(s > 0)  # s = 0: every block is 0, probability 1
    if live.size == 0:
        return result
    half = _window(rho1)
    offsets = np.arange(-half, half + 2, dtype=np.int64)
    width = offsets.size
    weight = inverse_binomials(n_blocks)
    rows_per_chunk = _rows_per_chunk(width, n_blocks)
    for start in range(0, live.size, rows_per_chunk):
        idx = live[start:start + rows_per_chunk]
        t = tilde[idx]
        positive = t >= 1
        anchor = np.argmax(t, axis=1)
        base = blocks[anchor] - t[np.arange(idx.size), anchor]
        c = base[:, None] + offsets[None, :]  # (n, W)
        lscale = scale[idx]
        # E and Z coefficient by coefficient (axis 0), each a contiguous (n, W) plane, updated
        # in place: after block i both have degree <= i + 1, and the planes above stay 0
        e_poly = np.zeros((n_blocks + 1, idx.size, width))
        e_poly[0] = 1.0
        z_poly = np.zeros_like(e_poly)
        z_poly[0] = 1.0
        log_r0 = np.zeros((idx.size, width))
        for i in range(n_blocks):
            pos = positive[:, i][:, None]
            ls = lscale[:, i][:, None]
            shift = (t[:, i][:, None] + c - blocks[i])
            phi0 = np.exp(tables.pmf(shift) - ls)
            phi1 = np.exp(tables.pmf(shift - 1) - ls)
            cdf_c = np.exp(tables.cdf(c - blocks[i]) - ls)
            cdf_c1 = np.exp(tables.cdf(c - 1 - blocks[i]) - ls)
            _times_linear(e_poly, i + 1, np.where(pos, phi0, 1.0), np.where(pos, phi1, 0.0))
            # a zero block active: b* = c
            _times_linear(z_poly, i + 1, np.where(pos, 1.0, cdf_c1), np.where(pos, 0.0, phi0))
            with np.errstate(divide="ignore"):
                log_r0 = log_r0 + np.log(np.where(pos, phi0, cdf_c))
        e_poly = np.ascontiguousarray(np.moveaxis(e_poly, 0, -1))  # (n, W, R)
        z_poly = np.ascontiguousarray(np.moveaxis(z_poly, 0, -1))
        n_pos = positive.sum(axis=1)
        j = np.arange(n_blocks + 1)
        size = np.minimum(n_pos[:, None] + j[None, :], n_blocks)  # (n, J); beyond: Z_j = 0
        w = weight[size]  # (n, J, R)
        ties = (np.einsum("nwr,njr->nwj", e_poly, w) * z_poly).sum(axis=-1)
        total = ties + np.exp(log_r0)
        with np.errstate(divide="ignore"):
            result[idx] = np.log(total.sum(axis=1)) + lscale.sum(axis=1)
    return result


def _parent_log_prob(s: np.ndarray, x2: int, rho2: float, invariant: str) -> np.ndarray:
    """``log P[x~2 = s | x2]`` (module notes)."""
    if invariant == "block-group":
        return np.where(s == x2, 0.0, -np.inf)
    out = noise_log_pmf(s - x2, rho2)
    zero = noise_tail(x2, rho2) if x2 >= 1 else 1.0 - noise_tail(1, rho2)
    with np.errstate(divide="ignore"):
        return np.where(s == 0, np.log(zero), out)


def log_likelihoods(outputs, rho1, rho2, others, m=0, invariant="none") -> np.ndarray:
    r"""Exact :math:`\log P[w \mid k]` for ``k = m, m + 1`` of product values ``w``.

    Parameters
    ----------
    outputs : array_like of int, shape (n, d + 2)
        Product values :math:`(\tilde x_2, \tilde b_0, \dots, \tilde b_d)` (blocks >= 0 adding
        up to :math:`\tilde x_2`).
    rho1, rho2, others, m, invariant
        As in :func:`dprisk.inference.product.exact.product_table`.

    Returns
    -------
    ndarray of float, shape (2, n)
        Row 0: :math:`\log P[w \mid m]`; row 1: :math:`\log P[w \mid m+1]` (module notes; each
        likelihood short by at most ``TAIL_MASS`` from the noise window).
    """
    rho1, rho2, others, m, invariant = check_product_inputs(rho1, rho2, others, m, invariant)
    outputs = np.atleast_2d(np.asarray(outputs, dtype=np.int64))
    if outputs.shape[1] != others.size + 2 or np.any(outputs < 0) \
            or np.any(outputs[:, 1:].sum(axis=1) != outputs[:, 0]):
        raise ValueError(f"outputs must be rows (x~2, b~0, ..., b~d) of d + 2 = "
                         f"{others.size + 2} counts >= 0 whose blocks add up to x~2")
    return _log_likelihoods(outputs, rho1, rho2, others, m, invariant)


def _log_likelihoods(outputs, rho1, rho2, others, m, invariant) -> np.ndarray:
    # the common scale: a positive block's factors are pmf values, divided by the largest
    # pmf value phi(0) (row-dependent, the same for both hypotheses; no underflow at large d)
    log_phi0 = float(noise_log_pmf(np.zeros(1, dtype=np.int64), rho1)[0])
    scale = np.where(outputs[:, 1:] >= 1, log_phi0, 0.0)
    tables = _NoiseTables(rho1)
    rows = []
    for k in (m, m + 1):
        blocks = np.concatenate([[k], others]).astype(np.int64)
        parent = _parent_log_prob(outputs[:, 0], k + int(others.sum()), rho2, invariant)
        block = np.full(outputs.shape[0], -np.inf)
        live = np.isfinite(parent)
        if live.any():
            block[live] = _block_log_likelihood(outputs[live], blocks, rho1, scale[live],
                                                tables)
        rows.append(parent + block)
    return np.stack(rows)


def simulate_releases(counts, rho1, rho2, invariant, size, rng) -> np.ndarray:
    """``size`` product values of the true block ``counts`` (simulated mechanism and rounding).

    Returns rows ``(x~2, b~0, ..., b~d)``; the tie-break is drawn uniformly at random.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n_blocks = counts.size
    b_star = counts[None, :] + sample(np.zeros(n_blocks), rho1, size=(size, n_blocks),
                                      random_seed=rng).astype(np.int64)
    x2 = int(counts.sum())
    if invariant == "block-group":
        parent = np.full(size, x2, dtype=np.int64)
    else:
        parent = np.maximum(0, x2 + np.asarray(sample(0, rho2, size=size, random_seed=rng),
                                               dtype=np.int64))
    out = np.zeros((size, n_blocks + 1), dtype=np.int64)
    out[:, 0] = parent
    priority = rng.random((size, n_blocks))
    for s in np.unique(parent).tolist():
        sel = np.flatnonzero(parent == s)
        floors, active, remainder = project_floor(b_star[sel], int(s))
        # r of the active blocks chosen uniformly: the r smallest random priorities
        key = np.where(active, priority[sel], 2.0)
        rank = np.argsort(np.argsort(key, axis=1), axis=1)
        out[sel, 1:] = floors + (rank < remainder[:, None])
    return out


def _posterior(log_lik: np.ndarray, p: float) -> np.ndarray:
    """``p L1 / (p L1 + (1 - p) L0)`` from log-likelihoods, as a logistic of the log-odds.

    Both likelihoods 0 (a release outside both windows, probability below the neglected
    mass) would be 0/0: the prior ``p`` is used there.
    """
    with np.errstate(invalid="ignore"):
        log_odds = np.log(p) - np.log1p(-p) + (log_lik[1] - log_lik[0])
    with np.errstate(over="ignore"):
        posterior = 1.0 / (1.0 + np.exp(-log_odds))
    return np.where(np.isnan(log_odds), p, posterior)


def product_risk_mc(rho1, rho2, others, m=0, p=0.5, invariant="none", *, datasets=20_000,
                    random_seed=None, progress=False) -> ProductRiskMC:
    r"""The product's risk by Monte Carlo over releases (exact likelihoods); noisy side exact.

    Parameters
    ----------
    rho1, rho2, others, m, p, invariant
        As in :func:`dprisk.inference.product.exact.product_risk` (any ``d``).
    datasets : int (datasets >= 2)
        Releases simulated under each truth (``m + 1`` and ``m``).
    random_seed : int, optional
        Seed (drawn and reported when None).
    progress : bool
        A tqdm bar over chunks of releases (stderr).

    Returns
    -------
    ProductRiskMC
        :math:`\hat M, \hat P_c, \hat A` (module notes) with their MCSE, the noisy
        measurements' three measures (exact, :func:`dprisk.inference.product.exact.noisy_table`),
        the neglected probability (the larger of the noisy side's and the likelihood window's),
        ``datasets`` and the seed.

    Raises
    ------
    ValueError
        A parameter out of range; work above the work limit (naming ``datasets``).
    """
    rho1, rho2, others, m, invariant = check_product_inputs(rho1, rho2, others, m, invariant)
    p = float(scalar_value(check_probability(p, "p"), "p"))
    datasets = check_positive_int(datasets, "datasets", minimum=2)
    d = others.size
    if d + 1 > MAX_BLOCKS:
        raise ValueError(f"others: d = {d} other blocks; the Monte Carlo allows d <= "
                         f"{MAX_BLOCKS - 1} (the tie-break weights 1 / C(d + 1, r) leave the "
                         f"float64 range beyond)")
    width = 2 * _window(rho1) + 2
    check_work(mc_steps(rho1, d, datasets), parameter="datasets",
               what=f"{datasets} simulated releases x 2 truths with d = {d} other blocks and "
               f"a noise window of {width} values (rho1 = {rho1:g})")
    check_memory(8.0 * 12 * max(CHUNK_ELEMENTS, width * (d + 2), (d + 2) ** 2)
                 + 8.0 * 8 * RELEASE_CHUNK * (d + 2), parameter="others",
                 what=f"the likelihood of one release (a window of {width} noise values x "
                 f"d + 2 = {d + 2} coefficients)")
    noisy = noisy_table(rho1, rho2, others, m)  # exact; refused (too large) before any work
    seed = resolve_random_seed(random_seed)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    posteriors = {}
    chunk = RELEASE_CHUNK
    from tqdm.auto import tqdm

    bar = tqdm(total=2 * datasets, desc="releases", unit="release", disable=not progress)
    try:
        for truth in (m + 1, m):
            counts = np.concatenate([[truth], others])
            values = []
            for start in range(0, datasets, chunk):
                n = min(chunk, datasets - start)
                outputs = simulate_releases(counts, rho1, rho2, invariant, n, rng)
                values.append(_posterior(_log_likelihoods(outputs, rho1, rho2, others, m,
                                                          invariant), p))
                bar.update(n)
            posteriors[truth] = np.concatenate(values)
    finally:
        bar.close()
    at_truth, at_m = posteriors[m + 1], posteriors[m]
    correct = (at_truth > 0.5).astype(float)
    correct_m = (at_m <= 0.5).astype(float)
    root = np.sqrt(datasets)
    mcse_pc = float(correct.std(ddof=1) / root)
    mcse_m = float(correct_m.std(ddof=1) / root)
    p_correct = float(correct.mean())
    b = risk_measures(noisy.likelihood, p)
    return ProductRiskMC(
        marginal_posterior=float(at_truth.mean()), p_correct=p_correct,
        accuracy=p * p_correct + (1.0 - p) * float(correct_m.mean()),
        noisy_marginal_posterior=b.marginal_posterior, noisy_p_correct=b.p_correct,
        noisy_accuracy=b.accuracy,
        neglected_mass=max(noisy.neglected_mass, TAIL_MASS),
        mcse_marginal_posterior=float(at_truth.std(ddof=1) / root), mcse_p_correct=mcse_pc,
        mcse_accuracy=float(np.hypot(p * mcse_pc, (1.0 - p) * mcse_m)),
        datasets=datasets, random_seed=seed)
