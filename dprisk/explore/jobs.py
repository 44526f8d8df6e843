"""The explorer's "check by sampling": exact Gibbs in a killable worker process, with progress.

A :class:`SamplingJob` runs the exact Gibbs sampler
(:func:`dprisk.inference.two_level.gibbs.gibbs_sample`) for one two-level release in a
*worker process* (:mod:`multiprocessing`, forked from a ``forkserver`` that has imported
NumPy, the sampler, ArviZ and Matplotlib once), watched by a daemon thread of the server:

- the page's event loop keeps serving, and the sampler's memory is the worker's, returned to
  the system when it ends; ``progress`` (0 to 1) is the share of chains done;
- :meth:`SamplingJob.cancel` kills the worker at once (``SIGKILL``), whatever it is doing
  (inside a chain, between draws, or drawing the diagnostics): the job is gone within
  :data:`CANCEL_SECONDS` (``status == "cancelled"``, no result). The hand-written sampler
  cannot stop inside a chain by itself; a process can always be stopped;
- at most :func:`set_max_sampling` jobs run at once, server-wide (``dprisk explore
  --max-jobs``); more wait (``status == "waiting"``) and can be cancelled while they wait;
- the job's temporary folder (``dprisk-explore-*``, its plots) is removed when it ends,
  however it ends -- also when the server's process ends first (its worker is killed, then
  the folder removed: :func:`atexit` and the stop watchdog's forced exit).

Chain ``c`` is seeded with the ``c``-th child of ``np.random.SeedSequence(random_seed)``, so
a seed reproduces the whole run. When the chains are done the worker builds an ArviZ
``DataTree`` (:func:`dprisk.inference.two_level.gibbs.to_datatree`), its ``az.summary``
table and the convergence report with trace and rank plots
(:func:`dprisk.validation.crosschecks.diagnostics.convergence_report`), and sends back the
table, the report and the plots' PNG bytes (the draws stay in the worker). Nothing here
imports Panel.

As with every ``forkserver`` or ``spawn`` worker, a worker imports the program's main module
(under another name): a script that calls :func:`dprisk.explore.app.serve` must do so under
``if __name__ == "__main__":`` (``dprisk explore``, ``python -m``, notebooks and pytest do),
or each job fails with one message.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import numpy as np

from dprisk.inference.mcmc.run_options import draws_memory
from dprisk.runtime import memory_limit, work_limit
from dprisk.runtime.collector import resume_collector_in_fork
from dprisk.runtime.memory_limit import check_memory
from dprisk.runtime.output_files import FORCED_EXIT_CLEANUPS
from dprisk.runtime.work_limit import GIBBS_DRAW_STEPS, check_work

__all__ = ["CANCEL_SECONDS", "JOB_BYTES_PER_DRAW", "JOB_DIAGNOSTIC_STEPS", "SamplingJob",
           "error_line",
           "import_diagnostics",
           "set_max_sampling", "start_workers"]

#: Bytes a job holds per draw of one chain, at its peak: the command line's estimate of a
#: two-level Gibbs posterior with its diagnostics and plots
#: (:func:`dprisk.inference.mcmc.run_options.draws_memory`, 160 B), the job's same stages.
#: Measured 2026-11-30 (peak resident growth of a worker's sampling and diagnostics, after a
#: warm-up run): 139-145 B a draw at 2 x 250,000, 2 x 1,000,000 and 8 x 250,000 draws, 2.2
#: times the 64 B assumed before.
JOB_BYTES_PER_DRAW = draws_memory(2, 1, 1)
#: Steps of a job's diagnostics per recorded draw of one chain (its ArviZ ``DataTree``, the
#: ``az.summary`` table and the convergence report with its trace and rank plots), on top of
#: the sampler's ``GIBBS_DRAW_STEPS`` per sweep: measured 2026-12-01 at 6.1-7.0 us of CPU a
#: draw (1360-1560 steps) for 2 x 200,000 to 2 x 1,000,000 draws, against 0.05-0.4 us for
#: the sampling itself; rounded up, so the estimate errs long.
JOB_DIAGNOSTIC_STEPS = 2000
#: A cancelled job's worker is gone within this many seconds (it is killed, then reaped).
CANCEL_SECONDS = 2.0
#: Seconds between the watching thread's looks at the worker (and at a cancel while waiting).
WATCH_SECONDS = 0.05
#: The sampler's modules: a worker forked with these imported starts drawing at once. First the
#: server's start (:mod:`dprisk.runtime.fork_server_start`: its garbage collector paused for
#: its imports, ArviZ's missing-module placeholders made from one frame); each worker runs its
#: collector again (:func:`dprisk.runtime.collector.resume_collector_in_fork`).
SAMPLER_PRELOAD = ["dprisk.runtime.fork_server_start", "numpy", "dprisk.explore.jobs",
                   "dprisk.inference.two_level.gibbs"]
#: What the forkserver imports once (read when it starts), so that each worker starts in
#: milliseconds: the sampler and the diagnostics (ArviZ alone takes seconds to import).
PRELOAD = [*SAMPLER_PRELOAD, "matplotlib", "arviz", "dprisk.validation.crosschecks.diagnostics"]

#: The environment variables of the limits a job is sized at: their values when the job was
#: made are its worker's (the forkserver's environment is the one it started with).
_LIMIT_VARIABLES = (memory_limit.LIMIT_ENV, memory_limit.OLD_LIMIT_ENV, work_limit.LIMIT_ENV,
                    work_limit.OLD_LIMIT_ENV)

_SLOTS = threading.BoundedSemaphore(os.cpu_count() or 1)
#: Jobs whose temporary folder exists, ended at the process's exit (:func:`_abandon_live_jobs`).
_LIVE: set = set()
_LIVE_LOCK = threading.Lock()


def _abandon_live_jobs() -> None:
    """Kill every live job's worker and remove its folder (the process is ending)."""
    with _LIVE_LOCK:
        jobs = list(_LIVE)
    for job in jobs:
        job.abandon()


atexit.register(_abandon_live_jobs)
_CONTEXT = None
_CONTEXT_LOCK = threading.Lock()
#: Each client address's turn, ``{client: [threading.Lock, jobs holding or awaiting it]}``.
_CLIENT_TURNS: dict = {}
_CLIENT_TURNS_LOCK = threading.Lock()


def _client_turn(client: str | None):
    """The lock of ``client``'s turn (None without a client), counted until it is done."""
    if client is None:
        return None
    with _CLIENT_TURNS_LOCK:
        entry = _CLIENT_TURNS.setdefault(client, [threading.Lock(), 0])
        entry[1] += 1
        return entry[0]


def _client_turn_done(client: str | None) -> None:
    """A job of ``client`` ended: its entry goes with the client's last job."""
    if client is None:
        return
    with _CLIENT_TURNS_LOCK:
        entry = _CLIENT_TURNS[client]
        entry[1] -= 1
        if entry[1] == 0:
            del _CLIENT_TURNS[client]


def set_max_sampling(n: int | None = None) -> None:
    """Run at most ``n`` sampling workers at once, server-wide (default: the core count)."""
    global _SLOTS
    _SLOTS = threading.BoundedSemaphore(n or os.cpu_count() or 1)


def _context():
    """The multiprocessing context of the workers: ``forkserver`` (``spawn`` without it).

    Never plain ``fork``: the server has threads (Tornado, the view pool), and a fork of a
    threaded process may inherit a lock held by another thread.
    """
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            methods = multiprocessing.get_all_start_methods()
            _CONTEXT = multiprocessing.get_context(
                "forkserver" if "forkserver" in methods else "spawn")
            if _CONTEXT.get_start_method() == "forkserver":
                _CONTEXT.set_forkserver_preload(list(PRELOAD))
        return _CONTEXT


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def error_line(err: BaseException) -> str:
    """``err`` as the page shows it: one line, its type and message, no memory addresses.

    (``<function f at 0x7f...>`` would tell a visitor where the server's objects live.)
    """
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return _ADDRESS.sub("", text)


def _nothing() -> None:
    """A worker that does nothing (:func:`start_workers`)."""
    resume_collector_in_fork()


def start_workers() -> None:
    """Start the forkserver now (it imports :data:`PRELOAD`: seconds, once).

    ``dprisk explore`` calls this in a background thread at start, so the first sampling
    check does not wait for ArviZ's import.
    """
    worker = _context().Process(target=_nothing, daemon=True)
    worker.start()
    worker.join()


def import_diagnostics():
    """``(arviz, convergence_report)``: what a job diagnoses its draws with."""
    import arviz

    from dprisk.validation.crosschecks.diagnostics import convergence_report

    return arviz, convergence_report


def _work(conn, release, params: dict, draws: int, chains: int, tune: int, random_seed,
          plot_dir: str, limits: dict) -> None:
    """The worker: sample, diagnose, send ``("progress", x)`` and ``("done", result)``.

    ``limits`` are the limit variables as the job was sized (:data:`_LIMIT_VARIABLES`, None:
    unset): the sampler checks the draws again under them, not under the environment the
    forkserver started with.
    """
    resume_collector_in_fork()  # the server imported with it paused
    for name, value in limits.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        prior = params.get("prior")
        if hasattr(prior, "load"):  # a PriorChoice: read again here, under the same policy
            params = {**params, "prior": prior.load()}
        conn.send(("done", _sample(conn, release, params, draws, chains, tune, random_seed,
                                   Path(plot_dir))))
    except Exception as err:  # shown in the page; the server keeps serving
        conn.send(("failed", error_line(err)))
    finally:
        conn.close()


def _sample(conn, release, params, draws, chains, tune, random_seed, plot_dir) -> dict:
    import matplotlib

    from dprisk.inference.two_level.gibbs import GibbsDraws, gibbs_sample, to_datatree

    matplotlib.use("Agg")
    seeds = np.random.SeedSequence(random_seed).spawn(chains)
    x1, x2 = [], []
    for chain, seed in enumerate(seeds):
        one = gibbs_sample(*release, draws=draws, chains=1, tune=tune,
                           random_seed=np.random.default_rng(seed), **params)
        x1.append(one.x1[0])
        x2.append(one.x2[0])
        conn.send(("progress", 0.9 * (chain + 1) / chains))
    attrs = {k: (str(v) if k == "prior" else v) for k, v in params.items()}
    idata = to_datatree(GibbsDraws(np.stack(x1), np.stack(x2)), attrs=attrs)
    az, convergence_report = import_diagnostics()
    summary = az.summary(idata, var_names=["X1", "X2"], round_to="none")
    report = convergence_report(idata, known=params.get("known", 0), out_dir=plot_dir)
    figures = {name: Path(path).read_bytes() for name, path in report.figures.items()}
    return {"summary": summary, "report": report, "figures": figures}


class SamplingJob:
    """Gibbs draws for one release, run in a worker process.

    Parameters
    ----------
    release : tuple of int
        ``(x1_star, x2_star, y1_star)``.
    params : dict
        ``rho1, rho2, d, p, known, prior`` as for
        :func:`dprisk.inference.two_level.exact.exact_posterior`; the prior may be a
        :class:`dprisk.explore.inputs.PriorChoice`, read again in the worker (a model file's
        prior object cannot be sent to another process).
    draws : int (>= 1)
        Draws per chain (after ``tune`` discarded sweeps).
    chains : int (>= 2)
        Number of chains (R-hat needs two).
    tune : int (>= 0)
    random_seed : int or None
    ticket : int
        The view's request number when the job started (see
        :class:`dprisk.explore.inputs.Sequencer`).
    client : str, optional
        The client address of the page that started it: a client address runs one job at a
        time (its others wait, as for a worker), so one visitor's pages hold at most one of
        the ``--max-jobs`` workers.

    Raises
    ------
    ValueError
        Before anything runs, if chains x draws (memory) or the work, chains x ((tune +
        draws) x ``GIBBS_DRAW_STEPS`` + draws x :data:`JOB_DIAGNOSTIC_STEPS`), exceed the
        limits (:mod:`dprisk.runtime.memory_limit`, :mod:`dprisk.runtime.work_limit`).
    """

    def __init__(self, release, params: dict, *, draws: int = 5000, chains: int = 4,
                 tune: int = 500, random_seed=None, ticket: int = 0,
                 client: str | None = None) -> None:
        if chains < 2:
            raise ValueError(f"chains must be an integer >= 2, got {chains}")
        if draws < 1:
            raise ValueError(f"draws must be an integer >= 1, got {draws}")
        # sized as a whole before it starts: chains x draws x variables, and the work; the
        # worker checks again under the same limits
        self._limits = {name: os.environ.get(name) for name in _LIMIT_VARIABLES}
        check_memory(float(JOB_BYTES_PER_DRAW) * chains * draws, parameter="draws, chains",
                     what=f"{chains} chains x {draws} draws of X1 and X2 with diagnostics")
        check_work(float(chains) * ((tune + draws) * GIBBS_DRAW_STEPS
                                    + float(draws) * JOB_DIAGNOSTIC_STEPS),
                   parameter="draws, chains",
                   what=f"{chains} chains x {tune + draws} sweeps with diagnostics")
        self.release = tuple(int(v) for v in release)
        self.params = dict(params)
        self.draws, self.chains, self.tune = int(draws), int(chains), int(tune)
        self.random_seed = random_seed
        self.ticket = ticket
        self.client = client
        self.progress = 0.0
        self.status = "pending"  # pending, waiting, running, done, cancelled, failed
        self.error: str | None = None
        self.summary = None
        self.report = None
        self.figures: dict[str, bytes] = {}  # the report's PNGs, read before plot_dir goes
        self.plot_dir = Path(tempfile.mkdtemp(prefix="dprisk-explore-"))
        with _LIVE_LOCK:
            _LIVE.add(self)
        FORCED_EXIT_CLEANUPS[id(self)] = self.abandon
        self.process = None  # the worker, once started
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="dprisk-sampling", daemon=True)

    def start(self) -> SamplingJob:
        """Start the watching thread (it starts the worker when a slot is free); ``self``."""
        self.status = "waiting"
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop the job now: a running worker is killed, a waiting job never starts.

        Never waits (it is called from the event loop): the watching thread reaps the worker.
        """
        with self._lock:
            self._cancel.set()
            if self.process is not None and self.process.is_alive():
                self.process.kill()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the job to end (tests and the command line)."""
        self._thread.join(timeout)

    @property
    def finished(self) -> bool:
        """True once the job is done, cancelled or failed."""
        return self.status in ("done", "cancelled", "failed")

    def _run(self) -> None:
        # the client's turn first (one running job a client address), then a worker's slot
        turns = [lock for lock in (_client_turn(self.client), _SLOTS) if lock is not None]
        held = []
        try:
            for lock in turns:
                while not lock.acquire(timeout=WATCH_SECONDS):
                    if self._cancel.is_set():
                        self.status = "cancelled"
                        return
                held.append(lock)
            self._watch()
        except Exception as err:  # the worker could not start: shown in the page
            self.error, self.status = error_line(err), "failed"
        finally:  # the temporary folder goes when the job ends, however it ends
            for lock in reversed(held):
                lock.release()
            _client_turn_done(self.client)
            self._remove_folder()

    def abandon(self) -> None:
        """End the job as its process ends: kill its worker, then remove its folder.

        Called at exit for every live job (the watching thread, a daemon, would not get to
        its own clean-up); a killed worker writes nothing more into the folder.
        """
        try:
            self.cancel()
            process = self.process
            if process is not None and process.pid is not None:  # started
                process.join(CANCEL_SECONDS)
        finally:
            self._remove_folder()

    def _remove_folder(self) -> None:
        shutil.rmtree(self.plot_dir, ignore_errors=True)
        FORCED_EXIT_CLEANUPS.pop(id(self), None)
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def _watch(self) -> None:
        context = _context()
        receive, send = context.Pipe(duplex=False)
        worker = context.Process(
            target=_work, name="dprisk-sampling", daemon=True,
            args=(send, self.release, self.params, self.draws, self.chains, self.tune,
                  self.random_seed, str(self.plot_dir), self._limits))
        with self._lock:
            if self._cancel.is_set():
                self.status = "cancelled"
                return
            self.process = worker
        # not under the lock: the first start waits for the forkserver's imports, and
        # cancel() is called from the event loop
        worker.start()
        with self._lock:
            if self._cancel.is_set():  # cancelled while it started
                worker.kill()
            else:
                self.status = "running"
        send.close()
        outcome = None
        try:
            while outcome is None:
                try:
                    if not receive.poll(WATCH_SECONDS):
                        if not self.process.is_alive() and not receive.poll(0):
                            break
                        continue
                    kind, value = receive.recv()
                except (EOFError, OSError):  # the worker ended (killed, or crashed)
                    break
                if kind == "progress":
                    self.progress = value
                else:
                    outcome = (kind, value)
        finally:
            receive.close()
            self.process.join(CANCEL_SECONDS)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()
        self._finish(outcome)

    def _finish(self, outcome) -> None:
        if self._cancel.is_set():
            self.status = "cancelled"
        elif outcome is None:
            self.error = (f"the sampling worker ended without a result (exit code "
                          f"{self.process.exitcode})")
            self.status = "failed"
        elif outcome[0] == "failed":
            self.error, self.status = outcome[1], "failed"
        else:
            self.summary = outcome[1]["summary"]
            self.report = outcome[1]["report"]
            self.figures = outcome[1]["figures"]
            self.progress = 1.0
            self.status = "done"
