r"""The simulation-based calibration study of the report (:func:`study`).

Runs :func:`dprisk.validation.sbc.samplers.run_sbc` for every sampler of a budget
(:data:`DEFAULT_BUDGET`, :data:`PAPER_SCALE_BUDGET`), the detection-size calculation of the
broken sampler, and collects p-values, rank histograms, notes and diagnostics. The overview is
in :mod:`dprisk.validation.sbc.calibration`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import xarray as xr

from dprisk.validation.registry import check_part, chosen_budget, joined_parts, report_study
from dprisk.validation.sbc.figures import rank_histograms
from dprisk.validation.sbc.ranks import (
    BROKEN_PRIOR,
    DEFAULT_PARAMETERS,
    P_VALUE_BROKEN,
    P_VALUE_MIN,
    USER_PRIOR,
    VARIABLES,
    detection_size,
)
from dprisk.validation.sbc.samplers import (
    AUTOCORRELATION_MAX,
    PYMC_THIN_FACTOR,
    PYMC_TUNE,
    SBCResult,
    expected_x1_rank_pmf,
    run_sbc,
)

__all__ = [
    "DEFAULT_BUDGET",
    "PAPER_SCALE_BUDGET",
    "SEED",
    "STUDY_PARTS",
    "SBCBudget",
    "SBCRun",
    "study",
    "study_part",
]


# --------------------------------------------------------------------------- study
@dataclass(frozen=True)
class SBCRun:
    """One run of :func:`study`: sampler, prior, ``N`` simulations, ``L`` draws, bins."""

    sampler: str
    prior: str
    n_simulations: int
    n_draws: int = 99
    bins: int = 10

    @property
    def expect_failure(self) -> bool:
        """Whether this sampler is the known-broken one (SBC must reject it)."""
        return self.sampler.startswith("broken")


@dataclass(frozen=True)
class SBCBudget:
    """Runs of :func:`study` and the releases behind the detection-size calculation."""

    runs: tuple[SBCRun, ...]
    detection_releases: int = 20_000


def _runs(*, gibbs: int, broken: int, reference: int, pymc_gibbs: tuple[int, int],
          pymc: tuple[int, int], pymc_priors: tuple[str, ...]) -> tuple[SBCRun, ...]:
    """The runs of a budget: Gibbs under three priors, the broken-sampler pair, PyMC runs.

    ``pymc_gibbs`` and ``pymc`` are ``(N, L)``; ``pymc-gibbs`` runs under truncated:10 and
    the user prior, ``pymc`` under ``pymc_priors``.
    """
    return (
        SBCRun("gibbs", "truncated:10", gibbs),
        SBCRun("gibbs", USER_PRIOR, gibbs),
        SBCRun("gibbs", BROKEN_PRIOR, broken),
        SBCRun("reference-loop", BROKEN_PRIOR, reference),
        SBCRun("broken-gibbs", BROKEN_PRIOR, broken),
        SBCRun("pymc-gibbs", "truncated:10", *pymc_gibbs),
        SBCRun("pymc-gibbs", USER_PRIOR, *pymc_gibbs),
        *(SBCRun("pymc", prior, *pymc) for prior in pymc_priors),
    )


#: ``make report``: about 1.5 minutes on 2 shared cores (PyMC: ~0.15 s per release).
DEFAULT_BUDGET = SBCBudget(
    runs=_runs(gibbs=2000, broken=4000, reference=2000, pymc_gibbs=(150, 19),
               pymc=(100, 19), pymc_priors=("truncated:10",)),
)
#: ``--paper-scale``: five to ten times the default.
PAPER_SCALE_BUDGET = SBCBudget(
    runs=_runs(gibbs=10_000, broken=10_000, reference=10_000, pymc_gibbs=(1000, 49),
               pymc=(500, 19), pymc_priors=("truncated:10", USER_PRIOR)),
    detection_releases=100_000,
)
#: Seed of the first run; run ``i`` uses ``SEED + i``, the detection-size releases ``SEED - 1``.
SEED = 18040678


def _group_name(index: int, result: SBCResult) -> str:
    return f"run{index}_" + re.sub(r"[^A-Za-z0-9]+", "_", result.label).strip("_")


def _summary_dataset(results: list[SBCResult], runs: tuple[SBCRun, ...]) -> xr.Dataset:
    labels = [r.label for r in results]
    shape = (len(results), len(VARIABLES))
    chi2 = np.empty(shape)
    chi2_p = np.empty(shape)
    ks_p = np.empty(shape)
    bins = max(r.bins for r in results)
    counts = np.zeros((*shape, bins), dtype=np.int64)
    for i, result in enumerate(results):
        for j, variable in enumerate(VARIABLES):
            test = result.tests[variable]
            chi2[i, j], chi2_p[i, j], ks_p[i, j] = test.chi2, test.chi2_p_value, test.ks_p_value
            counts[i, j, : result.bins] = test.counts
    return xr.Dataset(
        {
            "chi2": (("run", "variable"), chi2,
                     {"long_name": "chi-square statistic of the binned ranks", "units": "1"}),
            "chi2_p_value": (("run", "variable"), chi2_p,
                             {"long_name": "chi-square test p-value", "units": "probability"}),
            "ks_p_value": (("run", "variable"), ks_p,
                           {"long_name": "Kolmogorov-Smirnov test p-value",
                            "units": "probability"}),
            "rank_counts": (("run", "variable", "bin"), counts,
                            {"long_name": "simulations whose rank falls in the bin",
                             "units": "simulations"}),
            "n_simulations": ("run", [r.n_simulations for r in results],
                              {"long_name": "simulated releases N", "units": "simulations"}),
            "n_draws": ("run", [r.n_draws for r in results],
                        {"long_name": "posterior draws L per simulation", "units": "draws"}),
            "bins": ("run", [r.bins for r in results],
                     {"long_name": "rank bins of the tests", "units": "bins"}),
            "max_thin": ("run", [int(r.thin.max()) for r in results],
                         {"long_name": "largest thinning, sweeps per kept draw",
                          "units": "sweeps"}),
            "seconds": ("run", [r.seconds for r in results],
                        {"long_name": "wall time of the run", "units": "s"}),
            "expect_failure": ("run", [run.expect_failure for run in runs],
                               {"long_name": "the sampler is broken on purpose"}),
            "random_seed": ("run", [r.random_seed for r in results],
                            {"long_name": "random seed of the run", "units": "1"}),
        },
        coords={"run": labels, "variable": list(VARIABLES),
                "bin": ("bin", np.arange(bins), {"long_name": "rank bin", "units": "1"})},
        attrs={**{k: v for k, v in DEFAULT_PARAMETERS.items()},
               "p_value_min": P_VALUE_MIN, "p_value_broken": P_VALUE_BROKEN},
    )


def _verdict(result: SBCResult, run: SBCRun) -> str:
    worst = min(result.tests[v].p_value for v in VARIABLES)
    if run.expect_failure:
        caught = result.p_value("X1") < P_VALUE_BROKEN
        return "rejected as it must be" if caught else "NOT REJECTED (the check did not bite)"
    return "passes" if worst > P_VALUE_MIN else "FAILS (unexpected)"


#: The study's parts (:func:`study_part`), each run by a worker of its own in the report:
#: the runs of PyMC's own steps (the slowest), the other samplers' runs, the detection size.
STUDY_PARTS = ("pymc", "samplers", "detection")


def _budget(paper_scale: bool, budget: SBCBudget | None) -> SBCBudget:
    return chosen_budget(budget, paper_scale, default=DEFAULT_BUDGET,
                         paper_scale_budget=PAPER_SCALE_BUDGET)


def study_part(name: str, *, paper_scale: bool = False, budget: SBCBudget | None = None):
    """One part of :func:`study` (:data:`STUDY_PARTS`), a picklable value.

    ``pymc`` / ``samplers``: ``{i: SBCResult}`` of the budget's runs ``i`` whose sampler is /
    is not ``pymc`` (run ``i`` seeded by ``SEED + i``); ``detection``: the detection sizes by
    prior (seeded by ``SEED - 1``). The parts may run in any process and order.
    """
    check_part(name, STUDY_PARTS)
    budget = _budget(paper_scale, budget)
    if name == "detection":
        # Simulations the chi-square test (10 bins, X1, L = 99) needs to reject the broken
        # sampler at P_VALUE_BROKEN with probability 0.99, from its exact stationary law.
        sizes = {}
        for prior in (BROKEN_PRIOR, "truncated:10"):
            pmf = expected_x1_rank_pmf("unconstrained", prior=prior,
                                       n_releases=budget.detection_releases,
                                       random_seed=SEED - 1)
            sizes[prior] = detection_size(pmf, bins=10)
        return sizes
    return {
        i: run_sbc(run.sampler, prior=run.prior, n_simulations=run.n_simulations,
                   n_draws=run.n_draws, bins=run.bins, random_seed=SEED + i)
        for i, run in enumerate(budget.runs) if (run.sampler == "pymc") == (name == "pymc")
    }


@report_study(order=60, title="simulation-based calibration (Talts et al. 2018)", cost=7.5,
              parts={"pymc": 2.5, "samplers": 3.0, "detection": 0.5})
def study(*, paper_scale: bool = False, budget: SBCBudget | None = None,
          parts: dict | None = None):
    """Simulation-based calibration for the report.

    Returns a :class:`dprisk.validation.paper.records.StudyResult`.

    SBC results are not published numbers, so the study has no records: p-values, rank
    histograms and the detection-size calculation go into its datasets, figures, notes and
    diagnostics.

    Parameters
    ----------
    paper_scale : bool
        Use :data:`PAPER_SCALE_BUDGET` instead of :data:`DEFAULT_BUDGET`.
    budget : SBCBudget, optional
        Overrides both (for tests).
    parts : dict, optional
        The values of :func:`study_part` by name (:data:`STUDY_PARTS`), computed elsewhere
        (the report's workers) with the same ``paper_scale`` and ``budget``; default: each
        computed here in turn.
    """
    from dprisk.validation.paper.records import StudyResult

    budget = _budget(paper_scale, budget)
    parts = joined_parts(study_part, STUDY_PARTS, parts, paper_scale=paper_scale, budget=budget)
    by_run = {**parts["pymc"], **parts["samplers"]}
    results = [by_run[i] for i in range(len(budget.runs))]
    seeds = {f"sbc/{r.label}": r.random_seed for r in results}
    sizes = parts["detection"]
    seeds["sbc/detection_size"] = SEED - 1

    result = StudyResult(
        name="sbc",
        title="Simulation-based calibration of the samplers (Talts et al. 2018)",
        seeds=seeds,
    )
    result.datasets["summary"] = _summary_dataset(results, budget.runs)
    for i, run_result in enumerate(results):
        result.datasets[_group_name(i, run_result)] = run_result.to_dataset()
    correct = [r for r, run in zip(results, budget.runs, strict=True)
               if not run.expect_failure and r.prior != BROKEN_PRIOR]
    broken_side = [r for r in results if r.prior == BROKEN_PRIOR]
    if correct:
        result.figures["sbc_rank_histograms"] = rank_histograms(
            correct, title="SBC rank histograms, correct samplers (grey: 99% band if uniform)")
    if broken_side:
        result.figures["sbc_broken_sampler"] = rank_histograms(
            broken_side, title=f"SBC under prior {BROKEN_PRIOR}: correct samplers vs the "
                               "constraint-dropping X1 update")
    par = DEFAULT_PARAMETERS
    verdicts = [f"{r.label}: {_verdict(r, run)}" for r, run in
                zip(results, budget.runs, strict=True)]
    n_tests = 2 * len(VARIABLES) * sum(not run.expect_failure for run in budget.runs)
    result.notes = [
        f"Simulation-based calibration (Talts et al. 2018): truth X1 = m + Bernoulli(p), "
        f"X2 | X1 from the prior (exactly); release x1* ~ DG(X1, rho1), x2* ~ DG(X2, rho2), "
        f"y1* ~ DG(X2 - X1, rho1/d) (the adversary's model, so it is exactly right); rho1 = "
        f"{par['rho1']}, rho2 = {par['rho2']}, d = {par['d']}, p = {par['p']}, m = "
        f"{par['known']}. Ranks of the true X1 and X2 among L thinned draws, ties broken "
        f"uniformly at random; uniformity by a chi-square test on 10 groups of ranks and a KS "
        f"test of the randomised PIT. Thinning: lag-thin autocorrelation of the exact sweep's "
        f"X1 chain below {AUTOCORRELATION_MAX} (exact, per release; the vectorised Gibbs "
        f"samplers round it up to a power of 2); PyMC's own steps "
        f"{PYMC_THIN_FACTOR}x that, after {PYMC_TUNE} tuning steps.",
        f"A correct sampler passes when every p-value exceeds {P_VALUE_MIN} (false-alarm "
        f"rate {P_VALUE_MIN} per test, {n_tests} tests here); the known-broken sampler "
        f"(X1 update without the constraint k1 <= k2) must give an X1 p-value below "
        f"{P_VALUE_BROKEN}. Verdicts: " + "; ".join(verdicts) + ".",
        f"Detection size: from the broken sampler's exact stationary law on "
        f"{budget.detection_releases} simulated releases, the chi-square test on X1 ranks "
        f"(10 groups, L = 99) rejects at {P_VALUE_BROKEN} with probability 0.99 after "
        f"N = {sizes[BROKEN_PRIOR]} simulations under {BROKEN_PRIOR} (the bias sits at "
        f"X2 = m, which this prior makes likely), but needs N = {sizes['truncated:10']} "
        f"under truncated:10; hence the broken sampler is tested under {BROKEN_PRIOR}, where "
        f"the correct samplers are calibrated too.",
        "PyMC's CategoricalGibbsMetropolis(proposal='proportional') is not calibrated: on the "
        "two-state target indicator its acceptance ratio divides by 1 - (renormalised "
        "probability of the other state) = 0 up to rounding (X1 stuck or always flipping), "
        "and it raises 'Probabilities contain NaN' once X2 = m makes X1 = m + 1 impossible.",
    ]
    result.diagnostics = [r.summary() for r in results]
    return result
