"""Speed of the discrete Gaussian samplers: fast alias-table sampler vs the exact CKS sampler.

Reports draws per second (median of ``REPEATS`` timings for every sampler, table
construction excluded by a warm-up call) and the fast/exact ratio. Also the vectorised
rejection path used for arrays with many distinct rho. Nothing here is asserted; run with
``python benchmarks/bench_dg_sampling.py``.
"""

from __future__ import annotations

import numpy as np
from timing import median_seconds

from dprisk.models.mechanism.dg_sampling import rejection_noise, sample, sample_exact

RHOS = (0.099, 1.0)
N_FAST = 10_000_000
N_EXACT = 3_000
N_REJECTION = 2_000_000
REPEATS = 3
SEED = 20260101


def _draws_per_second(draw, n_draws: int, repeats: int = REPEATS) -> float:
    """Draws per second: the median of ``repeats`` runs (the same count for every sampler)."""
    return n_draws / median_seconds(draw, repeats)


def run() -> dict:
    rng = np.random.default_rng(SEED)
    results = {}
    for rho in RHOS:
        sample(0, rho, size=10, random_seed=rng)  # build and cache the table
        fast = _draws_per_second(
            lambda rho=rho: sample(0, rho, size=N_FAST, random_seed=rng), N_FAST)
        exact = _draws_per_second(
            lambda rho=rho: sample_exact(0, rho, size=N_EXACT, random_seed=rng), N_EXACT)
        rejection = _draws_per_second(
            lambda rho=rho: rejection_noise(np.full(N_REJECTION, rho), rng), N_REJECTION
        )
        results[f"rho={rho}"] = {
            "fast_draws_per_s": fast,
            "rejection_draws_per_s": rejection,
            "exact_draws_per_s": exact,
            "fast_over_exact": fast / exact,
        }
    _print_table(results)
    return results


def _print_table(results: dict) -> None:
    header = f"{'rho':>10} {'fast /s':>12} {'rejection /s':>13} {'exact /s':>10} {'fast/exact':>11}"
    print(header)
    for key, row in results.items():
        print(
            f"{key.removeprefix('rho='):>10} {row['fast_draws_per_s']:12.3g} "
            f"{row['rejection_draws_per_s']:13.3g} {row['exact_draws_per_s']:10.3g} "
            f"{row['fast_over_exact']:11.0f}"
        )


if __name__ == "__main__":
    run()
