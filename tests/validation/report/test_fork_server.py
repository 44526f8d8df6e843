"""The report's fork server started early: kept for the pool, stopped at once on an error."""

import gc
import os
import runpy
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from fresh_python import answer_of_a_fork
from report_helpers import slow_preload, wait_for

from dprisk.runtime.output_files import FORCED_EXIT_CLEANUPS
from dprisk.validation.registry import registered
from dprisk.validation.report import build, fork_server, runner
from dprisk.validation.report.fork_server import (
    PRELOAD,
    RUNNER,
    SERVER_START,
    STUDY_MODULES,
    fork_server_pid,
    fork_server_started,
    kill_pool_processes,
    report_preload,
    server_preload,
    stop_fork_server,
)


def test_the_preload_is_the_pools():
    """What the early server imports is what the report's pool asks for: the runner, the
    libraries and each registered study's module (through STUDY_MODULES, so this process
    need not read the registry before the start)."""
    assert RUNNER == runner.__name__
    assert runner.PRELOAD is PRELOAD and runner.stop_fork_server is stop_fork_server
    assert report_preload() == (*PRELOAD, STUDY_MODULES)
    modules = report_preload(study for _, study in build.STUDIES)  # the pool's
    assert modules == build._preload()
    assert modules[:len(PRELOAD)] == PRELOAD
    assert list(modules[len(PRELOAD):]) == [study.module for study in registered()]
    assert report_preload([object()]) == PRELOAD  # a study without a module adds none


def test_the_server_imports_its_start_first_then_the_runner():
    assert server_preload(["numpy", "xarray"]) == [SERVER_START, RUNNER, "numpy", "xarray"]
    assert SERVER_START == "dprisk.runtime.fork_server_start"


#: Run in a new interpreter: the fork server's first import.
SERVER_START_CODE = """
import gc, lazy_loader
import dprisk.runtime.fork_server_start
print(gc.isenabled(), lazy_loader.load.reads_one_frame)
"""


def _worker_start_after_the_servers_pause():
    """A worker's start (``runner.start_worker``) in a process as the server leaves it: the
    collector paused, nothing frozen, Python's default thresholds. Returns whether it then
    collects, at the studies' thresholds, with what it inherited frozen."""
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    gc.disable()
    runner.start_worker()
    return (gc.isenabled(), gc.get_threshold() == runner.STUDY_GC_THRESHOLDS,
            gc.get_freeze_count() > 0)


def test_the_server_imports_with_its_collector_paused_and_a_worker_runs_it_again():
    """The server's collector is off for its imports (and ArviZ's placeholders read one frame);
    a worker it forks freezes what it inherited and collects again, at the studies'
    thresholds. The first import in a new interpreter; the worker's start in a fork of this
    process (not after the runner's imports in that interpreter: 0.8 s of CPU)."""
    done = subprocess.run([sys.executable, "-c", SERVER_START_CODE], capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
    assert runner.STUDY_GC_THRESHOLDS != (700, 10, 10)
    assert answer_of_a_fork(_worker_start_after_the_servers_pause) == (True, True, True)


def test_the_study_modules_preload_imports_each_study_module_once(monkeypatch):
    """Run as the fork server imports it, over stand-in studies: each module once, in page
    order; one that fails to import (or has none) is skipped."""

    def study(module):
        return SimpleNamespace(module=module)

    monkeypatch.setattr(build, "STUDIES", [
        ("a", study("json")), ("b", study("dprisk.no.such.module")), ("c", SimpleNamespace()),
        ("d", study("colorsys")), ("e", study("json"))])
    namespace = runpy.run_module(STUDY_MODULES)
    assert namespace["IMPORTED"] == ["json", "colorsys"]


def test_one_worker_starts_no_server(monkeypatch):
    def no_start():
        raise AssertionError("a fork server was started")

    monkeypatch.setattr(fork_server, "start_fork_server_without_stderr", no_start)
    with fork_server_started(1) as started:
        assert started is False


def test_a_server_started_early_is_kept_when_the_block_ends():
    """The pool finds it running (and uses it); a stop's forced exit kills it meanwhile."""
    stop_fork_server()
    try:
        with fork_server_started(2, preload=[]) as started:  # imports nothing: fast
            assert started is True and fork_server_pid() is not None
            assert kill_pool_processes in FORCED_EXIT_CLEANUPS.values()
        assert kill_pool_processes not in FORCED_EXIT_CLEANUPS.values()
        pid = fork_server_pid()
        os.kill(pid, 0)  # still there
        with fork_server_started(2, preload=[]) as started:  # running already: not restarted
            assert started is False and fork_server_pid() == pid
    finally:
        stop_fork_server()


def test_an_interrupt_while_the_early_server_imports_stops_it_at_once(monkeypatch, tmp_path):
    """Ctrl-C or SIGTERM (a KeyboardInterrupt) while ``dprisk reproduce`` imports the report
    and the early server its preload (20 s here): the server is killed and reaped at once,
    not left to finish its imports (as an orphan after the command's forced exit). Bound:
    10 s from the interrupt, half the imports' 20 s, for a kill and a reap on a loaded
    machine."""
    begun = slow_preload("slow_preload_for_fork_server_test", tmp_path, monkeypatch)
    stop_fork_server()  # the next fork server imports this test's preload
    try:
        with pytest.raises(KeyboardInterrupt):
            with fork_server_started(2, preload=["slow_preload_for_fork_server_test"]):
                wait_for(begun)  # it imports
                interrupted = time.monotonic()
                raise KeyboardInterrupt
        assert time.monotonic() - interrupted < 10.0
        assert fork_server_pid() is None
        assert kill_pool_processes not in FORCED_EXIT_CLEANUPS.values()
        with pytest.raises(ProcessLookupError):  # killed and reaped
            os.kill(int(begun.read_text()), 0)
    finally:
        stop_fork_server()


def test_a_fork_of_this_process_answers_beside_idle_threads_and_is_killed_if_it_hangs():
    """tests/fresh_python.answer_of_a_fork (the worker's start above): a progress bar's tqdm
    monitor and idle threads left by earlier tests do not stop it (its first form refused to
    fork beside any Python thread and failed after a module that drew a bar), the fork's
    error comes back as its traceback, and a fork that does not answer is killed."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm import tqdm

    with ThreadPoolExecutor(2) as pool, open(os.devnull, "w") as null:
        assert pool.submit(int, "7").result() == 7  # its threads now wait on their queue
        for _ in tqdm(range(2), file=null):
            pass
        assert answer_of_a_fork(lambda: (os.getpid(), 42))[1] == 42
        with pytest.raises(AssertionError, match="ZeroDivisionError"):
            answer_of_a_fork(lambda: 1 / 0)
        with pytest.raises(AssertionError, match=r"no answer within 0\.2 s: killed"):
            answer_of_a_fork(lambda: time.sleep(60), timeout=0.2)
