"""Run the report's studies: one after another, or side by side in worker processes.

The studies of :data:`dprisk.validation.report.build.STUDIES` are independent: each seeds its
own generators from constants of its module (its ``seeds``) and reads nothing another study
computed, so the process a study runs in changes none of its numbers; the results come back in
the registry's order whatever order they finish in. With ``workers > 1``, a pool of that many
processes (started by a fork server that has imported only this module and the libraries of
:data:`PRELOAD`, so no state of the calling process is inherited;
:mod:`dprisk.validation.report.fork_server`, which ``dprisk reproduce`` starts first thing)
takes the studies longest
first (each study's cost hint, :func:`cost_hint`: seconds of CPU measured on one core, given
where the study registers itself, :mod:`dprisk.validation.registry`), which keeps the two
cores of a small machine busy until the end: the longest-processing-time rule, within 4/3 of
the best split. The fork server's imports take seconds on one core: meanwhile this process runs the
cheapest studies itself (:data:`LOCAL_START_SECONDS`), so the other core is not idle. An error
or an interrupt (Ctrl-C, SIGTERM) before the pool has started stops the fork server at once
(:func:`~dprisk.validation.report.fork_server.stop_fork_server`), in the middle of its
imports, which it would otherwise finish first: seconds before the pool's start could be
given up, and, after the forced exit of a stop signal, as an orphan process (the watchdog's
clean-up kills it and the workers).

Each study's figures are rendered to PNG in the process that made them (so rendering runs
side by side too), and its :class:`~dprisk.validation.paper.records.StudyResult` is returned
by pickling, each figure replaced by its caption and alt text
(:class:`~dprisk.validation.figures.captions.FigureText`: what the page reads of it).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import pickle
import threading
from collections.abc import Callable, Iterator, Sequence

from dprisk.runtime.collector import collector_paused, resume_collector_in_fork
from dprisk.runtime.heap_keep import keep_freed_memory
from dprisk.runtime.output_files import FORCED_EXIT_CLEANUPS
from dprisk.validation.figures.captions import figure_text
from dprisk.validation.figures.log_ticks import thin_log_minor_ticks
from dprisk.validation.figures.png import png_bytes
from dprisk.validation.figures.tick_copies import ticks_copied
from dprisk.validation.paper.records import StudyResult
from dprisk.validation.report.fork_server import (
    PRELOAD,
    available_cores,
    kill_pool_processes,
    server_preload,
    start_fork_server_without_stderr,
    stop_fork_server,
)

__all__ = ["FIGURE_DPI", "LOCAL_START_SECONDS", "PRELOAD", "STUDY_GC_THRESHOLDS",
           "available_cores", "collector_thresholds", "cost_hint", "render_figures",
           "run_studies", "start_worker", "stop_fork_server"]

#: Resolution of the report's PNG figures.
FIGURE_DPI = 110
#: The cyclic garbage collector's thresholds while studies run, in every process that runs them
#: (Python's defaults: 700, 10, 10). The studies make garbage in cycles by the ten thousand
#: (PyTensor's graphs, matplotlib's figures) among a heap of long-lived objects: with the
#: defaults, one process running every study made about 930 collections costing 2.3-2.5 s of
#: CPU, with these 14 costing 0.85-0.95 s (peak RSS about 830 -> 895 MB). Only when cyclic
#: garbage is reclaimed changes, never a number (the collector frees unreachable objects only).
STUDY_GC_THRESHOLDS = (50_000, 50, 1_000)
#: CPU seconds (by their cost hints, :func:`cost_hint`) of the cheapest studies that this
#: process runs itself while the fork server imports :data:`PRELOAD` (about 4 s here, on
#: the other core), instead of waiting for the pool's workers: those studies leave the pool,
#: whose last study ends the earlier. Only studies with a cost hint are taken, cheapest
#: first, while their sum stays within it. When they are done and the pool has still not
#: started, this process goes on with the cheapest study of the pool's (a whole study, hint
#: at most this) while the pool starts, rather than wait idle: the fork server's imports
#: take 4-6 s, this process's own imports and these studies 3.5-4.5 s (both vary with the
#: machine's load).
LOCAL_START_SECONDS = 3.0


def render_figures(result: StudyResult) -> dict[str, bytes]:
    """Each figure of ``result`` as PNG bytes (``FIGURE_DPI``, tight bounding box), by stem.

    Drawn once each (:func:`dprisk.validation.figures.png.png_bytes`), not three times as
    ``savefig(..., bbox_inches="tight")`` draws them, and with fewer minor ticks on log axes
    spanning many decades (:func:`dprisk.validation.figures.log_ticks.thin_log_minor_ticks`),
    with Python's cyclic garbage collector paused meanwhile
    (:func:`dprisk.runtime.collector.collector_paused`: its full
    collections walk the whole heap a study leaves, 0.5 s each).
    """
    pngs = {}
    with collector_paused():
        for stem, fig in result.figures.items():
            thin_log_minor_ticks(fig)
            pngs[stem] = png_bytes(fig, FIGURE_DPI)
    return pngs


def _run_one(study: Callable[..., StudyResult], paper_scale: bool):
    """The study's result and its figures' PNGs.

    The new ticks of the figures it builds are copies of one tick per axis
    (:func:`dprisk.validation.figures.tick_copies.ticks_copied`).
    """
    with ticks_copied():
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


@contextlib.contextmanager
def collector_thresholds(thresholds: tuple[int, int, int]) -> Iterator[None]:
    """Within the block, the cyclic garbage collector runs with ``thresholds``.

    ``gc.set_threshold(*thresholds)``; the thresholds before it are restored on leaving it.
    """
    before = gc.get_threshold()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def start_worker() -> None:
    """A pool worker's start: what it inherited frozen, then its collector's thresholds.

    ``gc.freeze()``, then :data:`STUDY_GC_THRESHOLDS` for the worker's life, and the collector
    running again (the fork server paused it for its imports,
    :mod:`dprisk.runtime.fork_server_start`):
    :func:`dprisk.runtime.collector.resume_collector_in_fork`. The fork server
    has imported :data:`PRELOAD` and the studies' modules: about 2e5 objects that a worker
    keeps for its whole life and never frees. A full collection scans every tracked object:
    0.25-0.3 s each in a worker, two or three per study that compiles PyMC models (PyTensor's
    graphs are many long-lived objects); frozen, a full collection scans only what the worker
    made itself. Measured in one process after the same imports, the full collections' CPU:
    two levels 0.87 -> 0.27 s, simulation-based calibration 0.55 -> 0.17 s. It also keeps the
    collections from writing to the inherited objects' pages (copy on write), as the ``gc``
    documentation recommends for forked workers. The results do not depend on it (the
    collector frees unreachable objects only).

    Its C heap then keeps the memory NumPy frees (:mod:`dprisk.runtime.heap_keep`: fewer
    fresh pages, each a page fault).
    """
    resume_collector_in_fork(STUDY_GC_THRESHOLDS)
    keep_freed_memory()


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
        server imports ``preload`` (then, while the pool has not started, the cheapest of
        the others, each one within it), and the others in a pool of that many processes.
        On an error or interrupt the workers and the fork server are stopped at once.
        Every process that runs studies collects cyclic garbage with
        :data:`STUDY_GC_THRESHOLDS` meanwhile (this one until the generator ends).
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
    with collector_thresholds(STUDY_GC_THRESHOLDS):  # here; the workers' by start_worker
        yield from _studies_run(studies, paper_scale, workers, preload)


def _studies_run(studies: Sequence[Callable[..., StudyResult]], paper_scale: bool,
                 workers: int, preload: Sequence[str]
                 ) -> Iterator[tuple[int, StudyResult, dict[str, bytes]]]:
    """:func:`run_studies`' body (its parameters and yields)."""
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
    context.set_forkserver_preload(server_preload(preload))
    start_fork_server_without_stderr()  # it imports ``preload`` now, in its own process
    tasks = _Tasks(studies, pooled, paper_scale)
    processes = min(workers, len(tasks.waiting))
    started: dict = {}

    def start_pool():  # in a thread: Pool() waits for the fork server's imports
        try:
            started["pool"] = context.Pool(processes=processes,
                                           initializer=start_worker)
            tasks.submit(started["pool"], processes)  # the longest tasks, at once
        except BaseException as exc:  # raised in the calling thread below
            started["error"] = exc

    starter = threading.Thread(target=start_pool, name="report-pool", daemon=True)
    cleanup = id(starter)
    FORCED_EXIT_CLEANUPS[cleanup] = kill_pool_processes  # a stop's watchdog ends the process
    starter.start()
    try:
        for i in local:  # meanwhile, the cheapest studies here
            yield (i, *_run_one(studies[i], paper_scale))
        while starter.is_alive():  # the pool is not ready yet: one more study here
            i = tasks.take_cheapest(LOCAL_START_SECONDS)
            if i is None:
                break
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


class _JoinOfPickledParts:
    """A split study's join whose parts' values are still pickled (as the workers sent them).

    Calling it unpickles them and calls ``study.joined(values)``, in the worker that runs the
    join: the calling process only passes the bytes on, so it neither imports the parts'
    modules (the SBC parts' classes import ``scipy.stats``: about 1.2 s of CPU) nor unpickles
    and pickles again their values (the SBC samplers' part is about 0.9 MB).
    """

    def __init__(self, study, pickled_values: dict[str, bytes]):
        self.study, self.pickled_values = study, pickled_values
        self.cost_hint = cost_hint(study.joined({}))

    def __call__(self, *, paper_scale: bool) -> StudyResult:
        values = {name: pickle.loads(data) for name, data in self.pickled_values.items()}
        return self.study.joined(values)(paper_scale=paper_scale)


class _Tasks:
    """The pool's tasks of :func:`run_studies`, handed to the workers as they are free.

    Tasks: each study, or each part of a study split into parts (:func:`study_parts`) and,
    once all its parts are back, its join (``study.joined(values)``). At most as many tasks
    as workers are in the pool at once, so the next one is chosen when a worker is free: the
    longest waiting task (by :func:`cost_hint`; a part's with its study's join added, as the
    join waits for it) first, a study's join as soon as it is ready
    (it renders the study's figures, and nothing else waits on it). The first tasks are
    submitted (:meth:`submit`) as soon as the pool exists, while this process may still run
    studies of its own; :meth:`run` then takes the answers and submits the rest, the freed
    worker's next task before the answer is unpickled and handed on (the worker does not
    wait for that), except after a study's last part (its join may be the next task).
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
        self.lock = threading.Lock()  # the pool's starter submits while this process takes

    def submit(self, pool, workers: int) -> None:
        """Submit the longest waiting tasks while fewer than ``workers`` are in the pool."""
        with self.lock:
            while self.waiting and self.running < workers:
                _, key, call = self.waiting.pop(0)
                pool.apply_async(_run_task, ((key, call, self.paper_scale),),
                                 callback=self.done.put, error_callback=self.done.put)
                self.running += 1

    def take_cheapest(self, limit: float) -> int | None:
        """Take the cheapest waiting study out of the pool's tasks, to run it here.

        Only a whole study (not a part) whose cost hint is at most ``limit``; its index in
        ``studies``, or None when there is none.
        """
        with self.lock:
            for k in reversed(range(len(self.waiting))):  # cheapest first (sorted longest first)
                _, key, call = self.waiting[k]
                cost = cost_hint(call)
                if key[0] == "study" and cost is not None and cost <= limit:
                    del self.waiting[k]
                    return key[1]
        return None

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
                last = len(values[i]) + 1 == len(study_parts(studies[i]))
                if not last:  # the freed worker's next task first, then this value
                    self.submit(pool, workers)
                values[i][name] = payload  # kept pickled: the worker that joins unpickles it
                if last:  # all back: the join next
                    joined = _JoinOfPickledParts(studies[i], values.pop(i))
                    self.waiting.insert(0, (cost_hint(joined) or 0.0, ("study", i), joined))
                continue
            self.submit(pool, workers)  # the freed worker's next task first, then this result
            i = key[1]
            yield (i, *(_run_one(studies[i], self.paper_scale) if payload is None
                        else pickle.loads(payload)))
