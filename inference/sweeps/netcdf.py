"""A sweep's labelled table and its netCDF file, written and read without xarray.

:class:`SweepTable` holds what the sweep's :class:`xarray.Dataset` holds -- dimensions,
coordinates, data variables (each with its ``attrs``) and global ``attrs`` -- as plain NumPy
arrays and dicts. :func:`write_table` writes it with the ``netCDF4`` library the way
``Dataset.to_netcdf(engine="netcdf4")`` writes the same Dataset (format ``NETCDF4``, global
attributes, then dimensions, then the data variables and the coordinates, contiguous and
uncompressed; floating-point variables with ``_FillValue = NaN``, integers without, strings as
variable-length ``str``), so that :func:`xarray.open_dataset` reads back an identical Dataset
with the same encoding. :func:`read_table` and :func:`read_attrs` read such a file back.

The command line (``dprisk sweep`` without ``--scheduler``) therefore imports neither xarray
nor pandas nor Dask: only NumPy and ``netCDF4`` (imported when a file is written or read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["FORMAT", "SweepTable", "read_attrs", "read_table", "write_table"]

#: netCDF format of a sweep file (the default of ``to_netcdf(engine="netcdf4")``).
FORMAT = "NETCDF4"


@dataclass(frozen=True)
class SweepTable:
    """A sweep's labelled result: the content of its Dataset without xarray.

    Attributes
    ----------
    dims : tuple of str
        The swept parameters, in the order of the data variables' axes.
    coords : dict of str to numpy.ndarray
        One 1-D coordinate per dimension.
    data : dict of str to numpy.ndarray
        The data variables, each of shape :attr:`shape` (axes :attr:`dims`).
    var_attrs : dict of str to dict
        ``attrs`` of each coordinate and data variable (``units``, ``long_name``).
    attrs : dict
        Global ``attrs``: fixed parameters, ``method``, ``quantity``, ``mc_*`` options,
        ``sweep_manifest``.
    """

    dims: tuple
    coords: dict
    data: dict
    var_attrs: dict
    attrs: dict

    @property
    def sizes(self) -> dict:
        """Length of each dimension, in the order of :attr:`dims`."""
        return {dim: len(self.coords[dim]) for dim in self.dims}

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of every data variable."""
        return tuple(self.sizes.values())

    def to_dataset(self) -> xr.Dataset:
        """The same content as an :class:`xarray.Dataset` (imports xarray)."""
        import xarray as xr

        coords = {name: xr.Variable(name, values, attrs=dict(self.var_attrs[name]))
                  for name, values in self.coords.items()}
        data_vars = {name: xr.Variable(self.dims, values, attrs=dict(self.var_attrs[name]))
                     for name, values in self.data.items()}
        return xr.Dataset(data_vars, coords=coords, attrs=dict(self.attrs))

    @classmethod
    def from_dataset(cls, ds: xr.Dataset) -> SweepTable:
        """The table of a sweep's Dataset (its data variables transposed to its dims)."""
        dims = tuple(ds.dims)
        return cls(
            dims=dims,
            coords={dim: ds[dim].values for dim in dims},
            data={name: ds[name].transpose(*dims).values for name in ds.data_vars},
            var_attrs={name: dict(var.attrs) for name, var in ds.variables.items()},
            attrs=dict(ds.attrs),
        )


def _variable_kind(values: np.ndarray) -> tuple[object, object]:
    """``(netCDF dtype, fill value)`` of a variable as xarray's netCDF4 writer chooses them."""
    if values.dtype.kind in "UOS":
        return str, None  # variable-length strings, no _FillValue
    if values.dtype.kind == "f":
        return values.dtype, np.nan  # xarray's default _FillValue of floating point
    return values.dtype, None


def write_table(path, table: SweepTable) -> None:
    """Write ``table`` to the netCDF file ``path`` as ``to_netcdf(engine="netcdf4")`` does.

    The file holds no timestamps or paths: the same table always gives the same bytes.
    """
    import netCDF4

    with netCDF4.Dataset(path, mode="w", format=FORMAT) as nc:
        nc.set_auto_maskandscale(False)
        nc.setncatts(dict(table.attrs))
        for dim, size in table.sizes.items():
            nc.createDimension(dim, size)
        variables = [(name, table.dims, values) for name, values in table.data.items()]
        variables += [(name, (name,), values) for name, values in table.coords.items()]
        for name, dims, values in variables:
            values = np.asarray(values)
            dtype, fill = _variable_kind(values)
            var = nc.createVariable(name, dtype, dims, fill_value=fill)
            var.setncatts(dict(table.var_attrs[name]))
            if dtype is str:
                var[...] = values.astype(object)
            elif values.ndim == 0:
                var.assignValue(values)
            else:
                var[...] = values


def read_attrs(path) -> dict:
    """The global attributes of the netCDF file ``path`` (OSError when it is not one)."""
    import netCDF4

    with netCDF4.Dataset(path, mode="r") as nc:
        return {name: nc.getncattr(name) for name in nc.ncattrs()}


def read_table(path) -> SweepTable:
    """The :class:`SweepTable` stored in the netCDF file ``path`` by :func:`write_table`."""
    import netCDF4

    with netCDF4.Dataset(path, mode="r") as nc:
        nc.set_auto_maskandscale(False)
        dims = tuple(nc.dimensions)
        coords, data, var_attrs = {}, {}, {}
        for name, var in nc.variables.items():
            values = np.asarray(var[...]) if var.ndim else np.asarray(var.getValue())
            (coords if name in dims else data)[name] = values
            var_attrs[name] = {k: var.getncattr(k) for k in var.ncattrs() if k != "_FillValue"}
        attrs = {name: nc.getncattr(name) for name in nc.ncattrs()}
    return SweepTable(dims, coords, data, var_attrs, attrs)
