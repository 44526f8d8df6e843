"""The report's fork server: started as early as the command line can, stopped at once on a stop.

:func:`dprisk.validation.report.runner.run_studies` forks the report's worker processes from
multiprocessing's fork server, a fresh process that first imports :data:`PRELOAD` and the
studies' modules (:func:`report_preload`): about 4 s of CPU. ``dprisk reproduce`` starts it
first thing (:func:`fork_server_started`, right after its options and ``--out`` are checked)
so that those imports run on the other core while the command imports the report's own
libraries (xarray, matplotlib: about 1.3 s) and runs its cheapest studies itself; the pool
then finds the server started. This module imports only the standard library, not the
libraries of the report, and does not read the registry (the server does,
:data:`STUDY_MODULES`), so the server starts about 0.15 s after the process instead of 1.5 s.

An error or an interrupt (Ctrl-C, SIGTERM) before the pool has started stops the fork server
at once (:func:`stop_fork_server`), in the middle of its imports, which it would otherwise
finish first: seconds before the command could stop, and, after the forced exit of a stop
signal, as an orphan process (:func:`kill_pool_processes`, the forced exit's clean-up, kills
it and the workers).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Iterable, Iterator

from dprisk.runtime.output_files import FORCED_EXIT_CLEANUPS

__all__ = ["PRELOAD", "RUNNER", "SERVER_START", "STUDY_MODULES", "available_cores",
           "fork_server_started", "kill_pool_processes", "report_preload", "server_preload",
           "start_fork_server_without_stderr", "stop_fork_server"]

#: The module the fork server imports first (:mod:`dprisk.runtime.fork_server_start`: its
#: garbage collector paused for its imports, ArviZ's placeholders made from one frame).
SERVER_START = "dprisk.runtime.fork_server_start"
#: The module whose functions the workers run (:mod:`dprisk.validation.report.runner`),
#: imported by the fork server right after :data:`SERVER_START`.
RUNNER = "dprisk.validation.report.runner"
#: Modules the fork server imports before it forks the report's workers
#: (:func:`dprisk.validation.report.build.write_report`), so that each worker starts with them
#: loaded instead of importing them again (about 4 s of CPU per worker here). They
#: are libraries and the report's registry, not state of the calling process; a module that
#: fails to import is skipped by the fork server and then imported by the study as usual.
#: Not ``dask.array``: xarray's checks for Dask arrays no longer import it
#: (:mod:`dprisk.runtime.deferred_dask`), and no study uses Dask.
#: ``dprisk.models.mechanism.pymc_dist``: the PyMC studies' distribution, which imports
#: PyTensor's numba linker and numba (0.8 s of CPU), and ``pytensor.link.c.cvm``, which the
#: compiled functions' virtual machine imports with setuptools (0.1-0.4 s): in both workers
#: otherwise. ``dprisk.runtime.numba_target``: numba's CPU target registered once, not at each
#: worker's first kernel (about 0.35 s of CPU a worker, 0.25 s in the server).
#: ``dprisk.validation.figures.tick_copies_checked``: the figures' tick copies checked once,
#: not by each worker at its first figure (0.15-0.2 s a worker, 0.07-0.12 s in the server).
#: :func:`report_preload` adds the registered studies' own modules (each imported once, in
#: the fork server, not once per worker that runs a study).
PRELOAD = ("dprisk.validation.report.build", "numpy", "scipy.stats", "xarray", "pymc",
           "arviz_stats", "dprisk.models.mechanism.pymc_dist", "pytensor.link.c.cvm",
           "dprisk.runtime.numba_target", "dprisk.validation.figures.tick_copies_checked")
#: The module that imports every registered study's module (its docstring), the early fork
#: server's last preload (:func:`report_preload`).
STUDY_MODULES = "dprisk.validation.report.study_modules"


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def report_preload(studies: Iterable | None = None) -> tuple[str, ...]:
    """:data:`PRELOAD` and the modules of ``studies`` (default: every registered study's).

    ``studies``: objects with a ``module`` attribute (the registry's
    :class:`~dprisk.validation.registry.RegisteredStudy`); others are skipped. By default
    the last module is :data:`STUDY_MODULES`, which imports every registered study's module
    in the fork server: the registry is read there (where importing the report reads it
    anyway), not in this process before the server starts (about 0.1 s).
    """
    if studies is None:
        return (*PRELOAD, STUDY_MODULES)
    modules = [getattr(study, "module", None) for study in studies]
    return (*PRELOAD, *dict.fromkeys(m for m in modules if m is not None))


def server_preload(preload: Iterable[str]) -> list[str]:
    """What the fork server imports: :data:`SERVER_START`, :data:`RUNNER`, then ``preload``."""
    return [SERVER_START, RUNNER, *preload]


def start_fork_server_without_stderr() -> None:
    """Start multiprocessing's fork server (if not running) with its stderr on ``os.devnull``.

    It imports the preload set with ``set_forkserver_preload`` (in its own process, while
    this one goes on). The workers it forks inherit that stderr: a study's error comes back
    to the calling process as its exception (pickled by the pool), and what a worker would
    print on stderr otherwise is dropped. Without it, a worker that the pool was still
    starting when ``dprisk reproduce`` was stopped printed a traceback (its semaphore gone
    with the calling process) on the user's terminal after the command's last line.
    """
    from multiprocessing import forkserver

    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(2)
    try:
        os.dup2(devnull, 2)
        forkserver.ensure_running()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def fork_server_pid() -> int | None:
    """The process id of this process's fork server, or None when none was started."""
    from multiprocessing import forkserver

    return forkserver._forkserver._forkserver_pid  # the process's one fork server


def stop_fork_server() -> None:
    """Stop this process's multiprocessing fork server now, if one runs (even mid-import).

    The fork server notices that its clients are gone only in its serving loop, after its
    preload imports (:data:`PRELOAD`: seconds of CPU); so it is killed (``SIGKILL``: it holds
    nothing to clean up, and its workers are stopped by their pool) and reaped, and its
    socket removed. The next pool of this process starts a new one.
    """
    from multiprocessing import forkserver

    server = forkserver._forkserver  # the process's one fork server (multiprocessing's)
    pid = server._forkserver_pid
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    try:
        server._stop()  # closes its "alive" pipe, reaps it, removes its socket
    except OSError:  # reaped already (a pool's start found it dead) or its socket gone
        server._forkserver_pid = server._forkserver_address = None


def kill_pool_processes() -> None:
    """The forced exit's clean-up (a stop signal's watchdog): kill the workers and the server.

    No waiting and no locks: the process ends right after
    (:data:`dprisk.runtime.output_files.FORCED_EXIT_CLEANUPS`).
    """
    for child in multiprocessing.active_children():
        with contextlib.suppress(Exception):
            child.kill()
    pid = fork_server_pid()
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def fork_server_started(workers: int, preload: Iterable[str] | None = None) -> Iterator[bool]:
    """Start the report's fork server now, when ``workers > 1``; stop it on an error.

    For ``dprisk reproduce`` before it imports the report
    (:func:`dprisk.validation.report.build.write_report`, whose pool then finds the server
    running, :func:`dprisk.validation.report.runner.run_studies`). With ``workers <= 1`` it
    starts nothing (the studies run in this process). The server imports the modules
    ``preload`` names (default: :func:`server_preload` of :func:`report_preload`, as the
    pool's).

    Yields whether it started a server. An exception or interrupt out of the block stops
    the server it started, at once (:func:`stop_fork_server`, even amid its imports), and
    while the block runs a stop signal's forced exit kills it (:func:`kill_pool_processes`).
    When the block ends normally the server is kept, as a pool's is (for the next pool; it
    exits with this process).
    """
    if workers <= 1:
        yield False
        return
    started = fork_server_pid() is None
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(server_preload(report_preload()) if preload is None
                                   else list(preload))
    key = id(context)
    try:
        FORCED_EXIT_CLEANUPS[key] = kill_pool_processes
        start_fork_server_without_stderr()
        yield started
    except BaseException:
        if started:
            stop_fork_server()
        raise
    finally:
        FORCED_EXIT_CLEANUPS.pop(key, None)
