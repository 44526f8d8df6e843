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
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from dprisk.models.checks import check_count, check_positive_int, check_rho
from dprisk.models.mechanism.discrete_gaussian import logpmf_kernel, support_halfwidth_kernel

__all__ = [
    "SEED_BOUND",
    "TABLE_TAIL_MASS",
    "as_generator",
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
#: Bits moved from a refill into the exact sampler's bit pool at a time (4 words).
_CHUNK_BITS = 256


# --------------------------------------------------------------------------------------------
# Exact sampler (Canonne, Kamath & Steinke 2020, Algorithms 1-3), integer arithmetic.
# --------------------------------------------------------------------------------------------


class _RandomBits:
    """Uniform random integers of any size from 64-bit words of a numpy ``Generator``.

    The words form one bit stream: they are drawn ``words_per_refill`` at a time and used last
    first, each word's bits lowest first, and every request takes the stream's next bits.
    Bits not yet used sit in the pool (an int, next bit lowest) and in the list of
    ``_CHUNK_BITS``-bit chunks of the last refill (next chunk last); the generator is asked for
    words only when a request needs more bits than both hold. :func:`_exact_noise` works on
    the same pool in local variables.
    """

    def __init__(self, rng: np.random.Generator, words_per_refill: int = 256):
        if words_per_refill % (_CHUNK_BITS // _WORD_BITS):
            raise ValueError(f"words_per_refill must be a multiple of {_CHUNK_BITS // _WORD_BITS}")
        self._rng = rng
        self._words_per_refill = words_per_refill
        self._chunks: list[int] = []
        self._pool = 0
        self._pool_bits = 0

    def _refill(self) -> None:
        """Draw ``words_per_refill`` words and cut their stream into chunks (next one last)."""
        words = self._rng.integers(0, 2**_WORD_BITS, size=self._words_per_refill, dtype=np.uint64)
        stream = words[::-1].astype("<u8").tobytes()  # the last word's bits come first
        n_bytes = _CHUNK_BITS // 8
        self._chunks.extend(int.from_bytes(stream[end - n_bytes:end], "little")
                            for end in range(len(stream), 0, -n_bytes))

    def _top_up(self, pool: int, pool_bits: int, need: int) -> tuple[int, int]:
        """``(pool, pool_bits)`` with the stream's next chunks on top: ``need`` bits or more."""
        chunks = self._chunks
        while pool_bits < need:
            if not chunks:
                self._refill()
            pool |= chunks.pop() << pool_bits
            pool_bits += _CHUNK_BITS
        return pool, pool_bits

    def bits(self, k: int) -> int:
        """Return ``k`` fresh uniform random bits as a non-negative int."""
        if self._pool_bits < k:
            self._pool, self._pool_bits = self._top_up(self._pool, self._pool_bits, k)
        value = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._pool_bits -= k
        return value

    def below(self, bound: int) -> int:
        """Return a uniform integer in ``{0, ..., bound - 1}`` (rejection, no modulo bias)."""
        if bound == 1:
            return 0
        k = (bound - 1).bit_length()
        while True:
            value = self.bits(k)
            if value < bound:
                return value


def _bernoulli_exp_le1(num: int, den: int, bits: _RandomBits) -> bool:
    r"""Bernoulli(:math:`e^{-\gamma}`) for :math:`\gamma = num/den \in [0, 1]` (CKS Algorithm 1).

    Draw :math:`A_k \sim` Bernoulli(:math:`\gamma / k`) for k = 1, 2, ... until the first
    :math:`A_k = 0`; return 1 iff that k is odd. Then
    :math:`P[\text{first zero at } k] = \gamma^{k-1}/(k-1)! - \gamma^k/k!`, whose sum over odd
    k is :math:`e^{-\gamma}`.
    """
    k = 1
    while bits.below(den * k) < num:  # A_k = 1 with probability num / (den k)
        k += 1
    return k % 2 == 1


def _bernoulli_exp(num: int, den: int, bits: _RandomBits) -> bool:
    r"""Bernoulli(:math:`e^{-\gamma}`) for rational :math:`\gamma = num/den \ge 0`.

    :math:`e^{-\gamma} = (e^{-1})^{\lfloor\gamma\rfloor} e^{-(\gamma - \lfloor\gamma\rfloor)}`:
    a product of independent coins, stopped at the first failure.
    """
    while num > den:
        if not _bernoulli_exp_le1(1, 1, bits):
            return False
        num -= den
    return _bernoulli_exp_le1(num, den, bits)


def _discrete_laplace(t: int, bits: _RandomBits) -> int:
    r"""Discrete Laplace with :math:`P[Y = y] \propto e^{-|y|/t}`, integer ``t >= 1`` (CKS Alg. 2).

    :math:`|Y| = U + tV` with U on {0..t-1} weighted by :math:`e^{-U/t}` (rejection) and
    V geometric with ratio :math:`e^{-1}`; a fair sign, rejecting "negative zero".
    """
    while True:
        u = bits.below(t)
        if not _bernoulli_exp(u, t, bits):
            continue
        v = 0
        while _bernoulli_exp_le1(1, 1, bits):
            v += 1
        magnitude = u + t * v
        negative = bits.bits(1) == 1
        if negative and magnitude == 0:
            continue
        return -magnitude if negative else magnitude


#: Width of the look-up tables' keys: an exp(-1) coin or a whole discrete Laplace attempt is
#: read off the next ``_TABLE_BITS`` bits of the stream when they decide it, else bit by bit.
_TABLE_BITS = 16
_TABLE_MASK = (1 << _TABLE_BITS) - 1
#: Largest Laplace scale ``t`` with an attempt table (``rho >= 1/2048``): a quarter of the
#: attempts at ``t = 32`` are not decided within 16 bits, 3/4 at ``t = 64``.
_MAX_TABLE_SCALE = 32
#: Reduced ``gamma`` kept per proposal magnitude, for at most this many magnitudes per call.
_GAMMA_CACHE_SIZE = 4096


def _exp_minus_one_coin(pool: int, pool_bits: int, source: _RandomBits) -> tuple[int, int, int]:
    """An exp(-1) coin (:func:`_bernoulli_exp_le1` for 1/1) tossed on a bit pool.

    ``A_1 = 1`` surely (a uniform integer below 1 is 0, no bits); for k = 2, 3, ...
    ``A_k = 1`` iff a uniform integer below ``k`` is 0. Returns ``(heads, pool, pool_bits)``,
    ``heads`` 1 iff the first ``A_k = 0`` has k odd.
    """
    k = 2
    while True:
        n_bits = (k - 1).bit_length()
        mask = (1 << n_bits) - 1
        while True:
            if pool_bits < n_bits:
                pool, pool_bits = source._top_up(pool, pool_bits, n_bits)
            value = pool & mask
            pool >>= n_bits
            pool_bits -= n_bits
            if value < k:
                break
        if value:
            return k & 1, pool, pool_bits
        k += 1


def _uniform_below(bound: int, pool: int, pool_bits: int,
                   source: _RandomBits) -> tuple[int, int, int]:
    """:meth:`_RandomBits.below` on a bit pool: ``(value, pool, pool_bits)``."""
    n_bits = (bound - 1).bit_length()
    mask = (1 << n_bits) - 1
    while True:
        if pool_bits < n_bits:
            pool, pool_bits = source._top_up(pool, pool_bits, n_bits)
        value = pool & mask
        pool >>= n_bits
        pool_bits -= n_bits
        if value < bound:
            return value, pool, pool_bits


def _laplace_attempt(t: int, pool: int, pool_bits: int,
                     source: _RandomBits) -> tuple[int, int, int, int]:
    """One pass of :func:`_discrete_laplace`'s loop on a bit pool.

    Returns ``(magnitude, negative, pool, pool_bits)``; ``negative`` is -1 if the pass ends
    in a rejection (U not kept, or "negative zero"), else 1 or 0.
    """
    u, pool, pool_bits = _uniform_below(t, pool, pool_bits, source)
    k = 1  # keep U with probability exp(-U/t): Algorithm 1 for U/t, not reduced
    while True:
        value, pool, pool_bits = _uniform_below(t * k, pool, pool_bits, source)
        if value >= u:
            break
        k += 1
    if not k & 1:
        return 0, -1, pool, pool_bits
    v = 0
    while True:
        heads, pool, pool_bits = _exp_minus_one_coin(pool, pool_bits, source)
        if not heads:
            break
        v += 1
    magnitude = u + t * v
    if not pool_bits:
        pool, pool_bits = source._top_up(pool, pool_bits, 1)
    negative = pool & 1
    if negative and not magnitude:
        negative = -1
    return magnitude, negative, pool >> 1, pool_bits - 1


def _fill(table: list[int], low: int, used: int, entry: int) -> None:
    """Set ``entry`` for every key whose lowest ``used`` bits are ``low``."""
    step = 1 << used
    table[low::step] = [entry] * (len(table) // step)


@functools.cache
def _exp_minus_one_coin_table() -> list[int]:
    """:func:`_exp_minus_one_coin` as a function of the pool's lowest ``_TABLE_BITS`` bits.

    Entry ``2 * used + heads`` if the coin is decided by the lowest ``used`` bits, 0 if it
    needs more. Built by walking the coin's decision tree (states ``(k, used, low)``).
    """
    table = [0] * (1 << _TABLE_BITS)
    stack = [(2, 0, 0)]
    while stack:
        k, used, low = stack.pop()
        n_bits = (k - 1).bit_length()
        if used + n_bits > _TABLE_BITS:
            continue  # not decided within the table's bits
        for value in range(1 << n_bits):
            low_next, used_next = low | value << used, used + n_bits
            if value >= k:  # rejected: draw again below k
                stack.append((k, used_next, low_next))
            elif value == 0:  # A_k = 1: go on to k + 1
                stack.append((k + 1, used_next, low_next))
            else:  # A_k = 0: decided
                _fill(table, low_next, used_next, 2 * used_next + (k & 1))
    return table


@functools.lru_cache(maxsize=16)
def _laplace_attempt_table(t: int) -> list[int]:
    """:func:`_laplace_attempt` as a function of the pool's lowest ``_TABLE_BITS`` bits.

    Entry ``used | 32`` if the attempt is rejected after ``used`` bits, ``used | negative << 6
    | magnitude << 7`` if it proposes ``magnitude`` (with that sign), and 0 if it needs more
    bits. Built by walking the attempt's decision tree: states ``(phase, used, low, u, k, v)``
    with phase 0 drawing U, 1 the coins keeping U, 2 the exp(-1) coins counting V and 3 the
    sign; each state draws one uniform integer below its bound (again while rejected).
    """
    table = [0] * (1 << _TABLE_BITS)
    stack = [(0, 0, 0, 0, 1, 0)]
    while stack:
        phase, used, low, u, k, v = stack.pop()
        bound = (t, t * k, k, 2)[phase]
        n_bits = (bound - 1).bit_length()
        used_next = used + n_bits
        if used_next > _TABLE_BITS:
            continue
        for value in range(1 << n_bits):
            low_next = low | value << used
            if value >= bound:
                stack.append((phase, used_next, low_next, u, k, v))
            elif phase == 0:  # U drawn
                stack.append((1, used_next, low_next, value, 1, 0))
            elif phase == 1:  # A_k for keeping U
                if value < u:
                    stack.append((1, used_next, low_next, u, k + 1, 0))
                elif k & 1:
                    stack.append((2, used_next, low_next, u, 2, 0))
                else:
                    _fill(table, low_next, used_next, used_next | 32)
            elif phase == 2:  # A_k of an exp(-1) coin
                if value == 0:
                    stack.append((2, used_next, low_next, u, k + 1, v))
                elif k & 1:
                    stack.append((2, used_next, low_next, u, 2, v + 1))
                else:
                    stack.append((3, used_next, low_next, u, 0, v))
            elif value and u + t * v == 0:  # negative zero
                _fill(table, low_next, used_next, used_next | 32)
            else:
                _fill(table, low_next, used_next, used_next | value << 6 | (u + t * v) << 7)
    return table


def _exact_noise(sigma2: Fraction, t: int, n_draws: int, source: _RandomBits) -> list[int]:
    r"""``n_draws`` draws of DG(0, sigma2) (CKS Algorithm 3) in exact integer arithmetic.

    Propose Y from the discrete Laplace with scale ``t`` (:func:`_discrete_laplace`) and accept
    it with probability :math:`e^{-\gamma}` (:func:`_bernoulli_exp`), where, for
    :math:`\sigma^2 = p/q` in lowest terms,

    .. math:: \gamma = \frac{(|Y| - \sigma^2/t)^2}{2\sigma^2}
              = \frac{(|Y|\,q\,t - p)^2}{2\,p\,q\,t^2},

    reduced to lowest terms (as ``Fraction`` would) before its coins are tossed.

    This is those functions with their ``source.below``/``source.bits`` calls made on local
    copies of ``source``'s pool, so the same bits are drawn in the same order and every coin
    is decided alike: the draws are those of the function-by-function version (tests check
    this draw for draw, and the bits left in ``source`` after). A Laplace attempt (for
    ``t <= _MAX_TABLE_SCALE``) and each exp(-1) coin is first looked up by the pool's next
    ``_TABLE_BITS`` bits, which decide it most of the time. Chunks move from ``source``'s list
    into the pool ahead of need only while the list holds some, so the generator is asked for
    words exactly when the function-by-function version would ask.
    """
    p, q = sigma2.numerator, sigma2.denominator
    qt = q * t
    gamma_den = 2 * p * q * t * t
    gamma_cache: dict[int, tuple[int, int, int, int, int]] = {}
    coin_table = _exp_minus_one_coin_table()
    attempt_table = _laplace_attempt_table(t) if t <= _MAX_TABLE_SCALE else None
    chunks = source._chunks
    pool, pool_bits = source._pool, source._pool_bits
    draws = [0] * n_draws
    n_done = 0
    while n_done < n_draws:
        # A discrete Laplace attempt (Algorithm 2): magnitude U + tV and a sign, or rejection.
        if pool_bits < _TABLE_BITS and chunks:
            pool |= chunks.pop() << pool_bits
            pool_bits += _CHUNK_BITS
        entry = (attempt_table[pool & _TABLE_MASK]
                 if attempt_table is not None and pool_bits >= _TABLE_BITS else 0)
        if entry:
            used = entry & 31
            pool >>= used
            pool_bits -= used
            if entry & 32:
                continue
            negative = entry >> 6 & 1
            magnitude = entry >> 7
        else:
            magnitude, negative, pool, pool_bits = _laplace_attempt(t, pool, pool_bits, source)
            if negative < 0:
                continue
        # Accept with probability exp(-gamma) (Algorithm 3, by _bernoulli_exp): one exp(-1)
        # coin per subtraction of 1 while gamma > 1 (`whole` of them), then Algorithm 1 for
        # the rest, num/den <= 1.
        gamma = gamma_cache.get(magnitude)
        if gamma is None:
            num = (magnitude * qt - p) ** 2
            common = math.gcd(num, gamma_den)
            num //= common
            den = gamma_den // common
            whole = (num - 1) // den if num else 0
            num -= whole * den
            n_bits = (den - 1).bit_length()
            gamma = (whole, num, den, n_bits, (1 << n_bits) - 1)
            if len(gamma_cache) < _GAMMA_CACHE_SIZE:
                gamma_cache[magnitude] = gamma
        whole, num, den, n_bits, mask = gamma
        heads = 1
        for _ in range(whole):
            if pool_bits < _TABLE_BITS and chunks:
                pool |= chunks.pop() << pool_bits
                pool_bits += _CHUNK_BITS
            entry = coin_table[pool & _TABLE_MASK] if pool_bits >= _TABLE_BITS else 0
            if entry:
                pool >>= entry >> 1
                pool_bits -= entry >> 1
                heads = entry & 1
            else:
                heads, pool, pool_bits = _exp_minus_one_coin(pool, pool_bits, source)
            if not heads:
                break
        if not heads:
            continue
        k, bound = 1, den
        while True:
            while True:
                if pool_bits < n_bits:
                    pool, pool_bits = source._top_up(pool, pool_bits, n_bits)
                value = pool & mask
                pool >>= n_bits
                pool_bits -= n_bits
                if value < bound:
                    break
            if value >= num:
                break
            k += 1
            bound = den * k
            n_bits = (bound - 1).bit_length()
            mask = (1 << n_bits) - 1
        if k & 1:
            draws[n_done] = -magnitude if negative else magnitude
            n_done += 1
    source._pool, source._pool_bits = pool, pool_bits
    return draws


def _exact_rho(rho) -> Fraction:
    """``rho`` as a positive Fraction: Fractions and ints as given, floats by their binary value."""
    if isinstance(rho, (Fraction, numbers.Integral)) and not isinstance(rho, bool):
        value = Fraction(rho)  # made of Python ints below (numpy integers have no bit_length)
        value = Fraction(int(value.numerator), int(value.denominator))
        if value <= 0:
            raise ValueError(f"rho must be > 0 (allowed range: 0 < rho < inf), got {rho!r}")
        return value
    rho_array = check_rho(rho, "rho")
    if rho_array.ndim != 0:
        raise ValueError(f"rho must be a scalar for sample_exact, got shape {rho_array.shape}")
    return Fraction(float(rho_array))


def as_generator(rng, name: str = "rng") -> np.random.Generator:
    """``np.random.default_rng(rng)``; a bad ``rng`` raises a one-line error naming ``name``.

    Parameters
    ----------
    rng : numpy.random.Generator, int seed (>= 0), SeedSequence, BitGenerator or None
    name : str
        Parameter name used in the error message.
    """
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
    rho_exact = _exact_rho(rho)
    mu = check_count(mu, "mu")
    shape = _output_shape(size, mu.shape)
    rng = as_generator(random_seed, "random_seed")
    sigma2 = 1 / (2 * rho_exact)
    t = math.isqrt(sigma2.numerator * sigma2.denominator) // sigma2.denominator + 1
    noise = np.array(_exact_noise(sigma2, t, math.prod(shape), _RandomBits(rng)), dtype=np.int64)
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


def _table_size_bits(rho: float) -> int:
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


def _sample_table(rho: float, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` DG(0, 1/(2 rho)) noises from the alias table, chunk by chunk."""
    table = _alias_table(rho)
    shift = np.uint64(_WORD_BITS - table.index_bits)
    low_mask = np.uint64((1 << (_WORD_BITS - table.index_bits)) - 1)
    out = np.empty(n_draws, dtype=np.int64)
    for start in range(0, n_draws, _CHUNK):
        stop = min(start + _CHUNK, n_draws)
        words = rng.integers(0, 2**_WORD_BITS, size=stop - start, dtype=np.uint64)
        column = words >> shift
        use_alias = (words & low_mask) >= table.thresholds[column]
        slot = (column.astype(np.int64) << 1) | use_alias
        np.take(table.values, slot, out=out[start:stop])
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
