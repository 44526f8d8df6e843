"""windowed_expit evaluates F(a_r + w(delta_r - k)) once per distinct pair: the direct values.

Both of its paths (the table of distinct pairs when it is smaller than the cells, the cells
otherwise) must give the direct evaluation bit for bit, for scipy's and dprisk's expit, with
repeated and signed-zero row terms; the variant's update on a table's windows
(x1_update_window) is that of variant_x1_logit.
"""

import numpy as np
import pytest
from scipy.special import expit as scipy_expit

from dprisk.inference.studies.logit_tables import windowed_expit
from dprisk.inference.studies.variant import (
    variant_x1_logit,
    x1_release_term,
    x1_update_window,
    x1_window_term,
)
from dprisk.models.numerics import expit
from dprisk.models.scenario import Scenario

RHO1, D = 0.0992, 27


def _term(delta):
    return x1_window_term(delta, 0, rho1=RHO1, d=D, known=0)


def _direct(row_term, base, width, function):
    return function(row_term[:, None] + _term(base[:, None] - np.arange(width)))


@pytest.mark.parametrize("function", [scipy_expit, expit])
@pytest.mark.parametrize("distinct", [3, 400])  # the table path, then the direct one
def test_windowed_expit_is_the_direct_evaluation(function, distinct):
    rng = np.random.default_rng(5)
    rows, width = 500, 29
    values = RHO1 * (2.0 * rng.integers(-40, 40, distinct) - 1.0)
    values[0] = -0.0
    row_term = values[rng.integers(0, distinct, rows)]
    base = rng.integers(-60, 90, rows)
    got = windowed_expit(row_term, base, width, _term, function)
    np.testing.assert_array_equal(got, _direct(row_term, base, width, function))
    assert got.shape == (rows, width) and got.flags.writeable


def test_windowed_expit_of_no_rows():
    assert windowed_expit(np.empty(0), np.empty(0, np.int64), 7, _term, expit).shape == (0, 7)


def test_x1_update_window_is_the_variant_logit():
    params = Scenario.two_level(rho1=RHO1, rho2=0.25, d=D, p=0.4, known=2,
                                prior="improper")
    x1s, y1s = np.array([0, 3, 3, 9, -4]), np.array([5, -2, 7, 7, 0])
    k2_start = np.array([1, 4, -3, 0, 2])
    width = 11
    k2 = k2_start[:, None] + np.arange(width)
    want = expit(variant_x1_logit(x1s[:, None], y1s[:, None], k2, rho1=RHO1, d=D, p=0.4,
                                  known=2))
    release = x1_release_term(x1s - 2, rho1=RHO1, p=0.4)
    for base in (y1s - k2_start + 2, (y1s - k2_start + 2).astype(float)):
        np.testing.assert_array_equal(x1_update_window(release, base, width, params), want)
