r"""Exact sums of float64 arrays: the same bits whatever the order and the partitioning.

A finite double is :math:`x = M \cdot 2^{e - 53}` with an integer mantissa
:math:`|M| < 2^{53}` (``numpy.frexp``: :math:`x = f 2^e`, :math:`M = f 2^{53}`), so
:math:`x \cdot 2^{1074}` is an integer (1074 = 1021 + 53: the smallest subnormal is
:math:`2^{-1074}`). :class:`ExactSum` holds :math:`\sum_i x_i \cdot 2^{1074}` as one Python
integer: adding arrays, or two sums, is integer addition -- exact, associative, commutative --
and :meth:`ExactSum.value` rounds the total once, correctly (as ``math.fsum`` does, so the
two agree to the last bit). A partitioned run adds its partitions' sums in any order and gets
the bits of the unpartitioned run.

Vectorised: the mantissas are split in a high part (< 2^26) and a low part (< 2^27) and
summed per exponent with ``numpy.bincount`` in float64, exact while the sums stay below
:math:`2^{53}` (at most :data:`BLOCK` values per call); only the per-exponent totals (a few
dozen) meet Python integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["BLOCK", "SCALE_BITS", "ExactSum"]

#: :math:`x \cdot 2^{1074}` is an integer for every finite double.
SCALE_BITS = 1074
#: Values summed per ``bincount`` (each part < 2^27: sums < 2^53, exact in float64).
BLOCK = 1 << 25
_LOW_BITS = 27
_EXP_OFFSET = 1075  # frexp exponents lie in [-1073, 1024]
_N_EXPONENTS = 2100


@dataclass(frozen=True)
class ExactSum:
    """The exact sum of some doubles, as the integer ``scaled`` = sum x 2^1074."""

    scaled: int = 0

    @classmethod
    def of(cls, values) -> ExactSum:
        """The exact sum of an array of finite doubles."""
        values = np.asarray(values, dtype=np.float64).ravel()
        if not np.isfinite(values).all():
            raise ValueError("ExactSum: values must be finite")
        total = 0
        for begin in range(0, values.size, BLOCK):
            total += _scaled_sum(values[begin: begin + BLOCK])
        return cls(total)

    @classmethod
    def by_group(cls, values, groups, n_groups: int) -> list[ExactSum]:
        """The exact sum of ``values`` within each group ``0..n_groups-1`` (one pass)."""
        values = np.asarray(values, dtype=np.float64).ravel()
        groups = np.asarray(groups, dtype=np.int64).ravel()
        if not np.isfinite(values).all():
            raise ValueError("ExactSum: values must be finite")
        totals = [0] * n_groups
        for begin in range(0, values.size, BLOCK):
            chunk = _scaled_sums(values[begin: begin + BLOCK], groups[begin: begin + BLOCK],
                                 n_groups)
            totals = [a + b for a, b in zip(totals, chunk)]
        return [cls(total) for total in totals]

    def __add__(self, other: ExactSum) -> ExactSum:
        return ExactSum(self.scaled + other.scaled)

    def value(self) -> float:
        """The sum, rounded once to the nearest double."""
        return float(Fraction(self.scaled, 1 << SCALE_BITS))

    def mean(self, count: int) -> float | None:
        """The sum divided by ``count``, rounded once (None when ``count`` is 0)."""
        if count == 0:
            return None
        return float(Fraction(self.scaled, count << SCALE_BITS))

    def to_json(self) -> str:
        """The scaled integer as a decimal string (JSON has no big integers)."""
        return str(self.scaled)

    @classmethod
    def from_json(cls, text: str) -> ExactSum:
        """Inverse of :meth:`to_json`."""
        return cls(int(text))


def _scaled_sum(values: np.ndarray) -> int:
    r""":math:`\sum_i x_i 2^{1074}` of at most :data:`BLOCK` doubles, exactly."""
    return _scaled_sums(values, np.zeros(values.size, dtype=np.int64), 1)[0]


def _scaled_sums(values: np.ndarray, groups: np.ndarray, n_groups: int) -> list[int]:
    r"""Per group, :math:`\sum_i x_i 2^{1074}` of at most :data:`BLOCK` doubles, exactly."""
    if values.size == 0:
        return [0] * n_groups
    fraction, exponent = np.frexp(values)
    mantissa = (fraction * float(1 << 53)).astype(np.int64)  # exact: |f| < 1, 53 bits
    magnitude = np.abs(mantissa)
    negative = mantissa < 0
    high = (magnitude >> _LOW_BITS).astype(np.float64)
    low = (magnitude & ((1 << _LOW_BITS) - 1)).astype(np.float64)
    high[negative] *= -1
    low[negative] *= -1
    bins = groups * _N_EXPONENTS + exponent.astype(np.int64) + _EXP_OFFSET
    size = n_groups * _N_EXPONENTS
    high_sums = np.bincount(bins, weights=high, minlength=size)
    low_sums = np.bincount(bins, weights=low, minlength=size)
    totals = [0] * n_groups
    for index in np.flatnonzero((high_sums != 0) | (low_sums != 0)):
        group, e = divmod(int(index), _N_EXPONENTS)
        e -= _EXP_OFFSET  # x = M 2^(e - 53): scaled by 2^1074 -> M 2^(e + 1021)
        part = (int(high_sums[index]) << _LOW_BITS) + int(low_sums[index])
        shift = e + SCALE_BITS - 53
        totals[group] += part << shift if shift >= 0 else part >> -shift
    return totals
