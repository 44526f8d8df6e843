"""Baseline of issue 36: the Figure 5 P[correct] curve by straightforward NumPy sums.

What a user would write from the model's formulas (the paper's §3: the two-level model of its
Figure 5) with NumPy alone, nothing of ``dprisk`` imported: the 2020 Census rho of the block and
block group from the exact fractions, truth ``x1 = 1`` (``m = 0``), ``x2`` over Figure 5's grid
(``validation.figures.two_level.FIGURE5_X2``), ``y1 = x2 - 1``, ``d = 27`` other blocks,
improper uniform prior on ``X2 | X1`` and ``p = 1/2``; then

.. math::

    P[\\text{correct}] = \\sum_{x_1^*, x_2^*, y_1^*} P[x_1^*]\\,P[x_2^*]\\,P[y_1^*]\\;
        1\\Big[\\pi(1 \\mid x^*) > \\tfrac12\\Big],\\qquad
    \\pi(k_1 \\mid x^*) \\propto \\sum_{k_2 \\ge k_1} e^{-\\rho_1 (x_1^* - k_1)^2
        - \\rho_2 (x_2^* - k_2)^2 - \\frac{\\rho_1}{d} (y_1^* - k_2 + k_1)^2},

with the releases drawn from the TRUE mechanism: ``x1* ~ DG(1, 1/(2 rho1))``,
``x2* ~ DG(x2, 1/(2 rho2))`` and ``y1* = y1 + `` the exact sum of ``d`` iid
``DG(0, 1/(2 rho1))`` (27 convolutions), while the adversary's posterior uses the
``DG(0, d/(2 rho1))`` approximation of that sum (the model). The triple sum over the release
grid is a broadcast 3-D array; the posterior's sum over ``k2`` a loop adding one 3-D term per
``k2`` for each ``k1``. Grids reach where the neglected probability is below 1e-16, so the
curve is exact to double precision: ``check`` compares it with the suite's
``p_correct_two_level`` at a tail mass of 1e-15 (agreement within :data:`TOLERANCE`).

``python benchmarks/fig5_baseline.py`` prints the curve (one process: the whole-process time
of this script is issue 36's baseline, ``bench_reproduce``); ``--check`` also compares it.
"""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np

#: Figure 5's x2 grid (validation.figures.two_level.FIGURE5_X2).
X2_GRID = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30)
#: Other blocks in the block group.
D = 27
#: The 2020 Census's zCDP budget and the shares of the block and block group (paper Table 2).
RHO_TOTAL = Fraction(256, 100)
RHO1 = float(RHO_TOTAL * Fraction(165, 4099) * Fraction(3945, 4097))
RHO2 = float(RHO_TOTAL * Fraction(1256, 4099) * Fraction(1288, 4099))
#: Half-widths of the grids: ``rho * K**2 >= 40`` (mass beyond below 1e-17).
K1, K2 = 21, 13
#: Agreement with the suite (its sums differ in order and in its tables' last bits only).
TOLERANCE = 1e-12


def dg_pmf(half_width: int, rho: float) -> np.ndarray:
    """``P[eta = k]`` for ``k = -half_width..half_width``, eta ~ DG(0, 1/(2 rho))."""
    k = np.arange(-200, 201)
    z = np.exp(-rho * k**2).sum()
    k = np.arange(-half_width, half_width + 1)
    return np.exp(-rho * k**2) / z


def noise_sum_pmf(d: int, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Values and pmf of the sum of ``d`` iid DG(0, 1/(2 rho)), cut where it is below 1e-19."""
    one = dg_pmf(K1, rho)
    pmf = one
    for _ in range(d - 1):
        pmf = np.convolve(pmf, one)
    values = np.arange(pmf.size) - (pmf.size - 1) // 2
    keep = pmf > 1e-19
    return values[keep], pmf[keep]


def p_correct(x2: int) -> float:
    """P[correct decision about X1] at truth ``x1 = 1``, ``x2``, ``y1 = x2 - 1``."""
    y1 = x2 - 1
    s_values, s_pmf = noise_sum_pmf(D, RHO1)
    x1s = 1 + np.arange(-K1, K1 + 1)
    x2s = x2 + np.arange(-K2, K2 + 1)
    y1s = y1 + s_values
    p_release = (dg_pmf(K1, RHO1)[:, None, None] * dg_pmf(K2, RHO2)[None, :, None]
                 * s_pmf[None, None, :])
    a, b, c = x1s[:, None, None], x2s[None, :, None], y1s[None, None, :]
    # the posterior's sum over k2 >= k1: as a function of k2 a term is a Gaussian of precision
    # rho2 + rho1/d centred within 3 of x2* on this grid, so k2 <= max x2* + 25 leaves out
    # below e^-100 of the largest term
    top = x2s.max() + 25
    weight = {0: np.zeros(p_release.shape), 1: np.zeros(p_release.shape)}
    for k1 in (0, 1):
        for k2 in range(k1, top + 1):
            weight[k1] += np.exp(-RHO1 * (a - k1) ** 2 - RHO2 * (b - k2) ** 2
                                 - RHO1 / D * (c - k2 + k1) ** 2)
    decide_one = weight[1] > weight[0]  # posterior of X1 = 1 above 1/2 (prior 1/2 each)
    return float((p_release * decide_one).sum())


def curve() -> dict[int, float]:
    """The Figure 5 curve, ``{x2: P[correct]}``."""
    return {x2: p_correct(x2) for x2 in X2_GRID}


def check(values: dict[int, float]) -> float:
    """Largest ``|baseline - suite|`` over the curve (the suite at a tail mass of 1e-15)."""
    from dprisk.inference.studies.p_correct import p_correct_two_level

    return max(abs(value - p_correct_two_level(x2=x2, rho1=RHO1, rho2=RHO2, d=D, x1=1,
                                                 tail_mass=1e-15).p_correct)
               for x2, value in values.items())


def main(argv: list[str]) -> int:
    values = curve()
    for x2, value in values.items():
        print(f"x2 = {x2:2d}  P[correct] = {value:.15f}")
    if "--check" in argv:
        gap = check(values)
        print(f"largest difference from the suite: {gap:.3g} (tolerance {TOLERANCE:g})")
        return 0 if gap <= TOLERANCE else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
