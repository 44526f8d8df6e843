"""Tests of inference.sweep_netcdf: the netCDF4 writer gives the file xarray's writer gives.

For several sweeps (exact and Monte Carlo with ``mc_seed``, every parameter swept or one or
none, fixed parameters of every type) the sweep's table is written twice -- by
``Dataset.to_netcdf(engine="netcdf4")`` (the reference) and by :func:`write_table` -- and both
files are read back through :func:`xarray.open_dataset`: same variables, dimensions,
coordinates, attributes (values and types), dtypes and encodings (``source`` aside, the
path). The comparisons are exact: both files hold the same float64 values.
"""

import numpy as np
import pytest
import xarray as xr
from census_values import RHO_BLOCK

from dprisk.cli.grids import sweep_records
from dprisk.inference.sweeps.netcdf import SweepTable, read_attrs, read_table, write_table
from dprisk.inference.sweeps.store import ENGINE
from dprisk.inference.sweeps.sweep import sweep_table


def standin(*, rho1, rho2, d, x2, p=0.5, known=0, prior="improper", x1=None, random_seed=None,
            **options):
    """A cheap quantity depending on every argument (and on the seed, for Monte Carlo)."""
    noise = 0.0 if random_seed is None else (random_seed % 1000) * 1e-6
    value = rho1 / (rho1 + rho2 + d + x2) + p * 1e-3 + known * 1e-4 + len(prior) * 1e-5
    return {"p_correct": value + noise, "p_correct_no_hierarchy": value / 2,
            "gain": value / 3, "loss": value / 4, "mcse": value / 10}


SWEEPS = {
    # the real exact quantity, every parameter swept (two priors: a string coordinate)
    "exact, every parameter swept": dict(
        rho1=[RHO_BLOCK], rho2=[0.1, 0.5], d=[27], x2=[1, 3], p=[0.5], known=[0],
        prior=["improper", "truncated:10"]),
    # the real Monte Carlo quantity with its seed and budget in mc_* attributes
    "mc with mc_seed": dict(
        rho1=[RHO_BLOCK], rho2=[0.25], d=[27], x2=[1, 2], p=[0.5], known=[0],
        prior=["improper"], method="mc",
        mc_options={"seed": 2024, "datasets": 40, "draws": 30}),
    # one swept parameter; fixed float, int, string and x1 attributes; a bool mc option
    "mc, one dimension, fixed attributes": dict(
        rho1=0.1, rho2=[0.2, 0.4, 0.8], d=4, x2=5, p=0.25, known=1, prior="point:5", x1=2,
        method="mc", mc_options={"seed": 7, "flag": True, "scale": 0.5, "label": "a"},
        quantity=standin),
    # nothing swept: scalar data variables
    "exact, nothing swept": dict(rho1=0.1, rho2=0.2, d=3, x2=4, quantity=standin),
}


@pytest.fixture(scope="module", params=sorted(SWEEPS))
def written(request, tmp_path_factory):
    """``(table, reference file by xarray, file by write_table)`` of one sweep."""
    tmp = tmp_path_factory.mktemp("nc")
    table = sweep_table(**SWEEPS[request.param], progress=False)
    reference, ours = tmp / "xarray.nc", tmp / "netcdf4.nc"
    table.to_dataset().to_netcdf(reference, engine=ENGINE)
    write_table(ours, table)
    return table, reference, ours


def test_xarray_reads_back_the_same_dataset_and_encoding(written):
    _, reference, ours = written
    with xr.open_dataset(reference, engine=ENGINE) as a, xr.open_dataset(ours, engine=ENGINE) as b:
        xr.testing.assert_identical(a, b)
        assert list(a.variables) == list(b.variables) and list(a.dims) == list(b.dims)
        assert {k: type(v) for k, v in a.attrs.items()} == {k: type(v) for k, v in b.attrs.items()}
        for name in a.variables:
            assert a[name].dtype == b[name].dtype, name
            assert {k: type(v) for k, v in a[name].attrs.items()} == \
                   {k: type(v) for k, v in b[name].attrs.items()}, name
            enc_a = {k: v for k, v in a[name].encoding.items() if k != "source"}
            enc_b = {k: v for k, v in b[name].encoding.items() if k != "source"}
            np.testing.assert_equal(enc_a, enc_b, err_msg=name)


def test_read_table_round_trips_without_xarray(written):
    table, _, ours = written
    back = read_table(ours)
    assert back.dims == table.dims and back.sizes == table.sizes
    assert back.attrs == table.attrs == read_attrs(ours)
    assert back.var_attrs == table.var_attrs
    for name in (*table.coords, *table.data):
        source = {**table.coords, **table.data}[name]
        target = {**back.coords, **back.data}[name]
        assert target.shape == np.shape(source), name
        np.testing.assert_array_equal(target, source, err_msg=name)


def test_records_are_the_same_from_the_table_the_file_and_the_dataset(written):
    table, reference, ours = written
    with xr.open_dataset(reference, engine=ENGINE) as ds:
        from_dataset = sweep_records(ds)
    assert sweep_records(table) == sweep_records(read_table(ours)) == from_dataset
    assert len(from_dataset) == int(np.prod(table.shape))


def test_from_dataset_inverts_to_dataset(written):
    table, _, _ = written
    back = SweepTable.from_dataset(table.to_dataset())
    xr.testing.assert_identical(back.to_dataset(), table.to_dataset())
