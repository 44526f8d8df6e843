r"""Draws from the discrete Gaussian DG(mu, 1/(2 rho)): an exact reference and a fast sampler.

The target is the paper's mechanism (Definition 3),

.. math:: P[X^* = x] = e^{-\rho (x - \mu)^2} / Z(\rho), \qquad x \in \mathbb{Z},

with integer centre ``mu`` and :math:`\sigma^2 = 1/(2\rho)` (the scale, not the variance).

* :func:`sample_exact` is the Canonne, Kamath & Steinke (2020) algorithm in exact rational
  arithmetic (Python integers): every coin it tosses has a rational bias and is decided by
  comparing uniform random integers, so its output has exactly the law above (for the
  rational ``rho`` it is given). It is slow (a few microseconds per draw) and exists as the
  reference the fast sampler is tested against.
* :func:`sample` is an alias-table sampler over the truncated support ``[-K, K]``: one 64-bit
  random word per draw, vectorised in numpy, tens of millions of draws per second.
* :func:`sample_sum` draws :math:`\sum_{i=1}^n \eta_i` with :math:`\eta_i` iid DG(0, 1/(2 rho))
  (the noise on an aggregate of ``n`` blocks, supplement S2).

All randomness comes from a ``numpy.random.Generator`` (``random_seed``, PyMC's name: a
Generator, or ``np.random.default_rng(random_seed)`` for a seed), so a seed reproduces the
draws.
"""

from __future__ import annotations

import functools
import math
import numbers
import secrets
from typing import NamedTuple

import numpy as np

from dprisk.models.checks import check_count, check_positive_int, check_rho
from dprisk.models.mechanism.dg_exact import RandomBits, exact_noise, exact_rho
from dprisk.models.mechanism.discrete_gaussian import logpmf_kernel, support_halfwidth_kernel

__all__ = [
    "SEED_BOUND",
    "TABLE_TAIL_MASS",
    "alias_table",
    "as_generator",
    "noise_from_words",
    "rejection_noise",
    "resolve_random_seed",
    "sample",
    "sample_exact",
    "sample_kernel",
    "sample_sum",
    "sample_sum_kernel",
]

#: Probability mass left outside the fast sampler's table, ``P[|X - mu| > K]``. It is below
#: ``2**-64`` (about 5.4e-20), the resolution of the 64-bit random words the table consumes.
TABLE_TAIL_MASS = 1e-20
#: Seeds drawn when none is given lie in ``[0, SEED_BOUND)`` (32 bits: short to type back).
SEED_BOUND = 2**32
#: Largest alias table, ``2**MAX_TABLE_BITS`` columns (``K`` up to about 1.3e5, i.e.
#: ``rho >= 3e-9``); smaller ``rho`` uses the vectorised rejection sampler.
MAX_TABLE_BITS = 18
#: Arrays of ``rho`` with at most this many distinct values use one table per value.
MAX_TABLES_PER_CALL = 8
#: Draws generated per pass of the table sampler (keeps the temporaries in cache).
_CHUNK = 1 << 16
_WORD_BITS = 64


def as_generator(rng, name: str = "rng") -> np.random.Generator:
    """``np.random.default_rng(rng)``; a bad ``rng`` raises a one-line error naming ``name``.

    Parameters
    ----------
    rng : numpy.random.Generator, int seed (>= 0), SeedSequence, BitGenerator or None
        Not a bool (numpy would take ``True`` as the seed 1).
    name : str
        Parameter name used in the error message.
    """
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be a numpy Generator, a seed (an integer >= 0) or None, got {rng!r}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as err:
        raise type(err)(
            f"{name} must be a numpy Generator, a seed (an integer >= 0) or None, got {rng!r}"
        ) from None


def resolve_random_seed(random_seed=None) -> int:
    """The seed of a Monte Carlo run: the one given, or a fresh one drawn (and then reported).

    A drawn seed is ``secrets.randbelow(2**32)``, from the operating system's entropy.

    Raises
    ------
    ValueError
        If the seed is not ``None`` or an integer >= 0 (any size: SeedSequence entropy is
        128-bit), naming ``random_seed``.
    """
    if random_seed is None:
        return secrets.randbelow(SEED_BOUND)
    if (isinstance(random_seed, bool) or not isinstance(random_seed, numbers.Integral)
            or random_seed < 0):
        raise ValueError(f"random_seed must be None or an integer >= 0, got {random_seed!r}")
    return int(random_seed)


def _output_shape(size, *param_shapes) -> tuple[int, ...]:
    """Shape of the draws: ``size`` if given (parameters must broadcast to it), else theirs."""
    broadcast = np.broadcast_shapes(*param_shapes)
    if size is None:
        return broadcast
    try:
        shape = (size,) if isinstance(size, numbers.Integral) else tuple(size)
    except TypeError:
        shape = None
    if shape is None or any(not isinstance(n, numbers.Integral) or n < 0 for n in shape):
        raise ValueError(f"size must be a non-negative int or a tuple of them, got {size!r}")
    shape = tuple(int(n) for n in shape)
    try:
        compatible = np.broadcast_shapes(broadcast, shape) == shape
    except ValueError:
        compatible = False
    if not compatible:
        raise ValueError(
            f"size {shape} is not compatible with the shapes of mu and rho {param_shapes}"
        )
    return shape


def sample_exact(mu, rho, size=None, random_seed=None) -> np.ndarray:
    r"""Exact draws from DG(mu, 1/(2 rho)) by the Canonne-Kamath-Steinke rejection sampler.

    With :math:`\sigma^2 = 1/(2\rho)` and :math:`t = \lfloor\sigma\rfloor + 1`:

    1. propose :math:`Y` from the discrete Laplace :math:`P[Y=y] \propto e^{-|y|/t}`,
    2. accept with probability :math:`\exp(-(|Y| - \sigma^2/t)^2/(2\sigma^2))`, else repeat,
    3. return :math:`\mu + Y`.

    Every Bernoulli(:math:`e^{-\gamma}`) coin is tossed exactly for rational
    :math:`\gamma` (numerator and denominator as Python integers), by comparisons of uniform
    random integers drawn from ``random_seed``; no floating point enters, so the output law is
    exactly DG for the rational ``rho`` used. A float ``rho`` is taken at its exact binary
    value (``Fraction(rho)``); pass a ``Fraction`` (e.g. ``census_level("block").rho_exact``)
    for a decimal or ratio budget.

    Parameters
    ----------
    mu : array_like of int
        Centre(s), broadcast against ``size``.
    rho : float, int or Fraction (rho > 0)
        Privacy parameter (a scalar).
    size : int or tuple of int, optional
        Output shape; defaults to the shape of ``mu``.
    random_seed : numpy.random.Generator or int seed, optional
        As in :func:`sample`.

    Returns
    -------
    ndarray of int64
        Draws of shape ``size``, exactly DG(mu, 1/(2 rho)) for the rational ``rho`` used.

    Notes
    -----
    Reference: C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for
    differential privacy", NeurIPS 2020, Algorithms 1-3. Expected cost is a few dozen
    Python-level integer operations per draw (4-9 microseconds at rho from 1000 down to
    0.01), the coins of the Laplace proposal mostly read off 16-bit look-up tables.
    """
    rho_exact = exact_rho(rho)
    mu = check_count(mu, "mu")
    shape = _output_shape(size, mu.shape)
    rng = as_generator(random_seed, "random_seed")
    sigma2 = 1 / (2 * rho_exact)
    t = math.isqrt(sigma2.numerator * sigma2.denominator) // sigma2.denominator + 1
    noise = np.array(exact_noise(sigma2, t, math.prod(shape), RandomBits(rng)), dtype=np.int64)
    return noise.reshape(shape) + mu


# --------------------------------------------------------------------------------------------
# Fast sampler: alias table on [-K, K] driven by 64-bit random words.
# --------------------------------------------------------------------------------------------


class _AliasTable(NamedTuple):
    """Walker/Vose alias table with ``2**index_bits`` columns and integer thresholds."""

    index_bits: int
    #: Column j keeps its own value when the low ``64 - index_bits`` bits are < thresholds[j].
    thresholds: np.ndarray  # uint64, shape (2**index_bits,)
    #: Interleaved (own value, alias value) per column, already shifted to noise values.
    values: np.ndarray  # int64, shape (2 * 2**index_bits,)


@functools.lru_cache(maxsize=64)
def _table_size_bits(rho: float) -> int:
    """Bits of the alias table's column index for ``rho`` (remembered: a few distinct rho)."""
    halfwidth = int(support_halfwidth_kernel(np.asarray(rho, dtype=float), TABLE_TAIL_MASS))
    return max(1, (2 * halfwidth).bit_length())  # 2**bits >= 2K + 1


@functools.lru_cache(maxsize=16)
def _alias_table(rho: float) -> _AliasTable:
    r"""Build the alias table of DG(0, 1/(2 rho)) truncated to ``[-K, K]``.

    The pmf is scaled to integer weights :math:`w_j = \mathrm{round}(2^{64} p_j)` summing to
    exactly :math:`2^{64}` (the residue, the pmf's own rounding of ~1e-16, goes to the mode), and
    Vose's construction is run in exact integer arithmetic, so the sampler reproduces
    :math:`w_j / 2^{64}` exactly.
    """
    halfwidth = int(support_halfwidth_kernel(np.asarray(rho, dtype=float), TABLE_TAIL_MASS))
    index_bits = _table_size_bits(rho)
    n_columns = 1 << index_bits
    capacity = 1 << (_WORD_BITS - index_bits)  # weight each column holds
    support = np.arange(-halfwidth, halfwidth + 1)
    probs = np.exp(logpmf_kernel(support, np.asarray(0, dtype=np.int64),
                                 np.asarray(rho, dtype=float)))
    weights = [round(float(p) * 2.0**_WORD_BITS) for p in probs]
    weights += [0] * (n_columns - len(weights))
    weights[halfwidth] += 2**_WORD_BITS - sum(weights)
    if abs(weights[halfwidth] - round(float(probs[halfwidth]) * 2.0**_WORD_BITS)) > 2**24:
        raise RuntimeError(f"alias table for rho={rho!r}: pmf does not sum to 1 within 1e-12")

    thresholds = [capacity] * n_columns
    alias = list(range(n_columns))
    small = [j for j, w in enumerate(weights) if w < capacity]
    large = [j for j, w in enumerate(weights) if w >= capacity]
    while small and large:
        j_small, j_large = small.pop(), large.pop()
        thresholds[j_small] = weights[j_small]
        alias[j_small] = j_large
        weights[j_large] -= capacity - weights[j_small]
        (small if weights[j_large] < capacity else large).append(j_large)
    # Exact integers: every column left over holds exactly `capacity`.
    if any(weights[j] != capacity for j in small + large):
        raise RuntimeError(f"alias table for rho={rho!r}: weights do not balance")

    values = np.empty(2 * n_columns, dtype=np.int64)
    values[0::2] = np.arange(n_columns) - halfwidth
    values[1::2] = np.asarray(alias) - halfwidth
    return _AliasTable(index_bits, np.asarray(thresholds, dtype=np.uint64), values)


def alias_table(rho: float) -> _AliasTable:
    """The (cached) alias table of DG(0, 1/(2 rho)) that :func:`sample` draws from.

    Hold the returned table to reuse it beyond the cache's 16 entries
    (:func:`noise_from_words`). ``rho`` (> 0) must give a table of at most
    ``2**MAX_TABLE_BITS`` columns (``rho >= 3e-9``).
    """
    rho = float(rho)
    if not (rho > 0 and _table_fits(rho)):
        raise ValueError(f"rho must be >= 3e-9 for an alias table, got {rho!r}")
    return _alias_table(rho)


def _table_noise(table: _AliasTable, words: np.ndarray, out: np.ndarray) -> None:
    """Map uniform 64-bit ``words`` to noises through ``table`` (into ``out``)."""
    shift = np.uint64(_WORD_BITS - table.index_bits)
    low_mask = np.uint64((1 << (_WORD_BITS - table.index_bits)) - 1)
    # the column, below 2**index_bits, read in place as int64 (the same integers): np.take
    # indexes with it directly, no index copy, and it becomes the slot 2 column + alias
    slot = (words >> shift).view(np.int64)
    use_alias = (words & low_mask) >= np.take(table.thresholds, slot)
    np.left_shift(slot, 1, out=slot)
    slot |= use_alias
    np.take(table.values, slot, out=out)


def noise_from_words(table: _AliasTable, words) -> np.ndarray:
    r"""DG noises, one per uniform 64-bit word, through an :func:`alias_table`.

    The draw of :func:`sample` with the random words supplied by the caller (e.g. a
    counter-based generator keyed by what the noise belongs to): the top ``b`` bits of a word
    pick a column, its low ``64 - b`` bits choose the column's value or its alias, so a
    uniform word gives each :math:`x` with probability :math:`w_x / 2^{64}`, the pmf to within
    :math:`2^{-64}`.

    Parameters
    ----------
    table : the result of :func:`alias_table`
    words : array_like of uint64
        Independent uniform 64-bit words.

    Returns
    -------
    ndarray of int64
        The noises, shaped as ``words``.
    """
    words = np.asarray(words)
    if words.dtype != np.uint64:
        raise ValueError(f"words must be uint64, got {words.dtype}")
    out = np.empty(words.shape, dtype=np.int64)
    _table_noise(table, words.ravel(), out.reshape(-1))
    return out


def _sample_table(rho: float, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` DG(0, 1/(2 rho)) noises from the alias table, chunk by chunk."""
    table = _alias_table(rho)
    out = np.empty(n_draws, dtype=np.int64)
    for start in range(0, n_draws, _CHUNK):
        stop = min(start + _CHUNK, n_draws)
        words = rng.integers(0, 2**_WORD_BITS, size=stop - start, dtype=np.uint64)
        _table_noise(table, words, out[start:stop])
    return out


def rejection_noise(rho: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""DG(0, 1/(2 rho)) noises, one per element of ``rho``, by vectorised CKS rejection.

    The same scheme as :func:`sample_exact` in double precision: the discrete Laplace
    proposal is the difference of two geometric variables with ratio :math:`e^{-1/t}`, and
    the acceptance coin compares a uniform double with
    :math:`\exp(-(|Y| - \sigma^2/t)^2/(2\sigma^2))`. Probabilities are off by double rounding
    (~1e-16 relative) only; there is no truncation. Used where a table does not pay off
    (many distinct ``rho`` in one call) or would be too large (``rho < 3e-9``). A kernel:
    ``rho`` (validated, > 0) and the generator are used as given.
    """
    rho = np.asarray(rho, dtype=float).ravel()
    out = np.empty(rho.size, dtype=np.int64)
    pending = np.arange(rho.size)
    while pending.size:
        sigma2 = 0.5 / rho[pending]
        t = np.floor(np.sqrt(sigma2)) + 1.0
        p_stop = -np.expm1(-1.0 / t)
        proposal = rng.geometric(p_stop) - rng.geometric(p_stop)
        log_accept = -((np.abs(proposal) - sigma2 / t) ** 2) / (2.0 * sigma2)
        accepted = rng.random(pending.size) < np.exp(log_accept)
        out[pending[accepted]] = proposal[accepted]
        pending = pending[~accepted]
    return out


def _table_fits(rho: float) -> bool:
    return _table_size_bits(rho) <= MAX_TABLE_BITS


def _noise(rho: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` noises for ``rho`` (a scalar, or an array of ``n_draws`` values)."""
    if rho.ndim == 0:
        value = float(rho)
        if _table_fits(value):
            return _sample_table(value, n_draws, rng)
        return rejection_noise(np.full(n_draws, value), rng)
    flat = rho.ravel()
    distinct, group = np.unique(flat, return_inverse=True)
    if distinct.size > MAX_TABLES_PER_CALL:
        return rejection_noise(flat, rng)
    out = np.empty(n_draws, dtype=np.int64)
    for index, value in enumerate(distinct):
        members = np.flatnonzero(group == index)
        out[members] = _noise(np.asarray(value), members.size, rng)
    return out


def sample(mu, rho, size=None, random_seed=None) -> np.ndarray:
    r"""Fast draws from DG(mu, 1/(2 rho)), :math:`P[X = x] \propto e^{-\rho (x-\mu)^2}`.

    For each distinct ``rho`` the pmf on ``[-K, K]``, with ``K = support_halfwidth(rho,
    TABLE_TAIL_MASS)``, is turned into a Walker alias table with :math:`2^b \ge 2K+1`
    columns whose probabilities are integer multiples of :math:`2^{-64}`. Each draw consumes
    one uniform 64-bit word ``W``: its top ``b`` bits pick a column, its low ``64 - b`` bits
    decide between the column's value and its alias.

    Accuracy: each probability is reproduced to within :math:`2^{-64}` absolute (about
    5.4e-20) of the double-precision pmf (itself ~1e-15 relative; the mode also absorbs
    the ~1e-16 by which those doubles fail to sum to 1); the truncated tail,
    :math:`P[|X-\mu| > K] <` ``TABLE_TAIL_MASS`` = 1e-20, is below that resolution, i.e. below
    anything a 64-bit (let alone a 53-bit double) uniform could resolve. Tables are cached per
    ``rho`` (LRU, 16 entries). Very small ``rho`` (< 3e-9, table > 2**18 columns) and arrays
    with more than 8 distinct ``rho`` use a vectorised float version of the
    Canonne-Kamath-Steinke rejection sampler instead (no truncation, double rounding only).

    Parameters
    ----------
    mu : array_like of int
        Centre(s) (the true counts).
    rho : array_like of float (rho > 0)
        Privacy parameter(s), broadcast against ``mu``.
    size : int or tuple of int, optional
        Output shape; ``mu`` and ``rho`` must broadcast to it. Default: their broadcast shape.
    random_seed : numpy.random.Generator or int seed, optional
        Source of randomness; a seed reproduces the draws.

    Returns
    -------
    ndarray of int64
        Draws of shape ``size``.
    """
    mu = check_count(mu, "mu")
    rho = check_rho(rho, "rho")
    shape = _output_shape(size, mu.shape, rho.shape)
    return sample_kernel(mu, rho, shape, as_generator(random_seed, "random_seed"))


def sample_kernel(mu: np.ndarray, rho: np.ndarray, shape: tuple,
                  rng: np.random.Generator) -> np.ndarray:
    """Kernel of :func:`sample` for validated values.

    ``mu`` (int64) and ``rho`` (float, ``> 0``) are arrays that broadcast to ``shape``;
    ``rng`` is a Generator.
    """
    n_draws = math.prod(shape)
    rho_per_draw = rho if rho.ndim == 0 else np.broadcast_to(rho, shape)
    noise = _noise(rho_per_draw, n_draws, rng).reshape(shape)
    noise += mu
    return noise


def sample_sum(n_terms, rho, size=None, random_seed=None) -> np.ndarray:
    r"""Draws of :math:`S = \sum_{i=1}^{n} \eta_i`, :math:`\eta_i` iid DG(0, 1/(2 rho)).

    This is the noise on the sum of ``n`` independently protected counts (e.g. the ``d``
    other blocks of a block group). Supplement S2 approximates its law by DG(0, n/(2 rho));
    these draws are the exact convolution, up to the accuracy of :func:`sample`.

    Parameters
    ----------
    n_terms : int (n_terms >= 1)
    rho : array_like of float (rho > 0)
    size : int or tuple of int, optional
        Output shape; default the shape of ``rho``.
    random_seed : numpy.random.Generator or int seed, optional
        Source of randomness; a seed reproduces the draws.

    Returns
    -------
    ndarray of int64
        Cost is ``n_terms`` calls of :func:`sample` with memory of one output array.
    """
    n_terms = check_positive_int(n_terms, "n_terms")
    rho = check_rho(rho, "rho")
    shape = _output_shape(size, rho.shape)
    return sample_sum_kernel(n_terms, rho, shape, as_generator(random_seed, "random_seed"))


def sample_sum_kernel(n_terms: int, rho: np.ndarray, shape: tuple,
                      rng: np.random.Generator) -> np.ndarray:
    """Kernel of :func:`sample_sum` for validated values (``rho`` a float array ``> 0``)."""
    n_draws = math.prod(shape)
    rho_per_draw = rho if rho.ndim == 0 else np.broadcast_to(rho, shape)
    total = np.zeros(shape, dtype=np.int64)
    for _ in range(n_terms):  # the draws of sample(0, rho, size=shape) from the same generator
        total += _noise(rho_per_draw, n_draws, rng).reshape(shape)
    return total
