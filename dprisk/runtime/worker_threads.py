"""One BLAS and OpenMP thread in each worker process dprisk starts, unless the user set more.

dprisk's worker processes (the report's pool, the explorer's sampling workers, the sweeps'
Dask workers) already run one per core: a worker's NumPy that also starts a BLAS thread per
core oversubscribes the cores. OpenBLAS's threads, moreover, spin after each threaded call
(``blas_thread_server``, busy-waiting for the next job before they sleep) on the core another
worker needs. In ``dprisk reproduce`` on the 2-core machine (``perf record`` over every
process at 200 Hz, 2026-11-30) 51 threaded BLAS calls, all in the two workers, did about
0.04 s of arithmetic and the workers' BLAS threads spun for about 1.0 s of CPU (3 % of the
report's); the fork server's and the calling process's threads spun another 0.3 s at start.
With one thread the report's numbers and figures are the same byte for byte.

:data:`WORKER_ENVIRON` is read by the libraries when they load, so
:func:`one_thread_per_worker` must run before NumPy is imported: a fork server's first
import does it (:mod:`dprisk.runtime.fork_server_start`), and its workers inherit it;
:func:`dprisk.inference.sweeps.sweep.local_cluster` gives it to its Dask workers.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["WORKER_ENVIRON", "one_thread_per_worker"]

#: Environment of dprisk's worker processes: one OpenMP, MKL and OpenBLAS thread each (the
#: values as the environment holds them: strings).
WORKER_ENVIRON = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def one_thread_per_worker(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set each variable of :data:`WORKER_ENVIRON` in ``environ`` that is not set there yet.

    A value the user set (``OPENBLAS_NUM_THREADS=4 dprisk reproduce ...``) is kept.

    Parameters
    ----------
    environ : mutable mapping, optional
        Default ``os.environ`` (which also sets the process's C environment, where the
        libraries read it when they load).

    Returns
    -------
    dict
        The variables this call set, with their values.
    """
    environ = os.environ if environ is None else environ
    added = {name: value for name, value in WORKER_ENVIRON.items() if name not in environ}
    environ.update(added)
    return added
