r"""Parameter sweeps of the hierarchical risk studies, in-process or on a Dask cluster.

A sweep evaluates one *quantity* -- by default the exact probability of a correct 0-1-loss
decision with and without the block-group release
(:func:`dprisk.inference.studies.p_correct_hierarchical`,
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
With ``out="FILE.nc"`` every finished chunk is saved at once in a sidecar directory
``FILE.nc.chunks/`` (one ``.npy`` per chunk, written to a temporary name and moved into
place with :func:`os.replace`, so a chunk file is either complete or absent), next to a
``manifest.json`` of the sweep's parameters. A sweep that is interrupted and run again with
the same ``out`` and the same parameters computes only the missing chunks; run with
different parameters it raises ``ValueError`` rather than mixing two sweeps. When every chunk
exists the Dataset is assembled, written to a temporary file beside ``FILE.nc`` and moved onto
it, and the sidecar directory is removed: nothing half-written is ever found at ``out``. The
file holds no timestamps, so an interrupted-and-resumed sweep writes the same bytes as an
uninterrupted one. Running a finished sweep again returns the stored file (after checking that
it holds the same sweep).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from dprisk.models.census import parse_rho
from dprisk.models.checks import check_count, check_positive_int, check_probability, check_rho
from dprisk.models.priors import PRIOR_FORMS, parse_prior

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DIMS",
    "ENGINE",
    "METHODS",
    "UNITS",
    "VARIABLES",
    "WORKER_ENVIRON",
    "SweepPlan",
    "local_cluster",
    "parse_grid",
    "plan_sweep",
    "point_seed",
    "sweep",
    "sweep_records",
]

#: Canonical order of the sweepable parameters (and of the Dataset's dimensions).
DIMS = ("rho1", "rho2", "d", "x2", "p", "known", "prior")
#: Units written to each coordinate's ``attrs["units"]``.
UNITS = {
    "rho1": "zCDP rho (dimensionless)",
    "rho2": "zCDP rho (dimensionless)",
    "d": "blocks",
    "x2": "persons",
    "p": "probability",
    "known": "persons",
    "prior": "prior specification (models.priors.parse_prior)",
    "x1": "persons",
}
_LONG_NAMES = {
    "rho1": "zCDP parameter of the block release",
    "rho2": "zCDP parameter of the block-group release",
    "d": "number of other blocks in the block group",
    "x2": "true block-group count with characteristics c",
    "p": "adversary's prior probability P[X1 = known + 1]",
    "known": "adversary's count m of the other people in the block with characteristics c",
    "prior": "adversary's prior of X2 given X1",
    "x1": "true block count with characteristics c",
}
#: Data variables of every sweep (``method="mc"`` adds ``"mcse"``).
VARIABLES = ("p_correct", "p_correct_no_hierarchy", "gain", "loss")
_VARIABLE_DOCS = {
    "p_correct": "P[correct 0-1-loss decision] using the block-group release",
    "p_correct_no_hierarchy": "P[correct 0-1-loss decision] from the block release alone",
    "gain": "P[the block-group release changes a wrong decision into a right one]",
    "loss": "P[the block-group release changes a right decision into a wrong one]",
    "mcse": "Monte Carlo standard error of p_correct",
}
#: Methods of :func:`sweep`.
METHODS = ("exact", "mc")
#: Points per task unless ``chunk_size`` is given.
DEFAULT_CHUNK_SIZE = 16
#: netCDF engine used for ``out`` files (the ``netCDF4`` package).
ENGINE = "netcdf4"
#: Environment of the worker processes of :func:`local_cluster` (one BLAS/OpenMP thread).
WORKER_ENVIRON = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}
_MANIFEST_FORMAT = 1
_MANIFEST = "manifest.json"


# --------------------------------------------------------------------------- validation
def _as_values(value, name: str) -> tuple[list, bool]:
    """``(values, swept)``: a scalar gives ``([value], False)``, a 1-D sequence ``(list, True)``."""
    if isinstance(value, (str, bytes)) or np.ndim(value) == 0:
        return [value.item() if isinstance(value, np.generic) else value], False
    arr = np.asarray(value, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a scalar or a 1-D grid, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: the grid is empty; give at least one value")
    return [v.item() if isinstance(v, np.generic) else v for v in arr], True


def _check_rho_value(v, name: str) -> float:
    if isinstance(v, str):
        return parse_rho(v, name)
    return float(check_rho(v, name))


def _check_d_value(v, name: str) -> int:
    try:
        return check_positive_int(v, name)
    except TypeError:
        raise ValueError(f"{name} must be an integer >= 1, got {v!r}") from None


def _check_count_value(v, name: str) -> int:
    try:
        return int(check_count(v, name, minimum=0))
    except TypeError:
        raise ValueError(f"{name} must be an integer >= 0, got {v!r}") from None


def _check_p_value(v, name: str) -> float:
    try:
        return float(check_probability(v, name))
    except TypeError:
        raise ValueError(
            f"{name} must be a probability strictly between 0 and 1, got {v!r}"
        ) from None


def _check_prior_value(v, name: str) -> str:
    if not isinstance(v, str):
        raise ValueError(f"{name} must be a prior specification ({PRIOR_FORMS}), got {v!r}")
    return parse_prior(v).spec


_CHECKERS: dict[str, Callable] = {
    "rho1": _check_rho_value,
    "rho2": _check_rho_value,
    "d": _check_d_value,
    "x2": _check_count_value,
    "p": _check_p_value,
    "known": _check_count_value,
    "prior": _check_prior_value,
}


def _check_grid(values: Sequence, name: str) -> list:
    checked = [_CHECKERS[name](v, name) for v in values]
    if len(set(checked)) != len(checked):
        dup = next(v for v in checked if checked.count(v) > 1)
        raise ValueError(f"{name}: the grid holds {dup!r} more than once")
    return checked


def _check_mc_options(method: str, mc_options) -> dict:
    if mc_options is None:
        mc_options = {}
    if not isinstance(mc_options, Mapping):
        raise TypeError(f"mc_options must be a dict, got {mc_options!r}")
    options = dict(mc_options)
    if method != "mc":
        if options:
            raise ValueError("mc_options is only used with method='mc'")
        return options
    if "seed" not in options:
        raise ValueError("mc_options must contain 'seed' (an integer >= 0) for method='mc'")
    options["seed"] = check_positive_int(options["seed"], "mc_options['seed']", minimum=0)
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, (bool, int, float, str)):
            raise TypeError(
                f"mc_options must map names to numbers or strings, got {key!r}: {value!r}"
            )
    return options


def _quantity_name(quantity) -> str:
    if isinstance(quantity, functools.partial):
        args = ", ".join(
            [repr(a) for a in quantity.args]
            + [f"{k}={v!r}" for k, v in sorted(quantity.keywords.items())]
        )
        return f"partial({_quantity_name(quantity.func)}, {args})"
    target = quantity if hasattr(quantity, "__qualname__") else type(quantity)
    return f"{target.__module__}:{target.__qualname__}"


def _default_quantity(method: str) -> Callable:
    if method == "exact":
        from dprisk.inference.studies import p_correct_hierarchical

        return p_correct_hierarchical
    from dprisk.inference.mc_studies import simulate_p_correct

    return functools.partial(simulate_p_correct, progress=False)


# --------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class SweepPlan:
    """A validated sweep: the grids, the fixed parameters and how the points are chunked.

    Attributes
    ----------
    grids : dict of str to tuple
        The swept parameters in canonical order (:data:`DIMS`) and their values.
    fixed : dict of str to scalar
        The parameters held fixed (including ``x1`` when given).
    method : str
        ``"exact"`` or ``"mc"``.
    mc_options : dict
        Keyword arguments of the Monte Carlo quantity; ``seed`` is the root seed.
    chunk_size : int
        Consecutive flat-grid points per task.
    quantity_name : str
        ``module:qualname`` of the quantity (part of the manifest).
    variables : tuple of str
        Data variables the quantity must return.
    """

    grids: dict
    fixed: dict
    method: str
    mc_options: dict
    chunk_size: int
    quantity_name: str
    variables: tuple

    @property
    def dims(self) -> tuple[str, ...]:
        """The swept parameters, in canonical order."""
        return tuple(self.grids)

    @property
    def shape(self) -> tuple[int, ...]:
        """Grid shape, one entry per dimension."""
        return tuple(len(v) for v in self.grids.values())

    @property
    def n_points(self) -> int:
        """Number of grid points, ``prod(shape)`` (1 when nothing is swept)."""
        return math.prod(self.shape)

    @property
    def n_chunks(self) -> int:
        """Number of tasks, ``ceil(n_points / chunk_size)``."""
        return -(-self.n_points // self.chunk_size)

    def chunk_indices(self, chunk: int) -> range:
        """Flat-grid indices of chunk ``chunk``."""
        start = chunk * self.chunk_size
        return range(start, min(start + self.chunk_size, self.n_points))

    def point(self, index: int) -> dict:
        """Keyword arguments of the quantity at flat-grid point ``index``."""
        kwargs = dict(self.fixed)
        if self.grids:
            position = np.unravel_index(index, self.shape)
            for (name, values), i in zip(self.grids.items(), position, strict=True):
                kwargs[name] = values[int(i)]
        return kwargs

    def chunk_points(self, chunk: int) -> list[dict]:
        """Keyword arguments of every point of chunk ``chunk``."""
        return [self.point(i) for i in self.chunk_indices(chunk)]

    def identity(self) -> dict:
        """What defines the results (stored in the output file's ``sweep_manifest`` attr)."""
        return {
            "format": _MANIFEST_FORMAT,
            "quantity": self.quantity_name,
            "method": self.method,
            "grids": {k: list(v) for k, v in self.grids.items()},
            "fixed": dict(self.fixed),
            "mc_options": dict(self.mc_options),
            "variables": list(self.variables),
        }

    def manifest(self) -> dict:
        """:meth:`identity` plus the chunking (the sidecar directory's ``manifest.json``)."""
        return {**self.identity(), "chunk_size": self.chunk_size, "n_chunks": self.n_chunks}


def plan_sweep(
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
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    quantity: Callable | None = None,
) -> tuple[SweepPlan, Callable]:
    """Validate the arguments of :func:`sweep` and return ``(plan, quantity)``.

    Raises
    ------
    ValueError
        Naming the parameter: empty or multi-dimensional grid, duplicate grid values,
        ``rho <= 0``, ``d`` not an integer ``>= 1``, a negative count, ``p`` outside (0, 1),
        an unknown prior specification, a prior without support for some ``known``,
        ``x2 < x1``, an unknown method.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    options = _check_mc_options(method, mc_options)
    given = {"rho1": rho1, "rho2": rho2, "d": d, "x2": x2, "p": p, "known": known,
             "prior": prior}
    grids, fixed = {}, {}
    for name in DIMS:
        values, swept = _as_values(given[name], name)
        values = _check_grid(values, name)
        if swept:
            grids[name] = tuple(values)
        else:
            fixed[name] = values[0]
    if x1 is not None:
        fixed["x1"] = _check_count_value(x1, "x1")
    _check_combinations(grids, fixed)
    if quantity is None:
        quantity = _default_quantity(method)
    if not callable(quantity):
        raise TypeError(f"quantity must be a callable, got {quantity!r}")
    variables = (*VARIABLES, "mcse") if method == "mc" else VARIABLES
    plan = SweepPlan(grids, fixed, method, options, chunk_size, _quantity_name(quantity),
                     variables)
    return plan, quantity


def _values(name: str, grids: dict, fixed: dict) -> tuple:
    return grids[name] if name in grids else (fixed[name],)


def _check_combinations(grids: dict, fixed: dict) -> None:
    """Checks that involve two parameters: prior support given ``known``, ``x2 >= x1``."""
    knowns = _values("known", grids, fixed)
    for spec in _values("prior", grids, fixed):
        prior = parse_prior(spec)
        for m in knowns:
            prior.check_support(m)
    x2_min = min(_values("x2", grids, fixed))
    if "x1" in fixed:
        x1 = fixed["x1"]
        bad = [m for m in knowns if x1 not in (m, m + 1)]
        if bad:
            raise ValueError(f"x1 must be known or known + 1, got x1 = {x1} with known = {bad[0]}")
        x1_max = x1
    else:
        x1_max = max(knowns) + 1  # the target has c: x1 = known + 1
    if x2_min < x1_max:
        raise ValueError(
            f"x2 must be >= x1 (the block lies in the block group), got x2 = {x2_min} "
            f"with x1 = {x1_max}"
        )


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
    ``seed=point_seed(mc_options["seed"], index)``.
    """
    values = np.empty((len(variables), len(points)))
    options = {k: v for k, v in mc_options.items() if k != "seed"}
    for j, (index, kwargs) in enumerate(zip(indices, points, strict=True)):
        if mc_options:
            kwargs = {**kwargs, **options, "seed": point_seed(mc_options["seed"], index)}
        result = quantity(**kwargs)
        values[:, j] = [_field(result, name) for name in variables]
    return chunk, values


# --------------------------------------------------------------------------- chunk store
class _ChunkStore:
    """The sidecar directory ``out + ".chunks"``: manifest and one ``.npy`` per chunk."""

    def __init__(self, out: Path, plan: SweepPlan):
        self.out = out
        self.dir = out.with_name(out.name + ".chunks")
        self.plan = plan
        self.manifest = json.loads(json.dumps(plan.manifest()))

    def open(self) -> None:
        """Create the directory and manifest, or check an existing manifest matches."""
        path = self.dir / _MANIFEST
        if path.exists():
            stored = json.loads(path.read_text())
            if stored != self.manifest:
                raise ValueError(
                    f"out: {self.dir} holds the chunks of a different sweep (other parameters,"
                    f" quantity or chunk_size); rerun it with its own parameters, or delete "
                    f"{self.dir} to start this one"
                )
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, lambda f: f.write(_canonical_json(self.manifest).encode()))

    def chunk_path(self, chunk: int) -> Path:
        """File of chunk ``chunk``."""
        return self.dir / f"chunk_{chunk:07d}.npy"

    def load(self, chunk: int) -> np.ndarray | None:
        """Values of a finished chunk, or None when it is missing or unreadable."""
        path = self.chunk_path(chunk)
        if not path.exists():
            return None
        try:
            values = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None
        expected = (len(self.plan.variables), len(self.plan.chunk_indices(chunk)))
        return values if values.shape == expected else None

    def save(self, chunk: int, values: np.ndarray) -> None:
        """Write a chunk atomically (temporary file, then :func:`os.replace`)."""
        _write_atomic(self.chunk_path(chunk), lambda f: np.save(f, values, allow_pickle=False))

    def remove(self) -> None:
        """Delete the directory once the output file is in place."""
        shutil.rmtree(self.dir, ignore_errors=True)


def _canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


@contextlib.contextmanager
def _atomic_path(path: Path):
    """Yield a temporary path beside ``path``; move it onto ``path`` if the block succeeds.

    On an exception the temporary file is deleted and ``path`` is left untouched.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_atomic(path: Path, write: Callable) -> None:
    """Write ``path`` with ``write(binary_file)`` through :func:`_atomic_path`."""
    with _atomic_path(path) as tmp, open(tmp, "wb") as f:
        write(f)


# --------------------------------------------------------------------------- execution
def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, desc="sweep", unit="chunk")


def _run_in_process(plan, quantity, missing, on_done) -> None:
    for chunk in missing:
        on_done(*_compute_chunk(
            chunk, plan.chunk_points(chunk), plan.chunk_indices(chunk), quantity,
            plan.variables, plan.mc_options,
        ))


def local_cluster(n_workers: int = 2, *, threads_per_worker: int = 1, **kwargs):
    """Start a ``dask.distributed.LocalCluster`` of worker processes suited to sweeps.

    Like ``LocalCluster(n_workers, threads_per_worker=1, processes=True)`` without the
    dashboard, except that the workers' environment is :data:`WORKER_ENVIRON`: Dask's default
    also sets ``MALLOC_TRIM_THRESHOLD_=65536``, which makes glibc map and unmap every large
    NumPy temporary and doubles the CPU time of the exact study in a worker (measured with
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
    kwargs.setdefault("dashboard_address", None)
    with dask.config.set({"distributed.nanny.pre-spawn-environ": dict(WORKER_ENVIRON)}):
        return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                            processes=True, **kwargs)


def _run_on_cluster(plan, quantity, missing, on_done, client) -> None:
    from distributed import Client, as_completed

    if isinstance(client, str):
        with Client(client) as own_client:
            _run_on_cluster(plan, quantity, missing, on_done, own_client)
        return
    if not isinstance(client, Client):
        raise TypeError(
            f"client must be a dask.distributed.Client or a scheduler address, got {client!r}"
        )
    if not missing:
        return
    futures = client.map(
        _compute_chunk,
        missing,
        [plan.chunk_points(c) for c in missing],
        [plan.chunk_indices(c) for c in missing],
        quantity=quantity,
        variables=plan.variables,
        mc_options=plan.mc_options,
        pure=True,
    )
    try:
        for _, (chunk, values) in as_completed(futures, with_results=True):
            on_done(chunk, values)
    finally:
        client.cancel(futures)


# --------------------------------------------------------------------------- assembling
def _assemble(plan: SweepPlan, values: np.ndarray) -> xr.Dataset:
    """The labelled Dataset from the flat values, shape ``(n_vars, n_points)``."""
    coords = {}
    for name, grid in plan.grids.items():
        coords[name] = xr.Variable(
            name, np.asarray(grid),
            attrs={"units": UNITS[name], "long_name": _LONG_NAMES[name]},
        )
    data_vars = {
        var: xr.Variable(
            plan.dims, values[k].reshape(plan.shape),
            attrs={"units": "probability", "long_name": _VARIABLE_DOCS[var]},
        )
        for k, var in enumerate(plan.variables)
    }
    attrs = {}
    for name in (*DIMS, "x1"):
        if name in plan.fixed:
            attrs[name] = plan.fixed[name]
            attrs[f"{name}_units"] = UNITS[name]
    attrs["method"] = plan.method
    attrs["quantity"] = plan.quantity_name
    for key, value in sorted(plan.mc_options.items()):
        attrs[f"mc_{key}"] = int(value) if isinstance(value, bool) else value
    attrs["sweep_manifest"] = _canonical_json(plan.identity())
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


def _check_out(out) -> Path:
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path ending in .nc, got {out!r}")
    path = Path(out)
    if path.suffix != ".nc":
        raise ValueError(f"out must be a path ending in .nc (a netCDF file), got {str(out)!r}")
    probe = path.resolve().parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"out {str(out)!r} cannot be created: {str(probe)!r} is not a "
                         "writable directory")
    return path.resolve()


def _load_finished(out: Path, plan: SweepPlan) -> xr.Dataset:
    ds = xr.load_dataset(out, engine=ENGINE)
    stored = ds.attrs.get("sweep_manifest")
    if stored is None or json.loads(stored) != json.loads(_canonical_json(plan.identity())):
        raise ValueError(
            f"out: {out} already holds the results of a different sweep; delete it or "
            "choose another path"
        )
    return ds


def sweep(
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
) -> xr.Dataset:
    r"""Evaluate the risk study over a grid of parameters (paper §4.3, Figures 5 and 6).

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
        Prior of X2 given X1 (:func:`dprisk.models.priors.parse_prior` specifications).
    x1 : int, optional
        True block count (``known`` or ``known + 1``); by default the quantity's own default
        (the target has c: ``known + 1``). Never swept.
    method : {"exact", "mc"}
        Selects the default quantity (:func:`dprisk.inference.studies.p_correct_hierarchical` or
        :func:`dprisk.inference.mc_studies.simulate_p_correct` without progress bar) and the data
        variables.
    mc_options : dict, optional
        For ``method="mc"``: ``seed`` (int >= 0, required) and further keyword arguments of
        the Monte Carlo quantity (e.g. ``datasets``, ``draws``). Point ``i`` of the flattened
        grid (C order) is called with ``seed=point_seed(seed, i)``.
    client : dask.distributed.Client or str, optional
        Run the chunks on this Dask client (or on a new client connected to this scheduler
        address, closed afterwards). Default: in this process.
    out : str or path-like, optional
        A ``.nc`` file for the result; makes the sweep resumable (see the module docstring).
    chunk_size : int (>= 1)
        Grid points per task; part of the resumable state (a rerun must use the same value).
    progress : bool
        Show a progress bar (tqdm) over chunks.
    quantity : callable, optional
        The function evaluated at each point (keyword arguments as above). Options of the
        default quantity are set with :func:`functools.partial`, e.g.
        ``partial(p_correct_hierarchical, tail_mass=1e-12)`` (recorded in the manifest).

    Returns
    -------
    xarray.Dataset
        Dimensions: the swept parameters in the order of :data:`DIMS`; coordinates with
        ``units``; data variables as above; fixed parameters, ``method``, ``quantity`` and
        ``mc_*`` options in ``attrs``. With ``out`` given it is the Dataset read back from
        the file.

    Raises
    ------
    ValueError
        Invalid parameters (see :func:`plan_sweep`), ``out`` not ending in ``.nc``, or
        ``out`` / its chunk directory holding a different sweep.
    """
    plan, quantity = plan_sweep(
        rho1=rho1, rho2=rho2, d=d, x2=x2, p=p, known=known, prior=prior, x1=x1,
        method=method, mc_options=mc_options, chunk_size=chunk_size, quantity=quantity,
    )
    store = None
    if out is not None:
        out = _check_out(out)
        store = _ChunkStore(out, plan)
        if out.exists() and not store.dir.exists():
            return _load_finished(out, plan)
        store.open()

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

    ds = _assemble(plan, values)
    if store is None:
        return ds
    with _atomic_path(out) as tmp:
        ds.to_netcdf(tmp, engine=ENGINE)
    store.remove()
    return xr.load_dataset(out, engine=ENGINE)


# --------------------------------------------------------------------------- command line
def _parse_number(text: str, name: str, kind: type):
    item = text.strip()
    if kind is float and item.startswith("census:"):
        return parse_rho(item, name)
    try:
        return kind(item)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise ValueError(f"{name}: grid item {text!r} is not {what}") from None


def _parse_range(text: str, name: str, kind: type) -> list:
    parts = [part.strip() for part in text.split(":")]
    if kind is int:
        if len(parts) not in (2, 3):
            raise ValueError(f"{name}: integer range must be A:B or A:B:STEP, got {text!r}")
        start, stop, *step = (_parse_number(part, name, int) for part in parts)
        step = step[0] if step else 1
        if step < 1 or stop < start:
            raise ValueError(f"{name}: range {text!r} needs A <= B and STEP >= 1")
        return list(range(start, stop + 1, step))
    scale = "linear"
    if len(parts) == 4 and parts[3] in ("lin", "log"):
        scale = "log" if parts.pop() == "log" else "linear"
    if len(parts) != 3:
        raise ValueError(f"{name}: float range must be A:B:N or A:B:N:log, got {text!r}")
    start, stop = (_parse_number(part, name, float) for part in parts[:2])
    n = _parse_number(parts[2], name, int)
    if n < 1 or (n == 1 and start != stop):
        raise ValueError(f"{name}: range {text!r} needs N >= 2 points (N = 1 only with A = B)")
    if scale == "log":
        if start <= 0 or stop <= 0:
            raise ValueError(f"{name}: log range {text!r} needs A > 0 and B > 0")
        grid = np.geomspace(start, stop, n)
    else:
        grid = np.linspace(start, stop, n)
    grid[0], grid[-1] = start, stop  # exact end points
    return [float(v) for v in grid]


def parse_grid(text: str, name: str, kind: type = float) -> list:
    """Parse a grid written on the command line.

    Forms (``kind`` int / float / str):

    * a comma list: ``1,2,5`` (a single value ``5`` is a grid of one point);
    * ``int``: ``A:B`` (the integers A..B inclusive) or ``A:B:STEP``;
    * ``float``: ``A:B:N`` (N points from A to B, linearly spaced, end points included) or
      ``A:B:N:log`` (geometrically spaced, A, B > 0); list items may be ``census:LEVEL``
      (the 2020 Census rho of that level, :func:`dprisk.models.census.parse_rho`);
    * ``str`` (priors): a comma list of prior specifications, e.g.
      ``improper,truncated:10,point:1``.

    When ``name`` is one of :data:`DIMS` the values are validated like :func:`sweep`'s
    arguments (e.g. ``rho > 0``, ``d >= 1``, no duplicates).

    Parameters
    ----------
    text : str
        The grid.
    name : str
        Parameter name used in error messages (and to pick the validation).
    kind : {float, int, str}
        Type of the values.

    Returns
    -------
    list
        The grid values, in the order given.

    Raises
    ------
    ValueError
        One line naming the parameter: empty grid, unparseable item, bad range, or a value
        outside the parameter's allowed range.
    """
    if kind not in (float, int, str):
        raise TypeError(f"kind must be float, int or str, got {kind!r}")
    if not isinstance(text, str):
        raise TypeError(f"{name}: grid must be a string, got {text!r}")
    text = text.strip()
    if not text:
        raise ValueError(f"{name}: the grid is empty; give a value, a comma list or a range")
    if kind is str:
        values = [item.strip() for item in text.split(",")]
    elif "," not in text and ":" in text and not text.startswith("census:"):
        values = _parse_range(text, name, kind)
    else:
        values = [_parse_number(item, name, kind) for item in text.split(",")]
    if any(isinstance(v, str) and not v for v in values):
        raise ValueError(f"{name}: the grid {text!r} has an empty item")
    if name in _CHECKERS:
        values = _check_grid(values, name)
    return values


def _python_scalar(value):
    return value.item() if isinstance(value, np.generic) else value


def sweep_records(ds: xr.Dataset) -> list[dict]:
    """Flatten a sweep's Dataset into one record per grid point (C order of its dims).

    Each record holds every parameter (swept ones from the coordinates, fixed ones from
    ``attrs``) and every data variable, as plain Python numbers and strings, e.g.
    ``{"rho1": 0.099, "rho2": 0.25, "d": 27, "x2": 1, "p": 0.5, "known": 0,
    "prior": "improper", "p_correct": 0.59, ...}``.
    """
    fixed = {name: _python_scalar(ds.attrs[name]) for name in (*DIMS, "x1") if name in ds.attrs}
    dims = [dim for dim in DIMS if dim in ds.dims]
    names = list(ds.data_vars)
    shape = tuple(ds.sizes[dim] for dim in dims)
    coords = {dim: ds[dim].values for dim in dims}
    data = {name: ds[name].transpose(*dims).values for name in names}
    records = []
    for position in np.ndindex(*shape):
        record = dict(fixed)
        for dim, i in zip(dims, position, strict=True):
            record[dim] = _python_scalar(coords[dim][i])
        for name in names:
            record[name] = float(data[name][position])
        records.append({key: record[key] for key in sorted(record, key=_record_order)})
    return records


def _record_order(key: str) -> tuple[int, str]:
    order = (*DIMS, "x1", *VARIABLES, "mcse")
    return (order.index(key), key) if key in order else (len(order), key)
