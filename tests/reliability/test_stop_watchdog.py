"""Every command stops within 2 s of SIGINT/SIGTERM, even where the interrupt cannot surface.

dprisk/cli/stopping.py: the first stop signal raises ``Interrupted`` and starts a watchdog
that, after ``STOP_SECONDS``, runs the writers' clean-ups, prints the one line (unless the
command did) and exits 130/143. Table: the places where the interrupt used to be lost, run
as a small program under ``handle_stop_signals`` holding an output lock and a temporary:

* ``swallowed``: a library catches ``KeyboardInterrupt`` and carries on (PyMC returns its
  draws; ``reproduce`` called it in a loop and ignored SIGTERM for minutes);
* ``compiled``: the main thread sits in a numba kernel (``nogil``) for longer than 2 s (the
  Python-level handler cannot run; the wakeup pipe's thread starts the watchdog);
* ``shutdown``: the command returned, but a non-daemon thread keeps the interpreter alive;
* the libraries' phases (``make bench``): numba compiling, PyTensor compiling a C module,
  PyMC sampling, a Dask computation on threads.

Each must exit with ``128 + signal`` within 2 s of the signal, one stderr line, no
traceback, no lock file and no temporary left. Then the issue's case itself: ``reproduce``
over an earlier report holding a file of the user's, stopped while it works: the earlier
report and the user's file are intact and the line says so truthfully.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

#: The promise: the process has ended this long after the signal.
DEADLINE = 2.0
#: The watchdog's wait (``dprisk.cli.stopping.STOP_SECONDS``, 0.75 s) in the programs whose
#: stop must wait for it: the same watchdog, the same clean-ups and line, 0.65 s sooner (issue
#: 36: idle waiting). The product's own 0.75 s is kept in :data:`DEFAULT_WAIT_CASES`.
SHORT_STOP_SECONDS = 0.1
#: Cases run with the product's STOP_SECONDS: the promise (2 s) end to end with its real wait.
DEFAULT_WAIT_CASES = {("swallowed", signal.SIGTERM)}

PROGRAM = """
import os, shutil, sys, threading, time
from pathlib import Path
from dprisk.cli import stopping
from dprisk.cli.stopping import end_process, handle_stop_signals, report_interrupted
from dprisk.runtime.output_files import FORCED_EXIT_CLEANUPS
from dprisk.runtime.output_lock import OutputLock

stopping.STOP_SECONDS = {stop_seconds!r}

out = Path(sys.argv[1])
lock = OutputLock(out / ".out.lock", out / "out").acquire()
tmp = out / ".out-tmp-1"
tmp.mkdir()
FORCED_EXIT_CLEANUPS[1] = lambda: shutil.rmtree(tmp, ignore_errors=True)
handle_stop_signals("demo")

def work():
{body}

try:  # as dprisk.cli.main does: clean-ups in finally, the line from report_interrupted
    try:
        work()
    finally:
        lock.release()
        shutil.rmtree(tmp, ignore_errors=True)
except KeyboardInterrupt as err:
    end_process(report_interrupted("demo", err))
"""

BODIES = {
    "swallowed": """
working = False
while True:  # a library that swallows every interrupt and carries on
    try:
        while True:
            try:
                if not working:  # inside the swallowing block: the signal cannot escape it
                    working = True
                    print("working", flush=True)
                time.sleep(0.01)
            except KeyboardInterrupt:
                pass
    except KeyboardInterrupt:
        pass
""",
    "compiled": """
import numba

@numba.njit(nogil=True)
def spin(n):
    total = 0.0
    for i in range(n):
        total += (i % 7) * 1e-9
    return total

spin(10)
started = time.perf_counter()
spin(10**6)
print(f"working; a call of 10**10 steps lasts about "
      f"{(time.perf_counter() - started) * 1e4:.0f} s", flush=True)
spin(10**10)  # the signal arrives in here
print("left the kernel", flush=True)  # the Python-level handler runs only after this
while True:
    spin(10**10)
""",
    "numba-compiling": """
import numba
source = ("def big(x):\\n    s = 0.0\\n" + "".join(
    f"    s += (x * {i}.5) % 3.0 if x > {i} else x / {i + 1}.0\\n" for i in range(100))
    + "    return s\\n")
space = {}
exec(source, space)
big = numba.njit(nogil=True)(space["big"])
print("working", flush=True)
big(3.0)  # compiling: seconds (5 s CPU when measured); the signal arrives in here
print("left the phase", flush=True)
""",
"pytensor-compiling": """
import pytensor
import pytensor.tensor as pt
x = pt.dvector("x")
y = x
for i in range(300):  # a new graph (a constant of this run): a new C module, not cached
    y = pt.exp(pt.sin(y * (time.time() + i))) + pt.log1p(y * y)
print("working", flush=True)
pytensor.function([x], y, mode="FAST_RUN")
print("left the phase", flush=True)
""",
"sampling": """
import pymc as pm
with pm.Model():
    a = pm.Normal("a", 0, 1, shape=50)
    pm.Normal("b", a.sum(), 1, observed=1.0)
    print("working", flush=True)
    pm.sample(draws=10**6, tune=100, chains=1, cores=1, progressbar=False,
              compute_convergence_checks=False)
print("left the phase", flush=True)
""",
"dask": """
import dask.array as da
x = da.random.random((40000, 40000), chunks=(4000, 4000))
print("working", flush=True)
(x @ x.T).sum().compute(scheduler="threads")
print("left the phase", flush=True)
""",
"shutdown": """
threading.Thread(target=lambda: time.sleep(3600)).start()  # not a daemon: exit would wait
print("working", flush=True)
while True:
    time.sleep(0.01)
""",
}


def _stop(argv, cwd, signum, startup=180.0, sent_file=None):
    """Start ``argv``, wait until it works (``working`` on stdout), signal (then create
    ``sent_file`` if given: the program may wait for it)."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + startup
    seen = b""
    while b"working" not in seen and b"in the shutdown" not in seen:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(proc.communicate()[1].decode()[-2000:])
        seen += os.read(proc.stdout.fileno(), 4096)
    sent = time.monotonic()
    proc.send_signal(signum)
    if sent_file is not None:
        sent_file.touch()
    try:
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = time.monotonic() - sent
    out, err = proc.communicate(timeout=30)  # closes the pipes
    _stop.stdout = (seen + out).decode()
    return proc.returncode, took, err.decode()


def _stop_forked(server, program, out, signum):
    """:func:`_stop` for ``python -c program out`` run by a fork of the process ``server``
    (:func:`fork_runner.run_program`), its stdout read from a file beside ``out``."""
    stdout = out.parent / "stdout"
    pid = server.start(call=("fork_runner", "run_program", [program, str(out)]), cwd=out,
                       stdout_path=str(stdout))
    outcome = None
    try:
        deadline = time.monotonic() + 180.0
        while "working" not in stdout.read_text():
            assert server.running(pid) and time.monotonic() < deadline, \
                server.wait(pid, timeout=0).stderr[-2000:]
            time.sleep(0.005)
        sent = time.monotonic()
        os.kill(pid, signum)
        outcome = server.wait(pid, timeout=30)
        took = time.monotonic() - sent
    finally:
        if outcome is None:
            server.wait(pid, timeout=0)
    _stop.stdout = outcome.stdout
    return outcome.status, took, outcome.stderr


#: Cases run by a fork of the session's process server (:func:`_stop_forked`) instead of a new
#: interpreter: ``compiled`` imports numba (there preloaded), 1.0-1.3 s of CPU a run before.
FORKED_CASES = {"compiled"}

#: The phases of the libraries (seconds of imports each: run by ``make bench``). Measured
#: under load 5 on 2 cores: 0.04-0.08 s wall from the signal to the exit (the interrupt
#: surfaces; the process ends right after its line); 1.7-2.2 s before end_process skipped
#: the interpreter's shutdown. In ``numba-compiling`` the interrupt waits until the compiler is
#: left (:mod:`dprisk.cli.compiler_stops`: raised inside llvmlite's bookkeeping it crashed the
#: process), so the watchdog ends that program, after its wait.
LIBRARY_PHASES = ("numba-compiling", "pytensor-compiling", "sampling", "dask")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("case", [
    pytest.param(case, marks=pytest.mark.slow) if case in LIBRARY_PHASES else case
    for case in BODIES])
def test_stopped_within_two_seconds_wherever_it_is(case, signum, tmp_path, request):
    stop_seconds = None if (case, signum) in DEFAULT_WAIT_CASES else SHORT_STOP_SECONDS
    program = PROGRAM.format(body=textwrap.indent(BODIES[case], "    "),
                             stop_seconds=stop_seconds)
    if stop_seconds is None:  # the product's own wait
        program = program.replace("stopping.STOP_SECONDS = None\n", "")
    out = tmp_path
    if case in FORKED_CASES:
        out = tmp_path / "out"
        out.mkdir()
        status, took, err = _stop_forked(request.getfixturevalue("process_server"), program,
                                         out, signum)
    else:
        status, took, err = _stop([sys.executable, "-c", program, str(out)], tmp_path, signum)
    name = signal.Signals(signum).name
    if case == "compiled":  # the signal came while the main thread was in the kernel ...
        estimate = float(_stop.stdout.split("lasts about ")[1].split()[0])
        assert estimate > 4 * DEADLINE, _stop.stdout
        # ... and the process ended before the kernel returned: the watchdog was started by
        # the wakeup pipe's thread, not by the Python-level handler (which waits for bytecode)
        assert "left the kernel" not in _stop.stdout, _stop.stdout
    assert status == 128 + signum, err
    assert took < DEADLINE, took
    if case == "swallowed":  # only the watchdog could end it
        assert took > (stop_seconds or 0.75), took
    if case in LIBRARY_PHASES:  # the signal came inside the phase, which it ended
        assert "left the phase" not in _stop.stdout, _stop.stdout
        err = "".join(line + "\n" for line in err.splitlines()  # the libraries' own notes
                      if line.startswith("dprisk demo:") or "Traceback" in line)
    assert err.count("\n") == 1 and err.startswith(f"dprisk demo: interrupted by {name}"), err
    assert "Traceback" not in err
    assert not list(out.iterdir())  # no lock file, no temporary


#: Seconds the held block lasts after the signal was sent: longer than the watchdog's wait
#: (:data:`SHORT_STOP_SECONDS` in this program), so that the watchdog wakes inside the block
#: and must wait for it (before issue 36: a fixed 1 s block, with the product's 0.75 s wait).
HELD_AFTER_SIGNAL = 0.3

HELD = f"""
from dprisk.runtime.writers import hold_stop_signals
threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()  # a library's thread
sent = out.parent / "sent"  # created by the test once it has sent the signal
with hold_stop_signals():  # as the swap of a report: the signal arrives in here
    print("working", flush=True)
    deadline = time.monotonic() + 60
    while not sent.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep({HELD_AFTER_SIGNAL!r})  # the watchdog wakes in here: it must wait for the block
    (out.parent / (out.name + "-swapped")).write_text("complete")
print("left the block", flush=True)
while True:
    time.sleep(0.01)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_held_block_ends_before_the_stop(signum, tmp_path):
    """A signal inside ``hold_stop_signals`` (delivered to a library's thread, whose mask the
    main thread's does not cover, and seen by the wakeup pipe at once) stops the process only
    once the block has ended: the swap is complete, then the line and 128 + signal. The
    block lasts until the signal was sent and then longer than the watchdog's wait."""
    out = tmp_path / "out"
    out.mkdir()
    program = PROGRAM.format(body=textwrap.indent(HELD, "    "),
                             stop_seconds=SHORT_STOP_SECONDS)
    status, took, err = _stop([sys.executable, "-c", program, str(out)], tmp_path, signum,
                              sent_file=tmp_path / "sent")
    assert status == 128 + signum, err
    assert (tmp_path / "out-swapped").read_text() == "complete"
    assert "left the block" not in _stop.stdout  # stopped as the block ended
    assert took > HELD_AFTER_SIGNAL  # the block was not cut short
    assert took < HELD_AFTER_SIGNAL + DEADLINE, took  # the rest of the block, then the promise
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert not list(out.iterdir())


def test_reproduce_over_an_earlier_report_stops_at_once_and_keeps_it(tmp_path, process_server):
    """The issue's case: SIGTERM while ``reproduce`` works over an earlier report.

    The run is a fork of the session's process server (:mod:`tests.reliability.fork_runner`)
    running ``main()`` on its own command line as the console script does: a real process,
    signalled and reaped as the script's, without a new interpreter importing PyMC, ArviZ and
    the report's libraries (about 2.5 s of CPU and 7 s of waiting); the console script's own
    stop is checked by ``test_interrupts.py`` (its ``sweep-exact`` SIGINT case).
    """
    out = tmp_path / "report"
    out.mkdir()
    (out / "index.html").write_text("the earlier report")
    (out / ".dprisk-report").write_text(json.dumps({"written_by": "dprisk reproduce",
                                                    "files": ["index.html"]}))
    (out / "notes.txt").write_text("the user's notes")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    lock = tmp_path / ".report.lock"  # taken as the studies start
    pid = process_server.start(["reproduce", "--out", "report", "--quiet"], tmp_path)
    outcome = None
    try:
        deadline = time.monotonic() + 180.0
        while not lock.exists():
            assert process_server.running(pid) and time.monotonic() < deadline, \
                process_server.wait(pid, timeout=0).stderr[-2000:]
            time.sleep(0.02)
        time.sleep(0.3)  # into the first study (the lock is taken as the studies start)
        sent = time.monotonic()
        os.kill(pid, signal.SIGTERM)
        outcome = process_server.wait(pid, timeout=30)
        took = time.monotonic() - sent
    finally:
        if outcome is None:
            process_server.wait(pid, timeout=0)
    err = outcome.stderr
    assert outcome.status == 143, err
    assert took < DEADLINE, took
    assert err.strip().splitlines()[-1] == ("dprisk reproduce: interrupted by SIGTERM; "
                                            "nothing was written; the earlier report, if "
                                            "any, is intact"), err
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


#: A stop signal that arrives inside a ``__del__``: its Interrupted cannot propagate there.
_UNRAISABLE_STOP = f"""
import os, signal, time
from dprisk.cli import stopping
from dprisk.cli.stopping import handle_stop_signals

stopping.STOP_SECONDS = {SHORT_STOP_SECONDS!r}  # the watchdog's wait, shortened
handle_stop_signals("sweep")

class StoppedInside:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # bytecode: the handler runs here, inside __del__
            pass

StoppedInside()
time.sleep(10)  # the watchdog must end the process
print("not stopped")
"""


def test_stop_inside_a_callback_python_only_reports_is_still_one_line():
    """A signal inside ``__del__`` (seen under load: SIGTERM during an import's clean-up).

    Python reports an exception raised there ("Exception ignored in ...", a traceback) and
    carries on; the watchdog still stops the process with 143 and the command's line, and
    nothing else reaches stderr (the finding: the traceback was printed too).
    """
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _UNRAISABLE_STOP], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 143, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines == ["dprisk sweep: interrupted by SIGTERM; rerunning the same command resumes "
                     "from the chunks already computed"], done.stderr


#: After a stop signal, a ``__del__`` whose clean-up fails (as llvmlite's did in CI when SIGINT
#: arrived while numba closed an object): its error, too, is a side effect of the stop.
_FAILING_DEL_DURING_STOP = f"""
import os, signal, time
from dprisk.cli import stopping
from dprisk.cli.stopping import handle_stop_signals

stopping.STOP_SECONDS = {SHORT_STOP_SECONDS!r}  # the watchdog's wait, shortened
handle_stop_signals("sweep")

class FailsWhileStopping:
    def __del__(self):
        raise ValueError("closed while stopping")

try:
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(1000):  # bytecode: the handler raises Interrupted here
        pass
except KeyboardInterrupt:
    FailsWhileStopping()  # freed at once: its __del__ fails during the stop
    time.sleep(10)  # the watchdog must end the process
print("not stopped")
"""


def test_an_unraisable_error_during_a_stop_is_kept_off_stderr():
    """Once the stop signal arrived, nothing but the command's line reaches stderr (the CI
    finding: "Exception ignored in: ObjectRef.__del__" and a traceback after SIGINT)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FAILING_DEL_DURING_STOP], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 143, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "dprisk sweep: interrupted by SIGTERM; rerunning the same command resumes from the "
        "chunks already computed"], done.stderr


def test_a_failure_after_a_swallowed_stop_is_reported_as_the_stop(monkeypatch, capsys):
    """PyMC swallows a stop that arrives before its first draw is recorded and then raises
    ``ValueError("Not enough samples to build a trace.")`` (seen on CI: status 2 and an error
    line instead of 143). Once a stop signal has arrived, a failure is the stop: its status
    and its one line. Here the ValueError is a bad ``--seed``, raised inside the same guard
    as a subcommand's own failures; without a stop it is bad input (status 2)."""
    from dprisk.cli import stopping
    from dprisk.cli.main import main

    argv = ["posterior", "--rho1", "1", "--rho2", "1", "--x1-star", "1", "--seed", "-1"]
    assert main(argv) == 2
    assert "error: --seed must be an integer >= 0" in capsys.readouterr().err
    monkeypatch.setattr(stopping, "_RECEIVED", [int(signal.SIGTERM)])
    monkeypatch.setitem(stopping._STATE, "printed", False)
    assert main(argv) == 143
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()]  # one line
    assert err.startswith("dprisk posterior: interrupted by SIGTERM")


#: A command that turns the stop's interrupt into another exception, as ``threading`` does when
#: the interrupt lands in ``Condition.wait``'s re-acquire while ``Thread.start`` waits for the
#: new thread ("RuntimeError: release unlocked lock", the interrupt as its context).
_STOP_TURNED_INTO_ERROR = """
import importlib, os, signal, sys, time
cli = importlib.import_module("dprisk.cli.main")

def turned(argv, requested, own):
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except KeyboardInterrupt:
        raise RuntimeError("release unlocked lock")
    return 0

cli._run = turned
sys.argv = ["dprisk", "census"]
sys.exit(cli.main())
"""


def test_a_stop_turned_into_another_error_outside_the_subcommand_is_one_line(tmp_path):
    """Seen in CI (1 run in about 20, the joining case below): SIGINT while ``Thread.start``
    waited for its thread; ``threading`` turned the interrupt into ``RuntimeError: release
    unlocked lock``, which ``main`` did not catch (only ``KeyboardInterrupt``): a traceback on
    stderr before the line. A failure after a stop is the stop, as within the subcommand."""
    proc = subprocess.run([sys.executable, "-c", _STOP_TURNED_INTO_ERROR], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.stderr == "dprisk census: interrupted by SIGINT; nothing was written\n", \
        proc.stderr
    assert proc.returncode == 130


#: A finished command whose interpreter's shutdown lasts: ``phase`` "joining" (a library's
#: non-daemon thread joined before the exit handlers) or "exit-handlers" (an exit handler
#: registered before the command line, so run after its own: the rest of the shutdown).
_DONE_THEN_STOPPED = """
import atexit, importlib, sys, threading, time
phase = sys.argv[1]
if phase == "exit-handlers":  # runs last: after dprisk's own exit handlers
    atexit.register(lambda: (print("in the shutdown", flush=True), time.sleep(1.5)))
cli = importlib.import_module("dprisk.cli.main")

def finished(argv, requested, own):  # the command: its output, then done
    if phase == "joining":
        threading.Thread(target=lambda: (print("in the shutdown", flush=True),
                                         time.sleep(1.5))).start()
    return 0

cli._run = finished
sys.argv = ["dprisk", "census"]
sys.exit(cli.main())
"""


@pytest.mark.parametrize("phase", ["joining", "exit-handlers"])
def test_a_stop_after_the_command_is_done_is_one_line_or_none(phase, tmp_path):
    """A stop in the interpreter's shutdown, after the command's whole output (about 20 ms
    after a light command, 200 ms after PyMC). Before: the stop was raised where Python only
    reports it and the wakeup pipe's thread failed to start the watchdog ('Exception in
    thread dprisk-stop-signals: ... RuntimeError: can't create new thread at interpreter
    shutdown', status 0), or killed the process by the signal with no line once Python had
    reset its handler. Now, up to the end of dprisk's exit handlers, the stop's one line and
    130; after them the stop is ignored and the command's status (0) stands."""
    status, took, err = _stop([sys.executable, "-c", _DONE_THEN_STOPPED, phase], tmp_path,
                              signal.SIGINT)
    assert "Traceback" not in err and "Exception" not in err, err
    if phase == "joining":
        assert status == 130 and took < DEADLINE, (status, took, err)
        assert err == "dprisk census: interrupted by SIGINT; nothing was written\n", err
    else:
        assert status == 0 and err == "", (status, err)
