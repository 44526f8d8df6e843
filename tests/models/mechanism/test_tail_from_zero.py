"""The DG upper tail from 0, P[X - mu >= 0] = (Z + 1) / (2 Z), without summing terms.

dprisk.models.mechanism.discrete_gaussian._log_tail_sum takes sum_{k >= 0} e^{-rho k^2} =
(Z(rho) + 1)/2 (symmetry: Z = 1 + 2 sum_{k >= 1}) from log Z's series. Checked against the
direct sum of the terms (all terms above 1e-300 of the first kept, the rest below 1e-280 of
the total), to 1e-15 absolute in the log: the direct sum of at most 1e6 positive terms in
float64 has relative error below 1e6 x 1.1e-16 = 1.1e-10 in the worst case, in practice a few
ulps (pairwise summation), so the bound below states the observed rounding with a margin of 4.
At rho = 1e-16 (6.5e7 terms: a MemoryError under 2 GiB before) it is 1/2 + 1/(2 Z) with
Z = sqrt(pi / rho) to 1e-300 (Poisson summation: the correction is 2 e^{-pi^2 / rho}).
"""

import math

import numpy as np
import pytest

from dprisk.models.mechanism.discrete_gaussian import log_tail_kernel
from dprisk.models.numerics import dg_log_normalizer


@pytest.mark.parametrize("rho", [20.0, 3.0, 1.0, 0.1, 1e-3, 1e-6])
def test_tail_from_zero_matches_the_direct_sum(rho):
    k = np.arange(0, int(math.sqrt(690.0 / rho)) + 2, dtype=float)  # e^{-rho k^2} >= 1e-300
    direct = math.log(np.exp(-rho * k * k).sum()) - float(dg_log_normalizer(np.array(rho)))
    got = float(log_tail_kernel(np.array([0]), np.array([rho]))[0])
    assert abs(got - direct) <= 1e-15, (got, direct)


def test_tail_from_zero_at_a_tiny_rho_is_exact_and_bounded():
    rho = 1e-16
    got = float(log_tail_kernel(np.array([0]), np.array([rho]))[0])
    expected = math.log(0.5 + 0.5 / math.sqrt(math.pi / rho))
    assert abs(got - expected) <= 4e-16, (got, expected)


def test_tail_beyond_zero_at_a_tiny_rho_sums_its_blocks():
    r"""Starts above 0 at rho = 1e-13 (2.2e7 terms per row: summed in blocks of 2**22) against
    Euler-Maclaurin in mpmath,

    .. math:: \sum_{k \ge a} e^{-\rho k^2} = \tfrac12\sqrt{\pi/\rho}\,\operatorname{erfc}(a
              \sqrt\rho) + \tfrac12 e^{-\rho a^2} + \tfrac16 \rho a e^{-\rho a^2} + R,

    :math:`|R| \lesssim \rho^{3/2} e^{-\rho a^2}` (1e-20 of the sum), and
    :math:`Z = \sqrt{\pi/\rho}` (the correction :math:`2 e^{-\pi^2/\rho}` underflows). Only the
    start-0 row of this path was tested: its blocks' sum doubled passed every test. The float
    sum of six pairwise-summed blocks: a few ulps, 1e-13 in the log with a wide margin."""
    import mpmath as mp

    rho = 1e-13
    starts = np.array([0, 1, 5_000_000])
    got = log_tail_kernel(starts, np.full(starts.shape, rho))
    with mp.workdps(40):
        r = mp.mpf(rho)
        for a, value in zip(starts, got, strict=True):
            a = mp.mpf(int(a))
            head = mp.exp(-r * a * a)
            total = mp.sqrt(mp.pi / r) / 2 * mp.erfc(a * mp.sqrt(r)) + head / 2 + r * a * head / 6
            want = float(mp.log(total) - mp.log(mp.sqrt(mp.pi / r)))
            assert abs(float(value) - want) <= 1e-13, (int(a), float(value), want)
