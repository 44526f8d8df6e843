"""xarray's two questions about Dask answered without importing Dask while it is not loaded.

When Dask is installed, xarray asks two questions of the arrays it wraps, and each imports Dask
to answer the first time, in every process that makes a Dataset, whether or not it uses Dask:

- *is it a Dask array?* ``isinstance(data, array_type("dask"))`` (``xarray.core.variable``,
  ``xarray.namedarray.pycompat.array_type``), which imports ``dask`` and ``dask.array`` to get
  ``dask.array.Array``: about 0.6 s of CPU;
- *is it a Dask collection?* ``xarray.namedarray.utils.is_dask_collection`` (asked of every
  index's values, ``to_numpy``), which imports ``dask.base``: about 0.35 s more.

The report's processes, the command line's and the tests' each paid both (dprisk uses Dask only
for sweeps and populations on a cluster, :mod:`dprisk.inference.sweeps.sweep`). The answers
need no import while Dask is not loaded:

- an object is an instance of ``dask.array.Array`` only if ``dask.array`` is imported:
  :class:`DaskArrayOnceLoaded` is a class whose instance check looks for that module in
  ``sys.modules`` and, when it is there, asks ``isinstance(obj, dask.array.Array)``; False
  otherwise;
- Dask's ``is_dask_collection(x)`` is False for an object without a ``__dask_graph__``
  attribute (its first test): :func:`is_dask_collection` answers that case itself and asks
  Dask in every other case (xarray's own objects have the attribute), so its answer is Dask's
  always.

:func:`defer_dask_imports` puts both into xarray (its duck-array cache's entry for ``"dask"``,
whose other attributes, ``module`` and ``version``, are the real ones, made on first access;
and ``xarray.namedarray.utils.is_dask_collection``). ``import dprisk`` calls
:func:`install`, which does it at once when xarray's modules are loaded and otherwise right
after they are, by an import hook that costs one string comparison per import and removes
itself (the finder and the loader are plain classes, not ``importlib.abc``'s, whose import
costs about 50 ms at ``import dprisk``). Where xarray's internals are not as this module
expects (another xarray), nothing is changed and xarray imports Dask as before.
"""

from __future__ import annotations

import importlib.machinery
import sys

__all__ = ["DaskArrayOnceLoaded", "defer_dask_imports", "install", "is_dask_collection"]

#: xarray's module holding the duck-array cache (imported before ``xarray.namedarray.utils``'s
#: users make any array): the hook acts when it has been executed.
_PYCOMPAT = "xarray.namedarray.pycompat"
_UTILS = "xarray.namedarray.utils"


class _DaskArrayCheck(type):
    """Instance and subclass checks against ``dask.array.Array`` once it is loaded."""

    def __instancecheck__(cls, obj) -> bool:
        array = getattr(sys.modules.get("dask.array"), "Array", None)
        return array is not None and isinstance(obj, array)

    def __subclasscheck__(cls, subclass) -> bool:
        array = getattr(sys.modules.get("dask.array"), "Array", None)
        return array is not None and issubclass(subclass, array)


class DaskArrayOnceLoaded(metaclass=_DaskArrayCheck):
    """``isinstance(obj, DaskArrayOnceLoaded)`` is ``isinstance(obj, dask.array.Array)``.

    False while ``dask.array`` is not imported (no object can be an instance of its class
    then); asked of the class itself once it is.
    """


class _DeferredDaskEntry:
    """xarray's duck-array cache entry for ``"dask"``: ``type`` without importing Dask.

    ``type`` is ``(DaskArrayOnceLoaded,)``; any other attribute (``module``, ``version``,
    ``available``) is that of xarray's own entry (``DuckArrayModule("dask")``, which imports
    Dask), made on first access.
    """

    type = (DaskArrayOnceLoaded,)

    def __init__(self, duck_array_module: type):
        self._duck_array_module = duck_array_module
        self._loaded = None

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._loaded is None:
            self._loaded = self._duck_array_module("dask")
        return getattr(self._loaded, name)


def is_dask_collection(x: object) -> bool:
    """Dask's ``is_dask_collection(x)``, without importing Dask when ``x`` has no graph.

    False when ``x`` has no ``__dask_graph__`` attribute (Dask's own first test: not a
    collection); otherwise ``dask.base.is_dask_collection(x)`` (Dask imported if it was not).
    Given to xarray only where Dask is installed.
    """
    if not hasattr(x, "__dask_graph__"):
        return False
    from dask.base import is_dask_collection as dask_is_dask_collection

    return dask_is_dask_collection(x)


def defer_dask_imports() -> bool:
    """Give xarray (its modules loaded) :class:`DaskArrayOnceLoaded` and :func:`is_dask_collection`.

    Returns
    -------
    bool
        True when both are in place (or were already); False when xarray's internals are not
        as expected or Dask is not installed (nothing changed: xarray then asks as before).
    """
    pycompat, utils = sys.modules.get(_PYCOMPAT), sys.modules.get(_UTILS)
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    duck_array_module = getattr(pycompat, "DuckArrayModule", None)
    if (not isinstance(cache, dict) or duck_array_module is None
            or not callable(getattr(utils, "is_dask_collection", None))
            or not callable(getattr(utils, "module_available", None))):
        return False
    if not utils.module_available("dask"):
        return False  # xarray answers False to both without importing anything
    if "dask" not in cache:  # an entry made already (Dask imported by then) stays
        cache["dask"] = _DeferredDaskEntry(duck_array_module)
    utils.is_dask_collection = is_dask_collection
    return True


class _LoaderThen:
    """A module's loader that calls :func:`defer_dask_imports` after executing the module."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        _remove_hook()
        defer_dask_imports()

    def __getattr__(self, name: str):  # get_source, get_code, ... for tracebacks and tools
        return getattr(self._loader, name)


class _AfterXarrayImport:
    """Finds ``xarray.namedarray.pycompat`` as the path finder does, with :class:`_LoaderThen`.

    Removed from ``sys.meta_path`` once that module is executed (not while the import system
    walks the list); where the path finder does not find it (xarray found another way), it
    leaves it to the next finder.
    """

    def find_spec(self, fullname, path, target=None):
        if fullname != _PYCOMPAT:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _LoaderThen(spec.loader)
        return spec


def _remove_hook() -> None:
    sys.meta_path[:] = [finder for finder in sys.meta_path
                        if not isinstance(finder, _AfterXarrayImport)]


def install() -> None:
    """:func:`defer_dask_imports` now if xarray's modules are loaded, else right after they are.

    Called by ``import dprisk``; at most one import hook is installed.
    """
    if _PYCOMPAT in sys.modules:
        defer_dask_imports()  # changes nothing if xarray's modules are not as expected
        return
    if not any(isinstance(finder, _AfterXarrayImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterXarrayImport())
