"""Speed of the two-level computations: exact enumeration and the exact Gibbs sampler.

Census rho1 (block), rho2 (block group), d = 27, improper prior unless stated. Releases D
are drawn from the true mechanism at (x1, x2, y1) = (1, 1, 0) (paper §4.3). Reports

* exact: the first (cold) call in this process; then releases per second of
  ``posterior_x1`` (no X2 tables; on 1e6 releases the fused compiled kernel of
  ``inference.fused_kernels`` is used, its numpy path is timed too, forced with
  ``DPRISK_KERNELS=numpy``) and of ``exact_posterior`` (with the X2 tables, numpy), per
  prior, and, like for like, the ratio of ``exact_posterior`` on a batch to a Python loop
  calling ``exact_posterior`` one release at a time (both build the same outputs); the
  first call of the compiled kernel in a new process (numba import and cache load, with
  10 releases) is timed separately;
* Gibbs: chain-sweeps per second of ``gibbs_sample`` for the fixed release (2, 1, -1) at
  several chain counts, for 1000 releases at once, and the ratio to a plain per-chain,
  per-sweep Python loop over ``ExactConditionals``' single-state kernels;
* the exponential bound: numpy ``exp`` per second on one core over ``EXP_PER_RELEASE``, and
  its ratio to the ``posterior_x1`` rate measured in the same run (target: within 4x).

Every figure is the median of ``REPEATS`` warm runs, the same number on both sides of each
ratio; nothing is asserted. ``python benchmarks/bench_hierarchical.py``.
"""

from __future__ import annotations

import os

import numpy as np
from timing import cold_in_new_process, cold_seconds, median_seconds

from dprisk.inference.two_level.exact import exact_posterior, posterior_x1
from dprisk.inference.two_level.gibbs import ExactConditionals, gibbs_sample
from dprisk.models.census.allocation import census_level
from dprisk.models.mechanism.dg_sampling import sample, sample_sum

CENSUS = {
    "rho1": census_level("block").rho,
    "rho2": census_level("block-group").rho,
    "d": 27,
}
N_RELEASES = 1_000_000
N_RELEASES_SLOW_PRIOR = 200_000
N_LOOP = 300
CHAIN_COUNTS = (4, 100, 10_000)
SWEEPS_TOTAL = 4_000_000
LOOP_CHAINS, LOOP_SWEEPS = 4, 2_000
REPEATS = 3
SEED = 20260401
PRIORS = ("improper", "truncated:10", "point:1", "models/examples/negative_binomial_prior.py:prior")


def _median(func, repeats: int = REPEATS) -> float:
    return median_seconds(func, repeats)


def _releases(n: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x1s = sample(1, CENSUS["rho1"], size=n, random_seed=rng)
    x2s = sample(1, CENSUS["rho2"], size=n, random_seed=rng)
    y1s = sample_sum(CENSUS["d"], CENSUS["rho1"], size=n, random_seed=rng)
    return x1s, x2s, y1s


def bench_exact(rng) -> dict:
    results = {}
    for prior in PRIORS:
        n = N_RELEASES if prior == "improper" else N_RELEASES_SLOW_PRIOR
        x1s, x2s, y1s = _releases(n, rng)
        cold = cold_seconds(  # compile/load the prior, first tables
            lambda: posterior_x1(x1s[:10], x2s[:10], y1s[:10], **CENSUS, prior=prior))
        posterior_x1(x1s, x2s, y1s, **CENSUS, prior=prior)  # warm: loads the compiled kernel
        fast = n / _median(lambda: posterior_x1(x1s, x2s, y1s, **CENSUS, prior=prior))
        os.environ["DPRISK_KERNELS"] = "numpy"
        try:
            m = n // 10
            numpy_rate = m / _median(
                lambda: posterior_x1(x1s[:m], x2s[:m], y1s[:m], **CENSUS, prior=prior))
        finally:
            del os.environ["DPRISK_KERNELS"]
        m = n // 10
        tables = m / _median(
            lambda: exact_posterior(x1s[:m], x2s[:m], y1s[:m], **CENSUS, prior=prior)
        )
        loop = N_LOOP / _median(
            lambda: [
                exact_posterior(x1s[i], x2s[i], y1s[i], **CENSUS, prior=prior)
                for i in range(N_LOOP)
            ]
        )
        results[prior] = {
            "cold_first_call_s": cold,
            "posterior_x1_per_s": fast,
            "posterior_x1_numpy_per_s": numpy_rate,
            "exact_posterior_per_s": tables,
            "python_loop_exact_posterior_per_s": loop,
            "exact_posterior_batch_over_loop": tables / loop,
        }
    return results


def _python_loop(cond: ExactConditionals, rng) -> None:
    """The plain sampler: for each chain, for each sweep, X1 | X2 then X2 | X1 (scalars)."""
    for _ in range(LOOP_CHAINS):
        k1 = cond.feasible_x1[-1]
        k2 = int(cond.x2_given_x1(k1, rng.random()))
        for _ in range(LOOP_SWEEPS):
            k1 = int(cond.x1_given_x2(k2, rng.random()))
            k2 = int(cond.x2_given_x1(k1, rng.random()))


def bench_gibbs(rng) -> dict:
    release = (2, 1, -1)
    results = {}
    for chains in CHAIN_COUNTS:
        draws = SWEEPS_TOTAL // chains
        seconds = _median(
            lambda chains=chains, draws=draws: gibbs_sample(
                *release, **CENSUS, draws=draws, chains=chains, random_seed=rng
            )
        )
        results[f"chains={chains}"] = {"chain_sweeps_per_s": SWEEPS_TOTAL / seconds}
    x1s, x2s, y1s = _releases(1000, rng)
    seconds = _median(
        lambda: gibbs_sample(x1s, x2s, y1s, **CENSUS, draws=1000, chains=4, random_seed=rng)
    )
    results["1000 releases x 4 chains"] = {"chain_sweeps_per_s": 4e6 / seconds}
    cond = ExactConditionals(*release, **CENSUS)
    loop_seconds = _median(lambda: _python_loop(cond, rng))
    loop_rate = LOOP_CHAINS * LOOP_SWEEPS / loop_seconds
    results["python loop (ExactConditionals)"] = {"chain_sweeps_per_s": loop_rate}
    for row in results.values():
        row["over_python_loop"] = row["chain_sweeps_per_s"] / loop_rate
    return results


#: Exponentials per two-level release of the exact posterior (the issue's count): the bound.
EXP_PER_RELEASE = 58


def exp_bound() -> dict:
    """numpy ``exp`` per second on one core (in-cache array) and the releases/s it bounds."""
    x = -np.random.default_rng(0).random(100_000) * 50.0
    out = np.empty_like(x)
    rate = x.size / _median(lambda: np.exp(x, out=out), repeats=200)
    return {"exp_per_s": rate, "releases_per_s_bound": rate / EXP_PER_RELEASE}


def compiled_cold() -> dict:
    """First compiled call in a new process (10 releases): numba import plus cache load."""
    setup = ("import os\nos.environ['DPRISK_KERNELS'] = 'compiled'\n"
             "from dprisk.inference.two_level.exact import posterior_x1")
    call = "posterior_x1([1] * 10, [1] * 10, [0] * 10, rho1=0.1, rho2=0.25, d=27)"
    return {"compiled_first_call_new_process_s": cold_in_new_process(setup, call)}


def run() -> dict:
    rng = np.random.default_rng(SEED)
    results = {"exact": bench_exact(rng), "gibbs": bench_gibbs(rng), "bound": exp_bound(),
               "cold": compiled_cold()}
    rate = results["exact"]["improper"]["posterior_x1_per_s"]
    results["bound"]["bound_over_posterior_x1"] = results["bound"]["releases_per_s_bound"] / rate
    _print(results)
    return results


def _print(results: dict) -> None:
    print("exact enumeration (releases/s, warm medians); ratio = exact_posterior batch / loop")
    print(f"{'prior':>52} {'cold s':>7} {'posterior_x1':>13} {'(numpy)':>9} {'with X2':>10} "
          f"{'loop':>8} {'ratio':>7}")
    for prior, row in results["exact"].items():
        print(
            f"{prior:>52} {row['cold_first_call_s']:7.3f} {row['posterior_x1_per_s']:13.3g} "
            f"{row['posterior_x1_numpy_per_s']:9.3g} "
            f"{row['exact_posterior_per_s']:10.3g} "
            f"{row['python_loop_exact_posterior_per_s']:8.3g} "
            f"{row['exact_posterior_batch_over_loop']:7.0f}"
        )
    bound = results["bound"]
    print(f"exponential bound: numpy exp {bound['exp_per_s']:.3g}/s on one core, "
          f"{EXP_PER_RELEASE} per release: {bound['releases_per_s_bound']:.3g} releases/s; "
          f"bound / posterior_x1 = {bound['bound_over_posterior_x1']:.2f} (target <= 4)")
    print(f"compiled kernel, first call in a new process (numba import + cache load): "
          f"{results['cold']['compiled_first_call_new_process_s']:.3f} s")
    print("Gibbs, release (2, 1, -1) (chain-sweeps/s)")
    for name, row in results["gibbs"].items():
        print(
            f"{name:>34} {row['chain_sweeps_per_s']:12.3g}  "
            f"x{row['over_python_loop']:.0f} vs python loop"
        )


if __name__ == "__main__":
    run()
