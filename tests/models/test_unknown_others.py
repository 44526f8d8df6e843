"""The validated n and q of the unknown-others adversary, and its binomial log weights."""

import numpy as np
import pytest
from scipy import stats

from dprisk.models.checks import check_closed_probability
from dprisk.models.unknown_others import MAX_UNKNOWN_OTHERS, UnknownOthers


@pytest.mark.parametrize(("n", "q"), [(0, 0.3), (1, 0.5), (7, 0.0), (7, 1.0), (50, 0.13),
                                      (MAX_UNKNOWN_OTHERS, 0.4)])
def test_log_weights_against_scipy(n, q):
    others = UnknownOthers.checked(n, q)
    ref = stats.binom.logpmf(np.arange(n + 1), n, q)
    got = others.log_weights()
    assert np.array_equal(np.isfinite(got), np.isfinite(ref))
    np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=1e-10,
                               atol=1e-10)
    low, high = others.support()
    assert np.isfinite(got[low]) and np.isfinite(got[high])
    assert not np.isfinite(got[:low]).any() and not np.isfinite(got[high + 1:]).any()


def test_q_is_irrelevant_without_unknown_others():
    assert UnknownOthers.checked(0) == UnknownOthers(0, 0.0)
    assert UnknownOthers.checked(0.0, 1.0).log_weights().tolist() == [0.0]


@pytest.mark.parametrize("value", [0, 0.0, 0.25, 1, 1.0])
def test_closed_probability_accepts_the_ends(value):
    assert check_closed_probability(value, "q") == float(value)


@pytest.mark.parametrize(("value", "error"), [(-1e-9, ValueError), (1.0000001, ValueError),
                                              (float("inf"), ValueError), (np.nan, ValueError),
                                              ([0.1, 0.2], ValueError), ("0.5", TypeError),
                                              (True, TypeError), (None, TypeError)])
def test_closed_probability_refuses(value, error):
    with pytest.raises(error, match=r"\bq\b"):
        check_closed_probability(value, "q")
