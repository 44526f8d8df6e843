"""The bounded least-recently-used cache of the studies (dprisk.runtime.bounded_cache).

Checked against a brute-force model of the rule: after every operation the kept keys are the
most recently used ones (stored or looked up) whose sizes, summed from the most recent back,
stay within the bound; an answer larger than the bound and an unhashable key are never kept.
"""

import numpy as np
import pytest

from dprisk.runtime.bounded_cache import BoundedCache


def test_a_count_bound_drops_the_least_recently_used():
    cache = BoundedCache(2)
    assert cache.put("a", 1) and cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recently used
    assert cache.put("c", 3)
    assert list(cache) == ["a", "c"] and "b" not in cache and cache.get("b") is None
    assert cache.get("b", "missing") == "missing"
    assert len(cache) == 2 and cache.total == 2


def test_a_size_bound_drops_until_within_and_refuses_an_answer_too_large():
    cache = BoundedCache(100)
    cache.put("a", "A", size=40)
    cache.put("b", "B", size=40)
    cache.put("c", "C", size=30)  # 110 > 100: "a" goes
    assert list(cache) == ["b", "c"] and cache.total == 70
    assert cache.put("d", "D", size=100)  # exactly the bound: all the others go
    assert list(cache) == ["d"] and cache.total == 100
    assert not cache.put("e", "E", size=101)  # alone over the bound: not kept, nothing dropped
    assert list(cache) == ["d"] and cache.get("e") is None


def test_storing_a_kept_key_again_replaces_it():
    cache = BoundedCache(10)
    cache.put("a", 1, size=4)
    cache.put("b", 2, size=4)
    cache.put("a", 3, size=6)  # 6 + 4 = 10: both fit, "a" now the most recent
    assert list(cache) == ["b", "a"] and cache.get("a") == 3 and cache.total == 10


def test_unhashable_keys_are_skipped():
    cache = BoundedCache(2)
    key = ("scenario", np.arange(3))  # a tuple holding an array cannot be hashed
    assert not cache.put(key, 1)
    assert cache.get(key) is None and key not in cache and len(cache) == 0
    assert not cache.put(["a"], 1) and cache.get(["a"], 0) == 0


def test_clear_and_a_zero_bound():
    cache = BoundedCache(0)
    assert not cache.put("a", 1) and len(cache) == 0
    cache = BoundedCache(3)
    cache.put("a", 1)
    cache.clear()
    assert len(cache) == 0 and cache.total == 0 and cache.get("a") is None
    with pytest.raises(ValueError, match="bound"):
        BoundedCache(-1)


def test_random_operations_match_a_brute_force_model():
    """500 random puts and gets on 12 keys with sizes 1..5, bound 9, against the rule."""
    rng = np.random.default_rng(7)
    bound = 9
    cache = BoundedCache(bound)
    order, values, sizes = [], {}, {}  # the model: keys least recently used first
    for step in range(500):
        key = int(rng.integers(12))
        if rng.random() < 0.5:
            size = int(rng.integers(1, 6))
            assert cache.put(key, step, size=size)
            if key in order:
                order.remove(key)
            order.append(key)
            values[key], sizes[key] = step, size
            while sum(sizes[k] for k in order) > bound:
                sizes.pop(order.pop(0))
        else:
            got = cache.get(key)
            if key in order:
                order.remove(key)
                order.append(key)
                assert got == values[key]
            else:
                assert got is None
        assert list(cache) == order
        assert cache.total == sum(sizes[k] for k in order) <= bound
