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
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["PRELOAD", "ForkServer", "Outcome"]

#: Modules the server imports before its first fork (each would otherwise be imported again
#: by every child that uses it): the subcommands and the libraries they import lazily.
PRELOAD = ("numpy", "scipy.special", "scipy.optimize", "scipy.stats", "dp_accounting",
           "dp_accounting.rdp", "dprisk.cli.commands.attribute", "dprisk.cli.commands.budget",
           "dprisk.cli.commands.census", "dprisk.cli.commands.epsilon",
           "dprisk.cli.commands.marginal", "dprisk.cli.commands.posterior",
           "dprisk.cli.commands.product", "dprisk.cli.commands.summary",
           "dprisk.cli.commands.sweep")


class Outcome(dict):
    """One case's answer: ``status``, ``stdout``, ``stderr``, ``cpu`` (s), ``maxrss`` (bytes)."""

    __getattr__ = dict.__getitem__


def _child(request: dict, out_path: str, err_path: str) -> None:
    """In the forked child: limits, environment, redirected output, then ``main(argv)``."""
    status = 1
    try:
        os.chdir(request["cwd"])
        os.environ.update(request.get("env", {}))
        cap = request.get("address_space")
        if cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        out = os.open(out_path, os.O_WRONLY | os.O_TRUNC)
        err = os.open(err_path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(err, 2)
        from dprisk.cli.main import main

        try:
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


def _run(request: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="fork-runner-") as folder:
        out_path, err_path = str(Path(folder, "out")), str(Path(folder, "err"))
        Path(out_path).touch()
        Path(err_path).touch()
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, out_path, err_path)
        deadline = time.monotonic() + float(request.get("timeout", 60))
        killed = False
        while True:
            done, wait_status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline and not killed:
                os.kill(pid, signal.SIGKILL)
                killed = True
            time.sleep(0.005)
        status = None if killed else os.waitstatus_to_exitcode(wait_status)
        return {"status": status, "stdout": Path(out_path).read_text("utf-8", "replace"),
                "stderr": Path(err_path).read_text("utf-8", "replace"),
                "cpu": usage.ru_utime + usage.ru_stime, "maxrss": usage.ru_maxrss * 1024}


def serve(preload=PRELOAD) -> None:
    """The server loop: one request per stdin line, one answer per stdout line."""
    import importlib

    import dprisk.cli.main  # noqa: F401 - imported once, inherited by every child

    for name in preload:
        importlib.import_module(name)

    answers = os.fdopen(os.dup(1), "w")
    print(json.dumps({"ready": True}), file=answers, flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(_run(json.loads(line))), file=answers, flush=True)


class ForkServer:
    """The test side: start the server once, :meth:`run` a case, :meth:`close` at the end."""

    def __init__(self, preload=PRELOAD):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        self.process = subprocess.Popen([sys.executable, __file__, *preload], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        assert json.loads(self.process.stdout.readline()) == {"ready": True}

    def run(self, argv: list[str], cwd, *, env: dict | None = None,
            address_space: int | None = None, timeout: float = 60.0) -> Outcome:
        """Run ``dprisk argv`` in a forked child; return its :class:`Outcome`."""
        request = {"argv": list(argv), "cwd": str(cwd), "env": env or {},
                   "address_space": address_space, "timeout": timeout}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return Outcome(json.loads(self.process.stdout.readline()))

    def close(self) -> None:
        """End the server (its stdin closed: the loop ends)."""
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


if __name__ == "__main__":
    serve(sys.argv[1:])
