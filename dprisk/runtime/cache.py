"""The user's cache directory: the one place where dprisk keeps what it computes once.

``$DPRISK_CACHE_DIR``, else ``$XDG_CACHE_HOME/dprisk``, else ``~/.cache/dprisk``. Below it:
``accounting/`` (privacy-accounting results, :mod:`dprisk.inference.privacy.accounting_cache`),
``numba/`` (the compiled kernels of :mod:`dprisk.inference.kernels.fused_kernels_jit`, in folders
named by their source's SHA-256, :mod:`dprisk.runtime.numba_locator`),
``uv/`` (the uv wheel ``make setup`` installed, ``tools/install_uv.py``) and ``pyc/`` (the
libraries' compiled modules ``make setup`` keeps for the next set-up,
``tools/compile_libraries.py``, and the tests' rewritten modules, ``tests/process_costs.py``);
the set-up's tools find this directory the same way without importing dprisk
(``tools/cache_root.py``).
Nothing is written into the source tree or the installed package at run time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dprisk.runtime.settings import setting

__all__ = ["cache_root", "use_numba_cache"]


def cache_root() -> Path:
    """``$DPRISK_CACHE_DIR``, else ``$XDG_CACHE_HOME/dprisk``, else ``~/.cache/dprisk``."""
    root = setting("DPRISK_CACHE_DIR")  # parsed by dprisk.runtime.settings
    if root is None:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(xdg) / "dprisk"
    return Path(root)


def use_numba_cache() -> Path:
    """Point numba's on-disk cache (``cache=True`` kernels) at ``cache_root() / "numba"``.

    Call before the module that defines the cached kernels is imported: numba picks a cache
    locator when a kernel is decorated. A ``NUMBA_CACHE_DIR`` the user set is kept. When numba
    is already loaded (PyTensor loads it), its configuration is updated as well.
    """
    wanted = os.environ.get("NUMBA_CACHE_DIR") or str(cache_root() / "numba")
    os.environ["NUMBA_CACHE_DIR"] = wanted
    config = sys.modules.get("numba.core.config")
    if config is not None:
        config.CACHE_DIR = wanted
    return Path(wanted)
