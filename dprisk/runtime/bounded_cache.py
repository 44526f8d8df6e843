r"""A process's memory of a function's answers: least recently used first out, bounded in size.

:class:`BoundedCache` keeps answers by key while the sum of their sizes stays within its
``bound``: each answer has a size (1 by default, so the bound is a number of answers; or its
bytes), and storing one that takes the total over the bound drops the least recently used
answers (stored or looked up longest ago) until it is within again,

.. math:: \sum_{k \in \text{kept}} \text{size}_k \le \text{bound}.

An answer larger than the bound on its own is not kept. A key that cannot be hashed (a
scenario holding arrays, say) is neither looked up nor stored: the caller computes its answer
every time, as without the cache. Used by the studies' caches of
:func:`dprisk.inference.studies.setup.posterior_table` (bounded in bytes),
:func:`dprisk.inference.studies.finite_draws.finite_draws_p_correct` (bounded in answers),
and the release-by-release stores of
:func:`dprisk.inference.studies.thresholds.decision_offsets` and the finite-draw bands
(:mod:`dprisk.inference.studies.release_cells`, bounded in releases).

A hit costs one dictionary look-up and one move to the end of the order (about 0.1 us):
nothing is copied; a caller that hands out mutable answers copies them itself.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

__all__ = ["BoundedCache"]


class BoundedCache:
    """Answers by key, least recently used dropped first, within a bound on their total size.

    Parameters
    ----------
    bound : int or float (bound >= 0)
        Largest total size of the answers kept (a number of answers when every size is 1,
        the default, or bytes when the caller gives each answer's bytes).

    Attributes
    ----------
    bound : int or float
        As given.
    total : int or float
        Sum of the sizes of the answers kept now.

    Examples
    --------
    >>> cache = BoundedCache(2)
    >>> cache.put("a", 1), cache.put("b", 2), cache.get("a")
    (True, True, 1)
    >>> cache.put("c", 3)          # "b" was used longest ago: it goes
    True
    >>> cache.get("b") is None, list(cache)
    (True, ['a', 'c'])
    >>> cache.put(["not", "hashable"], 4), cache.get(["not", "hashable"])
    (False, None)
    """

    __slots__ = ("_entries", "_sizes", "bound", "total")

    def __init__(self, bound: float):
        if not bound >= 0:
            raise ValueError(f"bound must be >= 0, got {bound!r}")
        self.bound = bound
        self.total = 0
        self._entries: OrderedDict = OrderedDict()
        self._sizes: dict = {}

    def get(self, key: Hashable, default=None):
        """The answer kept for ``key`` (now the most recently used), else ``default``.

        ``default`` also for a key that cannot be hashed.
        """
        entries = self._entries
        try:
            value = entries[key]
        except (KeyError, TypeError):  # not kept, or not hashable
            return default
        entries.move_to_end(key)
        return value

    def put(self, key: Hashable, value, size: float = 1) -> bool:
        """Keep ``value`` for ``key`` as the most recently used; whether it was kept.

        Not kept when ``key`` cannot be hashed or ``size`` alone exceeds :attr:`bound`;
        otherwise the least recently used answers are dropped until the total size is within
        the bound again (a value kept before for ``key`` is replaced).
        """
        if size > self.bound:
            return False
        try:
            hash(key)  # (dict.pop on an empty dict would not hash it)
        except TypeError:  # not hashable
            return False
        old = self._sizes.pop(key, None)
        entries = self._entries
        if old is not None:
            self.total -= old
            del entries[key]
        entries[key] = value
        self._sizes[key] = size
        self.total += size
        while self.total > self.bound:
            oldest, _ = entries.popitem(last=False)
            self.total -= self._sizes.pop(oldest)
        return True

    def clear(self) -> None:
        """Forget every answer."""
        self._entries.clear()
        self._sizes.clear()
        self.total = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key) -> bool:
        try:
            return key in self._entries
        except TypeError:
            return False

    def __iter__(self):
        """The keys kept, least recently used first."""
        return iter(list(self._entries))
