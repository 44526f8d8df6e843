"""One BLAS and OpenMP thread in each worker dprisk starts, unless the user set more."""

import json
import os
import subprocess
import sys

from dprisk.inference.sweeps import sweep
from dprisk.runtime.worker_threads import WORKER_ENVIRON, one_thread_per_worker


def test_it_sets_only_what_is_not_set_and_says_what_it_set():
    environ = {"OPENBLAS_NUM_THREADS": "4", "PATH": "/bin"}
    added = one_thread_per_worker(environ)
    assert added == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert environ == {"OPENBLAS_NUM_THREADS": "4", "PATH": "/bin", **added}
    assert one_thread_per_worker(environ) == {}  # a second call changes nothing


def test_the_sweeps_workers_get_the_same_environment():
    assert sweep.WORKER_ENVIRON is WORKER_ENVIRON
    assert set(WORKER_ENVIRON.values()) == {"1"}


#: Run in a new interpreter as a fork server starts: its first import, then NumPy and SciPy;
#: prints the environment's values, each BLAS/OpenMP library's thread count (threadpoolctl,
#: which PyMC requires) and the cores it may run on.
SERVER_THEN_NUMPY = """
import json, os
import dprisk.runtime.fork_server_start
import numpy, scipy.linalg
from threadpoolctl import threadpool_info
print(json.dumps({"environ": {name: os.environ.get(name) for name in %r},
                  "threads": [pool["num_threads"] for pool in threadpool_info()],
                  "cores": len(os.sched_getaffinity(0))}))
"""


def _server_then_numpy(**environ) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in WORKER_ENVIRON} | environ
    done = subprocess.run([sys.executable, "-c", SERVER_THEN_NUMPY % (list(WORKER_ENVIRON),)],
                          capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout)


def test_a_fork_servers_numpy_loads_with_one_thread():
    """Unset before, the server's first import sets each variable to 1, before NumPy and
    SciPy load their OpenBLAS: every pool threadpoolctl finds has one thread."""
    seen = _server_then_numpy()
    assert seen["environ"] == {name: "1" for name in WORKER_ENVIRON}
    assert seen["threads"] and set(seen["threads"]) == {1}


def test_the_users_thread_count_is_kept():
    seen = _server_then_numpy(OPENBLAS_NUM_THREADS="2")
    assert seen["environ"]["OPENBLAS_NUM_THREADS"] == "2"
    assert seen["environ"]["OMP_NUM_THREADS"] == "1"
    # OpenBLAS takes the user's 2, capped at the cores it may run on
    assert max(seen["threads"]) == min(2, seen["cores"])
