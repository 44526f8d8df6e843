"""dprisk's cache directory, found and written by the set-up's tools without importing dprisk.

:func:`dprisk.runtime.cache.cache_root` is the rule (``$DPRISK_CACHE_DIR``, an absolute path,
else ``$XDG_CACHE_HOME/dprisk``, else ``~/.cache/dprisk``); ``tools/install_uv.py`` and
``tools/compile_libraries.py`` run before the venv, and so dprisk's dependencies, exist, and
find the same directory here (``tests/reliability/test_install_uv.py`` checks that they agree
under each setting).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def dprisk_cache_root() -> Path:
    """``$DPRISK_CACHE_DIR`` (absolute), else ``$XDG_CACHE_HOME/dprisk`` or ``~/.cache/dprisk``."""
    chosen = os.environ.get("DPRISK_CACHE_DIR")
    if chosen and os.path.isabs(chosen):
        return Path(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "dprisk"


def write_whole(path: Path | str, payload: bytes) -> None:
    """Write ``payload`` to ``path`` through a temporary file renamed over it (never a part).

    Raises ``OSError`` as ``open`` and ``os.replace`` do; the temporary file is removed
    then (a full disk left ``NAME.PID.partial`` in the cache, which no later set-up removes).
    """
    partial = f"{path}.{os.getpid()}.partial"
    try:
        with open(partial, "wb") as handle:
            handle.write(payload)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise
