"""Speed of the K-cell (whole record) adversary at the 2020 size: K = 2,016 cells.

``run()`` times (best of ``repeat``):

* the exact design measures (P[MAP = t] and the expected posterior of the true cell) at the
  Census block rho, uniform prior;
* the exact posterior of every cell for ``n_releases`` simulated releases (1e5 by default),
  simulation included, in chunks, keeping the true cell's posterior and the MAP cell;
* the 2020 strategy (eleven block queries, conditional Monte Carlo of P[MAP]) at the same
  number of releases.

Prints and returns seconds.
"""

from __future__ import annotations

import numpy as np
from timing import best_seconds

from dprisk.inference.attribute.design import expected_true_posterior, p_map_correct
from dprisk.inference.attribute.posterior import cell_posterior, sample_releases
from dprisk.inference.attribute.strategy import census_block_design, strategy_measures
from dprisk.models.census.allocation import census_level

K = 2016
CHUNK = 1000


def _releases(n_releases: int, rho: float) -> float:
    known = np.zeros(K, dtype=np.int64)
    rng = np.random.default_rng(1)
    hits = 0
    for lo in range(0, n_releases, CHUNK):
        releases = sample_releases(known, rho, 7, min(CHUNK, n_releases - lo), random_seed=rng)
        post = cell_posterior(releases, known, rho)
        hits += int(np.sum(post.map_cell == 7))
    return hits / n_releases


def run(repeat: int = 1, n_releases: int = 100_000) -> dict:
    """Time the design measures, the release posteriors and the strategy; return seconds."""
    rho = census_level("block").rho
    out = {
        "design_exact_p_map_and_mean_K2016_s": best_seconds(
            lambda: (p_map_correct(rho, K), expected_true_posterior(rho, K)), max(repeat, 3)),
        f"posterior_all_cells_K2016_x{n_releases}_releases_s": best_seconds(
            lambda: _releases(n_releases, rho), repeat),
    }
    design = census_block_design()
    out[f"strategy_eleven_queries_K2016_x{n_releases}_releases_s"] = best_seconds(
        lambda: strategy_measures(design, 7, n_releases, random_seed=2), repeat)
    for key, value in out.items():
        print(f"{key:<60} {value:10.3f}")
    return out


if __name__ == "__main__":
    run()
