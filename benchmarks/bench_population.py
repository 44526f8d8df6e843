"""Every person of a population (issue 34, part 4): a 1,000,000-person state end to end.

* **End to end.** ``dprisk population synth --persons 1000000``, ``population measure``
  (the table layout), then ``population risk --adversary informed|outsider --json`` from the
  persons file, each in its own process: wall seconds, CPU seconds and peak resident memory
  (``os.wait4``, by :func:`timing.run_with_peak`: the command's own peak). Target: each
  ``risk`` run <= 60 s on the 2-core machine, peak <= 2 GB.
* **Kernel throughput as a ratio to numpy's exp** (one core, the same run): the outsider's
  Poisson-Gaussian sums (numpy windows and the compiled walk) in terms per second (the terms
  of the numpy path's windows, both deltas, for both paths: the same work), and the
  informed per-person update in persons per second (each the best of three calls), each
  divided by ``np.exp`` elements per second on an in-cache array; with the name of the kernel
  numpy dispatched for float64 ``exp`` on this CPU (``numpy.lib.introspect.opt_func_info``:
  ``X86_V4`` with AVX-512, which runs ``exp`` 6-10 times faster than ``X86_V3``'s AVX2 while
  the population kernels run at the same speed on both), since ``run.py``'s floors for the
  ratios are recorded per exp kernel.
* **National projection.** 309 million persons in 6.2 million blocks: the per-partition CPU
  seconds per person measured on the state (``partition_risk``, whole partitions, after a
  warm-up that loads the compiled kernels), times 309e6, over 2 cores; checked on a sample:
  the per-person cost of partitions a quarter the size must agree (the cost is linear in
  persons), and the ratio is printed; and the same from the end-to-end run's CPU seconds
  (reading the files included).

``python benchmarks/bench_population.py`` (about 5 minutes on the 2-core machine). Nothing is
asserted.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from timing import best_seconds, dprisk_command, run_with_peak

PERSONS = 1_000_000
NATIONAL_PERSONS = 309_000_000
NATIONAL_BLOCKS = 6_200_000
TARGET_SECONDS = 60.0
TARGET_BYTES = 2 * 1024**3


def _timed(argv: list[str]) -> dict:
    """Run ``argv``; its wall and CPU seconds, peak RSS (bytes) and stdout.

    CPU and peak from :func:`timing.run_with_peak` (the command's own peak, not this
    process's, which a command started from here would report).
    """
    start = time.perf_counter()
    done, cpu, peak = run_with_peak(argv, capture_output=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed: {done.stderr.decode()[-500:]}")
    return {"wall_s": wall, "cpu_s": cpu, "peak_bytes": peak, "stdout": done.stdout.decode()}


def _exp_rate() -> float:
    """``np.exp`` elements per second on an in-cache array, the best of 30 calls."""
    x = np.random.default_rng(0).random(1 << 16)
    return x.size / best_seconds(lambda: np.exp(x), repeats=30)


def _exp_kernel() -> str:
    """The kernel numpy dispatched for float64 ``np.exp`` on this CPU, e.g. ``X86_V4``."""
    from numpy.lib.introspect import opt_func_info

    loops = opt_func_info(func_name="^exp$", signature="float64").get("exp", {})
    return loops.get("dd", {}).get("current", "unknown")


def _kernel_rates() -> dict:
    from dprisk.inference.population import kernels

    rng = np.random.default_rng(1)
    cells = 50_000
    y = rng.integers(-10, 40, size=cells)
    lam = rng.exponential(3.0, size=cells) + np.arange(cells) * 1e-9  # all distinct
    half = np.ceil(np.minimum(np.sqrt(10.09), np.sqrt(lam + 1)) * np.sqrt(2 * np.log(1e18))) + 2
    terms = float(2 * (2 * half + 1).sum())  # numpy path: both deltas over its windows
    rates = {}
    for mode in ("numpy", "compiled"):
        os.environ["DPRISK_KERNELS"] = mode
        kernels.poisson_gaussian_log_ratio(y[:100], lam[:100], 10.09)  # load / compile
        rates[mode] = terms / best_seconds(
            lambda: kernels.poisson_gaussian_log_ratio(y, lam, 10.09))
    os.environ.pop("DPRISK_KERNELS")
    groups, persons = 20_000, 500_000
    prior = rng.dirichlet(np.ones(126), size=groups)
    person_group = rng.integers(0, groups, size=persons)
    person_cat = rng.integers(0, 126, size=persons)
    true = np.bincount(person_group * 126 + person_cat,
                       minlength=groups * 126).reshape(groups, 126)
    noisy = true + rng.integers(-3, 4, size=true.shape)
    variance = np.full(groups, 10.09)
    logits = kernels.informed_logits(noisy, true, prior, variance)  # per group, untimed
    informed = persons / best_seconds(lambda: kernels.informed_posteriors(
        logits, person_group, person_cat))
    return {"outsider_numpy_terms_per_s": rates["numpy"],
            "outsider_compiled_terms_per_s": rates["compiled"],
            "informed_persons_per_s": informed}


def _partition_seconds(persons_path: Path, noisy_path: Path) -> dict:
    """CPU seconds per person of partition_risk at two partition sizes (linearity check)."""
    from dprisk.inference.population import partitions, risk
    from dprisk.inference.population.measurements import read_noisy_table
    from dprisk.inference.population.persons import read_persons

    persons = read_persons(persons_path)
    prepared = risk.prepare(persons, read_noisy_table(noisy_path))
    out = {}
    warm = partitions.split_partitions(prepared, 20_000)[0]
    for adversary in ("informed", "outsider"):  # loads numba and the kernels: not timed
        risk.partition_risk(warm, adversary=adversary, prior="tract")
    for adversary in ("informed", "outsider"):
        for size in (250_000, 62_500):
            parts = partitions.split_partitions(prepared, size)[:2]
            start = time.process_time()
            count = 0
            for part in parts:
                risk.partition_risk(part, adversary=adversary, prior="tract")
                count += part.rows.size
            out[f"{adversary}_{size}"] = (time.process_time() - start) / count
    return out


def run() -> dict:
    results: dict = {"persons": PERSONS}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cli = dprisk_command()
        synth = _timed([*cli, "population", "synth", "--persons", str(PERSONS), "--seed", "1",
                        "--out", str(tmp / "synth"), "--json"])
        persons = tmp / "synth" / "persons.parquet"
        measure = _timed([*cli, "population", "measure", "--persons", str(persons), "--seed",
                          "2", "--out", str(tmp / "meas"), "--json"])
        noisy = tmp / "meas" / "noisy.parquet"
        results["synth"] = {k: v for k, v in synth.items() if k != "stdout"}
        results["measure"] = {k: v for k, v in measure.items() if k != "stdout"}
        for adversary in ("informed", "outsider"):
            run_ = _timed([*cli, "population", "risk", "--persons", str(persons), "--noisy",
                           str(noisy), "--adversary", adversary, "--json"])
            summary = json.loads(run_["stdout"])
            results[f"risk_{adversary}"] = {
                **{k: v for k, v in run_.items() if k != "stdout"},
                "map_correct_nonmodal": summary["all"]["map_correct_nonmodal"],
                "partitions": summary["partitions"]}
        per_person = _partition_seconds(persons, noisy)
    exp_rate = _exp_rate()
    rates = _kernel_rates()
    results["kernels"] = {**rates, "np_exp_per_s": exp_rate, "np_exp_kernel": _exp_kernel(),
                          "outsider_numpy_ratio_to_exp": rates["outsider_numpy_terms_per_s"]
                          / exp_rate,
                          "outsider_compiled_ratio_to_exp":
                          rates["outsider_compiled_terms_per_s"] / exp_rate,
                          "informed_ratio_to_exp": rates["informed_persons_per_s"] / exp_rate}
    results["national"] = {
        f"{adv}_cpu_s_per_person": per_person[f"{adv}_250000"] for adv in ("informed",
                                                                           "outsider")}
    for adv in ("informed", "outsider"):
        results["national"][f"{adv}_end_to_end_projected_hours_2_cores"] = (
            results[f"risk_{adv}"]["cpu_s"] / PERSONS * NATIONAL_PERSONS / 2 / 3600)
        results["national"][f"{adv}_projected_hours_2_cores"] = (
            per_person[f"{adv}_250000"] * NATIONAL_PERSONS / 2 / 3600)
        results["national"][f"{adv}_linearity_ratio"] = (per_person[f"{adv}_62500"]
                                                        / per_person[f"{adv}_250000"])
    _print(results)
    return results


def _print(results: dict) -> None:
    print(f"population of {PERSONS:,} persons (one synthetic state), end to end")
    for step in ("synth", "measure", "risk_informed", "risk_outsider"):
        r = results[step]
        print(f"  {step:<14} {r['wall_s']:7.1f} s wall  {r['cpu_s']:7.1f} s CPU  "
              f"peak {r['peak_bytes'] / 1024**3:5.2f} GB")
    k = results["kernels"]
    print(f"  np.exp ({k['np_exp_kernel']}): {k['np_exp_per_s']:.3g}/s; outsider sums: numpy "
          f"{k['outsider_numpy_ratio_to_exp']:.3f}x, compiled "
          f"{k['outsider_compiled_ratio_to_exp']:.3f}x exp's rate (terms); informed "
          f"{k['informed_ratio_to_exp']:.3f}x (persons)")
    n = results["national"]
    for adv in ("informed", "outsider"):
        print(f"  national ({NATIONAL_PERSONS / 1e6:.0f} M persons, {NATIONAL_BLOCKS / 1e6:.1f} M "
              f"blocks), {adv}: {n[f'{adv}_projected_hours_2_cores']:.2f} h on 2 cores "
              f"(partitions only, reading excluded; extrapolated_from_{PERSONS}); per-person "
              f"cost at 62,500 / 250,000 persons per partition: "
              f"{n[f'{adv}_linearity_ratio']:.2f}; end to end (reading included, from the "
              f"risk run's CPU): {n[f'{adv}_end_to_end_projected_hours_2_cores']:.1f} h")
    for adv in ("informed", "outsider"):
        r = results[f"risk_{adv}"]
        ok = r["wall_s"] <= TARGET_SECONDS and r["peak_bytes"] <= TARGET_BYTES
        print(f"  target risk {adv} <= {TARGET_SECONDS:.0f} s and <= 2 GB: {r['wall_s']:.1f} s, "
              f"{r['peak_bytes'] / 1024**3:.2f} GB  {'pass' if ok else 'FAIL'}  "
              f"[load {os.getloadavg()[0]:.1f}]")


if __name__ == "__main__":
    run()
