"""Answers at the speed of a conversation (issue 23): budgets, unknown others, the exact point.

Each figure is a ratio against a baseline measured in the same run, as in
``bench_startup``:

* whole-process commands (the ``dprisk`` console script in a new process, output
  discarded), interleaved with the baseline ``python -c "import numpy, scipy"`` over
  ``ROUNDS`` rounds, medians: the single-level budget search (target <= 5x the baseline, the
  issue's 0.5 s), ``marginal --unknown-others 10000`` (target <= 1 s, about 10x), and the
  two-level and whole-Census budget searches (target <= 2 s, about 20x; ``ROUNDS`` rounds
  too since their grid sums, ``inference/privacy/budget_sums.py``, brought them from tens of
  seconds to about one);
* the exact two-level P[correct] point, warm (caches filled; the default numpy kernels, which
  a single point uses, and beside them the compiled kernel, ``DPRISK_KERNELS=compiled``), against
  the time of 10^6 ``np.exp`` in this process (10x the median of ``np.exp`` on an in-cache
  array of 10^5, as ``bench_hierarchical``'s exponential bound; target <= 1.1x).

The accounting cache is warmed by a first untimed run of each command (``epsilon_cks`` of
the answer is cached on disk; its first computation is the accounting library's, not the
search's). ``python benchmarks/bench_conversation.py``.
"""

from __future__ import annotations

import os
import statistics

import numpy as np
from timing import BASELINE, baseline_seconds, dprisk_command, median_seconds, process_seconds

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


def commands(selected=None) -> dict:
    """Whole-process seconds of each command and the baseline, interleaved rounds."""
    dprisk = dprisk_command()
    chosen = {k: v for k, v in COMMANDS.items() if selected is None or k in selected}
    for argv, *_ in chosen.values():  # warm the accounting cache and compiled kernels
        process_seconds(dprisk + argv)
    times = {name: [] for name in [BASELINE, *chosen]}
    for round_ in range(ROUNDS):
        times[BASELINE].append(baseline_seconds())
        for name, (argv, _, _, rounds) in chosen.items():
            if round_ < rounds:
                times[name].append(process_seconds(dprisk + argv))
    base = statistics.median(times[BASELINE])
    out = {"baseline_s": base}
    for name, (_, ratio_target, seconds_target, _) in chosen.items():
        seconds = statistics.median(times[name])
        out[name] = {"seconds": seconds, "ratio": seconds / base,
                     "target_ratio": ratio_target, "target_seconds": seconds_target}
    return out


def exact_point() -> dict:
    """Warm exact two-level P[correct] at the Census block/block group against 1e6 np.exp."""
    from dprisk.inference.studies.p_correct import p_correct_hierarchical
    from dprisk.models.census.allocation import census_level

    census = {"rho1": float(census_level("block").rho),
              "rho2": float(census_level("block-group").rho), "d": 27}
    # the default kernels first (numpy: a single point does not pay for loading numba)
    p_correct_hierarchical(x2=1, **census)  # fill the caches
    point = median_seconds(lambda: p_correct_hierarchical(x2=1, **census), REPEATS)
    os.environ["DPRISK_KERNELS"] = "compiled"
    try:
        p_correct_hierarchical(x2=1, **census)  # load the compiled kernel
        compiled = median_seconds(lambda: p_correct_hierarchical(x2=1, **census), REPEATS)
    finally:
        del os.environ["DPRISK_KERNELS"]
    # the exponential bound of bench_hierarchical: an in-cache array of 1e5, scaled to 1e6
    x = -np.random.default_rng(0).random(100_000) * 50.0
    out = np.empty_like(x)
    exp = 10.0 * median_seconds(lambda: np.exp(x, out=out), repeats=200)
    return {"exact_point_warm_s": point, "exact_point_warm_compiled_s": compiled,
            "exp_1e6_s": exp, "ratio": point / exp, "compiled_ratio": compiled / exp,
            "target_ratio": EXACT_POINT_TARGET}


def run() -> dict:
    results = {"commands": commands(), "exact_point": exact_point()}
    base = results["commands"]["baseline_s"]
    print(f"whole process, medians of interleaved rounds; baseline {BASELINE}: {base:.3f} s")
    for name, row in results["commands"].items():
        if isinstance(row, dict):
            print(f"  dprisk {name:<42} {row['seconds']:7.3f} s  {row['ratio']:5.1f}x")
    point = results["exact_point"]
    print(f"exact P[correct] point, warm: {1e3 * point['exact_point_warm_s']:.3f} ms = "
          f"{point['ratio']:.2f}x 10^6 np.exp ({1e3 * point['exp_1e6_s']:.3f} ms); compiled "
          f"kernel {1e3 * point['exact_point_warm_compiled_s']:.3f} ms = "
          f"{point['compiled_ratio']:.2f}x")
    return results


if __name__ == "__main__":
    run()
