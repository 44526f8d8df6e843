"""Timing helpers shared by the benchmark modules (imported with ``benchmarks/`` on sys.path).

Every ratio in the benchmarks divides two figures measured the same way: the same number
of runs on each side, reduced to the median (a best-of-N on one side and a single run on
the other flatters the first). The first call of a function in a process (compiling,
building and caching tables) is timed on its own with :func:`cold_seconds`, never mixed
into the warm medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: The whole-process baseline of the command benchmarks, as printed.
BASELINE = "python -c 'import numpy, scipy'"


def run_times(func, repeats: int) -> list[float]:
    """Wall-clock seconds of ``repeats`` calls of ``func()``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return times


def median_seconds(func, repeats: int = 3) -> float:
    """Median wall-clock time of ``repeats`` calls of ``func()`` (warm: call it once first)."""
    return statistics.median(run_times(func, repeats))


def best_seconds(func, repeats: int = 3) -> float:
    """Smallest wall-clock time of ``repeats`` calls of ``func()``."""
    return min(run_times(func, repeats))


def cold_seconds(func) -> float:
    """Wall-clock time of one call of ``func()``: the first call in this process."""
    return run_times(func, 1)[0]


def cold_in_new_process(setup: str, statement: str) -> float:
    """Seconds of ``statement``, run once in a new interpreter after ``setup`` (imports).

    The first call of a function in a fresh process: caches empty, nothing compiled.
    """
    code = (f"{setup}\nimport time\n_t = time.perf_counter()\n{statement}\n"
            "print(time.perf_counter() - _t)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return float(done.stdout.split()[-1])


def dprisk_command() -> list[str]:
    """The argv prefix that runs the ``dprisk`` console script beside this interpreter.

    Falls back to ``python -m dprisk.cli`` where the script is not installed.
    """
    script = Path(sys.executable).with_name("dprisk")
    return [str(script)] if script.exists() else [sys.executable, "-m", "dprisk.cli"]


def process_seconds(argv: list[str]) -> float:
    """Wall-clock seconds of one run of ``argv`` in a new process, output discarded."""
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def baseline_seconds() -> float:
    """Wall-clock seconds of one run of :data:`BASELINE` (importing NumPy and SciPy)."""
    return process_seconds([sys.executable, "-c", "import numpy, scipy"])


def machine_load() -> dict:
    """The machine's load averages (1, 5, 15 min) and CPU count, recorded beside the figures."""
    one, five, fifteen = os.getloadavg()
    return {"loadavg_1min": one, "loadavg_5min": five, "loadavg_15min": fifteen,
            "cpus": os.cpu_count()}


def process_cpu_seconds(argv: list[str]) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of one run of ``argv`` in a new process, output discarded.

    ``cpu`` is the child's user + system time (``resource.getrusage(RUSAGE_CHILDREN)``), which
    a loaded machine inflates far less than the wall-clock time.
    """
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


#: Run by :func:`run_with_peak` as ``python -c _PEAK_WRAPPER RESULT_FILE ARGV...``: forks the
#: command, waits for it and writes its CPU seconds and peak resident bytes to RESULT_FILE; exits
#: with its exit status (128 + the signal's number when a signal ended it).
_PEAK_WRAPPER = r"""
import json, os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        print(f"cannot run {sys.argv[2]}: {exc}", file=sys.stderr)
    os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump({"cpu_s": usage.ru_utime + usage.ru_stime, "peak_bytes": usage.ru_maxrss * 1024},
              out)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_with_peak(argv: list[str], **run_kwargs) -> tuple[subprocess.CompletedProcess, float,
                                                           float]:
    """``subprocess.run(argv, **run_kwargs)``, with the command's CPU seconds and peak RSS.

    Returns ``(completed, cpu_seconds, peak_bytes)``: user + system seconds and the peak
    resident size (``ru_maxrss``) of the command and of the processes it waited for; both NaN
    when the small interpreter did not write them (it was killed), so that no target passes
    on a figure not measured.

    The command is not started by this process but forked by a small interpreter started for
    it (:data:`_PEAK_WRAPPER`), which waits for it (``os.wait4``). Linux keeps a process's peak
    resident size across ``exec``, and ``subprocess`` starts a command by ``vfork``, which
    shares this process's memory until the ``exec``: a command started from here reports as its
    peak this process's own, however little it uses itself (seen: 2.4 GB for every step of
    ``bench_population_measure`` after the earlier modules of ``run.py``, reading a file back
    in 1.2 s included). Forked from the small interpreter it starts from that one's (about 10
    MB). The interpreter's own start (tens of milliseconds) is in a caller's wall time, not in
    these figures.
    """
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "usage.json"
        done = subprocess.run([sys.executable, "-c", _PEAK_WRAPPER, str(result), *argv],
                              **run_kwargs)
        usage = json.loads(result.read_text()) if result.exists() else {
            "cpu_s": float("nan"), "peak_bytes": float("nan")}
    done.args = list(argv)
    return done, usage["cpu_s"], usage["peak_bytes"]
