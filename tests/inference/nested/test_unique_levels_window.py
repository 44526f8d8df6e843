"""Tests of the sorted sweep's window pairs by expit's Taylor expansion over cells (issue 36).

References: the expansion's truncation against expit itself (its bound is rigorous, so the
observed error must stay below it), and the window sum against ``math.fsum`` of every pair.
"""

import math

import numpy as np
import pytest

from dprisk.inference.nested import unique_levels_sweep as sweep
from dprisk.inference.nested import unique_levels_window as window
from dprisk.models.numerics import expit


@pytest.mark.parametrize("radius", [0.05, 0.3, 0.7])
def test_taylor_truncation_stays_within_its_bound(radius):
    """``|expit(x0 + h) - sum_{n <= N} c_n(x0) h^n| <= bound`` for ``|h| <= r`` and real x0
    (allowance 1e-6: the bound far above double rounding, so the check is meaningful)."""
    order, bound = window.taylor_order(radius, 1e-6)
    assert bound <= 1e-6
    x0 = np.linspace(-30.0, 30.0, 241)
    c = window._taylor_coefficients(x0, order)
    for h in np.linspace(-radius, radius, 21):
        series = sum(c[n] * h**n for n in range(order + 1))
        assert np.abs(series - expit(x0 + h)).max() <= bound


def test_window_sums_match_every_pair():
    """Whole cells by the expansion, the window's ends and the wide blocks pair by pair,
    against ``math.fsum`` of ``w_a w_b expit(u_a + s_b)`` over every window pair; a dense
    ``B`` (many atoms per cell) and one wide block, so every path runs: rtol 1e-13."""
    rng = np.random.default_rng(11)
    s_b = np.sort(rng.normal(0.0, 0.3, 20_000))
    w_b = rng.random(s_b.size) / s_b.size
    s_a = np.sort(np.concatenate([rng.normal(0.0, 0.05, 200), [2.0, 2.5]]))
    w_a = rng.random(s_a.size) / s_a.size
    logit_p = -0.2
    starts, ends = sweep._blocks(s_a.size)
    delta = 0.1
    lower = np.searchsorted(s_b, -delta - (logit_p + s_a[ends - 1]), side="right")
    upper = np.searchsorted(s_b, delta - (logit_p + s_a[starts]), side="left")
    cells = window.window_cells(s_a, w_a, s_b, w_b, starts, ends, 1e-20)
    assert not cells.grouped.all() and cells.grouped.any()
    u = logit_p + s_a
    exp_neg_s = np.exp(-s_b)

    def pairwise(blocks):
        return sweep._window_sum(u, w_a, exp_neg_s, w_b, starts, ends, lower, upper, blocks)

    got = window.window_sums(logit_p, u, w_a, exp_neg_s, w_b, starts, ends, lower, upper,
                             cells, pairwise)
    terms = []
    for blk in range(starts.size):
        b = np.arange(lower[blk], upper[blk])
        for a in range(starts[blk], ends[blk]):
            terms += list(w_a[a] * w_b[b] * expit(u[a] + s_b[b]))
    assert got == pytest.approx(math.fsum(terms), rel=1e-13)
    assert cells.bound <= 1e-20
