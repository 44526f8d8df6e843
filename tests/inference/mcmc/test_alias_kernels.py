"""``gibbs.alias_table`` builds exactly the tables of the plain pairing loop it replaced.

Both builders are checked: the vectorised pairing and (issue 36) the heap pairing of tables
with at most ``PYTHON_ROWS`` rows; tolerance: identical tables.
"""

import numpy as np
import pytest

from dprisk.inference.mcmc import alias_kernels
from dprisk.inference.two_level.gibbs import alias_table


def _reference(prob):
    """Pair the smallest remaining scaled probability with the largest, W - 1 times."""
    width = prob.shape[-1]
    scaled = prob.reshape(-1, width) * width
    rows = np.arange(scaled.shape[0])
    q = np.ones_like(scaled)
    alias = np.tile(np.arange(width), (scaled.shape[0], 1))
    remaining = np.ones(scaled.shape, dtype=bool)
    for _ in range(width - 1):
        small = np.where(remaining, scaled, np.inf).argmin(-1)
        large = np.where(remaining, scaled, -np.inf).argmax(-1)
        s_small = scaled[rows, small]
        q[rows, small] = np.clip(s_small, 0.0, 1.0)
        alias[rows, small] = large
        remaining[rows, small] = False
        scaled[rows, large] -= 1.0 - s_small
    return q.reshape(prob.shape), alias.reshape(prob.shape)


@pytest.mark.parametrize("python_rows", [0, 10**6], ids=["vectorised", "heap"])
@pytest.mark.parametrize("kind", ["uniform-random", "ties", "flat", "gaussian", "one-cell"])
def test_alias_table_bitwise_equal_to_the_pairing_loop(kind, python_rows, monkeypatch):
    monkeypatch.setattr(alias_kernels, "PYTHON_ROWS", python_rows)
    rng = np.random.default_rng(7)
    for _ in range(40 if python_rows == 0 else 12):  # the heap is pure Python: fewer tables
        rows, width = int(rng.integers(1, 30)), int(rng.integers(1, 70))
        if kind == "uniform-random":
            prob = rng.random((rows, 2, width))
        elif kind == "ties":
            prob = rng.integers(0, 3, (rows, 2, width)).astype(float)
        elif kind == "flat":
            prob = np.ones((rows, 2, width))
        elif kind == "gaussian":
            prob = np.exp(-0.05 * (np.arange(width) - width / 2) ** 2) * rng.random((rows, 2, 1))
        else:
            prob = np.zeros((rows, 2, width))
            prob[..., int(rng.integers(width))] = 1.0
        prob[prob.sum(-1) == 0] = 1.0
        prob = prob / prob.sum(-1, keepdims=True)
        q, alias = alias_table(prob)
        q_ref, alias_ref = _reference(prob)
        np.testing.assert_array_equal(q, q_ref)
        np.testing.assert_array_equal(alias, alias_ref)
