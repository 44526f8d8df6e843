"""Fixtures of the reliability tests: the shared helper module and how to run it elsewhere."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
HELPERS = "reliability_helpers"


@pytest.fixture(scope="session")
def helpers():
    """``reliability_helpers`` imported under its top-level name (as subprocesses import it)."""
    if HELPERS not in sys.modules:
        spec = importlib.util.spec_from_file_location(HELPERS, HERE / f"{HELPERS}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[HELPERS] = module
        spec.loader.exec_module(module)
    return sys.modules[HELPERS]


@pytest.fixture(scope="session")
def helper_command():
    """``argv`` prefix running ``reliability_helpers.main()`` in a fresh interpreter."""
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); "
            f"import {HELPERS} as h; h.main(sys.argv[1:])")
    return [sys.executable, "-c", code]


@pytest.fixture(scope="session")
def subprocess_env():
    """Environment of helper subprocesses: another hash seed, one BLAS thread."""
    return {**os.environ, "PYTHONHASHSEED": "12345", "OMP_NUM_THREADS": "1"}


#: What the session's process server (:func:`process_server`) imports before its first fork,
#: beyond the sizing tables' modules it inherits: the libraries of the long runs (PyMC, ArviZ,
#: numba, xarray and netCDF4, Dask's arrays, the report's builder with Matplotlib), each
#: imported once per test process instead of once per started command (about 1-3 s of CPU
#: each). Not ``distributed``: none of its forks imported it (0.37 s of CPU for nothing).
PROCESS_PRELOAD = ("xarray", "dask.array", "netCDF4", "pymc", "arviz_base",
                   "arviz_stats", "numba", "matplotlib.figure", "matplotlib.backends.backend_agg",
                   "PIL.PngImagePlugin", "tqdm", "dprisk.validation.report.build",
                   "dprisk.inference.sweeps.sweep", "dprisk.inference.two_level.sampling",
                   "dprisk.inference.studies.monte_carlo",
                   "dprisk.inference.kernels.fused_kernels_jit")


@pytest.fixture(scope="session")
def sizing_server():
    """One fork server with the sizing tables' imports only (:data:`fork_runner.PRELOAD`, an
    address space of about 0.3 GiB below their 2 GiB cap), shared by both tables."""
    from tests.reliability.fork_runner import ForkServer

    runner = ForkServer()
    yield runner
    runner.close()


@pytest.fixture(scope="session")
def process_server(sizing_server):
    """One fork server (:mod:`tests.reliability.fork_runner`) for the modules that start,
    signal and kill command-line runs: each run a fork of it, a real process of its own.

    The server is a fork of :func:`sizing_server` that imports :data:`PROCESS_PRELOAD` more:
    the command line and :data:`fork_runner.PRELOAD` are imported once for both servers
    (``tests/conftest.py`` runs both servers' modules as one scope, on one worker).
    """
    runner = sizing_server.fork(PROCESS_PRELOAD)
    yield runner
    runner.close()
