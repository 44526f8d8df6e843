"""Speed of the K-cell product (issue 21 §2): solvers, rounding, and the ED 28-21 study.

``run()`` measures, with CPU seconds (``time.process_time``, the figure to read on a loaded
machine) beside the wall clock:

* the least-squares step of one parent's children, per solve: the exact projection
  (``projection``), SciPy's SLSQP and trust-constr, on a separable case (4 children x 16
  cells) and with the block-total invariant (3 x 8, SLSQP and trust-constr only); ratios to
  the projection / to SLSQP in the same run (these decided the solver: SLSQP for the general
  path; the projection whenever it applies);
* the rounding, per solve: HiGHS's 0-1 program against the vectorised largest-remainder rule
  at the ED 28-21 block level (2 children x 864 cells) and at 4 x 16;
* the Monte Carlo K-cell study of ED 28-21 (exact tables, exact P[MAP] of both releases, and
  ``RELEASES`` simulated releases through the top-down product): target under 2 minutes.

Prints and returns seconds and ratios.
"""

from __future__ import annotations

import time

import numpy as np

from dprisk.inference.product import histogram_tree as ht
from dprisk.validation.figures.product_kcell import kcell_data

TARGET_S = 120.0
RELEASES = 30_000
SEED = 20261127


def _per_solve(func, repeats: int) -> tuple[float, float]:
    """CPU and wall seconds per call, over ``repeats`` calls (after one warm-up call)."""
    func()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(repeats):
        func()
    return (time.process_time() - cpu) / repeats, (time.perf_counter() - wall) / repeats


def run() -> dict:
    """Time solvers, rounding and the ED 28-21 study (module notes)."""
    rng = np.random.default_rng(SEED)
    out: dict = {"target_s": TARGET_S, "releases": RELEASES}
    truth = rng.integers(0, 5, size=(4, 16))
    noisy = truth + rng.integers(-3, 4, size=truth.shape)
    parent = truth.sum(axis=0)
    solvers = {}
    for method, repeats in (("projection", 200), ("slsqp", 10), ("trust-constr", 2)):
        cpu, wall = _per_solve(lambda m=method: ht.solve_children(noisy, parent, method=m),
                               repeats)
        solvers[method] = {"cpu_s": cpu, "wall_s": wall}
    for method in ("slsqp", "trust-constr"):
        solvers[method]["cpu_ratio_to_projection"] = (solvers[method]["cpu_s"]
                                                      / solvers["projection"]["cpu_s"])
    out["separable_4x16"] = solvers
    small = truth[:3, :8]
    x_small = noisy[:3, :8]
    totals = {}
    for method, repeats in (("slsqp", 10), ("trust-constr", 2)):
        cpu, wall = _per_solve(lambda m=method: ht.solve_children(
            x_small, small.sum(axis=0), totals=small.sum(axis=1), method=m), repeats)
        totals[method] = {"cpu_s": cpu, "wall_s": wall}
    totals["trust-constr"]["cpu_ratio_to_slsqp"] = (totals["trust-constr"]["cpu_s"]
                                                    / totals["slsqp"]["cpu_s"])
    out["totals_3x8"] = totals
    for name, shape in (("rounding_2x864", (2, 864)), ("rounding_4x16", (4, 16))):
        x = rng.integers(-2, 6, size=shape)
        p = np.maximum(x, 0).sum(axis=0) + rng.integers(0, 3, size=shape[1])
        z = ht.solve_children(x, p)
        row = {}
        for method, repeats in (("milp", 5), ("largest-remainder", 50)):
            cpu, wall = _per_solve(lambda m=method: ht.round_children(z, p, method=m,
                                                                      random_seed=rng), repeats)
            row[method] = {"cpu_s": cpu, "wall_s": wall}
        row["milp_cpu_ratio"] = row["milp"]["cpu_s"] / row["largest-remainder"]["cpu_s"]
        out[name] = row
    cpu, wall = time.process_time(), time.perf_counter()
    data = kcell_data(RELEASES, SEED)
    out["ed28_21"] = {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall,
                      "exact": data.exact.values.tolist(),
                      "monte_carlo": data.monte_carlo.values.tolist(),
                      "mcse": data.mcse.values.tolist(), "seed": SEED}
    for key in ("separable_4x16", "totals_3x8"):
        print(key + ": " + ", ".join(f"{m} {r['cpu_s'] * 1e3:.2f} ms CPU"
                                     for m, r in out[key].items()))
    for key in ("rounding_2x864", "rounding_4x16"):
        row = out[key]
        print(f"{key}: MILP {row['milp']['cpu_s'] * 1e3:.2f} ms CPU, largest remainder "
              f"{row['largest-remainder']['cpu_s'] * 1e3:.3f} ms CPU "
              f"({row['milp_cpu_ratio']:.0f}x)")
    ed = out["ed28_21"]
    print(f"ED 28-21 K-cell study, {RELEASES} releases: {ed['wall_s']:.1f} s wall, "
          f"{ed['cpu_s']:.1f} s CPU ({ed['wall_s'] / TARGET_S:.2f}x the {TARGET_S:g} s target); "
          f"P[MAP] product {ed['monte_carlo'][0]:.5f} ± {ed['mcse'][0]:.1g} (exact "
          f"{ed['exact'][0]:.5f}), noisy {ed['monte_carlo'][1]:.5f} ± {ed['mcse'][1]:.1g} "
          f"(exact {ed['exact'][1]:.5f})")
    return out


if __name__ == "__main__":
    run()
