r"""Cross-check of every way of computing the two-level posterior against exact enumeration.

For a battery of releases D and every built-in prior of X2 given X1 (``improper``,
``truncated:10``, ``point:1``, ``point:25``) plus the example user prior
(``models/examples/negative_binomial_prior.py:prior``), the Monte Carlo methods of
:func:`dprisk.inference.two_level.sampling.sample_posterior`

* ``gibbs`` -- the standalone vectorised exact Gibbs sampler,
* ``pymc-gibbs`` -- ``pm.sample`` with
:class:`dprisk.inference.two_level.gibbs_step.ExactGibbsStep`,
* ``pymc`` -- ``pm.sample`` with PyMC's own steps (BinaryGibbsMetropolis + Metropolis),

estimate :math:`P[X_1 = m + 1 \mid D]` and :math:`E[X_2 \mid D]`; each estimate must lie
within :data:`N_MCSE` Monte Carlo standard errors of the exact value,

.. math:: |z| = \frac{|\hat\theta - \theta|}{\mathrm{MCSE}(\hat\theta)} < 4,

with MCSE from ArviZ (``mcse(method="mean")``, autocorrelation-aware), and every defined
R-hat below 1.01. For a correct sampler and a CLT-accurate MCSE, :math:`P[|z| > 4] \approx
6 \times 10^{-5}` per comparison, so a failure in a battery of ~100 comparisons is evidence
of a real discrepancy (a deterministic one, since every run is seeded).

One PyMC model per prior is built and compiled once; the release is swapped with
:func:`dprisk.models.builders.two_level.set_release` and the same step objects are reused.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from dprisk.inference.mcmc.compiled_chain import CompiledChain
from dprisk.inference.two_level.exact import exact_posterior
from dprisk.inference.two_level.sampling import (
    SAMPLING_METHODS,
    chain_diagnostics,
    pymc_steps,
    sample_posterior,
)
from dprisk.models.builders.two_level import build_two_level_model, set_release
from dprisk.models.census.allocation import census_level
from dprisk.models.priors.library import X2Prior

__all__ = [
    "BATTERIES",
    "N_MCSE",
    "PRIORS",
    "RHAT_MAX",
    "CrosscheckResult",
    "crosscheck",
    "crosscheck_cells",
    "crosscheck_table",
    "prior_labels",
    "table_failures",
]

#: Largest allowed |estimate - exact| / MCSE.
N_MCSE = 4.0
#: Largest allowed rank-normalised split R-hat.
RHAT_MAX = 1.01
#: The priors of X2 | X1 checked (spec strings of :func:`dprisk.models.priors.library.parse_prior`).
PRIORS = (
    "improper",
    "truncated:10",
    "point:1",
    "point:25",
    "models/examples/negative_binomial_prior.py:prior",
)
QUANTITIES = ("prob_x1", "x2_mean")
#: Units of the quantities' estimates: ``prob_x1`` is a probability, ``x2_mean`` a count.
_PER_QUANTITY = "probability (prob_x1), persons (x2_mean)"
#: The table's ``long_name`` and ``units`` of each per-cell array (:func:`crosscheck_cells`).
_CELL_ATTRS = {
    "estimate": {"long_name": "Monte Carlo estimate (mean over the draws)", "units": _PER_QUANTITY},
    "mcse": {"long_name": "Monte Carlo standard error of the estimate", "units": _PER_QUANTITY},
    "exact": {"long_name": "exact value of the quantity", "units": _PER_QUANTITY},
    "z": {"long_name": "(estimate - exact) / mcse", "units": "1"},
    "r_hat": {"long_name": "rank-normalised split R-hat", "units": "1"},
    "ess_bulk": {"long_name": "bulk effective sample size", "units": "draws"},
}


@dataclass(frozen=True)
class Battery:
    """Releases and Monte Carlo budgets of one cross-check battery.

    Attributes
    ----------
    releases : tuple of (int, int, int)
        Releases D = (x1*, x2*, y1*).
    budgets : dict of str to dict
        Per method, the ``draws``, ``chains``, ``tune`` of its runs. PyMC's Metropolis step
        for X2 needs ~10 draws per effective draw (bulk ESS about 700 per 2 x 3000 draws at
        the census rho), so ``pymc`` gets more draws than the exact Gibbs methods for the
        same R-hat < 1.01.
    """

    releases: tuple
    budgets: dict = field(default_factory=dict)


#: The batteries: releases around the truth (x1, x2, y1) = (1, 1, 0) of paper §4.3 (census
#: rho, d = 27), including the Table 6 release (2, 1, -1), and farther ones (large y1*,
#: negative x2*) where the priors disagree.
BATTERIES = {
    "small": Battery(
        releases=((2, 1, -1), (0, 4, 9)),
        budgets={
            "gibbs": {"draws": 5000, "chains": 4, "tune": 100},
            "pymc-gibbs": {"draws": 1500, "chains": 2, "tune": 100},
            "pymc": {"draws": 3000, "chains": 2, "tune": 300},
        },
    ),
    "large": Battery(
        releases=((2, 1, -1), (0, 4, 9), (1, -2, 4), (3, 0, -6), (-1, 2, 15), (4, 6, 1)),
        budgets={
            "gibbs": {"draws": 25_000, "chains": 4, "tune": 500},
            "pymc-gibbs": {"draws": 2000, "chains": 4, "tune": 100},
            "pymc": {"draws": 3000, "chains": 4, "tune": 500},
        },
    ),
}


@dataclass
class CrosscheckResult:
    """Outcome of :func:`crosscheck`.

    Attributes
    ----------
    table : xarray.Dataset
        Dims ``release``, ``prior``, ``method``, ``quantity`` (``prob_x1``, ``x2_mean``);
        variables ``estimate``, ``mcse``, ``exact``, ``z``, ``r_hat``, ``ess_bulk``,
        ``seconds`` (wall time of the run), ``seed``.
    passed : bool
        Every ``|z| < N_MCSE`` and every defined R-hat ``< RHAT_MAX``.
    failures : list of str
        One line per failed comparison.
    """

    table: xr.Dataset
    passed: bool
    failures: list[str]

    def summary(self) -> str:
        """Plain-text table: per prior and method the largest |z| and R-hat over releases."""
        t = self.table
        lines = [f"cross-check ({t.attrs['battery']} battery, {t.sizes['release']} releases): "
                 f"{'PASSED' if self.passed else 'FAILED'}; |z| < {N_MCSE:g}, "
                 f"R-hat < {RHAT_MAX}",
                 f"{'prior':<50}{'method':<12}{'max|z| P[X1]':>14}{'max|z| E[X2]':>14}"
                 f"{'max R-hat':>11}{'seconds':>9}"]
        for prior in t["prior"].values:
            for method in t["method"].values:
                row = t.sel({"prior": prior, "method": method})  # not sel(method=): a keyword
                z = np.abs(row["z"])
                rhat = row["r_hat"].max(skipna=True)
                lines.append(
                    f"{prior!s:<50}{method!s:<12}"
                    f"{float(z.sel(quantity='prob_x1').max()):>14.2f}"
                    f"{float(z.sel(quantity='x2_mean').max()):>14.2f}"
                    f"{float(rhat) if np.isfinite(rhat) else float('nan'):>11.4f}"
                    f"{float(row['seconds'].sum()):>9.1f}"
                )
        lines.extend(self.failures)
        return "\n".join(lines)


def _z(estimate: float, exact: float, mcse: float) -> float:
    if mcse > 0:
        return (estimate - exact) / mcse
    return 0.0 if math.isclose(estimate, exact, rel_tol=0, abs_tol=1e-12) else math.inf


def _estimates(x1: np.ndarray, x2: np.ndarray, known: int) -> dict[str, dict]:
    """Mean, MCSE, R-hat and ESS of 1[X1 = m+1] and X2 from (chain, draw) arrays."""
    statistics = ("mcse", "r_hat", "ess_bulk")  # the table's (no tail ESS)
    return {
        "prob_x1": chain_diagnostics(x1, known=known, statistics=statistics),
        "x2_mean": chain_diagnostics(x2, statistics=statistics),
    }


def crosscheck(
    battery: str = "small",
    *,
    random_seed: int = 20260401,
    priors=PRIORS,
    methods=SAMPLING_METHODS,
    rho1: float | None = None,
    rho2: float | None = None,
    d: int = 27,
    p: float = 0.5,
    known: int = 0,
    sampled: dict | None = None,
    pymc_models: dict | None = None,
) -> CrosscheckResult:
    """Run every Monte Carlo method on every (release, prior) and compare with exact.

    Parameters
    ----------
    battery : {"small", "large"}
        Which :data:`BATTERIES` entry (the small one is for the tests; the large one for the
        report, about 2-3 minutes on one core).
    random_seed : int
        Root seed; each run gets its own seed drawn from it (stored in the table).
    priors : sequence of str or X2Prior
        Prior specs or prior objects (default :data:`PRIORS`), labelled in the table by the
        spec (:func:`prior_labels`): the labels must differ.
    methods : sequence of str
        Subset of ``("gibbs", "pymc-gibbs", "pymc")``.
    rho1, rho2 : float, optional
        Default: the census block and block-group rho.
    d, p, known
        Model parameters (paper §4.3: 27, 1/2, 0).
    sampled : dict, optional
        Runs the caller made already, with at least the battery's budget, at these
        parameters: ``{(release, prior, method): (draws, seed)}`` with ``release`` a tuple
        ``(x1*, x2*, y1*)``, ``draws`` ``{"X1": array, "X2": array}`` of dims (chain, draw);
        those cells are compared from them instead of sampled again (the table's ``seed`` is
        theirs, ``seconds`` 0). :func:`dprisk.validation.paper.two_level.study` passes its
        Tables 7-8 runs of the Table 6 release, a cell of every battery. A value may also be
        ``(draws, seed, estimates)``, ``estimates`` the cell's statistics of those draws as
        the cross-check computes them (``{"prob_x1": stats, "x2_mean": stats}``, each
        ``stats`` ``chain_diagnostics``' ``mean``, ``mcse``, ``r_hat`` and ``ess_bulk`` of the
        indicator 1[X1 = m + 1] and of X2), used as given.
    pymc_models : dict, optional
        PyMC models already built and compiled at these parameters, by prior spec:
        ``{prior: (model, {method: CompiledChain})}``, used instead of building them again
        (each costs 0.5-1 s of compilation).

    Returns
    -------
    CrosscheckResult

    Raises
    ------
    ValueError
        For an unknown battery or method, empty (or a bare string as) ``methods`` or
        ``priors``, two priors of one label, or a ``random_seed`` that is not an integer >= 0.
    """
    params = _params(battery, methods, rho1, rho2, d, p, known, priors=priors,
                     random_seed=random_seed)
    cells = crosscheck_cells(battery, random_seed=random_seed, priors=priors, methods=methods,
                             **params, sampled=sampled, pymc_models=pymc_models)
    return crosscheck_table(battery, [cells], random_seed=random_seed, priors=priors,
                            methods=methods, **params)


def prior_labels(priors) -> list[str]:
    """The table's ``prior`` labels: each spec string as given, an X2Prior's ``spec``.

    Raises
    ------
    ValueError
        Naming ``priors`` when two share a label (a table of two columns of one label, whose
        summary rows each showed the worse of both: two ``UserPrior`` objects of functions
        named ``logp`` are both ``user:logp`` unless given their own ``spec=``).
    """
    labels = [prior.spec if isinstance(prior, X2Prior) else str(prior) for prior in priors]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ValueError(f"priors must have distinct labels (their specs), got {twice[0]!r} "
                         f"{labels.count(twice[0])} times; give each UserPrior its own "
                         f"spec=... (e.g. UserPrior(logp, spec='geometric q=0.2'))")
    return labels


def _params(battery, methods, rho1, rho2, d, p, known, *, priors, random_seed) -> dict:
    if battery not in BATTERIES:
        raise ValueError(f"battery must be one of {', '.join(BATTERIES)}; got {battery!r}")
    # a string would be read letter by letter, an empty list would check nothing and pass
    for name, values in (("methods", methods), ("priors", priors)):
        if isinstance(values, str) or not len(values):
            raise ValueError(f"{name} must be a non-empty sequence of names (e.g. "
                             f"({values!r},) for one), got {values!r}")
    prior_labels(priors)  # refuses two priors of one label
    bad = [m for m in methods if m not in SAMPLING_METHODS]
    if bad:
        raise ValueError(f"methods must be among {', '.join(SAMPLING_METHODS)}; got {bad}")
    if isinstance(random_seed, bool) or not isinstance(random_seed, numbers.Integral) \
            or random_seed < 0:
        raise ValueError(f"random_seed must be an integer >= 0, got {random_seed!r}")
    return {
        "rho1": census_level("block").rho if rho1 is None else rho1,
        "rho2": census_level("block-group").rho if rho2 is None else rho2,
        "d": d,
        "p": p,
        "known": known,
    }


def crosscheck_cells(
    battery: str = "small",
    *,
    random_seed: int = 20260401,
    priors=PRIORS,
    methods=SAMPLING_METHODS,
    rho1: float | None = None,
    rho2: float | None = None,
    d: int = 27,
    p: float = 0.5,
    known: int = 0,
    run_priors=None,
    sampled: dict | None = None,
    pymc_models: dict | None = None,
) -> dict:
    """The cells of :func:`crosscheck` under the priors ``run_priors`` (default: all).

    The same arguments as :func:`crosscheck` (each run's seed is drawn for the whole table,
    so a cell's draws do not depend on which priors are run together); the cells of
    different priors are independent, so separate calls (in separate processes) joined by
    :func:`crosscheck_table` give the table of one call.

    Returns
    -------
    dict
        ``done`` (bool array, dims release, prior, method: the cells computed here), the
        table's arrays ``estimate``, ``mcse``, ``exact``, ``z``, ``r_hat``, ``ess_bulk``
        (plus dim quantity), ``seconds`` and ``seed``.
    """
    spec = BATTERIES[battery]
    params = _params(battery, methods, rho1, rho2, d, p, known, priors=priors,
                     random_seed=random_seed)
    releases = [tuple(v + known for v in r) for r in spec.releases]
    methods = tuple(methods)
    run_priors = priors if run_priors is None else run_priors
    shape = (len(releases), len(priors), len(methods), len(QUANTITIES))
    out = {name: np.full(shape, np.nan) for name in ("estimate", "mcse", "exact", "z", "r_hat",
                                                      "ess_bulk")}
    seconds = np.zeros(shape[:3])
    seeds = np.random.default_rng(random_seed).integers(2**31, size=shape[:3])
    done = np.zeros(shape[:3], dtype=bool)
    sampled = {} if sampled is None else sampled
    for j, prior in enumerate(priors):
        if prior not in run_priors:
            continue
        model, chains = (pymc_models or {}).get(prior, (None, {}))
        chains = dict(chains)
        for i, release in enumerate(releases):
            exact = exact_posterior(*release, **params, prior=prior)
            exact_values = {"prob_x1": float(exact.prob_x1), "x2_mean": float(exact.x2_mean())}
            for k, method in enumerate(methods):
                start = time.perf_counter()
                seed = int(seeds[i, j, k])
                estimates = None
                if (release, prior, method) in sampled:  # sampled by the caller
                    draws, seeds[i, j, k], *known_estimates = sampled[release, prior, method]
                    estimates = known_estimates[0] if known_estimates else None
                    start = None
                elif method == "gibbs":
                    post = sample_posterior(*release, **params, prior=prior, method="gibbs",
                                            random_seed=seed, **spec.budgets[method])["posterior"]
                    draws = {name: post[name].values for name in ("X1", "X2")}
                else:
                    if model is None:  # one model, steps and compiled chain per prior,
                        # for the PyMC methods asked for only
                        model = build_two_level_model(*release, **params, prior=prior)
                    if method not in chains:
                        chains[method] = CompiledChain(model, pymc_steps(model, method))
                    set_release(model, *release)
                    draws = chains[method].run(random_seed=seed, **spec.budgets[method])
                if start is not None:
                    seconds[i, j, k] = time.perf_counter() - start
                done[i, j, k] = True
                if estimates is None:
                    estimates = _estimates(draws["X1"], draws["X2"], known)
                for q, (name, stats) in enumerate(estimates.items()):
                    cell = (i, j, k, q)
                    out["estimate"][cell] = stats["mean"]
                    out["mcse"][cell] = stats["mcse"]
                    out["exact"][cell] = exact_values[name]
                    out["z"][cell] = _z(stats["mean"], exact_values[name], stats["mcse"])
                    out["r_hat"][cell] = stats["r_hat"]
                    out["ess_bulk"][cell] = stats["ess_bulk"]
    return {"done": done, **out, "seconds": seconds, "seed": seeds}


def crosscheck_table(
    battery: str,
    cells: list[dict],
    *,
    random_seed: int = 20260401,
    priors=PRIORS,
    methods=SAMPLING_METHODS,
    rho1: float | None = None,
    rho2: float | None = None,
    d: int = 27,
    p: float = 0.5,
    known: int = 0,
) -> CrosscheckResult:
    """:func:`crosscheck`'s result from :func:`crosscheck_cells` of the same arguments.

    ``cells``: their outputs, between them covering every cell once (each cell is taken
    from the output that computed it).

    Raises
    ------
    ValueError
        If a cell was computed by none of them.
    """
    spec = BATTERIES[battery]
    params = _params(battery, methods, rho1, rho2, d, p, known, priors=priors,
                     random_seed=random_seed)
    releases = [tuple(v + known for v in r) for r in spec.releases]
    methods = tuple(methods)
    first, *others = cells
    merged = {name: np.array(values) for name, values in first.items()}
    for part in others:
        mask = part["done"]
        for name, values in part.items():
            if name != "done":
                merged[name][mask] = values[mask]
        merged["done"] |= mask
    if not merged.pop("done").all():
        raise ValueError("crosscheck_table: some cells were computed by no part")
    seconds, seeds = merged.pop("seconds"), merged.pop("seed")
    dims = ("release", "prior", "method", "quantity")
    table = xr.Dataset(
        {
            **{name: (dims, values, _CELL_ATTRS[name]) for name, values in merged.items()},
            "seconds": (dims[:3], seconds, {"long_name": "wall time of the run", "units": "s"}),
            "seed": (dims[:3], seeds, {"long_name": "random seed of the run", "units": "1"}),
        },
        coords={
            "release": ("release", np.arange(len(releases)),
                        {"long_name": "index of the release", "units": "1"}),
            **{f"{name}_star": ("release", [r[i] for r in releases],
                                {"long_name": f"released count {name}*", "units": "persons"})
               for i, name in enumerate(("x1", "x2", "y1"))},
            "prior": np.array(prior_labels(priors), dtype=str),
            "method": np.array(methods, dtype=str),
            "quantity": ("quantity", np.array(QUANTITIES, dtype=str),
                         {"long_name": "prob_x1 = P[X1 = m + 1 | D], x2_mean = E[X2 | D]"}),
        },
        attrs={**{k: float(v) for k, v in params.items()}, "battery": battery,
               "random_seed": random_seed, "n_mcse": N_MCSE, "rhat_max": RHAT_MAX,
               **{f"budget_{m}": str(spec.budgets[m]) for m in methods}},
    )
    failures = table_failures(table)
    return CrosscheckResult(table=table, passed=not failures, failures=failures)


def table_failures(table: xr.Dataset) -> list[str]:
    """One line per cell with |z| >= N_MCSE or a defined R-hat >= RHAT_MAX (empty: pass)."""
    failures = []
    z = np.abs(table["z"].values)
    rhat = table["r_hat"].values
    for index in zip(*np.nonzero(~(z < N_MCSE) | (np.isfinite(rhat) & ~(rhat < RHAT_MAX))),
                     strict=True):
        i, j, k, q = (int(v) for v in index)
        cell = table.isel({"release": i, "prior": j, "method": k, "quantity": q})
        release = tuple(int(cell[c]) for c in ("x1_star", "x2_star", "y1_star"))
        failures.append(
            f"FAIL {cell['quantity'].item()} release {release} prior {cell['prior'].item()} "
            f"method {cell['method'].item()}: estimate {float(cell['estimate']):.5f} vs exact "
            f"{float(cell['exact']):.5f} (z = {float(cell['z']):.2f}, "
            f"R-hat = {float(cell['r_hat']):.4f})"
        )
    return failures
