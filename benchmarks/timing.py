"""Timing helper shared by the benchmark modules (imported with ``benchmarks/`` on sys.path)."""

from __future__ import annotations

import time

import numpy as np


def best_seconds(func, repeats: int = 3) -> float:
    """Smallest wall-clock time of ``repeats`` calls of ``func()``."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best
