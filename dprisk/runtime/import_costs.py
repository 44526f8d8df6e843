"""What importing PyMC costs a process besides the imports themselves, left out.

ArviZ's ``arviz_base`` (imported with PyMC) asks ``lazy_loader.load`` for ``jax`` and
``numpyro`` at its import. Neither is installed here, and for each ``lazy_loader`` keeps its
caller's file, line and source line for the error its placeholder raises on first use, read
from ``inspect.stack()``: every frame of the stack with its source, each of importlib's frozen
frames looked up through all of ``sys.modules``. The deeper the stack and the more modules
loaded, the more it costs: 0.3-0.5 s of CPU in the report's fork server, 1.0 s at a test
worker's collection, 0.5 s in a notebook kernel (measured 2026-11-29/30).
:func:`lazy_loader_reads_one_frame` has it read the caller's frame alone: the same file, line,
function and source line (the line from ``linecache``, not ``inspect.getframeinfo``'s
``findsource``, which looks the module up through every loaded module's real path: 0.13 s
of CPU in the report's fork server), so the placeholder and its error are the same.

Called where dprisk runs a process of its own that imports PyMC (its fork servers,
:mod:`dprisk.runtime.fork_server_start`) and in the test processes
(``tests/process_costs.py``); not on ``import dprisk`` (a user's process is the user's).

The collector's share of imports: :mod:`dprisk.runtime.collector`.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import linecache
import sys

__all__ = ["lazy_loader_reads_one_frame"]


def lazy_loader_reads_one_frame() -> None:
    """Have ``lazy_loader`` make a missing module's placeholder from its caller's frame alone.

    ``lazy_loader.load`` reads the caller's frame (``inspect.getframeinfo`` without context,
    the source line from ``linecache``), not ``inspect.stack()``: the same file, line,
    function and source line, which the placeholder shows in the error it raises when used.
    Any other call (a module that is there, ``require``, ``error_on_import``, a submodule)
    goes to ``lazy_loader`` as before; without ``lazy_loader`` (or its placeholder class)
    nothing changes. Calling it again changes
    nothing (the wrapper says ``reads_one_frame``).
    """
    try:
        import lazy_loader
    except ImportError:
        return
    load = lazy_loader.load
    placeholder = getattr(lazy_loader, "DelayedImportErrorModule", None)
    if placeholder is None or getattr(load, "reads_one_frame", False):
        return

    @functools.wraps(load)
    def one_frame_load(fullname, *, require=None, error_on_import=False,
                       suppress_warning=False):
        if require is None and not error_on_import and "." not in fullname \
                and fullname not in sys.modules and importlib.util.find_spec(fullname) is None:
            frame = sys._getframe(1)
            caller = inspect.getframeinfo(frame, context=0)
            line = linecache.getline(caller.filename, caller.lineno, frame.f_globals)
            return placeholder({"filename": caller.filename, "lineno": caller.lineno,
                                "function": caller.function,
                                "code_context": [line] if line else None},
                               "DelayedImportErrorModule",
                               message=f"No module named '{fullname}'")
        return load(fullname, require=require, error_on_import=error_on_import,
                    suppress_warning=suppress_warning)

    one_frame_load.reads_one_frame = True
    lazy_loader.load = one_frame_load
