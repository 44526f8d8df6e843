"""The batch projection and rounding equal their row-by-row rules at every block count.

:func:`dprisk.inference.product.projection_kernels.project_floor_rows` sorts up to
``NETWORK_BLOCKS`` blocks with a sorting network on the transpose and
``histogram_tree._largest_remainder_rows`` ranks them by comparisons; wider rows take the
sorts along the rows. Both must give the integers of :func:`project_floor` (one total at a
time) and the entries a double argsort ranks first.
"""

import numpy as np
import pytest

from dprisk.inference.product import histogram_tree
from dprisk.inference.product.projection_kernels import (
    NETWORK_BLOCKS,
    project_floor,
    project_floor_rows,
)


@pytest.mark.parametrize("n_blocks", [1, 2, 3, NETWORK_BLOCKS, NETWORK_BLOCKS + 2])
def test_rows_equal_project_floor_one_total_at_a_time(n_blocks):
    rng = np.random.default_rng(n_blocks)
    b = rng.integers(-4, 9, size=(400, n_blocks))
    s = rng.integers(0, 15, size=400)
    floors, active, remainder = project_floor_rows(b, s)
    for total in np.unique(s):
        rows = s == total
        want = project_floor(b[rows], int(total))
        np.testing.assert_array_equal(floors[rows], want[0])
        np.testing.assert_array_equal(active[rows], want[1])
        np.testing.assert_array_equal(remainder[rows], want[2])


@pytest.mark.parametrize("n_blocks", [1, 2, 3, NETWORK_BLOCKS, NETWORK_BLOCKS + 2])
def test_rounding_ranks_as_a_double_argsort(n_blocks):
    rng = np.random.default_rng(10 + n_blocks)
    floors, active, remainder = project_floor_rows(rng.integers(-4, 9, size=(400, n_blocks)),
                                                   rng.integers(0, 15, size=400))
    got = histogram_tree._largest_remainder_rows(floors, active, remainder,
                                                 np.random.default_rng(3))
    key = np.where(active, np.random.default_rng(3).random(floors.shape), np.inf)
    rank = np.argsort(np.argsort(key, axis=1), axis=1)
    np.testing.assert_array_equal(got, floors + (rank < remainder[:, None]))
    np.testing.assert_array_equal(got.sum(axis=1), floors.sum(axis=1) + remainder)
