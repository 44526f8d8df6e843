"""Speed of a parameter sweep in-process against a 2-worker Dask LocalCluster.

The sweep is the one behind the paper's Figure 6 (§4.3): the exact probability of a correct
decision (``dprisk.inference.studies.p_correct.p_correct_two_level``) over a grid of rho2 and
the true
block-group count x2, with the Census rho1 (block), d = 27, p = 1/2. Reports the wall time
in-process, on a 2-worker cluster from ``dprisk.inference.sweeps.sweep.local_cluster`` (a
``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``), the speed-up
*including* the cluster's start-up (what a user waits for; the headline figure) and, apart,
the speed-up on an already running cluster, and checks that both results are identical.
For comparison it also times the cluster with Dask's default worker environment
(``MALLOC_TRIM_THRESHOLD_=65536``), which slows the exact study down in workers.
One run each (the sweep takes tens of seconds); nothing is asserted beyond the identity.
``python benchmarks/bench_sweeps.py``.
"""

from __future__ import annotations

import time

import numpy as np
import xarray as xr

from dprisk.inference.sweeps.sweep import local_cluster, sweep
from dprisk.models.census.allocation import census_level

GRID = {
    "rho1": census_level("block").rho,
    "rho2": [float(r) for r in np.geomspace(0.05, 100.0, 30)],
    "x2": list(range(1, 41)),
    "d": 27,
}
CHUNK_SIZE = 20
N_WORKERS = 2


def _time_on(cluster_factory) -> tuple[float, float, xr.Dataset]:
    from distributed import Client

    start = time.perf_counter()
    with cluster_factory() as cluster, Client(cluster) as client:
        t_startup = time.perf_counter() - start
        start = time.perf_counter()
        result = sweep(**GRID, chunk_size=CHUNK_SIZE, progress=False, client=client)
        return time.perf_counter() - start, t_startup, result


def _dask_default_cluster():
    from distributed import LocalCluster

    return LocalCluster(n_workers=N_WORKERS, threads_per_worker=1, processes=True,
                        dashboard_address=None)


def run() -> dict:
    n_points = len(GRID["rho2"]) * len(GRID["x2"])
    start = time.perf_counter()
    in_process = sweep(**GRID, chunk_size=CHUNK_SIZE, progress=False)
    t_in_process = time.perf_counter() - start

    t_cluster, t_startup, on_cluster = _time_on(lambda: local_cluster(N_WORKERS))
    xr.testing.assert_identical(in_process, on_cluster)
    t_default, _, on_default = _time_on(_dask_default_cluster)
    xr.testing.assert_identical(in_process, on_default)

    results = {
        "grid_points": n_points,
        "chunk_size": CHUNK_SIZE,
        "in_process_s": t_in_process,
        "cluster_startup_s": t_startup,
        "cluster_s": t_cluster,
        "speedup_incl_startup": t_in_process / (t_cluster + t_startup),
        "speedup_running_cluster": t_in_process / t_cluster,
        "dask_default_env_cluster_s": t_default,
        "dask_default_env_speedup_running_cluster": t_in_process / t_default,
        "identical": True,
    }
    print(f"sweep of {n_points} points (rho2 x x2), chunk_size {CHUNK_SIZE}")
    print(f"  in-process                    {t_in_process:7.2f} s")
    print(f"  local_cluster(2)              {t_cluster:7.2f} s  (+ {t_startup:.2f} s start-up)")
    print(f"  speed-up with start-up        {results['speedup_incl_startup']:7.2f}x  "
          f"({results['speedup_running_cluster']:.2f}x on the running cluster)")
    print(f"  LocalCluster, Dask worker env {t_default:7.2f} s  (speed-up "
          f"{results['dask_default_env_speedup_running_cluster']:.2f}x on the running "
          "cluster); all results identical")
    return results


if __name__ == "__main__":
    run()
