"""The on-disk accounting cache returns exactly the value a fresh computation gives.

Every test points ``DPRISK_CACHE_DIR`` at its own empty directory, so the first call is a
fresh computation and the second is read from the file it wrote.
"""

import json
import threading

import pytest

from dprisk.inference.privacy import accounting_cache
from dprisk.inference.privacy.accounting import census_epsilon_pld, epsilon_cks, epsilon_pld


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(tmp_path))
    return tmp_path / "accounting"


def _entries(cache):
    return sorted(cache.glob("*.json"))


@pytest.mark.parametrize("interval", [1e-3, 1e-4])
def test_census_pld_cached_equals_fresh(cache, monkeypatch, interval):
    """The 2020 strategy's composition, computed, stored and read back bit for bit. At the
    default loss grid (1e-4, 1.7 s of CPU) in make bench; by default at 1e-3 (0.4 s): the same
    65 queries composed by the same code, another float (the interval is part of the key)."""
    # the shipped seed holds the default grid's entry: without switching it off the first call
    # read it, and the test compared the seed with its own copy, never with a fresh computation
    monkeypatch.setattr(accounting_cache, "USE_SEED", False)
    fresh = census_epsilon_pld(value_discretization_interval=interval)  # empty cache: computed
    assert len(_entries(cache)) == 1
    # read back, bit for bit (float.hex)
    assert census_epsilon_pld(value_discretization_interval=interval) == fresh
    stored = json.loads(_entries(cache)[0].read_text())
    assert float.fromhex(stored["value"]) == fresh
    assert "dp_accounting" in stored["key"]


def test_other_arguments_other_entries(cache):
    a = epsilon_pld([0.5, 0.5, 0.25], 1e-6)
    b = epsilon_pld([0.5, 0.25], 1e-6)
    c = epsilon_cks(0.5, 1e-6)
    assert len(_entries(cache)) == 3
    assert a > b  # one more query: a larger epsilon, not the cached value of another key
    assert epsilon_pld([0.25, 0.5, 0.5], 1e-6) == a  # order of the queries does not matter
    assert epsilon_cks(0.5, 1e-6) == c and len(_entries(cache)) == 3


def test_hit_does_not_compute_and_wrong_key_is_ignored(cache):
    assert accounting_cache.cached_float("f", {"x": "1.0"}, lambda: 2.5) == 2.5

    def fail():
        raise AssertionError("computed although cached")

    assert accounting_cache.cached_float("f", {"x": "1.0"}, fail) == 2.5
    (path,) = _entries(cache)
    stored = json.loads(path.read_text())
    path.write_text(json.dumps({"key": stored["key"] + " ", "value": (9.0).hex()}))
    assert accounting_cache.cached_float("f", {"x": "1.0"}, lambda: 2.5) == 2.5  # recomputed
    path.write_text("{corrupt")
    assert accounting_cache.cached_float("f", {"x": "1.0"}, lambda: 2.5) == 2.5


def test_another_versions_entry_is_a_miss(cache):
    """An entry written by another version of dprisk's results (a checkout whose
    ``epsilon_cks`` answered where this one refuses, sharing the cache directory) is never
    read: the key holds :data:`accounting_cache.RESULTS_VERSION`."""
    version = accounting_cache.RESULTS_VERSION
    accounting_cache.RESULTS_VERSION = version + 1
    try:
        assert accounting_cache.cached_float("f", {"x": "1.0"}, lambda: 9.0) == 9.0
    finally:
        accounting_cache.RESULTS_VERSION = version
    assert accounting_cache.cached_float("f", {"x": "1.0"}, lambda: 2.5) == 2.5
    assert len(_entries(cache)) == 2
    assert all('"dprisk_results": ' in json.loads(path.read_text())["key"]
               for path in _entries(cache))


def test_concurrent_writers_leave_one_complete_entry(cache):
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        accounting_cache.cached_float("g", {"x": "3.0"}, lambda: 0.1 + 0.2)))
        for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [0.1 + 0.2] * 8
    (path,) = _entries(cache)  # no temporary file left behind
    assert float.fromhex(json.loads(path.read_text())["value"]) == 0.1 + 0.2


def test_unwritable_cache_still_computes(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(blocker))  # a file: no directory can be made
    assert accounting_cache.cached_float("h", {}, lambda: 1.25) == 1.25


def test_a_fifo_at_an_entry_is_a_miss_not_a_hang(cache):
    """A FIFO at an entry's name: ``dprisk census`` blocked for ever opening it (killed by a
    20 s timeout). Now it is ignored (computed) and replaced by a complete entry."""
    import os

    assert accounting_cache.cached_float("f", {"x": "1.0"}, lambda: 2.5) == 2.5
    (path,) = _entries(cache)
    path.unlink()
    os.mkfifo(path)
    answers = []
    reader = threading.Thread(target=lambda: answers.append(
        accounting_cache.cached_float("f", {"x": "1.0"}, lambda: 3.5)), daemon=True)
    reader.start()
    reader.join(10)  # well above the milliseconds a miss takes; a blocked open never returns
    assert answers == [3.5]
    assert path.is_file() and accounting_cache.cached_float("f", {"x": "1.0"}, lambda: 0) == 3.5
