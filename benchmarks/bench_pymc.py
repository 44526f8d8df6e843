"""PyMC with the exact Gibbs step vs PyMC's default steps on the Table 6 release.

Release D = (2, 1, -1), census rho1/rho2, d = 27, p = 1/2, m = 0, improper prior (paper
§4.3). One model is built and compiled; each method first runs a short warm-up (compiling
its step functions), then one timed posterior of 4 chains x 5000 draws (tune 1000, cores=1).
Reported per method: wall time of the timed ``pm.sample`` call, bulk ESS of X2 and of the
indicator 1[X1 = 1], ESS per second, and the Gibbs-step / default ratio of ESS/s (the exact
step is expected to win by >= 4x on X2). Also the wall time of one cold
``sample_posterior(method=...)`` call (model build + compile + sampling), and the CPU time
of PyMC's own steps with PyTensor's per-call input checks skipped
(:func:`dprisk.inference.two_level.sampling.trust_step_inputs`, as ``pymc_steps`` builds them)
against the same steps with the checks on, 2 x 3300 steps each through
:class:`dprisk.inference.mcmc.compiled_chain.CompiledChain`'s unfused loop
(``step.step(point)``), run alternately twice (the smaller time of each kept), with whether
their draws are equal; and likewise the CPU time of CompiledChain's fused loop
(:class:`dprisk.inference.mcmc.fused_steps.FusedSteps`, the report's path) against its unfused
one. Nothing is asserted.
``python benchmarks/bench_pymc.py``.
"""

from __future__ import annotations

import time

import numpy as np

from dprisk.inference.mcmc.compiled_chain import CompiledChain
from dprisk.inference.two_level.sampling import (
    chain_diagnostics,
    pymc_steps,
    sample_model,
    sample_posterior,
)
from dprisk.models.builders.two_level import build_two_level_model
from dprisk.validation.paper.two_level import TABLE3_RELEASE, table3_parameters

DRAWS, CHAINS, TUNE = 5000, 4, 1000
SEED = 20260401
METHODS = ("pymc-gibbs", "pymc")


def _timed_run(model, method: str, steps) -> dict:
    start = time.perf_counter()
    tree = sample_model(model, method=method, step=steps, draws=DRAWS, chains=CHAINS,
                        tune=TUNE, random_seed=SEED)
    seconds = time.perf_counter() - start
    post = tree["posterior"]
    ess_x2 = chain_diagnostics(post["X2"].values)["ess_bulk"]
    ess_x1 = chain_diagnostics(post["X1"].values, known=0)["ess_bulk"]
    return {
        "seconds": seconds,
        "ess_bulk_x2": ess_x2,
        "ess_bulk_x1": ess_x1,
        "ess_per_s_x2": ess_x2 / seconds,
        "ess_per_s_x1": ess_x1 / seconds,
    }


def _trusted_inputs_ratio(params: dict) -> dict:
    """CPU seconds of PyMC's own steps, input checks skipped vs on; the same draws?"""
    model = build_two_level_model(*TABLE3_RELEASE, **params)
    seconds = {True: [], False: []}
    draws = {}
    for trusted in (False, True, False, True):
        steps = pymc_steps(model, "pymc")
        chain = CompiledChain(model, steps)
        chain._fused = None  # the compiled functions are called only on the unfused path
        for step in steps:
            for function in getattr(step, "fs", ()):
                function.f.trust_input = trusted
        chain._values.f.trust_input = trusted
        start = time.process_time()
        draws[trusted] = chain.run(draws=3000, tune=300, chains=2, random_seed=SEED)
        seconds[trusted].append(time.process_time() - start)
    return {"cpu_s_trusted": min(seconds[True]), "cpu_s_checked": min(seconds[False]),
            "ratio (checked / trusted)": min(seconds[False]) / min(seconds[True]),
            "same_draws": float(all(np.array_equal(draws[True][v], draws[False][v])
                                    for v in ("X1", "X2")))}


def _fused_ratio(params: dict) -> dict:
    """CPU seconds of CompiledChain's fused loop vs its unfused one; the same draws?"""
    model = build_two_level_model(*TABLE3_RELEASE, **params)
    seconds = {True: [], False: []}
    draws = {}
    for fused in (False, True, False, True):
        chain = CompiledChain(model, pymc_steps(model, "pymc"))
        assert chain._fused is not None
        if not fused:
            chain._fused = None
        chain.run(draws=5, tune=0, random_seed=SEED)  # the jitted log density compiled
        start = time.process_time()
        draws[fused] = chain.run(draws=3000, tune=300, chains=2, random_seed=SEED)
        seconds[fused].append(time.process_time() - start)
    return {"cpu_s_fused": min(seconds[True]), "cpu_s_unfused": min(seconds[False]),
            "ratio (unfused / fused)": min(seconds[False]) / min(seconds[True]),
            "same_draws": float(all(np.array_equal(draws[True][v], draws[False][v])
                                    for v in ("X1", "X2")))}


def run() -> dict:
    params = table3_parameters()
    results = {"pymc steps, trusted inputs": _trusted_inputs_ratio(params),
               "pymc steps, fused loop": _fused_ratio(params)}
    for method in METHODS:
        start = time.perf_counter()
        sample_posterior(*TABLE3_RELEASE, **params, method=method, draws=DRAWS,
                         chains=CHAINS, tune=TUNE, random_seed=SEED)
        results[f"cold sample_posterior ({method})"] = {"seconds": time.perf_counter() - start}
    model = build_two_level_model(*TABLE3_RELEASE, **params)
    for method in METHODS:
        steps = pymc_steps(model, method)
        sample_model(model, method=method, step=steps, draws=200, chains=2, tune=50,
                     random_seed=SEED)  # warm-up
        results[method] = _timed_run(model, method, steps)
    gibbs, default = results["pymc-gibbs"], results["pymc"]
    results["ratio (gibbs step / default)"] = {
        "ess_per_s_x2": gibbs["ess_per_s_x2"] / default["ess_per_s_x2"],
        "ess_per_s_x1": gibbs["ess_per_s_x1"] / default["ess_per_s_x1"],
        "seconds": gibbs["seconds"] / default["seconds"],
    }
    for name, row in results.items():
        cells = ", ".join(f"{k} {v:,.3g}" for k, v in row.items())
        print(f"{name:<36} {cells}")
    return results


if __name__ == "__main__":
    run()
