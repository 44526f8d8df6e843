"""``dprisk population measure`` on a 1,000,000-person synthetic state: time and peak memory.

A synthetic state (:func:`dprisk.inference.population.synth.synthesize`, seed 1) is measured
in both layouts and read back whole (``read_noisy_table``, ``read_nmf_block_detailed``), each
step in a fresh process (:data:`SCRIPT`), which reports its wall and CPU seconds; its peak
resident memory is the process's ``ru_maxrss`` from :func:`timing.run_with_peak` (started from
this process, it would report this one's peak: issue 36's session saw 2.4 GB for each step).
Targets (issue 34): well under 60 s, peak memory <= 2 GB. The baseline in the same run: the
project's fast sampler drawing the same number of block ``detailed`` cells from one generator
(:func:`dg_sampling.sample`), so the ratio says what the counter-based streams, the answers
and the Parquet writing cost beyond the draws themselves. Nothing is asserted; run
``python benchmarks/bench_population_measure.py``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from timing import run_with_peak

PERSONS = 1_000_000
SEED = 1
SCRIPT = r"""
import json, sys, time
from pathlib import Path
import pandas as pd
from dprisk.inference.population.measure import measure
from dprisk.inference.population.measurements import read_noisy_table
from dprisk.inference.population.nmf_read import read_nmf_block_detailed
out, mode = Path(sys.argv[2]), sys.argv[3]
persons = pd.read_parquet(sys.argv[1]) if mode in ("table", "nmf") else None
wall, cpu = time.perf_counter(), time.process_time()
if mode == "read-table":
    blocks = len(read_noisy_table(out / "noisy.parquet").geoids)
elif mode == "read-nmf":
    blocks = len(read_nmf_block_detailed(out, "01").geoids)
else:
    out.mkdir()
    blocks = measure(persons, out, seed=7, layout=mode).blocks
print(json.dumps({"seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu,
                  "blocks": blocks}))
"""
#: What each fresh process does, and the folder it measures into or reads from.
MODES = (("table", "table"), ("nmf", "nmf"), ("read-table", "table"), ("read-nmf", "nmf"))


def run() -> dict:
    import numpy as np

    from dprisk.inference.population.synth import synthesize
    from dprisk.models.mechanism.dg_sampling import sample

    with tempfile.TemporaryDirectory() as tmp:
        persons_path = Path(tmp) / "persons.parquet"
        synthesize(PERSONS, SEED).to_parquet(persons_path)
        figures = {}
        for mode, folder in MODES:
            done, _, peak = run_with_peak([sys.executable, "-c", SCRIPT, str(persons_path),
                                           str(Path(tmp) / folder), mode],
                                          capture_output=True, text=True, check=True)
            figures[mode] = {**json.loads(done.stdout.strip().splitlines()[-1]),
                             "peak_mb": peak / 2**20}
        cells = figures["table"]["blocks"] * 2016
        rho = 1 / (2 * 10.092848490022675)
        sample(0, rho, size=10, random_seed=0)
        start = time.perf_counter()
        sample(0, rho, size=cells, random_seed=np.random.default_rng(0))
        baseline = time.perf_counter() - start
    for layout in ("table", "nmf"):
        figures[layout]["over_raw_draws"] = figures[layout]["seconds"] / baseline
    figures["raw_draws_seconds"] = baseline
    print(f"{'process':<11} {'seconds':>8} {'cpu s':>8} {'peak MB':>8} {'x raw draws':>12}")
    for mode, _ in MODES:
        row = figures[mode]
        ratio = f"{row['over_raw_draws']:12.1f}" if "over_raw_draws" in row else ""
        print(f"{mode:<11} {row['seconds']:8.1f} {row['cpu_seconds']:8.1f} "
              f"{row['peak_mb']:8.0f} {ratio}")
    print(f"{figures['table']['blocks']} blocks, {cells} detailed cells; raw draws "
          f"{baseline:.2f} s")
    return {"figures": figures}


if __name__ == "__main__":
    run()
