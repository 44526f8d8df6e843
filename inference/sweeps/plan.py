r"""The plan of a parameter sweep: validated grids, fixed parameters, chunks and layout.

:func:`plan_sweep` checks the arguments of :func:`dprisk.inference.sweeps.sweep.sweep` once and
returns a :class:`SweepPlan`: the swept parameters (1-D grids, in the canonical order
:data:`DIMS`) and the fixed ones, the method, the Monte Carlo options, and how the C-order
flattened grid of

.. math::

    \{\rho_1\} \times \{\rho_2\} \times \{d\} \times \{x_2\} \times \{p\} \times \{m\}
    \times \{\text{prior}\}

is cut into chunks of consecutive points. :meth:`SweepPlan.to_table` turns the computed
values into the labelled :class:`~dprisk.inference.sweeps.netcdf.SweepTable` (coordinates with
units, fixed parameters in ``attrs``; no xarray), :meth:`SweepPlan.to_dataset` into the same
content as an :class:`xarray.Dataset`. :func:`check_grid` validates one parameter's grid
values (also used by the command line's grid parser).
"""

from __future__ import annotations

import collections
import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dprisk.inference.sweeps.netcdf import SweepTable
from dprisk.models.census.allocation import parse_rho
from dprisk.models.checks import check_count, check_positive_int, check_probability, check_rho
from dprisk.models.priors.files import prior_file_digest, resolved_prior_spec
from dprisk.models.priors.library import PRIOR_FORMS, parse_prior

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DIMS",
    "MANIFEST_FORMAT",
    "METHODS",
    "UNITS",
    "VARIABLES",
    "SweepPlan",
    "canonical_json",
    "check_grid",
    "plan_sweep",
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
    "prior": "prior specification (dprisk.models.priors.library.parse_prior)",
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
#: Methods of :func:`dprisk.inference.sweeps.sweep.sweep`.
METHODS = ("exact", "mc")
#: Points per task unless ``chunk_size`` is given.
DEFAULT_CHUNK_SIZE = 16
#: Version of the manifest layout (part of every manifest).
MANIFEST_FORMAT = 1


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


def check_grid(values: Sequence, name: str) -> list:
    """Validate the grid values of parameter ``name`` (one of :data:`DIMS`).

    Each value is checked like the argument of :func:`dprisk.inference.sweeps.sweep.sweep`
    (``rho > 0`` or ``census:LEVEL``, ``d`` an integer ``>= 1``, counts ``>= 0``,
    ``0 < p < 1``, a prior specification) and the values must be distinct.

    Returns
    -------
    list
        The checked values (floats, ints or canonical prior specifications).

    Raises
    ------
    ValueError
        One line naming ``name``: a value outside its range, or a value given twice.
    """
    if name not in _CHECKERS:
        raise ValueError(f"name must be one of {', '.join(DIMS)}, got {name!r}")
    checked = [_CHECKERS[name](v, name) for v in values]
    counts = collections.Counter(checked)  # linear: list.count per value took 80 s at 60000
    if len(counts) != len(checked):
        dup = next(v for v in checked if counts[v] > 1)
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


#: The Monte Carlo study's module, imported only where a sweep runs it: it brings SciPy's
#: special functions (0.38 s of an exact ``dprisk sweep``'s 0.6 s on the 2-core machine).
MONTE_CARLO_MODULE = "dprisk.inference.studies.monte_carlo"


def _default_quantity(method: str) -> Callable:
    if method == "exact":
        from dprisk.inference.studies.p_correct import p_correct_two_level

        return p_correct_two_level
    from dprisk.inference.studies.monte_carlo import simulate_p_correct

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
    prior_files : dict of str to str
        The SHA-256 of the file of each ``PATH.py:NAME`` prior of the sweep, by spec
        (:func:`dprisk.models.priors.files.prior_file_digest`): the same spec names another
        prior once its file is edited.
    """

    grids: dict
    fixed: dict
    method: str
    mc_options: dict
    chunk_size: int
    quantity_name: str
    variables: tuple
    prior_files: dict = field(default_factory=dict)

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

    def worker_points(self, chunk: int) -> list[dict]:
        """:meth:`chunk_points` as sent to a Dask worker: a ``PATH.py:NAME`` PATH absolute.

        A worker in another working directory read a relative PATH as its own file: the
        results of another prior (or none), labelled with this spec and its file's digest.
        """
        return [{**kwargs, "prior": resolved_prior_spec(kwargs["prior"])} if "prior" in kwargs
                else kwargs for kwargs in self.chunk_points(chunk)]

    def identity(self) -> dict:
        """What defines the results (stored in the output file's ``sweep_manifest`` attr)."""
        return {
            "format": MANIFEST_FORMAT,
            "quantity": self.quantity_name,
            "method": self.method,
            "grids": {k: list(v) for k, v in self.grids.items()},
            "fixed": dict(self.fixed),
            "mc_options": dict(self.mc_options),
            "variables": list(self.variables),
            # only with a file prior: the identity of every other sweep is as it was
            **({"prior_files": dict(self.prior_files)} if self.prior_files else {}),
        }

    def manifest(self) -> dict:
        """:meth:`identity` plus the chunking (the sidecar directory's ``manifest.json``)."""
        return {**self.identity(), "chunk_size": self.chunk_size, "n_chunks": self.n_chunks}

    def to_table(self, values: np.ndarray) -> SweepTable:
        """The labelled table of the sweep from the flat values, shape ``(n_vars, n_points)``.

        Dimensions are :attr:`dims` (coordinates with ``units`` and ``long_name``), one data
        variable per entry of :attr:`variables`, and in ``attrs`` the fixed parameters (each
        with ``NAME_units``), ``method``, ``quantity``, the ``mc_*`` options and the
        ``sweep_manifest`` (:meth:`identity` as canonical JSON).
        """
        coords, var_attrs = {}, {}
        for name, grid in self.grids.items():
            coords[name] = np.asarray(grid)
            var_attrs[name] = {"units": UNITS[name], "long_name": _LONG_NAMES[name]}
        data = {}
        for k, var in enumerate(self.variables):
            data[var] = values[k].reshape(self.shape)
            var_attrs[var] = {"units": "probability", "long_name": _VARIABLE_DOCS[var]}
        attrs = {}
        for name in (*DIMS, "x1"):
            if name in self.fixed:
                attrs[name] = self.fixed[name]
                attrs[f"{name}_units"] = UNITS[name]
        attrs["method"] = self.method
        attrs["quantity"] = self.quantity_name
        for key, value in sorted(self.mc_options.items()):
            attrs[f"mc_{key}"] = int(value) if isinstance(value, bool) else value
        attrs["sweep_manifest"] = canonical_json(self.identity())
        return SweepTable(self.dims, coords, data, var_attrs, attrs)

    def to_dataset(self, values: np.ndarray) -> xr.Dataset:
        """:meth:`to_table` as an :class:`xarray.Dataset` (imports xarray)."""
        return self.to_table(values).to_dataset()


def plan_sweep(*, rho1, rho2, d, x2, p=0.5, known=0, prior="improper", x1=None,
               method: str = "exact", mc_options: Mapping | None = None,
               chunk_size: int = DEFAULT_CHUNK_SIZE,
               quantity: Callable | None = None) -> tuple[SweepPlan, Callable]:
    """Validate the arguments of a sweep and return ``(plan, quantity)``.

    The parameters are those of :func:`dprisk.inference.sweeps.sweep.sweep_table` (without
    ``client``, ``out`` and ``progress``); ``quantity`` is the default quantity of ``method``
    when None.

    Raises
    ------
    ValueError
        Naming the parameter: empty or multi-dimensional grid, duplicate grid values,
        ``rho <= 0``, ``d`` not an integer ``>= 1``, a negative count, ``p`` outside (0, 1),
        an unknown prior specification, a prior without support for some ``known``,
        ``x2 < x1``, an unknown method; a point the study would refuse (``p < 1e-300``,
        ``rho2 + rho1/d > 1e6``, an exact release grid above the memory or work limit),
        before any point is computed.
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
        values = check_grid(values, name)
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
    _check_scenarios(grids, fixed, quantity, options)
    variables = (*VARIABLES, "mcse") if method == "mc" else VARIABLES
    digests = {spec: prior_file_digest(spec) for spec in _values("prior", grids, fixed)}
    plan = SweepPlan(grids, fixed, method, options, chunk_size, _quantity_name(quantity),
                     variables, {spec: digest for spec, digest in digests.items() if digest})
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


def _check_scenarios(grids: dict, fixed: dict, quantity: Callable, mc_options: dict) -> None:
    """Refuse, before any point is computed, a grid holding a point the study would refuse.

    Without this a point refused by the study (``p`` below ``P_MIN``, a prior whose values
    fail for one ``known``, ``rho2 + rho1/d`` above the tables' limit, a release grid above
    the memory or work limit) stopped the sweep after its earlier chunks were stored, and
    their store then refused the corrected rerun as a different sweep. Checked:
    :meth:`~dprisk.models.scenario.Scenario.two_level` of every ``p`` and of every
    ``(known, prior)`` pair (the checks that involve neither rho nor ``d``); the precision
    ``rho2 + rho1/d`` at its largest, max ``rho1``, max ``rho2``, min ``d``; and for the exact
    study (:func:`dprisk.inference.studies.p_correct.p_correct_two_level`, or a
    :func:`functools.partial` of it) its release grid at its largest, min ``rho1``, min
    ``rho2``, max ``d``: ``n2`` values of ``x2*`` fall with ``rho2`` and the ``2 d K(rho1,
    tau / 4d) + 1`` values of ``y1*`` grow with ``d`` and fall with ``rho1``; for the Monte
    Carlo study (:func:`~dprisk.inference.studies.monte_carlo.simulate_p_correct`) its
    posterior tables and work (:func:`~dprisk.inference.studies.monte_carlo.check_study_cost`)
    at the same point, with ``mc_options``' ``datasets`` and ``draws`` (the study's defaults
    when not given): the tables' window widens as ``rho2 + rho1/d`` falls and the noise sums
    grow with ``d``.
    """
    from dprisk.inference.kernels.table_kernels import check_precision
    from dprisk.inference.studies.p_correct import check_study_work, p_correct_two_level
    from dprisk.inference.studies.setup import DEFAULT_TAIL_MASS
    from dprisk.models.numerics import check_tail_mass
    from dprisk.models.scenario import Scenario

    first = {name: _values(name, grids, fixed)[0]
             for name in ("rho1", "rho2", "d", "p", "known", "prior")}

    def scenario(**at) -> Scenario:
        return Scenario.two_level(**{**first, **at})

    for p in _values("p", grids, fixed):
        scenario(p=p)
    for spec in _values("prior", grids, fixed):
        for m in _values("known", grids, fixed):
            scenario(known=m, prior=spec)
    rho1s, rho2s, ds = (_values(name, grids, fixed) for name in ("rho1", "rho2", "d"))
    check_precision(scenario(rho1=max(rho1s), rho2=max(rho2s), d=min(ds)))
    study, options = quantity, {}
    while isinstance(study, functools.partial):
        study, options = study.func, {**study.keywords, **options}
    costliest = scenario(rho1=min(rho1s), rho2=min(rho2s), d=max(ds))
    if study is p_correct_two_level:
        check_study_work(costliest, check_tail_mass(options.get("tail_mass", DEFAULT_TAIL_MASS)))
    if getattr(study, "__module__", None) != MONTE_CARLO_MODULE:
        return  # the Monte Carlo study's module (SciPy's special functions) only for its sweeps
    from dprisk.inference.studies.monte_carlo import check_study_cost, simulate_p_correct

    if study is simulate_p_correct:
        options = {**options, **mc_options}
        check_study_cost(costliest, check_positive_int(options.get("datasets", 10_000),
                                                       "datasets", minimum=2),
                         check_positive_int(options.get("draws", 1000), "draws"))


def canonical_json(obj) -> str:
    """``obj`` as JSON with sorted keys and no spaces (the form stored in manifests)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
