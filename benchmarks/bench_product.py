"""Speed of the exact product risk (issue 21): the target is d <= 3 under 1 s.

``run()`` measures, at the Census block and block-group rho (others 3 each, m 0, p 1/2):

* ``product_risk`` for d = 1, 2, 3: the first call in this process (cold) and the median of
  3 warm calls, each as a ratio to the 1 s target; also the warm call's CPU seconds
  (``time.process_time``, the figure to read on a loaded machine: on the shared 2-core
  development machine at load 11 the wall clock was 4.5x the CPU time);
* like for like at d = 1: the enumeration over block-noise differences (what
  :func:`dprisk.inference.product.exact.product_table` does) against a direct enumeration of
  every noise vector ``(e0, e1)`` with the same projection and rounding kernels and the same
  parent law (the same table of product values and likelihoods); medians of 3 each.

* ``--method mc`` (:func:`dprisk.inference.product.monte_carlo_risk.product_risk_mc`): CPU
  seconds per 1000 releases per truth at d = 1, 3, 8, 20, and the work-limit estimate
  (``mc_steps`` x 4.5 ns) as a ratio to that CPU time (>= 1: the estimate errs long).

Prints and returns seconds and ratios.
"""

from __future__ import annotations

import time

import numpy as np
from timing import cold_seconds, median_seconds

from dprisk.inference.product import exact
from dprisk.inference.product.projection_kernels import project_floor, rounding_outcomes
from dprisk.models.census.allocation import census_level
from dprisk.models.mechanism.discrete_gaussian import support_halfwidth_kernel

TARGET_S = 1.0


def _direct_table(rho1: float, rho2: float, y: int) -> int:
    """The d = 1 product table by enumerating every (e0, e1) (the baseline)."""
    k0 = int(support_halfwidth_kernel(rho1, exact.TAIL_MASS / 4))
    e = np.arange(-k0, k0 + 1)
    e0, e1 = (a.ravel() for a in np.meshgrid(e, e, indexing="ij"))
    phi = np.exp(-rho1 * e.astype(float) ** 2)
    phi /= phi.sum()
    w = np.outer(phi, phi).ravel()
    values, parent, _ = exact.parent_law(rho2, (y, y + 1), "none", exact.TAIL_MASS / 2)
    n_out = 0
    for h, k in enumerate((0, 1)):
        blocks = np.column_stack([k + e0, y + e1]).astype(np.int64)
        for j, s in enumerate(values.tolist()):
            rows, masks, prob = rounding_outcomes(*project_floor(blocks, s))
            first = project_floor(blocks, s)[0][rows, 0] + (masks & 1)
            lik = np.bincount(first, weights=w[rows] * prob * parent[h, j], minlength=s + 1)
            n_out += int(np.count_nonzero(lik))
    return n_out


def run(repeat: int = 3) -> dict:
    """Time the exact product risk for d = 1..3 and the d = 1 like-for-like ratio."""
    rho1, rho2 = census_level("block").rho, census_level("block-group").rho
    out: dict = {"target_s": TARGET_S}
    for d in (1, 2, 3):
        def call(d=d):
            return exact.product_risk(rho1, rho2, [3] * d)
        cold = cold_seconds(call)
        warm = median_seconds(call, repeat)
        start = time.process_time()
        call()
        cpu = time.process_time() - start
        out[f"d{d}"] = {"cold_s": cold, "warm_s": warm, "warm_cpu_s": cpu,
                        "ratio_to_target": warm / TARGET_S}
        print(f"product_risk d = {d}: cold {cold:.3f} s, warm {warm:.3f} s, CPU {cpu:.3f} s "
              f"({warm / TARGET_S:.2f}x the {TARGET_S:g} s target)")
    fast = median_seconds(lambda: exact.product_table(rho1, rho2, [3]), repeat)
    direct = median_seconds(lambda: _direct_table(rho1, rho2, 3), repeat)
    out["d1_table"] = {"differences_s": fast, "direct_s": direct, "speedup": direct / fast}
    print(f"d = 1 table: differences {fast * 1e3:.1f} ms, every noise vector "
          f"{direct * 1e3:.1f} ms ({direct / fast:.1f}x)")
    out["mc"] = _monte_carlo(rho1, rho2)
    return out


def _monte_carlo(rho1: float, rho2: float, datasets: int = 1000) -> dict:
    """``--method mc``: CPU seconds per 1000 releases per truth at d = 1, 3, 8, 20, and the
    work-limit estimate as a ratio to that CPU time (it should err long: ratio >= 1)."""
    from dprisk.inference.product.monte_carlo_risk import mc_steps, product_risk_mc
    from dprisk.runtime.work_limit import STEP_SECONDS

    out = {}
    for d in (1, 3, 8, 20):
        start = time.process_time()
        product_risk_mc(rho1, rho2, [3] * d, datasets=datasets, random_seed=1)
        cpu = time.process_time() - start
        estimate = mc_steps(rho1, d, datasets) * STEP_SECONDS
        out[f"d{d}"] = {"cpu_s_per_1000": cpu * 1000 / datasets,
                        "estimate_over_cpu": estimate / cpu}
        print(f"product_risk_mc d = {d}: {cpu * 1000 / datasets:.3f} s CPU per 1000 releases "
              f"per truth; work estimate {estimate / cpu:.2f}x the CPU time")
    return out


if __name__ == "__main__":
    run()
