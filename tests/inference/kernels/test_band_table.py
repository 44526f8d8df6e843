"""The banded joint table and chain transitions against the row-by-row ones, bit for bit.

:func:`band_window_table` shares the ``x1*``-free part of each ``(x2*, y1*)`` table between
its ``x1*`` values; every element is the same float operation on the same operands as in
:func:`window_table`, so the arrays must be EQUAL (not close), for each prior kind (weights
0, -log(count) and point masses) and a shifted ``known``; band_transitions (widened
window, variant or exact X1 update) against chain_transitions of the flattened releases.
"""

import numpy as np
import pytest
from census_values import RHO_BLOCK, RHO_BLOCK_GROUP

from dprisk.inference.kernels.table_kernels import (
    band_window_table,
    initial_halfwidth,
    window_table,
)
from dprisk.inference.studies.finite_draws import band_transitions, chain_transitions
from dprisk.models.scenario import Scenario

CASES = [("improper", 0), ("improper", 3), ("truncated:10", 0), ("truncated:10", 3),
         ("point:25", 0), ("point:1", 1)]


def _releases(seed=1, cells=200, band=8):
    rng = np.random.default_rng(seed)
    x2s = rng.integers(-10, 40, cells)
    y1s = rng.integers(-80, 80, cells)
    x1_band = rng.integers(-20, 20, cells)[:, None] + np.arange(-band // 2, band // 2)
    return x1_band, x2s, y1s


@pytest.mark.parametrize(("prior", "known"), CASES)
def test_band_window_table_is_window_table_of_the_rows(prior, known):
    params = Scenario.two_level(rho1=RHO_BLOCK, rho2=RHO_BLOCK_GROUP, d=27, p=0.3, known=known,
                                prior=prior)
    x1_band, x2s, y1s = _releases()
    band = x1_band.shape[1]
    halfwidth = initial_halfwidth(params.precision, 1e-12)
    banded = band_window_table(x1_band, x2s, y1s, params, halfwidth)
    rows = window_table(x1_band.ravel(), np.repeat(x2s, band), np.repeat(y1s, band), params,
                        halfwidth)
    for name in ("k2_start", "log_joint", "log_branch_mass", "log_neglected", "feasible"):
        np.testing.assert_array_equal(getattr(banded, name), getattr(rows, name), err_msg=name)


@pytest.mark.parametrize("variant", [False, True])
@pytest.mark.parametrize(("prior", "known"), [("improper", 0), ("truncated:10", 2),
                                              ("point:25", 0)])
def test_band_transitions_are_chain_transitions_of_the_rows(prior, known, variant):
    params = Scenario.two_level(rho1=RHO_BLOCK, rho2=0.05, d=27, p=0.5, known=known,
                                prior=prior)
    x1_band, x2s, y1s = _releases(seed=2, cells=60)
    band = x1_band.shape[1]
    got = band_transitions(x1_band, x2s, y1s, params, variant=variant)
    want = chain_transitions(x1_band.ravel(), np.repeat(x2s, band), np.repeat(y1s, band),
                             params, variant=variant)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
