"""The per-process cache of decision_offsets (inference.studies.thresholds).

A repeated call with the same scenario, model and releases is answered from the cache (the
kernel runs once) with values equal to a fresh computation, bit for bit (the same arrays are
copied); answers are fresh copies, so a caller that writes into one does not change the next;
a different release, scenario or model is computed anew.
"""

import numpy as np
import pytest

from dprisk.inference.studies import thresholds
from dprisk.models.scenario import Scenario
from dprisk.runtime.bounded_cache import BoundedCache

PARAMS = Scenario.two_level(rho1=0.5, rho2=1.0, d=3, p=0.5, known=0, prior="improper")


@pytest.fixture
def counted(monkeypatch):
    """The kernel behind decision_offsets, counting its runs; an empty cache."""
    monkeypatch.setattr(thresholds, "_offsets_cache", BoundedCache(thresholds.OFFSETS_CACHE_SIZE))
    runs = []
    kernel = thresholds._decision_offsets

    def spy(*args):
        runs.append(args[3])
        return kernel(*args)

    monkeypatch.setattr(thresholds, "_decision_offsets", spy)
    return runs


@pytest.mark.parametrize("model", thresholds.MODELS)
def test_repeat_is_cached_and_equal(counted, model):
    x2s, y1s = np.meshgrid(np.arange(3, 9), np.arange(0, 5), indexing="ij")
    fresh = thresholds._decision_offsets(x2s, y1s, PARAMS, model)
    first = thresholds.decision_offsets(x2s, y1s, PARAMS, model)
    first[0][...] = -123.0  # a caller writing into its answer changes no later answer
    second = thresholds.decision_offsets(x2s.copy(), y1s.copy(), PARAMS, model)
    assert counted == [model, model]  # the fresh call above, then one run for two calls
    for got, want in zip(second, fresh, strict=True):
        np.testing.assert_array_equal(got, want)


def test_other_inputs_are_computed(counted):
    x2s, y1s = np.arange(3, 9), np.arange(0, 6)
    thresholds.decision_offsets(x2s, y1s, PARAMS, "exact")
    thresholds.decision_offsets(x2s + 1, y1s, PARAMS, "exact")
    other = Scenario.two_level(rho1=0.5, rho2=2.0, d=3, p=0.5, known=0, prior="improper")
    thresholds.decision_offsets(x2s, y1s, other, "exact")
    thresholds.decision_offsets(x2s, y1s, PARAMS, "variant")
    assert len(counted) == 4


def test_cache_is_bounded(counted, monkeypatch):
    monkeypatch.setattr(thresholds, "_offsets_cache", BoundedCache(2))
    for x2 in range(3, 8):
        thresholds.decision_offsets(np.array([x2]), np.array([1]), PARAMS, "exact")
    assert len(thresholds._offsets_cache) == 2 and len(counted) == 5
    thresholds.decision_offsets(np.array([7]), np.array([1]), PARAMS, "exact")  # kept: a hit
    thresholds.decision_offsets(np.array([3]), np.array([1]), PARAMS, "exact")  # dropped
    assert len(counted) == 6


def test_posterior_table_is_remembered_read_only(monkeypatch):
    """A repeated posterior_table is the same table, built once, with read-only arrays."""
    from dprisk.inference.studies import setup

    monkeypatch.setattr(setup, "_table_cache", BoundedCache(setup.TABLE_CACHE_BYTES))
    builds = []
    build = setup.checked_table

    def spy(*args):
        builds.append(args[1].tolist())
        return build(*args)

    monkeypatch.setattr(setup, "checked_table", spy)
    x2s, y1s = np.arange(3, 9), np.arange(0, 6)
    first = setup.posterior_table(0, x2s, y1s, PARAMS)
    again = setup.posterior_table(np.zeros(6, dtype=int), x2s.copy(), y1s.copy(), PARAMS)
    setup.posterior_table(0, x2s + 1, y1s, PARAMS)
    assert again is first and len(builds) == 2
    assert not first.log_joint.flags.writeable
    fresh = build(np.zeros(6, np.int64), x2s, y1s, PARAMS, setup.POSTERIOR_TAIL_MASS, None)
    np.testing.assert_array_equal(first.log_joint, fresh.log_joint)


def test_posterior_tables_are_bounded_in_bytes(monkeypatch):
    """The tables kept stay within the cache's bytes: a second table pushes out the first."""
    from dprisk.inference.studies import setup

    x2s, y1s = np.arange(3, 9), np.arange(0, 6)
    one = setup.checked_table(np.zeros(6, np.int64), x2s, y1s, PARAMS,
                              setup.POSTERIOR_TAIL_MASS, None)
    nbytes = sum(a.nbytes for a in vars(one).values() if isinstance(a, np.ndarray))
    monkeypatch.setattr(setup, "_table_cache", BoundedCache(nbytes))
    first = setup.posterior_table(0, x2s, y1s, PARAMS)
    assert setup.posterior_table(0, x2s, y1s, PARAMS) is first  # kept
    setup.posterior_table(0, x2s + 1, y1s, PARAMS)  # same bytes: the first one goes
    assert len(setup._table_cache) == 1 and setup._table_cache.total == nbytes
    assert setup.posterior_table(0, x2s, y1s, PARAMS) is not first
