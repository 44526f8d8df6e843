"""Answers at the speed of a conversation (issue 23): budgets, unknown others, the exact point.

Each figure is a ratio against a baseline measured in the same run, as in
``bench_startup``, printed with its target and ``pass``/``FAIL``:

* whole-process commands (the ``dprisk`` console script in a new process, output
  discarded), interleaved with the baseline ``python -c "import numpy, scipy"`` over
  ``ROUNDS`` rounds, medians of wall-clock and of CPU (user + system) seconds: the
  single-level budget search (target <= 5x the baseline, the issue's 0.5 s),
  ``marginal --unknown-others 10000`` (target <= 1 s) and the two-level and whole-Census
  budget searches (target <= 2 s; ``ROUNDS`` rounds too since their grid sums,
  ``inference/privacy/budget_sums.py``, brought them from tens of seconds to about one). A
  target in seconds is judged as a ratio against the issue's quiet baseline,
  :data:`QUIET_BASELINE_S` (1 s = 10x); the verdict uses the CPU ratio, which load inflates
  far less than wall time;
* the exact two-level P[correct] point at the Census block/block group, warm (caches filled),
  against the time of 10^6 ``np.exp`` in this process (10 calls of ``np.exp`` on an in-cache
  array of 10^5, the exponential bound of ``bench_hierarchical``), the two timed alternately
  ``REPEATS`` times, medians of wall-clock and of CPU (``time.process_time``) seconds; target
  <= 1.1x, judged on the CPU ratio. The point runs on the numpy kernels, which a single point
  uses (``DPRISK_KERNELS=numpy`` here, so that the kernel rule's running tally cannot switch
  to numba part-way); beside it the compiled kernel (``DPRISK_KERNELS=compiled``), for
  information.

The accounting cache is warmed by a first untimed run of each command (``epsilon_cks`` of
the answer is cached on disk; its first computation is the accounting library's, not the
search's). ``python benchmarks/bench_conversation.py [exact-point]`` (``exact-point``: that
row only).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np
from timing import BASELINE, dprisk_command, process_cpu_seconds, process_seconds

ROUNDS = 5
REPEATS = 15
#: name -> (argv, target ratio against the baseline or None, target seconds or None, rounds)
COMMANDS = {
    "budget, single level": (["budget", "--measure", "p-correct", "--target", "0.6", "--json"],
                             5.0, None, ROUNDS),
    "marginal --unknown-others 10000": (["marginal", "--rho1", "census:block",
                                         "--unknown-others", "10000", "--q", "0.5", "--json"],
                                        None, 1.0, ROUNDS),
    "budget, two-level (rho1 0.1, d 5, x2 10)": (
        ["budget", "--measure", "p-correct", "--target", "0.59", "--rho1", "0.1", "--d", "5",
         "--x2", "10", "--json"], None, 2.0, ROUNDS),
    "budget, whole Census (d 5, x2 10)": (
        ["budget", "--census", "--measure", "p-correct", "--target", "0.6", "--d", "5",
         "--x2", "10", "--json"], None, 2.0, ROUNDS),
}
EXACT_POINT_TARGET = 1.1
#: The issue's ``python -c "import numpy, scipy"`` on a quiet machine: targets in seconds
#: become ratios against the baseline measured in the same run (1 s = 10x).
QUIET_BASELINE_S = 0.1


def verdict(ratio: float, target: float) -> str:
    """``pass`` when ``ratio <= target``, else ``FAIL``."""
    return "pass" if ratio <= target else "FAIL"


def commands(selected=None) -> dict:
    """Whole-process wall and CPU seconds of each command and the baseline, interleaved."""
    dprisk = dprisk_command()
    chosen = {k: v for k, v in COMMANDS.items() if selected is None or k in selected}
    for argv, *_ in chosen.values():  # warm the accounting cache and compiled kernels
        process_seconds(dprisk + argv)
    times = {name: [] for name in [BASELINE, *chosen]}
    for round_ in range(ROUNDS):
        times[BASELINE].append(process_cpu_seconds([sys.executable, "-c",
                                                    "import numpy, scipy"]))
        for name, (argv, _, _, rounds) in chosen.items():
            if round_ < rounds:
                times[name].append(process_cpu_seconds(dprisk + argv))
    base = statistics.median(w for w, _ in times[BASELINE])
    base_cpu = statistics.median(c for _, c in times[BASELINE])
    out = {"baseline_s": base, "baseline_cpu_s": base_cpu}
    for name, (_, ratio_target, seconds_target, _) in chosen.items():
        seconds = statistics.median(w for w, _ in times[name])
        cpu = statistics.median(c for _, c in times[name])
        judged = ratio_target if ratio_target is not None else seconds_target / QUIET_BASELINE_S
        out[name] = {"seconds": seconds, "ratio": seconds / base, "cpu_seconds": cpu,
                     "cpu_ratio": cpu / base_cpu, "target_ratio": ratio_target,
                     "target_seconds": seconds_target, "judged_target_ratio": judged,
                     "met": cpu / base_cpu <= judged}
    return out


def _alternate(funcs: dict, repeats: int) -> dict:
    """Medians of wall and CPU seconds of each function, called in turn ``repeats`` times."""
    wall = {name: [] for name in funcs}
    cpu = {name: [] for name in funcs}
    for _ in range(repeats):
        for name, func in funcs.items():
            start_cpu, start = time.process_time(), time.perf_counter()
            func()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name]))
            for name in funcs}


def exact_point(repeats: int = REPEATS) -> dict:
    """Warm exact two-level P[correct] at the Census block/block group against 1e6 np.exp."""
    from dprisk.inference.studies.p_correct import p_correct_two_level
    from dprisk.models.census.allocation import census_level

    census = {"rho1": float(census_level("block").rho),
              "rho2": float(census_level("block-group").rho), "d": 27}
    x = -np.random.default_rng(0).random(100_000) * 50.0
    out = np.empty_like(x)

    def exp_1e6():  # the exponential bound of bench_hierarchical: 10 x an in-cache 1e5
        for _ in range(10):
            np.exp(x, out=out)

    def point():
        p_correct_two_level(x2=1, **census)

    figures = {}
    for mode in ("numpy", "compiled"):
        previous = os.environ.get("DPRISK_KERNELS")
        os.environ["DPRISK_KERNELS"] = mode
        try:
            point()  # fill the caches (and load the compiled kernel)
            exp_1e6()
            figures[mode] = _alternate({"exp": exp_1e6, "point": point}, repeats)
        finally:
            if previous is None:
                del os.environ["DPRISK_KERNELS"]
            else:
                os.environ["DPRISK_KERNELS"] = previous
    (exp_wall, exp_cpu), (point_wall, point_cpu) = (figures["numpy"]["exp"],
                                                    figures["numpy"]["point"])
    (c_exp_wall, c_exp_cpu), (c_wall, c_cpu) = (figures["compiled"]["exp"],
                                                figures["compiled"]["point"])
    return {"exact_point_warm_s": point_wall, "exact_point_warm_cpu_s": point_cpu,
            "exp_1e6_s": exp_wall, "exp_1e6_cpu_s": exp_cpu,
            "ratio": point_wall / exp_wall, "cpu_ratio": point_cpu / exp_cpu,
            "exact_point_warm_compiled_s": c_wall, "compiled_ratio": c_wall / c_exp_wall,
            "compiled_cpu_ratio": c_cpu / c_exp_cpu, "target_ratio": EXACT_POINT_TARGET,
            "repeats": repeats, "met": point_cpu / exp_cpu <= EXACT_POINT_TARGET}


def print_exact_point(point: dict) -> None:
    """The exact-point row: measured, target, verdict."""
    print(f"exact P[correct] point, warm (numpy kernels), median of {point['repeats']} "
          f"alternating with 10^6 np.exp:\n"
          f"  CPU  {1e3 * point['exact_point_warm_cpu_s']:.3f} ms = {point['cpu_ratio']:.2f}x "
          f"10^6 np.exp ({1e3 * point['exp_1e6_cpu_s']:.3f} ms)  target <= "
          f"{point['target_ratio']:g}x  {verdict(point['cpu_ratio'], point['target_ratio'])}\n"
          f"  wall {1e3 * point['exact_point_warm_s']:.3f} ms = {point['ratio']:.2f}x "
          f"({1e3 * point['exp_1e6_s']:.3f} ms)\n"
          f"  compiled kernel: {1e3 * point['exact_point_warm_compiled_s']:.3f} ms wall = "
          f"{point['compiled_ratio']:.2f}x ({point['compiled_cpu_ratio']:.2f}x CPU)")


def run() -> dict:
    results = {"commands": commands(), "exact_point": exact_point()}
    base = results["commands"]["baseline_s"]
    print(f"whole process, medians of interleaved rounds; baseline {BASELINE}: {base:.3f} s "
          f"wall, {results['commands']['baseline_cpu_s']:.3f} s CPU; verdict on the CPU ratio")
    for name, row in results["commands"].items():
        if isinstance(row, dict):
            target = (f"{row['target_ratio']:g}x" if row["target_ratio"] is not None else
                      f"{row['target_seconds']:g} s = {row['judged_target_ratio']:g}x")
            print(f"  dprisk {name:<42} {row['seconds']:7.3f} s {row['ratio']:5.1f}x wall, "
                  f"{row['cpu_seconds']:6.3f} s {row['cpu_ratio']:5.1f}x CPU  target <= "
                  f"{target}  {verdict(row['cpu_ratio'], row['judged_target_ratio'])}")
    print_exact_point(results["exact_point"])
    return results


if __name__ == "__main__":
    if sys.argv[1:] == ["exact-point"]:
        print_exact_point(exact_point())
    else:
        run()
