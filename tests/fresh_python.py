"""Shared helper of the import tests: which modules a piece of code loads in a new interpreter.

The code runs in a fresh ``python -c`` (so nothing the test session imported counts); a report
appended after it prints the names in ``sys.modules`` (entries set to ``None``, i.e. blocked,
are not loaded) on a marked last line, so the code may print output of its own.
:class:`ForkedInterpreter` answers the same from forks of one interpreter that imported the
libraries every check imports first (NumPy, pandas), which new interpreters paid each time.
:func:`answer_of_a_fork` runs a function in a fork of the test's own process, for a check that
needs a process of its own (its caches, its limits) but not a new interpreter.
"""

import json
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings

_MARK = "LOADED "
_REPORT = (
    "import json, sys\n"
    "loaded = sorted(name for name, module in list(sys.modules.items()) if module is not None)\n"
    f"print('\\n{_MARK}' + json.dumps(loaded))\n"
)


def modules_loaded_by(code: str) -> set[str]:
    """Names in ``sys.modules`` after running ``code`` in a new interpreter (which must succeed)."""
    done = subprocess.run([sys.executable, "-c", code + "\n" + _REPORT], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    line = [text for text in done.stdout.splitlines() if text.startswith(_MARK)][-1]
    return set(json.loads(line[len(_MARK):]))


def packages_loaded_by(code: str) -> set[str]:
    """Top-level packages in ``sys.modules`` after running ``code`` in a new interpreter."""
    return {name.split(".")[0] for name in modules_loaded_by(code)}


#: The fork server: reads one JSON line (a list of code pieces) per request, forks a child that
#: runs the pieces in turn with its output discarded and writes the JSON of its ``sys.modules``
#: names after each piece (entries set to ``None``, i.e. blocked, are not loaded) or its
#: traceback to a pipe; answers one JSON line.
_FORK_SERVER = """
import json, os, sys
for name in json.loads(sys.argv[1]):
    __import__(name)
answers = os.fdopen(os.dup(1), "w")
print(json.dumps({"ready": True}), file=answers, flush=True)
for line in sys.stdin:
    pieces = json.loads(line)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1):
            os.dup2(null, fd)
        try:
            loaded = []
            for code in pieces:
                exec(compile(code, "<checked code>", "exec"), {"__name__": "__main__"})
                loaded.append(sorted(n for n, m in list(sys.modules.items()) if m is not None))
            answer = {"loaded": loaded}
        except BaseException:
            import traceback
            answer = {"error": traceback.format_exc()}
        with os.fdopen(write_end, "w") as report:
            report.write(json.dumps(answer))
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as report:
        answer = report.read()
    os.waitpid(pid, 0)
    print(answer or json.dumps({"error": "no answer"}), file=answers, flush=True)
"""


#: Seconds :func:`answer_of_a_fork` waits for its fork's answer before it kills the fork and
#: fails (its checks take under 1 s of CPU; a hang must not stall the run).
FORK_ANSWER_SECONDS = 300


def answer_of_a_fork(function, timeout: float = FORK_ANSWER_SECONDS):
    """What ``function()`` returns, run in a fork of this process (pickled back through a
    pipe): what it imports, caches or limits stays in the fork, which exits without returning
    to the caller. Raises AssertionError with the fork's traceback if it raised, or if it has
    not answered within ``timeout`` seconds (the fork is then killed).

    A fork keeps only the calling thread. The others an earlier test may have left in this
    process wait idle (a thread pool's workers on their queue, the stop handler's reader on
    its pipe), holding no lock the fork needs; CPython takes the import lock across the fork;
    tqdm's monitor, which wakes every 10 s and takes tqdm's lock, is stopped first (tqdm
    starts it again with its next bar). Native threads (an idle BLAS pool, jemalloc's
    background thread) are made safe across a fork by their libraries. So Python's warning
    about forking a multi-threaded process is noise here."""
    tqdm_monitor = sys.modules.get("tqdm._monitor")
    for thread in threading.enumerate():
        if tqdm_monitor is not None and isinstance(thread, tqdm_monitor.TMonitor):
            thread.exit()  # sets its event and joins it
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"This process \(pid=\d+\) is multi-threaded",
                                category=DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the fork: never returns
        status = 1
        try:
            os.close(read_end)
            try:
                payload = pickle.dumps(("answer", function()))
            except BaseException:
                payload = pickle.dumps(("error", traceback.format_exc()))
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + timeout
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while select.select([pipe], [], [], max(deadline - time.monotonic(), 0))[0]:
            chunk = pipe.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"the fork gave no answer within {timeout} s: killed")
    payload = b"".join(chunks)
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    assert status == 0 and payload, f"the fork ended with status {status} and no answer"
    kind, answer = pickle.loads(payload)
    assert kind == "answer", answer
    return answer


class ForkedInterpreter:
    """One fresh interpreter that imported ``preload``, forked for each check.

    The test side of :data:`_FORK_SERVER`: :meth:`modules_loaded_by` a piece of code (or
    :meth:`modules_loaded_after_each` of several run in turn), each in a fork that reports
    ``sys.modules`` as a new interpreter would, without paying the preloaded imports again.
    Preload only modules every checked piece imports anyway and none it checks for.

    Parameters
    ----------
    preload : tuple of str
        Modules the interpreter imports before its first fork.
    """

    def __init__(self, preload: tuple[str, ...] = ()):
        self.process = subprocess.Popen([sys.executable, "-c", _FORK_SERVER, json.dumps(preload)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        assert json.loads(self.process.stdout.readline()) == {"ready": True}

    def modules_loaded_after_each(self, pieces: list[str]) -> list[set[str]]:
        """Names in ``sys.modules`` after each of ``pieces``, run in turn in one fork (each
        must succeed)."""
        self.process.stdin.write(json.dumps(list(pieces)) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        assert "error" not in answer, answer["error"]
        return [set(loaded) for loaded in answer["loaded"]]

    def modules_loaded_by(self, code: str) -> set[str]:
        """Names in ``sys.modules`` after running ``code`` in a fork (which must succeed)."""
        return self.modules_loaded_after_each([code])[0]

    def packages_loaded_by(self, code: str) -> set[str]:
        """Top-level packages in ``sys.modules`` after running ``code`` in a fork."""
        return {name.split(".")[0] for name in self.modules_loaded_by(code)}

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()
