r"""The agency's two decisions: what epsilon the release has, and which rho meets a risk target.

Records: the three epsilons of the 2020 release at delta = 1e-10 (the paper's Theorem 1 at
rho = 2.56; the Census Bureau's stated 17.14, the Canonne-Kamath-Steinke conversion at the
production rho (542/339)^2; the PLD composition, pessimistic so an upper bound, of every
discrete Gaussian query of the persons strategy) and Kazan & Reiter's epsilon-DP budgets for
three risk profiles.
Figures: rho* against the target for the paper's five priors, one panel per measure
(:mod:`dprisk.inference.privacy.budget`); the risk profile with its binding prior, for
epsilon-DP and for the discrete Gaussian tail; the epsilon table. Captions are in
:mod:`dprisk.validation.figures.decisions_captions` (looked up by
:func:`dprisk.validation.figures.captions.caption`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.inference.privacy import accounting
from dprisk.inference.privacy.budget import rho_for_target
from dprisk.inference.privacy.risk_profile import epsilon_for_prior, pure_dp_budget
from dprisk.models.census.allocation import CENSUS_DELTA, CENSUS_RHO_TOTAL
from dprisk.models.census.strategy import PRODUCTION_RHO
from dprisk.validation.figures.decisions_captions import DESCRIPTIONS
from dprisk.validation.figures.paper_priors import PAPER_PRIORS, prior_coords
from dprisk.validation.paper.records import StudyResult, exact_record
from dprisk.validation.registry import report_study

__all__ = ["DESCRIPTIONS", "FIGURE_MEASURES", "PROFILE", "TAIL_TOLERANCE", "epsilon_records",
           "epsilon_table", "profile_data", "rho_star_data", "study"]

#: The risk profile of the figures and the tail measure: r*(p) = max(3, 0.25/p).
PROFILE = {"max_ratio": 3.0, "max_posterior": 0.25}
#: The Bayesian measures of the rho* figure, one panel each (the worst case is in the
#: decision summary, :mod:`dprisk.validation.beyond.decision_summary`).
FIGURE_MEASURES = ("marginal-risk", "marginal-posterior", "p-correct", "tail")
#: Tolerance of the tail in the profile figure.
TAIL_TOLERANCE = 0.05

_SOURCE_KR = ("Kazan & Reiter, Prior-itizing privacy (risk profile method; values of the "
              "authors' R code, zekicankazan/choosing_dp_epsilon)")


#: Units of each measure's target (the netCDF ``units`` attribute; rho is dimensionless, "1").
_TARGET_UNITS = {"marginal-risk": "ratio", "marginal-posterior": "probability",
                 "p-correct": "probability", "tail": "probability"}


def _targets(n: int) -> dict[str, np.ndarray]:
    """The target grid of each measure."""
    return {"marginal-risk": np.geomspace(1.02, 30.0, n),
            "marginal-posterior": np.linspace(0.03, 0.97, n),
            "p-correct": np.linspace(0.03, 0.97, n),
            "tail": np.geomspace(1e-4, 0.5, n)}


def rho_star_data(n_targets: int = 15, priors=PAPER_PRIORS) -> xr.Dataset:
    """rho* for each measure, target and prior.

    NaN where the target never binds or is outside the measure's range at that prior.
    """
    targets = _targets(n_targets)
    p_values = [value for _, value in priors]
    data = {}
    for measure in FIGURE_MEASURES:
        profile = PROFILE if measure == "tail" else {}
        rho = np.full((n_targets, len(p_values)), np.nan)
        for i, target in enumerate(targets[measure]):
            for j, p in enumerate(p_values):
                try:
                    rho[i, j] = rho_for_target(measure, float(target), p=[p], **profile).rho
                except ValueError:
                    pass
        name = measure.replace("-", "_")
        data[f"rho_{name}"] = ((f"target_{name}", "p"), rho,
                               {"long_name": f"largest rho with {measure} <= target",
                                "units": "1"})
    coords = {f"target_{m.replace('-', '_')}": (
        f"target_{m.replace('-', '_')}", targets[m],
        {"long_name": f"target {m}", "units": _TARGET_UNITS[m]}) for m in FIGURE_MEASURES}
    return xr.Dataset(data, coords={**coords, **prior_coords(priors)})


def profile_data(n_priors: int = 60) -> xr.Dataset:
    """The profile r*(p), epsilon(p) (epsilon-DP) and the tail's rho*(p) on a prior grid."""
    p = np.geomspace(1e-3, 0.32, n_priors)
    ratio = np.maximum(PROFILE["max_ratio"], PROFILE["max_posterior"] / p)
    epsilon = np.array([epsilon_for_prior(v, 1.0, **PROFILE) for v in p])
    rho = np.array([rho_for_target("tail", TAIL_TOLERANCE, p=[v], **PROFILE).rho for v in p])
    pure = pure_dp_budget(**PROFILE)
    tail = rho_for_target("tail", TAIL_TOLERANCE, p=list(p), **PROFILE)
    return xr.Dataset(
        {"max_ratio": ("p", ratio, {"long_name": "risk profile r*(p) = max(3, 0.25/p)",
                                    "units": "ratio"}),
         "epsilon": ("p", epsilon, {"long_name": "largest epsilon meeting the profile",
                                    "units": "1"}),
         "rho_tail": ("p", rho, {"long_name": f"largest rho with P[R' > r*] <= "
                                              f"{TAIL_TOLERANCE}", "units": "1"})},
        coords={"p": ("p", p, {"long_name": "prior P[X1 = m+1]", "units": "probability"})},
        attrs={"epsilon_star": pure.epsilon, "binding_p_epsilon": pure.binding_p,
               "rho_star_tail": tail.rho, "binding_p_tail": tail.binding_p})


def epsilon_table(*, production_pld: bool = False) -> xr.Dataset:
    """The three epsilons of the 2020 persons release at delta = 1e-10.

    ``production_pld`` adds the composition at the production rho (3-4 more seconds).
    """
    rho = float(CENSUS_RHO_TOTAL)
    production = float(PRODUCTION_RHO)
    rows = [("Theorem 1 (Bun-Steinke)", rho, accounting.epsilon_bun_steinke(rho, CENSUS_DELTA)),
            ("Canonne-Kamath-Steinke", rho, accounting.epsilon_cks(rho, CENSUS_DELTA)),
            ("Canonne-Kamath-Steinke, production rho", production,
             accounting.epsilon_cks(production, CENSUS_DELTA)),
            ("PLD composition of the strategy", rho, accounting.census_epsilon_pld(rho))]
    if production_pld:
        rows.append(("PLD composition, production rho", production,
                     accounting.census_epsilon_pld(production)))
    return xr.Dataset({"rho": ("method", [r[1] for r in rows],
                               {"long_name": "zCDP rho", "units": "1"}),
                       "epsilon": ("method", [r[2] for r in rows],
                                   {"long_name": f"epsilon at delta = {CENSUS_DELTA:g}",
                                    "units": "1"})},
                      coords={"method": [r[0] for r in rows]}, attrs={"delta": CENSUS_DELTA})


def epsilon_records(table: xr.Dataset) -> list[dict]:
    """Records of the three epsilons and the Kazan & Reiter budgets."""
    eps = dict(zip(table["method"].values.tolist(), table["epsilon"].values.tolist(),
                   strict=True))
    theorem1 = eps["Theorem 1 (Bun-Steinke)"]
    cks, cks_prod = eps["Canonne-Kamath-Steinke"], eps["Canonne-Kamath-Steinke, production rho"]
    pld = eps["PLD composition of the strategy"]
    out = [
        exact_record(
            "accounting/epsilon_theorem1", "Section 2.3 text (Theorem 1, Bun & Steinke 2016)",
            17.91, theorem1, round(theorem1, 2) == 17.91,
            f"eps = rho + 2 sqrt(rho log(1/delta)) at rho = 2.56, delta = 1e-10 is "
            f"{theorem1:.6f}: the paper's conversion, the loosest of the three. It rounds to "
            f"{round(theorem1, 2):.2f}; the printed 17.91 is it truncated (as the record "
            f"text2.3/epsilon shows), so the status follows the same rounding rule."),
        exact_record(
            "accounting/epsilon_census", "U.S. Census Bureau, stated epsilon of the 2020 "
            "persons (PL 94-171) release", 17.14, cks_prod, round(cks_prod, 2) == 17.14,
            f"the Canonne-Kamath-Steinke conversion (dp-accounting's zCDP accountant) at the "
            f"production rho = (542/339)^2 = {float(PRODUCTION_RHO):.6f} (global_scale "
            f"339/542 of the DAS configuration), delta = 1e-10: {cks_prod:.6f}. At the rounded "
            f"rho = 2.56 it gives {cks:.6f} (the issue's 17.158); the Census's 17.14 is the "
            f"production value, not 2.56's."),
        exact_record(
            "accounting/epsilon_pld", "2020 persons strategy (DAS production code): upper "
            "bound on the epsilon of the composed queries, expected a little under 16.5", None, pld,
            16.4 < pld < 16.5,
            f"the privacy-loss distributions of all 65 discrete Gaussian queries of the "
            f"persons strategy at rho = 2.56 composed (dp-accounting, value grid 1e-4, a "
            f"pessimistic upper bound) give {pld:.4f} at delta = 1e-10: what the release "
            f"really guarantees, {theorem1 - pld:.2f} below the paper's Theorem 1."),
    ]
    for posterior, q, published in ((0.25, 1.0, 1.299283), (0.15, 1.0, 1.209838),
                                    (0.25, None, 0.649641)):
        answer = pure_dp_budget(3.0, posterior, q=q)
        profile = f"max(3, {posterior}/p)" if q == 1.0 else f"max(3, {posterior}/(pq)), q free"
        out.append(exact_record(
            f"budget/pure_dp/{'pq' if q is None else 'p'}_{posterior}", _SOURCE_KR, published,
            answer.epsilon, abs(answer.epsilon - published) <= 1e-6,
            f"epsilon* = min_p epsilon(p{', q' if q is None else ''}) for r*(p) = {profile}: "
            f"{answer.epsilon:.6f} at p = {answer.binding_p:.6g}, q = {answer.binding_q:.6g} "
            f"(kinks located exactly, not on a grid"
            f"{'; the authors grid gives 0.6506' if q is None else ''})."))
    return out


def _rho_star_figure(data: xr.Dataset) -> Figure:
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    axes = fig.subplots(2, 2).ravel()
    labels = {"marginal-risk": "target marginal risk R", "marginal-posterior":
              "target marginal posterior", "p-correct": "target P[correct decision]",
              "tail": "tail tolerance τ for P[R'(X*) > max(3, 0.25/p)]"}
    for ax, measure in zip(axes, FIGURE_MEASURES, strict=True):
        name = measure.replace("-", "_")
        for k, label in enumerate(data["p_label"].values):
            rho = data[f"rho_{name}"][:, k]
            if np.isfinite(rho).any():  # one colour per prior in every panel
                ax.plot(data[f"target_{name}"], rho, marker="o", markersize=3, color=f"C{k}",
                        label=f"p = {label}")
        ax.set_yscale("log")
        if measure in ("marginal-risk", "tail"):
            ax.set_xscale("log")
        ax.set_title(measure)
        ax.set_xlabel(labels[measure])
        ax.set_ylabel(r"$\rho^*$ (largest zCDP $\rho$ meeting the target)")
        ax.legend(fontsize=7)
    fig.suptitle(r"$\rho^*$ against the target, single level, the paper's five priors")
    return fig


def _profile_figure(data: xr.Dataset) -> Figure:
    fig = Figure(figsize=(12, 3.8), layout="constrained")
    ax_ratio, ax_eps, ax_rho = fig.subplots(1, 3)
    p = data["p"].values
    panels = ((ax_ratio, "max_ratio", "risk profile r*(p)", data.attrs["binding_p_epsilon"]),
              (ax_eps, "epsilon", r"largest $\varepsilon$ ($\varepsilon$-DP)",
               data.attrs["binding_p_epsilon"]),
              (ax_rho, "rho_tail", rf"largest $\rho$ with tail $\leq$ {TAIL_TOLERANCE}",
               data.attrs["binding_p_tail"]))
    for ax, variable, ylabel, binding in panels:
        ax.plot(p, data[variable], label=ylabel)
        value = np.interp(np.log(binding), np.log(p), data[variable].values)
        if variable == "epsilon":
            value = data.attrs["epsilon_star"]
        elif variable == "rho_tail":
            value = data.attrs["rho_star_tail"]
        ax.plot([binding], [value], marker="*", markersize=12, color="C3", linestyle="none",
                label=f"binding p{' (ε-DP)' if variable == 'max_ratio' else ''} = {binding:.4g}")
        ax.set_xscale("log")
        ax.set_xlabel("prior p = P[X1 = m+1]")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    tail_p = data.attrs["binding_p_tail"]
    ax_ratio.plot([tail_p], [max(PROFILE["max_ratio"], PROFILE["max_posterior"] / tail_p)],
                  marker="D", color="C2", linestyle="none",
                  label=f"binding p of the tail = {tail_p:.4g}")
    ax_ratio.legend(fontsize=7)
    ax_ratio.set_yscale("log")
    fig.suptitle("Risk profile r*(p) = max(3, 0.25/p) and the budget it allows")
    return fig


def _table_figure(table: xr.Dataset) -> Figure:
    fig = Figure(figsize=(9, 2.4), layout="constrained")
    ax = fig.subplots()
    ax.axis("off")
    cells = [[m, f"{r:.6f}", f"{e:.4f}"] for m, r, e in zip(
        table["method"].values, table["rho"].values, table["epsilon"].values, strict=True)]
    shown = ax.table(cellText=cells, colLabels=["conversion", "rho", "epsilon (delta = 1e-10)"],
                     colWidths=[0.5, 0.2, 0.3], loc="center")
    shown.auto_set_font_size(False)
    shown.set_fontsize(10)
    shown.scale(1.0, 1.5)
    fig.suptitle("epsilon of the 2020 persons release, three ways")
    return fig


@report_study(order=70, cost=3.7,
              title="privacy accounting and budgets (ε of the release; ρ for a risk target)")
def study(*, paper_scale: bool = False) -> StudyResult:
    """The accounting and budget section of the report (a few seconds at the default)."""
    table = epsilon_table(production_pld=paper_scale)
    rho_star = rho_star_data(60 if paper_scale else 15)
    profile = profile_data(200 if paper_scale else 60)
    pure = pure_dp_budget(**PROFILE)
    notes = [
        "Three epsilons for one release (delta = 1e-10): the paper converts rho = 2.56 with "
        f"Theorem 1 ({table['epsilon'].values[0]:.4f}); the Census Bureau uses the tighter "
        "Canonne-Kamath-Steinke conversion at its production rho (542/339)^2 "
        f"({table['epsilon'].values[2]:.4f}); composing the exact privacy-loss distributions "
        f"of the 65 queries gives {table['epsilon'].values[3]:.4f}.",
        "Budget from a risk target: rho* is the largest rho such that the measure stays at "
        "most the target at every prior. The step-like measures (P[correct], the tail) are "
        "not monotone in rho; rho* is their first crossing, found at the computed jump "
        "points rho_k = delta/(2k-1), with a root finder only on the last continuous piece.",
        f"epsilon-DP with the profile max(3, 0.25/p): epsilon* = {pure.epsilon:.6f} at "
        f"p = {pure.binding_p:.6g}; the discrete Gaussian tail at tolerance {TAIL_TOLERANCE} "
        f"binds at p = {profile.attrs['binding_p_tail']:.4g} with rho* = "
        f"{profile.attrs['rho_star_tail']:.6g}.",
    ]
    return StudyResult(
        name="decisions",
        title="Privacy accounting and budgets (the ε of the release; the ρ for a risk target)",
        records=epsilon_records(table),
        datasets={"epsilon_table": table, "rho_star": rho_star, "risk_profile": profile},
        figures={"budget_rho_star": _rho_star_figure(rho_star),
                 "budget_risk_profile": _profile_figure(profile),
                 "budget_epsilon_table": _table_figure(table)},
        notes=notes)
