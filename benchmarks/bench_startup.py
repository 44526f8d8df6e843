"""Whole-process time of the closed-form and exact commands, against importing NumPy and SciPy.

Each command runs as a user runs it (the ``dprisk`` console script in a new process, output
discarded); the baseline is ``python -c "import numpy, scipy"`` in the same interpreter.
Runs are interleaved (one of each command per round, ``ROUNDS`` rounds) so that a change in
the machine's load hits every command alike; each figure is the median of its rounds, and
each ratio divides two such medians. Target (issue 12): every ratio <= 2.5.
``python benchmarks/bench_startup.py``.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path

from timing import BASELINE, baseline_seconds, dprisk_command, process_seconds

ROUNDS = 7
TARGET_RATIO = 2.5
BLOCK, GROUP = "census:block", "census:block-group"
COMMANDS = {
    "census": ["census", "--json"],
    "posterior, single level": ["posterior", "--rho1", BLOCK, "--x1-star", "3", "--json"],
    "posterior, two-level exact": ["posterior", "--rho1", BLOCK, "--rho2", GROUP, "--d", "27",
                                   "--x1-star", "3", "--x2-star", "30", "--y1-star", "27",
                                   "--json"],
    "posterior, nested exact (h = 3)": ["posterior", "--rhos", "census:3", "--siblings",
                                        "27,4", "--stars", "3,30,100,27,95", "--json"],
    "marginal, single level": ["marginal", "--rho1", BLOCK, "--json"],
    "marginal, hierarchical exact": ["marginal", "--rho1", BLOCK, "--rho2", GROUP, "--d", "27",
                                     "--x2", "3", "--json"],
    "sweep, 10 exact points (netCDF)": ["sweep", "--rho1", BLOCK, "--rho2", GROUP, "--d", "27",
                                        "--x2", "1:10", "--out", "{out}", "--json"],
}


def run() -> dict:
    times = {name: [] for name in [BASELINE, *COMMANDS]}
    dprisk = dprisk_command()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep.nc"
        for _ in range(ROUNDS):
            times[BASELINE].append(baseline_seconds())
            for name, args in COMMANDS.items():
                out.unlink(missing_ok=True)
                shutil.rmtree(f"{out}.chunks", ignore_errors=True)
                argv = dprisk + [a.replace("{out}", str(out)) for a in args]
                times[name].append(process_seconds(argv))
    base = statistics.median(times[BASELINE])
    results = {"rounds": ROUNDS, "target_ratio": TARGET_RATIO, "baseline_s": base}
    print(f"whole process, median of {ROUNDS} interleaved rounds; baseline {BASELINE}: "
          f"{base:.3f} s")
    for name in COMMANDS:
        seconds = statistics.median(times[name])
        ratio = seconds / base
        results[name] = {"seconds": seconds, "ratio": ratio}
        verdict = "ok" if ratio <= TARGET_RATIO else f"above the {TARGET_RATIO}x target"
        print(f"  dprisk {name:<34} {seconds:6.3f} s  {ratio:4.1f}x  {verdict}")
    return results


if __name__ == "__main__":
    run()
