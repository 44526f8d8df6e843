"""First use of a model-file prior on the exact path, and the ways to evaluate its graph.

Whole process (as a user runs it, the ``dprisk`` console script in a new process): the
two-level exact ``posterior`` with ``--prior models/examples/negative_binomial_prior.py:prior``
against the same command with the default prior and against ``python -c "import numpy,
scipy"``; interleaved rounds (one of each per round, ``ROUNDS`` rounds), medians of wall-clock
and of CPU (user + system) seconds. Target (issue 20 part 3 / issue 23): first use <= 1 s,
stated as a ratio: <= ``TARGET_RATIO`` x the numpy+scipy import (issue 23 puts that import at
0.1 s on a quiet machine); each row prints measured, target and ``pass``/``FAIL``, judged on
the CPU ratio (a loaded machine inflates wall-clock time several-fold, CPU time far less).

In a new process each (``OPTION_ROUNDS`` rounds, medians): building the negative-binomial
log-weight graph and its first evaluation on 4096 values, by each option measured for the
issue: ``pytensor.function`` in the default mode (numba linker, the path before issue 20), in
``FAST_COMPILE`` mode, with the Python linker and no rewrites, and the numpy walk of
:mod:`dprisk.models.priors.graph_eval` (the path now; its SciPy functions from SciPy's
compiled ufunc module loaded alone, without ``import scipy.special``).
``python benchmarks/bench_prior_file.py``.
"""

from __future__ import annotations

import statistics
import sys

from timing import BASELINE, cold_in_new_process, dprisk_command, process_cpu_seconds

ROUNDS = 5
OPTION_ROUNDS = 3
TARGET_SECONDS = 1.0
TARGET_RATIO = 10.0
NB_SPEC = "models/examples/negative_binomial_prior.py:prior"
TWO_LEVEL = ["posterior", "--rho1", "census:block", "--rho2", "census:block-group", "--d", "27",
             "--x1-star", "3", "--x2-star", "30", "--y1-star", "27", "--json"]
COMMANDS = {"two-level exact, default prior": TWO_LEVEL,
            "two-level exact, prior file (first use)": [*TWO_LEVEL, "--prior", NB_SPEC]}

_SETUP = f"""
import time
_t = time.perf_counter()
import numpy as np
import pytensor, pytensor.tensor as pt
from pytensor.compile.mode import Mode
from dprisk.models.priors.library import parse_prior
from dprisk.models.priors.graph_eval import graph_function
prior = parse_prior({NB_SPEC!r})
k2, k1 = pt.lvector("k2"), pt.lvector("k1")
graph = prior.log_weight_pt(k2, k1)
a = np.arange(4096, dtype=np.int64); b = np.zeros_like(a)
_t = time.perf_counter()
"""
OPTIONS = {
    "pytensor.function, default mode (numba; before)": "pytensor.function([k2, k1], graph)(a, b)",
    "pytensor.function, FAST_COMPILE": ("pytensor.function([k2, k1], graph, "
                                        "mode='FAST_COMPILE')(a, b)"),
    "pytensor.function, py linker, no rewrites": ("pytensor.function([k2, k1], graph, mode="
                                                  "Mode(linker='py', optimizer=None))(a, b)"),
    "numpy walk of the graph (graph_eval; now)": "graph_function([k2, k1], [graph])(a, b)",
}


def run() -> dict:
    times = {name: [] for name in [BASELINE, *COMMANDS]}
    for _ in range(ROUNDS):
        times[BASELINE].append(process_cpu_seconds([sys.executable, "-c",
                                                    "import numpy, scipy"]))
        for name, args in COMMANDS.items():
            times[name].append(process_cpu_seconds(dprisk_command() + args))
    base = statistics.median(w for w, _ in times[BASELINE])
    base_cpu = statistics.median(c for _, c in times[BASELINE])
    results = {"rounds": ROUNDS, "baseline_s": base, "baseline_cpu_s": base_cpu,
               "target_seconds": TARGET_SECONDS, "target_ratio": TARGET_RATIO}
    print(f"whole process, median of {ROUNDS} interleaved rounds; baseline {BASELINE}: "
          f"{base:.3f} s wall, {base_cpu:.3f} s CPU; target <= {TARGET_SECONDS:g} s = "
          f"{TARGET_RATIO:g}x the baseline, judged on the CPU ratio")
    for name in COMMANDS:
        seconds = statistics.median(w for w, _ in times[name])
        cpu = statistics.median(c for _, c in times[name])
        met = cpu / base_cpu <= TARGET_RATIO
        results[name] = {"seconds": seconds, "ratio": seconds / base, "cpu_seconds": cpu,
                         "cpu_ratio": cpu / base_cpu, "met": met}
        print(f"  dprisk {name:<42} {seconds:6.3f} s {seconds / base:5.1f}x wall, "
              f"{cpu:6.3f} s {cpu / base_cpu:5.1f}x CPU  target <= {TARGET_RATIO:g}x  "
              f"{'pass' if met else 'FAIL'}  (CPU <= {TARGET_SECONDS:g} s: "
              f"{'yes' if cpu <= TARGET_SECONDS else 'no'})")
    results["options"] = {}
    print(f"new process: build the prior's graph's function + first evaluation (4096 values), "
          f"median of {OPTION_ROUNDS}")
    for name, statement in OPTIONS.items():
        seconds = statistics.median(cold_in_new_process(_SETUP, statement)
                                    for _ in range(OPTION_ROUNDS))
        results["options"][name] = seconds
        print(f"  {name:<50} {seconds:7.3f} s")
    return results


if __name__ == "__main__":
    run()
