"""Grids written on the command line (``dprisk sweep``) and the records printed back.

:func:`parse_grid` turns ``1,2,5``, ``1:10``, ``0.01:100:5:log`` or ``improper,point:1`` into
a list of values checked like the arguments of :func:`dprisk.inference.sweeps.sweep.sweep`;
:func:`sweep_records` flattens a sweep's table (or Dataset) into one plain record per grid
point (the ``records`` of ``dprisk sweep --json``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dprisk.inference.sweeps.netcdf import SweepTable
from dprisk.inference.sweeps.plan import DIMS, VARIABLES, check_grid

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr
from dprisk.models.census.allocation import parse_rho
from dprisk.runtime.ascii_numbers import ascii_number, parse_number

__all__ = ["GRID_SYNTAX", "parse_grid", "sweep_records"]

#: The grid forms, as shown in ``dprisk sweep --help``.
GRID_SYNTAX = (
    "Each grid option takes one value, a comma list (1,2,5; fractions such as 1/864 and "
    "census:LEVEL are accepted where a number is), an integer range A:B or A:B:STEP "
    "(inclusive), or for numbers A:B:N (N points from A to B, end points included) or "
    "A:B:N:log (geometric spacing, A, B > 0)."
)


def _parse_number(text: str, name: str, kind: type):
    """One grid item: an integer, a number or fraction, or (for rho) ``census:LEVEL``."""
    item = text.strip()
    if kind is float and item.startswith("census:"):
        return parse_rho(item, name)
    try:
        return parse_number(item, fractions=True) if kind is float else kind(ascii_number(item))
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise ValueError(f"{name}: grid item {text!r} is not {what}") from None


def _parse_range(text: str, name: str, kind: type) -> list:
    """``A:B[:STEP]`` (integers) or ``A:B:N[:log]`` (numbers)."""
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
    if scale == "log" and (start <= 0 or stop <= 0):
        raise ValueError(f"{name}: log range {text!r} needs A > 0 and B > 0")
    if name in DIMS:  # each end in its range first: inf or an overflowing step spreads NaN
        check_grid([start], name)
        check_grid([stop], name)
    if scale == "log":
        grid = np.geomspace(start, stop, n)
    else:
        grid = np.linspace(start, stop, n)
    grid[0], grid[-1] = start, stop  # exact end points
    return [float(v) for v in grid]


def parse_grid(text: str, name: str, kind: type = float) -> list:
    """Parse a grid written on the command line.

    Forms (``kind`` int / float / str):

    * a comma list: ``1,2,5`` (a single value ``5`` is a grid of one point); float items
      may be fractions (``1/864``);
    * ``int``: ``A:B`` (the integers A..B inclusive) or ``A:B:STEP``;
    * ``float``: ``A:B:N`` (N points from A to B, linearly spaced, end points included) or
      ``A:B:N:log`` (geometrically spaced, A, B > 0); list items may be ``census:LEVEL``
      (the 2020 Census rho of that level, :func:`dprisk.models.census.allocation.parse_rho`);
    * ``str`` (priors): a comma list of prior specifications, e.g.
      ``improper,truncated:10,point:1``.

    When ``name`` is one of :data:`dprisk.inference.sweeps.plan.DIMS` the values are validated
    like the arguments of :func:`dprisk.inference.sweeps.sweep.sweep` (e.g. ``rho > 0``,
    ``d >= 1``, no duplicates).

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
    if name in DIMS:
        values = check_grid(values, name)
    return values


def _python_scalar(value):
    return value.item() if isinstance(value, np.generic) else value


_RECORD_ORDER = (*DIMS, "x1", *VARIABLES, "mcse")


def _record_order(key: str) -> tuple[int, str]:
    if key in _RECORD_ORDER:
        return (_RECORD_ORDER.index(key), key)
    return (len(_RECORD_ORDER), key)


def sweep_records(ds: SweepTable | xr.Dataset) -> list[dict]:
    """Flatten a sweep's table or Dataset into one record per grid point (C order of its dims).

    Each record holds every parameter (swept ones from the coordinates, fixed ones from
    ``attrs``) and every data variable, as plain Python numbers and strings, e.g.
    ``{"rho1": 0.099, "rho2": 0.25, "d": 27, "x2": 1, "p": 0.5, "known": 0,
    "prior": "improper", "p_correct": 0.59, ...}``.
    """
    table = ds if isinstance(ds, SweepTable) else SweepTable.from_dataset(ds)
    fixed = {name: _python_scalar(table.attrs[name]) for name in (*DIMS, "x1")
             if name in table.attrs}
    dims = [dim for dim in DIMS if dim in table.dims]
    order = [table.dims.index(dim) for dim in dims]
    names = list(table.data)
    shape = tuple(table.sizes[dim] for dim in dims)
    coords = table.coords
    data = {name: np.transpose(table.data[name], order) for name in names}
    records = []
    for position in np.ndindex(*shape):
        record = dict(fixed)
        for dim, i in zip(dims, position, strict=True):
            record[dim] = _python_scalar(coords[dim][i])
        for name in names:
            record[name] = float(data[name][position])
        records.append({key: record[key] for key in sorted(record, key=_record_order)})
    return records
