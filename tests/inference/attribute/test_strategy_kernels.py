"""The fast kernels of the strategy adversary against their direct spellings.

The integer scores broadcast each marginal query over the GVHR axes it depends on (int32
when the bound allows); they must equal, exactly, the cell-by-cell gather
``sum_q w_q (2 r_{q, a_q(c)} - 1)`` in int64. The conditional P[MAP = t] must equal the
spelling over the other cells (``np.delete`` of the target, masked bincount) exactly: same
shifts, same counts, same sums.
"""

import numpy as np
import pytest

from dprisk.inference.attribute.strategy import (
    _conditional_p_map,
    _integer_scores,
    _p_map_grid,
    census_block_design,
)


def _reference_scores(residuals, design, skip):
    total = np.zeros((residuals[0].shape[0], design.n_cells), dtype=np.int64)
    for q, name in enumerate(design.names):
        if name != skip:
            total += (design.weights[q] * (2 * residuals[q] - 1))[:, design.cell_maps[q]]
    return total


@pytest.mark.parametrize("scale", [30, 10**9])  # small: int32 path; huge: int64 path
@pytest.mark.parametrize("skip", [None, "detailed"])
def test_factored_integer_scores_equal_the_gather(scale, skip):
    design = census_block_design()
    rng = np.random.default_rng(5)
    residuals = [rng.integers(-scale, scale, (7, size)) for size in design.sizes]
    got = _integer_scores(residuals, design, skip)
    assert got.dtype == (np.int32 if scale == 30 else np.int64)
    np.testing.assert_array_equal(got, _reference_scores(residuals, design, skip))


def _reference_p_map(score, design, prior, log_prior, t):
    from dprisk.inference.attribute.design import noise_grid, tied_log_terms
    from dprisk.inference.two_level.exact import DEFAULT_TAIL_MASS
    from dprisk.models.mechanism.discrete_gaussian import logcdf_kernel
    from dprisk.models.numerics import logsumexp

    rho_det = np.asarray(design.rhos[0])
    others = np.delete(np.arange(design.n_cells), t)
    tied = (score[:, others] == score[:, [t]]) & (prior[others] == prior[t])
    delta = ((score[:, [t]] - score[:, others]) / (2.0 * design.weights[0])
             + (log_prior[t] - log_prior[others]) / (2.0 * rho_det))
    e = noise_grid(rho_det, DEFAULT_TAIL_MASS)
    half = int(e[-1])
    shift = np.ceil(np.clip(delta, -2 * half - 2, 2 * half + 2)).astype(np.int64) + 2 * half + 2
    width = 4 * half + 5
    rows = np.broadcast_to(np.arange(score.shape[0])[:, None] * width, shift.shape)
    keep = ~tied & (prior[others] > 0)
    counts = np.bincount((rows + shift)[keep], minlength=score.shape[0] * width).reshape(
        score.shape[0], width).astype(float)
    table = logcdf_kernel(e[:, None] + np.arange(-2 * half - 2, 2 * half + 3),
                          np.zeros((1, 1), np.int64), rho_det)
    n_tied = tied.sum(-1)
    out = np.empty(score.shape[0])
    for n in np.unique(n_tied):
        sel = n_tied == n
        out[sel] = np.exp(logsumexp(tied_log_terms(rho_det, e, int(n)) + counts[sel] @ table.T))
    return out


@pytest.mark.parametrize("prior_kind", ["uniform", "uneven with zeros"])
def test_conditional_p_map_equals_the_direct_spelling(prior_kind):
    design = census_block_design(queries=("detailed", "votingage", "hhgq"))
    rng = np.random.default_rng(8)
    k, t = design.n_cells, 7
    prior = np.full(k, 1.0 / k)
    if prior_kind != "uniform":
        prior = rng.choice([0.5, 1.0, 2.0], k)
        prior[[3, 11]] = 0.0
        prior /= prior.sum()
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior)
    residuals = [rng.integers(-4, 5, (6, size)) for size in design.sizes]
    score = _integer_scores(residuals, design, "detailed")
    grid = _p_map_grid(design)
    got = _conditional_p_map(score, grid, prior, log_prior, t)
    want = _reference_p_map(score.astype(np.int64), design, prior, log_prior, t)
    np.testing.assert_array_equal(got, want)
    assert np.all((got > 0) & (got < 1))


@pytest.mark.parametrize(("n_tied", "shifts"), [(0, [1]), (2, [-1, 3]), (3, [1, 1, -2, 4])])
def test_shifted_tie_integral_equals_the_expanded_polynomial(n_tied, shifts):
    r""":func:`shifted_tied_log_terms` against the polynomial multiplied out and integrated.

    :math:`\int_0^1 \prod_j (F(e + k_j) + f(e + k_j + 1) u)\, du` with ``numpy``'s
    polynomials (coefficients sums of products of probabilities: no cancellation, float64
    to ~1e-15 relative), the pmf and cdf from the discrete Gaussian module. Gauss-Legendre
    is exact only with enough nodes: two fewer passed the Monte Carlo test (its 4 MCSE
    hide the integral's error, test_strategy.py)."""
    from numpy.polynomial import Polynomial

    from dprisk.inference.attribute.design import shifted_tied_log_terms
    from dprisk.models.mechanism import discrete_gaussian as dg

    rho, e = 0.7, np.arange(-6, 7)
    offsets = [0] * n_tied + shifts
    got = shifted_tied_log_terms(np.asarray(rho), e, n_tied, np.array(shifts, np.int64))
    for value, log_term in zip(e, got, strict=True):
        poly = Polynomial([1.0])
        for k in offsets:
            poly = poly * Polynomial([float(dg.cdf(value + k, 0, rho)),
                                      float(dg.pmf(value + k + 1, 0, rho))])
        antiderivative = poly.integ()
        want = float(dg.logpmf(value, 0, rho)) + np.log(antiderivative(1.0) - antiderivative(0.0))
        assert log_term == pytest.approx(want, rel=0, abs=1e-12)


@pytest.mark.parametrize(("span", "n"), [(1, 5), (10, 3), (50, 1000), (54_000, 60_000),
                                         (10**6, 100)])
def test_distinct_keys_as_np_unique(span, n):
    """The two-level scores' distinct releases: np.unique's values, order and inverse."""
    from dprisk.inference.attribute import two_level

    key = np.random.default_rng(span).integers(0, span, size=n)
    first, inverse = two_level._distinct_keys(key, span)
    values, _, want = np.unique(key, return_index=True, return_inverse=True)
    np.testing.assert_array_equal(key[first], values)
    np.testing.assert_array_equal(inverse, want.ravel())
