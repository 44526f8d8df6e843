"""Speed of the h-level exact posterior (forward-backward) and of its Gibbs sampler.

Census GVHR rhos from block up to the US (``census_rhos(h)``) and sibling counts chosen from
the 2020 Census geography (about 8.1M blocks, 242k block groups, 85k tracts, 3,143 counties,
50 states + DC): d2 = 27 other blocks in the block group (the paper's §4.3 value), d3 = 2
other block groups in the tract (~2.8 per tract), d4 = 26 other tracts in the county (~27
per county), d5 = 61 other counties in the state (~62 per state), d6 = 50 other states (and
DC) in the US. Releases D are drawn from the true mechanism (with the exact sum of the
siblings' noises) at true counts x = (1, 3, 8, 210, 13000, 800000), the target present.

Reports

* exact: ms per release at h = 6 one release per call (target < 10 ms) and vectorised over
  ``N_BATCH`` releases; ms per release and pairwise cells for h = 2..6 (linear in h);
* Gibbs (h = 6, one release): ESS per second of the indicator 1[X1 = m+1] (ArviZ bulk ESS)
  at 4 and 256 chains, the time it needs for MCSE(P[X1 = m+1 | D]) <= 1e-3, i.e.
  ESS = P(1 - P) / 1e-6, and its ratio to one exact posterior. The exact posterior is accurate
  to ~1e-12, so "equal accuracy" flatters the sampler.

Medians of ``REPEATS`` timings (the same count on both sides of a ratio); nothing is
asserted. ``python benchmarks/bench_multilevel.py``.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np
from timing import median_seconds

from dprisk.inference.nested.posterior import exact_posterior, gibbs_sample
from dprisk.models.census.allocation import census_rhos
from dprisk.models.mechanism.dg_sampling import sample, sample_sum

SIBLINGS = (27, 2, 26, 61, 50)
TRUE_COUNTS = (1, 3, 8, 210, 13_000, 800_000)
N_BATCH = 2_000
N_LOOP = 50
GIBBS_DRAWS = 5_000
CHAIN_COUNTS = (4, 256)
TARGET_MCSE = 1e-3
REPEATS = 3
SEED = 20261121


def _best(func, repeats: int = REPEATS) -> float:
    """Median of ``repeats`` warm runs (the same count on both sides of each ratio)."""
    return median_seconds(func, repeats)


def releases(h: int, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``n`` releases of the bottom ``h`` levels: x* (n, h) and y* (n, h - 1)."""
    rhos = census_rhos(h)
    truth = np.array(TRUE_COUNTS[:h])
    x_stars = np.stack(
        [sample(int(truth[i]), rhos[i], size=n, random_seed=rng) for i in range(h)], -1
    )
    y_true = np.diff(truth)
    y_stars = np.stack(
        [y_true[i] + sample_sum(SIBLINGS[i], rhos[i], size=n, random_seed=rng)
         for i in range(h - 1)],
        -1,
    )
    return x_stars, y_stars


def bench_exact(rng) -> dict:
    out = {}
    for h in range(2, 7):
        kwargs = {"rhos": census_rhos(h), "siblings": SIBLINGS[: h - 1]}
        xs, ys = releases(h, N_BATCH, rng)
        exact_posterior(xs[0], ys[0], **kwargs)  # warm caches
        batch = _best(lambda xs=xs, ys=ys, kwargs=kwargs: exact_posterior(xs, ys, **kwargs))
        loop = _best(
            lambda xs=xs, ys=ys, kwargs=kwargs: [
                exact_posterior(xs[i], ys[i], **kwargs) for i in range(N_LOOP)
            ]
        )
        cells = exact_posterior(xs[:200], ys[:200], **kwargs).pairwise_cells
        out[f"h{h}"] = {
            "ms_per_release_one_per_call": 1e3 * loop / N_LOOP,
            "ms_per_release_vectorised": 1e3 * batch / N_BATCH,
            "pairwise_cells_median": float(np.median(cells)),
        }
    return out


def bench_gibbs(rng) -> dict:
    h = 6
    kwargs = {"rhos": census_rhos(h), "siblings": SIBLINGS}
    xs, ys = releases(h, 1, rng)
    x_stars, y_stars = xs[0], ys[0]
    exact_s = _best(lambda: exact_posterior(x_stars, y_stars, **kwargs), repeats=10)
    prob = float(exact_posterior(x_stars, y_stars, **kwargs).prob_x1)
    ess_needed = prob * (1 - prob) / TARGET_MCSE**2
    out = {
        "release": {"x_stars": x_stars.tolist(), "y_stars": y_stars.tolist()},
        "exact_posterior": prob,
        "exact_ms": 1e3 * exact_s,
        "ess_needed_for_mcse_1e-3": ess_needed,
    }
    for chains in CHAIN_COUNTS:
        draws = max(GIBBS_DRAWS * 4 // chains, 200)
        start = time.perf_counter()
        samples = gibbs_sample(x_stars, y_stars, **kwargs, draws=draws, chains=chains, tune=100,
                               random_seed=rng)
        elapsed = time.perf_counter() - start
        indicator = samples.target.astype(float)
        ess = float(az.ess(indicator))
        seconds_needed = ess_needed / (ess / elapsed)
        out[f"chains{chains}"] = {
            "draws_per_chain": draws,
            "seconds": elapsed,
            "estimate": float(indicator.mean()),
            "mcse": float(az.mcse(indicator)),
            "ess_bulk": ess,
            "ess_per_second": ess / elapsed,
            "seconds_for_mcse_1e-3": seconds_needed,
            "ratio_gibbs_to_exact": seconds_needed / exact_s,
        }
    return out


def run() -> dict:
    rng = np.random.default_rng(SEED)
    results = {"exact": bench_exact(rng), "gibbs": bench_gibbs(rng)}
    for h, row in results["exact"].items():
        print(
            f"exact {h}: {row['ms_per_release_one_per_call']:.2f} ms/release (one per call), "
            f"{row['ms_per_release_vectorised']:.3f} ms/release (batch of {N_BATCH}), "
            f"{row['pairwise_cells_median']:.0f} pairwise cells"
        )
    gibbs = results["gibbs"]
    print(f"h6 release {gibbs['release']}: P[X1 = m+1 | D] = {gibbs['exact_posterior']:.4f}, "
          f"exact {gibbs['exact_ms']:.2f} ms")
    for chains in CHAIN_COUNTS:
        row = gibbs[f"chains{chains}"]
        print(
            f"gibbs {chains} chains: {row['ess_per_second']:.0f} ESS/s, "
            f"{row['seconds_for_mcse_1e-3']:.1f} s for MCSE 1e-3 "
            f"= {row['ratio_gibbs_to_exact']:.0f} x the exact posterior"
        )
    return results


if __name__ == "__main__":
    run()
