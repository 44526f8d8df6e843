"""Run the report's studies: one after another, or side by side in worker processes.

The studies of :data:`dprisk.validation.report.build.STUDIES` are independent: each seeds its
own generators from constants of its module (its ``seeds``) and reads nothing another study
computed, so the process a study runs in changes none of its numbers; the results come back in
the registry's order whatever order they finish in. With ``workers > 1``, a pool of that many
processes (started by a fork server that has imported only this module and the libraries of
:data:`PRELOAD`, so no state of the calling process is inherited) takes the studies longest
first (each study's cost hint, :func:`cost_hint`: seconds of CPU measured on one core, given
where the study registers itself, :mod:`dprisk.validation.registry`), which keeps the two
cores of a small machine busy until the end: the longest-processing-time rule, within 4/3 of
the best split. The fork server's imports take seconds on one core: meanwhile this process runs the
cheapest studies itself (:data:`LOCAL_START_SECONDS`), so the other core is not idle. An error
or an interrupt (Ctrl-C, SIGTERM) before the pool has started stops the fork server at once
(:func:`stop_fork_server`), in the middle of its imports, which it would otherwise finish
first: seconds before the pool's start could be given up, and, after the forced exit of a
stop signal, as an orphan process (the watchdog's clean-up kills it and the workers).

Each study's figures are rendered to PNG in the process that made them (so rendering runs
side by side too), and its :class:`~dprisk.validation.paper.records.StudyResult` is returned
by pickling, each figure replaced by its caption and alt text
(:class:`~dprisk.validation.figures.captions.FigureText`: what the page reads of it).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
import signal
import threading
from collections.abc import Callable, Iterator, Sequence

from dprisk.runtime.output_files import FORCED_EXIT_CLEANUPS
from dprisk.validation.figures.captions import figure_text
from dprisk.validation.figures.draw_once import garbage_collection_paused
from dprisk.validation.figures.log_ticks import thin_log_minor_ticks
from dprisk.validation.figures.png import png_bytes
from dprisk.validation.paper.records import StudyResult

__all__ = ["FIGURE_DPI", "LOCAL_START_SECONDS", "PRELOAD", "available_cores",
           "cost_hint", "freeze_inherited_objects", "render_figures", "run_studies",
           "stop_fork_server"]

#: Resolution of the report's PNG figures.
FIGURE_DPI = 110
#: CPU seconds (by their cost hints, :func:`cost_hint`) of the cheapest studies that this
#: process runs itself while the fork server imports :data:`PRELOAD` (about 3.5 s here, on
#: the other core), instead of waiting for the pool's workers: those studies leave the pool,
#: whose last study ends the earlier. Only studies with a cost hint are taken, cheapest
#: first, while their sum stays within it.
LOCAL_START_SECONDS = 3.0
#: Modules the fork server imports before it forks the report's workers
#: (:func:`dprisk.validation.report.build.write_report`), so that each worker starts with them
#: loaded instead of importing them again (about 4 s of CPU per worker here). They
#: are libraries and the report's registry, not state of the calling process; a module that
#: fails to import is skipped by the fork server and then imported by the study as usual.
#: ``dask.array``: xarray imports it in every process that makes a Dataset when dask is
#: installed (its duck-array check, ``xarray.namedarray.pycompat``), 0.7-1.4 s of CPU each.
#: :func:`dprisk.validation.report.build.write_report` adds the registered studies' own
#: modules (each imported once, in the fork server, not once per worker that runs a study).
PRELOAD = ("dprisk.validation.report.build", "numpy", "scipy.stats", "xarray", "dask.array",
           "pymc", "arviz_stats")


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def render_figures(result: StudyResult) -> dict[str, bytes]:
    """Each figure of ``result`` as PNG bytes (``FIGURE_DPI``, tight bounding box), by stem.

    Drawn once each (:func:`dprisk.validation.figures.png.png_bytes`), not three times as
    ``savefig(..., bbox_inches="tight")`` draws them, and with fewer minor ticks on log axes
    spanning many decades (:func:`dprisk.validation.figures.log_ticks.thin_log_minor_ticks`),
    with Python's cyclic garbage collector paused meanwhile
    (:func:`dprisk.validation.figures.draw_once.garbage_collection_paused`: its full
    collections walk the whole heap a study leaves, 0.5 s each).
    """
    pngs = {}
    with garbage_collection_paused():
        for stem, fig in result.figures.items():
            thin_log_minor_ticks(fig)
            pngs[stem] = png_bytes(fig, FIGURE_DPI)
    return pngs


def _run_one(study: Callable[..., StudyResult], paper_scale: bool):
    result = study(paper_scale=paper_scale)
    return result, render_figures(result)


def _run_portable(study: Callable[..., StudyResult], paper_scale: bool) -> bytes | None:
    """:func:`_run_one` in a worker, pickled; None when the result does not pickle.

    The result's figures, once rendered, are replaced by their caption and alt text
    (:func:`dprisk.validation.figures.captions.figure_text`, all the page reads of them):
    pickling the figures here and unpickling them in the calling process cost about 6 s of
    CPU over the report. A result that still does not pickle (a dataset holding a local
    function, say): the calling process then runs that study itself.
    """
    result, pngs = _run_one(study, paper_scale)
    result.figures = {stem: figure_text(fig, stem) for stem, fig in result.figures.items()}
    try:
        return pickle.dumps((result, pngs))
    except (pickle.PicklingError, AttributeError, TypeError):
        return None


def _run_task(task: tuple) -> tuple[tuple, bytes | None]:
    """Run a pool task ``(key, callable, paper_scale)``; ``(key, pickled result)``.

    A study (``key[0] == "study"``, by :func:`_run_portable`) or a part of a split study
    (``key[0] == "part"``: its value, pickled).
    """
    key, call, paper_scale = task
    if key[0] == "part":
        return key, pickle.dumps(call(paper_scale=paper_scale))
    return key, _run_portable(call, paper_scale)


def cost_hint(study: Callable) -> float | None:
    """The study's cost hint (CPU seconds on one core), or None when it has none.

    A registered study's (:class:`dprisk.validation.registry.RegisteredStudy`, the
    ``cost`` of its ``@report_study`` beside it) or a function's ``cost_hint`` attribute.
    """
    return getattr(study, "cost_hint", None)


def study_parts(study: Callable) -> tuple[str, ...]:
    """Names of the parts of a study split into parts (registered with ``parts``), or ()."""
    return tuple(name for name, _ in getattr(study, "parts", ()))


def _by_cost(studies: Sequence[Callable]) -> list[int]:
    return sorted(range(len(studies)), key=lambda i: -(cost_hint(studies[i]) or 0.0))


def _split_local(studies: Sequence[Callable]) -> tuple[list[int], list[int]]:
    """Indices ``(local, pooled)``: the studies this process runs while the fork server starts.

    ``local``: the cheapest studies with a cost hint, cheapest first, while their hints sum
    to at most :data:`LOCAL_START_SECONDS`; ``pooled``: the others, longest first
    (:func:`_by_cost`).
    """
    order = _by_cost(studies)
    local, spent = [], 0.0
    for i in reversed(order):
        cost = cost_hint(studies[i])
        if cost is None or study_parts(studies[i]):
            continue
        if spent + cost > LOCAL_START_SECONDS:
            break
        local.append(i)
        spent += cost
    return local, [i for i in order if i not in local]


def freeze_inherited_objects() -> None:
    """A worker's start: its collections skip what it inherited (``gc.freeze()``).

    The fork server has imported :data:`PRELOAD` and the studies' modules: about 2e5 objects
    that a worker keeps for its whole life and never frees. A full collection scans every
    tracked object: 0.25-0.3 s each in a worker, two or three per study that compiles PyMC
    models (PyTensor's graphs are many long-lived objects); frozen, a full collection scans
    only what the worker made itself. Measured in one process after the same imports, the
    full collections' CPU: two levels 0.87 -> 0.27 s, simulation-based calibration
    0.55 -> 0.17 s. It also keeps the collections from writing to the inherited objects'
    pages (copy on write), as the ``gc`` documentation recommends for forked workers. The
    results do not depend on it (the collector frees unreachable objects only).
    """
    gc.freeze()


def _start_fork_server_without_stderr() -> None:
    """Start multiprocessing's fork server (if not running) with its stderr on ``os.devnull``.

    The workers it forks inherit that stderr: a study's error comes back to the calling
    process as its exception (pickled by the pool), and what a worker would print on stderr
    otherwise is dropped. Without it, a worker that the pool was still starting when
    ``dprisk reproduce`` was stopped printed a traceback (its semaphore gone with the calling
    process) on the user's terminal after the command's last line.
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


def _kill_pool_processes() -> None:
    """The forced exit's clean-up (a stop signal's watchdog): kill the workers and the server.

    No waiting and no locks: the process ends right after
    (:data:`dprisk.runtime.output_files.FORCED_EXIT_CLEANUPS`).
    """
    from multiprocessing import forkserver

    for child in multiprocessing.active_children():
        with contextlib.suppress(Exception):
            child.kill()
    pid = forkserver._forkserver._forkserver_pid
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def run_studies(studies: Sequence[Callable[..., StudyResult]], *, paper_scale: bool,
                workers: int = 1, preload: Sequence[str] = ()
                ) -> Iterator[tuple[int, StudyResult, dict[str, bytes]]]:
    """Run ``studies``; yield ``(index, result, pngs)`` for each as it finishes.

    Parameters
    ----------
    studies : sequence of callable
        Each called as ``study(paper_scale=paper_scale)`` and returning a ``StudyResult``.
        With ``workers > 1`` they must be importable module-level functions (they are
        pickled by name).
    paper_scale : bool
        Passed to every study.
    workers : int (>= 1)
        Processes to run them in; 1 runs them here, in order. Otherwise the cheapest (within
        :data:`LOCAL_START_SECONDS` by :func:`cost_hint`) run here first, while the fork
        server imports ``preload``, and the others in a pool of that many processes. On an
        error or interrupt the workers and the fork server are stopped at once.
    preload : sequence of str
        Modules the fork server imports before forking the workers (:data:`PRELOAD` for the
        report); it does so when it starts, i.e. at the first pool of this process.

    Yields
    ------
    index : int
        The study's position in ``studies``.
    result : StudyResult
    pngs : dict of str to bytes
        :func:`render_figures` of ``result``.
    """
    workers = min(int(workers), len(studies))
    if workers <= 1:
        for i, study in enumerate(studies):
            yield (i, *_run_one(study, paper_scale))
        return
    local, pooled = _split_local(studies)
    if not pooled:  # all cheap: no fork server to start
        for i in local:
            yield (i, *_run_one(studies[i], paper_scale))
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__, *preload])
    _start_fork_server_without_stderr()  # it imports ``preload`` now, in its own process
    tasks = _Tasks(studies, pooled, paper_scale)
    processes = min(workers, len(tasks.waiting))
    started: dict = {}

    def start_pool():  # in a thread: Pool() waits for the fork server's imports
        try:
            started["pool"] = context.Pool(processes=processes,
                                           initializer=freeze_inherited_objects)
            tasks.submit(started["pool"], processes)  # the longest tasks, at once
        except BaseException as exc:  # raised in the calling thread below
            started["error"] = exc

    starter = threading.Thread(target=start_pool, name="report-pool", daemon=True)
    cleanup = id(starter)
    FORCED_EXIT_CLEANUPS[cleanup] = _kill_pool_processes  # a stop's watchdog ends the process
    starter.start()
    try:
        for i in local:  # meanwhile, the cheapest studies here
            yield (i, *_run_one(studies[i], paper_scale))
        starter.join()
        if "error" in started:
            raise started["error"]
        yield from tasks.run(started["pool"], processes)
    except BaseException:  # an error or an interrupt: the workers stop now, not after a study
        # While the pool starts, the fork server may be amid its imports: it would hold up
        # the pool's start (the starter waits for it) and finish them before it exits, so it
        # is stopped first. A server the starter starts again meanwhile imports nothing and
        # is stopped below. Once the pool runs, the server serves (and exits with this
        # process): it is kept for the next pool.
        server_stopped = starter.is_alive()
        if server_stopped:
            context.set_forkserver_preload([])
            stop_fork_server()
        starter.join()
        if "pool" in started:
            started["pool"].terminate()
            started["pool"].join()
        else:  # interrupted while the pool started: stop the workers started so far
            for child in multiprocessing.active_children():
                child.terminate()
                child.join()
        if server_stopped:
            stop_fork_server()
        raise
    finally:
        FORCED_EXIT_CLEANUPS.pop(cleanup, None)
    started["pool"].close()
    started["pool"].join()


class _Tasks:
    """The pool's tasks of :func:`run_studies`, handed to the workers as they are free.

    Tasks: each study, or each part of a study split into parts (:func:`study_parts`) and,
    once all its parts are back, its join (``study.joined(values)``). At most as many tasks
    as workers are in the pool at once, so the next one is chosen when a worker is free: the
    longest waiting task (by :func:`cost_hint`; a part's with its study's join added, as the
    join waits for it) first, a study's join as soon as it is ready
    (it renders the study's figures, and nothing else waits on it). The first tasks are
    submitted (:meth:`submit`) as soon as the pool exists, while this process may still run
    studies of its own; :meth:`run` then takes the answers and submits the rest.
    """

    def __init__(self, studies: Sequence[Callable], pooled: Sequence[int], paper_scale: bool):
        import queue

        self.studies, self.paper_scale = studies, paper_scale
        self.waiting = []  # (cost, key, callable)
        self.values = {}  # study index -> {part name: value}
        for i in pooled:
            names = study_parts(studies[i])
            if names:
                self.values[i] = {}
                join = cost_hint(studies[i].joined({})) or 0.0  # it follows the last part
                self.waiting += [((cost_hint(studies[i].part(n)) or 0.0) + join,
                                  ("part", i, n), studies[i].part(n)) for n in names]
            else:
                self.waiting.append((cost_hint(studies[i]) or 0.0, ("study", i), studies[i]))
        self.waiting.sort(key=lambda task: -task[0])  # stable: ties keep the registry's order
        self.done = queue.SimpleQueue()
        self.running = 0

    def submit(self, pool, workers: int) -> None:
        """Submit the longest waiting tasks while fewer than ``workers`` are in the pool."""
        while self.waiting and self.running < workers:
            _, key, call = self.waiting.pop(0)
            pool.apply_async(_run_task, ((key, call, self.paper_scale),),
                             callback=self.done.put, error_callback=self.done.put)
            self.running += 1

    def run(self, pool, workers: int) -> Iterator[tuple[int, StudyResult, dict[str, bytes]]]:
        """Yield ``(index, result, pngs)`` of each study as it finishes (module notes)."""
        studies, values = self.studies, self.values
        while self.waiting or self.running:
            self.submit(pool, workers)
            answer = self.done.get()
            self.running -= 1
            if isinstance(answer, BaseException):
                raise answer
            key, payload = answer
            if key[0] == "part":
                _, i, name = key
                values[i][name] = pickle.loads(payload)
                if len(values[i]) == len(study_parts(studies[i])):  # all back: the join next
                    joined = studies[i].joined(values.pop(i))
                    self.waiting.insert(0, (cost_hint(joined) or 0.0, ("study", i), joined))
                continue
            i = key[1]
            yield (i, *(_run_one(studies[i], self.paper_scale) if payload is None
                        else pickle.loads(payload)))
