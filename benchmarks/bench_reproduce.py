"""Whole-process time of ``dprisk reproduce`` at the default budget, and its records checked.

One run of the console script into a temporary directory (``--quiet``), as a user runs it;
its ``results.json`` is then compared with ``records_baseline.json`` exactly as
``check_records.py`` does (so the figure is of a report with the same records). Target
(issue 12): at most ``TARGET_SECONDS`` on the 2-core machine. One run only (about a minute).
The wall time is the target's figure; the process's CPU time (user + system, from
``getrusage``) is printed beside it, since on a shared machine the wall time also counts the
time other jobs held the cores;
the machine's load is recorded beside it by ``run.py``. ``python benchmarks/bench_reproduce.py``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from check_records import BASELINE, compare

TARGET_SECONDS = 60.0


def run() -> dict:
    script = Path(sys.executable).with_name("dprisk")
    dprisk = [str(script)] if script.exists() else [sys.executable, "-m", "dprisk.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([*dprisk, "reproduce", "--out", str(out), "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        results = json.loads((out / "results.json").read_text())
        n_figures = len(list(out.rglob("*.png"))) + len(list(out.rglob("*.svg")))
    baseline = json.loads(BASELINE.read_text())
    changed = len({line.split(":")[0] for line in compare(results, baseline)})
    unchanged = len(baseline) - changed
    print(f"  dprisk reproduce (whole process, one run): {seconds:.1f} s wall, {cpu:.1f} s CPU "
          f"(target <= {TARGET_SECONDS:.0f} s); {unchanged} of {len(baseline)} records "
          f"unchanged; {len(results)} records, {n_figures} figure files")
    return {"seconds": seconds, "cpu_seconds": cpu, "target_seconds": TARGET_SECONDS,
            "records": len(results),
            "baseline_records": len(baseline), "unchanged_records": unchanged,
            "figure_files": n_figures}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    run()
