"""The whole-job rows of issue 23, as ratios to the code of the day the issue was filed.

Issue 23 gave ``dprisk reproduce`` (41-50 s quiet, target 25 s) and ``make test`` from a
fresh clone (4 min 42 s quiet, target 4 min) in seconds of the 2-core machine of 2026-11-23,
and asked for every target "as a ratio against a baseline run in the same process or run".
The machine this repository now runs on is a different one: numpy's ``exp`` runs at
1.3e8/s here against 1.7e9/s then (no AVX-512), ``python -c 'import numpy, scipy'`` takes
0.21 s against 0.090 s. Seconds measured here compare machines as much as code.

So this module measures both jobs for two fresh clones of this repository, on this machine,
in this run, one after the other:

* the **filing commit** :data:`FILING_COMMIT` (main when the issue was filed: its README
  records ``dprisk reproduce`` at 49.6 s on the machine of the issue, within the issue's
  41-50 s);
* the **current commit** (``HEAD``; committed work only, as CI sees it).

``make test`` is timed from the clone, set-up included (each clone's own Makefile: its venv,
its installer, its test command), then ``dprisk reproduce --quiet`` with each clone's venv,
the two reproductions back to back. The targets are the issue's, divided by its "today":

* ``dprisk reproduce``: at most ``25 / 50`` = :data:`REPRODUCE_RATIO` of the filing code's
  time (the issue's upper figure, 50 s, the stricter ratio);
* ``make test``: at most ``240 / 282`` = :data:`MAKE_TEST_RATIO` of the filing code's time,
  and no test of the current default run slower than :data:`SLOWEST_TEST_SECONDS` (from
  ``--durations``).

The current code does more than the filing code in both jobs (the report has 197 records
and the suite 7,500 tests now, against 183 and fewer then), so the ratios are conservative.
About 20-25 minutes in all on the 2-core machine; ``python benchmarks/run.py filing``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: ``main`` when issue 23 was filed (its last commit of 2026-11-23).
FILING_COMMIT = "766ffb3"
#: Issue 23: ``dprisk reproduce`` 25 s against 41-50 s "today" (the stricter ratio, 25 / 50).
REPRODUCE_RATIO = 25.0 / 50.0
#: Issue 23: ``make test`` 4 min against 4 min 42 s "today".
MAKE_TEST_RATIO = 240.0 / 282.0
#: Issue 23: no test in the default run slower than this (seconds).
SLOWEST_TEST_SECONDS = 20.0

REPO = Path(__file__).resolve().parents[1]
#: pytest's ``--durations`` lines: ``12.34s call     tests/...::test_name``.
DURATION_LINE = re.compile(r"^(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(\S+)", re.M)
#: pytest's summary line, e.g. ``=== 7519 passed, 1 skipped in 290.1s ===``.
SUMMARY_LINE = re.compile(r"^=+ (.*\b(?:passed|failed)\b.*) =+$", re.M)
#: pytest's short summary of a failure or error (its default ``-r fE``), e.g.
#: ``FAILED tests/cli/test_x.py::test_y[3] - AssertionError: ...``; the test's id (which may
#: hold spaces, from a parameter's id) runs up to `` - `` or the end of the line.
FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.M)


def _clone(commit: str, where: Path) -> Path:
    """A fresh clone of this repository at ``commit`` (no hard links: a copy, as CI has)."""
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(where)],
                   check=True)
    subprocess.run(["git", "-C", str(where), "checkout", "--quiet", commit], check=True)
    return where


def _environment(**extra: str) -> dict:
    """This process's environment without the venv it runs in, plus ``extra``."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTHONPATH")}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(part for part in env.get("PATH", "").split(os.pathsep)
                                  if part != venv_bin)
    env.update(extra)
    return env


def make_test(clone: Path, *, durations: bool) -> dict:
    """Wall seconds of ``make test`` in ``clone`` (set-up included), its summary, slowest test.

    ``failed`` lists the ids of the tests pytest's short summary names as failed or in error,
    so a red run in a clone that is deleted afterwards still says which tests were red.
    """
    env = _environment(PYTEST_ADDOPTS="--durations=5") if durations else _environment()
    start = time.perf_counter()
    done = subprocess.run(["make", "test"], cwd=clone, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    summary = SUMMARY_LINE.findall(done.stdout)
    slowest = max(DURATION_LINE.findall(done.stdout), key=lambda row: float(row[0]),
                  default=(None, None))
    return {
        "seconds": seconds,
        "returncode": done.returncode,
        "summary": summary[-1] if summary else done.stdout[-300:],
        "slowest_s": None if slowest[0] is None else float(slowest[0]),
        "slowest_test": slowest[1],
        "failed": failed_tests(done.stdout),
    }


def failed_tests(pytest_output: str) -> list[str]:
    """The ids of the tests pytest's short test summary lists as ``FAILED`` or ``ERROR``."""
    return FAILED_LINE.findall(pytest_output)


def reproduce(clone: Path, out: Path) -> float:
    """Wall seconds of ``dprisk reproduce --quiet`` with ``clone``'s venv, into ``out``."""
    start = time.perf_counter()
    subprocess.run([str(clone / ".venv" / "bin" / "dprisk"), "reproduce", "--out", str(out),
                    "--quiet"], cwd=clone, env=_environment(), check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def run() -> dict:
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="dprisk-bench-filing-") as tmp:
        tmp = Path(tmp)
        filing = _clone(FILING_COMMIT, tmp / "filing")
        current = _clone(head, tmp / "current")
        tests = {"filing": make_test(filing, durations=False),
                 "current": make_test(current, durations=True)}
        seconds = {"current": reproduce(current, tmp / "report-current"),
                   "filing": reproduce(filing, tmp / "report-filing")}
    test_ratio = tests["current"]["seconds"] / tests["filing"]["seconds"]
    reproduce_ratio = seconds["current"] / seconds["filing"]
    for name in ("filing", "current"):
        commit = FILING_COMMIT if name == "filing" else head
        print(f"  make test, fresh clone of {commit} ({name}): {tests[name]['seconds']:.0f} s "
              f"[{tests[name]['summary']}]; dprisk reproduce: {seconds[name]:.1f} s")
        for test_id in tests[name]["failed"]:
            print(f"    failed in the {name} clone: {test_id}")
    slowest = tests["current"]["slowest_s"]
    print(f"  ratios current / filing: make test {test_ratio:.3f} (target <= "
          f"{MAKE_TEST_RATIO:.3f}), dprisk reproduce {reproduce_ratio:.3f} (target <= "
          f"{REPRODUCE_RATIO:.3f}); slowest current test {slowest} s "
          f"({tests['current']['slowest_test']})")
    return {
        "filing_commit": FILING_COMMIT, "current_commit": head,
        "make_test": tests, "make_test_ratio": test_ratio,
        "make_test_target_ratio": MAKE_TEST_RATIO,
        "reproduce_seconds": seconds, "reproduce_ratio": reproduce_ratio,
        "reproduce_target_ratio": REPRODUCE_RATIO,
        "slowest_test_target_s": SLOWEST_TEST_SECONDS,
    }


if __name__ == "__main__":
    run()
