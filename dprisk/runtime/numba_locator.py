"""Numba's on-disk cache of dprisk's kernels, kept by their source's contents, not its path.

Numba keeps a ``cache=True`` function's machine code in a folder of ``NUMBA_CACHE_DIR``
(:func:`dprisk.runtime.cache.use_numba_cache`) named after the absolute path of the folder its
source file lies in (``kernels_<SHA-1 of the path>``), and checks the index there against the
source's SHA-256. Every checkout of dprisk (a fresh clone, a worktree, another venv's
site-packages, the package's link tree beside its source tree) thus compiled its kernels
anew, about 7-9 s of CPU a process for the two kernel modules, and left a folder behind for
each. :class:`ContentKeyedCacheLocator` names the folder after the source's own SHA-256
instead (``kernels_jit-<digest>``): the same source reads the same compiled code wherever it
lies, and numba's own check of the index (the source's SHA-256, the function's line, its
signature and the target machine) is unchanged.

:func:`use_content_keyed_locator` puts it first among numba's locators, as PyTensor does for
the functions it generates (``pytensor.link.numba.cache``); it serves only the ``.py`` files
of dprisk's own packages, and only when ``NUMBA_CACHE_DIR`` is set, leaving every other
function to numba's own locators. Call it before the kernels are decorated (when their
module is imported).
"""

from __future__ import annotations

import os
from pathlib import Path

from numba.core import caching, config

__all__ = ["ContentKeyedCacheLocator", "is_dprisk_source", "use_content_keyed_locator"]

#: dprisk's folders (the package, and the ``inference``, ``models`` and ``validation``
#: packages it holds, links resolved: in a source tree they lie beside it): their ``.py``
#: files are the ones served.
_DPRISK = Path(__file__).resolve().parents[1]
_SERVED = (_DPRISK, *((_DPRISK / name).resolve() for name in ("inference", "models",
                                                                "validation")))


def is_dprisk_source(py_file: str) -> bool:
    """Whether ``py_file`` is a ``.py`` file of dprisk's own packages (links resolved)."""
    if not py_file.endswith(".py") or not os.path.exists(py_file):
        return False
    resolved = Path(py_file).resolve()
    return any(resolved.is_relative_to(folder) for folder in _SERVED)


#: numba's locator of ``NUMBA_CACHE_DIR`` (``_UserProvidedCacheLocator`` before numba 0.59);
#: without it (another numba's internals) nothing is changed.
_USER_PROVIDED = (getattr(caching, "UserProvidedCacheLocator", None)
                  or getattr(caching, "_UserProvidedCacheLocator", None))


class ContentKeyedCacheLocator(_USER_PROVIDED or object):
    """Numba's locator of ``NUMBA_CACHE_DIR``, with folders named by the source's SHA-256.

    ``<NUMBA_CACHE_DIR>/<module>-<SHA-256 of the source file>``: for dprisk's own files only
    (:func:`is_dprisk_source`); :meth:`from_function` declines every other file.
    """

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        # numba's own stamp of the source, the SHA-256 its index is checked against (memoised
        # by the file's time and size): hashed once for both
        digest = self.get_source_stamp().hex()
        self._cache_path = os.path.join(config.CACHE_DIR, f"{Path(py_file).stem}-{digest}")

    @classmethod
    def from_function(cls, py_func, py_file):
        """The locator of ``py_func`` in ``py_file``, or None (numba's next locator's turn)."""
        if not config.CACHE_DIR or not is_dprisk_source(py_file):
            return None
        return super().from_function(py_func, py_file)


def use_content_keyed_locator() -> bool:
    """Put :class:`ContentKeyedCacheLocator` first among numba's cache locators (once).

    Returns whether it is there: not where this numba's caching internals are not the ones
    known (its kernels are then cached by their path, as numba does by itself).
    """
    locators = getattr(getattr(caching, "CacheImpl", None), "_locator_classes", None)
    if _USER_PROVIDED is None or not isinstance(locators, list):
        return False
    if ContentKeyedCacheLocator not in locators:
        locators.insert(0, ContentKeyedCacheLocator)
    return True
