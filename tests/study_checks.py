"""Shared checks of the study tests (imported as the top-level module ``study_checks``)."""

from dprisk.validation.paper.records import validate_records


def assert_records_match(records, count):
    """Check that ``records`` are well formed, number ``count`` and all have status match."""
    validate_records(records)
    assert len(records) == count
    assert {r["status"] for r in records} == {"match"}


def assert_thresholds_are_the_scanned_ones(threshold, tie, tables, js):
    """Check the variant's ``(threshold, tie)`` of each release against a scan of the offsets
    ``js``: the threshold is the first offset whose log-odds (``tables.log_odds``, one value
    per release) exceeds ``TIE_ATOL``, and a tie is an absolute log-odds of at most
    ``TIE_ATOL`` one offset below it; every release's threshold must lie inside the scan."""
    import numpy as np

    from dprisk.inference.studies.setup import TIE_ATOL

    size = np.size(threshold)
    odds = np.stack([tables.log_odds(np.full(size, j)) for j in js], axis=1)
    first = np.argmax(odds > TIE_ATOL, axis=1)
    assert (odds > TIE_ATOL).any(axis=1).all() and (first > 0).all()
    np.testing.assert_array_equal(threshold, js[first])
    np.testing.assert_array_equal(tie, np.abs(odds[np.arange(size), first - 1]) <= TIE_ATOL)


def numbers_without_units(datasets, kinds="fiu", attribute="units"):
    """``"KEY/NAME"`` of every numeric variable or coordinate (dtype kind in ``kinds``) of the
    ``{key: xarray.Dataset}`` ``datasets`` that has no ``units`` attribute (DESIGN §5), or no
    ``attribute`` (``"long_name"``: none says what it is)."""
    return [f"{key}/{name}" for key, ds in datasets.items()
            for name, v in [*ds.data_vars.items(), *ds.coords.items()]
            if v.dtype.kind in kinds and attribute not in v.attrs]


def numbers_without_units_in_results(name, datasets, path):
    """:func:`numbers_without_units` of ``results.nc`` as the report writes ``datasets`` (the
    groups ``/name/KEY``, :func:`dprisk.validation.report.tree_netcdf.write_tree`) to ``path``
    and reads them back (``"/name/KEY/NAME"``; kinds ``fiu``), then those without a
    ``long_name`` (``"/name/KEY/NAME long_name"``); also checks that every variable's and
    coordinate's attributes come back as they were written."""
    import xarray as xr

    from dprisk.validation.report.tree_netcdf import write_tree

    write_tree(xr.DataTree.from_dict({f"/{name}/{key}": ds for key, ds in datasets.items()}),
               path)
    with xr.open_datatree(path) as tree:
        back = {node.path: node.to_dataset(inherit=False) for node in tree.subtree
                if node.has_data}
    assert back.keys() == {f"/{name}/{key}" for key in datasets}
    for key, ds in datasets.items():
        read = back[f"/{name}/{key}"]
        for var in ds.variables:
            assert read[var].attrs == ds[var].attrs, (key, var)
    return numbers_without_units(back) + [
        f"{name} long_name" for name in numbers_without_units(back, attribute="long_name")]
