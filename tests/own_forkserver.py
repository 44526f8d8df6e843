"""A test module's own multiprocessing fork server: started fresh, stopped at the module's end.

A fork server left running by an earlier module of the test process (the explorer's sampling
jobs, the report runner start one) would serve this module's pools with its own preload; and
one left running after the module charges its workers' CPU to no module (tests/cpu_records.py
counts a module's reaped processes). Python has one fork server a process, whose preload list
is process-wide: it is restored afterwards.
"""

from contextlib import contextmanager
from multiprocessing import forkserver

from dprisk.validation.report.fork_server import stop_fork_server


@contextmanager
def own_forkserver(preload=None):
    """Within the block, this process's fork server is a new one.

    Any running server is stopped first; with ``preload`` the new one imports those modules
    and is started at once (else the next pool starts it, with the preload it sets). At the
    end the server is stopped (killed and reaped: :func:`stop_fork_server`) and the preload
    list before the block is restored.
    """
    saved_preload = list(forkserver._forkserver._preload_modules)  # multiprocessing's one
    stop_fork_server()
    try:
        if preload is not None:
            forkserver.set_forkserver_preload(list(preload))
            forkserver.ensure_running()
        yield
    finally:
        stop_fork_server()
        forkserver.set_forkserver_preload(saved_preload)
