"""The S6 likelihood's fast paths equal the full-array evaluations they replace, to the bit.

Issue 36: :func:`dprisk.inference.product.one_block._log_cells` evaluates each interval
probability once per distinct ``(a, b - a)`` and gathers, and
:func:`dprisk.inference.product.one_block.logsumexp_columns` is SciPy's ``logsumexp`` over
axis 0 without its per-call overheads. Both perform the same elementwise operations and
reductions as before, so the tolerance is exact equality; the references are the former
code (every cell of the ``(n, V + 1)`` array) and ``scipy.special.logsumexp`` itself.
"""

import numpy as np
import pytest
from scipy.special import logsumexp

from dprisk.inference.product import one_block as pp
from dprisk.models.mechanism import discrete_gaussian as dg


def _log_cells_every_cell(g, rho):
    """The former ``_log_cells``: the interval rule on every cell of the array."""
    def log_upper(offsets):
        low = int(offsets.min())
        values = np.arange(low, int(offsets.max()) + 1)
        tail = dg.log_tail_kernel(np.where(values >= 1, values, 1 - values),
                                  np.asarray(rho, dtype=float))
        table = np.where(values >= 1, tail, pp._log1mexp(np.minimum(tail, 0.0)))
        return table[offsets - low]

    n = g.shape[0]
    log_u, log_l = log_upper(g), log_upper(1 - g)
    neg_inf, zero = np.full((n, 1), -np.inf), np.zeros((n, 1))
    big = np.iinfo(np.int64).max // 4
    return pp._interval_log_prob(
        np.concatenate([np.full((n, 1), -big), g], axis=1),
        np.concatenate([g, np.full((n, 1), big)], axis=1),
        np.concatenate([zero, log_u], axis=1), np.concatenate([log_u, neg_inf], axis=1),
        np.concatenate([neg_inf, log_l], axis=1), np.concatenate([log_l, zero], axis=1))


@pytest.mark.parametrize(("x2_tilde", "rho", "ties"), [
    (1, 0.0992, "even"), (10, 0.0992, "up"), (100, 0.0992, "even"), (10, 0.003, "down"),
    (37, 4.0, "even"), (2, 60.0, "up"),
])
def test_log_cells_equal_every_cell_evaluation(x2_tilde, rho, ties):
    y1_star = np.arange(-120, 121)
    for k1 in (0, 1):
        g = pp.thresholds(y1_star + 1 - k1, x2_tilde, 27, ties=ties) - k1
        np.testing.assert_array_equal(pp._log_cells(g, rho), _log_cells_every_cell(g, rho))


def test_logsumexp_columns_is_scipys_to_the_bit():
    rng = np.random.default_rng(2)
    a = rng.normal(0.0, 30.0, (400, 9))
    a[:, 1] = -np.inf  # an empty column
    a[5:9, 2] = a[:, 2].max() + 1.0  # ties of the maximum
    a[::3, 3] = -np.inf
    a[:, 4] = np.round(a[:, 4])  # many ties
    a[7, 5] = np.inf
    a[:, 6] = -800.0 + rng.normal(0.0, 1.0, 400)  # underflowing exponentials
    np.testing.assert_array_equal(pp.logsumexp_columns(a), logsumexp(a, axis=0))
    one = rng.normal(0.0, 5.0, (1, 4))
    np.testing.assert_array_equal(pp.logsumexp_columns(one), logsumexp(one, axis=0))
