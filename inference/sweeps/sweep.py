r"""Parameter sweeps of the two-level risk studies, in-process or on a Dask cluster.

A sweep evaluates one *quantity* -- by default the exact probability of a correct 0-1-loss
decision with and without the block-group release
(:func:`dprisk.inference.studies.p_correct.p_correct_two_level`,
paper §4.3, Figures 5 and 6) -- at every point of a grid

.. math::

    \{\rho_1\} \times \{\rho_2\} \times \{d\} \times \{x_2\} \times \{p\} \times \{m\}
    \times \{\text{prior}\},

where each factor is either one value (kept as an attribute) or a 1-D grid (a dimension, in
the canonical order :data:`DIMS`). The result is a labelled :class:`xarray.Dataset` with the
data variables :data:`VARIABLES` (``p_correct``, ``p_correct_no_hierarchy``, ``gain``,
``loss``; for ``method="mc"`` also ``mcse``, the Monte Carlo standard error of
``p_correct``), coordinates carrying their units, and the fixed parameters in ``attrs``
(each with ``NAME_units``).

Execution
---------
The grid is flattened in C order (last dimension fastest); point ``i`` of the flat grid is
computed by a pure function of the point's parameters (and, for Monte Carlo, of the seed
:func:`point_seed`). Points are grouped into chunks of ``chunk_size``
consecutive indices, one task per chunk, run in this process or with ``client.map`` on a
Dask cluster. The values therefore do not depend on the chunk size, the number of workers
or the order in which chunks finish: a sweep split over workers is bit-identical to the
same sweep in-process. :func:`local_cluster` starts a suitable ``LocalCluster`` (see there
for a Dask default that halves the speed of NumPy-heavy quantities in workers).

Resumable files
---------------
(:mod:`dprisk.inference.sweeps.store`; the plan and the Dataset layout are in
:mod:`dprisk.inference.sweeps.plan`.) With ``out="FILE.nc"`` every finished chunk is saved at
once in a sidecar directory ``FILE.nc.chunks/`` (one ``.npy`` per chunk, written to a
temporary name and moved into place with :func:`os.replace`, so a chunk file is either
complete or absent), next to a ``manifest.json`` of the sweep's parameters. A sweep that is
interrupted and run again with the same ``out`` and the same parameters computes only the
missing chunks; run with different parameters (or an edited ``PATH.py:NAME`` prior file,
whose SHA-256 the manifest records) it raises ``ValueError`` rather than mixing two sweeps.
When every chunk exists the Dataset is assembled, written to a temporary file beside
``FILE.nc`` and moved onto it, and the sidecar directory is removed: nothing half-written is
ever found at ``out``. The file holds no timestamps, so an interrupted-and-resumed sweep
writes the same bytes as an uninterrupted one. Running a finished sweep again returns the
stored file (after checking that it holds the same sweep).

:func:`sweep_table` runs the same sweep and returns its
:class:`~dprisk.inference.sweeps.netcdf.SweepTable` instead of a Dataset: it writes the file
with the ``netCDF4`` library directly and imports no xarray, pandas or Dask (unless a Dask
``client`` is used); the command line uses it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from dprisk.inference.sweeps.netcdf import SweepTable
from dprisk.inference.sweeps.plan import (
    DEFAULT_CHUNK_SIZE,
    DIMS,
    METHODS,
    UNITS,
    VARIABLES,
    SweepPlan,
    plan_sweep,
)
from dprisk.inference.sweeps.sizing import (
    POINT_BYTES,
    check_points,
    check_sweep_work,
    largest_count,
)
from dprisk.inference.sweeps.store import ENGINE, ChunkStore, check_out, load_finished
from dprisk.models.checks import check_positive_int
from dprisk.runtime.settings import setting
from dprisk.runtime.worker_threads import WORKER_ENVIRON  # local_cluster's workers' environment

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_SCHEDULER_TIMEOUT",
    "DIMS",
    "ENGINE",
    "METHODS",
    "POINT_BYTES",
    "SCHEDULER_TIMEOUT_ENV",
    "UNITS",
    "VARIABLES",
    "WORKER_ENVIRON",
    "SweepPlan",
    "check_sweep_work",
    "connect",
    "local_cluster",
    "plan_sweep",
    "point_seed",
    "scheduler_timeout",
    "sweep",
    "sweep_table",
]


#: Seconds a scheduler given by its address must take at most to answer, and again to have a
#: worker (:func:`connect`), unless the environment variable below says otherwise.
DEFAULT_SCHEDULER_TIMEOUT = 10.0
#: Environment variable overriding :data:`DEFAULT_SCHEDULER_TIMEOUT` (seconds).
SCHEDULER_TIMEOUT_ENV = "DPRISK_SCHEDULER_TIMEOUT"


# --------------------------------------------------------------------------- computing
def point_seed(seed: int, index: int) -> int:
    """The seed of flat-grid point ``index``: a 63-bit integer drawn from a SeedSequence.

    It is the first ``uint64`` word of ``SeedSequence(seed, spawn_key=(index,))`` (the
    ``index``-th child of ``SeedSequence(seed)``) shifted right by one bit, so that it fits
    an ``int64`` and every seed check. Children give statistically independent streams; the
    value depends only on ``(seed, index)``, never on chunking or workers.
    """
    word = np.random.SeedSequence(seed, spawn_key=(index,)).generate_state(1, np.uint64)[0]
    return int(word) >> 1


def _field(result, name: str) -> float:
    if isinstance(result, Mapping):
        if name not in result:
            raise TypeError(f"the sweep's quantity returned no {name!r} (got {sorted(result)})")
        return float(result[name])
    if not hasattr(result, name):
        raise TypeError(f"the sweep's quantity returned no {name!r} ({type(result).__name__})")
    return float(getattr(result, name))


def _compute_chunk(
    chunk: int,
    points: list[dict],
    indices: range,
    quantity: Callable,
    variables: tuple,
    mc_options: dict,
) -> tuple[int, np.ndarray]:
    """Evaluate ``quantity`` at ``points``; returns ``(chunk, values)``, values (n_vars, n).

    A pure function of its arguments: Monte Carlo point ``index`` is called with
    ``random_seed=point_seed(mc_options["seed"], index)``.
    """
    values = np.empty((len(variables), len(points)))
    options = {k: v for k, v in mc_options.items() if k != "seed"}
    for j, (index, kwargs) in enumerate(zip(indices, points, strict=True)):
        if mc_options:
            kwargs = {**kwargs, **options, "random_seed": point_seed(mc_options["seed"], index)}
        result = quantity(**kwargs)
        values[:, j] = [_field(result, name) for name in variables]
    return chunk, values


# --------------------------------------------------------------------------- execution
class _NoProgress:
    """The progress bar of a sweep run without one (tqdm, 0.05 s to import, is not loaded)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int = 1) -> None:
        """Nothing to show."""


def _progress(total: int, initial: int, enabled: bool):
    if not enabled:
        return _NoProgress()
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc="sweep", unit="chunk")


def _run_in_process(plan, quantity, missing, on_done) -> None:
    for chunk in missing:
        on_done(*_compute_chunk(
            chunk, plan.chunk_points(chunk), plan.chunk_indices(chunk), quantity,
            plan.variables, plan.mc_options,
        ))


def local_cluster(n_workers: int = 2, *, threads_per_worker: int = 1, **kwargs):
    """Start a ``dask.distributed.LocalCluster`` of worker processes suited to sweeps.

    Like ``LocalCluster(n_workers, threads_per_worker=1, processes=True)`` without the
    dashboard (the scheduler's HTTP server on a free port), except that the workers'
    environment is :data:`WORKER_ENVIRON`: Dask's default also sets
    ``MALLOC_TRIM_THRESHOLD_=65536``, which makes glibc map and unmap every large NumPy
    temporary and doubles the CPU time of the exact study in a worker (measured with
    ``benchmarks/bench_sweeps.py``). Use it as a context manager, or close it.

    Parameters
    ----------
    n_workers, threads_per_worker : int (>= 1)
    **kwargs
        Further arguments of ``LocalCluster``.
    """
    import dask
    from distributed import LocalCluster

    n_workers = check_positive_int(n_workers, "n_workers")
    threads_per_worker = check_positive_int(threads_per_worker, "threads_per_worker")
    if "dashboard_address" not in kwargs:
        # No dashboard. The scheduler still serves HTTP (health checks): on a free port, not
        # on 8787, which a second cluster on this machine finds taken (a warning, and an
        # error where warnings are errors).
        kwargs["dashboard_address"] = None
        kwargs["scheduler_kwargs"] = {"dashboard_address": ":0",
                                      **kwargs.get("scheduler_kwargs", {})}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": dict(WORKER_ENVIRON)}):
        return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                            processes=True, **kwargs)


def scheduler_timeout() -> float:
    """Seconds :func:`connect` waits: :data:`SCHEDULER_TIMEOUT_ENV` if set, else 10."""
    return float(setting(SCHEDULER_TIMEOUT_ENV))  # parsed by dprisk.runtime.settings


def connect(address: str, *, timeout: float | None = None, name: str = "client"):
    """A ``dask.distributed.Client`` of the scheduler at ``address`` that has a worker.

    Parameters
    ----------
    address : str
        The scheduler's address, e.g. ``tcp://HOST:8786``.
    timeout : float, optional
        Seconds to wait for the scheduler to answer and, again, for a worker to join
        (default :func:`scheduler_timeout`).
    name : str
        The parameter named in the refusal (``--scheduler`` on the command line).

    Raises
    ------
    ValueError
        Naming ``name``: not an address, no scheduler answered, or it has no worker, within
        ``timeout``.
    """
    from distributed import Client
    from distributed.comm.addressing import parse_address, parse_host_port

    timeout = scheduler_timeout() if timeout is None else timeout
    try:  # checked before a Client exists: one made from a malformed address is left half-built
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
        # not the process's default client: the sweep submits to it by name, and nothing of
        # a refused address may stay registered (xarray's file locks would try to reach it)
        client = Client(address, timeout=timeout, set_as_default=False)
    except ValueError as err:  # not an address at all, e.g. no port
        raise ValueError(f"{name}: {address!r} is not a Dask scheduler address ({err}); "
                         "give one such as tcp://HOST:8786") from None
    except (OSError, TimeoutError) as err:
        raise ValueError(f"{name}: no Dask scheduler answered at {address!r} within "
                         f"{timeout:g} s ({type(err).__name__})") from None
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError):
        client.close()
        raise ValueError(f"{name}: the Dask scheduler at {address!r} has no worker (none "
                         f"joined within {timeout:g} s)") from None
    return client


def _run_on_cluster(plan, quantity, missing, on_done, client) -> None:
    from distributed import Client, as_completed

    if not isinstance(client, Client):
        raise TypeError(
            f"client must be a dask.distributed.Client or a scheduler address, got {client!r}"
        )
    if not missing:
        return
    futures = client.map(
        _compute_chunk,
        missing,
        [plan.worker_points(c) for c in missing],  # a file prior's PATH absolute
        [plan.chunk_indices(c) for c in missing],
        quantity=quantity,
        variables=plan.variables,
        mc_options=plan.mc_options,
        pure=True,
    )
    try:
        # the client's own loop: a client made here from an address is not the default one
        for _, (chunk, values) in as_completed(futures, loop=client.loop, with_results=True):
            on_done(chunk, values)
    finally:
        client.cancel(futures)

def _parameters_of[**P, R](source: Callable[P, object]) -> Callable[[Callable[..., R]],
                                                                     Callable[P, R]]:
    """Give the decorated ``function(**options)`` the keyword parameters of ``source``.

    For :func:`help`, :func:`inspect.signature` and static type checkers: the parameters are
    written (and documented) once, on ``source``, which the function calls with its options
    (so ``source`` refuses an unknown or missing keyword, with a ``TypeError``). The
    ``Parameters`` section of ``source``'s docstring is copied into the function's, before
    its ``Returns``, so its API reference page documents each of them.
    """

    def decorate(function: Callable[..., R]) -> Callable[P, R]:
        returns = inspect.signature(function).return_annotation
        function.__signature__ = inspect.signature(source).replace(return_annotation=returns)
        start, end = "    Parameters\n    ----------\n", "    Returns\n    -------\n"
        if function.__doc__ and source.__doc__ and start in source.__doc__:  # None under -OO
            section = source.__doc__[source.__doc__.index(start):source.__doc__.index(end)]
            function.__doc__ = function.__doc__.replace(end, section + end, 1)
        return function

    return decorate


def sweep_table(
    *,
    rho1,
    rho2,
    d,
    x2,
    p=0.5,
    known=0,
    prior="improper",
    x1=None,
    method: str = "exact",
    mc_options: Mapping | None = None,
    client=None,
    out=None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: bool = True,
    quantity: Callable | None = None,
) -> SweepTable:
    r"""Evaluate the risk study over a grid of parameters, as a :class:`SweepTable`.

    :func:`sweep` (paper §4.3, Figures 5 and 6) runs it and returns the Dataset. Neither
    this function nor the file it writes imports xarray, pandas or Dask (a Dask ``client``
    aside).

    At every grid point the quantity is called with keyword arguments
    ``rho1, rho2, d, x2, p, known, prior`` (and ``x1`` when given); it returns a mapping or
    an object with the fields :data:`VARIABLES` (plus ``mcse`` for ``method="mc"``).

    Parameters
    ----------
    rho1, rho2 : float, str or 1-D sequence (rho > 0)
        zCDP parameters of the block and block-group releases; ``census:LEVEL`` accepted.
    d : int or 1-D sequence of int (d >= 1)
        Number of other blocks in the block group.
    x2 : int or 1-D sequence of int (x2 >= x1)
        True block-group count.
    p : float or 1-D sequence (0 < p < 1)
        Adversary's prior probability ``P[X1 = known + 1]``.
    known : int or 1-D sequence of int (known >= 0)
        ``m``, the adversary's count of the other people in the block with characteristics c.
    prior : str or list of str
        Prior of X2 given X1 (:func:`dprisk.models.priors.library.parse_prior` specifications).
    x1 : int, optional
        True block count (``known`` or ``known + 1``); by default the quantity's own default
        (the target has c: ``known + 1``). Never swept.
    method : {"exact", "mc"}
        Selects the default quantity
        (:func:`dprisk.inference.studies.p_correct.p_correct_two_level` or
        :func:`dprisk.inference.studies.monte_carlo.simulate_p_correct` without progress bar) and
        the data
        variables.
    mc_options : dict, optional
        For ``method="mc"``: ``seed`` (int >= 0, required) and further keyword arguments of
        the Monte Carlo quantity (e.g. ``datasets``, ``draws``). Point ``i`` of the flattened
        grid (C order) is called with ``random_seed=point_seed(seed, i)``.
    client : dask.distributed.Client or str, optional
        Run the chunks on this Dask client (or on a new client connected to this scheduler
        address with :func:`connect`, closed afterwards: a scheduler that does not answer,
        or has no worker, within :func:`scheduler_timeout` seconds is a ``ValueError``
        before anything is written). Default: in this process.
    out : str or path-like, optional
        A ``.nc`` file for the result; makes the sweep resumable (see the module docstring).
    chunk_size : int (>= 1)
        Grid points per task; part of the resumable state (a rerun must use the same value).
    progress : bool
        Show a progress bar (tqdm) over chunks.
    quantity : callable, optional
        The function evaluated at each point (keyword arguments as above). Options of the
        default quantity are set with :func:`functools.partial`, e.g.
        ``partial(p_correct_two_level, tail_mass=1e-12)`` (recorded in the manifest).

    Returns
    -------
    SweepTable
        Dimensions: the swept parameters in the order of :data:`DIMS`; coordinates with
        ``units``; data variables as above; fixed parameters, ``method``, ``quantity`` and
        ``mc_*`` options in ``attrs``; as NumPy arrays and dicts. With ``out`` given it is
        read back from the file.

    Raises
    ------
    ValueError
        Invalid parameters (see :func:`plan_sweep`), ``out`` not ending in ``.nc``, or
        ``out`` / its chunk directory holding a different sweep; more grid points than the
        memory limit allows (:mod:`dprisk.runtime.memory_limit`); ``out`` a directory or a
        file not written by a sweep; another process running a sweep to the same ``out``
        (:class:`dprisk.runtime.output_files.OutputInUse`).
    """
    points, names = check_points(rho1=rho1, rho2=rho2, d=d, x2=x2, p=p, known=known,
                                  prior=prior)
    check_sweep_work(points, names, method, mc_options, largest_count(d))
    plan, quantity = plan_sweep(
        rho1=rho1, rho2=rho2, d=d, x2=x2, p=p, known=known, prior=prior, x1=x1,
        method=method, mc_options=mc_options, chunk_size=chunk_size, quantity=quantity,
    )
    if isinstance(client, str):  # connected before anything is written
        own_client = connect(client)
        try:
            return _sweep_to(out, plan, quantity, own_client, progress)
        finally:
            own_client.close()
    return _sweep_to(out, plan, quantity, client, progress)


def _sweep_to(out, plan: SweepPlan, quantity, client, progress: bool) -> SweepTable:
    """Run ``plan`` (resuming from, and finishing into, ``out`` when given)."""
    store = None
    if out is not None:
        out = check_out(out)
        store = ChunkStore(out, plan)
        if out.exists() and not store.dir.exists():
            return load_finished(out, plan)
        if not store.open():
            return load_finished(out, plan)
    try:
        table = _run_plan(plan, quantity, store, client, progress)
    except BaseException:
        if store is not None:
            store.close(failed=True)
        raise
    if store is None:
        return table
    try:
        return store.finish(table)
    finally:
        store.close()


@_parameters_of(sweep_table)
def sweep(**options) -> xr.Dataset:
    """Evaluate the risk study over a grid of parameters (paper §4.3, Figures 5 and 6).

    Takes the keyword arguments of :func:`sweep_table` (the grids, ``method``, ``out``, ...)
    and runs the same sweep, writing the same resumable file, with the same errors.

    Returns
    -------
    xarray.Dataset
        Dimensions: the swept parameters in the order of :data:`DIMS`; coordinates with
        ``units``; data variables :data:`VARIABLES` (plus ``mcse`` for ``method="mc"``);
        fixed parameters, ``method``, ``quantity`` and ``mc_*`` options in ``attrs``. With
        ``out`` given it is the Dataset read back from the file.
    """
    table = sweep_table(**options)
    if options.get("out") is None:
        return table.to_dataset()
    import xarray as xr

    return xr.load_dataset(options["out"], engine=ENGINE)


def _run_plan(plan, quantity, store, client, progress) -> SweepTable:
    """Compute the chunks missing from ``store`` (all without one) and assemble the table."""
    values = np.full((len(plan.variables), plan.n_points), np.nan)
    missing = []
    for chunk in range(plan.n_chunks):
        stored = store.load(chunk) if store is not None else None
        if stored is None:
            missing.append(chunk)
        else:
            values[:, plan.chunk_indices(chunk)] = stored

    with _progress(plan.n_chunks, plan.n_chunks - len(missing), progress) as bar:

        def on_done(chunk: int, chunk_values: np.ndarray) -> None:
            if store is not None:
                store.save(chunk, chunk_values)
            values[:, plan.chunk_indices(chunk)] = chunk_values
            bar.update(1)

        if client is None:
            _run_in_process(plan, quantity, missing, on_done)
        else:
            _run_on_cluster(plan, quantity, missing, on_done, client)

    return plan.to_table(values)
