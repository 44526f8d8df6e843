"""The expected true posterior by the correlation over lags equals the log-sum-exp loop over e.

:func:`dprisk.inference.attribute.design.expected_true_posterior` tabulates the survival
factor on the lags ``eta - e`` and correlates it with the noise pmf (issue 36); the
reference here is the former evaluation, one ``e`` at a time with a log-sum-exp over
``eta`` for every ``(lambda, group)``. Both evaluate the same finite sums. Tolerance: the
log-sum-exp form rounds ``log phi`` to about 1e-16 absolute, independently per
``(lambda, e)``, and the exponent multiplies it by the number of other cells (up to 2,015
here): observed differences up to 5.3e-14 relative over the report's K-cell grid; the test
allows 3e-13. Against an extended-precision (long double) evaluation of the same sums the
correlation form agrees to 1e-15 (observed 8.7e-16), so the test asserts 4e-15 there.
"""

import numpy as np
import pytest

from dprisk.inference.attribute import design
from dprisk.inference.attribute.design import expected_true_posterior, noise_grid
from dprisk.models.mechanism.discrete_gaussian import logpmf_kernel
from dprisk.models.numerics import logsumexp


def _setup(rho, prior, t, tail_mass, dtype=float):
    eta = noise_grid(rho, tail_mass)
    log_f = logpmf_kernel(eta, np.zeros_like(eta), rho)
    others = np.delete(prior, t)
    values, counts = np.unique(others[others > 0], return_counts=True)
    log_ratio = np.log(values.astype(dtype)) - np.log(dtype(prior[t]))
    lowest = min(-40.0, float(np.log(prior[t])) - 40.0)
    u = np.arange(lowest, 4.0 + design.LOG_LAMBDA_STEP, design.LOG_LAMBDA_STEP).astype(dtype)
    return eta, log_f, counts, log_ratio, u


def _loop_over_e(rho, prior, t, tail_mass):
    """The former kernel: for each e, log phi by a log-sum-exp over eta."""
    eta, log_f, counts, log_ratio, u = _setup(rho, prior, t, tail_mass)
    total = 0.0
    for e, log_f_e in zip(eta, log_f, strict=True):
        log_rate = (u[:, None, None] + log_ratio[None, :, None]
                    + 2.0 * rho * (eta - 1 - e)[None, None, :])
        with np.errstate(over="ignore"):
            log_phi = logsumexp(log_f[None, None, :] - np.exp(log_rate))
        log_integrand = u - np.exp(u) + (counts * log_phi).sum(-1)
        total += np.exp(log_f_e + logsumexp(log_integrand) + np.log(design.LOG_LAMBDA_STEP))
    return float(total)


def _long_double(rho, prior, t, tail_mass):
    """The same sums with every operation after log f in extended precision."""
    ld = np.longdouble
    eta, log_f, counts, log_ratio, u = _setup(rho, prior, t, tail_mass, ld)
    f = np.exp(log_f.astype(ld))
    lags = eta[None, :] - eta[:, None]  # (e, eta)
    survive = np.exp(-np.exp(u[:, None, None, None] + log_ratio[None, :, None, None]
                             + 2 * ld(float(rho)) * (lags - 1)[None, None]))
    phi = (survive * f).sum(-1)  # (u, group, e)
    log_integrand = (u - np.exp(u))[:, None] + (counts[None, :, None] * np.log(phi)).sum(1)
    return float((np.exp(log_integrand) * f[None, :]).sum() * ld(design.LOG_LAMBDA_STEP))


CASES = [
    (0.1, np.full(5, 0.2), 0),
    (1.0, np.array([0.5, 0.2, 0.2, 0.1]), 3),
    (0.08, np.array([0.05, 0.6, 0.35]), 0),
    (0.1, np.full(2016, 1 / 2016), 0),
    (3.0, np.r_[10.0, np.ones(863)] / 873.0, 0),
]


@pytest.mark.parametrize(("rho", "prior", "t"), CASES)
def test_correlation_equals_the_log_sum_exp_loop(rho, prior, t):
    got = expected_true_posterior(rho, prior=prior, true_cell=t, tail_mass=1e-12)
    want = _loop_over_e(np.asarray(rho), prior, t, 1e-12)
    assert got == pytest.approx(want, rel=3e-13)


@pytest.mark.parametrize(("rho", "prior", "t"), CASES)
def test_correlation_matches_extended_precision(rho, prior, t):
    got = expected_true_posterior(rho, prior=prior, true_cell=t, tail_mass=1e-12)
    assert got == pytest.approx(_long_double(np.asarray(rho), prior, t, 1e-12), rel=4e-15)


def test_group_chunks_change_only_the_order_of_the_group_sum(monkeypatch):
    """Chunks of groups add the same terms of ``sum_g counts_g log phi_g`` in another order."""
    prior = np.array([0.3, 0.2, 0.15, 0.15, 0.1, 0.05, 0.05])
    whole = expected_true_posterior(0.2, prior=prior, true_cell=1, tail_mass=1e-12)
    monkeypatch.setattr(design, "_GROUP_CHUNK_CELLS", 1)  # one group per chunk
    assert expected_true_posterior(0.2, prior=prior, true_cell=1,
                                   tail_mass=1e-12) == pytest.approx(whole, rel=1e-15)
