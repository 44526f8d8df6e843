"""How time and peak memory of the exact posterior grow with the problem's size (issue 12).

One axis at a time, the others at the base case: the two-level exact posterior
(``inference.exact.exact_posterior``, improper prior, p = 1/2) of ``N = 1,000`` releases
drawn from the mechanism at true counts ``x1 = 1``, ``x2 = 30``, Census rhos of the block
and block-group levels, ``d = 27`` (paper §4.3). Axes:

* the number of releases N (one vectorised call);
* small rho1 and small rho2 (wider noise: larger X2 windows and convolutions);
* d (the other blocks' noise sum: its variance d / (2 rho1));
* x2 (the true block-group count, so the releases' magnitude);
* the number of levels h (the nested exact posterior, ``inference.nested.exact.exact_posterior``,
  Census rhos and sibling counts of ``bench_multilevel``).

Time: median of warm calls (after one call that fills the caches), as many as fit in about
``TIME_PER_CASE`` seconds, at least ``REPEATS`` and at most 50 (short calls are noisy on a
shared machine). Peak memory:
the largest traced allocation (``tracemalloc``, which NumPy reports to) during one more warm
call, i.e. the working memory of the call itself, not the interpreter. Writes a markdown
table (``benchmarks/cost_growth.md``) and returns the figures; nothing is asserted.
``python benchmarks/bench_cost_growth.py``.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
from timing import median_seconds

from dprisk.inference.nested.posterior import exact_posterior as nested_exact_posterior
from dprisk.inference.two_level.exact import exact_posterior
from dprisk.models.census.allocation import census_rhos
from dprisk.models.mechanism.dg_sampling import sample, sample_sum

HERE = Path(__file__).resolve().parent
REPEATS = 3
TIME_PER_CASE = 0.3
SEED = 20261123
BLOCK, GROUP = census_rhos(2)
BASE = {"n": 1_000, "rho1": BLOCK, "rho2": GROUP, "d": 27, "x2": 30}
AXES = {
    "n": [1_000, 10_000, 100_000],
    "rho1": [BLOCK, 1e-2, 1e-3],
    "rho2": [GROUP, 1e-2, 1e-3, 1e-4],
    "d": [3, 27, 300, 3_000],
    "x2": [30, 3_000, 300_000],
}
LEVELS = [2, 3, 4, 5, 6]
SIBLINGS = (27, 2, 26, 61, 50)
TRUE_COUNTS = (1, 3, 8, 210, 13_000, 800_000)


def _two_level_case(n, rho1, rho2, d, x2, rng):
    x1 = 1
    x1s = sample(x1, rho1, size=n, random_seed=rng)
    x2s = sample(x2, rho2, size=n, random_seed=rng)
    y1s = (x2 - x1) + sample_sum(d, rho1, size=n, random_seed=rng)
    params = {"rho1": rho1, "rho2": rho2, "d": d}
    return lambda: exact_posterior(x1s, x2s, y1s, **params)


def _nested_case(h, n, rng):
    rhos = census_rhos(h)
    truth = np.array(TRUE_COUNTS[:h])
    xs = np.stack([sample(int(truth[i]), rhos[i], size=n, random_seed=rng)
                   for i in range(h)], -1)
    y_true = np.diff(truth)
    ys = np.stack([y_true[i] + sample_sum(SIBLINGS[i], rhos[i], size=n, random_seed=rng)
                   for i in range(h - 1)], -1)
    kwargs = {"rhos": rhos, "siblings": SIBLINGS[: h - 1]}
    return lambda: nested_exact_posterior(xs, ys, **kwargs)


def _measure(func) -> dict:
    first = median_seconds(func, 1)  # warm: caches and tables
    repeats = int(min(50, max(REPEATS, TIME_PER_CASE / max(first, 1e-6))))
    seconds = median_seconds(func, repeats)
    tracemalloc.start()
    try:
        func()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {"seconds": seconds, "peak_mib": peak / 2**20}


def _fmt(value) -> str:
    if isinstance(value, float) and value < 1:
        return f"{value:.3g}"
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def run() -> dict:
    rng = np.random.default_rng(SEED)
    _measure(_two_level_case(**BASE, rng=rng))  # first calls in the process, not recorded
    rows = []
    for axis, values in AXES.items():
        for value in values:
            case = {**BASE, axis: value}
            figures = _measure(_two_level_case(**case, rng=rng))
            rows.append({"axis": axis, "value": value, "model": "two-level", **figures})
            print(f"  {axis:>5} = {_fmt(value):>9}: {figures['seconds'] * 1e3:9.1f} ms, "
                  f"peak {figures['peak_mib']:8.1f} MiB", flush=True)
    for h in LEVELS:
        figures = _measure(_nested_case(h, BASE["n"], rng))
        rows.append({"axis": "h", "value": h, "model": "nested", **figures})
        print(f"  {'h':>5} = {h:>9}: {figures['seconds'] * 1e3:9.1f} ms, "
              f"peak {figures['peak_mib']:8.1f} MiB", flush=True)
    table = markdown(rows)
    (HERE / "cost_growth.md").write_text(table)
    print(f"wrote {HERE / 'cost_growth.md'}")
    return {"base": {k: float(v) for k, v in BASE.items()}, "rows": rows}


def markdown(rows: list[dict]) -> str:
    """The README table: one row per measured case, growth relative to the base case."""
    base = next(r for r in rows if r["axis"] == "n" and r["value"] == BASE["n"])
    names = {"n": "releases N", "rho1": "rho1", "rho2": "rho2", "d": "d", "x2": "x2",
             "h": "levels h (nested, N = 1,000)"}
    lines = ["| varied | value | time (ms) | time / base | peak memory (MiB) |",
             "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {names[row['axis']]} | {_fmt(row['value'])} | "
                     f"{row['seconds'] * 1e3:.1f} | {row['seconds'] / base['seconds']:.2g}x | "
                     f"{row['peak_mib']:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    run()
