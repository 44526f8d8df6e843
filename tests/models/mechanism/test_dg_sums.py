import math

import numpy as np
import pytest

from dprisk.models.mechanism.dg_sums import approximation_pmf, sum_pmf, total_variation
from dprisk.models.mechanism.discrete_gaussian import pmf, variance


def brute_force_sum(n, rho, half=80):
    """n-fold convolution on a wide fixed grid, one factor at a time (independent reference)."""
    k = np.arange(-half, half + 1)
    base = pmf(k, 0, rho)
    out = np.ones(1)
    for _ in range(n):
        out = np.convolve(out, base)
    return np.arange(-n * half, n * half + 1), out


@pytest.mark.parametrize(("n", "rho"), [(1, 0.5), (5, 1.0), (5, 0.099), (7, 2.0), (27, 0.099)])
def test_matches_brute_force_convolution(n, rho):
    exact = sum_pmf(n, rho, tail_mass=1e-15)
    values, reference = brute_force_sum(n, rho)
    assert 1.0 - exact.pmf.sum() < 1e-15 + 1e-14  # neglected mass (+ summation round-off)
    np.testing.assert_allclose(exact.at(values), reference, atol=1e-15, rtol=1e-10)


@pytest.mark.parametrize(("n", "rho"), [(100, 0.02), (1000, 0.0992), (10_000, 0.02)])
def test_neglected_mass_stays_below_tail_mass_for_many_terms(n, rho):
    """The trims of the binary powers compound: a power f^(*2^j) trimmed by delta enters the
    sum up to n / 2^j times. Before, each trim had the same budget, and the neglected mass
    exceeded tail_mass = 5e-10 from about n = 100 (1.03e-9 at n = 100, rho = 0.02; 7.4e-9 at
    n = 1000; 7.3e-8 at 10^4); the two-level studies then stopped with a RuntimeError
    ("release grid leaves out 1.03e-09 >= tail_mass"). The sum is exact to about 1e-16 per
    term: far below the 5e-10 checked."""
    exact = sum_pmf(n, rho, tail_mass=5e-10)
    assert 1.0 - math.fsum(exact.pmf) < 5e-10


def test_moments_are_n_times_the_summand_variance():
    for n, rho in [(27, 0.099), (5, 1.0), (10_000, 0.099)]:
        exact = sum_pmf(n, rho)
        second_moment = float((exact.values.astype(float) ** 2 * exact.pmf).sum())
        assert second_moment == pytest.approx(n * float(variance(rho)), rel=1e-11)
        assert float((exact.values * exact.pmf).sum()) == pytest.approx(0.0, abs=1e-9)


def test_grid_grows_like_sqrt_n():
    # The trims keep the grid at ~ sqrt(n) standard deviations, not n truncated factors.
    # Untrimmed, binary powering would give n * (one factor's grid) points.
    one_factor, large = sum_pmf(1, 0.099), sum_pmf(10_000, 0.099)
    assert large.values.size < 0.05 * 10_000 * one_factor.values.size
    sd = np.sqrt(10_000 * float(variance(0.099)))
    assert large.values.size < 30 * sd


def test_total_variation_of_the_adversarys_approximation():
    # Supplement S2 / Figure 8: the DG(0, n/(2 rho)) approximation is excellent at the Census
    # rho and still good at rho = 1. Brute force TV from the reference convolution:
    for n, rho in [(27, 0.099), (5, 0.099), (27, 1.0), (5, 1.0)]:
        values, reference = brute_force_sum(n, rho)
        brute_tv = 0.5 * np.abs(reference - approximation_pmf(values, n, rho)).sum()
        assert total_variation(n, rho) == pytest.approx(brute_tv, abs=1e-13)
    assert total_variation(27, 0.099) < 1e-12
    assert 1e-4 < total_variation(5, 1.0) < 1e-2


def test_at_outside_grid_is_zero():
    exact = sum_pmf(3, 1.0)
    assert exact.at(10_000) == 0.0
    assert exact.at(0) == pytest.approx(float(brute_force_sum(3, 1.0)[1][240]), rel=1e-12)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: sum_pmf(0, 0.1), "n"),
        (lambda: sum_pmf(2.5, 0.1), "n"),
        (lambda: sum_pmf(3, -0.1), "rho"),
        (lambda: sum_pmf(3, 0.1, tail_mass=0.0), "tail_mass"),
        (lambda: approximation_pmf([0], 3, np.inf), "rho"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_fft_convolution_needs_no_scipy_signal(monkeypatch):
    """Above the direct limit, the FFT path equals np.convolve without importing scipy.signal.

    scipy.signal (which imports scipy.stats, ~1.5 s of CPU) is made unimportable; the
    convolution of two pmf-like vectors then equals the direct sum to FFT round-off,
    ~eps x log2(size) x the largest product sum (1e-16 x 20 x 1, here 1e-14 absolute allowed).
    That it equals scipy.signal.fftconvolve bit for bit is checked in the slow twin below.
    """
    from dprisk.models.mechanism import dg_sums

    monkeypatch.setitem(__import__("sys").modules, "scipy.signal", None)
    rng = np.random.default_rng(5)
    a, b = rng.random(2100), rng.random(1999)
    a, b = a / a.sum(), b / b.sum()
    assert a.size * b.size > dg_sums._DIRECT_CONVOLUTION_LIMIT
    got = dg_sums._convolve(a, b)
    np.testing.assert_allclose(got, np.convolve(a, b), rtol=0, atol=1e-14)
    assert np.all(got >= 0)


@pytest.mark.slow
def test_fft_convolution_is_fftconvolve_bit_for_bit():
    from scipy.signal import fftconvolve

    from dprisk.models.mechanism import dg_sums

    rng = np.random.default_rng(6)
    for _ in range(50):
        a, b = rng.random(rng.integers(2000, 6000)), rng.random(rng.integers(2000, 6000))
        assert np.array_equal(dg_sums._convolve(a, b), np.clip(fftconvolve(a, b), 0.0, None))


@pytest.mark.parametrize(("n", "rho"), [(100, 1e-3), (300, 1e-3), (1000, 1e-5), (300, 1.0)])
def test_neglected_mass_is_below_tail_mass(n, rho):
    """``1 - sum(pmf) < tail_mass``, the documented bound (5e-10: the exact study's share).

    A trim of the power ``f^(*2^k)`` enters the sum ``floor(n / 2^k)`` times; counted once,
    the sum left out 1.5e-9 (n = 100) and 3.5e-9 (n = 300) at rho = 1e-3, and the exact
    two-level study failed ("release grid leaves out 3.53e-09 >= tail_mass"). ``math.fsum``
    of the pmf is exact to its rounding (~1e-16 relative), far below the bound.
    """
    import math

    tail_mass = 5e-10
    assert 1.0 - math.fsum(sum_pmf(n, rho, tail_mass=tail_mass).pmf) < tail_mass


@pytest.mark.parametrize(("n", "rho"), [(10_000, 0.02), (10_000, 0.099), (4096, 0.5)])
def test_many_terms_sum_to_one_within_the_tail_mass_on_both_sides(n, rho):
    """Each convolution is rescaled to its exact mass (module notes): without that, binary
    powering compounds the rounding of the total and the pmf of 10^4 terms summed to
    1 + 1.2e-12 (rho = 0.02) or 1 - 4.9e-13 (rho = 0.099), beyond tail_mass = 1e-15 on either
    side, and the one-sided checks above (1 - sum below a bound of 5e-10) let it pass.
    ``math.fsum`` is exact to ~1e-16 relative and the last rescale's own rounding (a numpy
    sum of ~1e4 terms) is below ~1e-15: allowed 4e-15 beyond [1 - tail_mass, 1]."""
    tail_mass = 1e-15
    total = math.fsum(sum_pmf(n, rho, tail_mass=tail_mass).pmf)
    assert 1.0 - tail_mass - 4e-15 <= total <= 1.0 + 4e-15
