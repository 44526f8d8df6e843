"""The per-process memory of decision_offsets (inference.studies.thresholds), release by release.

A repeated call with the same scenario, model and releases is answered from memory (the
kernel runs once) with values equal to a fresh computation, bit for bit; answers are fresh
copies, so a caller that writes into one does not change the next; a grid overlapping one met
before computes only its new releases, and the answer equals a fresh computation of the whole
grid (integer thresholds and tie flags: compared exactly); a different scenario or model is
computed anew; releases too large for a key, or not integers, are computed as they are.
"""

import numpy as np
import pytest

from dprisk.inference.studies import thresholds
from dprisk.inference.studies.release_cells import KEY_BOUND, CellStore, cell_keys
from dprisk.models.scenario import Scenario
from dprisk.runtime.bounded_cache import BoundedCache

PARAMS = Scenario.two_level(rho1=0.5, rho2=1.0, d=3, p=0.5, known=0, prior="improper")


@pytest.fixture
def counted(monkeypatch):
    """The kernel behind decision_offsets, recording how many releases each run had."""
    monkeypatch.setattr(thresholds, "_offsets_cache",
                        BoundedCache(thresholds.OFFSETS_CACHE_CELLS))
    runs = []
    kernel = thresholds._decision_offsets

    def spy(x2s, y1s, params, model):
        runs.append((model, np.size(x2s)))
        return kernel(x2s, y1s, params, model)

    monkeypatch.setattr(thresholds, "_decision_offsets", spy)
    return runs


@pytest.mark.parametrize("model", thresholds.MODELS)
def test_repeat_is_remembered_and_equal(counted, model):
    x2s, y1s = np.meshgrid(np.arange(3, 9), np.arange(0, 5), indexing="ij")
    fresh = thresholds._decision_offsets(x2s, y1s, PARAMS, model)
    first = thresholds.decision_offsets(x2s, y1s, PARAMS, model)
    first[0][...] = -123.0  # a caller writing into its answer changes no later answer
    second = thresholds.decision_offsets(x2s.copy(), y1s.copy(), PARAMS, model)
    assert counted == [(model, 30), (model, 30)]  # the fresh call, then one run for two calls
    for got, want in zip(second, fresh, strict=True):
        assert got.shape == want.shape == (6, 5)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("model", thresholds.MODELS)
def test_overlapping_grid_computes_only_its_new_releases(counted, model):
    """Figure 5's grids for x2 and x2 + 1 are the same grid shifted by (1, 1)."""
    x2s, y1s = np.meshgrid(np.arange(-4, 7), np.arange(-12, 14), indexing="ij")
    thresholds.decision_offsets(x2s, y1s, PARAMS, model)
    shifted = thresholds.decision_offsets(x2s + 1, y1s + 1, PARAMS, model)
    assert counted == [(model, 11 * 26), (model, 11 + 26 - 1)]  # the new row and column
    fresh = thresholds._decision_offsets(x2s + 1, y1s + 1, PARAMS, model)
    for got, want in zip(shifted, fresh, strict=True):
        np.testing.assert_array_equal(got, want)
    # the releases in another order (and repeated) give the same values per release
    order = np.random.default_rng(1).permutation(x2s.size)
    flat2, flaty = (x2s + 1).ravel()[order], (y1s + 1).ravel()[order]
    again = thresholds.decision_offsets(np.append(flat2, flat2), np.append(flaty, flaty),
                                        PARAMS, model)
    assert len(counted) == 3
    for got, want in zip(again, fresh, strict=True):
        np.testing.assert_array_equal(got, np.tile(want.ravel()[order], 2))


def test_other_inputs_are_computed(counted):
    x2s, y1s = np.arange(3, 9), np.arange(0, 6)
    thresholds.decision_offsets(x2s, y1s, PARAMS, "exact")
    thresholds.decision_offsets(x2s + 10, y1s, PARAMS, "exact")
    other = Scenario.two_level(rho1=0.5, rho2=2.0, d=3, p=0.5, known=0, prior="improper")
    thresholds.decision_offsets(x2s, y1s, other, "exact")
    thresholds.decision_offsets(x2s, y1s, PARAMS, "variant")
    assert [n for _, n in counted] == [6, 6, 6, 6]


def test_large_or_scalar_releases(counted):
    """Releases beyond the keys' range are computed as they are; scalars keep their shape."""
    big = np.array([KEY_BOUND, KEY_BOUND + 3])
    got = thresholds.decision_offsets(big, np.array([1, 2]), PARAMS, "exact")
    assert counted == [("exact", 2)]
    want = thresholds._decision_offsets(big, np.array([1, 2]), PARAMS, "exact")
    np.testing.assert_array_equal(got[0], want[0])
    threshold, tie = thresholds.decision_thresholds(4, 3, rho1=0.5, rho2=1.0, d=3)
    assert isinstance(threshold, float) and isinstance(tie, bool)
    assert cell_keys(np.array([1.0]), np.array([2])) is None


def test_memory_is_bounded(counted, monkeypatch):
    """At most the bound's releases are kept; past it a store starts again from the new ones."""
    monkeypatch.setattr(thresholds, "_offsets_cache", BoundedCache(8))
    for x2 in range(3, 8):
        thresholds.decision_offsets(np.array([x2, x2]), np.array([1, 2]), PARAMS, "exact")
    assert thresholds._offsets_cache.total <= 8 and len(counted) == 5
    thresholds.decision_offsets(np.array([7]), np.array([1]), PARAMS, "exact")  # kept: a hit
    assert len(counted) == 5


def test_cell_store_find_merge_without():
    keys = np.array([5, 9, 2], dtype=np.int64)
    store = CellStore.empty(np.dtype(float))
    np.testing.assert_array_equal(store.find(keys), [-1, -1, -1])
    store = store.merged(np.array([2, 9]), (np.array([20.0, 90.0]),))
    np.testing.assert_array_equal(store.find(keys), [-1, 1, 0])
    store = store.merged(np.array([5]), (np.array([50.0]),))
    np.testing.assert_array_equal(store.values[0][store.find(keys)], [50.0, 90.0, 20.0])
    store = store.without(np.array([9, 11]))
    np.testing.assert_array_equal(store.keys, [2, 5])
    # keys order releases as (x2*, y1*) pairs
    k = cell_keys(np.array([-3, -3, 0, 2]), np.array([-5, 4, -9, -9]))
    assert (np.diff(k) > 0).all()


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


def test_exact_log_odds_read_off_a_remembered_table(monkeypatch):
    """With the releases' posterior table in memory (the variant's thresholds built it), the
    exact log-odds at x1* = m are its branch masses' difference, equal bit for bit to the
    numpy path that computes them (no second pass: the mass kernel does not run)."""
    from dprisk.inference.studies import setup

    monkeypatch.setattr(setup, "_table_cache", BoundedCache(setup.TABLE_CACHE_BYTES))
    monkeypatch.setenv("DPRISK_KERNELS", "numpy")
    x2s, y1s = np.meshgrid(np.arange(-3, 9), np.arange(-6, 12), indexing="ij")
    computed = setup.exact_log_odds_at_known(x2s, y1s, PARAMS)
    setup.posterior_table(PARAMS.known, x2s, y1s, PARAMS)
    calls = []
    monkeypatch.setattr(setup, "checked_log_masses", lambda *a: calls.append(a))
    monkeypatch.setattr(setup, "checked_masses", lambda *a, **k: calls.append(a))
    read = setup.exact_log_odds_at_known(x2s, y1s, PARAMS)
    assert calls == [] and read.shape == computed.shape == (12, 18)
    np.testing.assert_array_equal(read, computed)
