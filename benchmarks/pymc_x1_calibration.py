"""Is PyMC's P(X1 = 1) biased in the three-level model, or is ArviZ's MCSE too small?

The scenario of ``tests/inference/nested/test_posterior.py::
test_exact_gibbs_and_pymc_agree_for_three_levels`` (H3, H3_RELEASE: rhos 0.3/0.2/0.1,
siblings 5/3, p 0.4, known 1, x* = (1, 4, 9), y* = (3, 5)) is run with ``--seeds``
independent seeds per sampler: PyMC's default steps (``posterior_summary(method="pymc")``,
4 chains x ``--draws`` draws, ``--tune`` tuning) and the hand-written Gibbs sampler
(``method="gibbs"``, 4 chains x ``--gibbs-draws``). For each quantity (``posterior`` =
P[X1 = m+1] = mean of X1 - m, and the means of X2, X3) it prints

* ``mean err``: the average of (estimate - exact) over the seeds, and ``se(mean)``, its
  standard error from the spread across seeds (sd / sqrt(seeds)); ``z`` = their ratio. This is
  the honest test of bias: it uses no MCSE estimate;
* ``sd seeds``: the spread of the estimate across seeds (the true Monte Carlo error of one
  run, up to its own sampling error, about 1 / sqrt(2 (seeds - 1)) relative);
* ``mcse az``: the root-mean-square ArviZ MCSE (``mcse(method="mean")``, as the tests use)
  and ``sd/az``, the spread over it (1 if ArviZ is right);
* ``mcse bm``: the root-mean-square batch-means MCSE (per chain, ``--batches`` batches,
  pooled) and ``sd/bm``;
* ``ess az``: the average ArviZ bulk ESS, and ``ess true`` = var / sd seeds ** 2 (the ESS
  implied by the spread; ``var`` is the exact posterior variance);
* ``|z|>4``: how many runs the test's check ``|estimate - exact| <= Z_MAX * mcse`` would fail.

Results of the runs can be saved (``--save FILE``, JSON) and tabulated again without
sampling (``--load FILE [FILE ...]``, the runs of several files pooled per sampler). One
process, one core; PyMC about 7.5 s CPU per run, Gibbs 0.4 s.

Recorded (2026-11-26, 2-core machine, PyMC 6.4.0, arviz-stats 1.3.3)
--------------------------------------------------------------------
``nice -n 19 python benchmarks/pymc_x1_calibration.py --seeds 80 --save a.json`` (seeds
1000..1079; PyMC 600 s CPU, Gibbs 34 s; exact posterior 0.317075, E[X2] 4.08497,
E[X3] 9.04329)::

    PyMC logp - exact log joint: spread 1.1e-13 over 1281 feasible points,
    -inf off the support: True
    exact: posterior 0.317075, E[X2] 4.08497, E[X3] 9.04329
    sampler quantity   mean err se(mean)      z |z|>4
    pymc    posterior  +0.00034  0.00048  +0.71     0
    pymc    X2         +0.00104  0.00414  +0.25     0
    pymc    X3         -0.00095  0.00574  -0.17     0
    gibbs   posterior  -0.00033  0.00025  -1.30     0
    gibbs   X2         +0.00051  0.00080  +0.63     0
    gibbs   X3         -0.00007  0.00121  -0.06     0
    sampler quantity  sd seeds  mcse az sd/az  mcse bm sd/bm <z_az>  ess az ess true
    pymc    posterior  0.00433  0.00452  0.96  0.00456  0.95  +0.07   10608    11559
    pymc    X2         0.03707  0.03430  1.08  0.03362  1.10  +0.03    1382     1162
    pymc    X3         0.05134  0.04990  1.03  0.04858  1.06  -0.01    1316     1223
    gibbs   posterior  0.00227  0.00236  0.96  0.00235  0.96  -0.14   38823    42124
    gibbs   X2         0.00719  0.00694  1.04  0.00698  1.03  +0.07   33202    30937
    gibbs   X3         0.01084  0.00979  1.11  0.00978  1.11  -0.01   33648    27433
    PyMC P(X1=1) bias +0.00034 +- 0.00048 (z = +0.71: no bias detected);
    spread / ArviZ MCSE = 0.96 +- 0.08 (MCSE consistent)

With ``--seeds 40 --first-seed 0 --samplers pymc --save b.json`` (seeds 0..39, the test's
seed 4 among them), ``--load a.json b.json`` pools 120 PyMC runs (their rows)::

    pymc    posterior  +0.00042  0.00040  +1.06     0
    pymc    X2         +0.00211  0.00325  +0.65     0
    pymc    X3         +0.00164  0.00501  +0.33     0
    pymc    posterior  0.00439  0.00452  0.97  0.00455  0.96  +0.09   10641    11237
    pymc    X2         0.03563  0.03409  1.05  0.03357  1.06  +0.06    1399     1258
    pymc    X3         0.05485  0.04974  1.10  0.04875  1.13  +0.04    1320     1072
    PyMC P(X1=1) bias +0.00042 +- 0.00040 (z = +1.06: no bias detected);
    spread / ArviZ MCSE = 0.97 +- 0.06 (MCSE consistent)

Of those 120, the largest mean of error / ArviZ MCSE over 16 consecutive seeds is +0.46
(seeds 0..15: +0.41; the test's seed 4 alone: +2.76). ``--seeds 40 --first-seed 2000
--tune 50 --samplers pymc`` (a tenth of the test's tuning): P(X1=1) error +0.00037 +-
0.00074, sd/az 1.03. Conclusion: no bias and no underestimated MCSE; the ESS above the
number of draws (about 10,600 of 8,000 for X1) is real (BinaryGibbsMetropolis proposes a
flip with probability 0.8, an antithetic chain) and the spread across seeds confirms it.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from dprisk.inference.mcmc.chain_stats import chain_diagnostics
from dprisk.inference.nested import posterior as ml

#: The scenario of the test (tests/inference/nested/test_posterior.py: H3, H3_RELEASE).
SCENARIO = {"rhos": [0.3, 0.2, 0.1], "siblings": [5, 3], "p": 0.4, "known": 1,
            "x_stars": [1, 4, 9], "y_stars": [3, 5]}
#: The test's AGREEMENT_TUNE and draws.
TUNE, DRAWS, GIBBS_DRAWS, CHAINS = 500, 2000, 10_000, 4
FIRST_SEED = 1000
Z_MAX = 4.0
QUANTITIES = ("posterior", "X2", "X3")


def batch_means_mcse(x: np.ndarray, batches: int) -> float:
    """MCSE of the mean of draws ``x`` (chains, draws) by non-overlapping batch means per chain.

    Each chain is cut into ``batches`` batches of equal length (a remainder at the start is
    dropped); the MCSE is the sd of all batch means over sqrt(number of batches).
    """
    chains, draws = x.shape
    size = draws // batches
    means = x[:, draws - size * batches:].reshape(chains, batches, size).mean(-1).ravel()
    return float(means.std(ddof=1) / math.sqrt(means.size))


def exact_values() -> dict:
    """Exact posterior mean and variance of each quantity."""
    summary = ml.posterior_summary(**SCENARIO, method="exact")
    levels = summary["level_posteriors"]
    prob = summary["posterior"]
    return {"posterior": (prob, prob * (1 - prob)),
            "X2": (levels["2"]["mean"], levels["2"]["sd"] ** 2),
            "X3": (levels["3"]["mean"], levels["3"]["sd"] ** 2)}


def logp_check() -> tuple[int, float, bool]:
    """The PyMC model's log density against the exact joint of the enumeration.

    Evaluates ``model.compile_logp()`` of the test's model at every ``(target, X2, X3)`` in
    ``{0, 1} x [-2, 25) x [-2, 40)`` and the log joint written out from the model's formula
    (``log P[X1] - sum rho_l (x_l* - k_l)^2 - sum (rho_(l-1) / d_l)(y* - gap)^2``, improper
    uniform prior). Returns the number of feasible points, the spread (max - min) of the
    difference over them (0 up to rounding: equal up to the normalising constant) and
    whether every infeasible point (a level below the one beneath it) has logp ``-inf``.
    """
    from dprisk.models.builders.nested import build_nested_model

    rhos, siblings = SCENARIO["rhos"], SCENARIO["siblings"]
    xs, ys, p, known = SCENARIO["x_stars"], SCENARIO["y_stars"], SCENARIO["p"], SCENARIO["known"]
    model = build_nested_model(xs, ys, rhos=rhos, siblings=siblings, p=p, known=known)
    logp = model.compile_logp()
    offsets, infeasible_ok = [], True
    for target in (0, 1):
        for x2 in range(-2, 25):
            for x3 in range(-2, 40):
                counts = [known + target, x2, x3]
                got = float(logp({"target_has_c": np.int64(target), "X2": np.int64(x2),
                                  "X3": np.int64(x3)}))
                if counts[1] < counts[0] or counts[2] < counts[1]:
                    infeasible_ok &= got == -np.inf
                    continue
                ref = math.log(p) if target else math.log1p(-p)
                ref -= sum(r * (x - k) ** 2 for r, x, k in zip(rhos, xs, counts, strict=True))
                for level in (1, 2):
                    gap = counts[level] - counts[level - 1]
                    ref -= rhos[level - 1] / siblings[level - 1] * (ys[level - 1] - gap) ** 2
                offsets.append(got - ref)
    return len(offsets), float(np.ptp(offsets)), infeasible_ok


def one_run(method: str, seed: int, draws: int, tune: int, batches: int) -> dict:
    """Estimate, ArviZ MCSE, batch-means MCSE and bulk ESS of each quantity for one seed."""
    start = time.process_time()
    summary = ml.summarize_posterior(**SCENARIO, method=method, draws=draws, chains=CHAINS,
                                     tune=tune, random_seed=seed)
    seconds = time.process_time() - start
    post = summary.result["posterior"]
    draws_of = {"posterior": np.asarray(post["X1"].values) - SCENARIO["known"],
                "X2": np.asarray(post["X2"].values), "X3": np.asarray(post["X3"].values)}
    out = {"seed": seed, "cpu_s": seconds}
    for name, x in draws_of.items():
        stats = chain_diagnostics(x.astype(float))
        out[name] = {"estimate": stats["mean"], "mcse": stats["mcse"],
                     "mcse_bm": batch_means_mcse(x.astype(float), batches),
                     "ess_bulk": stats["ess_bulk"]}
    return out


def table(runs: dict, exact: dict) -> list[dict]:
    """One row per sampler and quantity (see the module docstring)."""
    rows = []
    for method, results in runs.items():
        for name in QUANTITIES:
            truth, variance = exact[name]
            err = np.array([r[name]["estimate"] - truth for r in results])
            mcse = np.array([r[name]["mcse"] for r in results])
            mcse_bm = np.array([r[name]["mcse_bm"] for r in results])
            ess = np.array([r[name]["ess_bulk"] for r in results])
            n = err.size
            spread = float(err.std(ddof=1))
            rms_az = float(np.sqrt((mcse**2).mean()))
            rms_bm = float(np.sqrt((mcse_bm**2).mean()))
            rows.append({
                "sampler": method, "quantity": name, "seeds": n,
                "mean_err": float(err.mean()), "se_mean": spread / math.sqrt(n),
                "z_bias": float(err.mean()) / (spread / math.sqrt(n)),
                "sd_seeds": spread, "mcse_az": rms_az, "sd_over_az": spread / rms_az,
                "mcse_bm": rms_bm, "sd_over_bm": spread / rms_bm,
                "mean_z_az": float((err / mcse).mean()),
                "ess_az": float(ess.mean()), "ess_true": variance / spread**2,
                "fail_z4": int((np.abs(err) > Z_MAX * mcse).sum()),
            })
    return rows


def conclusion(rows: list[dict]) -> str:
    """One line: bias (|z_bias| > 3) and MCSE calibration (sd/az) of PyMC's posterior."""
    row = next(r for r in rows if r["sampler"] == "pymc" and r["quantity"] == "posterior")
    n = row["seeds"]
    ratio_se = row["sd_over_az"] / math.sqrt(2 * (n - 1))  # sampling error of an sd ratio
    if abs(row["z_bias"]) > 3:
        bias = "BIASED"
    else:
        bias = "no bias detected"
    if row["sd_over_az"] - 3 * ratio_se > 1:
        calibration = "ArviZ MCSE too small"
    elif row["sd_over_az"] + 3 * ratio_se < 1:
        calibration = "ArviZ MCSE too large"
    else:
        calibration = "MCSE consistent"
    verdict = (f"PyMC P(X1=1) bias {row['mean_err']:+.5f} +- {row['se_mean']:.5f} "
               f"(z = {row['z_bias']:+.2f}: {bias});\nspread / ArviZ MCSE = "
               f"{row['sd_over_az']:.2f} +- {ratio_se:.2f} ({calibration})")
    return verdict


def print_table(rows: list[dict]) -> None:
    """Print the evidence table: a bias block and an MCSE block."""
    print(f"{'sampler':7} {'quantity':9} {'mean err':>9} {'se(mean)':>8} {'z':>6} {'|z|>4':>5}")
    for r in rows:
        print(f"{r['sampler']:7} {r['quantity']:9} {r['mean_err']:+9.5f} {r['se_mean']:8.5f} "
              f"{r['z_bias']:+6.2f} {r['fail_z4']:5d}")
    print(f"{'sampler':7} {'quantity':9} {'sd seeds':>8} {'mcse az':>8} {'sd/az':>5} "
          f"{'mcse bm':>8} {'sd/bm':>5} {'<z_az>':>6} {'ess az':>7} {'ess true':>8}")
    for r in rows:
        print(f"{r['sampler']:7} {r['quantity']:9} {r['sd_seeds']:8.5f} {r['mcse_az']:8.5f} "
              f"{r['sd_over_az']:5.2f} {r['mcse_bm']:8.5f} {r['sd_over_bm']:5.2f} "
              f"{r['mean_z_az']:+6.2f} {r['ess_az']:7.0f} {r['ess_true']:8.0f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=80, help="independent seeds per sampler")
    parser.add_argument("--first-seed", type=int, default=FIRST_SEED)
    parser.add_argument("--draws", type=int, default=DRAWS, help="PyMC draws per chain")
    parser.add_argument("--tune", type=int, default=TUNE, help="PyMC tuning draws per chain")
    parser.add_argument("--gibbs-draws", type=int, default=GIBBS_DRAWS)
    parser.add_argument("--batches", type=int, default=20, help="batch means per chain")
    parser.add_argument("--samplers", default="pymc,gibbs")
    parser.add_argument("--save", help="write the runs to this JSON file")
    parser.add_argument("--load", nargs="+",
                        help="tabulate the runs of these JSON files, pooled (no sampling)")
    args = parser.parse_args(argv)
    exact = exact_values()
    if args.load:
        runs = {}
        for path in args.load:
            with open(path) as handle:
                for method, results in json.load(handle)["runs"].items():
                    runs.setdefault(method, []).extend(results)
    else:
        runs = {}
        for method in args.samplers.split(","):
            draws = args.draws if method == "pymc" else args.gibbs_draws
            runs[method] = [
                one_run(method, seed, draws, args.tune, args.batches)
                for seed in range(args.first_seed, args.first_seed + args.seeds)
            ]
            cpu = sum(r["cpu_s"] for r in runs[method])
            print(f"{method}: {args.seeds} runs, {cpu:.0f} s CPU", flush=True)
        if args.save:
            with open(args.save, "w") as handle:
                json.dump({"args": vars(args), "runs": runs}, handle)
    points, spread, infeasible_ok = logp_check()
    print(f"PyMC logp - exact log joint: spread {spread:.1e} over {points} feasible points,\n"
          f"-inf off the support: {infeasible_ok}")
    print(f"exact: posterior {exact['posterior'][0]:.6f}, E[X2] {exact['X2'][0]:.5f}, "
          f"E[X3] {exact['X3'][0]:.5f}")
    rows = table(runs, exact)
    print_table(rows)
    if "pymc" in runs:
        print(conclusion(rows))


if __name__ == "__main__":
    main()
