"""The expected true posterior over chunks of e values equals the loop over e bit for bit.

:func:`dprisk.inference.attribute.design._expected_posterior_kernel` evaluates a chunk of
noise values ``e`` at once, each ``e`` with the arithmetic and reduction order of one ``e``
alone, and sums the terms in the order of ``e``: tolerance is exact equality.
"""

import numpy as np
import pytest

from dprisk.inference.attribute import design
from dprisk.inference.attribute.design import noise_grid
from dprisk.models.mechanism.discrete_gaussian import logpmf_kernel
from dprisk.models.numerics import logsumexp


def _loop_over_e(rho, prior, t, tail_mass):
    eta = noise_grid(rho, tail_mass)
    log_f = logpmf_kernel(eta, np.zeros_like(eta), rho)
    others = np.delete(prior, t)
    values, counts = np.unique(others[others > 0], return_counts=True)
    log_ratio = np.log(values) - np.log(prior[t])
    lowest = min(-40.0, float(np.log(prior[t])) - 40.0)
    u = np.arange(lowest, 4.0 + design.LOG_LAMBDA_STEP, design.LOG_LAMBDA_STEP)
    total = 0.0
    for e, log_f_e in zip(eta, log_f, strict=True):
        log_rate = (u[:, None, None] + log_ratio[None, :, None]
                    + 2.0 * rho * (eta - 1 - e)[None, None, :])
        with np.errstate(over="ignore"):
            log_phi = logsumexp(log_f[None, None, :] - np.exp(log_rate))
        log_integrand = u - np.exp(u) + (counts * log_phi).sum(-1)
        total += np.exp(log_f_e + logsumexp(log_integrand) + np.log(design.LOG_LAMBDA_STEP))
    return float(total)


@pytest.mark.parametrize("chunk_cells", [1, 5000, design._E_CHUNK_CELLS])
@pytest.mark.parametrize(("rho", "prior", "t"), [
    (0.1, np.full(5, 0.2), 0),
    (1.0, np.array([0.5, 0.2, 0.2, 0.1]), 3),
])
def test_chunks_equal_the_loop_over_e(monkeypatch, chunk_cells, rho, prior, t):
    monkeypatch.setattr(design, "_E_CHUNK_CELLS", chunk_cells)
    rho = np.asarray(rho)
    got = design._expected_posterior_kernel(rho, prior, t, 1e-12)
    assert got == _loop_over_e(rho, prior, t, 1e-12)
