r"""The exact discrete Gaussian sampler's integer machinery (Canonne, Kamath & Steinke 2020).

Algorithms 1-3 of CKS 2020 in exact integer arithmetic: Bernoulli(exp(-gamma)) coins for a
rational gamma = num/den, the discrete Laplace proposal of scale t, and the rejection loop of
the discrete Gaussian of variance sigma^2 = p/q, accepting a proposal Y with probability
exp(-(|Y| q t - p)^2 / (2 p q t^2)). Every decision is made by comparing uniform random
integers drawn from a :class:`RandomBits` pool fed by a numpy Generator's 64-bit words, so a
seed fixes the draws exactly (no floating point anywhere). Used by
:func:`dprisk.models.mechanism.dg_sampling.sample_exact`.
"""

from __future__ import annotations

import functools
import math
import numbers
from fractions import Fraction

import numpy as np

from dprisk.models.checks import check_rho

__all__ = ["RandomBits", "exact_noise", "exact_rho"]

_WORD_BITS = 64
#: Bits moved from a refill into the exact sampler's bit pool at a time (4 words).
_CHUNK_BITS = 256

# --------------------------------------------------------------------------------------------
# Exact sampler (Canonne, Kamath & Steinke 2020, Algorithms 1-3), integer arithmetic.
# --------------------------------------------------------------------------------------------


class RandomBits:
    """Uniform random integers of any size from 64-bit words of a numpy ``Generator``.

    The words form one bit stream: they are drawn ``words_per_refill`` at a time and used last
    first, each word's bits lowest first, and every request takes the stream's next bits.
    Bits not yet used sit in the pool (an int, next bit lowest) and in the list of
    ``_CHUNK_BITS``-bit chunks of the last refill (next chunk last); the generator is asked for
    words only when a request needs more bits than both hold. :func:`exact_noise` works on
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


def _bernoulli_exp_le1(num: int, den: int, bits: RandomBits) -> bool:
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


def _bernoulli_exp(num: int, den: int, bits: RandomBits) -> bool:
    r"""Bernoulli(:math:`e^{-\gamma}`) for rational :math:`\gamma = num/den \ge 0`.

    :math:`e^{-\gamma} = (e^{-1})^{\lfloor\gamma\rfloor} e^{-(\gamma - \lfloor\gamma\rfloor)}`:
    a product of independent coins, stopped at the first failure.
    """
    while num > den:
        if not _bernoulli_exp_le1(1, 1, bits):
            return False
        num -= den
    return _bernoulli_exp_le1(num, den, bits)


def _discrete_laplace(t: int, bits: RandomBits) -> int:
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


def _exp_minus_one_coin(pool: int, pool_bits: int, source: RandomBits) -> tuple[int, int, int]:
    """An exp(-1) coin (:func:`_bernoulli_exp_le1` for 1/1) tossed on a bit pool.

    ``A_1 = 1`` surely (a uniform integer below 1 is 0, no bits); for k = 2, 3, ...
    ``A_k = 1`` iff a uniform integer below ``k`` is 0. Returns ``(heads, pool, pool_bits)``,
    ``heads`` 1 iff the first ``A_k = 0`` has k odd.
    """
    k = 2
    while True:
        value, pool, pool_bits = _uniform_below(k, pool, pool_bits, source)
        if value:
            return k & 1, pool, pool_bits
        k += 1


def _uniform_below(bound: int, pool: int, pool_bits: int,
                   source: RandomBits) -> tuple[int, int, int]:
    """:meth:`RandomBits.below` on a bit pool: ``(value, pool, pool_bits)``."""
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
                     source: RandomBits) -> tuple[int, int, int, int]:
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


def exact_noise(sigma2: Fraction, t: int, n_draws: int, source: RandomBits) -> list[int]:
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
    gamma_cache: dict[int, tuple[int, int, int]] = {}
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
            gamma = (whole, num, den)
            if len(gamma_cache) < _GAMMA_CACHE_SIZE:
                gamma_cache[magnitude] = gamma
        whole, num, den = gamma
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
        k = 1
        while True:
            value, pool, pool_bits = _uniform_below(den * k, pool, pool_bits, source)
            if value >= num:
                break
            k += 1
        if k & 1:
            draws[n_done] = -magnitude if negative else magnitude
            n_done += 1
    source._pool, source._pool_bits = pool, pool_bits
    return draws


def exact_rho(rho) -> Fraction:
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
