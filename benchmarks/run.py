"""Run every benchmark module's ``run()`` and print its table (``make bench``).

Speed is reported as ratios against a baseline measured in the same process, never asserted
in tests. Each ``benchmarks/bench_*.py`` module exposes ``run() -> dict``.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    sys.path.insert(0, str(HERE))
    results = {}
    for path in sorted(HERE.glob("bench_*.py")):
        module = importlib.import_module(path.stem)
        print(f"\n=== {path.stem} ===", flush=True)
        start = time.perf_counter()
        results[path.stem] = module.run()
        print(f"({time.perf_counter() - start:.1f} s)", flush=True)
    out = HERE.parent / "benchmarks" / "last_run.json"
    out.write_text(json.dumps(results, indent=1, default=float) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
