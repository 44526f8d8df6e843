"""What a fresh machine's empty caches cost the test run (issue 36; by hand, not ``make bench``).

A fresh clone on the developers' machine reuses two caches that a fresh CI machine does not have:
``~/.cache/dprisk/numba`` (numba's on-disk cache of the package's kernels,
:func:`dprisk.runtime.cache.use_numba_cache`, below ``$XDG_CACHE_HOME/dprisk``) and
``~/.pytensor`` (PyTensor's compile directory: with PyTensor 3's default numba backend, the
compiled ``numba/*.nbc`` of every PyMC model graph). This script runs the same test modules
(``-n 0``) three or four times -- warm, then with each cache pointed at an empty temporary
directory (``XDG_CACHE_HOME``, ``PYTENSOR_FLAGS=base_compiledir=...``) and with both -- and prints
each run's wall and CPU seconds (the pytest process and its children, ``getrusage``).

    .venv/bin/python benchmarks/cold_caches.py [TEST_MODULE ...]

Measured 2026-11-28 (2-core machine shared with other work, the default :data:`MODULES`, 160
tests): warm 40.0 s CPU; dprisk's numba cache empty 43.1 s (+3); PyTensor's compile directory
empty 76.4 s (+36); both empty 81.2 s (+41, x2.0). The cold cost is PyTensor compiling the PyMC
model graphs with numba (its compile directory afterwards: 3.8 MB of ``numba/*.nbc``). Other
linkers are no cure: ``PYTENSOR_FLAGS=linker=cvm`` (C, g++) cold 78.8 s; ``mode=FAST_COMPILE``
(Python) 86 s for the first 4 of the 160 tests (the PyMC draws run in Python), stopped.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Modules that compile PyMC models and the package's numba kernels (the default).
MODULES = (
    "tests/inference/mcmc/test_compiled_chain.py",
    "tests/models/builders/test_two_level.py",
    "tests/inference/nested/test_posterior.py",
    "tests/validation/crosschecks/test_crosscheck.py",
    "tests/inference/product/test_exact.py",
    "tests/inference/nested/test_unique_levels_kernels.py",
)


def timed_run(modules: list[str], env: dict[str, str]) -> dict:
    """Wall and CPU seconds of one ``pytest -n 0`` run of ``modules`` with ``env``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "0", *modules], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-200:]
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "returncode": done.returncode,
            "summary": last}


def main(argv: list[str]) -> None:
    modules = argv or list(MODULES)
    for label in ("warm", "numba cold", "pytensor cold", "both cold"):
        env = dict(os.environ)
        with tempfile.TemporaryDirectory(prefix="dprisk-cold-") as empty:
            if label in ("numba cold", "both cold"):
                env["XDG_CACHE_HOME"] = str(Path(empty) / "xdg")
                env.pop("DPRISK_CACHE_DIR", None)
                env.pop("NUMBA_CACHE_DIR", None)
            if label in ("pytensor cold", "both cold"):
                env["PYTENSOR_FLAGS"] = ",".join(
                    filter(None, [env.get("PYTENSOR_FLAGS"),
                                  f"base_compiledir={Path(empty) / 'pytensor'}"]))
            result = timed_run(modules, env)
        print(f"{label:14s} {result['wall_s']:7.1f} s wall {result['cpu_s']:7.1f} s CPU  "
              f"{result['summary']}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
