"""Speed of the decision studies (inference.studies, inference.mc_studies).

Census rho1, rho2, d = 27, improper prior, truth x1 = 1. Reports

* exact P[correct]: one point, first call in a new process (cold: imports excluded, the
  noise-sum tables built; by the pay-back rule of ``inference.fused_kernels`` a single point
  stays on numpy, so numba is not loaded; the same with the compiled kernel forced, numba
  import and cache load included, is reported beside it) and warm (with the compiled kernel
  loaded, the target, and on the numpy path, ``DPRISK_KERNELS=numpy``); the Figure 5 curve
  x2 = 1..10; the constraint-dropping variant; and the ratio to a brute-force triple sum
  over (x1*, x2*, y1*) with the exact posterior at every release (the baseline, same number
  of warm runs);
* the exact expectation of the 1e3-draw procedure (finite_draws_p_correct);
* Monte Carlo: releases x draws per second of simulate_p_correct on 1e4 releases x 1e3
  draws (collapsed X1 chain, model and variant; the full Gibbs sampler on 2e3 releases).
  The paper's budget (1e6 releases x 1e3 draws, full Gibbs sampler: compiled alias tables
  and block loop, tables per distinct release) is measured (about 30 s) unless
  ``DPRISK_BENCH_PAPER_POINT=0`` is set, which *extrapolates* it from the 2e3-release rate;
  the key says which.

Warm figures are medians of ``REPEATS`` runs; nothing is asserted.
``python benchmarks/bench_studies.py``.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np
from timing import cold_in_new_process, machine_load, run_times

from dprisk.inference.studies.finite_draws import finite_draws_p_correct
from dprisk.inference.studies.monte_carlo import simulate_p_correct
from dprisk.inference.studies.p_correct import p_correct_two_level, p_correct_variant
from dprisk.inference.two_level.exact import posterior_x1
from dprisk.models.census.allocation import census_level
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.models.mechanism.dg_sums import sum_pmf

CENSUS = {"rho1": float(census_level("block").rho),
          "rho2": float(census_level("block-group").rho), "d": 27}
REPEATS = 7
MC_DATASETS = 10_000
GIBBS_DATASETS = 2_000
DRAWS = 1000
PAPER_RELEASES = 1_000_000


def _median(func, repeats: int = REPEATS):
    """``(median seconds, last value)`` of ``repeats`` calls of ``func()``."""
    values = []
    times = run_times(lambda: values.append(func()), repeats)
    return statistics.median(times), values[-1]


def _brute_force(x2: int) -> float:
    rho1, rho2, d = CENSUS["rho1"], CENSUS["rho2"], CENSUS["d"]
    noise = sum_pmf(d, rho1, tail_mass=1e-10)
    x1s = np.arange(1 - 40, 1 + 41)
    x2s = np.arange(x2 - 10, x2 + 11)
    grid = np.meshgrid(x1s, x2s, x2 - 1 + noise.values, indexing="ij")
    weight = dg.pmf(grid[0], 1, rho1) * dg.pmf(grid[1], x2, rho2) * noise.at(grid[2] - x2 + 1)
    return float((weight * (posterior_x1(*grid, **CENSUS) > 0.5)).sum())


def run() -> dict:
    results = {}
    setup = ("from dprisk.inference.studies.p_correct import p_correct_two_level\n"
             "from dprisk.models.census.allocation import census_level")
    point = ("p_correct_two_level(x2=1, rho1=float(census_level('block').rho), "
             "rho2=float(census_level('block-group').rho), d=27)")
    results["exact_point_cold_new_process_s"] = cold_in_new_process(setup, point)
    results["exact_point_cold_new_process_compiled_s"] = cold_in_new_process(
        "import os\nos.environ['DPRISK_KERNELS'] = 'compiled'\n" + setup, point)
    os.environ["DPRISK_KERNELS"] = "numpy"
    try:
        p_correct_two_level(x2=1, **CENSUS)  # warm the caches (sum_pmf tables)
        seconds, _ = _median(lambda: p_correct_two_level(x2=1, **CENSUS))
        results["exact_point_warm_numpy_ms"] = 1e3 * seconds
        os.environ["DPRISK_KERNELS"] = "compiled"
        p_correct_two_level(x2=1, **CENSUS)  # load the compiled kernel
        seconds, value = _median(lambda: p_correct_two_level(x2=1, **CENSUS))
        results["exact_point_warm_ms"] = 1e3 * seconds
    finally:
        del os.environ["DPRISK_KERNELS"]
    seconds, _ = _median(lambda: [p_correct_two_level(x2=x2, **CENSUS) for x2 in range(1, 11)])
    results["exact_figure5_curve_s"] = seconds
    seconds, _ = _median(lambda: p_correct_variant(x2=1, **CENSUS))
    results["variant_point_ms"] = 1e3 * seconds
    brute_seconds, brute = _median(lambda: _brute_force(1))
    results["brute_force_point_s"] = brute_seconds
    results["speedup_vs_brute_force"] = brute_seconds / (results["exact_point_warm_ms"] / 1e3)
    results["brute_force_abs_difference"] = abs(brute - value.p_correct)
    seconds, _ = _median(lambda: finite_draws_p_correct(x2=10, draws=DRAWS, variant=True,
                                                        ties="m+1", **CENSUS), repeats=1)
    results["finite_draws_expectation_s"] = seconds
    for sampler, n in (("x1_chain", MC_DATASETS), ("variant", MC_DATASETS),
                       ("gibbs", GIBBS_DATASETS)):
        seconds, _ = _median(lambda s=sampler, n=n: simulate_p_correct(
            x2=10, datasets=n, draws=DRAWS, sampler=s, random_seed=1, progress=False, **CENSUS),
            repeats=1)
        rate = n * DRAWS / seconds
        results[f"mc_{sampler}_release_draws_per_s"] = rate
        results[f"mc_{sampler}_paper_point_minutes_extrapolated_from_{n}"] = (
            PAPER_RELEASES * DRAWS / rate / 60)
    if os.environ.get("DPRISK_BENCH_PAPER_POINT") != "0":
        cpu = time.process_time()
        seconds, _ = _median(lambda: simulate_p_correct(
            x2=10, datasets=PAPER_RELEASES, draws=DRAWS, sampler="gibbs", random_seed=1,
            progress=False, **CENSUS), repeats=1)
        # CPU seconds of this process beside the wall clock: on a shared machine the
        # difference is time spent waiting for a core.
        results["mc_gibbs_paper_point_cpu_seconds"] = time.process_time() - cpu
        results["mc_gibbs_paper_point_minutes_measured"] = seconds / 60
        results["mc_gibbs_paper_point_over_30s_target"] = seconds / 30
    results.update(machine_load())
    results["exact_point_warm_over_1ms_target"] = results["exact_point_warm_ms"] / 1.0
    results["exact_point_cold_over_0.3s_target"] = results["exact_point_cold_new_process_s"] / 0.3
    for key, value in results.items():
        print(f"{key:54s} {value:12.4g}")
    return results


if __name__ == "__main__":
    run()
