"""Python's cyclic garbage collector: paused for a block, running again in a forked worker.

Importing libraries and drawing figures make many objects and nearly no cyclic garbage, yet
they set off the collector again and again, its full collections walking every object of the
process (some 500,000 after PyMC's import): :func:`collector_paused` pauses it for such a
block (the report's libraries imported by ``dprisk reproduce``: 1.9 -> 1.7 s of CPU; a test
worker's collection, frozen after it; a study's figures drawn, ``dprisk.validation.report.
runner.render_figures``). A fork server that imported with it paused for good
(:mod:`dprisk.runtime.fork_server_start`) has each worker call
:func:`resume_collector_in_fork` first. What reference counting frees is freed as before;
only when garbage cycles are reclaimed changes, never a number.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused", "resume_collector_in_fork"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Within the block, Python's cyclic garbage collector does not run (``gc.disable``).

    On leaving it (normally or by an exception) the collector runs again if it ran before;
    the garbage cycles made meanwhile are collected by its next run.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def resume_collector_in_fork(thresholds: tuple[int, int, int] | None = None) -> None:
    """A forked worker's start: what it inherited frozen, then its garbage collector running.

    ``gc.freeze()`` (the server's imports, which the worker keeps for its whole life: full
    collections then walk only what the worker makes itself, and leave the inherited pages
    unwritten, as the ``gc`` documentation recommends for forked workers), then
    ``gc.set_threshold(*thresholds)`` when given, then ``gc.enable()`` (a server started by
    :mod:`dprisk.runtime.fork_server_start` imported with it paused).
    """
    gc.freeze()
    if thresholds is not None:
        gc.set_threshold(*thresholds)
    gc.enable()
