"""Shared helper of the validate-once tests: count validator calls per parameter name."""

import sys
from collections import Counter


def count_outermost_calls(monkeypatch, originals, key) -> Counter:
    """Wrap each validator in ``originals`` in every loaded ``dprisk`` module that looks it up.

    ``originals`` maps a validator's name to the function itself; a module attribute that
    is that function is replaced (through ``monkeypatch``) by a wrapper that adds one to
    ``counts[key(name, args, kwargs)]`` and calls the original. Only the outermost call is
    counted: a validator called by another (``check_tail_mass`` calls ``check_probability``)
    is not. Returns the counter, filled as the test runs.
    """
    counts = Counter()
    depth = [0]

    def counting(name, original):
        def wrapper(*args, **kwargs):
            if depth[0] == 0:
                counts[key(name, args, kwargs)] += 1
            depth[0] += 1
            try:
                return original(*args, **kwargs)
            finally:
                depth[0] -= 1
        return wrapper

    for module in [m for key_, m in sys.modules.items() if key_.startswith("dprisk")]:
        for name, original in originals.items():
            if getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, counting(name, original))
    return counts
