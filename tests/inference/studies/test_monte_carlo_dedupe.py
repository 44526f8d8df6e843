"""The int64-keyed de-duplication of simulated releases equals ``np.unique(axis=0)``."""

import numpy as np
import pytest

from dprisk.inference.studies.monte_carlo import unique_releases


@pytest.mark.parametrize("seed", range(20))
def test_unique_releases_equals_numpy_unique_rows(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 500))
    scale = rng.integers(1, 10**6, size=3)
    releases = rng.integers(-6, 6, size=(n, 3)) * scale + rng.integers(-10**7, 10**7, size=3)
    unique, inverse = np.unique(releases, axis=0, return_inverse=True)
    got_unique, got_inverse = unique_releases(releases)
    assert got_unique.dtype == np.int64 and got_inverse.ndim == 1
    np.testing.assert_array_equal(got_unique, unique)
    np.testing.assert_array_equal(got_inverse, inverse.ravel())
    np.testing.assert_array_equal(got_unique[got_inverse], releases)


def test_unique_releases_beyond_the_int64_key_falls_back():
    releases = np.array([[0, 0, 0], [2**40, -(2**40), 2**40], [0, 0, 0], [-(2**40), 5, 1]])
    unique, inverse = np.unique(releases, axis=0, return_inverse=True)
    got_unique, got_inverse = unique_releases(releases)
    np.testing.assert_array_equal(got_unique, unique)
    np.testing.assert_array_equal(got_inverse, inverse.ravel())
