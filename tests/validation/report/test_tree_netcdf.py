"""results.nc with the data written after all metadata reads back as DataTree.to_netcdf's."""

import netCDF4
import numpy as np
import pytest
import xarray as xr
from xarray.backends import netCDF4_ as xr_netcdf4

from dprisk.validation.report.tree_netcdf import data_after_metadata_available, write_tree


def _tree() -> xr.DataTree:
    """A report-like tree: studies (empty groups) holding datasets of every kind the report
    writes (floats with NaN, integers, booleans, strings, coordinates, attributes), in an
    order that is not alphabetical (netCDF-4 keeps the order groups were created in)."""
    rng = np.random.default_rng(7)
    table = xr.Dataset(
        {"p": (("rho", "x2"), rng.random((3, 4))), "n": ("rho", np.array([3, 1, 2])),
         "ok": ("rho", np.array([True, False, True])),
         "label": ("rho", np.array(["a", "bb", "ccc"], dtype=object))},
        coords={"rho": [0.1, 0.25, 0.5], "x2": np.arange(4)}, attrs={"seed": 11, "note": "é"})
    table["p"][0, 1] = np.nan
    draws = xr.Dataset({"x": (("chain", "draw"), rng.integers(0, 9, (2, 5)))},
                       attrs={"sampler": "gibbs", "rhat_max": 1.01})
    summary = xr.Dataset(attrs={"only": "attributes"})
    return xr.DataTree.from_dict({"/zeta/table": table, "/zeta/draws": draws,
                                  "/alpha/summary": summary, "/mid/table": table * 2})


def _structure(path) -> list:
    """Every group of the file as netCDF-C lists it: path, dimensions, variables (name,
    dtype, dimensions, attributes with values, chunking, filters) and attributes."""
    def walk(group, out):
        out.append((group.path, {k: len(d) for k, d in group.dimensions.items()},
                    [(name, str(v.dtype), v.dimensions,
                      {a: str(v.getncattr(a)) for a in v.ncattrs()}, v.chunking(), v.filters())
                     for name, v in group.variables.items()],
                    {a: str(group.getncattr(a)) for a in group.ncattrs()}))
        for child in group.groups.values():
            walk(child, out)
        return out

    with netCDF4.Dataset(path) as ds:
        return walk(ds, [])


def test_the_tree_reads_back_as_datatree_to_netcdf_writes_it(tmp_path):
    tree = _tree()
    tree.to_netcdf(tmp_path / "reference.nc")
    write_tree(tree, tmp_path / "results.nc")
    with xr.open_datatree(tmp_path / "reference.nc") as ref, \
            xr.open_datatree(tmp_path / "results.nc") as got:
        assert got.identical(ref) and got.identical(tree)
        assert [n.path for n in got.subtree] == [n.path for n in ref.subtree] == [
            "/", "/zeta", "/alpha", "/mid", "/zeta/table", "/zeta/draws", "/alpha/summary",
            "/mid/table"]
    assert _structure(tmp_path / "results.nc") == _structure(tmp_path / "reference.nc")


def test_every_variable_is_defined_before_any_data_is_written(tmp_path, monkeypatch):
    """The point of write_tree: netCDF-C writes the whole file's metadata at the first data
    write after a definition, so DataTree.to_netcdf (define, write, define, write...) wrote
    it once per variable (quadratic: 1.0 of its 1.9 s for the report); write_tree defines
    every variable first. Counted here: variables defined when each data write happens."""
    assert data_after_metadata_available()  # this xarray: the fast path is the one tested
    defined, writes = [], []
    prepare, setitem = xr_netcdf4.NetCDF4DataStore.prepare_variable, \
        xr_netcdf4.NetCDF4ArrayWrapper.__setitem__

    def counted_prepare(self, *args, **kwargs):
        defined.append(args[0])
        return prepare(self, *args, **kwargs)

    def counted_setitem(self, key, value):
        writes.append(len(defined))
        return setitem(self, key, value)

    monkeypatch.setattr(xr_netcdf4.NetCDF4DataStore, "prepare_variable", counted_prepare)
    monkeypatch.setattr(xr_netcdf4.NetCDF4ArrayWrapper, "__setitem__", counted_setitem)
    tree = _tree()
    n_variables = sum(len(node.dataset.variables) for node in tree.subtree)  # 13
    write_tree(tree, tmp_path / "results.nc")
    assert len(defined) == n_variables and writes == [n_variables] * n_variables
    defined.clear(), writes.clear()
    tree.to_netcdf(tmp_path / "reference.nc")  # the old way: a write after each definition
    assert len(defined) == n_variables and writes[0] == 1 and writes[-1] == n_variables


def test_without_the_stores_it_needs_it_is_datatree_to_netcdf(tmp_path, monkeypatch):
    from dprisk.validation.report import tree_netcdf

    monkeypatch.setattr(tree_netcdf, "_writer_parts", lambda: None)
    assert not data_after_metadata_available()
    write_tree(_tree(), tmp_path / "results.nc")
    with xr.open_datatree(tmp_path / "results.nc") as got:
        assert got.identical(_tree())


def test_a_failed_write_closes_the_file(tmp_path, monkeypatch):
    tree = _tree()
    tree["zeta/table"].attrs["bad"] = {"a dict": "is no netCDF attribute"}
    with pytest.raises(TypeError):
        write_tree(tree, tmp_path / "results.nc")
    (tmp_path / "results.nc").unlink()  # closed: nothing holds it (and it can be rewritten)
    write_tree(_tree(), tmp_path / "results.nc")


def test_the_file_is_written_without_asking_dask_for_its_scheduler(tmp_path, monkeypatch):
    """write_tree opens the store with its own write lock: xarray's default asks Dask for the
    running scheduler, and Dask imports ``distributed`` for that (0.75 s of CPU at the end of
    ``dprisk reproduce``). Asking is made to fail here; the file is still the same."""
    from xarray.backends import locks

    def asked(*args, **kwargs):
        raise AssertionError("write_tree asked Dask for its scheduler")

    monkeypatch.setattr(locks, "get_dask_scheduler", asked)
    monkeypatch.setattr(xr_netcdf4, "get_write_lock", asked)
    tree = _tree()
    write_tree(tree, tmp_path / "results.nc")
    with xr.open_datatree(tmp_path / "results.nc") as got:
        assert got.identical(tree)
