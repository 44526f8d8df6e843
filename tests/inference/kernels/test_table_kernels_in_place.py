"""The in-place arithmetic of the table kernels gives the textbook expressions bit for bit.

:func:`relative_log_joint` and :func:`branch_conditionals` write over their work arrays to
save allocations (the risk studies build hundreds of (R, 2, W) tables); the values must be
those of the plain expressions, in the same floating-point order (tolerance: exact equality,
the same operations on the same operands).
"""

import numpy as np
import pytest

from dprisk.inference.kernels.table_kernels import branch_offset, relative_log_joint
from dprisk.inference.studies.setup import branch_conditionals, posterior_table
from dprisk.models.scenario import Scenario

PARAMS = Scenario.two_level(rho1=0.0992, rho2=0.2465, d=27, p=0.5, known=0,
                            prior="improper")


def _plain(params, b, gamma, delta_beta, r, j_minus_r):
    step = b * (params.rho1 / params.d) / params.precision
    j_plus_r = (2 * np.asarray(r, dtype=np.int64) + j_minus_r).astype(float)
    offset = np.asarray(j_minus_r, dtype=float) - step
    quadratic = params.precision * offset * (j_plus_r - 2.0 * gamma - step)
    return branch_offset(b, delta_beta) - quadratic


@pytest.mark.parametrize("b", [0, 1])
def test_relative_log_joint_is_the_plain_expression(b):
    rng = np.random.default_rng(7)
    gamma = rng.normal(0, 30, (40, 1))
    delta_beta = rng.normal(0, 5, (40, 1))
    r = rng.integers(-50, 50, (40, 1))
    j_minus_r = rng.integers(-20, 20, (1, 25)) + np.zeros((40, 1), dtype=np.int64)
    got = relative_log_joint(PARAMS, b, gamma, delta_beta, r, j_minus_r)
    assert np.array_equal(got, _plain(PARAMS, b, gamma, delta_beta, r, j_minus_r))
    # scalar release, array of references (the Gibbs sampler's call)
    k2 = np.arange(-10, 10)
    got = relative_log_joint(PARAMS, b, 1.25, -0.5, k2, 0)
    assert np.array_equal(got, _plain(PARAMS, b, 1.25, -0.5, k2, 0))
    assert np.ndim(relative_log_joint(PARAMS, b, 1.25, -0.5, 3, 0)) == 0


@pytest.mark.parametrize("prior", ["improper", "point:25"])
def test_branch_conditionals_is_the_plain_expression(prior):
    params = Scenario.two_level(rho1=0.0992, rho2=0.2465, d=27, p=0.5, known=0, prior=prior)
    table = posterior_table(0, np.arange(-5, 40), np.arange(10, 55), params)
    with np.errstate(invalid="ignore"):
        plain = np.exp(table.log_joint - table.log_branch_mass[:, :, None])
    plain = np.where(np.isfinite(table.log_joint), plain, 0.0)
    assert np.array_equal(branch_conditionals(table), plain)
