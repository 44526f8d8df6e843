r"""Tables 6–8 of the paper (§4.3): the two-level posterior of one release.

Setting (Table 6): release D = (x1*, x2*, y1*) = (2, 1, -1) from truth
(x1, x2, y1) = (1, 1, 0); rho1 = census block, rho2 = census block group (exact Census
fractions), d = 27 other blocks, p = 1/2, m = 0, improper uniform prior of X2 given X1.
Tables 7 and 8 are the paper's MCMC
estimates of :math:`P[X_1 = k_1 \mid D]` and :math:`P[X_2 = k_2 \mid D]` from 1e4 draws.

:func:`compute_tables` computes them by exact enumeration, the standalone exact Gibbs
sampler, PyMC with :class:`dprisk.inference.two_level.gibbs_step.ExactGibbsStep` and PyMC's default
steps,
beside the published values and the no-hierarchy posterior (:math:`P[X_1 = 1 \mid x_1^* =
2]`, published 57.4%).

The published MCMC numbers are not the posterior of the paper's model: exact
:math:`P[X_1 = 1 \mid D] = 0.5033`, published 0.570, about 11 standard errors of a
correct 1e4-draw Gibbs run away (:func:`correct_sampler_mcse`). They are reproduced by a
specific Gibbs sampler that differs from the paper's (correct) full conditionals in one
place: its X1 update applies eq. (X1fc) for both k1 in {m, m+1} *without* the support
constraint ``k1 <= k2`` (so X1 = 1 can be drawn while X2 = 0), while its X2 update keeps
``k2 >= k1``. That chain's X1 sequence is a two-state Markov chain with

.. math::

    T(k_1 \to k_1') = \sum_{k_2 \ge k_1} P[X_2 = k_2 \mid X_1 = k_1, D]\,
        P_{\text{unconstrained}}[X_1 = k_1' \mid X_2 = k_2, D],

whose stationary law (:func:`dprisk.inference.studies.variant.variant_stationary`) is P[X1 = 1] =
0.5777 and X2 = 11.0 / 39.5 / 30.5 / 14.2 / 4.0 / 0.69 / 0.07 % (k2 = 0..6), matching the
published tables. :func:`dprisk.inference.studies.variant.variant_gibbs_sample` runs that variant
(the paper's 1e4 draws, several seeds) to show the spread of its estimates. The model is not
changed to match: the records (:mod:`dprisk.validation.paper.two_level_records`) report the
exact posterior and name the variant as the likely source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from dprisk.inference.mcmc.compiled_chain import CompiledChain, graphs_without_tracebacks
from dprisk.inference.single_level import closed_form as single_level
from dprisk.inference.studies.variant import variant_gibbs_sample, variant_stationary
from dprisk.inference.two_level.exact import exact_posterior
from dprisk.inference.two_level.gibbs import ExactConditionals, gibbs_sample
from dprisk.inference.two_level.sampling import (
    SAMPLING_METHODS,
    chain_diagnostics,
    pymc_steps,
    sample_posterior,
)
from dprisk.models.builders.two_level import build_two_level_model
from dprisk.models.census.allocation import census_level
from dprisk.validation.crosschecks.crosscheck import PRIORS, crosscheck_cells, crosscheck_table
from dprisk.validation.crosschecks.diagnostics import ConvergenceReport, convergence_report
from dprisk.validation.paper import published as pub
from dprisk.validation.paper.two_level_records import (
    N_MCSE,
    PAPER_DRAWS,
    TABLE5_K2,
    at_method,
    comparisons,
    figure,
    records,
)
from dprisk.validation.registry import check_part, chosen_budget, joined_parts, report_study

__all__ = [
    "DEFAULT_BUDGET",
    "N_MCSE",
    "PAPER_DRAWS",
    "PAPER_SCALE_BUDGET",
    "STUDY_PARTS",
    "TABLE3_RELEASE",
    "TABLE5_K2",
    "TABLES_SEED",
    "PaperBudget",
    "budget_runs",
    "compute_tables",
    "correct_sampler_mcse",
    "figure",
    "records",
    "study",
    "study_part",
    "table3_parameters",
]

#: The release of Table 6: (x1*, x2*, y1*).
TABLE3_RELEASE = (2, 1, -1)


def table3_parameters() -> dict:
    """``rho1, rho2, d, p, known, prior`` of §4.3 (exact census rho, d = 27, p = 1/2, m = 0)."""
    return {
        "rho1": census_level("block").rho,
        "rho2": census_level("block-group").rho,
        "d": 27,
        "p": 0.5,
        "known": 0,
        "prior": "improper",
    }


# --------------------------------------------------------------------------- MC error
def correct_sampler_mcse(
    x1_star, x2_star, y1_star, *, rho1, rho2, d, p=0.5, known=0, prior="improper",
    draws=PAPER_DRAWS, k2=TABLE5_K2,
) -> dict:
    r"""MCSE of one run of ``draws`` sweeps of the correct exact Gibbs sampler (stationary).

    The X1 chain has transition ``a_b = P[X1' = m+1 | X1 = m+b]`` and autocorrelation
    :math:`\lambda^s`, :math:`\lambda = a_1 - a_0`; for the indicator of X1 = m + 1 the
    integrated autocorrelation time is :math:`\tau = (1 + \lambda)/(1 - \lambda)`. For
    :math:`f = 1[X_2 = k]`, with :math:`h(b) = P[X_2 = k \mid X_1 = m + b]`, the lag-s
    autocovariance is :math:`\lambda^{s-1} \mathrm{Var}_\pi h(X_1)`, so
    :math:`\tau_f = 1 + 2 \mathrm{Var}_\pi h / ((1 - \lambda) \mathrm{Var} f)`. Then
    :math:`\mathrm{MCSE} = \sqrt{\mathrm{Var} f\, \tau_f / N}`.

    Returns
    -------
    dict
        ``prob_x1`` (float) and ``x2`` (array over ``k2``) MCSEs, ``lambda``, ``tau_x1``.
    """
    cond = ExactConditionals(x1_star, x2_star, y1_star, rho1=rho1, rho2=rho2, d=d, p=p,
                             known=known, prior=prior)
    exact = exact_posterior(x1_star, x2_star, y1_star, rho1=rho1, rho2=rho2, d=d, p=p,
                            known=known, prior=prior)
    q = float(exact.prob_x1)
    a = cond.x2_pmf_table @ cond.prob_x1_table
    lam = float(a[1] - a[0])
    tau_x1 = (1.0 + lam) / (1.0 - lam)
    k2 = np.asarray(k2)
    offset = k2 - cond.k2_start
    inside = (offset >= 0) & (offset < cond.width)
    h = np.where(inside, cond.x2_pmf_table[:, np.clip(offset, 0, cond.width - 1)], 0.0)
    var_h = q * (1.0 - q) * (h[1] - h[0]) ** 2
    mass = exact.x2_pmf_at(k2)
    var_f = mass * (1.0 - mass)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau_f = np.where(var_f > 0, 1.0 + 2.0 * var_h / ((1.0 - lam) * var_f), 1.0)
    return {
        "prob_x1": math.sqrt(q * (1.0 - q) * tau_x1 / draws),
        "x2": np.sqrt(var_f * tau_f / draws),
        "lambda": lam,
        "tau_x1": tau_x1,
    }


# --------------------------------------------------------------------------- budgets
@dataclass(frozen=True)
class PaperBudget:
    """Monte Carlo budgets of :func:`compute_tables` and :func:`study`.

    Attributes
    ----------
    runs : dict of str to dict
        Per sampling method, ``draws``, ``chains``, ``tune``.
    paper_runs : int
        Independent runs of :data:`PAPER_DRAWS` draws (variant and correct sampler) for
        the spread of a paper-sized estimate.
    crosscheck_battery : str or None
        Battery of :func:`dprisk.validation.crosschecks.crosscheck.crosscheck` run by :func:`study`
        (None:
        skip).
    """

    runs: dict = field(default_factory=dict)
    paper_runs: int = 20
    crosscheck_battery: str | None = "small"


def budget_runs(*, gibbs: int, pymc_gibbs: int, pymc: int, chains: int = 4,
                pymc_gibbs_tune: int = 1000, tune: int = 1000) -> dict:
    """:attr:`PaperBudget.runs` from the draws per method (``chains`` chains each)."""
    return {
        "gibbs": {"draws": gibbs, "chains": chains, "tune": tune},
        "pymc-gibbs": {"draws": pymc_gibbs, "chains": chains, "tune": pymc_gibbs_tune},
        "pymc": {"draws": pymc, "chains": chains, "tune": tune},
    }


DEFAULT_BUDGET = PaperBudget(
    runs=budget_runs(gibbs=25_000, pymc_gibbs=5000, pymc=5000, pymc_gibbs_tune=500),
    paper_runs=20,
    crosscheck_battery="small",
)
PAPER_SCALE_BUDGET = PaperBudget(
    runs=budget_runs(gibbs=250_000, pymc_gibbs=25_000, pymc=10_000),
    paper_runs=100,
    crosscheck_battery="large",
)
#: Seed of the Tables 7-8 runs (each method's seed and the cross-check's are drawn from it).
TABLES_SEED = 19400402


# --------------------------------------------------------------------------- tables
def _mc_column(tree: xr.DataTree, report: ConvergenceReport) -> dict:
    """A sampling method's column of the tables: its estimates and their MCSEs.

    P[X1 = m + 1] and its MCSE are the report's (``convergence_report`` of ``tree``: the
    indicator's mean and MCSE, the numbers ``chain_diagnostics(X1, known=m)`` gives); each
    P[X2 = k2] and its MCSE from the draws (the MCSE only: R-hat and ESS are not shown).
    """
    x2 = tree["posterior"]["X2"].values
    x2 = [chain_diagnostics((x2 == k).astype(float), statistics=("mcse",)) for k in TABLE5_K2]
    return {"p_x1": report.posterior, "p_x1_mcse": report.posterior_mcse,
            "p_x2": [s["mean"] for s in x2], "p_x2_mcse": [s["mcse"] for s in x2]}


def _cell_estimates(report: ConvergenceReport) -> dict:
    """The cross-check's statistics of one run, read off its convergence report.

    1[X1 = m + 1] (the report's ``target``) and X2, each ``mean``, ``mcse``, ``r_hat``,
    ``ess_bulk``, as the cross-check's cells hold them: the report computed them with the
    same ``chain_diagnostics`` of the same draws, so they are the same numbers bit for bit,
    without ranking the draws again (about 0.15 s for the three Tables 7-8 runs).
    """
    columns = {"mean": "mean", "mcse": "mcse_mean", "r_hat": "r_hat", "ess_bulk": "ess_bulk"}
    table = report.table
    return {quantity: {key: float(table[column].sel(variable=variable))
                       for key, column in columns.items()}
            for quantity, variable in (("prob_x1", "target"), ("x2_mean", "X2"))}


def _pymc_tree(chain: CompiledChain, random_seed: int, run: dict) -> xr.DataTree:
    """The draws of ``sample_model(model, method=method, random_seed=random_seed, **run)``.

    Run by ``chain``, a :class:`dprisk.inference.mcmc.compiled_chain.CompiledChain` of the
    model with the steps of ``method`` (the same draws bit for bit, without ``pm.sample``'s
    fixed costs and trace recording: 1.5 s less for the ``pymc-gibbs`` run); a DataTree whose
    ``posterior`` group holds ``X1`` and ``X2`` with dims (chain, draw), as ``pm.sample``'s.
    """
    # as sample_model: Metropolis' acceptance statistic may overflow for a huge rho
    with np.errstate(over="ignore"):
        draws = chain.run(random_seed=random_seed, **run)
    posterior = xr.Dataset({name: (("chain", "draw"), values) for name, values in draws.items()},
                           coords={"chain": np.arange(run["chains"]),
                                   "draw": np.arange(run["draws"])})
    return xr.DataTree.from_dict({"posterior": posterior})


def compute_tables(budget: PaperBudget = DEFAULT_BUDGET, *, random_seed: int = TABLES_SEED):
    """Tables 7 and 8 by every method, the variant, the published values; and diagnostics.

    Returns
    -------
    tables : xarray.Dataset
        Dims ``method`` (published, exact, gibbs, pymc-gibbs, pymc, variant, variant-runs,
        no-hierarchy) and ``k2`` (0..7): ``p_x1`` = P[X1 = 1 | D] and ``p_x2`` =
        P[X2 = k2 | D] with their MCSEs (NaN where not applicable), plus ``paper_mcse_x1``
        / ``paper_mcse_x2``: the MCSE of a correct 1e4-draw run (analytic) and
        ``paper_sd_x1`` / ``paper_sd_x2``: the observed spread of ``paper_runs`` such runs
        of the standalone sampler; ``variant_runs_x1`` (run): the variant's estimates.
    diagnostics : dict of str to ConvergenceReport
        Per sampling method.
    seeds : dict of str to int
    """
    return _compute_tables(budget, random_seed)[:3]


def _seeds(random_seed: int) -> dict[str, int]:
    """Each method's seed and the cross-check's, drawn from ``random_seed``."""
    root = np.random.SeedSequence(random_seed)
    purposes = (*SAMPLING_METHODS, "paper-runs", "variant-runs", "crosscheck")
    return dict(zip(purposes, (int(s.generate_state(1)[0]) for s in root.spawn(len(purposes))),
                    strict=True))


def _compute_tables(budget: PaperBudget, random_seed: int):
    """:func:`compute_tables`, and its runs for the cross-check to reuse.

    Returns ``(tables, diagnostics, seeds, sampled, pymc_models)``: ``sampled`` the draws of
    each sampling method at the Table 6 release with the cross-check's statistics of them
    (from their convergence reports), ``{(release, "improper", method): (draws, seed,
    estimates)}``, and ``pymc_models`` its PyMC model and compiled chains, ``{"improper": (model,
    {method: CompiledChain})}`` (the arguments of the same names of
    :func:`dprisk.validation.crosschecks.crosscheck.crosscheck`).
    """
    params = table3_parameters()
    release = TABLE3_RELEASE
    known = params["known"]
    seeds = _seeds(random_seed)
    k2 = np.array(TABLE5_K2)
    methods = ("published", "exact", *SAMPLING_METHODS, "variant", "variant-runs",
               "no-hierarchy")
    p_x1 = dict.fromkeys(methods, math.nan)
    p_x1_mcse = dict.fromkeys(methods, math.nan)
    p_x2 = {m: np.full(k2.size, np.nan) for m in methods}
    p_x2_mcse = {m: np.full(k2.size, np.nan) for m in methods}

    p_x1["published"] = pub.get("table4/k1=1/posterior").value
    p_x2["published"] = np.array([pub.get(f"table5/k2={k}/posterior").value for k in k2])
    exact = exact_posterior(*release, **params)
    p_x1["exact"] = float(exact.prob_x1)
    p_x2["exact"] = exact.x2_pmf_at(k2)
    p_x1["no-hierarchy"] = float(single_level.posterior(release[0], params["rho1"],
                                                        params["p"], known))

    diagnostics = {}
    model = None
    chains = {}
    sampled = {}
    for method in SAMPLING_METHODS:
        run = budget.runs[method]
        if method == "gibbs":
            tree = sample_posterior(*release, **params, method=method,
                                    random_seed=seeds[method], **run)
        else:
            model = model or build_two_level_model(*release, **params)
            chains[method] = CompiledChain(model, pymc_steps(model, method), ("X1", "X2"))
            tree = _pymc_tree(chains[method], seeds[method], run)
        post = tree["posterior"]
        diagnostics[method] = report = convergence_report(tree, known=known)
        sampled[release, params["prior"], method] = (
            {name: post[name].values for name in ("X1", "X2")}, seeds[method],
            _cell_estimates(report))
        column = _mc_column(tree, report)
        p_x1[method], p_x1_mcse[method] = column["p_x1"], column["p_x1_mcse"]
        p_x2[method], p_x2_mcse[method] = column["p_x2"], column["p_x2_mcse"]

    model_args = {k: v for k, v in params.items() if k != "prior"}
    variant = variant_stationary(*release, **model_args)
    p_x1["variant"] = variant.prob_x1
    p_x2["variant"] = variant.x2_pmf_at(k2)
    variant_runs = variant_gibbs_sample(*release, **model_args, draws=PAPER_DRAWS,
                                        chains=budget.paper_runs,
                                        random_seed=seeds["variant-runs"])
    variant_x1 = (variant_runs.x1 == known + 1).mean(axis=1)
    variant_x2 = (variant_runs.x2[:, :, None] == k2).mean(axis=1)
    p_x1["variant-runs"] = float(variant_x1.mean())
    p_x1_mcse["variant-runs"] = float(variant_x1.std(ddof=1))
    p_x2["variant-runs"] = variant_x2.mean(axis=0)
    p_x2_mcse["variant-runs"] = variant_x2.std(axis=0, ddof=1)

    paper = correct_sampler_mcse(*release, **params)
    correct_runs = gibbs_sample(*release, **params, draws=PAPER_DRAWS, chains=budget.paper_runs,
                                tune=1000, random_seed=seeds["paper-runs"])
    correct_x1 = (correct_runs.x1 == known + 1).mean(axis=1)
    correct_x2 = (correct_runs.x2[:, :, None] == k2).mean(axis=1)

    columns = {  # name: (dims, values, long_name); every one a probability
        "p_x1": ("method", [p_x1[m] for m in methods], "P[X1 = 1 | D]"),
        "p_x1_mcse": ("method", [p_x1_mcse[m] for m in methods],
                      "MCSE of p_x1 (variant-runs: sd over runs)"),
        "p_x2": (("method", "k2"), np.array([p_x2[m] for m in methods]), "P[X2 = k2 | D]"),
        "p_x2_mcse": (("method", "k2"), np.array([p_x2_mcse[m] for m in methods]),
                      "MCSE of p_x2 (variant-runs: sd over runs)"),
        "paper_mcse_x1": ((), paper["prob_x1"], "MCSE of a correct 1e4-draw run (analytic)"),
        "paper_mcse_x2": ("k2", paper["x2"], "MCSE of a correct 1e4-draw run's P[X2 = k2]"),
        "paper_sd_x1": ((), float(correct_x1.std(ddof=1)),
                        "sd of correct 1e4-draw estimates over runs"),
        "paper_sd_x2": ("k2", correct_x2.std(axis=0, ddof=1),
                        "sd of correct 1e4-draw estimates of P[X2 = k2] over runs"),
        "variant_runs_x1": ("run", variant_x1, "variant sampler, P[X1 = 1] per 1e4-draw run"),
        "variant_transition": (("from_k1", "to_k1"), variant.transition,
                               "variant sweep's P[X1 = m + to_k1 | X1 = m + from_k1]"),
    }
    tables = xr.Dataset(
        {name: (dims, values, {"long_name": text, "units": "probability"})
         for name, (dims, values, text) in columns.items()},
        coords={"method": np.array(methods, dtype=str),
                "k2": ("k2", k2, {"long_name": "block-group count k2", "units": "persons"}),
                "run": ("run", np.arange(budget.paper_runs),
                        {"long_name": "index of the 1e4-draw run", "units": "1"}),
                **{k1: (k1, [0, 1], {"long_name": f"X1 - m {when} the sweep", "units": "persons"})
                   for k1, when in (("from_k1", "before"), ("to_k1", "after"))}},
        attrs={
            "x1_star": release[0], "x2_star": release[1], "y1_star": release[2],
            **{k: (v if not isinstance(v, float) else float(v)) for k, v in params.items()},
            "paper_draws": PAPER_DRAWS, "paper_runs": budget.paper_runs,
            "lambda": paper["lambda"], "tau_x1": paper["tau_x1"],
            **{f"budget_{m}": str(budget.runs[m]) for m in SAMPLING_METHODS},
            "source": "Kazan & Reiter §4.3, Tables 6-8",
        },
    )
    return tables, diagnostics, seeds, sampled, {params["prior"]: (model, chains)}


# --------------------------------------------------------------------------- study
#: The study's parts (:func:`study_part`), each run by a worker of its own in the report, and
#: the cross-check's priors each part runs: ``tables`` (Tables 7-8 and the cross-check under
#: the improper prior, whose PyMC model and Table 6 runs it shares), and the other priors.
STUDY_PARTS = {
    "tables": PRIORS[:1],
    "crosscheck-truncated": PRIORS[1:2],
    "crosscheck-others": PRIORS[2:],
}


def _budget(paper_scale: bool, budget: PaperBudget | None) -> PaperBudget:
    return chosen_budget(budget, paper_scale, default=DEFAULT_BUDGET,
                         paper_scale_budget=PAPER_SCALE_BUDGET)


def study_part(name: str, *, paper_scale: bool = False, budget: PaperBudget | None = None):
    """One part of :func:`study` (:data:`STUDY_PARTS`), a picklable value.

    ``tables``: ``(tables, diagnostics, seeds, cells)`` of :func:`compute_tables` and of
    :func:`dprisk.validation.crosschecks.crosscheck.crosscheck_cells` under the improper prior
    (its Table 6 cells from the Tables 7-8 runs, its PyMC model theirs); a ``crosscheck-*``
    part: the cross-check's cells under its priors (None without a cross-check). Each seeds
    itself (from :data:`TABLES_SEED`), so the parts may run in any process and order.
    """
    check_part(name, STUDY_PARTS)
    with graphs_without_tracebacks():  # the same PyMC graphs, built and compiled faster
        return _study_part(name, _budget(paper_scale, budget))


def _study_part(name: str, budget: PaperBudget):
    battery = budget.crosscheck_battery
    crosscheck_seed = _seeds(TABLES_SEED)["crosscheck"]
    if name == "tables":
        tables, reports, seeds, sampled, pymc_models = _compute_tables(budget, TABLES_SEED)
        cells = None
        if battery is not None:
            # the Table 6 release under the improper prior is a cell of every battery: its
            # comparisons use the runs above (larger budgets), and its PyMC model is reused
            cells = crosscheck_cells(battery, random_seed=crosscheck_seed,
                                     run_priors=STUDY_PARTS[name], sampled=sampled,
                                     pymc_models=pymc_models)
        return tables, reports, seeds, cells
    if battery is None:
        return None
    return crosscheck_cells(battery, random_seed=crosscheck_seed, run_priors=STUDY_PARTS[name])


@report_study(order=30, title="two levels (§4.3, Tables 6–8, cross-check)", cost=7.0,
              parts={"tables": 3.0, "crosscheck-truncated": 1.5, "crosscheck-others": 2.5})
def study(*, paper_scale: bool = False, budget: PaperBudget | None = None,
          parts: dict | None = None):
    """The §4.3 Tables 6–8 study for the report.

    Returns a :class:`dprisk.validation.paper.records.StudyResult`.

    Parameters
    ----------
    paper_scale : bool
        Use :data:`PAPER_SCALE_BUDGET` (and the large cross-check battery) instead of
        :data:`DEFAULT_BUDGET`.
    budget : PaperBudget, optional
        Overrides both (for tests).
    parts : dict, optional
        The values of :func:`study_part` by name (:data:`STUDY_PARTS`), computed elsewhere
        (the report's workers) with the same ``paper_scale`` and ``budget``; default: each
        computed here in turn.
    """
    from dprisk.validation.paper.records import StudyResult

    budget = _budget(paper_scale, budget)
    parts = joined_parts(study_part, STUDY_PARTS, parts, paper_scale=paper_scale, budget=budget)
    tables, reports, seeds, _ = parts["tables"]
    seeds = dict(seeds)
    result = StudyResult(
        name="hierarchical",
        title="Two levels (paper §4.3: Tables 6–8), exact vs Gibbs vs PyMC, and a cross-check",
        records=records(tables),
        datasets={"tables": tables},
        figures={"table4_table5": figure(tables)},
        seeds=seeds,
    )
    x1 = {m: float(at_method(tables["p_x1"], m)) for m in tables["method"].values}
    compared = comparisons(tables)
    far_from_exact = [c.record.id for c in compared if not c.versus_exact()[0]]
    near_exact = len(compared) - len(far_from_exact)
    near_variant = sum(c.versus_variant()[0] for c in compared)
    variant_sd = float(at_method(tables["p_x1_mcse"], "variant-runs"))
    runs = tables.attrs["paper_runs"]
    result.notes = [
        "Release D = (x1*, x2*, y1*) = (2, 1, -1) (Table 6), rho1 = census block "
        f"({tables.attrs['rho1']:.6f}), rho2 = census block group ({tables.attrs['rho2']:.6f}),"
        " d = 27, p = 1/2, m = 0, improper uniform prior of X2 given X1. Exact: enumeration "
        "over k2 with neglected mass < 1e-12. Monte Carlo: the standalone exact Gibbs "
        "sampler, PyMC with the exact Gibbs step, PyMC's own steps (BinaryGibbsMetropolis + "
        "Metropolis); budgets in the dataset attributes.",
        f"Exact P[X1 = 1 | D] = {x1['exact']:.4f}; the published 57.0% (Table 7) is not the "
        f"posterior of the stated model. A Gibbs sampler whose X1 update ignores the support "
        f"constraint k1 <= k2 while its X2 update keeps k2 >= k1 has stationary P[X1 = 1] = "
        f"{x1['variant']:.4f}; {runs} runs of it with 1e4 draws give "
        f"{x1['variant-runs']:.4f} ± {variant_sd:.4f} (sd). Of the {len(compared)} "
        f"published Table 7-8 numbers, {near_variant} lie within {N_MCSE:g} MCSE (allowing "
        f"for the printed rounding) of that variant and {near_exact} of the exact posterior "
        f"(beyond it: {', '.join(far_from_exact) or 'none'}). The model is not changed to "
        f"match.",
        f"Without the hierarchy, P[X1 = 1 | x1* = 2] = {x1['no-hierarchy']:.4f} (published "
        f"57.4%, compared in the single-level study as text4.3/no_hierarchy/posterior). With "
        f"the exact posterior the hierarchy lowers it to {x1['exact']:.4f}, more than the "
        f"paper's 'slightly decreases' (57.4% -> 57.0%).",
        f"Paper-sized MC error: a correct 1e4-draw run has MCSE "
        f"{float(tables['paper_mcse_x1']):.4f} for P[X1 = 1] (X1 chain lag-1 autocorrelation "
        f"{tables.attrs['lambda']:.3f}, tau = {tables.attrs['tau_x1']:.3f}); observed sd over "
        f"{runs} such runs: {float(tables['paper_sd_x1']):.4f}.",
    ]
    result.diagnostics = [f"{method}:\n{report.summary()}" for method, report in reports.items()]
    if budget.crosscheck_battery is not None:
        check = crosscheck_table(budget.crosscheck_battery,
                                 [parts["tables"][3], *(parts[name] for name in STUDY_PARTS
                                                       if name != "tables")],
                                 random_seed=seeds["crosscheck"])
        result.datasets["crosscheck"] = check.table
        result.diagnostics.append(check.summary())
        result.notes.append(
            f"Cross-check ({budget.crosscheck_battery} battery): every Monte Carlo method on "
            f"every release and prior (improper, truncated:10, point:1, point:25, the example "
            f"negative-binomial user prior) within {N_MCSE:g} MCSE of exact and R-hat < 1.01: "
            f"{'passed' if check.passed else 'FAILED'}. The Table 6 release under the "
            f"improper prior, a cell of the battery, is compared from the Tables 7-8 runs "
            f"above (budgets in the tables' attributes, larger than the battery's)."
        )
    else:
        result.seeds.pop("crosscheck")
    return result
