"""Run every benchmark module's ``run()`` and print its table (``make bench``).

Speed is reported as ratios against a baseline measured in the same run, never asserted
in tests. Each ``benchmarks/bench_*.py`` module exposes ``run() -> dict``; the machine's load
(``os.getloadavg``) is printed and recorded before and after each module, beside its figures
in ``benchmarks/last_run.json``. ``python benchmarks/run.py [NAME ...]`` runs only the named
modules (e.g. ``startup studies``).
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load_line(load: dict) -> str:
    return (f"load {load['loadavg_1min']:.2f} / {load['loadavg_5min']:.2f} / "
            f"{load['loadavg_15min']:.2f} (1/5/15 min) on {load['cpus']} CPUs")


def main(names: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    from timing import machine_load

    results = {}
    for path in sorted(HERE.glob("bench_*.py")):
        if names and path.stem.removeprefix("bench_") not in names:
            continue
        module = importlib.import_module(path.stem)
        print(f"\n=== {path.stem} ===", flush=True)
        before = machine_load()
        print(f"[{_load_line(before)}]", flush=True)
        start = time.perf_counter()
        figures = module.run()
        seconds = time.perf_counter() - start
        after = machine_load()
        print(f"({seconds:.1f} s; after: {_load_line(after)})", flush=True)
        results[path.stem] = {"figures": figures, "seconds": seconds,
                              "load_before": before, "load_after": after}
    if names:  # a partial run does not replace the record of the last full one
        return 0
    out = HERE / "last_run.json"
    out.write_text(json.dumps(results, indent=1, default=float) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
