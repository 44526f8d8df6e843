r"""Monte Carlo likelihood of one product value, with its Monte Carlo standard error.

For trees too large to enumerate (:func:`dprisk.inference.product.exact.check_enumeration`), the
likelihood :math:`P[w \mid k]` of the observed product :math:`w = (\tilde x_2, \tilde b)` is
estimated by simulating the mechanism and applying the post-processing
(:mod:`.projection_kernels`):

.. math::

    \hat L_k = \frac1N \sum_{n=1}^N f_n, \qquad
    f_n = \mathbf 1[\tilde x_2^{(n)} = \tilde x_2]\;
          P[\mathrm{round}(\mathrm{proj}_{\tilde x_2}(b_k + e^{(n)})) = \tilde b],
    \qquad \mathrm{MCSE} = \frac{\mathrm{sd}(f)}{\sqrt N},

with :math:`e^{(n)}` the block noise and :math:`\tilde x_2^{(n)}` the parent of draw ``n``.
Choices: the random tie-break is not simulated but averaged exactly (the probability of
:math:`\tilde b` over the equally likely subsets, a Rao–Blackwellisation that can only lower
the variance); the parent is simulated too (not conditioned on), so the estimator is the plain
mean of independent draws in :math:`[0, 1]` and its MCSE is the textbook one. Both hypotheses
use independent draws from ``random_seed``. Noise from the fast vectorised sampler
(:func:`dprisk.models.mechanism.dg_sampling.sample`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from dprisk.inference.product.exact import check_product_inputs
from dprisk.inference.product.monte_carlo_risk import MAX_BLOCKS, inverse_binomials
from dprisk.inference.product.projection_kernels import project_floor
from dprisk.models.checks import check_count, check_positive_int
from dprisk.models.mechanism.dg_sampling import as_generator, resolve_random_seed, sample
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.work_limit import check_work

__all__ = ["McLikelihood", "product_likelihood_mc", "rounding_probability"]

#: Bytes per simulated release and block while one hypothesis is simulated (noise, noisy
#: blocks, floors and the match; measured 20-36, rounded up).
DRAW_BLOCK_BYTES = 40
#: Work steps (:mod:`dprisk.runtime.work_limit`) per simulated release and block plus one (the
#: parent): measured 55-170 for d = 1..200, rounded up.
DRAW_BLOCK_STEPS = 150


@dataclass(frozen=True)
class McLikelihood:
    r"""Monte Carlo likelihoods of one product value.

    Attributes
    ----------
    likelihood : ndarray, shape (2,)
        :math:`\hat L_m, \hat L_{m+1}`.
    mcse : ndarray, shape (2,)
        Their Monte Carlo standard errors.
    draws : int
        Draws per hypothesis.
    random_seed : int or None
        The integer seed of the run (drawn when none was given; None when a numpy Generator
        was passed): the same seed gives the same estimates.
    """

    likelihood: np.ndarray
    mcse: np.ndarray
    draws: int
    random_seed: int | None = None


def _draw_probabilities(counts: np.ndarray, rho1: float, rho2: float, product: np.ndarray,
                        invariant: str, draws: int, rng: np.random.Generator) -> np.ndarray:
    """``f_n`` of the module notes for ``draws`` simulated releases of the true ``counts``."""
    s_obs = int(product[0])
    b_star = counts[None, :] + sample(np.zeros(counts.size), rho1, size=(draws, counts.size),
                                      random_seed=rng).astype(np.int64)
    x2 = int(counts.sum())
    if invariant == "block-group":
        parent = np.full(draws, x2)
    else:
        parent = np.maximum(0, x2 + sample(0, rho2, size=draws, random_seed=rng))
    f = np.zeros(draws)
    selected = np.flatnonzero(parent == s_obs)
    if selected.size == 0:
        return f
    floors, active, remainder = project_floor(b_star[selected], s_obs)
    f[selected] = rounding_probability(floors, active, remainder, product[1:])
    return f


def rounding_probability(floors: np.ndarray, active: np.ndarray, remainder: np.ndarray,
                         target: np.ndarray) -> np.ndarray:
    r"""P[the randomised rounding of each row gives ``target``] (shape ``(n,)``).

    The rounding adds one unit to each block of a uniformly drawn size-``r`` subset ``S`` of
    the active set ``A`` (:mod:`.projection_kernels`), so the outcome is ``target`` for at most
    one ``S = target - floors``, which must be a 0/1 vector on ``A`` with ``|S| = r``:

    .. math::

        P = \mathbf 1\bigl[t - \lfloor z \rfloor \in \{0, 1\}^B \text{ zero off } A,\
            \textstyle\sum_i (t_i - \lfloor z_i \rfloor) = r\bigr] \big/ \binom{|A|}{r}

    (1 when ``r = 0``). ``O(n B)``: the outcomes are not listed
    (:func:`.projection_kernels.rounding_outcomes` tabulates ``2**B (B + 1)`` patterns, beyond
    memory from about 12 blocks). Kernel: the outputs of
    :func:`.projection_kernels.project_floor`, ``target`` int64 ``(B,)``, ``B <= MAX_BLOCKS``.
    """
    extra = target[None, :] - floors
    match = (np.all((extra == 0) | ((extra == 1) & active), axis=1)
             & (extra.sum(axis=1) == remainder))
    weight = inverse_binomials(floors.shape[1])[active.sum(axis=1), remainder]
    return np.where(match, np.where(remainder == 0, 1.0, weight), 0.0)


def product_likelihood_mc(product, rho1, rho2, others, m=0, invariant="none", *,
                          draws=100_000, random_seed=None) -> McLikelihood:
    r"""Estimate :math:`P[w \mid k]` for ``k = m, m + 1`` by simulation (module notes).

    Parameters
    ----------
    product : sequence of int, length d + 2
        The observed product :math:`(\tilde x_2, \tilde b_0, \dots, \tilde b_d)`.
    rho1, rho2, others, m, invariant
        As in :func:`dprisk.inference.product.exact.product_table`.
    draws : int (draws >= 2)
        Simulated releases per hypothesis; refused above the memory limit
        (:data:`DRAW_BLOCK_BYTES` per release and block) or the work limit, before any draw.
    random_seed : int or numpy Generator, optional
        Seed of the simulation; without one, a seed is drawn, used and reported.

    Returns
    -------
    McLikelihood
    """
    rho1, rho2, others, m, invariant = check_product_inputs(rho1, rho2, others, m, invariant)
    product = check_count(np.asarray(product), "product", minimum=0, nonempty=True)
    if product.shape != (others.size + 2,) or product[1:].sum() != product[0]:
        raise ValueError(f"product must be (x~2, b~0, ..., b~d) with d + 2 = {others.size + 2} "
                         f"entries whose blocks add up to x~2, got {product.tolist()}")
    draws = check_positive_int(draws, "draws")
    if draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws}")
    if others.size + 1 > MAX_BLOCKS:
        raise ValueError(f"others: d = {others.size} other blocks; the Monte Carlo allows d <= "
                         f"{MAX_BLOCKS - 1} (the tie-break weights 1 / C(d + 1, r) leave the "
                         f"float64 range beyond)")
    blocks = others.size + 1
    what = f"{draws} simulated releases x 2 hypotheses of {blocks} blocks"
    check_memory(float(draws) * DRAW_BLOCK_BYTES * blocks, parameter="draws", what=what)
    check_work(2.0 * draws * DRAW_BLOCK_STEPS * (blocks + 1), parameter="draws", what=what)
    if random_seed is None:  # draw one, use it and report it: every random result reproducible
        random_seed = resolve_random_seed(None)
    rng = as_generator(random_seed, "random_seed")
    seed = int(random_seed) if isinstance(random_seed, numbers.Integral) else None
    estimates, errors = [], []
    for k in (m, m + 1):
        counts = np.concatenate([[k], others]).astype(np.int64)
        f = _draw_probabilities(counts, rho1, rho2, product, invariant, draws, rng)
        estimates.append(f.mean())
        errors.append(f.std(ddof=1) / np.sqrt(draws))
    return McLikelihood(np.array(estimates), np.array(errors), draws, seed)
