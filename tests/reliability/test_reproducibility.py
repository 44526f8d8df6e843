"""Reproducibility: the same seed gives bit-identical results across runs, processes and cores.

Covered: the standalone Gibbs sampler, PyMC sampling (``pymc-gibbs`` and ``pymc``, cores=1
vs cores=2), Monte Carlo studies (``dprisk.inference.studies.monte_carlo.simulate_p_correct``, both
the X1
chain and the real Gibbs sampler), and sweeps (exact and Monte Carlo) in-process vs split
over the two worker processes of ``dprisk.inference.sweeps.sweep.local_cluster(2)`` and over
different
chunk sizes. "Across runs" includes a fresh interpreter with another ``PYTHONHASHSEED``
(digests compared with this process). Every test also checks that another seed changes the
result, so an implementation that ignored its seed would fail.

Budgets are small (hundreds to a few thousand draws): bit-identity does not need more. The
first run of each at the fixed seed is made once (:func:`runs`, a module fixture) and compared
with the repeated runs and with the fresh interpreter's digests.
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import xarray as xr

from dprisk.inference.sweeps.sweep import local_cluster, sweep
from dprisk.inference.two_level.gibbs import gibbs_sample
from dprisk.inference.two_level.sampling import sample_posterior

RELEASE = (1, 2, 1)
TWO_LEVELS = {"rho1": 0.1, "rho2": 0.25, "d": 3}
SEED = 20240611


def _assert_same_draws(a: xr.DataTree, b: xr.DataTree) -> None:
    """Same posterior draws and sampler statistics (attrs such as timings excluded)."""
    for group in ("posterior", "sample_stats"):
        if group in a.children or group in b.children:
            xr.testing.assert_equal(a[group].to_dataset(), b[group].to_dataset())


@pytest.fixture(scope="module")
def runs(helpers):
    """The first run of each at the fixed seed (``reliability_helpers.reference_runs``)."""
    return helpers.reference_runs()


# --------------------------------------------------------------------------- Gibbs
def test_standalone_gibbs_same_seed_same_draws(helpers, runs):
    first, second = runs["gibbs"], helpers.gibbs_draws()
    np.testing.assert_array_equal(first.x1, second.x1)
    np.testing.assert_array_equal(first.x2, second.x2)
    # a Generator in the same state is the same as its seed
    from_generator = gibbs_sample(*RELEASE, **TWO_LEVELS, draws=2000, chains=4, tune=100,
                                  random_seed=np.random.default_rng(helpers.SEED))
    np.testing.assert_array_equal(from_generator.x2, first.x2)
    other = helpers.gibbs_draws(seed=helpers.SEED + 1)
    assert not np.array_equal(other.x2, first.x2)


def test_gibbs_through_sample_posterior_ignores_cores():
    runs = [sample_posterior(*RELEASE, **TWO_LEVELS, method="gibbs", draws=1000, chains=3,
                             tune=50, cores=cores, random_seed=SEED) for cores in (1, 2)]
    _assert_same_draws(*runs)
    other = sample_posterior(*RELEASE, **TWO_LEVELS, method="gibbs", draws=1000, chains=3,
                             tune=50, random_seed=SEED + 1)
    assert not np.array_equal(other["posterior"]["X2"].values,
                              runs[0]["posterior"]["X2"].values)


# --------------------------------------------------------------------------- PyMC
@pytest.mark.parametrize("method", ["pymc-gibbs", "pymc"])
def test_pymc_same_seed_same_draws_on_one_and_two_cores(method):
    """The same seed: the same draws on one core and on two, from a model built anew.

    The first run is ``sample_posterior`` on one core (its own model and steps). A second
    model and its steps are built once (``model_from_spec``, ``pymc_steps``: what
    ``sample_posterior`` builds) and sampled twice, as ``sample_model`` allows: at another
    seed (other draws), then at the seed on two cores, which must equal the first run -- so
    neither the cores, the process nor the steps' earlier run changes the draws. One PyMC
    build fewer than three ``sample_posterior`` calls (about 1 s of CPU for ``pymc``).
    """
    from dprisk.inference.two_level.sampling import pymc_steps, sample_model
    from dprisk.models.builders.two_level import model_from_spec, validated_spec

    run = {"method": method, "draws": 300, "tune": 100, "chains": 2}
    one_core = sample_posterior(*RELEASE, **TWO_LEVELS, **run, cores=1, random_seed=SEED)
    model = model_from_spec(validated_spec(*RELEASE, **TWO_LEVELS))
    steps = pymc_steps(model, method)
    other = sample_model(model, step=steps, **run, cores=1, random_seed=SEED + 1)
    assert not np.array_equal(other["posterior"]["X2"].values,
                              one_core["posterior"]["X2"].values)
    # the same seed, on two cores, with steps that have sampled before: the same draws (a run
    # that depended on anything but its seed -- the run, the process, the cores -- differs)
    _assert_same_draws(one_core, sample_model(model, step=steps, **run, cores=2,
                                              random_seed=SEED))


# --------------------------------------------------------------------------- MC studies
@pytest.mark.parametrize("sampler", ["x1_chain", "gibbs"])
def test_mc_study_same_seed_same_result(helpers, runs, sampler):
    first = runs["mc_study" if sampler == "x1_chain" else "mc_study_gibbs"]
    assert first == helpers.mc_study(sampler=sampler)
    other = helpers.mc_study(seed=helpers.SEED + 1, sampler=sampler)
    assert {k: v for k, v in other.items() if k != "random_seed"} != {
        k: v for k, v in first.items() if k != "random_seed"}


def test_same_digests_in_a_fresh_interpreter(helpers, runs, helper_command, subprocess_env):
    """Gibbs draws, MC studies and an MC sweep: another process, another hash seed."""
    done = subprocess.run([*helper_command, "digests"], capture_output=True, text=True,
                          env=subprocess_env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == helpers.digests(runs)


# --------------------------------------------------------------------------- sweeps on Dask
#: What the Dask workers' forkserver imports once (:func:`client`): Dask's own preload and the
#: sweep's modules, which each worker imported again at its first chunk.
WORKER_PRELOAD = ("distributed", "numpy", "pandas", "dprisk.inference.sweeps.sweep",
                  "dprisk.inference.studies.monte_carlo", "dprisk.inference.studies.p_correct")


@pytest.fixture(scope="module")
def client():
    """Two Dask worker processes forked from one forkserver that imported
    :data:`WORKER_PRELOAD` once, not two spawned interpreters importing them each: each worker
    is still a process of its own, whose results reach this one pickled.

    The forkserver is this module's own, started with the workers' one-thread environment
    (``WORKER_ENVIRON``, which Dask's nanny sets in this process before it starts a worker):
    one left running by an earlier module is stopped first, and this one is stopped at the end
    (so its CPU and its workers' are this module's), the process's preload list restored.
    """
    import os

    import dask
    from distributed import Client
    from own_forkserver import own_forkserver

    from dprisk.runtime.worker_threads import WORKER_ENVIRON

    os.environ.update(WORKER_ENVIRON)
    with own_forkserver(WORKER_PRELOAD):
        with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
            cluster = local_cluster(2)
        with cluster, Client(cluster) as dask_client:
            assert len(cluster.workers) == 2
            yield dask_client


def test_mc_sweep_on_two_workers_identical_to_in_process(helpers, runs, client):
    from distributed import get_task_stream

    in_process = runs["mc_sweep"]
    assert in_process.sizes == {"d": 2, "x2": 3}
    with get_task_stream(client) as stream:
        on_workers = helpers.mc_sweep(client=client, chunk_size=1)
    # the six one-point chunks really were split over both worker processes
    assert len({task["worker"] for task in stream.data}) == 2
    xr.testing.assert_identical(on_workers, in_process)
    xr.testing.assert_identical(helpers.mc_sweep(chunk_size=4), in_process)
    other = helpers.mc_sweep(client=client, chunk_size=1, seed=helpers.SEED + 1)
    assert not np.array_equal(other["p_correct"].values, in_process["p_correct"].values)


def test_exact_sweep_on_two_workers_identical_to_in_process(client):
    grid = {"rho1": [0.1, 0.5], "rho2": 0.25, "d": [3, 27], "x2": [1, 5]}
    in_process = sweep(**grid, progress=False)
    xr.testing.assert_identical(sweep(**grid, client=client, chunk_size=1, progress=False),
                                in_process)
