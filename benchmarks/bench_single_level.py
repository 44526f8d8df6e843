"""Speed of the single-level computations behind Figures 1–3 and of the multi-level sums.

``run()`` times (best of ``repeat``) the data of Figures 1–3 (Figures 2–3: 500 rho x 5
priors), the S1.3 unique-levels marginal for ell = 1..6 Census levels (contour method) and
the exact P[correct] for ell = 6, and measures the throughput of the exact multi-level
enumeration to estimate what an exact ell = 6 sum would cost. Prints and returns seconds.
"""

from __future__ import annotations

import time

import numpy as np

from dprisk.inference.nested import unique_levels as ulv
from dprisk.inference.single_level import closed_form as sl
from dprisk.models.census.allocation import census_rhos
from dprisk.models.mechanism import discrete_gaussian as dg
from dprisk.validation.figures import single_level as figs

PRIORS = np.array([1 / 2, 1 / 5, 1 / 10, 1 / 50, 1 / 864])


def _best(func, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def _enumeration_pairs(n_levels: int, p_min: float) -> float:
    tail = sl.TAIL_RELATIVE * p_min / n_levels
    sizes = [2 * int(dg.support_halfwidth(r, tail)) + 1 for r in census_rhos(n_levels)]
    return float(np.prod(sizes, dtype=float))


def run(repeat: int = 3) -> dict:
    """Time the single-level figure data and the unique-levels sums; return seconds."""
    figs.figure1_data()  # warm imports and caches
    out = {
        "figure1_data_s": _best(figs.figure1_data, repeat),
        "figure2_data_500rho_x5p_s": _best(figs.figure2_data, repeat),
        "figure3_data_500rho_x5p_s": _best(figs.figure3_data, repeat),
    }
    out["figures_1_to_3_total_s"] = sum(out.values())
    out["unique_levels_contour_ell1to6_x5p_s"] = _best(
        lambda: [ulv.marginal_posterior_unique_levels(census_rhos(n), PRIORS, method="contour")
                 for n in range(1, 7)], repeat)
    out["p_correct_unique_levels_ell6_x5p_s"] = _best(
        lambda: ulv.p_correct_unique_levels(census_rhos(6), PRIORS), repeat)
    ell3 = _best(lambda: ulv.marginal_posterior_unique_levels(census_rhos(3), PRIORS,
                                                             method="enumerate"), repeat)
    pairs3 = PRIORS.size * _enumeration_pairs(3, PRIORS.min())  # one grid, five priors
    out["unique_levels_enumerate_ell3_x5p_s"] = ell3
    out["enumerate_pairs_per_s"] = pairs3 / ell3
    out["enumerate_ell6_pairs_per_prior"] = _enumeration_pairs(6, PRIORS.min())
    out["enumerate_ell6_estimated_s_per_prior"] = (
        out["enumerate_ell6_pairs_per_prior"] / out["enumerate_pairs_per_s"])
    for key, value in out.items():
        print(f"{key:45s} {value:.4g}")
    return out


if __name__ == "__main__":
    run()
