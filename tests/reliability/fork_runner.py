"""A fork server for command-line cases under resource limits (shared by the sizing tables).

Run as a script it imports :func:`dprisk.cli.main.main` once (and the modules named on its
command line: :data:`PRELOAD` by default), then reads one JSON request
per line on stdin -- ``{"argv": [...], "cwd": DIR, "env": {NAME: VALUE}, "address_space":
BYTES, "timeout": SECONDS}`` -- and for each forks a child that sets the environment, caps its
address space (``RLIMIT_AS``), runs ``main(argv)`` with stdout and stderr sent to files, and
ends with its exit status. It answers one JSON line per request: the exit status (``None``
when the child was killed at the timeout, ``-N`` for a signal), stdout, stderr, the child's CPU
seconds (user + system, from ``wait4``: contention on a shared machine does not count) and its
peak resident memory in bytes.

A case costs a fork (milliseconds) instead of a new interpreter and its imports (about a
second); the server itself is a fresh interpreter with one BLAS thread, so its address space
(about 0.6 GiB with :data:`PRELOAD`) leaves the child room below the cap. The libraries the
subcommands import lazily (SciPy, ``dp-accounting``: 0.1-2.3 s of CPU per child, more than
most cases' own work) are imported once by the server in :data:`PRELOAD`: a child's CPU is
then its command's own work, and its address space includes theirs (a stricter cap, not a
looser one). :class:`ForkServer` is the test side.
"""

from __future__ import annotations

import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from dprisk.runtime.worker_threads import WORKER_ENVIRON

__all__ = ["COMMAND_MODULES", "PRELOAD", "ForkServer", "Outcome", "run_program"]

#: The modules (and with them about 75 more of ``dprisk``, none of another library) that the
#: subcommands import only when they run: each child of the sizing tables imported 30-50 of
#: them again, 0.02-0.04 s of its CPU (the tables' 66 default rows, forked as the server
#: forks them, two rounds: 4.96 and 4.21 -> 2.77 and 2.56 s of the children's CPU, measured
#: 1 Dec). Each is a module that one of those rows imports and that none of the others here
#: imports; no library is imported with them (the sizing rows import none: no numba here).
COMMAND_MODULES = ("dprisk.inference.nested.posterior", "dprisk.inference.privacy.worst_case",
                   "dprisk.inference.studies.monte_carlo", "dprisk.inference.attribute.strategy",
                   "dprisk.inference.sweeps.sweep", "dprisk.inference.product.exact",
                   "dprisk.inference.nested.unique_levels",
                   "dprisk.inference.privacy.decision_summary",
                   "dprisk.inference.privacy.budget_levels",
                   "dprisk.inference.privacy.budget_sums", "dprisk.inference.two_level.sampling",
                   "dprisk.cli.levels", "dprisk.inference.single_level.closed_form",
                   "dprisk.runtime.new_outputs")
#: Modules the server imports before its first fork (each would otherwise be imported again
#: by every child that uses it): the subcommands, the libraries they import lazily and the
#: computation modules the subcommands import when they run (:data:`COMMAND_MODULES`).
PRELOAD = ("numpy", "scipy.special", "scipy.optimize", "scipy.stats", "dp_accounting",
           "dp_accounting.rdp", "dprisk.cli.commands.attribute", "dprisk.cli.commands.budget",
           "dprisk.cli.commands.census", "dprisk.cli.commands.epsilon",
           "dprisk.cli.commands.marginal", "dprisk.cli.commands.posterior",
           "dprisk.cli.commands.product", "dprisk.cli.commands.summary",
           "dprisk.cli.commands.sweep", *COMMAND_MODULES)


class Outcome(dict):
    """One case's answer: ``status``, ``stdout``, ``stderr``, ``cpu`` (s), ``maxrss`` (bytes)."""

    __getattr__ = dict.__getitem__


def call_with_short_progress_delay(*argv: str) -> int:
    """``dprisk argv`` as its console script runs it, with
    :data:`dprisk.cli.common.PROGRESS_DELAY` (the seconds before a step-less computation shows
    its elapsed-time line) at 1 s instead of 10 s."""
    from dprisk.cli import common
    from dprisk.cli.main import main

    common.PROGRESS_DELAY = 1.0
    sys.argv = ["dprisk", *argv]
    return main()


def run_each(cases: list[list[str]]) -> int:
    """``main(argv)`` for each command line in turn, in this process; after each, a line
    ``end of case: status N`` on stdout and ``end of case`` on stderr."""
    from dprisk.cli.main import main

    for argv in cases:
        status = main(list(argv))
        print(f"end of case: status {status}", flush=True)
        print("end of case", file=sys.stderr, flush=True)
    return 0


def run_program(source: str, *argv: str) -> int:
    """``python -c source argv...`` in this process: ``source`` run as ``__main__`` with
    ``sys.argv = ["-c", *argv]``; 0 when it returns."""
    sys.argv = ["-c", *argv]
    exec(compile(source, "<string>", "exec"), {"__name__": "__main__"})
    return 0


def _child(request: dict, out_path: str, err_path: str) -> None:
    """In the forked child: limits, environment, redirected output, then the command.

    The command: ``main(argv)`` (``argv``); with ``own``, ``main()`` on ``sys.argv = ["dprisk",
    *argv]`` as the console script runs it (stop signals handled); or ``call``: ``[module,
    function, args]`` (``sys_path`` prepended to ``sys.path``), its return value the status.
    """
    status = 1
    try:
        os.chdir(request["cwd"])
        os.environ.update(request.get("env", {}))
        cap = request.get("address_space")
        if cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        stdin = os.open(os.devnull, os.O_RDONLY)  # not the server's requests
        out = os.open(out_path, os.O_WRONLY | os.O_TRUNC)
        tty = request.get("stderr_tty")
        err = os.open(tty, os.O_WRONLY | os.O_NOCTTY) if tty else \
            os.open(err_path, os.O_WRONLY | os.O_TRUNC)
        for fd, target in ((stdin, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        try:
            if request.get("call"):
                import importlib

                module, function, args = request["call"]
                sys.path[:0] = request.get("sys_path", [])
                status = getattr(importlib.import_module(module), function)(*args) or 0
            else:
                from dprisk.cli.main import main

                if request.get("own"):
                    sys.argv = ["dprisk", *request["argv"]]
                    status = main()
                else:
                    status = main(list(request["argv"]))
        except SystemExit as exc:  # argparse's errors
            status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # reported on stderr, exit 1 (a test failure)
        import traceback

        traceback.print_exc()
        status = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # e.g. a full disk: the status says it
            pass
        os._exit(status if isinstance(status, int) else 1)


#: pid -> (folder of its output files, request) of each started child not yet waited for.
_STARTED: dict[int, tuple[str, dict]] = {}


def _start(request: dict) -> dict:
    """Fork a child running ``request``; return ``{"pid": PID}`` at once."""
    folder = tempfile.mkdtemp(prefix="fork-runner-")
    out_path = request.get("stdout_path") or str(Path(folder, "out"))
    err_path = str(Path(folder, "err"))
    Path(out_path).touch()
    Path(err_path).touch()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        _child(request, out_path, err_path)
    _STARTED[pid] = (folder, request)
    return {"pid": pid}


def _ended_within(pid: int, timeout: float) -> bool:
    """Whether the child ``pid`` (not yet waited for) ends within ``timeout`` s: a blocking
    wait on its pidfd, not a poll (a 5 ms poll of ``wait4`` cost the server 0.016-0.022 s of
    CPU per second waited, measured 1 Dec; its serving, imports aside, was about 0.6 s).
    Where the kernel has no pidfd (Linux before 5.3, some sandboxes), that 5 ms poll of
    whether the child is a zombie (``waitid`` with ``WNOWAIT``: it is left to be reaped)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        deadline = time.monotonic() + max(timeout, 0.0)
        while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True
    try:
        return bool(select.select([pidfd], [], [], max(timeout, 0.0))[0])
    finally:
        os.close(pidfd)


def _wait(pid: int, timeout: float) -> dict:
    """Wait for a started child (SIGKILL after ``timeout`` s: status ``None``); its outcome."""
    folder, request = _STARTED.pop(pid)
    killed = not _ended_within(pid, timeout)
    if killed:
        os.kill(pid, signal.SIGKILL)
    _, wait_status, usage = os.wait4(pid, 0)
    status = None if killed else os.waitstatus_to_exitcode(wait_status)
    stdout = Path(request.get("stdout_path") or Path(folder, "out"))
    answer = {"status": status, "stdout": stdout.read_text("utf-8", "replace"),
              "stderr": "" if request.get("stderr_tty") else
              Path(folder, "err").read_text("utf-8", "replace"),
              "cpu": usage.ru_utime + usage.ru_stime, "maxrss": usage.ru_maxrss * 1024}
    shutil.rmtree(folder, ignore_errors=True)
    return answer


def _run(request: dict) -> dict:
    return _wait(_start(request)["pid"], float(request.get("timeout", 60)))


def _numba_target_ready() -> None:
    """Register numba's CPU target's typing and lowering extensions now, once for all forks
    (:mod:`dprisk.runtime.numba_target`)."""
    import dprisk.runtime.numba_target  # noqa: F401 - registers on import


def _freeze_inherited_heap() -> None:
    """Move every object the server holds now (the preloaded libraries) out of the collector's
    reach (``gc.freeze``), once, before the first fork.

    A fork inherits the server's heap, and each full collection in a child walked all of it
    again (hundreds of thousands of objects with PyMC, ArviZ and Dask preloaded): a forked
    ``posterior --method pymc`` of both PYMC_CASES (``test_extremes_io``) made two full
    collections, 0.72-0.76 s of its 3.6-4.0 s of CPU; with the heap frozen it makes one of
    0.11 s (measured 29 Nov with ``gc.callbacks`` in the child). The frozen objects are the
    modules each child uses until it exits; the report's pool workers do the same
    (``dprisk.validation.report.runner``). Garbage is collected first, so none of it is kept.
    """
    import gc

    gc.collect()
    gc.freeze()


def _ready(preload) -> None:
    """Import ``preload`` (numba's target registered when it is there), then freeze the heap.

    The imports run with the garbage collector paused and ``lazy_loader``'s placeholders made
    from one frame (:mod:`dprisk.runtime.collector`, :mod:`dprisk.runtime.import_costs`), as
    in the report's fork server (both servers' imports in one process, three rounds: 4.8-5.7
    -> 4.0-4.9 s of CPU); SciPy's and matplotlib's docstrings are left as written
    (``scipy_skips_capability_notes``, ``matplotlib_skips_property_docs``), as in the test
    processes and the report's fork server: no child shows a library's help.

    With numba preloaded, its on-disk cache is pointed at the user's cache directory first
    (:func:`dprisk.runtime.cache.use_numba_cache`, as the commands do before their kernels
    are decorated): a preloaded kernel module otherwise caches its machine code beside its
    source, in the package's link tree (``build/``), which a fresh clone has empty.
    """
    import importlib

    from dprisk.runtime.collector import collector_paused
    from dprisk.runtime.import_costs import (
        lazy_loader_reads_one_frame,
        matplotlib_skips_property_docs,
        scipy_skips_capability_notes,
    )

    scipy_skips_capability_notes()  # before SciPy's modules: no child reads their docstrings
    if any(name.startswith("matplotlib") for name in preload):  # not imported for the sizing
        matplotlib_skips_property_docs()  # tables: their address space stays as it was
    if "numba" in preload:
        from dprisk.runtime.cache import use_numba_cache

        use_numba_cache()
    lazy_loader_reads_one_frame()  # as the test processes and the report's fork server
    with collector_paused():
        for name in preload:
            importlib.import_module(name)
    if "numba" in preload:  # the process server's, not the sizing tables' (no numba there)
        _numba_target_ready()
    _freeze_inherited_heap()


#: pid -> (requests FIFO, answers FIFO) of each server forked by this one (:func:`_fork_server`).
_SERVERS: dict[int, tuple[str, str]] = {}


def _fork_server(request: dict, answers) -> dict:
    """Fork a server of its own that imports ``preload`` more and then serves the requests
    of the FIFO ``requests``, answering on the FIFO ``answers``; return ``{"pid": PID}``.

    The new server inherits what this one imported (one import of the shared part for both),
    none of its requests or children: it starts with no child and its own two FIFOs.
    """
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            _STARTED.clear()
            _SERVERS.clear()
            os.close(answers.fileno())  # this server's answers (unflushed: nothing pending)
            devnull = os.open(os.devnull, os.O_RDWR)  # not this server's requests and answers
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            requests = open(request["requests"], encoding="utf-8")
            answers = open(request["answers"], "w", encoding="utf-8")
            _ready(request["preload"])
            _serve(requests, answers)
        except BaseException:  # on stderr; the test side reads the end of its answers
            import traceback

            traceback.print_exc()
        finally:
            os._exit(1)  # _serve ends the process itself
    _SERVERS[pid] = (request["requests"], request["answers"])
    return {"pid": pid}


def _reap_server(pid: int, timeout: float) -> dict:
    """Wait for a forked server to end (SIGKILL after ``timeout`` s); its exit status."""
    _SERVERS.pop(pid)
    if not _ended_within(pid, timeout):
        os.kill(pid, signal.SIGKILL)
    return {"status": os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])}


def serve(preload=PRELOAD) -> None:
    """The server: import ``dprisk.cli.main`` and ``preload``, then serve the requests of
    stdin, answering on stdout (:func:`_serve`)."""
    import dprisk.cli.main  # noqa: F401 - imported once, inherited by every child

    _ready(preload)
    _serve(sys.stdin, os.fdopen(os.dup(1), "w"))


def _serve(requests, answers) -> None:
    """The server loop: one request per line of ``requests``, one answer per line of
    ``answers``.

    A request with ``start`` (the request itself) forks and answers ``{"pid": PID}``; one
    with ``poll`` (a pid) answers ``{"running": BOOL}``, one with ``wait`` (a pid) that
    child's outcome; one with ``server`` forks a server of its own (:func:`_fork_server`),
    one with ``reap`` (its pid) waits for that server's end; any other runs a child to its end.
    Children not waited for are killed when the requests end.
    """
    # xarray's import (pandas, pyarrow) starts jemalloc's background thread, a native thread
    # that jemalloc itself makes safe across fork (its pthread_atfork handlers); no Python
    # thread runs here, so Python's warning about forking a multi-threaded process is noise.
    warnings.filterwarnings("ignore", message=r"This process \(pid=\d+\) is multi-threaded",
                            category=DeprecationWarning)
    print(json.dumps({"ready": True}), file=answers, flush=True)
    for line in requests:
        if line.strip():
            request = json.loads(line)
            if "start" in request:
                answer = _start(request["start"])
            elif "poll" in request:  # still running (a zombie not yet waited for is not)
                found = os.waitid(os.P_PID, int(request["poll"]),
                                  os.WEXITED | os.WNOHANG | os.WNOWAIT)
                answer = {"running": found is None}
            elif "wait" in request:
                answer = _wait(int(request["wait"]), float(request.get("timeout", 60)))
            elif "server" in request:
                answer = _fork_server(request["server"], answers)
            elif "reap" in request:
                answer = _reap_server(int(request["reap"]), float(request.get("timeout", 30)))
            else:
                answer = _run(request)
            print(json.dumps(answer), file=answers, flush=True)
    for pid in list(_STARTED):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _wait(pid, 60)
    for pid in list(_SERVERS):  # its requests ended with ours (the test process is gone)
        _reap_server(pid, 30)
    answers.close()
    sys.stdout.flush()
    sys.stderr.flush()
    # no interpreter shutdown: with PyMC, Dask and distributed loaded it took seconds of
    # module teardown and atexit handlers for nothing (the test process waits for this exit)
    os._exit(0)


class ForkServer:
    """The test side: start the server once, :meth:`run` a case, :meth:`close` at the end.

    :meth:`fork` gives a second server forked from this one (its imports inherited).
    """

    def __init__(self, preload=PRELOAD):
        env = {**os.environ, **WORKER_ENVIRON}
        self.process = subprocess.Popen([sys.executable, __file__, *preload], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        self._requests, self._answers = self.process.stdin, self.process.stdout
        self._parent = self._pid = self._folder = None
        assert json.loads(self._answers.readline()) == {"ready": True}

    def fork(self, preload) -> ForkServer:
        """A server forked from this one that imports ``preload`` more (what this one imported
        is imported once for both); it serves until its :meth:`close`, before this one's.
        Its children's CPU comes to this process when this server is closed."""
        server = object.__new__(ForkServer)
        server.process = None
        server._parent, server._folder = self, tempfile.mkdtemp(prefix="fork-server-")
        fifos = {name: str(Path(server._folder, name)) for name in ("requests", "answers")}
        for path in fifos.values():
            os.mkfifo(path)
        server._pid = int(self._ask({"server": {"preload": list(preload), **fifos}})["pid"])
        # both sides open the requests FIFO first: neither waits on the other's second open
        server._requests = open(fifos["requests"], "w", encoding="utf-8")
        server._answers = open(fifos["answers"], encoding="utf-8")
        assert json.loads(server._answers.readline()) == {"ready": True}
        return server

    def _ask(self, request: dict) -> dict:
        self._requests.write(json.dumps(request) + "\n")
        self._requests.flush()
        return json.loads(self._answers.readline())

    @staticmethod
    def _request(argv, cwd, env, address_space, **more) -> dict:
        return {"argv": list(argv or []), "cwd": str(cwd), "env": env or {},
                "address_space": address_space, **more}

    def run(self, argv: list[str], cwd, *, env: dict | None = None,
            address_space: int | None = None, timeout: float = 60.0) -> Outcome:
        """Run ``dprisk argv`` in a forked child; return its :class:`Outcome`."""
        return Outcome(self._ask(self._request(argv, cwd, env, address_space,
                                               timeout=timeout)))

    def start(self, argv: list[str] | None = None, cwd=".", *, env: dict | None = None,
              own: bool = True, call: tuple | None = None, sys_path=(),
              stderr_tty: str | None = None, address_space: int | None = None,
              stdout_path: str | None = None) -> int:
        """Fork a child and return its pid at once (signal it, then :meth:`wait` for it).

        It runs ``dprisk argv`` as the console script does (``own``: ``sys.argv`` set, stop
        signals handled), or ``call = (module, function, args)`` (``sys_path`` prepended),
        with stdin empty, stdout to a file (``stdout_path``, which the test can read while
        the child runs, or one of the server's) and stderr to a file or the terminal
        ``stderr_tty`` (a pseudo-terminal's slave device: its text is then read there, not
        returned).
        """
        request = self._request(argv, cwd, env, address_space, own=own,
                                call=list(call) if call else None, sys_path=list(sys_path),
                                stderr_tty=stderr_tty, stdout_path=stdout_path)
        return int(self._ask({"start": request})["pid"])

    def running(self, pid: int) -> bool:
        """Whether a started child is still running (it has not ended)."""
        return bool(self._ask({"poll": pid})["running"])

    def wait(self, pid: int, timeout: float = 60.0) -> Outcome:
        """The outcome of a started child (killed after ``timeout`` s: status ``None``)."""
        return Outcome(self._ask({"wait": pid, "timeout": timeout}))

    def close(self) -> None:
        """End the server (its requests closed: the loop ends)."""
        self._requests.close()
        if self._parent is None:
            self.process.wait(timeout=30)
        else:  # reaped by the server it was forked from
            self._parent._ask({"reap": self._pid, "timeout": 30})
            shutil.rmtree(self._folder, ignore_errors=True)
        self._answers.close()


if __name__ == "__main__":
    serve(sys.argv[1:])
