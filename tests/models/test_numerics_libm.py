"""``numerics.libm_expit`` / ``libm_log_expit`` equal SciPy's ``expit`` / ``log_expit`` bit for bit.

Both paths (element by element with :mod:`math` for small inputs, ``scipy.special`` for large
ones) are compared with ``scipy.special`` on the same values, including the overflow edge near
``x = -709.78``, the subnormal range, infinities and NaN. Bits are compared (``view(int64)``),
so a last-bit difference fails.
"""

import numpy as np
import pytest
from scipy import special

from dprisk.models import numerics

EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, -709.78, -709.79, -745.1, -746.0, 710.0,
         5e-324, -5e-324, 36.7, -36.7, 1e308, -1e308]


def _values(n):
    rng = np.random.default_rng(20261123)
    return np.concatenate([rng.normal(0, 5, n), rng.normal(0, 300, n), EDGES])


@pytest.mark.parametrize(("ours", "scipy_func"), [(numerics.libm_expit, special.expit),
                                                   (numerics.libm_log_expit, special.log_expit)])
@pytest.mark.parametrize("n", [1000, 3 * numerics.LIBM_MAX_SIZE])  # math path, scipy path
def test_bitwise_equal_to_scipy(ours, scipy_func, n):
    x = _values(n)
    got = np.asarray(ours(x))
    assert got.shape == x.shape
    assert np.array_equal(got.view(np.int64), scipy_func(x).view(np.int64))


@pytest.mark.parametrize(("ours", "scipy_func"), [(numerics.libm_expit, special.expit),
                                                   (numerics.libm_log_expit, special.log_expit)])
def test_shapes_and_scalars(ours, scipy_func):
    assert ours(1.5) == scipy_func(1.5) and isinstance(ours(1.5), np.floating)
    grid = np.linspace(-40, 40, 12).reshape(3, 4)
    assert np.array_equal(ours(grid), scipy_func(grid))
    assert np.array_equal(ours([1, 2]), scipy_func([1, 2]))
    small = np.array([0.25, -3.0], dtype=np.float32)  # float32: SciPy's float32 loop
    assert ours(small).dtype == scipy_func(small).dtype


def _expit_two_quotients(x):
    small = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + small), small / (1.0 + small))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_expit_is_its_two_quotient_form_bit_for_bit(dtype):
    """``numerics.expit`` (one quotient, numerator chosen first) equals both quotients' form."""
    x = np.concatenate([_values(4000), [745.2, -745.2, 1e-320]])
    x = np.clip(x, np.finfo(dtype).min, np.finfo(dtype).max).astype(dtype)  # finite casts
    for values in (x, x[:4000].reshape(40, 100), x[7]):
        got, reference = numerics.expit(values), _expit_two_quotients(values)
        assert got.dtype == reference.dtype and got.shape == reference.shape
        assert got.tobytes() == reference.tobytes()
