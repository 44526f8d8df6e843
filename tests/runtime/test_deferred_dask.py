"""dprisk.runtime.deferred_dask: xarray's Dask questions answered without importing Dask.

The answers must be Dask's own (an object is a Dask array or collection exactly when Dask
says so), Dask must not be imported by xarray work on NumPy data in a process that imported
dprisk, and a Dask-backed Dataset must behave as before once Dask is imported.
"""

import sys
import types

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from dask.base import is_dask_collection as dask_is_dask_collection
from fresh_python import ForkedInterpreter
from xarray.namedarray import pycompat
from xarray.namedarray import utils as xarray_utils

from dprisk.runtime import deferred_dask
from dprisk.runtime.deferred_dask import DaskArrayOnceLoaded, defer_dask_imports, is_dask_collection

#: xarray work on NumPy data: a Dataset with an index, arithmetic, a reduction, selection, its
#: text and HTML forms, a DataTree, a Dataset from pandas (not ``to_netcdf``, which asks Dask
#: for its scheduler: the report's writer does not).
NUMPY_WORK = """
import dprisk
import numpy as np, pandas as pd, xarray as xr
ds = xr.Dataset({"a": (("x", "y"), np.arange(6.0).reshape(2, 3))}, coords={"x": [1, 2]})
ds["b"] = ds.a * 2
ds.mean("x"); ds.sel(x=1); ds.where(ds.a > 1); str(ds); ds._repr_html_()
tree = xr.DataTree.from_dict({"/g": ds}); str(tree)
xr.Dataset.from_dataframe(pd.DataFrame({"v": [1.0, 2.0]}))
"""


def _objects():
    """Objects of every kind xarray asks about: NumPy, lists, classes, xarray and Dask ones."""
    numpy_array = np.arange(4.0)
    dask_array = da.ones(4, chunks=2)
    return [numpy_array, [1, 2], 3.0, None, np.ndarray, da.Array, dask_array,
            xr.DataArray(numpy_array), xr.DataArray(dask_array),
            xr.Dataset({"v": ("x", dask_array)}),
            xr.Variable("x", numpy_array), xr.Variable("x", dask_array)]


def test_the_array_check_is_dasks_once_dask_array_is_loaded():
    for obj in _objects():
        assert isinstance(obj, DaskArrayOnceLoaded) == isinstance(obj, da.Array), obj
    for cls in (np.ndarray, da.Array, type(da.ones(2).rechunk(1)), object):
        assert issubclass(cls, DaskArrayOnceLoaded) == issubclass(cls, da.Array), cls


def test_the_array_check_is_false_while_dask_array_is_not_loaded(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.array", None)
    assert not isinstance(da.ones(2), DaskArrayOnceLoaded)
    assert not issubclass(da.Array, DaskArrayOnceLoaded)


def test_the_collection_check_is_dasks():
    for obj in _objects():
        assert is_dask_collection(obj) == dask_is_dask_collection(obj), obj


def test_in_place_in_this_process_xarray_asks_them():
    # The test session imported dprisk before xarray's first array: the hook put them in place.
    assert xarray_utils.is_dask_collection is is_dask_collection
    assert pycompat.array_type("dask") == (DaskArrayOnceLoaded,)
    assert pycompat.mod_version("dask") > pycompat.Version("0")  # the real entry's, on access
    assert not any(isinstance(finder, deferred_dask._AfterXarrayImport)
                   for finder in sys.meta_path)


def test_dask_backed_data_stays_lazy_and_chunked():
    data = xr.DataArray(da.ones((4, 3), chunks=(2, 3)), dims=("z", "w"))
    assert isinstance(data.data, da.Array) and data.chunks == ((2, 2), (3,))
    chunked = xr.Dataset({"a": (("x", "y"), np.arange(6.0).reshape(2, 3))}).chunk({"x": 1})
    assert isinstance(chunked.a.data, da.Array)
    assert pycompat.is_chunked_array(chunked.a.data) and not pycompat.is_chunked_array(np.ones(2))
    assert float((chunked.a * 2).sum()) == 30.0


#: What the forked interpreter imports before its forks: NumPy and pandas, which every checked
#: piece imports (0.75 s of the 1.1 s of CPU of each new interpreter), neither of them Dask,
#: xarray or dprisk (:func:`fresh` asserts it).
PRELOAD = ("numpy", "pandas")

#: Run after :data:`NUMPY_WORK` in its fork: xarray's modules, loaded through the hook, still
#: show their source.
SOURCE_KEPT = ("import inspect\n"
               "from xarray.namedarray import pycompat\n"
               "assert 'def array_type' in inspect.getsource(pycompat)\n"
               "assert pycompat.__spec__.loader.get_filename('xarray.namedarray.pycompat')"
               ".endswith('pycompat.py')\n")


@pytest.fixture(scope="module")
def fresh():
    """One fresh interpreter that imported :data:`PRELOAD`, forked for each check (each fork's
    ``sys.modules`` is what a new interpreter running the same code would hold)."""
    forks = ForkedInterpreter(PRELOAD)
    preloaded = forks.modules_loaded_by("")
    assert not {name.split(".")[0] for name in preloaded} & {"dask", "xarray", "dprisk"}
    yield forks
    forks.close()


@pytest.fixture(scope="module")
def after_numpy_work(fresh):
    """``sys.modules`` after :data:`NUMPY_WORK`, then after :data:`SOURCE_KEPT`, in one fork."""
    return fresh.modules_loaded_after_each([NUMPY_WORK, SOURCE_KEPT])


def test_numpy_work_in_a_new_process_imports_no_dask(after_numpy_work):
    loaded = after_numpy_work[0]
    assert "xarray" in loaded
    assert not {"dask", "dask.array", "dask.base"} & loaded


def test_the_same_numpy_work_imports_dask_without_dprisk(fresh):
    """The check above is not vacuous: without ``import dprisk``, xarray imports Dask."""
    loaded = fresh.modules_loaded_by(NUMPY_WORK.replace("import dprisk\n", ""))
    assert "dprisk" not in loaded and {"dask", "dask.array"} <= loaded


def test_put_in_place_at_once_when_xarray_was_imported_first(fresh):
    code = ("import xarray, sys\n"
            "import dprisk\n"
            "from xarray.namedarray import utils\n"
            "from dprisk.runtime.deferred_dask import is_dask_collection\n"
            "assert utils.is_dask_collection is is_dask_collection\n"
            "assert not any(type(f).__name__ == '_AfterXarrayImport' for f in sys.meta_path)\n"
            "xarray.Dataset({'a': ('x', [1.0, 2.0])}, coords={'x': [0, 1]})\n")
    assert "dask" not in fresh.modules_loaded_by(code)


def test_xarrays_modules_keep_their_source_for_tracebacks(after_numpy_work):
    # the source check ran (and passed) in the fork of the NumPy work, after it
    assert "xarray.namedarray.pycompat" in after_numpy_work[1]


def _stand_in_xarray(monkeypatch, *, cache: dict, dask_installed: bool, missing: str = ""):
    """Stand-ins for xarray's two modules in ``sys.modules`` (``missing``: an attribute left
    out of the first); returns the second, whose ``is_dask_collection`` is ``len``."""
    fake_pycompat = types.SimpleNamespace(_cached_duck_array_modules=cache,
                                          DuckArrayModule=pycompat.DuckArrayModule)
    if missing:
        delattr(fake_pycompat, missing)
    fake_utils = types.SimpleNamespace(is_dask_collection=len,
                                       module_available=lambda name: dask_installed)
    monkeypatch.setitem(sys.modules, "xarray.namedarray.pycompat", fake_pycompat)
    monkeypatch.setitem(sys.modules, "xarray.namedarray.utils", fake_utils)
    return fake_utils


@pytest.mark.parametrize("missing", ["_cached_duck_array_modules", "DuckArrayModule"])
def test_another_xarray_is_left_as_it_is(monkeypatch, missing):
    """Where xarray's internals are not as expected, nothing is changed (False)."""
    cache: dict = {}
    fake_utils = _stand_in_xarray(monkeypatch, cache=cache, dask_installed=True, missing=missing)
    assert defer_dask_imports() is False
    assert cache == {} and fake_utils.is_dask_collection is len


def test_without_dask_installed_nothing_is_changed(monkeypatch):
    cache: dict = {}
    fake_utils = _stand_in_xarray(monkeypatch, cache=cache, dask_installed=False)
    assert defer_dask_imports() is False
    assert cache == {} and fake_utils.is_dask_collection is len


def test_an_entry_made_before_is_kept(monkeypatch):
    made = pycompat.DuckArrayModule("dask")
    cache = {"dask": made}
    fake_utils = _stand_in_xarray(monkeypatch, cache=cache, dask_installed=True)
    assert defer_dask_imports() is True
    assert cache["dask"] is made and fake_utils.is_dask_collection is is_dask_collection


def test_a_new_entry_answers_from_the_real_one_on_first_access(monkeypatch):
    cache: dict = {}
    _stand_in_xarray(monkeypatch, cache=cache, dask_installed=True)
    assert defer_dask_imports() is True
    entry = cache["dask"]
    assert entry.type == (DaskArrayOnceLoaded,)
    assert entry.version == pycompat.DuckArrayModule("dask").version
    assert entry.available is True and entry.module is sys.modules["dask"]
